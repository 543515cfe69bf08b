// Package token is satpage's session capability: an Ed25519-signed token that
// binds a session id, the session's page-table size and an expiry. The
// gateway issues one when a session is registered; every satellite verifies it
// locally with the public keys it is configured with, never calling the
// gateway. Several verification keys may be configured at once, so a signing
// key is rotated with an overlap window (docs/security.md).
//
// Wire form (ASCII, fits gRPC metadata):
//
//	v1.<kid>.<expires_unix_s>.<table_pages>.<base64url(session_id)>.<base64url(signature)>
//
// kid is the first 8 bytes of SHA-256 of the public key in hex; the signature
// covers "satpage-token/v1." followed by everything before the last dot.
package token

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/errs"
)

// MetadataKey is the gRPC metadata key that carries the token.
const MetadataKey = "satpage-token"

const (
	version   = "v1"
	context_  = "satpage-token/v1."
	maxLength = 1024 // a token longer than this is refused before parsing
)

// Claims is what a valid token grants.
type Claims struct {
	Session    string
	TablePages uint32 // pages 0..TablePages-1 may be accessed
	Expires    time.Time
}

// KeyID names a public key (hex of its SHA-256's first 8 bytes).
func KeyID(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return hex.EncodeToString(h[:8])
}

// Issuer signs tokens. Safe for concurrent use.
type Issuer struct {
	key ed25519.PrivateKey
	kid string
	ttl time.Duration
	now func() time.Time
}

// NewIssuer signs with key; tokens live ttl.
func NewIssuer(key ed25519.PrivateKey, ttl time.Duration) *Issuer {
	return &Issuer{key: key, kid: KeyID(key.Public().(ed25519.PublicKey)), ttl: ttl, now: time.Now}
}

// Issue is a token for session with a table of tablePages pages.
func (i *Issuer) Issue(session string, tablePages uint32) (string, time.Time) {
	exp := i.now().Add(i.ttl).Truncate(time.Second)
	body := strings.Join([]string{version, i.kid, strconv.FormatInt(exp.Unix(), 10),
		strconv.FormatUint(uint64(tablePages), 10), base64.RawURLEncoding.EncodeToString([]byte(session))}, ".")
	sig := ed25519.Sign(i.key, []byte(context_+body))
	return body + "." + base64.RawURLEncoding.EncodeToString(sig), exp
}

// Verifier checks tokens against a set of public keys. Safe for concurrent use.
type Verifier struct {
	keys map[string]ed25519.PublicKey
	now  func() time.Time

	mu    sync.Mutex // guards cache
	cache map[string]Claims
}

// cacheSize bounds the verified-token cache (a hit skips the Ed25519 check;
// the expiry is still checked on every use).
const cacheSize = 4096

// NewVerifier accepts tokens signed by any of keys.
func NewVerifier(keys ...ed25519.PublicKey) *Verifier {
	v := &Verifier{keys: map[string]ed25519.PublicKey{}, now: time.Now, cache: map[string]Claims{}}
	for _, k := range keys {
		v.keys[KeyID(k)] = k
	}
	return v
}

// WithClock makes the verifier read time from now (tests).
func (v *Verifier) WithClock(now func() time.Time) *Verifier { v.now = now; return v }

// WithClock makes the issuer read time from now (tests).
func (i *Issuer) WithClock(now func() time.Time) *Issuer { i.now = now; return i }

// Keys is the number of verification keys.
func (v *Verifier) Keys() int { return len(v.keys) }

// Verify checks tok and that it is session's: errs.ErrUnauthenticated when it
// is missing, malformed, signed by an unknown key, forged or expired;
// errs.ErrPermissionDenied when it is valid but for another session. The
// errors never quote the token (it is a bearer secret).
func (v *Verifier) Verify(tok, session string) (Claims, error) {
	c, err := v.parse(tok)
	if err != nil {
		return Claims{}, err
	}
	if !v.now().Before(c.Expires) {
		return Claims{}, fmt.Errorf("session token expired at %s: %w", c.Expires.UTC().Format(time.RFC3339), errs.ErrUnauthenticated)
	}
	if c.Session != session {
		return Claims{}, fmt.Errorf("session token is for another session, not %q: %w", session, errs.ErrPermissionDenied)
	}
	return c, nil
}

