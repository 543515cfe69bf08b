package replica

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/satpage/satpage/services/internal/store"
)

// The failure of make e2e-swarm's kill step, on the bubble's fake clock:
// satellite 2, the replica of 3 (R = 2), is killed with its memory; its new
// process starts 30 s later and can be reached 6 s after that (a Swarm task
// enters the DNS once healthy), while it calls its primary itself (it asks for
// its copy). Before, 3 kept 2 in its replica set for as long as its detector
// held it alive and failed every change meanwhile ("change 124 stored at 0
// replica(s) of 1, not at [14] (backing off 4.181s)"). Now every write is
// acknowledged, at most asideAfter after 2's first failure, stored at 3 and at
// 1 (the satellite behind 2) while 2 is set aside; 2 rejoins within one
// backoff step of becoming reachable, holds every acknowledged write, and
// takes the changes again; nothing acknowledged is lost.
func TestARestartingReplicaDoesNotBlockItsPrimarysWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		// dead: the detector finds the killed replica dead (its port refuses,
		// as on a local cluster) until its new process runs; otherwise it holds
		// it alive throughout (no probe fails: the worst case).
		dead bool
	}{{"detector finds it dead", true}, {"detector holds it alive", false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSky(t, 2)
				p := s.prims[3]
				p.retry.jitter = 0 // exact backoff steps: 1, 2, 4, 8 s
				work(t, p, "a", 4)
				ctx, cancel := context.WithCancel(context.Background())
				upkeep := make(chan struct{})
				go func() { p.Maintain(ctx, time.Second); close(upkeep) }()
				defer func() { cancel(); <-upkeep }() // the bubble ends with its goroutines

				const restartAt, reachableAt, end = 30 * time.Second, 36 * time.Second, 60 * time.Second
				t0 := time.Now()
				s.mu.Lock()
				s.holders[2] = NewHolder() // killed with its memory
				s.unreachable[2] = true
				s.dead[2] = tc.dead
				s.mu.Unlock()

				acked := map[uint32]string{}
				var slow []string // writes that waited
				var worst time.Duration
				rejoined := time.Duration(-1)
				restarted := false
				for n := 0; time.Since(t0) < end; n++ {
					at := time.Since(t0)
					if !restarted && at >= restartAt {
						// Its new process: empty, restored from its own copy at 1;
						// it asks 3 for its copy, which cannot reach it yet.
						s.start(2, true)
						s.setUnreachable(2, true)
						restarted = true
					}
					if at >= reachableAt {
						s.setUnreachable(2, false)
						if rejoined < 0 && reflect.DeepEqual(copyOrNil(s, 2, 3), s.snapshotOf(t, 3)) &&
							reflect.DeepEqual(p.Members(), []uint32{2}) {
							rejoined = at
						}
					}
					page, v := uint32(n%4), fmt.Sprintf("w%d", n)
					start := time.Now()
					if err := p.PutFrames(context.Background(), "a", []store.Frame{{Page: page, Data: []byte(v)}}); err != nil {
						t.Fatalf("write %d at %v: %v", n, at, err)
					}
					acked[page] = v
					if took := time.Since(start); took > 0 {
						slow = append(slow, fmt.Sprintf("%v at %v", took, at))
						worst = max(worst, took)
					}
					if at >= 20*time.Second && at < restartAt {
						// R copies meanwhile: 3 and the satellite behind 2.
						if got, want := copyOrNil(s, 1, 3), s.snapshotOf(t, 3); !reflect.DeepEqual(got, want) {
							t.Fatalf("at %v, copy at 1 (standing in for 2):\n got %+v\nwant %+v", at, got, want)
						}
					}
					time.Sleep(250 * time.Millisecond)
				}
				t.Logf("writes that waited: %v; 2 rejoined %v after the kill", slow, rejoined)
				if worst > asideAfter {
					t.Errorf("a write waited %v, want at most asideAfter (%v)", worst, asideAfter)
				}
				// One wait when 2 fails first; with the detector finding it dead,
				// a second when its restart puts it back in the set.
				if want := map[bool]int{true: 2, false: 1}[tc.dead]; len(slow) > want {
					t.Errorf("%d writes waited (%v), want at most %d", len(slow), slow, want)
				}
				if rejoined < 0 || rejoined > reachableAt+retryMax+time.Second {
					t.Errorf("2 rejoined at %v, want by %v (reachable at %v, then one backoff step and one upkeep tick)",
						rejoined, reachableAt+retryMax+time.Second, reachableAt)
				}
				// Back in the set: the next write goes to 2, none to the stand-in.
				s.mu.Lock()
				to1, to2 := s.replicates[1], s.replicates[2]
				s.mu.Unlock()
				if err := p.PutFrames(context.Background(), "a", []store.Frame{{Page: 0, Data: []byte("last")}}); err != nil {
					t.Fatal(err)
				}
				acked[0] = "last"
				s.mu.Lock()
				if s.replicates[2] != to2+1 || s.replicates[1] != to1 {
					t.Errorf("the write after the rejoin was sent to 2 %d times and to 1 %d times, want 1 and 0",
						s.replicates[2]-to2, s.replicates[1]-to1)
				}
				s.mu.Unlock()
				// Nothing acknowledged lost: the primary, 2's copy and the copy a
				// takeover would read hold every last acknowledged value.
				want := s.snapshotOf(t, 3)
				if got := copyOrNil(s, 2, 3); !reflect.DeepEqual(got, want) {
					t.Errorf("copy at 2 after the rejoin:\n got %+v\nwant %+v", got, want)
				}
				if at, best := BestCopy(context.Background(), skyLink{s, 20}, s.spec, 3); best == nil || at != 2 {
					t.Errorf("BestCopy of 3 is at %d (%v), want 2, the newest", at, best)
				}
				for page, v := range acked {
					f, err := p.GetFrames(context.Background(), "a", []uint32{page})
					if err != nil || len(f) != 1 || string(f[0].Data) != v {
						t.Errorf("page %d: got %+v (%v), want %q", page, f, err, v)
					}
				}
			})
		})
	}
}
