// Package auth decides, before any handler runs, whether a gRPC caller may
// make a request: by the role its verified certificate names (package
// tlsconf), the session token it carries (package token), and its rate limit
// (package limits). A refused request changes nothing; it is logged with the
// caller and counted. docs/security.md has the table of who may call what.
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/limits"
	"github.com/satpage/satpage/services/internal/tlsconf"
	"github.com/satpage/satpage/services/internal/token"
)

// rule is what a method needs.
type rule int

const (
	deny          rule = iota // not served (unknown method)
	public                    // anyone (health)
	session                   // the session's token
	register                  // a client or gateway certificate
	satellite                 // a satellite certificate
	peerOrGateway             // a satellite or the gateway certificate
	anyCert                   // any verified certificate (reflection, when on)
	// messages: a stream open to anyone (rate limited unless a satellite or
	// the gateway), each of whose messages is admitted as its unary call
	// (AdmitMessage): the read stream, whose messages are ReadPages
	messages
)

var rules = map[string]rule{
	"/satpage.v1.PageService/ReadPage":           session,
	"/satpage.v1.PageService/ReadPages":          session,
	"/satpage.v1.PageService/ReadStream":         messages, // each message as ReadPage (AdmitMessage)
	"/satpage.v1.PageService/WritePage":          session,
	"/satpage.v1.PageService/EndSession":         session,
	"/satpage.v1.GatewayService/RegisterSession": register,
	"/satpage.v1.GatewayService/SessionStats":    session,
	"/satpage.v1.GatewayService/OpenLiveSession": register, // live mode: like RegisterSession
	"/satpage.v1.GatewayService/Clock":           anyCert,  // live mode: the clock is no secret
	"/satpage.v1.SatelliteService/FetchPages":    satellite,
	"/satpage.v1.SatelliteService/FetchStream":   satellite, // and each message as FetchPages (AdmitMessage)
	"/satpage.v1.SatelliteService/ReleasePages":  satellite,
	"/satpage.v1.SatelliteService/AcceptTable":   satellite,
	"/satpage.v1.SatelliteService/OpenSession":   peerOrGateway,
	"/satpage.v1.SatelliteService/HandOver":      peerOrGateway,
	"/satpage.v1.SatelliteService/MovePages":     peerOrGateway,
	"/satpage.v1.SatelliteService/SessionFrames": peerOrGateway,
	"/satpage.v1.SatelliteService/DropSession":   peerOrGateway,
	// Replication (docs/faults.md): between satellites only; the ISL cut set
	// from the ground segment (the gateway's certificate), as `cluster chaos` does.
	"/satpage.v1.SatelliteService/Replicate":       satellite,
	"/satpage.v1.SatelliteService/InstallSnapshot": satellite,
	"/satpage.v1.SatelliteService/ReplicaState":    satellite,
	"/satpage.v1.SatelliteService/RequestSync":     satellite,
	"/satpage.v1.SatelliteService/SetFaults":       peerOrGateway,
	// Live push-ahead with a lead (docs/live.md): the gateway starts the copy and
	// the claim; the copy itself travels between satellites.
	"/satpage.v1.SatelliteService/CopyAhead":  peerOrGateway,
	"/satpage.v1.SatelliteService/StagePages": satellite,
	"/satpage.v1.SatelliteService/ClaimPages": peerOrGateway,
	// Failover: the gateway asks a replica to take a session over; the
	// replica tells the other holders of the dead satellite's copy.
	"/satpage.v1.SatelliteService/TakeOver":   peerOrGateway,
	"/satpage.v1.SatelliteService/ForgetCopy": satellite,
	"/satpage.v1.SatelliteService/FenceCopy":  satellite,
	"/grpc.health.v1.Health/Check":            public,
	"/grpc.health.v1.Health/List":             public,
	"/grpc.health.v1.Health/Watch":            public,
}

func ruleOf(method string) rule {
	if r, ok := rules[method]; ok {
		return r
	}
	if strings.HasPrefix(method, "/grpc.reflection.") {
		return anyCert
	}
	return deny
}

// Policy is one server's access control. The zero value of each optional
// field turns its check off.
type Policy struct {
	// Insecure serves everyone (plain text, --insecure): only the decoding check runs.
	Insecure bool
	// Verifier checks session tokens (required unless Insecure).
	Verifier *token.Verifier
	// Rate limits each caller that is not a satellite or the gateway.
	Rate *limits.Rate
	// Forward puts the caller's token on the outgoing context (the gateway
	// passes it on to the serving satellite).
	Forward bool
	// MaxPages bounds the pages (accesses, table entries) of one request (0: no bound here).
	MaxPages int
	Logger   *slog.Logger
	// Denied counts refusals by RPC and reason (Counter).
	Denied *prometheus.CounterVec
}

