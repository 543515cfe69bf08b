package node

// Faults and replication at the node (docs/faults.md): the failure detector
// whose view routing follows, the copies this satellite holds for others
// (replica.Holder), its own store replicated to R-1 satellites behind it
// (replica.Primary), and the replication messages' transport over ISLs.

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/liveness"
	"github.com/satpage/satpage/services/internal/metrics"
	"github.com/satpage/satpage/services/internal/replica"
	"github.com/satpage/satpage/services/internal/retry"
	"github.com/satpage/satpage/services/internal/store"
	"github.com/satpage/satpage/services/internal/tlsconf"
)

// maintainInterval is how often a primary checks that its replicas hold an
// in-sync copy (a replica that restarted empty gets a snapshot within it).
const maintainInterval = time.Second

// restoreRetry spaces the tries of a restore that failed (the replica holding
// the copy did not send it): jittered, so satellites that failed together do
// not all ask again together.
var restoreRetry = retry.Backoff{First: 500 * time.Millisecond, Max: 8 * time.Second, Jitter: 0.2}

// healthDialer is a Dialer that also gives the standard health client (peers.Pool).
type healthDialer interface {
	Health(i uint32) (healthpb.HealthClient, error)
}

// probe is the detector's check of satellite i: the standard gRPC health
// service must answer, SERVING or NOT_SERVING (restoring: alive, it relays
// and holds copies; its own requests fail with Unavailable until it is ready).
func (n *Node) probe(ctx context.Context, i uint32) error {
	err := n.check(ctx, i)
	return n.silent(ctx, i, err)
}

// unanswered is a Dialer that remembers which satellites left a call
// unanswered (peers.Pool.Unanswered).
type unanswered interface{ Unanswered(i uint32) bool }

// silent marks err, a call's failure at satellite i, as silence
// (errs.ErrSilent) when no answer came within a deadline: the call's context
// ran out, or the connection to i last timed out (peers.Pool.Unanswered).
// The failure detector and the restore decide on that, never on the text.
func (n *Node) silent(ctx context.Context, i uint32, err error) error {
	if err == nil {
		return nil
	}
	u, ok := n.peers.(unanswered)
	if ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded || (ok && u.Unanswered(i)) {
		return fmt.Errorf("satellite %d: %w: %w", i, errs.ErrSilent, err)
	}
	return err
}

// reconnecter is a Dialer that can connect afresh to a satellite held dead
// (peers.Pool.Reconnect).
type reconnecter interface {
	Reconnect(ctx context.Context, i uint32) error
}

// check asks satellite i whether it runs (the probe, unclassified). The
// re-probe of a satellite held dead first connects afresh (its name looked up
// again), within the probe's deadline: a dead satellite comes back as a new
// pod or task, at a new address, and a probe that failed at once on the old
// connection's state kept it dead long after its return (make e2e-swarm: ~30 s).
func (n *Node) check(ctx context.Context, i uint32) error {
	if h, ok := n.peers.(healthDialer); ok {
		c, err := h.Health(i)
		if err != nil {
			return err
		}
		if r, ok := n.peers.(reconnecter); ok && n.faults != nil && n.faults.SatelliteDown(i) {
			if err := r.Reconnect(ctx, i); err != nil {
				return err
			}
		}
		r, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(false))
		if status.Code(err) == codes.Unimplemented {
			return nil // it answers, without a health service (in-process test servers)
		}
		if err != nil {
			return err
		}
		// NOT_SERVING is a satellite restoring its state (or stopping): alive, it
		// relays and holds copies; only its own sessions wait for it.
		_ = r
		return nil
	}
	// Without a health client (in-process tests), any answer but Unavailable will do.
	c, err := n.peers.Satellite(i)
	if err != nil {
		return err
	}
	_, err = c.SessionFrames(ctx, &satpagev1.SessionFramesRequest{SessionId: "-"})
	if status.Code(err) == codes.Unavailable || status.Code(err) == codes.DeadlineExceeded {
		return err
	}
	return nil
}

