package peers

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/peer"

	"github.com/satpage/satpage/services/internal/tlsconf"
)

// A satellite that calls this one tells where it is (docs/faults.md, "A
// satellite back at a new address"). Its connection's client certificate,
// verified against the constellation CA, names its index (tlsconf.Identity),
// and the connection comes from its address: on Kubernetes the pod's IP (pods
// talk to pods without NAT), on Swarm the task's IP on the overlay network
// (dnsrr, no VIP). The pool then dials satellite i there too, before its
// name resolves. Nothing else is trusted: an address is learnt only from a
// caller whose certificate names satellite i, only for satellite i's own
// dial address (host and port), and every connection to it still checks that
// the server's certificate names satellite i (NewPoolPer); without TLS
// (--insecure) no caller is a satellite and nothing is learnt.

// heardAt is the address a satellite last called from and when the name
// cache was last told (Pool.heard).
type heardAt struct {
	ip netip.Addr
	at time.Time
}

// Heard records that satellite i, proved by its certificate, called from
// from: see hear in names.go. A connection to i that is failing (in
// TRANSIENT_FAILURE: every call fails at once until a reconnection succeeds)
// is replaced when the address is new, so the next call connects there and
// waits for it: the snapshot a primary sends a replica that just asked for
// one (RequestSync) goes to the replica's new pod, where before it failed at
// once and made the failure detector mark the replica dead again. Cheap when
// nothing changed (every call from a satellite passes here): the cache is
// told again at most every NameTTL/2 per satellite, which keeps the heard
// address alive while the satellite keeps calling.
func (p *Pool) Heard(i uint32, from net.Addr) {
	tcp, ok := from.(*net.TCPAddr)
	if !ok {
		return // bufconn, a unix socket: no address to dial
	}
	ip, ok := netip.AddrFromSlice(tcp.IP)
	if !ok {
		return
	}
	ip = ip.Unmap()
	now := time.Now()
	p.mu.Lock()
	if h, ok := p.heard[i]; ok && h.ip == ip && now.Sub(h.at) < NameTTL/2 {
		p.mu.Unlock()
		return
	}
	if p.heard == nil {
		p.heard = map[uint32]heardAt{}
	}
	p.heard[i] = heardAt{ip: ip, at: now}
	p.mu.Unlock()
	addr, ok := dialled(p.addr(i))
	if !ok || !p.nc.hear(addr, ip.String()) {
		return
	}
	p.mu.Lock()
	cc := p.conns[i]
	if cc != nil && cc.GetState() == connectivity.TransientFailure {
		delete(p.conns, i)
	} else {
		cc = nil
	}
	p.mu.Unlock()
	if cc == nil {
		return
	}
	// The new connection first (a Reconnect waiting on the old one moves to
	// it), then the old one closed, not from inside one of its own calls.
	_, _ = p.conn(i)
	go cc.Close()
}

// HeardUnary and HeardStream are the server interceptors that tell the pool
// where each satellite that calls this one is (Heard), from the verified
// certificate of its connection. They refuse nothing.
func (p *Pool) HeardUnary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		p.heardFrom(ctx)
		return h(ctx, req)
	}
}

func (p *Pool) HeardStream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		p.heardFrom(ss.Context())
		return h(srv, ss)
	}
}

func (p *Pool) heardFrom(ctx context.Context) {
	id := tlsconf.FromContext(ctx)
	if id.Role != tlsconf.Satellite {
		return
	}
	if pr, ok := peer.FromContext(ctx); ok {
		p.Heard(id.Index, pr.Addr)
	}
}

// dialled is the host:port the name cache is asked to dial for addr
// (passthrough, or no scheme), when host is a name; false otherwise.
func dialled(addr string) (string, bool) {
	addr, passthrough := strings.CutPrefix(target(addr), "passthrough:///")
	if !passthrough {
		return "", false
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || net.ParseIP(host) != nil {
		return "", false
	}
	return addr, true
}
