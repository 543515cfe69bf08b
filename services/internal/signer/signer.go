// Package signer is the constellation's in-cluster certificate signer
// (docs/security.md, "Keys that stay in their pod"). A satellite pod makes its
// own private key in memory and sends a certificate request with a
// ServiceAccount token that kubelet projected into it: audience the signer's
// (useless against the Kubernetes API), short-lived and bound to the pod. The
// signer asks the API server who the token belongs to (a TokenReview), and
// signs a certificate for that pod's satellite and for no other name.
//
// Why a signer and not a Secret per satellite: a StatefulSet has one pod
// template, so only an API call can pick satellite i's Secret, and the token
// that allows that call can read every satellite's key. A token that only the
// signer accepts, and an answer that only ever names the caller's own pod,
// leave each pod with its own key and no way to get another's.
package signer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

// PodNameKey is the TokenReview's extra field naming the pod a bound token was made for.
const PodNameKey = "authentication.kubernetes.io/pod-name"

// Review is what the API server says about a token (a TokenReview's status).
type Review struct {
	Username  string              // system:serviceaccount:<namespace>:<name>
	Audiences []string            // the audiences of the request the token is valid for
	Extra     map[string][]string // PodNameKey among them for a pod-bound token
}

// Reviewer checks a token for audience. It returns ErrUnauthenticated (wrapped)
// for a token the API server does not accept and ErrUnavailable when the API
// server cannot be asked or refuses the review itself.
type Reviewer interface {
	Review(ctx context.Context, token, audience string) (Review, error)
}

// Policy is who may get which certificate.
type Policy struct {
	Audience       string // the tokens' audience, e.g. satpage-signer
	Namespace      string // the satellites' namespace
	ServiceAccount string // and their ServiceAccount
	// StatefulSet is the satellites' StatefulSet: pod <StatefulSet>-<i> is satellite i.
	StatefulSet string
	Satellites  int
	// DNSNames are the names besides tlsconf.SatelliteName(i) a satellite's
	// certificate holds, "{index}" standing for i (its pod's name under the
	// headless Service).
	DNSNames []string
	TTL      time.Duration // certificate lifetime (cut to the CA's)
}

// Options of a Signer.
type Options struct {
	CACert   *x509.Certificate
	CAKey    crypto.Signer
	Policy   Policy
	Reviewer Reviewer
	Logger   *slog.Logger
	Now      func() time.Time // nil: time.Now
}

// Signer signs satellites' certificates. Safe for concurrent use.
type Signer struct {
	o Options
}

