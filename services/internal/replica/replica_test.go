package replica

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	satpagev1 "github.com/satpage/satpage/services/gen/satpage/v1"
	"github.com/satpage/satpage/services/internal/constellation"
	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

// sky is an in-process constellation of primaries and holders; a dead
// satellite answers nothing (Unavailable), as a SIGKILLed satnode does.
type sky struct {
	t       *testing.T
	spec    constellation.Spec
	r       int
	mu      sync.Mutex
	dead    map[uint32]bool
	holders map[uint32]*Holder
	prims   map[uint32]*Primary
	locals  map[uint32]*store.Memory
	copies  map[uint32]int // page copies counted per primary
	hops    map[uint32]int // page-hops counted per primary
	// unreachable: calls fail as a relay's "no route", but the detector does
	// not find the satellite dead (it answers its probes); snapshots counts
	// the InstallSnapshot calls sent to each satellite.
	unreachable map[uint32]bool
	snapshots   map[uint32]int
	questions   map[uint32]int // ReplicaState calls to each satellite
	replicates  map[uint32]int // Replicate calls to each satellite
	// gens: each satellite's deployment generation, told in its ReplicaState
	// answers (as the node's handler does); absent: "".
	gens map[uint32]string
}

type skyLink struct {
	s    *sky
	self uint32
}

func (s *sky) isDead(i uint32) bool { s.mu.Lock(); defer s.mu.Unlock(); return s.dead[i] }

func (l skyLink) reach(to uint32) (*Holder, *Primary, error) {
	l.s.mu.Lock()
	cut := l.s.unreachable[to]
	l.s.mu.Unlock()
	if cut {
		// As a relay answers it: Unavailable with reason NO_ROUTE (a running
		// satellite said so: not absent).
		return nil, nil, errs.Status(fmt.Errorf("from satellite 87 to %d at 0 ns on the live graph: %w", to, errs.ErrNoRoute))
	}
	if l.s.isDead(to) {
		return nil, nil, status.Errorf(codes.Unavailable, "satellite %d is dead", to)
	}
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if l.s.holders[to] == nil {
		// Not started: nothing listens at its address (what a dial says then).
		return nil, nil, status.Errorf(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 10.0.0.%d:7000: connect: connection refused\"", to)
	}
	return l.s.holders[to], l.s.prims[to], nil
}

func (l skyLink) Replicate(ctx context.Context, to uint32, req *satpagev1.ReplicateRequest) (uint32, error) {
	l.s.mu.Lock()
	l.s.replicates[to]++
	l.s.mu.Unlock()
	h, _, err := l.reach(to)
	if err != nil {
		return 0, err
	}
	return uint32(RingHops(l.s.spec, l.self, to)), h.Replicate(ctx, req.Namespace, req.SyncId, req.Version, req.Op)
}

func (l skyLink) InstallSnapshot(ctx context.Context, to uint32, req *satpagev1.InstallSnapshotRequest) error {
	l.s.mu.Lock()
	l.s.snapshots[to]++
	l.s.mu.Unlock()
	h, _, err := l.reach(to)
	if err != nil {
		return err
	}
	return h.Install(ctx, req.Namespace, req.SyncId, req.Version, req.First, req.Last, StatesFrom(req.Sessions))
}

func (l skyLink) ReplicaState(ctx context.Context, at uint32, req *satpagev1.ReplicaStateRequest) (*satpagev1.ReplicaStateResponse, error) {
	l.s.mu.Lock()
	l.s.questions[at]++
	l.s.mu.Unlock()
	h, p, err := l.reach(at)
	if err != nil {
		return nil, err
	}
	r, err := h.State(ctx, req.Namespace, req.Snapshot)
	if err == nil { // what the node's handler adds (node.satServer.ReplicaState)
		l.s.mu.Lock()
		r.Generation = l.s.gens[at]
		l.s.mu.Unlock()
		r.Started = p != nil && p.Started()
	}
	return r, err
}

func (l skyLink) RequestSync(ctx context.Context, primary, replica uint32) error {
	_, p, err := l.reach(primary)
	if err != nil {
		return err
	}
	return p.SyncReplica(ctx, replica)
}

// skyLive is satellite self's detector: it sees the sky's dead set at once.
type skyLive struct{ s *sky }

func (v skyLive) SatelliteDown(i uint32) bool                   { return v.s.isDead(i) }
func (v skyLive) Suspect(_ context.Context, i uint32) bool      { return v.s.isDead(i) }
func (v skyLive) Confirm(_ context.Context, i uint32) bool      { return v.s.isDead(i) }
func (v skyLive) MarkAlive(uint32)                              {}
func (c skyCount) Copied(pages int, hops uint32, pageBytes int) { c.s.count(c.self, pages, int(hops)) }
func (c skyCount) Snapshot(int)                                 {}

