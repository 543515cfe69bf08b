package signer_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/signer"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

// fakeAPI is the API server's tokenreviews endpoint: tokens it knows, each of
// one user, audience and pod, and the answer to the signer's own credential.
type fakeAPI struct {
	tokens  map[string]token
	status  atomic.Int32 // non-zero: answer every review with this HTTP status
	reviews atomic.Int32
}

type token struct{ user, audience, pod string }

const signerToken = "the-signers-own-token"

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.reviews.Add(1)
	if r.Method != http.MethodPost || r.URL.Path != "/apis/authentication.k8s.io/v1/tokenreviews" {
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+signerToken {
		http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if s := f.status.Load(); s != 0 {
		http.Error(w, `{"message":"tokenreviews.authentication.k8s.io is forbidden"}`, int(s))
		return
	}
	var rev map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &rev)
	spec := rev["spec"].(map[string]any)
	aud := spec["audiences"].([]any)[0].(string)
	status := map[string]any{"authenticated": false, "error": "invalid bearer token"}
	// As the API server does: a token for another audience is not authenticated.
	if t, ok := f.tokens[spec["token"].(string)]; ok && t.audience == aud {
		user := map[string]any{"username": t.user}
		if t.pod != "" {
			user["extra"] = map[string][]string{signer.PodNameKey: {t.pod}, "authentication.kubernetes.io/pod-uid": {"u-1"}}
		}
		status = map[string]any{"authenticated": true, "user": user, "audiences": []string{aud}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status})
}

const sats = "system:serviceaccount:sp:satpage"

func newAPI(t *testing.T) (*fakeAPI, *signer.TokenReviewer) {
	t.Helper()
	f := &fakeAPI{tokens: map[string]token{
		"sat-3":       {sats, "satpage-signer", "satpage-3"},
		"sat-3-api":   {sats, "https://kubernetes.default.svc", "satpage-3"}, // its kube-API token
		"other-sa":    {"system:serviceaccount:sp:default", "satpage-signer", "satpage-3"},
		"other-ns":    {"system:serviceaccount:elsewhere:satpage", "satpage-signer", "satpage-3"},
		"gateway-pod": {sats, "satpage-signer", "satpage-gateway-7d9f-x2x"},
		"sat-150":     {sats, "satpage-signer", "satpage-150"},
		"sat-03":      {sats, "satpage-signer", "satpage-03"},
		"unbound":     {sats, "satpage-signer", ""},
	}}
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	tf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tf, []byte(signerToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, &signer.TokenReviewer{API: srv.URL, Client: srv.Client(), TokenFile: tf}
}

func newSigner(t *testing.T, r signer.Reviewer) (*signer.Signer, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	a := tlstest.NewAuthority(t, dir)
	a.WriteKey(t, "ca-key.pem")
	cert, key, err := signer.LoadCA(filepath.Join(dir, tlsconf.CAFile), filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := signer.New(signer.Options{CACert: cert, CAKey: key, Reviewer: r, Logger: slog.New(slog.DiscardHandler),
		Policy: signer.Policy{Audience: "satpage-signer", Namespace: "sp", ServiceAccount: "satpage", StatefulSet: "satpage",
			Satellites: 150, DNSNames: []string{"satpage-{index}.satpage-headless"}, TTL: 48 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return s, pool
}

func csrFor(t *testing.T, key crypto.Signer, names ...string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: names[0]}, DNSNames: names}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestASatelliteGetsACertificateForItsOwnNamesOnly(t *testing.T) {
	_, api := newAPI(t)
	s, pool := newSigner(t, api)
	key := ecKey(t)
	got, i, err := s.Sign(context.Background(), "sat-3", csrFor(t, key, "satellite-3.satpage"))
	if err != nil {
		t.Fatal(err)
	}
	if i != 3 {
		t.Fatalf("satellite %d, want 3", i)
	}
	block, _ := pem.Decode(got)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"satellite-3.satpage", "satpage-3.satpage-headless"}; !slices.Equal(cert.DNSNames, want) {
		t.Fatalf("names %q, want %q", cert.DNSNames, want)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		t.Fatal("the certificate is not for the request's key")
	}
	// The role the servers read from it (package tlsconf), and a chain to the CA for both uses.
	id, err := tlsconf.IdentityOf(cert)
	if err != nil || id.Role != tlsconf.Satellite || id.Index != 3 {
		t.Fatalf("identity %v (%v), want satellite 3", id, err)
	}
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "satellite-3.satpage",
			KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
			t.Fatalf("usage %v: %v", use, err)
		}
	}
	// 48 h asked, but tlstest's CA lives 24 h: the certificate is cut to the CA's end.
	if left := time.Until(cert.NotAfter); left > 24*time.Hour || left < 23*time.Hour {
		t.Fatalf("valid for %v, want the CA's remaining ~24 h", left)
	}
	// Both of its own names may be asked for, and an Ed25519 key.
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	if _, _, err := s.Sign(context.Background(), "sat-3", csrFor(t, edKey, "satellite-3.satpage", "satpage-3.satpage-headless")); err != nil {
		t.Fatal(err)
	}
}

func TestEveryRefusalNamesItsReason(t *testing.T) {
	_, api := newAPI(t)
	s, _ := newSigner(t, api)
	key := ecKey(t)
	own := csrFor(t, key, "satellite-3.satpage")
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	tampered := func() []byte {
		block, _ := pem.Decode(own)
		der := slices.Clone(block.Bytes)
		der[len(der)-3] ^= 0xff // the signature
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}()
	for _, tc := range []struct {
		name, token string
		csr         []byte
		want        error
		status      int
		says        string
	}{
		{"no token", "", own, errs.ErrUnauthenticated, 401, "no token"},
		{"unknown token", "forged", own, errs.ErrUnauthenticated, 401, "not accepted"},
		{"token for the kube API", "sat-3-api", own, errs.ErrUnauthenticated, 401, "not accepted for audience \"satpage-signer\""},
		{"another service account", "other-sa", own, errs.ErrPermissionDenied, 403, `"system:serviceaccount:sp:default"`},
		{"another namespace", "other-ns", own, errs.ErrPermissionDenied, 403, `"system:serviceaccount:elsewhere:satpage"`},
		{"the gateway's pod", "gateway-pod", csrFor(t, key, "gateway.satpage"), errs.ErrPermissionDenied, 403, `pod "satpage-gateway-7d9f-x2x" is not a satellite`},
		{"a pod past the last satellite", "sat-150", csrFor(t, key, "satellite-150.satpage"), errs.ErrPermissionDenied, 403, `pod "satpage-150" is not a satellite (satpage-0 .. satpage-149)`},
		{"an ordinal with a leading zero", "sat-03", own, errs.ErrPermissionDenied, 403, `pod "satpage-03" is not a satellite`},
		{"a token bound to no pod", "unbound", own, errs.ErrPermissionDenied, 403, "bound to no pod"},
		{"another satellite's name", "sat-3", csrFor(t, key, "satellite-4.satpage"), errs.ErrPermissionDenied, 403, "not for its own name satellite-3.satpage"},
		{"its own and another's name", "sat-3", csrFor(t, key, "satellite-3.satpage", "satellite-4.satpage"), errs.ErrPermissionDenied, 403, `asks for name "satellite-4.satpage"`},
		{"the gateway's name beside its own", "sat-3", csrFor(t, key, "satellite-3.satpage", "gateway.satpage"), errs.ErrPermissionDenied, 403, `"gateway.satpage", which is not its own`},
		{"not PEM", "sat-3", []byte("hello"), errs.ErrInvalid, 400, "not a PEM CERTIFICATE REQUEST (5 bytes)"},
		{"a certificate, not a request", "sat-3", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}}), errs.ErrInvalid, 400, "not a PEM CERTIFICATE REQUEST"},
		{"a request its key did not sign", "sat-3", tampered, errs.ErrInvalid, 400, "not signed by its own key"},
		{"an RSA key", "sat-3", csrFor(t, rsaKey, "satellite-3.satpage"), errs.ErrInvalid, 400, "*rsa.PublicKey key, want ECDSA or Ed25519"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := s.Sign(context.Background(), tc.token, tc.csr)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
			}
			// The same over HTTP: the status and the reason.
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, signer.Path, strings.NewReader(string(tc.csr)))
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.says) {
				t.Fatalf("HTTP %d %q, want %d saying %q", rec.Code, rec.Body.String(), tc.status, tc.says)
			}
		})
	}
}

