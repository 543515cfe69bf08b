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
// asked again before a backoff (NameRetry, capped at NameTTL), and a
// connection attempt that fails at a kept address looks the name up again,
// also no sooner than that backoff, since the peer may be back at a new address
// (a new pod or task under the old name). A lookup per attempt made 150
// satellites, each reconnecting to peers that were not up yet every second, a
// DNS storm: CoreDNS used 25 % of a core and Docker's embedded DNS timed out on
// the names of running services.
const NameTTL = 5 * time.Second

// NameRetry is the backoff of a name whose lookup or connection failed.
var NameRetry = retry.Backoff{First: 250 * time.Millisecond, Max: NameTTL, Jitter: 0.2}

// hostResolver is what the cache asks (net.Resolver; tests count the questions).
type hostResolver interface {
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// names is a cache of name lookups. Safe for concurrent use.
type names struct {
	r   hostResolver
	ttl time.Duration
	bo  retry.Backoff
	now func() time.Time

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
}

func newNames(r hostResolver, ttl time.Duration, bo retry.Backoff) *names {
	return &names{r: r, ttl: ttl, bo: bo, now: time.Now, m: map[string]*nameEntry{}}
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
		e.addrs, e.err, e.until = addrs, nil, c.now().Add(c.ttl)
		return
	}
	e.addrs, e.err = nil, err
	e.until = c.now().Add(c.bo.Delay(e.fails))
	e.fails++
}

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

// dial connects to addr (host:port) at the cached addresses of host, trying
// each in turn; a failure marks the name for a new lookup (after its backoff),
// and when that backoff has already passed (the first failure after a while)
// the name is looked up again at once and the new addresses are tried, so the
// first request to a satellite back at a new address succeeds.
func (c *names) dial(ctx context.Context, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	try := func(addrs []string) (net.Conn, error) {
		var last error
		for _, a := range addrs {
			conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a, port))
			if err == nil {
				return conn, nil
			}
			last = err
		}
		return nil, last
	}
	addrs, err := c.addrs(ctx, host)
	if err != nil {
		return nil, err
	}
	conn, err := try(addrs)
	if err == nil {
		c.ok(host)
		return conn, nil
	}
	if net.ParseIP(host) != nil || ctx.Err() != nil {
		return nil, err
	}
	c.failed(host)
	fresh, lerr := c.addrs(ctx, host) // the kept answer, unless its backoff has passed
	if lerr != nil || sameAddrs(fresh, addrs) {
		return nil, err
	}
	conn, err = try(fresh)
	if err == nil {
		c.ok(host)
	}
	return conn, err
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
