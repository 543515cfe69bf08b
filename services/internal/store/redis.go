package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/satpage/satpage/services/internal/errs"
)

// Redis is a PageStore in one satellite's own redis-server. Layout:
//
//	t:<session>  hash  page (decimal) -> owner (decimal), plus the field "-" that
//	             marks the table as existing (Redis has no empty hashes)
//	f:<session>  hash  page (decimal) -> frame bytes
type Redis struct {
	c *redis.Client
}

var _ PageStore = (*Redis)(nil)

const tableMarker = "-"

// setOwnerScript sets entries only when the table exists, atomically.
var setOwnerScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], '-') == 0 then return -1 end
for i = 2, #ARGV do redis.call('HSET', KEYS[1], ARGV[i], ARGV[1]) end
return 0`)

// adoptScript: KEYS t:<s>, f:<s> [, f:<answers>]; ARGV owner [, answer field,
// answer data], then page, data pairs. Writes frames and owners (and the answer,
// when its key is given) together, or nothing when the table is missing: a
// script runs atomically.
var adoptScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], '-') == 0 then return -1 end
local first = 2
if #KEYS == 3 then first = 4 end
for i = first, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i+1])
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[1])
end
if #KEYS == 3 then redis.call('HSET', KEYS[3], ARGV[2], ARGV[3]) end
return 0`)

// releaseScript: KEYS t:<s>, f:<s>; ARGV self, then pages. Refuses (returns
// -1 - index of the page) when the local table names self as a page's owner.
var releaseScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], '-') == 1 then
  for i = 2, #ARGV do
    if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[1] then return -i end
  end