// Counter is the metric Policy.Denied expects; register it on the daemon's registry.
func Counter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "satpage_auth_denied_total",
		Help: "Requests refused before any handler ran, by RPC and reason (unauthenticated, permission_denied, rate_limited, invalid)."},
		[]string{"rpc", "reason"})
}

// TokenFrom is the token in the incoming metadata ("" when none).
func TokenFrom(ctx context.Context) string {
	v := metadata.ValueFromIncomingContext(ctx, token.MetadataKey)
	if len(v) != 1 {
		return ""
	}
	return v[0]
}

func short(method string) string { return method[strings.LastIndexByte(method, '/')+1:] }

// admit runs every check of one request but its decoding (AdmitMessage takes that
// first) and returns the context the handler gets.
func (p *Policy) admit(ctx context.Context, method string, req any) (context.Context, error) {
	if err := p.size(req); err != nil {
		return ctx, err
	}
	if p.Insecure {
		return ctx, nil
	}
	id := tlsconf.FromContext(ctx)
	r := ruleOf(method)
	if id.Role != tlsconf.Satellite && id.Role != tlsconf.Gateway && r != public && !p.Rate.Allow(callerKey(ctx, id)) {
		return ctx, fmt.Errorf("%s from %s: rate limit reached: %w", short(method), id, errs.ErrResourceExhausted)
	}
	need := func(ok bool, what string) error {
		if ok {
			return nil
		}
		if id.Role == tlsconf.Anonymous {
			return fmt.Errorf("%s needs %s; the caller presented no verified certificate: %w", short(method), what, errs.ErrUnauthenticated)
		}
		return fmt.Errorf("%s needs %s, not a %s certificate: %w", short(method), what, id.Role, errs.ErrPermissionDenied)
	}
	switch r {
	case public:
		return ctx, nil
	case register:
		return ctx, need(id.Role == tlsconf.Client || id.Role == tlsconf.Gateway, "a client certificate")
	case satellite:
		if err := need(id.Role == tlsconf.Satellite, "a satellite certificate"); err != nil {
			return ctx, err
		}
		return ctx, sender(method, req, id)
	case peerOrGateway:
		if err := need(id.Role == tlsconf.Satellite || id.Role == tlsconf.Gateway, "a satellite or gateway certificate"); err != nil {
			return ctx, err
		}
		return ctx, sender(method, req, id)
	case anyCert:
		return ctx, need(id.Role != tlsconf.Anonymous, "a certificate")
	case messages:
		return ctx, nil
	case session:
		return p.session(ctx, method, req)
	}
	return ctx, fmt.Errorf("%s is not served: %w", method, errs.ErrPermissionDenied)
}

// session checks the token against the request's session and its pages
// against the session's table size.
func (p *Policy) session(ctx context.Context, method string, req any) (context.Context, error) {
	s, ok := req.(interface{ GetSessionId() string })
	if !ok {
		return ctx, fmt.Errorf("%s carries no session: %w", short(method), errs.ErrPermissionDenied)
	}
	tok := TokenFrom(ctx)
	c, err := p.Verifier.Verify(tok, s.GetSessionId())
	if err != nil {
		return ctx, err
	}
	if err := checkPages(req, c.TablePages); err != nil {
		return ctx, err
	}
	if p.Forward {
		ctx = metadata.AppendToOutgoingContext(ctx, token.MetadataKey, tok)
	}
	return ctx, nil
}

// size refuses a request with more pages (accesses, table entries) than MaxPages.
func (p *Policy) size(req any) error {
	if p.MaxPages <= 0 {
		return nil
	}
	n, field := 0, ""
	switch r := req.(type) {
	case *satpagev1.ReadPagesRequest:
		n, field = len(r.Pages), "pages"
	case *satpagev1.FetchPagesRequest:
		n, field = len(r.Pages), "pages"
	case *satpagev1.ReleasePagesRequest:
		n, field = len(r.Pages), "pages"
	case *satpagev1.AcceptTableRequest:
		n, field = len(r.Entries), "entries"
	case *satpagev1.CopyAheadRequest:
		n, field = len(r.Pages), "pages"
	case *satpagev1.StagePagesRequest:
		n, field = len(r.Pages), "pages"
	case *satpagev1.ClaimPagesRequest:
		n, field = len(r.Pages), "pages"
	}
	if n > p.MaxPages {
		return fmt.Errorf("%s: %d in one request exceed --max-pages-per-request %d: %w", field, n, p.MaxPages, errs.ErrInvalid)
	}
	return nil
}