type skyCount struct {
	s    *sky
	self uint32
}

func (s *sky) count(self uint32, pages, hops int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.copies[self] += pages
	s.hops[self] += pages * hops
}

func newSky(t *testing.T, r int) *sky {
	sp, err := constellation.ParseSpec("walker-star:30/2/1:500:87") // S = 15
	if err != nil {
		t.Fatal(err)
	}
	s := &sky{t: t, spec: sp, r: r, dead: map[uint32]bool{}, holders: map[uint32]*Holder{},
		prims: map[uint32]*Primary{}, locals: map[uint32]*store.Memory{}, copies: map[uint32]int{}, hops: map[uint32]int{},
		unreachable: map[uint32]bool{}, snapshots: map[uint32]int{}, questions: map[uint32]int{}, replicates: map[uint32]int{}, gens: map[uint32]string{}}
	for i := range uint32(30) {
		s.start(i, false)
	}
	return s
}

// start (re)starts satellite i with empty memory and restores it.
func (s *sky) start(i uint32, restore bool) {
	local := store.NewMemory()
	p, err := NewPrimary(Options{Self: i, Spec: s.spec, Replicas: s.r, Local: local,
		Transport: skyLink{s, i}, Liveness: skyLive{s}, Counters: skyCount{s, i}, RestoreWait: 50 * time.Millisecond})
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	s.dead[i] = false
	s.holders[i], s.prims[i], s.locals[i] = NewHolder(), p, local
	s.mu.Unlock()
	if err := p.Restore(context.Background()); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sky) kill(i uint32) { s.mu.Lock(); s.dead[i] = true; s.mu.Unlock() }

