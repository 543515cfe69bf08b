package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/satpage/satpage/services/internal/retry"
)

// Name lookups of peers (docs/faults.md, "Start-up without storms"). A
// satellite looks a peer's name up when it connects to it, not at every
// connection attempt: an answer is kept for NameTTL, a failed lookup is not
// asked again before a backoff (NameRetry), and a connection attempt that
// fails at a kept address looks the name up again, also no sooner than that
// backoff, since the peer may be back at a new address (a new pod or task
// under the old name). A lookup per attempt made 150 satellites, each
// reconnecting to peers that were not up yet every second, a DNS storm:
// CoreDNS used 25 % of a core and Docker's embedded DNS timed out on the names
// of running services.
const NameTTL = 5 * time.Second

// NameRetry is the backoff of a name whose lookup or connection failed. Its
// cap is gRPC's longest reconnection wait (1 s): a peer back at a new address
// is looked up again within about a second of its return, and a name that
// keeps failing is asked at most once per connection attempt. With a 5 s cap
// a satellite killed in make e2e-swarm was held dead by a neighbour ~30 s
// after its new task was up: the neighbour dialled the old address and each
// attempt timed out.
var NameRetry = retry.Backoff{First: 250 * time.Millisecond, Max: time.Second, Jitter: 0.2}

// NameFirstRetry is the backoff of a name that has never resolved: a peer that
// has not appeared yet (its pod has no address, its task no record) holds
// nothing and was never reached, so nothing is lost by learning of its first
// appearance a few seconds late, and neither a reconnection nor the failure
// detector's re-probe looks it up sooner (refresh). At NameRetry's pace, 150
// satellites starting together asked the cluster DNS about each peer not up
// yet about once a second each: CoreDNS used 27 % of a core answering
// NXDOMAIN, on the two cores kubelet needed to start the pods.
var NameFirstRetry = retry.Backoff{First: time.Second, Max: 4 * time.Second, Jitter: 0.2}

// hostResolver is what the cache asks (net.Resolver; tests count the questions).
type hostResolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// names is a cache of name lookups. Safe for concurrent use.
type names struct {
	r   hostResolver
	ttl time.Duration
	bo  retry.Backoff // a name seen before (NameRetry)
	// first is the backoff of a name that has never resolved (NameFirstRetry).
	first retry.Backoff
	now   func() time.Time
	// dialTCP connects to one address (net.Dialer.DialContext; tests fake it).
	dialTCP func(ctx context.Context, network, addr string) (net.Conn, error)

	mu sync.Mutex // guards m and every entry's fields
	m  map[string]*nameEntry
}

type nameEntry struct {
	addrs  []string
	err    error     // the last lookup's error (then addrs is nil)
	asked  time.Time // when the last lookup was sent
	until  time.Time // the answer (or error) is used until then
	fails  int       // lookups and connections that failed in a row
	lookup chan struct{}
	// seen: a lookup has answered with addresses (the peer has appeared once).
	seen bool
}

// newNames: answers kept for ttl; failed names asked again after bo, or
// after first while they have never resolved.
func newNames(r hostResolver, ttl time.Duration, bo, first retry.Backoff) *names {
	var d net.Dialer
	return &names{r: r, ttl: ttl, bo: bo, first: first, now: time.Now, dialTCP: d.DialContext, m: map[string]*nameEntry{}}
}

// errNoAddress: a lookup answered with no address.
var errNoAddress = errors.New("no address")

