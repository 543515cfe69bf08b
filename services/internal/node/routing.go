package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/retry"
)

// originate sends a routed request from this satellite to dest: straight to
// the first hop of the shortest path (the request then travels hop by hop).
// dest == self is handled by the same handler, in-process, with zero hops.
//
// An idempotent request that fails with Unavailable (a relay or the
// destination died with it in flight: connection reset) is sent again, whole
// path, by the origin only: relays never retry, so attempts do not multiply
// along the path. Each attempt takes the first hop on the live graph (dead
// satellites and cut ISLs left out, docs/faults.md); once the destination
// itself is known dead, the request fails at once (Unavailable) instead of
// waiting for it: the caller may turn to a replica. A relay's "no route" is not
// sent again (errs.Retryable): the route of a scenario time does not change.
func (n *Node) originate(ctx context.Context, dest uint32, tNs int64, rpc string,
	call func(satpagev1.SatelliteServiceClient, *satpagev1.Route) error) error {
	if dest == n.self {
		return call(localClient{n}, &satpagev1.Route{Origin: n.self, Destination: dest, ScenarioTimeNs: tNs})
	}
	var avoid []uint32 // first hops this request found unreachable (relay)
	n.retries.Attempt()
	for attempt := 1; ; attempt++ {
		// The first hop on the live graph, again at each attempt: a failed
		// attempt may have taught the detector that a satellite on the path is dead.
		next, err := n.nextHop(dest, tNs, avoid)
		if err != nil {
			return err
		}
		c, err := n.peers.Satellite(next)
		if err != nil {
			return err
		}
		n.m.RelayedHopsOf.Of(rpc).Inc()
		err = call(c, &satpagev1.Route{Origin: n.self, Destination: dest, ScenarioTimeNs: tNs, Hops: 1, Path: []uint32{n.self}})
		if err == nil || !idempotent[rpc] || attempt == retryAttempts || !errs.Retryable(err) {
			return err
		}
		if next != dest && n.unreachable(next) {
			avoid = append(avoid, next)
		}
		// Probe the satellites on the path this attempt took (by this node's
		// view): the relay that found its next hop dead knows, this node does not yet.
		n.suspectPath(ctx, dest, tNs)
		if n.faults.SatelliteDown(dest) {
			return err // fail fast: the caller may turn to a replica
		}
		// The destination itself unreachable from here: its connection is down
		// and gRPC reconnects on its own backoff; an attempt now would fail the
		// same way at once. The caller backs off instead (replication's
		// per-replica backoff, the gateway's failover).
		if next == dest && (n.unreachable(dest) || n.undelivered(dest, err)) {
			return err
		}
		if !n.retries.Retry() {
			n.log.DebugContext(ctx, "routed request failed; retry budget spent, not sending it again", "rpc", rpc, "to", dest, "err", err)
			return err
		}
		n.log.InfoContext(ctx, "routed request failed, sending it again", "rpc", rpc, "to", dest, "attempt", attempt, "err", err)
		if !retry.Sleep(ctx, retryBackoff.Delay(attempt-1)) {
			return err
		}
	}
}

// undelivered reports whether a call to satellite i that failed Unavailable
// found no ready connection (peers.Pool.NotReady): gRPC could not connect (the
// dial or the handshake failed) or the connection broke, and it now waits out
// its reconnect backoff, so an attempt sent again now fails the same way (make
// e2e-k8s: 5,646 resends, nearly all of them dial failures). The connection's
// state decides, not the error's text.
func (n *Node) undelivered(i uint32, err error) bool {
	u, ok := n.peers.(interface{ NotReady(i uint32) bool })
	return ok && status.Code(err) == codes.Unavailable && u.NotReady(i)
}

// idempotent are the routed requests that may be sent again: FetchPages
// leaves the frames in place, ReleasePages and DropSession delete what is
// there, AcceptTable stores the same table again. (HandOver and MovePages
// change state in steps and are not routed.)
// Replicate carries a snapshot id: a change applied twice fails as out of sync
// and the primary then sends a snapshot; InstallSnapshot replaces the copy.
var idempotent = map[string]bool{"FetchPages": true, "ReleasePages": true, "AcceptTable": true, "DropSession": true,
	"Replicate": true, "InstallSnapshot": true}

// Origin retries: at most retryAttempts tries, apart by retryBackoff (jittered,
// so satellites that failed together do not resend together), and only while
// the node's retry budget (Node.retries) allows.
const retryAttempts = 4

var retryBackoff = retry.Backoff{First: 50 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: 0.5}

