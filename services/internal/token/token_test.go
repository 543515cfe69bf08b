package token_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
	"github.com/satpage/satpage/services/internal/token"
)

func key(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestATokenIsAcceptedOnlyForItsSessionAndBeforeItsExpiry(t *testing.T) {
	k, other := key(t), key(t)
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	iss := token.NewIssuer(k, time.Hour).WithClock(clock)
	v := token.NewVerifier(k.Public().(ed25519.PublicKey)).WithClock(clock)
	tok, exp := iss.Issue("alice", 1000)
	forgedBy := token.NewIssuer(other, time.Hour).WithClock(clock)
	forged, _ := forgedBy.Issue("alice", 1000)
	// Flip one character of the signature.
	flipped := tok[:len(tok)-2] + map[bool]string{true: "A", false: "B"}[tok[len(tok)-2] != 'A'] + tok[len(tok)-1:]
	// A token whose claims were edited (a bigger table) keeps the old signature.
	edited := strings.Replace(tok, ".1000.", ".99999.", 1)
	tests := []struct {
		name, tok, session string
		at                 time.Time
		want               error
	}{
		{"valid", tok, "alice", now, nil},
		{"just before expiry", tok, "alice", exp.Add(-time.Second), nil},
		{"at expiry", tok, "alice", exp, errs.ErrUnauthenticated},
		{"other session", tok, "bob", now, errs.ErrPermissionDenied},
		{"missing", "", "alice", now, errs.ErrUnauthenticated},
		{"garbage", "not a token", "alice", now, errs.ErrUnauthenticated},
		{"unknown key", forged, "alice", now, errs.ErrUnauthenticated},
		{"flipped signature", flipped, "alice", now, errs.ErrUnauthenticated},
		{"edited claims", edited, "alice", now, errs.ErrUnauthenticated},
		{"too long", strings.Repeat("v1.", 500), "alice", now, errs.ErrUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now = tt.at
			c, err := v.Verify(tt.tok, tt.session)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if err != nil && tt.tok != "" && strings.Contains(err.Error(), tt.tok) {
				t.Errorf("error %q quotes the token", err)
			}
			if err == nil && (c.Session != "alice" || c.TablePages != 1000 || !c.Expires.Equal(exp)) {
				t.Errorf("got claims %+v, want alice, 1000 pages, expiry %v", c, exp)
			}
		})
	}
	now = time.Unix(1_800_000_000, 0)
}

func TestRotationAcceptsBothKeysDuringTheOverlapWindow(t *testing.T) {
	old, fresh := key(t), key(t)
	both := token.NewVerifier(old.Public().(ed25519.PublicKey), fresh.Public().(ed25519.PublicKey))
	onlyFresh := token.NewVerifier(fresh.Public().(ed25519.PublicKey))
	a, _ := token.NewIssuer(old, time.Hour).Issue("s", 10)
	b, _ := token.NewIssuer(fresh, time.Hour).Issue("s", 10)
	for _, tok := range []string{a, b} {
		if _, err := both.Verify(tok, "s"); err != nil {
			t.Errorf("during the overlap: got %v, want nil", err)
		}
	}
	if _, err := onlyFresh.Verify(a, "s"); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Errorf("after the old key is dropped: got %v, want unauthenticated", err)
	}
}

func TestKeysLoadFromTheFilesClusterUpWrites(t *testing.T) {
	dir := t.TempDir()
	priv := tlstest.WriteTokenKey(t, dir, "sign.pem", "verify.pem")
	k, err := token.LoadSigningKey(filepath.Join(dir, "sign.pem"))
	if err != nil || !k.Equal(priv) {
		t.Fatalf("LoadSigningKey: got %v, want the key written", err)
	}
	keys, err := token.LoadVerifyKeys(filepath.Join(dir, "verify.pem"), token.VerifyOnly)
	if err != nil || len(keys) != 1 || !keys[0].Equal(priv.Public()) {
		t.Errorf("LoadVerifyKeys(verify.pem): got %d keys, %v; want the public key", len(keys), err)
	}
	if _, err := token.LoadVerifyKeys(filepath.Join(dir, "missing.pem"), token.AlsoSigns); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("missing file: got %v, want an error naming it", err)
	}
}