// addrs returns host's addresses: the kept answer, or a new lookup (one at a
// time per name: concurrent callers share it).
func (c *names) addrs(ctx context.Context, host string) ([]string, error) {
	if net.ParseIP(host) != nil {
		return []string{host}, nil
	}
	for {
		c.mu.Lock()
		e := c.m[host]
		if e == nil {
			e = &nameEntry{}
			c.m[host] = e
		}
		if e.lookup != nil { // another caller is asking: share its answer
			ch := e.lookup
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if c.now().Before(e.until) {
			addrs, err := e.addrs, e.err
			c.mu.Unlock()
			return addrs, err
		}
		ch := make(chan struct{})
		e.lookup, e.asked = ch, c.now()
		c.mu.Unlock()
		go c.resolve(host, e, ch)
		select {
		case <-ch:
			continue // the entry holds the answer now
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// LookupTimeout bounds one lookup. It is the cache's, not the connection
// attempt's: an attempt gives up after about a second, and on a loaded machine
// the cluster DNS takes longer than that to answer (make e2e-k8s, 2026-11-27:
// "lookup satpage-9.satpage-headless on 10.96.0.10:53: dial udp 10.96.0.10:53:
// i/o timeout"); a lookup cut off with its attempt was asked again by the next
// attempt, and never finished. Now the answer fills the cache for the attempts
// that follow.
const LookupTimeout = 10 * time.Second

// resolve looks host up for entry e and closes done (one goroutine per lookup,
// ended within LookupTimeout).
func (c *names) resolve(host string, e *nameEntry, done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), LookupTimeout)
	defer cancel()
	addrs, err := c.r.LookupHost(ctx, host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("lookup %s: %w", host, errNoAddress)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e.lookup = nil
	close(done)
	if err == nil {
		e.addrs, e.err, e.until, e.seen = addrs, nil, c.now().Add(c.ttl), true
		return
	}
	e.addrs, e.err = nil, err
	bo := c.bo
	if !e.seen {
		bo = c.first
	}
	e.until = c.now().Add(bo.Delay(e.fails))
	e.fails++
}

// neverSeen reports whether host has been looked up and has never resolved:
// the peer has not appeared yet (no pod address, no task), which is no
// failure of a peer that ran. False for a name not asked yet or an address.
func (c *names) neverSeen(host string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[host]
	return e != nil && e.neverSeen()
}

// neverSeen: the name's lookups have failed and none has ever answered (c.mu held).
func (e *nameEntry) neverSeen() bool { return !e.seen && e.err != nil }

// failed records that a connection to host's kept address failed. The first
// failure after a success looks the name up again at once (the peer may be
// back at a new address: the next attempt should reach it); failures in a
// row after that wait out the backoff from the last lookup, so that
// reconnecting to a peer that is down asks DNS less and less often.
func (c *names) failed(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[host]
	if e == nil || e.err != nil {
		return // a failed lookup already backs off
	}
	again := e.asked
	if e.fails > 0 {
		again = again.Add(c.bo.Delay(e.fails - 1))
	}
	if again.Before(e.until) {
		e.until = again
	}
	e.fails++
}

// ok records that a connection to host succeeded.
func (c *names) ok(host string) {
	c.mu.Lock()
	if e := c.m[host]; e != nil {
		e.fails = 0
	}
	c.mu.Unlock()
}

// refresh makes the next attempt to reach host look its name up again, whatever
// the backoff: for a caller that knows the kept answer is suspect (the failure
// detector re-probing a satellite it holds dead: the satellite may be back at
// a new address). A lookup already under way is shared, not repeated. A name
// that has never resolved keeps its backoff (NameFirstRetry): there is no
// address to be back at, and its first appearance is waited for.
func (c *names) refresh(host string) {
	c.mu.Lock()
	if e := c.m[host]; e != nil && e.lookup == nil && !e.neverSeen() {
		e.until = time.Time{}
	}
	c.mu.Unlock()
}

// dial connects to addr (host:port) at the cached addresses of host, all at
// once. A failure marks the name for a new lookup (after its backoff), and
// when that backoff has already passed (the first failure after a while) the
// name is looked up again at once and the new addresses are tried, so the
// first request to a satellite back at a new address succeeds. A dial that
// timed out counts as a failure too: an address that answers nothing is the
// mark of a peer gone from it (a deleted pod's or a killed task's), and its
// attempt ends with its deadline, so only the next attempt can use the new
// answer.
func (c *names) dial(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := c.addrs(ctx, host)
	if err != nil {
		return nil, err
	}
	conn, err := c.dialAny(ctx, addrs, port)
	if err == nil {
		c.ok(host)
		return conn, nil
	}
	if net.ParseIP(host) != nil {
		return nil, err
	}
	c.failed(host)
	if ctx.Err() != nil {
		return nil, err
	}
	fresh, lerr := c.addrs(ctx, host) // the kept answer, unless its backoff has passed
	if lerr != nil || sameAddrs(fresh, addrs) {
		return nil, err
	}
	conn, err = c.dialAny(ctx, fresh, port)
	if err == nil {
		c.ok(host)
	}
	return conn, err
}

// dialAny connects to the first of addrs that answers, dialling them all at
// once: while a peer moves, its name may give both the dead address and the
// new one (Swarm's DNS, one task going and one coming), and a dial that tried
// them in turn spent the attempt's whole second on the dead one. Every dial is
// over when it returns; the connections that lost the race are closed.
func (c *names) dialAny(ctx context.Context, addrs []string, port string) (net.Conn, error) {
	if len(addrs) == 1 {
		return c.dialTCP(ctx, "tcp", net.JoinHostPort(addrs[0], port))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		conn net.Conn
		err  error
	}
	results := make(chan result, len(addrs))
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Go(func() {
			conn, err := c.dialTCP(ctx, "tcp", net.JoinHostPort(a, port))
			results <- result{conn, err}
		})
	}
	var won net.Conn
	var last error
	for range addrs {
		r := <-results
		switch {
		case r.err != nil:
			last = r.err
		case won == nil:
			won = r.conn
			cancel() // the others give up
		default:
			r.conn.Close()
		}
	}
	wg.Wait()
	if won != nil {
		return won, nil
	}
	return nil, last
}

func sameAddrs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
