// Package tlstest writes a constellation's TLS material (the layout of package
// tlsconf) into a directory with crypto/x509, for tests. `satpage cluster up`
// writes the same layout with Python's cryptography; both follow docs/security.md.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/tlsconf"
)

// Authority is a test CA that can issue more certificates.
type Authority struct {
	Dir  string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// Write creates ca.pem, a certificate per satellite 0..satellites-1, the
// gateway's and a client's, and the token keys, in dir.
func Write(t testing.TB, dir string, satellites int) *Authority {
	t.Helper()
	a := NewAuthority(t, dir)
	for i := range satellites {
		a.Issue(t, tlsconf.SatelliteCert(uint32(i)), tlsconf.SatelliteKey(uint32(i)), tlsconf.SatelliteName(uint32(i)))
	}
	a.Issue(t, tlsconf.GatewayCert, tlsconf.GatewayKey, tlsconf.GatewayName(), "localhost")
	a.Issue(t, tlsconf.ClientCert, tlsconf.ClientKey, tlsconf.ClientName())
	WriteTokenKey(t, dir, tlsconf.TokenSigningKey, tlsconf.TokenVerifyKeys)
	return a
}

// NewAuthority writes a fresh CA to dir/ca.pem.
func NewAuthority(t testing.TB, dir string) *Authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "satpage test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	writePEM(t, filepath.Join(dir, tlsconf.CAFile), "CERTIFICATE", der)
	return &Authority{Dir: dir, cert: cert, key: key}
}

var serial int64 = 100

// Issue writes a certificate with DNS SANs names (and its key) signed by a.
func (a *Authority) Issue(t testing.TB, certFile, keyFile string, names ...string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(a.Dir, certFile), "CERTIFICATE", der)
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(a.Dir, keyFile), "PRIVATE KEY", k)
}

// WriteKey writes the CA's private key (PKCS#8 PEM) to dir/file: what the
// signer holds (package signer).
func (a *Authority) WriteKey(t testing.TB, file string) {
	t.Helper()
	k, err := x509.MarshalPKCS8PrivateKey(a.key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(a.Dir, file), "PRIVATE KEY", k)
}

// WriteTokenKey writes a fresh Ed25519 signing key and its public key.
func WriteTokenKey(t testing.TB, dir, signingFile, verifyFile string) ed25519.PrivateKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := x509.MarshalPKCS8PrivateKey(priv)
	writePEM(t, filepath.Join(dir, signingFile), "PRIVATE KEY", k)
	p, _ := x509.MarshalPKIXPublicKey(pub)
	writePEM(t, filepath.Join(dir, verifyFile), "PUBLIC KEY", p)
	return priv
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
