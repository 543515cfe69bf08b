// Package tlsconf loads a constellation's TLS material from a directory and
// builds the mutual-TLS (TLS 1.3 only) configurations of satnode, gateway and
// clients. The layout (docs/security.md) is the contract with `satpage
// cluster up`, the Helm chart and the Swarm stack:
//
//	ca.pem                                  constellation CA (trust anchor)
//	satellite-<i>.pem, satellite-<i>-key.pem one per satellite (DNS SAN satellite-<i>.satpage)
//	gateway.pem, gateway-key.pem            DNS SAN gateway.satpage
//	client.pem, client-key.pem              DNS SAN client.satpage (optional)
//	token-verify-keys.pem                   Ed25519 keys that verify session tokens
//	token-signing-key.pem                   Ed25519 key that signs them (gateway only)
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/satpage/satpage/services/internal/errs"
)

// File names inside a TLS directory.
const (
	CAFile          = "ca.pem"
	GatewayCert     = "gateway.pem"
	GatewayKey      = "gateway-key.pem"
	ClientCert      = "client.pem"
	ClientKey       = "client-key.pem"
	TokenVerifyKeys = "token-verify-keys.pem"
	TokenSigningKey = "token-signing-key.pem"
	satellitePrefix = "satellite-"
	identityDomain  = ".satpage"
	gatewayName     = "gateway" + identityDomain
	clientName      = "client" + identityDomain
)

// SatelliteCert and SatelliteKey are satellite i's certificate and key files.
func SatelliteCert(i uint32) string {
	return satellitePrefix + strconv.FormatUint(uint64(i), 10) + ".pem"
}
func SatelliteKey(i uint32) string {
	return satellitePrefix + strconv.FormatUint(uint64(i), 10) + "-key.pem"
}

// SatelliteName is the DNS SAN (and the TLS server name dialled) of satellite i.
func SatelliteName(i uint32) string {
	return satellitePrefix + strconv.FormatUint(uint64(i), 10) + identityDomain
}

// GatewayName and ClientName are the DNS SANs of the gateway and client certificates.
func GatewayName() string { return gatewayName }
func ClientName() string  { return clientName }

// Material is one daemon's (or client's) certificate and the CA it trusts.
type Material struct {
	Cert tls.Certificate
	CA   *x509.CertPool
	Dir  string
}

// Load reads the CA and the certificate/key pair certFile/keyFile from dir;
// errors name the file.
func Load(dir, certFile, keyFile string) (*Material, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("TLS CA: %v: %w", err, errs.ErrInvalid)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("TLS CA %s holds no PEM certificate: %w", filepath.Join(dir, CAFile), errs.ErrInvalid)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s / %s: %v: %w", filepath.Join(dir, certFile),
			filepath.Join(dir, keyFile), err, errs.ErrInvalid)
	}
	return &Material{Cert: cert, CA: pool, Dir: dir}, nil
}

// LoadSatellite, LoadGateway and LoadClient load the named role's pair from dir.
func LoadSatellite(dir string, i uint32) (*Material, error) {
	return Load(dir, SatelliteCert(i), SatelliteKey(i))
}
func LoadGateway(dir string) (*Material, error) { return Load(dir, GatewayCert, GatewayKey) }
func LoadClient(dir string) (*Material, error)  { return Load(dir, ClientCert, ClientKey) }

// Server is the server side: TLS 1.3 only; a client certificate is verified
// against the CA when one is presented (clients that use only a session token
// may come without one); which RPCs need which role is the auth package's job.
func (m *Material) Server() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{m.Cert},
		ClientCAs:    m.CA,
		ClientAuth:   tls.VerifyClientCertIfGiven,
	}
}

// Client is the dialling side towards serverName (SatelliteName(i) for a
// satellite: the handshake fails unless the peer's certificate names exactly
// that satellite, so a relay always reaches the satellite it meant).
func (m *Material) Client(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{m.Cert},
		RootCAs:      m.CA,
		ServerName:   serverName,
	}
}