// selfSigned is a PEM certificate of pub signed by signer (what Helm's
// genSelfSignedCertWithKey and cert-manager write for an Ed25519 key).
func selfSigned(t *testing.T, pub, signer any) []byte {
	t.Helper()
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "satpage session tokens"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1, 0)} // long expired: validity is not checked
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestASatelliteAcceptsOnlyPublicVerifyKeysAndTheGatewayAlsoItsPrivateKey(t *testing.T) {
	dir := t.TempDir()
	priv := tlstest.WriteTokenKey(t, dir, "sign.pem", "public.pem")
	pub := priv.Public().(ed25519.PublicKey)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	public, _ := os.ReadFile(filepath.Join(dir, "public.pem"))
	files := map[string][]byte{
		"cert.pem":        selfSigned(t, pub, priv),
		"public+cert.pem": append(append([]byte{}, public...), selfSigned(t, key(t).Public(), priv)...),
		"ecdsa-cert.pem":  selfSigned(t, ec.Public(), ec),
		"garbage.pem":     []byte("not a key"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		file    string
		use     token.KeyUse
		keys    int    // 0: refused
		errPart string // the refusal names this
	}{
		{"public.pem", token.VerifyOnly, 1, ""},
		{"cert.pem", token.VerifyOnly, 1, ""},
		{"cert.pem", token.AlsoSigns, 1, ""},
		{"public+cert.pem", token.VerifyOnly, 2, ""},
		{"sign.pem", token.AlsoSigns, 1, ""},
		{"sign.pem", token.VerifyOnly, 0, "block 1, is a private key: a satellite holds verify keys only"},
		{"ecdsa-cert.pem", token.VerifyOnly, 0, "not Ed25519"},
		{"garbage.pem", token.AlsoSigns, 0, "no PEM block"},
	}
	for _, tc := range tests {
		keys, err := token.LoadVerifyKeys(filepath.Join(dir, tc.file), tc.use)
		if tc.keys == 0 {
			if !errors.Is(err, errs.ErrInvalid) || !strings.Contains(err.Error(), tc.errPart) || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("%s (use %d): got %v, want an invalid-argument error naming the file and %q", tc.file, tc.use, err, tc.errPart)
			}
			continue
		}
		if err != nil || len(keys) != tc.keys || !keys[0].Equal(pub) {
			t.Errorf("%s (use %d): got %d keys, %v; want %d, the first the signing key's public half", tc.file, tc.use, len(keys), err, tc.keys)
		}
	}
	// A token the gateway signs verifies with the key taken from the certificate.
	keys, _ := token.LoadVerifyKeys(filepath.Join(dir, "cert.pem"), token.VerifyOnly)
	tok, _ := token.NewIssuer(priv, time.Hour).Issue("s", 8)
	if c, err := token.NewVerifier(keys...).Verify(tok, "s"); err != nil || c.TablePages != 8 {
		t.Errorf("token checked with the certificate's key: got %+v, %v; want valid, 8 pages", c, err)
	}
}

func TestATicketOpensOnlyWithAKnownKeyAndUntouched(t *testing.T) {
	k, other := key(t), key(t)
	iss := token.NewIssuer(k, time.Hour)
	v := token.NewVerifier(k.Public().(ed25519.PublicKey))
	body := []byte("registration \x00\xff bytes")
	tk := iss.Seal(body)
	got, err := v.OpenTicket(tk, 1024)
	if err != nil || string(got) != string(body) {
		t.Fatalf("OpenTicket = %q, %v; want the body", got, err)
	}
	// Another key, a changed body, no signature, and a ticket over the bound are refused.
	forged := token.NewIssuer(other, time.Hour).Seal(body)
	parts := strings.Split(tk, ".")
	changed := parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString([]byte("other")) + "." + parts[3]
	for name, bad := range map[string]string{"unknown key": forged, "changed body": changed,
		"unsigned": (*token.Issuer)(nil).Seal(body), "malformed": "t1.x"} {
		if _, err := v.OpenTicket(bad, 1024); !errors.Is(err, errs.ErrUnauthenticated) {
			t.Errorf("%s: OpenTicket err = %v, want ErrUnauthenticated", name, err)
		}
	}
	if _, err := v.OpenTicket(tk, len(tk)-1); !errors.Is(err, errs.ErrUnauthenticated) {
		t.Errorf("a ticket over the bound: err = %v", err)
	}
	// --insecure: no verifier opens an unsigned ticket.
	if got, err := (*token.Verifier)(nil).OpenTicket((*token.Issuer)(nil).Seal(body), 1024); err != nil || string(got) != string(body) {
		t.Errorf("insecure OpenTicket = %q, %v", got, err)
	}
}