// setUpReplication builds the detector and, with R > 1, the replicated store.
func (n *Node) setUpReplication(o Options) error {
	n.faults = o.Faults
	n.generation = o.Generation
	if n.faults == nil {
		n.faults = liveness.New(n.probe, 0)
	}
	n.holder = replica.NewHolder()
	n.replicas = max(o.Replicas, 1)
	if n.replicas == 1 {
		return nil
	}
	p, err := replica.NewPrimary(replica.Options{Self: n.self, Spec: n.grid.Spec(), Replicas: n.replicas, Generation: o.Generation,
		Local: n.store, Transport: transport{n}, Liveness: n.faults,
		Counters: metrics.NewReplication(n.m.Registry), PageBytes: n.pageBytes, Logger: n.log})
	if err != nil {
		return err
	}
	n.primary, n.store = p, p
	return nil
}

// Faults is the node's failure detector.
func (n *Node) Faults() *liveness.Detector { return n.faults }

// Started reports whether the node has served since its process started
// (its first restore done; with R = 1 at once).
func (n *Node) Started() bool { return n.primary == nil || n.primary.Started() }

// Replicas is R.
func (n *Node) Replicas() int { return n.replicas }

// Ready reports whether the node serves: with R > 1, once Start has taken its
// state back from its replicas.
func (n *Node) Ready() bool { return n.primary == nil || n.primary.Ready() }

// Start restores the node's state from its replicas (R > 1; the gRPC server
// must already listen: the replicas' primaries call back) and then runs the
// detector's re-probing and the replicas' upkeep until ctx ends. It returns
// once the node is ready.
//
// The background work belongs to the node: Close stops it and waits for it.
func (n *Node) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	n.bgMu.Lock()
	n.stopBg = cancel
	n.bgMu.Unlock()
	n.bg.Go(func() { n.faults.Run(ctx, 0) })
	if n.primary != nil {
		for try := 0; ; try++ {
			err := n.primary.Restore(ctx)
			if err == nil {
				break
			}
			wait := restoreRetry.Delay(try)
			n.log.WarnContext(ctx, "restore failed; trying again", "err", err, "in", wait)
			if !retry.Sleep(ctx, wait) {
				return ctx.Err()
			}
		}
		n.bg.Go(func() { n.primary.Maintain(ctx, maintainInterval) })
	}
	return nil
}

// transport sends the replication messages: Replicate and InstallSnapshot are
// routed over ISLs (relays count their hops); the rare control calls go straight.
type transport struct{ n *Node }

func (t transport) Replicate(ctx context.Context, to uint32, req *satpagev1.ReplicateRequest) (uint32, error) {
	var hops uint32
	err := t.n.originate(ctx, to, 0, "Replicate", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
		req.Route = r
		resp, err := c.Replicate(ctx, req)
		if err == nil {
			hops = resp.Hops
		}
		return err
	})
	return hops, err
}

func (t transport) InstallSnapshot(ctx context.Context, to uint32, req *satpagev1.InstallSnapshotRequest) error {
	return t.n.originate(ctx, to, 0, "InstallSnapshot", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) error {
		req.Route = r
		_, err := c.InstallSnapshot(ctx, req)
		return err
	})
}

func (t transport) ReplicaState(ctx context.Context, at uint32, req *satpagev1.ReplicaStateRequest) (*satpagev1.ReplicaStateResponse, error) {
	c, err := t.n.peers.Satellite(at)
	if err != nil {
		return nil, err
	}
	r, err := c.ReplicaState(ctx, req)
	return r, t.n.silent(ctx, at, err)
}

func (t transport) RequestSync(ctx context.Context, primary, replica uint32) error {
	c, err := t.n.peers.Satellite(primary)
	if err != nil {
		return err
	}
	_, err = c.RequestSync(ctx, &satpagev1.RequestSyncRequest{Replica: replica})
	return err
}

// fetchFromReplica reads pages of a dead owner from the satellite holding
// the newest copy of its state (replica.BestCopy: asked across the owner's
// plane, so a satellite that left the replica set is never read stale).
func (n *Node) fetchFromReplica(ctx context.Context, session string, pages []uint32, owner uint32, tNs int64) (*satpagev1.FetchPagesResponse, error) {
	at, best := replica.BestCopy(ctx, transport{n}, n.grid.Spec(), owner)
	if best == nil {
		return nil, fmt.Errorf("satellite %d is down and no live satellite holds a copy of its pages: %w", owner, errs.ErrUnavailable)
	}
	var resp *satpagev1.FetchPagesResponse
	err := n.originate(ctx, at, tNs, "FetchPages", func(c satpagev1.SatelliteServiceClient, r *satpagev1.Route) (err error) {
		resp, err = c.FetchPages(ctx, &satpagev1.FetchPagesRequest{Route: r, SessionId: session, Pages: pages, ReplicaOf: &owner})
		return err
	})
	if err != nil {
		return nil, err
	}
	n.log.InfoContext(ctx, "pages of a dead owner served by a replica", "owner", owner, "replica", at, "pages", len(pages))
	return resp, nil
}