end
local n = 0
for i = 2, #ARGV do n = n + redis.call('HDEL', KEYS[2], ARGV[i]) end
return n`)

// NewRedis connects to addr: host:port, or a Unix socket path (starting with
// "/" or "unix://"). It pings once so that a wrong address fails at start-up.
func NewRedis(ctx context.Context, addr string) (*Redis, error) {
	opt := &redis.Options{Addr: addr, Network: "tcp", DialTimeout: 2 * time.Second,
		// A node serves many concurrent relays; a modest pool keeps 150 nodes gentle.
		PoolSize: 16, MinIdleConns: 1, Protocol: 2, DisableIdentity: true}
	if p, ok := strings.CutPrefix(addr, "unix://"); ok || strings.HasPrefix(addr, "/") {
		opt.Network, opt.Addr = "unix", p
		if !ok {
			opt.Addr = addr
		}
	}
	var d net.Dialer
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return unchecked{conn}, nil
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis at %q: %v: %w", addr, err, errs.ErrUnavailable)
	}
	return &Redis{c: c}, nil
}

// unchecked is a connection to Redis that go-redis cannot peek at: on every
// command it takes from its pool it would otherwise read the socket once
// (recvfrom MSG_PEEK) to see whether the server closed it, one more syscall
// per page fault. This Redis is the satellite's own (a Unix socket or its
// pod's sidecar, no idle timeout), and a command on a connection the server
// did close fails at once with EOF, which go-redis sends again on a new one.
type unchecked struct{ net.Conn }

func tkey(s string) string { return "t:" + s }
func fkey(s string) string { return "f:" + s }

func pageField(p uint32) string { return strconv.FormatUint(uint64(p), 10) }

// wrap classifies a backend error: context errors stay as they are.
func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redis %s: %w", what, err)
	}
	return fmt.Errorf("redis %s: %v: %w", what, err, errs.ErrUnavailable)
}

func (r *Redis) OpenTable(ctx context.Context, session string) error {
	ok, err := r.c.HSetNX(ctx, tkey(session), tableMarker, "1").Result()
	if err != nil {
		return wrap(err, "open table")
	}
	if !ok {
		return fmt.Errorf("session %q: %w", session, errs.ErrSessionExists)
	}
	return nil
}

func (r *Redis) PutTable(ctx context.Context, session string, table Table) error {
	args := make([]any, 0, 2+2*len(table))
	args = append(args, tableMarker, "1")
	for p, o := range table {
		args = append(args, pageField(p), strconv.FormatUint(uint64(o), 10))
	}
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, tkey(session))
		p.HSet(ctx, tkey(session), args...)
		return nil
	})
	return wrap(err, "put table")
}

func (r *Redis) GetTable(ctx context.Context, session string) (Table, error) {
	h, err := r.c.HGetAll(ctx, tkey(session)).Result()
	if err != nil {
		return nil, wrap(err, "get table")
	}
	if _, ok := h[tableMarker]; !ok {
		return nil, unknown(session)
	}
	t := make(Table, len(h)-1)
	for k, v := range h {
		if k == tableMarker {
			continue
		}
		p, err1 := strconv.ParseUint(k, 10, 32)
		o, err2 := strconv.ParseUint(v, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("session %q: corrupt table entry %q -> %q: %w", session, k, v, errs.ErrUnavailable)
		}
		t[uint32(p)] = uint32(o)
	}
	return t, nil
}

func (r *Redis) TableSize(ctx context.Context, session string) (int, error) {
	n, err := r.c.HLen(ctx, tkey(session)).Result()
	if err != nil {
		return 0, wrap(err, "table size")
	}
	if n == 0 {
		return 0, unknown(session)
	}
	return int(n) - 1, nil
}

func (r *Redis) Owners(ctx context.Context, session string, pages []uint32) (Table, error) {
	fields := make([]string, 0, 1+len(pages))
	fields = append(fields, tableMarker)
	for _, p := range pages {
		fields = append(fields, pageField(p))
	}
	v, err := r.c.HMGet(ctx, tkey(session), fields...).Result()
	if err != nil {
		return nil, wrap(err, "owners")
	}
	if v[0] == nil {
		return nil, unknown(session)
	}
	out := make(Table, len(pages))
	for i, p := range pages {
		s, ok := v[i+1].(string)
		if !ok {
			continue // never created
		}
		o, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("session %q page %d: corrupt owner %q: %w", session, p, s, errs.ErrUnavailable)
		}
		out[p] = uint32(o)
	}
	return out, nil
}

func (r *Redis) SetOwner(ctx context.Context, session string, pages []uint32, owner uint32) error {
	if len(pages) == 0 {
		_, err := r.TableSize(ctx, session)
		return err
	}
	args := make([]any, 0, 1+len(pages))
	args = append(args, strconv.FormatUint(uint64(owner), 10))
	for _, p := range pages {
		args = append(args, pageField(p))
	}
	n, err := setOwnerScript.Run(ctx, r.c, []string{tkey(session)}, args...).Int()
	if err != nil {
		return wrap(err, "set owner")
	}
	if n < 0 {
		return unknown(session)
	}
	return nil
}

func (r *Redis) DeleteTable(ctx context.Context, session string) error {
	n, err := r.c.Del(ctx, tkey(session)).Result()
	if err != nil {
		return wrap(err, "delete table")
	}
	if n == 0 {
		return unknown(session)
	}
	return nil
}

func (r *Redis) PutFrames(ctx context.Context, session string, frames []Frame) error {
	if len(frames) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(frames))
	for _, f := range frames {
		args = append(args, pageField(f.Page), f.Data)
	}
	return wrap(r.c.HSet(ctx, fkey(session), args...).Err(), "put frames")
}

func (r *Redis) GetFrames(ctx context.Context, session string, pages []uint32) ([]Frame, error) {
	if len(pages) == 0 {
		return []Frame{}, nil
	}
	fields := make([]string, len(pages))
	for i, p := range pages {
		fields[i] = pageField(p)
	}
	v, err := r.c.HMGet(ctx, fkey(session), fields...).Result()
	if err != nil {
		return nil, wrap(err, "get frames")
	}
	out := make([]Frame, len(pages))
	for i, p := range pages {
		if v[i] == nil {
			return nil, fmt.Errorf("page %d of session %q: %w", p, session, errs.ErrNotFound)
		}
		out[i] = Frame{Page: p, Data: []byte(v[i].(string))}
	}
	return out, nil
}

func (r *Redis) DeleteFrames(ctx context.Context, session string, pages []uint32) (int, error) {
	if len(pages) == 0 {
		return 0, nil
	}
	fields := make([]string, len(pages))
	for i, p := range pages {
		fields[i] = pageField(p)
	}
	n, err := r.c.HDel(ctx, fkey(session), fields...).Result()
	return int(n), wrap(err, "delete frames")
}

func (r *Redis) CountFrames(ctx context.Context, session string) (int, error) {
	n, err := r.c.HLen(ctx, fkey(session)).Result()
	return int(n), wrap(err, "count frames")
}

// FramePages lists the fields of the session's frame hash (HKEYS).
func (r *Redis) FramePages(ctx context.Context, session string) ([]uint32, error) {
	keys, err := r.c.HKeys(ctx, fkey(session)).Result()
	if err != nil {
		return nil, wrap(err, "list frames")
	}
	out := make([]uint32, 0, len(keys))
	for _, k := range keys {
		p, err := strconv.ParseUint(k, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("frame field %q of session %q is not a page number: %w", k, session, errs.ErrUnavailable)
		}
		out = append(out, uint32(p))
	}
	return out, nil
}

func (r *Redis) DropFrames(ctx context.Context, session string) (int, error) {
	var n *redis.IntCmd
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.HLen(ctx, fkey(session))
		p.Del(ctx, fkey(session))
		return nil
	})
	if err != nil {
		return 0, wrap(err, "drop frames")
	}
	return int(n.Val()), nil
}

func (r *Redis) AdoptFrames(ctx context.Context, session string, frames []Frame, owner uint32) error {
	return r.adopt(ctx, session, frames, owner, nil, "adopt frames")
}

func (r *Redis) AdoptAnswered(ctx context.Context, session string, frames []Frame, owner uint32, answers string, answer Frame) error {
	return r.adopt(ctx, session, frames, owner, &answered{answers, answer}, "adopt frames with an answer")
}

// answered is the reply stored with an adopt (AdoptAnswered).
type answered struct {
	session string
	frame   Frame
}

// adopt runs adoptScript: frames stored and owned by owner, and a, when not
// nil, stored in a's session, all or nothing.
func (r *Redis) adopt(ctx context.Context, session string, frames []Frame, owner uint32, a *answered, what string) error {
	keys := []string{tkey(session), fkey(session)}
	args := make([]any, 0, 3+2*len(frames))
	args = append(args, strconv.FormatUint(uint64(owner), 10))
	if a != nil {
		keys = append(keys, fkey(a.session))
		args = append(args, pageField(a.frame.Page), a.frame.Data)
	}
	for _, f := range frames {
		args = append(args, pageField(f.Page), f.Data)
	}
	n, err := adoptScript.Run(ctx, r.c, keys, args...).Int()
	if err != nil {
		return wrap(err, what)
	}
	if n < 0 {
		return unknown(session)
	}
	return nil
}

func (r *Redis) ReleaseFrames(ctx context.Context, session string, pages []uint32, self uint32) (int, error) {
	if len(pages) == 0 {
		return 0, nil
	}
	args := make([]any, 0, 1+len(pages))
	args = append(args, strconv.FormatUint(uint64(self), 10))
	for _, p := range pages {
		args = append(args, pageField(p))
	}
	n, err := releaseScript.Run(ctx, r.c, []string{tkey(session), fkey(session)}, args...).Int()
	if err != nil {
		return 0, wrap(err, "release frames")
	}
	if n < 0 {
		return 0, stillOwned(session, pages[-n-2], self)
	}
	return n, nil
}

func (r *Redis) Close() error { return r.c.Close() }
