package tlsconf_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/tlsconf/tlstest"
)

func TestIdentityComesFromTheCertificateSAN(t *testing.T) {
	tests := []struct {
		name  string
		dns   []string
		want  tlsconf.Identity
		fails bool
	}{
		{"satellite", []string{"satellite-17.satpage", "satpage-sat-17.satpage-sat-headless"}, tlsconf.Identity{Role: tlsconf.Satellite, Index: 17}, false},
		{"gateway", []string{"gateway.satpage", "localhost"}, tlsconf.Identity{Role: tlsconf.Gateway}, false},
		{"client", []string{"client.satpage"}, tlsconf.Identity{Role: tlsconf.Client}, false},
		{"no role", []string{"example.org"}, tlsconf.Identity{}, false},
		{"two roles", []string{"gateway.satpage", "satellite-1.satpage"}, tlsconf.Identity{}, true},
		{"leading zero", []string{"satellite-017.satpage"}, tlsconf.Identity{}, true},
		{"not a number", []string{"satellite-x.satpage"}, tlsconf.Identity{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tlsconf.IdentityOf(&x509.Certificate{DNSNames: tt.dns})
			if (err != nil) != tt.fails {
				t.Fatalf("got error %v, want failure %v", err, tt.fails)
			}
			if got.Role != tt.want.Role || got.Index != tt.want.Index {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// callerWith is the server-side context of a request whose caller presented cert.
func callerWith(cert *x509.Certificate) context.Context {
	info := credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert}}}}
	return peer.NewContext(context.Background(), &peer.Peer{AuthInfo: info})
}

func TestEachCallerKeepsItsOwnCertificatesIdentityAcrossRequests(t *testing.T) {
	certs := []struct {
		cert *x509.Certificate
		want tlsconf.Identity
	}{
		{&x509.Certificate{DNSNames: []string{"satellite-3.satpage"}}, tlsconf.Identity{Role: tlsconf.Satellite, Index: 3}},
		{&x509.Certificate{DNSNames: []string{"satellite-4.satpage"}}, tlsconf.Identity{Role: tlsconf.Satellite, Index: 4}},
		{&x509.Certificate{DNSNames: []string{"gateway.satpage"}}, tlsconf.Identity{Role: tlsconf.Gateway}},
		{&x509.Certificate{DNSNames: []string{"gateway.satpage", "satellite-1.satpage"}}, tlsconf.Identity{}},
	}
	for round := range 3 { // the first request of each connection, then the ones after it
		for _, c := range certs {
			if got := tlsconf.FromContext(callerWith(c.cert)); got != c.want {
				t.Errorf("request %d: got %v, want %v", round, got, c.want)
			}
		}
	}
	if got := tlsconf.FromContext(context.Background()); got != (tlsconf.Identity{}) {
		t.Errorf("no peer: got %v, want anonymous", got)
	}
}

// handshake runs a TLS handshake between server and client configurations.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	a, b := net.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- tls.Server(a, server).Handshake()
		a.Close() // the raw pipe: a TLS close_notify would wait for a reader that is gone
	}()
	err := tls.Client(b, client).Handshake()
	b.Close()
	if serr := <-errc; err == nil {
		err = serr
	}
	return err
}

func TestARelayReachesOnlyTheSatelliteItMeant(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 5)
	sat3, err := tlsconf.LoadSatellite(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	sat4, err := tlsconf.LoadSatellite(dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, sat3.Server(), sat4.Client(tlsconf.SatelliteName(3))); err != nil {
		t.Errorf("satellite 4 dialling satellite 3: got %v, want a handshake", err)
	}
	err = handshake(t, sat4.Server(), sat3.Client(tlsconf.SatelliteName(3)))
	if err == nil || !strings.Contains(err.Error(), "satellite-3.satpage") {
		t.Errorf("dialling satellite 3 but reaching satellite 4: got %v, want a failed handshake naming satellite-3.satpage", err)
	}
	// A certificate from another CA is refused.
	other := t.TempDir()
	tlstest.Write(t, other, 4)
	stranger, err := tlsconf.LoadSatellite(other, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, stranger.Server(), sat4.Client(tlsconf.SatelliteName(3))); err == nil {
		t.Error("a satellite 3 certified by another CA: got a handshake, want a refusal")
	}
	// TLS 1.2 is refused.
	old := sat4.Client(tlsconf.SatelliteName(3))
	old.MaxVersion = tls.VersionTLS12
	if err := handshake(t, sat3.Server(), old); err == nil {
		t.Error("TLS 1.2 client: got a handshake, want a refusal")
	}
}

func TestLoadNamesTheMissingFile(t *testing.T) {
	dir := t.TempDir()
	tlstest.Write(t, dir, 1)
	_, err := tlsconf.LoadSatellite(dir, 9)
	if err == nil || !strings.Contains(err.Error(), "satellite-9.pem") {
		t.Errorf("got %v, want an error naming satellite-9.pem", err)
	}
}

// BenchmarkFromContext: the caller's identity, as the access policy asks for
// it on every request (a satellite's certificate).
func BenchmarkFromContext(b *testing.B) {
	ctx := callerWith(&x509.Certificate{DNSNames: []string{"satellite-17.satpage", "satpage-sat-17.satpage-sat-headless"}})
	for b.Loop() {
		if tlsconf.FromContext(ctx).Role != tlsconf.Satellite {
			b.Fatal("not a satellite")
		}
	}
}
