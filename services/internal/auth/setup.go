package auth

import (
	"crypto/tls"
	"log/slog"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/satpage/satpage/services/internal/config"
	"github.com/satpage/satpage/services/internal/limits"
	"github.com/satpage/satpage/services/internal/peers"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/token"
)

// Security is one daemon's TLS material, access policy and (gateway) token issuer.
type Security struct {
	Material *tlsconf.Material // nil when insecure
	Policy   *Policy
	Issuer   *token.Issuer // gateway only; nil when insecure
	cfg      config.Config
}

// Load builds the security of a satnode (index cfg.Index) or the gateway
// from its configuration and registers the refusal counter on reg. With
// --insecure it logs a warning (at every start, by design) and checks nothing.
func Load(cfg config.Config, role config.Role, log *slog.Logger, reg prometheus.Registerer) (*Security, error) {
	denied := Counter()
	if reg != nil {
		reg.MustRegister(denied)
	}
	s := &Security{cfg: cfg, Policy: &Policy{Insecure: cfg.Insecure, Logger: log, Denied: denied,
		Forward: role == config.Gateway, MaxPages: cfg.MaxPagesPerRequest}}
	if cfg.Insecure {
		log.Warn("INSECURE: plain-text gRPC and no access control (--insecure); anyone who can reach this port can read, change and delete every session's pages; use it for debugging only")
		return s, nil
	}
	var err error
	if role == config.Gateway {
		s.Material, err = tlsconf.LoadGateway(cfg.TLSDir)
	} else {
		s.Material, err = tlsconf.LoadSatellite(cfg.TLSDir, uint32(cfg.Index))
	}
	if err != nil {
		return nil, err
	}
	verify := cfg.VerifyKeys
	if verify == "" {
		verify = filepath.Join(cfg.TLSDir, tlsconf.TokenVerifyKeys)
	}
	// Satellites only verify tokens: a private key in their file is refused, so
	// a deployment that hands one out fails at start instead of letting every
	// satellite mint tokens.
	use := token.VerifyOnly
	if role == config.Gateway {
		use = token.AlsoSigns
	}
	keys, err := token.LoadVerifyKeys(verify, use)
	if err != nil {
		return nil, err
	}
	s.Policy.Verifier = token.NewVerifier(keys...)
	s.Policy.Rate = limits.NewRate(cfg.RateLimit, cfg.RateBurst)
	if role == config.Gateway {
		sign := cfg.SigningKey
		if sign == "" {
			sign = filepath.Join(cfg.TLSDir, tlsconf.TokenSigningKey)
		}
		k, err := token.LoadSigningKey(sign)
		if err != nil {
			return nil, err
		}
		s.Issuer = token.NewIssuer(k, cfg.TokenTTL)
	}
	log.Info("mutual TLS 1.3", "tls_dir", cfg.TLSDir, "token_keys", len(keys))
	return s, nil
}

// ServerOptions are the grpc.NewServer options: transport security, the
// policy's interceptors, the decoding codec and the size/stream limits.
func (s *Security) ServerOptions() []grpc.ServerOption {
	opts := peers.ServerOptions()
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if s.Material != nil {
		creds = credentials.NewTLS(s.Material.Server())
	}
	maxMsg := s.cfg.MaxMessageMiB << 20
	if maxMsg <= 0 {
		maxMsg = peers.MaxMessageBytes
	}
	streams := s.cfg.MaxStreams
	if streams <= 0 {
		streams = 256
	}
	return append(opts, grpc.Creds(creds), grpc.ForceServerCodecV2(NewCodec()),
		grpc.ChainUnaryInterceptor(s.Policy.Unary()), grpc.ChainStreamInterceptor(s.Policy.Stream()),
		grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg), grpc.MaxConcurrentStreams(uint32(streams)))
}

// Pool dials satellites: with the daemon's certificate, checking that
// satellite i answers with a certificate naming satellite i.
func (s *Security) Pool(addr func(uint32) string, opts ...grpc.DialOption) *peers.Pool {
	if s.Material == nil {
		return peers.NewPool(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	}
	m := s.Material
	return peers.NewPoolPer(addr, func(i uint32) []grpc.DialOption {
		return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(m.Client(tlsconf.SatelliteName(i))))}
	}, opts...)
}

// ClientTLS is the client side towards serverName (nil when insecure).
func (s *Security) ClientTLS(serverName string) *tls.Config {
	if s.Material == nil {
		return nil
	}
	return s.Material.Client(serverName)
}
