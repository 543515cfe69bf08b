package peers

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/satpage/satpage/services/internal/retry"
)

// fakeDNS answers from a table and counts the questions.
type fakeDNS struct {
	mu    sync.Mutex
	addr  map[string][]string
	asked atomic.Int64
	delay time.Duration
}

func (f *fakeDNS) LookupHost(ctx context.Context, host string) ([]string, error) {
	f.asked.Add(1)
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.addr[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (f *fakeDNS) set(host string, addrs ...string) {
	f.mu.Lock()
	f.addr[host] = addrs
	f.mu.Unlock()
}

// clock is a fake time for the cache, read by its lookup goroutines too.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
func newFake() (*fakeDNS, *clock) {
	return &fakeDNS{addr: map[string][]string{}}, &clock{t: time.Unix(1e9, 0)}
}

var exact = retry.Backoff{First: 250 * time.Millisecond, Max: 5 * time.Second}

// Reconnecting to a peer every 100 ms for a whole TTL asks DNS once, not at
// every attempt (the per-attempt lookups were a DNS storm), and again once
// the answer is older than the TTL.
func TestANameIsLookedUpOncePerTTLNotPerAttempt(t *testing.T) {
	dns, clk := newFake()
	dns.set("sat-7", "10.0.0.7")
	c := newNames(dns, 5*time.Second, exact, exact)
	c.now = clk.now
	for range 49 {
		a, err := c.addrs(context.Background(), "sat-7")
		if err != nil || len(a) != 1 || a[0] != "10.0.0.7" {
			t.Fatalf("addrs: got %v, %v", a, err)
		}
		clk.add(100 * time.Millisecond)
	}
	if got := dns.asked.Load(); got != 1 {
		t.Errorf("%d lookups in 4.9 s of attempts, want 1", got)
	}
	clk.add(200 * time.Millisecond)
	if _, err := c.addrs(context.Background(), "sat-7"); err != nil {
		t.Fatal(err)
	}
	if got := dns.asked.Load(); got != 2 {
		t.Errorf("%d lookups after the TTL, want 2", got)
	}
}

// A name that does not resolve (a peer not started yet) is asked again after
// a growing backoff, not at every attempt, and its error is given meanwhile.
func TestAFailedLookupIsAskedAgainOnlyAfterItsBackoff(t *testing.T) {
	dns, clk := newFake()
	c := newNames(dns, 5*time.Second, exact, exact)
	c.now = clk.now
	for range 200 { // an attempt every 10 ms for 2 s
		if _, err := c.addrs(context.Background(), "sat-9"); err == nil {
			t.Fatal("a name with no record resolved")
		}
		clk.add(10 * time.Millisecond)
	}
	// Asked at 0, 0.25, 0.75 and 1.75 s (250 ms doubling).
	if got := dns.asked.Load(); got != 4 {
		t.Errorf("%d lookups for 200 attempts in 2 s, want 4", got)
	}
	dns.set("sat-9", "10.0.0.9")
	clk.add(5 * time.Second)
	if a, err := c.addrs(context.Background(), "sat-9"); err != nil || a[0] != "10.0.0.9" {
		t.Errorf("once it resolves: got %v, %v", a, err)
	}
}

// Callers asking for the same name at once share one lookup.
func TestConcurrentCallersShareOneLookup(t *testing.T) {
	dns, _ := newFake()
	dns.set("sat-3", "10.0.0.3")
	dns.delay = 20 * time.Millisecond
	c := newNames(dns, 5*time.Second, exact, exact)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := c.addrs(context.Background(), "sat-3"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := dns.asked.Load(); got != 1 {
		t.Errorf("%d lookups for 50 concurrent callers, want 1", got)
	}
}

// A connection that fails at the kept address (the peer is back elsewhere)
// looks the name up again: at once after a success, so the first attempt
// reaches the new address; after failures in a row, not before the backoff.
func TestAFailedConnectionLooksTheNameUpAgainWithBackoff(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(lis.Addr().String())
	dns, clk := newFake()
	dns.set("sat-5", "127.0.0.1") // the old address: nothing listens on that port there
	c := newNames(dns, 5*time.Second, exact, exact)
	c.now = clk.now
	ctx := context.Background()

	if _, err := c.dial(ctx, "sat-5:"+port); err == nil {
		t.Fatal("dialled the old address with nothing listening")
	}
	// The first failure looks the name up again at once (same answer).
	if got := dns.asked.Load(); got != 2 {
		t.Fatalf("%d lookups after one failed dial, want 2", got)
	}
	dns.set("sat-5", "127.0.0.2") // the peer is back at a new address
	for range 5 {
		clk.add(40 * time.Millisecond)
		if _, err := c.dial(ctx, "sat-5:"+port); err == nil {
			t.Fatal("reached the new address before the backoff passed: looked up per attempt")
		}
	}
	if got := dns.asked.Load(); got != 2 {
		t.Errorf("%d lookups within the backoff, want 2", got)
	}
	clk.add(100 * time.Millisecond)
	conn, err := c.dial(ctx, "sat-5:"+port)
	if err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
	conn.Close()
	if got := dns.asked.Load(); got != 3 {
		t.Errorf("%d lookups, want 3", got)
	}

	// Later, connected for a while, the peer moves again: the first failed
	// attempt looks the name up at once and connects to the new address.
	clk.add(3 * time.Second)
	dns.set("sat-5", "127.0.0.1", "127.0.0.2")
	lis2, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Skipf("port %s taken on 127.0.0.1: %v", port, err)
	}
	lis2.Close()
	dns.set("sat-5", "127.0.0.2")
	c.m["sat-5"].addrs = []string{"127.0.0.1"} // the kept answer is the old address
	conn, err = c.dial(ctx, "sat-5:"+port)
	if err != nil {
		t.Fatalf("first attempt after a move: %v", err)
	}
	conn.Close()
}

func TestAnIPAddressIsNotLookedUp(t *testing.T) {
	dns, _ := newFake()
	c := newNames(dns, 5*time.Second, exact, exact)
	a, err := c.addrs(context.Background(), "10.1.2.3")
	if err != nil || a[0] != "10.1.2.3" || dns.asked.Load() != 0 {
		t.Errorf("got %v, %v after %d lookups", a, err, dns.asked.Load())
	}
	var dnsErr *net.DNSError
	if _, err := c.addrs(context.Background(), "nowhere"); !errors.As(err, &dnsErr) {
		t.Errorf("unknown name: got %v, want the resolver's DNSError", err)
	}
}

// A lookup slower than the connection attempt that asked for it (the cluster
// DNS on a loaded machine) is not cut off with the attempt: it fills the cache,
// and the attempts after it use the answer instead of asking again.
func TestALookupOutlivesTheAttemptThatAskedForIt(t *testing.T) {
	dns, _ := newFake()
	dns.set("sat-4", "10.0.0.4")
	dns.delay = 200 * time.Millisecond
	c := newNames(dns, 5*time.Second, exact, exact)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.addrs(ctx, "sat-4"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an attempt of 20 ms against a 200 ms lookup: got %v, want its deadline", err)
	}
	time.Sleep(300 * time.Millisecond)
	a, err := c.addrs(context.Background(), "sat-4")
	if err != nil || a[0] != "10.0.0.4" {
		t.Fatalf("after the lookup finished: got %v, %v", a, err)
	}
	if got := dns.asked.Load(); got != 1 {
		t.Errorf("%d lookups, want 1 (the first one, finished after its attempt gave up)", got)
	}
}

// fakeNet is a network for the cache's dials: listed addresses accept, every
// other address answers nothing (a deleted pod's or a killed task's address),
// so its dial lasts until the attempt's deadline.
type fakeNet struct {
	mu      sync.Mutex
	up      map[string]bool
	dialled []string
	pending atomic.Int64 // dials not returned yet
}

func (n *fakeNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.pending.Add(1)
	defer n.pending.Add(-1)
	host, _, _ := net.SplitHostPort(addr)
	n.mu.Lock()
	n.dialled = append(n.dialled, host)
	up := n.up[host]
	n.mu.Unlock()
	if ctx.Err() != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}
	if up {
		a, b := net.Pipe()
		b.Close()
		return a, nil
	}
	<-ctx.Done()
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
}

func newFakeNet(up ...string) *fakeNet {
	n := &fakeNet{up: map[string]bool{}}
	for _, a := range up {
		n.up[a] = true
	}
	return n
}

// attempt is one connection attempt of gRPC's: a dial bounded by a deadline.
func attempt(c *names, addr string) error { return attemptWithin(c, addr, 20*time.Millisecond) }

func attemptWithin(c *names, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	conn, err := c.dial(ctx, addr)
	if err == nil {
		conn.Close()
	}
	return err
}

// A dial that timed out at the kept address (the peer's old pod or task,
// which answers nothing) looks the name up again for the next attempt, within
// the answer's TTL: the peer back at a new address is reached by it.
func TestATimedOutDialLooksTheNameUpAgain(t *testing.T) {
	dns, clk := newFake()
	dns.set("sat-25", "10.0.0.1")
	c := newNames(dns, 5*time.Second, exact, exact)
	c.now = clk.now
	c.dialTCP = newFakeNet("10.0.0.2").dial
	if err := attempt(c, "sat-25:7000"); err == nil {
		t.Fatal("dialled an address that answers nothing")
	}
	dns.set("sat-25", "10.0.0.2") // back as a new task
	clk.add(300 * time.Millisecond)
	if err := attempt(c, "sat-25:7000"); err != nil {
		t.Fatalf("the attempt after a timed-out one, 0.3 s later (TTL 5 s): %v", err)
	}
}

// A peer gone for 20 s (its name first keeps the old address, then has no
// record) is reached within about a second of its return at a new address
// (gRPC's reconnection cap, 1 s, plus jitter), not after a longer backoff
// built up while it was gone: whenever within a second it comes back.
func TestAPeerGoneForAWhileIsReachedSoonAfterItsReturn(t *testing.T) {
	const bound = 1500 * time.Millisecond
	for back := time.Duration(0); back < 5*time.Second; back += 250 * time.Millisecond {
		dns, clk := newFake()
		dns.set("sat-25", "10.0.0.1")
		c := newNames(dns, NameTTL, NameRetry, NameFirstRetry)
		c.now = clk.now
		c.dialTCP = newFakeNet("10.0.0.2").dial
		for s := range 20 { // gRPC reconnects about every second
			if s == 8 {
				dns.mu.Lock()
				delete(dns.addr, "sat-25") // the killed task's record is gone
				dns.mu.Unlock()
			}
			if err := attemptWithin(c, "sat-25:7000", time.Millisecond); err == nil {
				t.Fatalf("reached sat-25 at %d s while it was gone", s)
			}
			clk.add(time.Second)
		}
		clk.add(back)
		dns.set("sat-25", "10.0.0.2")
		for waited := time.Duration(0); ; waited += 100 * time.Millisecond {
			if err := attemptWithin(c, "sat-25:7000", time.Millisecond); err == nil {
				break
			}
			if waited > bound {
				t.Fatalf("back %v after the last attempt: not reached %v after its return (want within %v)", back, waited, bound)
			}
			clk.add(100 * time.Millisecond)
		}
	}
}

// refresh (the failure detector's re-probe of a satellite it holds dead) makes
// the next attempt ask DNS, inside the backoff of a name that kept failing
// since the satellite was gone.
func TestRefreshLooksTheNameUpAgainWithinItsBackoff(t *testing.T) {
	dns, clk := newFake()
	c := newNames(dns, 5*time.Second, exact, exact)
	c.now = clk.now
	c.dialTCP = newFakeNet("10.0.0.9").dial
	dns.set("sat-9", "10.0.0.8") // seen once, at an address that no longer answers
	_ = attempt(c, "sat-9:7000")
	dns.mu.Lock()
	delete(dns.addr, "sat-9") // then gone
	dns.mu.Unlock()
	clk.add(5 * time.Second)
	for range 6 { // lookups at 0, 0.25, 0.75, 1.75, 3.75 s: the backoff is 4 s now
		_ = attempt(c, "sat-9:7000")
		clk.add(time.Second)
	}
	asked := dns.asked.Load()
	dns.set("sat-9", "10.0.0.9")
	if err := attempt(c, "sat-9:7000"); err == nil || dns.asked.Load() != asked {
		t.Fatalf("within the backoff: err %v after %d lookups (want a kept error, %d)", err, dns.asked.Load(), asked)
	}
	c.refresh("sat-9")
	if err := attempt(c, "sat-9:7000"); err != nil {
		t.Fatalf("after refresh: %v", err)
	}
	if got := dns.asked.Load(); got != asked+1 {
		t.Errorf("%d lookups after refresh, want %d", got, asked+1)
	}
}

// While a peer moves its name may give the dead address and the new one
// (Swarm: one task going, one coming); the attempt reaches the new one within
// its deadline, whatever the order, and no dial outlives it.
func TestADialTriesEveryAddressAtOnce(t *testing.T) {
	dns, _ := newFake()
	dns.set("sat-11", "10.0.0.1", "10.0.0.2")
	c := newNames(dns, 5*time.Second, exact, exact)
	fn := newFakeNet("10.0.0.2")
	c.dialTCP = fn.dial
	if err := attempt(c, "sat-11:7000"); err != nil {
		t.Fatalf("the dead address first, the live one second: %v", err)
	}
	if n := fn.pending.Load(); n != 0 {
		t.Errorf("%d dials still running after the attempt returned", n)
	}
	if len(fn.dialled) != 2 {
		t.Errorf("dialled %v, want both addresses", fn.dialled)
	}
}

// A name that has never resolved (a peer that has not appeared yet) is asked
// at its own slower pace (first), and refresh does not hurry it: there is no
// address to be back at. Once it has resolved, it is a name seen before:
// failures back off at the fast pace again, and refresh looks it up at once.
func TestANameNeverSeenIsAskedAtItsOwnPaceUntilItAppears(t *testing.T) {
	dns, clk := newFake()
	first := retry.Backoff{First: time.Second, Max: 4 * time.Second}
	c := newNames(dns, 5*time.Second, exact, first)
	c.now = clk.now
	c.dialTCP = newFakeNet("10.0.0.9").dial
	for range 200 { // an attempt every 100 ms for 20 s, each refreshed (the detector's re-probe)
		c.refresh("sat-9")
		if err := attempt(c, "sat-9:7000"); err == nil {
			t.Fatal("a name with no record resolved")
		}
		if !c.neverSeen("sat-9") {
			t.Fatal("a name that never resolved is not neverSeen")
		}
		clk.add(100 * time.Millisecond)
	}
	// Asked at 0, 1, 3, 7, 11, 15 and 19 s (1 s doubling, at most 4 s).
	if got := dns.asked.Load(); got != 7 {
		t.Errorf("%d lookups for 200 refreshed attempts in 20 s, want 7", got)
	}
	dns.set("sat-9", "10.0.0.9")
	clk.add(4 * time.Second)
	if err := attempt(c, "sat-9:7000"); err != nil {
		t.Fatalf("once it resolves: %v", err)
	}
	if c.neverSeen("sat-9") {
		t.Error("a name that resolved is still neverSeen")
	}
	asked := dns.asked.Load()
	c.refresh("sat-9")
	if err := attempt(c, "sat-9:7000"); err != nil || dns.asked.Load() != asked+1 {
		t.Errorf("refresh of a name seen: err %v, %d lookups, want one more than %d", err, dns.asked.Load(), asked)
	}
}