// FetchReplica serves FetchPages from this satellite's copy of owner's state.
func (n *Node) FetchReplica(ctx context.Context, owner uint32, session string, pages []uint32) ([]*satpagev1.Page, error) {
	frames, err := n.holder.Frames(ctx, owner, session, pages)
	if err != nil {
		return nil, fmt.Errorf("satellite %d, copy of satellite %d: %w", n.self, owner, err)
	}
	out := make([]*satpagev1.Page, len(frames))
	for i, f := range frames {
		out[i] = &satpagev1.Page{Page: f.Page, Data: f.Data}
	}
	return out, nil
}

// The handlers of the replication RPCs.

func (s *satServer) Replicate(ctx context.Context, req *satpagev1.ReplicateRequest) (*satpagev1.ReplicateResponse, error) {
	start := time.Now()
	if err := s.n.checkRoute(req.Route); err != nil {
		return nil, s.n.observe(ctx, "Replicate", start, err)
	}
	if err := s.n.grid.Check(req.Namespace); err != nil || req.Op == nil {
		return nil, s.n.observe(ctx, "Replicate", start, fmt.Errorf("namespace %d or op missing: %w", req.Namespace, errs.ErrInvalid))
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "Replicate", func(c satpagev1.SatelliteServiceClient) (*satpagev1.ReplicateResponse, error) {
			return c.Replicate(ctx, req)
		})
		return resp, s.n.observe(ctx, "Replicate", start, err)
	}
	s.n.faults.MarkAlive(req.Namespace) // it just called us
	if err := s.n.holder.Replicate(ctx, req.Namespace, req.SyncId, req.Version, req.Op); err != nil {
		return nil, s.n.observe(ctx, "Replicate", start, err)
	}
	return &satpagev1.ReplicateResponse{Hops: req.Route.Hops}, s.n.observe(ctx, "Replicate", start, nil)
}

func (s *satServer) InstallSnapshot(ctx context.Context, req *satpagev1.InstallSnapshotRequest) (*satpagev1.InstallSnapshotResponse, error) {
	start := time.Now()
	if err := s.n.checkRoute(req.Route); err != nil {
		return nil, s.n.observe(ctx, "InstallSnapshot", start, err)
	}
	if err := s.n.grid.Check(req.Namespace); err != nil {
		return nil, s.n.observe(ctx, "InstallSnapshot", start, err)
	}
	if req.Route.Destination != s.n.self {
		resp, err := relay(ctx, s.n, req.Route, "InstallSnapshot", func(c satpagev1.SatelliteServiceClient) (*satpagev1.InstallSnapshotResponse, error) {
			return c.InstallSnapshot(ctx, req)
		})
		return resp, s.n.observe(ctx, "InstallSnapshot", start, err)
	}
	s.n.faults.MarkAlive(req.Namespace)
	err := s.n.holder.Install(ctx, req.Namespace, req.SyncId, req.Version, req.First, req.Last, replica.StatesFrom(req.Sessions))
	if err != nil {
		return nil, s.n.observe(ctx, "InstallSnapshot", start, err)
	}
	return &satpagev1.InstallSnapshotResponse{Hops: req.Route.Hops}, s.n.observe(ctx, "InstallSnapshot", start, nil)
}

func (s *satServer) ReplicaState(ctx context.Context, req *satpagev1.ReplicaStateRequest) (*satpagev1.ReplicaStateResponse, error) {
	start := time.Now()
	if err := s.n.grid.Check(req.Namespace); err != nil {
		return nil, s.n.observe(ctx, "ReplicaState", start, err)
	}
	if len(req.Sessions) > MaxForget {
		return nil, s.n.observe(ctx, "ReplicaState", start, fmt.Errorf("%d sessions exceed %d: %w", len(req.Sessions), MaxForget, errs.ErrInvalid))
	}
	r, err := s.n.holder.State(ctx, req.Namespace, req.Snapshot, req.Sessions...)
	if err == nil {
		r.Generation, r.Started = s.n.generation, s.n.Started()
	}
	return r, s.n.observe(ctx, "ReplicaState", start, err)
}

