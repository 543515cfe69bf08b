package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/satpage/satpage/services/internal/errs"
)

// SessionState is one session's state in a snapshot of a store.
type SessionState struct {
	Session  string
	HasTable bool  // the store holds the session's page table (the satellite serves it)
	Table    Table // nil unless HasTable
	Frames   []Frame
}

// Snapshotter is a store whose whole state can be read and replaced in one
// step each (replication: a primary sends its snapshot to a new replica, and a
// restarted primary takes its state back from one). Both PageStores implement it.
type Snapshotter interface {
	// Snapshot returns every session's state, sorted by session (frames by page).
	Snapshot(ctx context.Context) ([]SessionState, error)
	// Replace discards everything held and stores states.
	Replace(ctx context.Context, states []SessionState) error
}

var (
	_ Snapshotter = (*Memory)(nil)
	_ Snapshotter = (*Redis)(nil)
)

func (m *Memory) Snapshot(ctx context.Context) ([]SessionState, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	byID := map[string]*SessionState{}
	get := func(s string) *SessionState {
		if byID[s] == nil {
			byID[s] = &SessionState{Session: s}
		}
		return byID[s]
	}
	for s, t := range m.tables {
		st := get(s)
		st.HasTable, st.Table = true, maps.Clone(t)
	}
	for s, f := range m.frames {
		if len(f) == 0 {
			continue
		}
		st := get(s)
		for _, p := range slices.Sorted(maps.Keys(f)) {
			st.Frames = append(st.Frames, Frame{Page: p, Data: slices.Clone(f[p])})
		}
	}
	return sortedStates(byID), nil
}

func sortedStates(byID map[string]*SessionState) []SessionState {
	out := make([]SessionState, 0, len(byID))
	for _, s := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, *byID[s])
	}
	return out
}

func (m *Memory) Replace(ctx context.Context, states []SessionState) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.tables = map[string]Table{}
	m.frames = map[string]map[uint32][]byte{}
	for _, st := range states {
		if st.HasTable {
			m.tables[st.Session] = maps.Clone(st.Table)
			if m.tables[st.Session] == nil {
				m.tables[st.Session] = Table{}
			}
		}
		if len(st.Frames) > 0 {
			f := make(map[uint32][]byte, len(st.Frames))
			for _, fr := range st.Frames {
				f[fr.Page] = slices.Clone(fr.Data)
			}
			m.frames[st.Session] = f
		}
	}
	return nil
}

// Snapshot scans the keys of this satellite's Redis (it holds one satellite only).
func (r *Redis) Snapshot(ctx context.Context) ([]SessionState, error) {
	byID := map[string]*SessionState{}
	get := func(s string) *SessionState {
		if byID[s] == nil {
			byID[s] = &SessionState{Session: s}
		}
		return byID[s]
	}
	for _, prefix := range []string{"t:", "f:"} {
		iter := r.c.Scan(ctx, 0, prefix+"*", 512).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			h, err := r.c.HGetAll(ctx, key).Result()
			if err != nil {
				return nil, wrap(err, "snapshot "+key)
			}
			st := get(strings.TrimPrefix(key, prefix))
			if prefix == "t:" {
				st.HasTable, st.Table = true, Table{}
			}
			for field, v := range h {
				if field == tableMarker {
					continue
				}
				p, err := strconv.ParseUint(field, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("redis snapshot: key %s has field %q: %w", key, field, errs.ErrInvalid)
				}
				if prefix == "t:" {
					o, err := strconv.ParseUint(v, 10, 32)
					if err != nil {
						return nil, fmt.Errorf("redis snapshot: key %s names owner %q: %w", key, v, errs.ErrInvalid)
					}
					st.Table[uint32(p)] = uint32(o)
				} else {
					st.Frames = append(st.Frames, Frame{Page: uint32(p), Data: []byte(v)})
				}
			}
		}
		if err := iter.Err(); err != nil {
			return nil, wrap(err, "snapshot scan")
		}
	}
	for _, st := range byID {
		slices.SortFunc(st.Frames, func(a, b Frame) int { return int(a.Page) - int(b.Page) })
	}
	return sortedStates(byID), nil
}

// Replace flushes this satellite's Redis database and writes states in one transaction.
func (r *Redis) Replace(ctx context.Context, states []SessionState) error {
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.FlushDB(ctx)
		for _, st := range states {
			if st.HasTable {
				args := []any{tableMarker, "1"}
				for pg, o := range st.Table {
					args = append(args, pageField(pg), strconv.FormatUint(uint64(o), 10))
				}
				p.HSet(ctx, tkey(st.Session), args...)
			}
			if len(st.Frames) > 0 {
				args := make([]any, 0, 2*len(st.Frames))
				for _, f := range st.Frames {
					args = append(args, pageField(f.Page), f.Data)
				}
				p.HSet(ctx, fkey(st.Session), args...)
			}
		}
		return nil
	})
	return wrap(err, "replace")
}

var _ Snapshotter = (*Quota)(nil)

// Snapshot passes through a quota: a snapshot holds what was admitted already.
func (q *Quota) Snapshot(ctx context.Context) ([]SessionState, error) {
	s, ok := q.PageStore.(Snapshotter)
	if !ok {
		return nil, fmt.Errorf("store %T cannot take a snapshot: %w", q.PageStore, errs.ErrInvalid)
	}
	return s.Snapshot(ctx)
}

// Replace passes through a quota (a restored state was admitted at its primary).
func (q *Quota) Replace(ctx context.Context, states []SessionState) error {
	s, ok := q.PageStore.(Snapshotter)
	if !ok {
		return fmt.Errorf("store %T cannot be replaced: %w", q.PageStore, errs.ErrInvalid)
	}
	return s.Replace(ctx, states)
}