// checkRoute validates a routed request arriving here.
func (n *Node) checkRoute(r *satpagev1.Route) error {
	if r == nil {
		return fmt.Errorf("route is missing: %w", errs.ErrInvalid)
	}
	if err := n.grid.Check(r.Destination); err != nil {
		return fmt.Errorf("route destination: %w", err)
	}
	if err := n.grid.Check(r.Origin); err != nil {
		return fmt.Errorf("route origin: %w", err)
	}
	if err := n.grid.CheckTime(r.ScenarioTimeNs); err != nil {
		return fmt.Errorf("route: %w", err)
	}
	if int(r.Hops) != len(r.Path) {
		return fmt.Errorf("route hops %d but path %v: %w", r.Hops, r.Path, errs.ErrInvalid)
	}
	if len(r.Path) > n.grid.Satellites() {
		return fmt.Errorf("route of %d hops is longer than the constellation: %w", len(r.Path), errs.ErrRelayLoop)
	}
	if len(r.Path) > 0 {
		last := r.Path[len(r.Path)-1]
		if err := n.grid.Check(last); err != nil {
			return fmt.Errorf("route path: %w", err)
		}
		if !n.grid.IsNeighbor(last, n.self, r.ScenarioTimeNs) {
			return fmt.Errorf("request from satellite %d reached satellite %d, which is not its ISL neighbour: %w", last, n.self, errs.ErrRelayLoop)
		}
		if slices.Contains(r.Path, n.self) {
			return fmt.Errorf("request to satellite %d passed satellite %d twice (path %v): %w", r.Destination, n.self, r.Path, errs.ErrRelayLoop)
		}
	}
	return nil
}

// suspectPath probes, at once, every satellite on this node's live path to
// dest; the dead ones leave the live graph (bounded by the probe deadline).
func (n *Node) suspectPath(ctx context.Context, dest uint32, tNs int64) {
	var path []uint32
	for at := n.self; at != dest && len(path) <= n.grid.Satellites(); {
		next, err := n.grid.LiveNextHop(at, dest, tNs, n.faults)
		if err != nil {
			break
		}
		path = append(path, next)
		at = next
	}
	var wg sync.WaitGroup
	for _, s := range path {
		wg.Go(func() { n.faults.Suspect(ctx, s) })
	}
	wg.Wait()
}

// visited adds the satellites a request already passed to the faults: a relay
// never sends a request back (views of what is dead differ for a moment
// between satellites; this keeps every path loop-free regardless).
type visited struct {
	constellation.Faults
	path []uint32
}

func (v visited) Any() bool { return true }
func (v visited) SatelliteDown(i uint32) bool {
	return slices.Contains(v.path, i) || v.Faults.SatelliteDown(i)
}

// nextHop is the first hop from this satellite to dest on the live graph,
// never back into path. When the live graph has no route but dest is not known
// dead, it is the first hop with the cut ISLs left out only (docs/faults.md,
// "Relays"): the dead marks are this satellite's suspicions (a loaded machine
// can make them wrong), a hop through a satellite that is really dead fails at
// once (refused) or within the caller's deadline, and the alternative, "no
// route", fails for certain. Cut ISLs are facts, not suspicions: never used.
func (n *Node) nextHop(dest uint32, tNs int64, path []uint32) (uint32, error) {
	next, err := n.grid.LiveNextHop(n.self, dest, tNs, n.faults)
	if err == nil && slices.Contains(path, next) {
		// An earlier relay went around a satellite this one does not know is down.
		next, err = n.grid.LiveNextHop(n.self, dest, tNs, visited{n.faults, path})
	}
	if errors.Is(err, errs.ErrNoRoute) && !n.faults.SatelliteDown(dest) {
		var f constellation.Faults = n.faults.CutsOnly()
		if len(path) > 0 {
			f = visited{f, path}
		}
		if hop, herr := n.grid.LiveNextHop(n.self, dest, tNs, f); herr == nil {
			return hop, nil
		}
	}
	return next, err
}

// forward returns the next hop towards r.Destination, never one of avoid,
// and advances r. A destination this relay holds dead is probed again first:
// the origin sent the request, so it holds it alive, and one of the two views
// is stale (a satellite back in a new pod stays dead here until its next
// re-probe, and the request would fail with "no route" meanwhile).
func (n *Node) forward(ctx context.Context, r *satpagev1.Route, rpc string, avoid ...uint32) (satpagev1.SatelliteServiceClient, uint32, error) {
	path := append(slices.Clone(r.Path), avoid...)
	next, err := n.nextHop(r.Destination, r.ScenarioTimeNs, path)
	if errors.Is(err, errs.ErrNoRoute) && n.faults.SatelliteDown(r.Destination) && !n.faults.Recheck(ctx, r.Destination) {
		n.log.InfoContext(ctx, "destination held dead here answers: routing to it", "rpc", rpc, "to", r.Destination)
		next, err = n.nextHop(r.Destination, r.ScenarioTimeNs, path)
	}
	if err != nil {
		return nil, 0, err
	}
	c, err := n.peers.Satellite(next)
	if err != nil {
		return nil, 0, err
	}
	r.Hops++
	r.Path = append(r.Path, n.self)
	n.m.RelayedHopsOf.Of(rpc).Inc()
	return c, next, nil
}

