package tlsconf

import (
	"context"
	"crypto/x509"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Role is what a verified certificate lets its holder be.
type Role int

const (
	// Anonymous: no verified certificate (plain text, or TLS without a client certificate).
	Anonymous Role = iota
	Client
	Gateway
	Satellite
)

func (r Role) String() string {
	switch r {
	case Client:
		return "client"
	case Gateway:
		return "gateway"
	case Satellite:
		return "satellite"
	}
	return "anonymous"
}

// Identity is who a caller is, from its verified certificate chain.
type Identity struct {
	Role  Role
	Index uint32 // satellite index (Role == Satellite)
	Name  string // certificate subject CN, for logs
}

func (id Identity) String() string {
	if id.Role == Satellite {
		return "satellite " + strconv.FormatUint(uint64(id.Index), 10)
	}
	return id.Role.String()
}

// IdentityOf reads the role from a verified leaf certificate's DNS SANs:
// satellite-<i>.satpage, gateway.satpage or client.satpage. A certificate that
// names two roles is refused (an error), so no certificate is ever both.
func IdentityOf(cert *x509.Certificate) (Identity, error) {
	var found []Identity
	for _, name := range cert.DNSNames {
		switch {
		case name == gatewayName:
			found = append(found, Identity{Role: Gateway})
		case name == clientName:
			found = append(found, Identity{Role: Client})
		case strings.HasPrefix(name, satellitePrefix) && strings.HasSuffix(name, identityDomain):
			digits := strings.TrimSuffix(strings.TrimPrefix(name, satellitePrefix), identityDomain)
			i, err := strconv.ParseUint(digits, 10, 32)
			if err != nil || strconv.FormatUint(i, 10) != digits {
				return Identity{}, fmt.Errorf("certificate %q: SAN %q has no satellite index", cert.Subject.CommonName, name)
			}
			found = append(found, Identity{Role: Satellite, Index: uint32(i)})
		}
	}
	if len(found) > 1 {
		return Identity{}, fmt.Errorf("certificate %q names %d roles (%v)", cert.Subject.CommonName, len(found), cert.DNSNames)
	}
	if len(found) == 0 {
		return Identity{Name: cert.Subject.CommonName}, nil
	}
	found[0].Name = cert.Subject.CommonName
	return found[0], nil
}

// FromContext is the identity of a gRPC caller: Anonymous unless the
// connection is TLS and the caller presented a certificate the CA verified.
func FromContext(ctx context.Context) Identity {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Identity{}
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return Identity{}
	}
	return identityOfLeaf(info.State.VerifiedChains[0][0])
}

// identities caches the identity of each verified leaf certificate: every
// request on a connection presents the same certificate object, and reading
// its SANs again for each request was work on every call of the fault path.
// The map holds each certificate it names, so a pointer is never reused for
// another certificate while it is a key.
var identities struct {
	mu sync.Mutex // guards m
	m  map[*x509.Certificate]Identity
}

// identityCacheSize bounds identities (it is emptied when full): a satellite
// sees one certificate per connection, its peers' and the gateway's.
const identityCacheSize = 4096

// identityOfLeaf is IdentityOf(cert), Anonymous when that fails, cached.
func identityOfLeaf(cert *x509.Certificate) Identity {
	identities.mu.Lock()
	id, ok := identities.m[cert]
	identities.mu.Unlock()
	if ok {
		return id
	}
	id, err := IdentityOf(cert)
	if err != nil {
		id = Identity{}
	}
	identities.mu.Lock()
	if identities.m == nil || len(identities.m) >= identityCacheSize {
		identities.m = make(map[*x509.Certificate]Identity)
	}
	identities.m[cert] = id
	identities.mu.Unlock()
	return id
}

// PeerAddr is the caller's network address, for logs and per-caller limits.
func PeerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
