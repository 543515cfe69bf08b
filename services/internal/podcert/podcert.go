// Package podcert gets a satellite its certificate from the constellation's
// signer (package signer) at start: the private key is made here, in the
// process, and the signer only ever sees the certificate request. The key, the
// certificate and the CA are kept in the pod's in-memory TLS directory (an
// emptyDir of this pod alone), so a restarted satnode container reuses them
// while they are valid and asks nobody.
//
// The signer may not answer yet at install time (its pod starting beside 150
// others, its Service without an endpoint, its RBAC not yet effective): such
// failures are tried again with capped exponential backoff and jitter within
// one deadline. A refusal (a token or request the signer will never accept)
// ends the start at once with the signer's reason.
package podcert

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/signer"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

// Options of Ensure.
type Options struct {
	Signer     string // host:port of the signer
	ServerName string // the name the signer's certificate must hold (the gateway's)
	CAFile     string // the constellation CA (PEM): the signer's trust anchor and the one written to Dir
	TokenFile  string // the projected token whose audience is the signer's, read at every attempt
	Index      uint32
	Dir        string        // the satellite's TLS directory (tlsconf layout)
	Timeout    time.Duration // for all attempts together
	// Backoff between attempts; Reuse is how long a kept certificate must still
	// be valid to be used again instead of a new one.
	Backoff retry.Backoff
	Reuse   time.Duration
	Logger  *slog.Logger
}

// errRetry marks a failure worth another attempt.
var errRetry = errors.New("temporary")

// Ensure leaves Dir holding ca.pem, satellite-<i>.pem and satellite-<i>-key.pem:
// those already there when they are valid for at least Reuse and chain to
// CAFile, else a new key and the signer's certificate for it. Errors name the
// signer and its reason; they wrap ErrUnavailable when it did not answer within
// Timeout.
func Ensure(ctx context.Context, o Options) error {
	caPEM, err := os.ReadFile(o.CAFile)
	if err != nil {
		return fmt.Errorf("signer CA: %v: %w", err, errs.ErrInvalid)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("signer CA %s holds no PEM certificate: %w", o.CAFile, errs.ErrInvalid)
	}
	certFile := filepath.Join(o.Dir, tlsconf.SatelliteCert(o.Index))
	keyFile := filepath.Join(o.Dir, tlsconf.SatelliteKey(o.Index))
	if left, err := usable(certFile, keyFile, pool, o.Index, o.Reuse); err == nil {
		// The container restarted in the same pod: its pair is in the pod's memory still.
		o.Logger.Info("certificate reused", "valid_for", left.Round(time.Second).String())
		return tlsconf.WriteOwnerOnly(filepath.Join(o.Dir, tlsconf.CAFile), caPEM)
	} else if !errors.Is(err, os.ErrNotExist) {
		o.Logger.Info("kept certificate not used; asking the signer", "why", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("private key: %v: %w", err, errs.ErrInvalid)
	}
	name := tlsconf.SatelliteName(o.Index)
	csrDER, err := x509.CreateCertificateRequest(rand.Reader,
		&x509.CertificateRequest{Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		return fmt.Errorf("certificate request: %v: %w", err, errs.ErrInvalid)
	}
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: o.ServerName}}}
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	var last error
	for try := 0; ; try++ {
		certPEM, err := ask(ctx, client, o, csr)
		if err == nil {
			err = check(certPEM, key, pool, o.Index)
		}
		if err == nil {
			keyDER, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				return fmt.Errorf("private key: %v: %w", err, errs.ErrInvalid)
			}
			// The key first: a certificate without its key is never left behind.
			err = errors.Join(tlsconf.WriteOwnerOnly(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
				tlsconf.WriteOwnerOnly(certFile, certPEM), tlsconf.WriteOwnerOnly(filepath.Join(o.Dir, tlsconf.CAFile), caPEM))
			if err != nil {
				return err
			}
			o.Logger.Info("certificate issued", "signer", o.Signer, "attempts", try+1,
				"after_s", time.Since(start).Round(time.Millisecond).Seconds())
			return nil
		}
		if !errors.Is(err, errRetry) {
			return fmt.Errorf("signer %s: %w", o.Signer, err)
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		wait := o.Backoff.Delay(try)
		o.Logger.Warn("signer does not answer yet; trying again", "signer", o.Signer, "attempt", try+1,
			"in", wait.Round(time.Millisecond).String(), "err", err)
		if !retry.Sleep(ctx, wait) {
			return fmt.Errorf("signer %s: no certificate within %s, last: %v: %w", o.Signer, o.Timeout, last, errs.ErrUnavailable)
		}
	}
}

// ask is one request to the signer: the certificate's PEM.
func ask(ctx context.Context, client *http.Client, o Options, csr []byte) ([]byte, error) {
	tok, err := os.ReadFile(o.TokenFile)
	if err != nil {
		// kubelet writes the projected token before the container starts; a
		// missing one is a pod without the volume.
		return nil, fmt.Errorf("signer token: %v: %w", err, errs.ErrInvalid)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+o.Signer+signer.Path, bytes.NewReader(csr))
	if err != nil {
		return nil, fmt.Errorf("signer address %q: %v: %w", o.Signer, err, errs.ErrInvalid)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set("Content-Type", "application/pkcs10")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, errRetry)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %v: %w", err, errRetry)
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	err = fmt.Errorf("the signer answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return nil, fmt.Errorf("%w: %w", err, errRetry)
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("%w: %w", err, errs.ErrUnauthenticated)
	case http.StatusForbidden:
		return nil, fmt.Errorf("%w: %w", err, errs.ErrPermissionDenied)
	}
	return nil, fmt.Errorf("%w: %w", err, errs.ErrInvalid)
}

// check makes sure the answer is a certificate for key, naming satellite i, from the CA.
func check(certPEM []byte, key *ecdsa.PrivateKey, pool *x509.CertPool, i uint32) error {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return fmt.Errorf("the signer's answer is not a PEM certificate: %w", errs.ErrInvalid)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return fmt.Errorf("the signer's certificate: %v: %w", err, errs.ErrInvalid)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return fmt.Errorf("the signer's certificate is not for this satellite's key: %w", errs.ErrInvalid)
	}
	return verify(cert, pool, i)
}

func verify(cert *x509.Certificate, pool *x509.CertPool, i uint32) error {
	_, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: tlsconf.SatelliteName(i),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return fmt.Errorf("certificate for %s: %v: %w", tlsconf.SatelliteName(i), err, errs.ErrInvalid)
	}
	return nil
}

// usable is how long the kept pair stays valid, when it is a pair, chains to the
// CA, names satellite i and stays valid for at least reuse; os.ErrNotExist
// when there is none.
func usable(certFile, keyFile string, pool *x509.CertPool, i uint32, reuse time.Duration) (time.Duration, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		if _, serr := os.Stat(certFile); errors.Is(serr, os.ErrNotExist) {
			return 0, serr
		}
		return 0, err
	}
	cert := pair.Leaf
	if err := verify(cert, pool, i); err != nil {
		return 0, err
	}
	left := time.Until(cert.NotAfter)
	if left < reuse {
		return 0, fmt.Errorf("valid for %s only, under %s", left.Round(time.Second), reuse)
	}
	return left, nil
}