// relay sends a routed request on to its next hop with send. When that hop
// cannot be reached from here at all (its connection is down, so the request
// was not delivered and sending it again cannot act twice), the request goes
// once more by another hop, for this request only: a satellite that died
// silently (in Docker Swarm a dead task's name takes the resolver's 5 s to
// fail) is only a miss for the failure detector for a few seconds, and
// requests through it would fail meanwhile (docs/faults.md, "Relays"). An
// error from further along the path comes back as it is. A next hop that has
// never appeared (its name has never resolved, peers.Pool.NeverSeen: a pod
// with no address yet) is not gone around: it never ran, and the pool closed
// its connection (no longer Unreachable), so the error comes back and the
// detector, not a detour per request, keeps the routes off it until it appears
// (docs/faults.md, "First start and restart").
func relay[T any](ctx context.Context, n *Node, r *satpagev1.Route, rpc string, send func(satpagev1.SatelliteServiceClient) (T, error)) (T, error) {
	path, hops := slices.Clone(r.Path), r.Hops
	c, next, err := n.forward(ctx, r, rpc)
	if err != nil {
		var zero T
		return zero, err
	}
	resp, err := send(c)
	if status.Code(err) != codes.Unavailable || !n.unreachable(next) {
		return resp, err
	}
	r.Path, r.Hops = path, hops
	c2, other, err2 := n.forward(ctx, r, rpc, next)
	if err2 != nil {
		return resp, err
	}
	n.log.Info("next hop unreachable: relayed around it", "rpc", rpc, "to", r.Destination, "unreachable", next, "via", other)
	return send(c2)
}

// unreachable reports whether this satellite's connection to satellite i is down.
func (n *Node) unreachable(i uint32) bool {
	u, ok := n.peers.(interface{ Unreachable(i uint32) bool })
	return ok && u.Unreachable(i)
}

// localClient calls this node's own handlers in-process (a routed request
// whose destination is the node itself: zero hops, no network).
type localClient struct{ n *Node }

var _ satpagev1.SatelliteServiceClient = localClient{}

func (l localClient) srv() *satServer { return &satServer{n: l.n} }

func (l localClient) OpenSession(ctx context.Context, in *satpagev1.OpenSessionRequest, _ ...grpc.CallOption) (*satpagev1.OpenSessionResponse, error) {
	return l.srv().OpenSession(ctx, in)
}
func (l localClient) FetchPages(ctx context.Context, in *satpagev1.FetchPagesRequest, _ ...grpc.CallOption) (*satpagev1.FetchPagesResponse, error) {
	return l.srv().FetchPages(ctx, in)
}
func (l localClient) ReleasePages(ctx context.Context, in *satpagev1.ReleasePagesRequest, _ ...grpc.CallOption) (*satpagev1.ReleasePagesResponse, error) {
	return l.srv().ReleasePages(ctx, in)
}
func (l localClient) HandOver(ctx context.Context, in *satpagev1.HandOverRequest, _ ...grpc.CallOption) (*satpagev1.HandOverResponse, error) {
	return l.srv().HandOver(ctx, in)
}
func (l localClient) AcceptTable(ctx context.Context, in *satpagev1.AcceptTableRequest, _ ...grpc.CallOption) (*satpagev1.AcceptTableResponse, error) {
	return l.srv().AcceptTable(ctx, in)
}
func (l localClient) MovePages(ctx context.Context, in *satpagev1.MovePagesRequest, _ ...grpc.CallOption) (*satpagev1.MovePagesResponse, error) {
	return l.srv().MovePages(ctx, in)
}
func (l localClient) SessionFrames(ctx context.Context, in *satpagev1.SessionFramesRequest, _ ...grpc.CallOption) (*satpagev1.SessionFramesResponse, error) {
	return l.srv().SessionFrames(ctx, in)
}
func (l localClient) DropSession(ctx context.Context, in *satpagev1.DropSessionRequest, _ ...grpc.CallOption) (*satpagev1.DropSessionResponse, error) {
	return l.srv().DropSession(ctx, in)
}
func (l localClient) FetchStream(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[satpagev1.FetchStreamRequest, satpagev1.FetchStreamResponse], error) {
	return nil, status.Error(codes.Unimplemented, "a satellite fetches from itself without a stream")
}