func TestAnAPIServerThatCannotReviewMakesTheSignerUnavailable(t *testing.T) {
	f, api := newAPI(t)
	s, _ := newSigner(t, api)
	csr := csrFor(t, ecKey(t), "satellite-3.satpage")
	// The signer's own RoleBinding not effective yet, then an API server gone.
	f.status.Store(http.StatusForbidden)
	_, _, err := s.Sign(context.Background(), "sat-3", csr)
	if !errors.Is(err, errs.ErrUnavailable) || !strings.Contains(err.Error(), "403 Forbidden") {
		t.Fatalf("got %v, want unavailable naming the 403", err)
	}
	f.status.Store(0)
	if _, _, err := s.Sign(context.Background(), "sat-3", csr); err != nil {
		t.Fatalf("once the binding holds: %v", err)
	}
	gone := &signer.TokenReviewer{API: "https://127.0.0.1:1", Client: http.DefaultClient, TokenFile: api.TokenFile}
	s2, _ := newSigner(t, gone)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, signer.Path, strings.NewReader(string(csr)))
	req.Header.Set("Authorization", "Bearer sat-3")
	s2.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("HTTP %d %q, want 503", rec.Code, rec.Body.String())
	}
}

func TestAMalformedRequestCostsNoReview(t *testing.T) {
	f, api := newAPI(t)
	s, _ := newSigner(t, api)
	if _, _, err := s.Sign(context.Background(), "sat-3", []byte("junk")); !errors.Is(err, errs.ErrInvalid) {
		t.Fatalf("got %v, want invalid", err)
	}
	if n := f.reviews.Load(); n != 0 {
		t.Fatalf("%d reviews, want 0", n)
	}
}

func TestNewRefusesAKeyThatIsNotTheCAs(t *testing.T) {
	dir := t.TempDir()
	tlstest.NewAuthority(t, dir)
	ca := filepath.Join(dir, tlsconf.CAFile)
	if _, _, err := signer.LoadCA(ca, ca); err == nil || !strings.Contains(err.Error(), `"CERTIFICATE" is not a private key`) {
		t.Fatalf("LoadCA with a certificate as its key: %v", err)
	}
	other := tlstest.NewAuthority(t, t.TempDir())
	other.WriteKey(t, "k.pem")
	cert, key, err := signer.LoadCA(ca, filepath.Join(other.Dir, "k.pem"))
	if err != nil {
		t.Fatal(err)
	}
	_, api := newAPI(t)
	_, err = signer.New(signer.Options{CACert: cert, CAKey: key, Reviewer: api, Logger: slog.New(slog.DiscardHandler),
		Policy: signer.Policy{Audience: "a", Namespace: "n", ServiceAccount: "s", StatefulSet: "p", Satellites: 1, TTL: time.Hour}})
	if !errors.Is(err, errs.ErrInvalid) || !strings.Contains(err.Error(), "is not the key of CA certificate") {
		t.Fatalf("got %v", err)
	}
}