// New checks the options (errors name the value) and returns a Signer.
func New(o Options) (*Signer, error) {
	p := o.Policy
	switch {
	case o.CACert == nil || o.CAKey == nil || o.Reviewer == nil || o.Logger == nil:
		return nil, fmt.Errorf("signer: CA certificate, CA key, reviewer and logger are required: %w", errs.ErrInvalid)
	case !o.CACert.IsCA:
		return nil, fmt.Errorf("signer: %q is not a CA certificate: %w", o.CACert.Subject.CommonName, errs.ErrInvalid)
	case !publicKeysEqual(o.CACert.PublicKey, o.CAKey.Public()):
		return nil, fmt.Errorf("signer: the CA key is not the key of CA certificate %q: %w", o.CACert.Subject.CommonName, errs.ErrInvalid)
	case p.Audience == "" || p.Namespace == "" || p.ServiceAccount == "" || p.StatefulSet == "":
		return nil, fmt.Errorf("signer: audience (%q), namespace (%q), service account (%q) and StatefulSet (%q) are required: %w",
			p.Audience, p.Namespace, p.ServiceAccount, p.StatefulSet, errs.ErrInvalid)
	case p.Satellites < 1:
		return nil, fmt.Errorf("signer: %d satellites: %w", p.Satellites, errs.ErrInvalid)
	case p.TTL < time.Minute:
		return nil, fmt.Errorf("signer: certificate lifetime %v is under a minute: %w", p.TTL, errs.ErrInvalid)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Signer{o: o}, nil
}

// CA is the CA certificate the Signer signs with.
func (s *Signer) CA() *x509.Certificate { return s.o.CACert }

// Sign checks token and the certificate request csrPEM and returns the signed
// certificate (PEM) and the satellite it names. Errors wrap ErrUnauthenticated
// (a token the API server does not accept, for another audience),
// ErrPermissionDenied (a token of another ServiceAccount or namespace, a pod
// that is not a satellite, a request for a name not the pod's own), ErrInvalid
// (a request that does not parse or is not signed by its key) or ErrUnavailable
// (the API server cannot be asked); each names the value it refuses.
func (s *Signer) Sign(ctx context.Context, token string, csrPEM []byte) ([]byte, uint32, error) {
	// The request first: a malformed one costs no API call.
	csr, err := parseCSR(csrPEM)
	if err != nil {
		return nil, 0, err
	}
	if strings.TrimSpace(token) == "" {
		return nil, 0, fmt.Errorf("no token: %w", errs.ErrUnauthenticated)
	}
	p := s.o.Policy
	r, err := s.o.Reviewer.Review(ctx, token, p.Audience)
	if err != nil {
		return nil, 0, err
	}
	if !slices.Contains(r.Audiences, p.Audience) {
		return nil, 0, fmt.Errorf("token of %s is not for audience %q (it is for %q): %w", r.Username, p.Audience, r.Audiences, errs.ErrUnauthenticated)
	}
	if want := "system:serviceaccount:" + p.Namespace + ":" + p.ServiceAccount; r.Username != want {
		return nil, 0, fmt.Errorf("token of %q, not of the satellites' service account %q: %w", r.Username, want, errs.ErrPermissionDenied)
	}
	pods := r.Extra[PodNameKey]
	if len(pods) != 1 {
		return nil, 0, fmt.Errorf("token of %s is bound to no pod (%s: %q): %w", r.Username, PodNameKey, pods, errs.ErrPermissionDenied)
	}
	i, err := s.index(pods[0])
	if err != nil {
		return nil, 0, err
	}
	names := s.names(i)
	if !slices.Contains(csr.DNSNames, tlsconf.SatelliteName(i)) {
		return nil, 0, fmt.Errorf("pod %s asks for %q, not for its own name %s: %w", pods[0], csr.DNSNames, tlsconf.SatelliteName(i), errs.ErrPermissionDenied)
	}
	for _, n := range csr.DNSNames {
		if !slices.Contains(names, n) {
			return nil, 0, fmt.Errorf("pod %s asks for name %q, which is not its own (%q): %w", pods[0], n, names, errs.ErrPermissionDenied)
		}
	}
	if len(csr.IPAddresses)+len(csr.URIs)+len(csr.EmailAddresses) > 0 {
		return nil, 0, fmt.Errorf("pod %s asks for IP addresses %v, URIs %v or e-mail addresses %q: a satellite has DNS names only: %w",
			pods[0], csr.IPAddresses, csr.URIs, csr.EmailAddresses, errs.ErrPermissionDenied)
	}
	der, err := s.issue(csr.PublicKey, i, names)
	if err != nil {
		return nil, 0, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), i, nil
}

// index is the satellite of pod <StatefulSet>-<i>.
func (s *Signer) index(pod string) (uint32, error) {
	p := s.o.Policy
	suffix, ok := strings.CutPrefix(pod, p.StatefulSet+"-")
	i, err := strconv.Atoi(suffix)
	if !ok || err != nil || i < 0 || i >= p.Satellites || strconv.Itoa(i) != suffix {
		return 0, fmt.Errorf("pod %q is not a satellite (%s-0 .. %s-%d): %w", pod, p.StatefulSet, p.StatefulSet,
			p.Satellites-1, errs.ErrPermissionDenied)
	}
	return uint32(i), nil
}

// names are satellite i's DNS names: its identity first.
func (s *Signer) names(i uint32) []string {
	ix := strconv.FormatUint(uint64(i), 10)
	out := []string{tlsconf.SatelliteName(i)}
	for _, t := range s.o.Policy.DNSNames {
		out = append(out, strings.ReplaceAll(t, "{index}", ix))
	}
	return out
}

func (s *Signer) issue(pub any, i uint32, names []string) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial number: %v: %w", err, errs.ErrUnavailable)
	}
	now := s.o.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		// A minute back: a node whose clock is a little behind the signer's still accepts it.
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(s.o.Policy.TTL),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if tmpl.NotAfter.After(s.o.CACert.NotAfter) {
		tmpl.NotAfter = s.o.CACert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.o.CACert, pub, s.o.CAKey)
	if err != nil {
		return nil, fmt.Errorf("signing satellite %d's certificate: %v: %w", i, err, errs.ErrInvalid)
	}
	return der, nil
}

// parseCSR reads a PEM certificate request signed by the key it names, an
// ECDSA (P-256, P-384) or Ed25519 key: what a satellite makes.
func parseCSR(b []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("the request is not a PEM CERTIFICATE REQUEST (%d bytes): %w", len(b), errs.ErrInvalid)
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %v: %w", err, errs.ErrInvalid)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("certificate request is not signed by its own key: %v: %w", err, errs.ErrInvalid)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
			return nil, fmt.Errorf("certificate request: ECDSA curve %s, want P-256 or P-384: %w", k.Curve.Params().Name, errs.ErrInvalid)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("certificate request: a %T key, want ECDSA or Ed25519: %w", csr.PublicKey, errs.ErrInvalid)
	}
	return csr, nil
}

func publicKeysEqual(a, b any) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// LoadCA reads the CA certificate and its private key (PKCS#8, PKCS#1 RSA or
// SEC 1 EC, as Helm, cert-manager and openssl write them); errors name the file.
func LoadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("signer CA: %v: %w", err, errs.ErrInvalid)
	}
	block, _ := pem.Decode(cb)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("signer CA %s holds no PEM certificate: %w", certFile, errs.ErrInvalid)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("signer CA %s: %v: %w", certFile, err, errs.ErrInvalid)
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("signer CA key: %v: %w", err, errs.ErrInvalid)
	}
	block, _ = pem.Decode(kb)
	if block == nil {
		return nil, nil, fmt.Errorf("signer CA key %s holds no PEM block: %w", keyFile, errs.ErrInvalid)
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		err = fmt.Errorf("PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("signer CA key %s: %v: %w", keyFile, err, errs.ErrInvalid)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("signer CA key %s: a %T cannot sign: %w", keyFile, key, errs.ErrInvalid)
	}
	return cert, signer, nil
}
