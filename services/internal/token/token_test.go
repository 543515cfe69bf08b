package token_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
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
	for _, f := range []string{"verify.pem", "sign.pem"} { // a private key also verifies
		keys, err := token.LoadVerifyKeys(filepath.Join(dir, f))
		if err != nil || len(keys) != 1 || !keys[0].Equal(priv.Public()) {
			t.Errorf("LoadVerifyKeys(%s): got %d keys, %v; want the public key", f, len(keys), err)
		}
	}
	if _, err := token.LoadVerifyKeys(filepath.Join(dir, "missing.pem")); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Errorf("missing file: got %v, want an error naming it", err)
	}
}