func (v *Verifier) parse(tok string) (Claims, error) {
	if tok == "" {
		return Claims{}, fmt.Errorf("no session token in metadata %q: %w", MetadataKey, errs.ErrUnauthenticated)
	}
	v.mu.Lock()
	c, ok := v.cache[tok]
	v.mu.Unlock()
	if ok {
		return c, nil
	}
	bad := func(why string) (Claims, error) {
		return Claims{}, fmt.Errorf("session token %s: %w", why, errs.ErrUnauthenticated)
	}
	if len(tok) > maxLength {
		return bad(fmt.Sprintf("of %d bytes is too long", len(tok)))
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 6 || parts[0] != version {
		return bad("is malformed")
	}
	if why := v.signed(context_, tok, parts[1], parts[len(parts)-1]); why != "" {
		return bad(why)
	}
	exp, err1 := strconv.ParseInt(parts[2], 10, 64)
	pages, err2 := strconv.ParseUint(parts[3], 10, 32)
	session, err3 := base64.RawURLEncoding.DecodeString(parts[4])
	if err1 != nil || err2 != nil || err3 != nil {
		return bad("is malformed")
	}
	c = Claims{Session: string(session), TablePages: uint32(pages), Expires: time.Unix(exp, 0)}
	v.mu.Lock()
	if len(v.cache) >= cacheSize {
		clear(v.cache)
	}
	v.cache[tok] = c
	v.mu.Unlock()
	return c, nil
}

// signed is why text (its last part the base64url signature sig, of key kid,
// over domain followed by everything before the last dot) is not signed by
// one of v's keys: "" when it is.
func (v *Verifier) signed(domain, text, kid, sig string) string {
	key, ok := v.keys[kid]
	if !ok {
		return "is signed by unknown key " + strconv.Quote(kid)
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || len(raw) != ed25519.SignatureSize {
		return "has a malformed signature"
	}
	if !ed25519.Verify(key, []byte(domain+text[:len(text)-len(sig)-1]), raw) {
		return "has a bad signature"
	}
	return ""
}

// LoadSigningKey reads a PKCS#8 PEM Ed25519 private key; errors name the file.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token signing key: %v: %w", err, errs.ErrInvalid)
	}
	b, _ := pem.Decode(raw)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("token signing key %s: no PEM PRIVATE KEY block: %w", path, errs.ErrInvalid)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("token signing key %s: %v: %w", path, err, errs.ErrInvalid)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("token signing key %s is a %T, not Ed25519: %w", path, k, errs.ErrInvalid)
	}
	return ek, nil
}

// KeyUse says whether a verification-key file may hold private keys.
type KeyUse int

const (
	// VerifyOnly (satellites): PUBLIC KEY and CERTIFICATE blocks only. A
	// private key there would let its holder mint tokens for every session.
	VerifyOnly KeyUse = iota
	// AlsoSigns (the gateway, which holds the signing key anyway): a PKCS#8
	// PRIVATE KEY block is accepted too and its public half used.
	AlsoSigns
)

// LoadVerifyKeys reads every PEM block of path: PUBLIC KEY (PKIX Ed25519),
// CERTIFICATE (an X.509 certificate whose key is Ed25519: only that key is
// used, not its validity or issuer, since the file itself is the trust; Helm
// and cert-manager can make one but not a bare public key) or, with AlsoSigns,
// PRIVATE KEY (PKCS#8 Ed25519; its public half is used). At least one.
func LoadVerifyKeys(path string, use KeyUse) ([]ed25519.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("token verification keys: %v: %w", err, errs.ErrInvalid)
	}
	var keys []ed25519.PublicKey
	for n := 1; ; n++ {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			break
		}
		var k any
		switch b.Type {
		case "PUBLIC KEY":
			k, err = x509.ParsePKIXPublicKey(b.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(b.Bytes); err == nil {
				k = c.PublicKey
			}
		case "PRIVATE KEY":
			if use == VerifyOnly {
				return nil, fmt.Errorf("token verification keys %s, block %d, is a private key: a satellite holds verify keys only (PUBLIC KEY or CERTIFICATE blocks, docs/security.md): %w",
					path, n, errs.ErrInvalid)
			}
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
			if priv, ok := k.(ed25519.PrivateKey); ok {
				k = priv.Public()
			}
		default:
			err = fmt.Errorf("PEM block type %q", b.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("token verification keys %s, block %d: %v: %w", path, n, err, errs.ErrInvalid)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("token verification keys %s, block %d: a %T, not Ed25519: %w", path, n, k, errs.ErrInvalid)
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("token verification keys %s: no PEM block: %w", path, errs.ErrInvalid)
	}
	return keys, nil
}