func (s *satServer) RequestSync(ctx context.Context, req *satpagev1.RequestSyncRequest) (*satpagev1.RequestSyncResponse, error) {
	start := time.Now()
	if err := s.n.grid.Check(req.Replica); err != nil {
		return nil, s.n.observe(ctx, "RequestSync", start, err)
	}
	if s.n.primary != nil {
		if err := s.n.primary.SyncReplica(ctx, req.Replica); err != nil {
			return nil, s.n.observe(ctx, "RequestSync", start, err)
		}
	}
	return &satpagev1.RequestSyncResponse{}, s.n.observe(ctx, "RequestSync", start, nil)
}

// GroundInterceptor refuses every request from a gateway but SetFaults while
// the satellite is cut off from the ground (SetFaults ground_cut), as a lost
// ground link would: UNAVAILABLE. It tells a gateway by its certificate, so
// an --insecure satellite refuses nothing.
func (n *Node) GroundInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if err := n.groundCut(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

// groundCut is GroundInterceptor's refusal of a call of method (nil: none);
// stream messages pass it one by one.
func (n *Node) groundCut(ctx context.Context, method string) error {
	if n.ground.Load() && method != satpagev1.SatelliteService_SetFaults_FullMethodName &&
		tlsconf.FromContext(ctx).Role == tlsconf.Gateway {
		return status.Errorf(codes.Unavailable, "satellite %d is cut off from the ground segment (fault injection)", n.self)
	}
	return nil
}

// MaxCutLinks bounds one SetFaults.
const MaxCutLinks = 1 << 16

func (s *satServer) SetFaults(ctx context.Context, req *satpagev1.SetFaultsRequest) (*satpagev1.SetFaultsResponse, error) {
	start := time.Now()
	if len(req.Cut) > MaxCutLinks {
		return nil, s.n.observe(ctx, "SetFaults", start, fmt.Errorf("%d cut links exceed %d: %w", len(req.Cut), MaxCutLinks, errs.ErrInvalid))
	}
	links := make([][2]uint32, len(req.Cut))
	for i, l := range req.Cut {
		if err := s.n.grid.Check(l.A); err != nil {
			return nil, s.n.observe(ctx, "SetFaults", start, err)
		}
		if err := s.n.grid.Check(l.B); err != nil {
			return nil, s.n.observe(ctx, "SetFaults", start, err)
		}
		links[i] = [2]uint32{l.A, l.B}
	}
	s.n.faults.SetCut(links)
	s.n.ground.Store(req.GroundCut)
	return &satpagev1.SetFaultsResponse{}, s.n.observe(ctx, "SetFaults", start, nil)
}

func (l localClient) Replicate(ctx context.Context, in *satpagev1.ReplicateRequest, _ ...grpc.CallOption) (*satpagev1.ReplicateResponse, error) {
	return l.srv().Replicate(ctx, in)
}
func (l localClient) InstallSnapshot(ctx context.Context, in *satpagev1.InstallSnapshotRequest, _ ...grpc.CallOption) (*satpagev1.InstallSnapshotResponse, error) {
	return l.srv().InstallSnapshot(ctx, in)
}
func (l localClient) ReplicaState(ctx context.Context, in *satpagev1.ReplicaStateRequest, _ ...grpc.CallOption) (*satpagev1.ReplicaStateResponse, error) {
	return l.srv().ReplicaState(ctx, in)
}
func (l localClient) RequestSync(ctx context.Context, in *satpagev1.RequestSyncRequest, _ ...grpc.CallOption) (*satpagev1.RequestSyncResponse, error) {
	return l.srv().RequestSync(ctx, in)
}
func (l localClient) SetFaults(ctx context.Context, in *satpagev1.SetFaultsRequest, _ ...grpc.CallOption) (*satpagev1.SetFaultsResponse, error) {
	return l.srv().SetFaults(ctx, in)
}

var _ store.PageStore = (*replica.Primary)(nil)