func (s *sky) snapshotOf(t *testing.T, i uint32) []store.SessionState {
	t.Helper()
	got, err := s.locals[i].Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// copyAt is satellite at's copy of ns's state.
func (s *sky) copyAt(t *testing.T, at, ns uint32) []store.SessionState {
	t.Helper()
	r, err := s.holders[at].State(context.Background(), ns, true)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Synced {
		t.Fatalf("satellite %d holds no in-sync copy of %d", at, ns)
	}
	return StatesFrom(r.Sessions)
}

func work(t *testing.T, p *Primary, session string, pages int) {
	t.Helper()
	ctx := context.Background()
	if err := p.OpenTable(ctx, session); err != nil {
		t.Fatal(err)
	}
	for pg := range uint32(pages) {
		if err := p.AdoptFrames(ctx, session, []store.Frame{{Page: pg, Data: []byte(fmt.Sprintf("v1-%d", pg))}}, 3); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.PutFrames(ctx, session, []store.Frame{{Page: 0, Data: []byte("v2")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReleaseFrames(ctx, session, []uint32{1}, 99); err != nil {
		t.Fatal(err)
	}
}

func TestEveryReplicaHoldsWhatThePrimaryAcknowledged(t *testing.T) {
	for _, r := range []int{2, 3} {
		t.Run(fmt.Sprintf("R=%d", r), func(t *testing.T) {
			s := newSky(t, r)
			work(t, s.prims[3], "a", 5)
			want := s.snapshotOf(t, 3)
			for _, m := range Replicas(s.spec, 3, r, nil) {
				if got := s.copyAt(t, m, 3); !reflect.DeepEqual(got, want) {
					t.Errorf("copy at %d:\n got %+v\nwant %+v", m, got, want)
				}
			}
			// 5 adopted pages + 1 write, one copy to each replica j slots behind (j hops).
			wantHops := 0
			for j := 1; j < r; j++ {
				wantHops += 6 * j
			}
			if s.copies[3] != 6*(r-1) || s.hops[3] != wantHops {
				t.Errorf("counted %d copies, %d page-hops; want %d, %d", s.copies[3], s.hops[3], 6*(r-1), wantHops)
			}
		})
	}
}

func TestBookkeepingIsReplicatedButNotCountedAsPageCopies(t *testing.T) {
	s := newSky(t, 2)
	ctx := context.Background()
	if err := s.prims[3].PutFrames(ctx, "\x00requests:a", []store.Frame{{Page: 7, Data: []byte("answer")}}); err != nil {
		t.Fatal(err)
	}
	if got := s.copyAt(t, 2, 3); len(got) != 1 || len(got[0].Frames) != 1 {
		t.Errorf("copy at 2: got %+v, want the one bookkeeping frame", got)
	}
	if s.copies[3] != 0 || s.hops[3] != 0 {
		t.Errorf("counted %d copies, %d page-hops; want 0, 0", s.copies[3], s.hops[3])
	}
	if err := s.prims[3].PutFrames(ctx, "a", []store.Frame{{Page: 7, Data: []byte("page")}}); err != nil {
		t.Fatal(err)
	}
	if s.copies[3] != 1 || s.hops[3] != 1 {
		t.Errorf("counted %d copies, %d page-hops; want 1, 1", s.copies[3], s.hops[3])
	}
}

func TestADeadReplicaIsReplacedByTheNextLiveOneBehind(t *testing.T) {
	s := newSky(t, 2)
	work(t, s.prims[3], "a", 3)
	s.kill(2)
	if err := s.prims[3].PutFrames(context.Background(), "a", []store.Frame{{Page: 2, Data: []byte("after")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.copyAt(t, 1, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("copy at 1 (next live behind 3):\n got %+v\nwant %+v", got, want)
	}
}

func TestARestartedPrimaryTakesItsStateBackAndNeverServesBefore(t *testing.T) {
	s := newSky(t, 2)
	work(t, s.prims[3], "a", 4)
	want := s.snapshotOf(t, 3)
	s.kill(3)
	// Restarted empty: before Restore it refuses every call.
	local := store.NewMemory()
	p, err := NewPrimary(Options{Self: 3, Spec: s.spec, Replicas: 2, Local: local, Transport: skyLink{s, 3}, Liveness: skyLive{s}, RestoreWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.GetFrames(context.Background(), "a", []uint32{0}); err == nil {
		t.Fatal("a restarted primary served a read before restoring")
	}
	s.mu.Lock()
	s.dead[3], s.prims[3], s.locals[3], s.holders[3] = false, p, local, NewHolder()
	s.mu.Unlock()
	if err := p.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("restored state:\n got %+v\nwant %+v", got, want)
	}
	// Its own copies came back too: satellite 4's state is held at 3 again.
	work(t, s.prims[4], "b", 2)
	if got, want := s.copyAt(t, 3, 4), s.snapshotOf(t, 4); !reflect.DeepEqual(got, want) {
		t.Errorf("copy of 4 at the restarted 3:\n got %+v\nwant %+v", got, want)
	}
}

func TestAReplicaThatRestartedEmptyGetsASnapshot(t *testing.T) {
	s := newSky(t, 2)
	work(t, s.prims[3], "a", 3)
	s.kill(2)
	s.mu.Lock()
	s.dead[2], s.holders[2] = false, NewHolder() // back, memory gone, not restored yet
	s.mu.Unlock()
	if err := s.prims[3].PutFrames(context.Background(), "a", []store.Frame{{Page: 0, Data: []byte("v3")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.copyAt(t, 2, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("copy at 2 after its restart:\n got %+v\nwant %+v", got, want)
	}
}

func TestWithRTwoOneLossLosesNothingTwoLosesTheState(t *testing.T) {
	s := newSky(t, 2)
	work(t, s.prims[3], "a", 3)
	want := s.snapshotOf(t, 3)
	s.kill(3)
	s.start(3, true)
	if got := s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
		t.Fatalf("after one loss:\n got %+v\nwant %+v", got, want)
	}
	s.kill(3)
	s.kill(2) // both holders at once: R = 2 does not promise anything now
	s.mu.Lock()
	s.holders[2] = NewHolder()
	s.mu.Unlock()
	s.start(3, true)
	if got := s.snapshotOf(t, 3); len(got) != 0 {
		t.Errorf("both holders lost their memory, yet the state came back: %+v", got)
	}
}

// A replica only thought dead (its memory intact) misses the changes made
// while it was out of the set; when it is back in, it gets a snapshot, not
// the next change on top of a stale copy.
func TestAReplicaBackInTheSetIsNeverLeftStale(t *testing.T) {
	s := newSky(t, 2)
	work(t, s.prims[3], "a", 2)
	s.kill(2) // out of the set: 1 takes its place
	if err := s.prims[3].PutFrames(context.Background(), "a", []store.Frame{{Page: 0, Data: []byte("while 2 was out")}}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.dead[2] = false // back, with its old copy
	s.mu.Unlock()
	if err := s.prims[3].PutFrames(context.Background(), "a", []store.Frame{{Page: 1, Data: []byte("after")}}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.copyAt(t, 2, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
		t.Errorf("copy at 2:\n got %+v\nwant %+v", got, want)
	}
	// Reading a dead owner's copy picks the newest: 2 and 1 both hold one; 2's is current.
	at, best := BestCopy(context.Background(), skyLink{s, 20}, s.spec, 3)
	if best == nil || at != 2 {
		t.Errorf("BestCopy of 3: at %d (%v), want 2", at, best)
	}
}