// sender checks that a relayed request comes from the satellite its route
// says sent it (the last entry of route.path, which each relay appends itself
// to): a satellite cannot pass its request off as another's. The gateway is on
// no route (it sends DropSession straight to the satellite that holds frames).
func sender(method string, req any, id tlsconf.Identity) error {
	r, ok := req.(interface{ GetRoute() *satpagev1.Route })
	if !ok || id.Role != tlsconf.Satellite || r.GetRoute() == nil {
		return nil
	}
	path := r.GetRoute().GetPath()
	if len(path) == 0 || path[len(path)-1] != id.Index {
		return fmt.Errorf("%s from %s: route.path %v does not end with the sender: %w", short(method), id, path, errs.ErrPermissionDenied)
	}
	return nil
}

// checkPages refuses pages outside the session's table (a hostile client
// cannot make a satellite create pages without bound).
func checkPages(req any, table uint32) error {
	out := func(field string, page uint32) error {
		return fmt.Errorf("%s: page %d outside the session's table of %d pages: %w", field, page, table, errs.ErrOutOfRange)
	}
	switch r := req.(type) {
	case *satpagev1.ReadPageRequest:
		if r.Page >= table {
			return out("page", r.Page)
		}
	case *satpagev1.WritePageRequest:
		if r.Page >= table {
			return out("page", r.Page)
		}
	case *satpagev1.ReadPagesRequest:
		for i, pg := range r.Pages {
			if pg >= table {
				return out(fmt.Sprintf("pages[%d]", i), pg)
			}
		}
	}
	return nil
}

// callerKey is who a rate limit applies to: the certificate, else the address's host.
func callerKey(ctx context.Context, id tlsconf.Identity) string {
	addr := tlsconf.PeerAddr(ctx)
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		addr = addr[:i]
	}
	if id.Role != tlsconf.Anonymous {
		return id.Role.String() + "/" + id.Name + "@" + addr
	}
	return addr
}

// refused logs and counts a refusal (never the token or any page data).
func (p *Policy) refused(ctx context.Context, method string, err error) {
	reason := "invalid"
	switch {
	case errors.Is(err, errs.ErrUnauthenticated):
		reason = "unauthenticated"
	case errors.Is(err, errs.ErrPermissionDenied):
		reason = "permission_denied"
	case errors.Is(err, errs.ErrResourceExhausted):
		reason = "rate_limited"
	case errors.Is(err, errs.ErrOutOfRange):
		reason = "out_of_range"
	}
	if p.Denied != nil {
		p.Denied.WithLabelValues(short(method), reason).Inc()
	}
	if p.Logger != nil && reason != "invalid" && reason != "out_of_range" {
		p.Logger.WarnContext(ctx, "denied", "rpc", short(method), "reason", reason,
			"caller", tlsconf.FromContext(ctx).String(), "addr", tlsconf.PeerAddr(ctx), "err", err.Error())
	}
}

// Unary is the policy as a unary server interceptor (first in the chain).
func (p *Policy) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := p.AdmitMessage(ctx, info.FullMethod, req, req)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// AdmitMessage is the policy for one request message: wire is the message as
// decoded (its decoding error, if any, is the answer), req the request it
// carries, admitted as a call of the unary method. For a unary call both are
// the request (Unary); for a stream that carries unary requests (FetchStream)
// wire is the stream's message. A refusal is logged and counted; the error is
// a gRPC status.
func (p *Policy) AdmitMessage(ctx context.Context, method string, wire, req any) (context.Context, error) {
	err := Take(wire)
	if err == nil {
		ctx, err = p.admit(ctx, method, req)
	}
	if err != nil {
		p.refused(ctx, method, err)
		return ctx, errs.Status(err)
	}
	return ctx, nil
}

// Stream is the policy for streaming RPCs (health Watch, reflection,
// FetchStream and ReadStream: their messages then pass AdmitMessage one by
// one).
func (p *Policy) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if _, err := p.admit(ss.Context(), info.FullMethod, nil); err != nil {
			p.refused(ss.Context(), info.FullMethod, err)
			return errs.Status(err)
		}
		return h(srv, ss)
	}
}
