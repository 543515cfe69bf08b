package store

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/satpage/satpage/services/internal/errs"
)

// Memory is an in-process PageStore (tests, and `--store memory` nodes).
type Memory struct {
	mu     sync.Mutex                   // guards tables and frames
	tables map[string]Table             // session -> page table
	frames map[string]map[uint32][]byte // session -> page -> data
}

var _ PageStore = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{tables: map[string]Table{}, frames: map[string]map[uint32][]byte{}}
}

func unknown(session string) error {
	return fmt.Errorf("session %q: %w", session, errs.ErrUnknownSession)
}

func (m *Memory) OpenTable(ctx context.Context, session string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.tables[session]; ok {
		return fmt.Errorf("session %q: %w", session, errs.ErrSessionExists)
	}
	m.tables[session] = Table{}
	return nil
}

func (m *Memory) PutTable(ctx context.Context, session string, table Table) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	m.tables[session] = maps.Clone(table)
	if m.tables[session] == nil {
		m.tables[session] = Table{}
	}
	return nil
}

func (m *Memory) GetTable(ctx context.Context, session string) (Table, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	t, ok := m.tables[session]
	if !ok {
		return nil, unknown(session)
	}
	return maps.Clone(t), nil
}

func (m *Memory) TableSize(ctx context.Context, session string) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	t, ok := m.tables[session]
	if !ok {
		return 0, unknown(session)
	}
	return len(t), nil
}

func (m *Memory) Owners(ctx context.Context, session string, pages []uint32) (Table, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	t, ok := m.tables[session]
	if !ok {
		return nil, unknown(session)
	}
	out := make(Table, len(pages))
	for _, p := range pages {
		if o, ok := t[p]; ok {
			out[p] = o
		}
	}
	return out, nil
}

func (m *Memory) SetOwner(ctx context.Context, session string, pages []uint32, owner uint32) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, ok := m.tables[session]
	if !ok {
		return unknown(session)
	}
	for _, p := range pages {
		t[p] = owner
	}
	return nil
}

func (m *Memory) DeleteTable(ctx context.Context, session string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.tables[session]; !ok {
		return unknown(session)
	}
	delete(m.tables, session)
	return nil
}

func (m *Memory) PutFrames(ctx context.Context, session string, frames []Frame) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	f := m.frames[session]
	if f == nil {
		f = map[uint32][]byte{}
		m.frames[session] = f
	}
	for _, fr := range frames {
		f[fr.Page] = append([]byte{}, fr.Data...)
	}
	return nil
}

func (m *Memory) GetFrames(ctx context.Context, session string, pages []uint32) ([]Frame, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]Frame, 0, len(pages))
	for _, p := range pages {
		d, ok := m.frames[session][p]
		if !ok {
			return nil, fmt.Errorf("page %d of session %q: %w", p, session, errs.ErrNotFound)
		}
		out = append(out, Frame{Page: p, Data: append([]byte{}, d...)})
	}
	return out, nil
}

func (m *Memory) DeleteFrames(ctx context.Context, session string, pages []uint32) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	return m.dropFrames(session, pages), nil
}

// dropFrames deletes the frames of pages that session has here and counts
// them; m.mu is held.
func (m *Memory) dropFrames(session string, pages []uint32) int {
	f := m.frames[session]
	n := 0
	for _, p := range pages {
		if _, ok := f[p]; ok {
			delete(f, p)
			n++
		}
	}
	if f != nil && len(f) == 0 {
		delete(m.frames, session)
	}
	return n
}

func (m *Memory) CountFrames(ctx context.Context, session string) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	return len(m.frames[session]), nil
}

// FramePages lists the pages of the session's frames.
func (m *Memory) FramePages(ctx context.Context, session string) ([]uint32, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	out := make([]uint32, 0, len(m.frames[session]))
	for p := range m.frames[session] {
		out = append(out, p)
	}
	return out, nil
}

func (m *Memory) DropFrames(ctx context.Context, session string) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	n := len(m.frames[session])
	delete(m.frames, session)
	return n, nil
}

func (m *Memory) AdoptFrames(ctx context.Context, session string, frames []Frame, owner uint32) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, ok := m.tables[session]
	if !ok {
		return unknown(session)
	}
	f := m.frames[session]
	if f == nil {
		f = map[uint32][]byte{}
		m.frames[session] = f
	}
	for _, fr := range frames {
		f[fr.Page] = append([]byte{}, fr.Data...)
		t[fr.Page] = owner
	}
	return nil
}

func (m *Memory) AdoptAnswered(ctx context.Context, session string, frames []Frame, owner uint32, answers string, answer Frame) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	t, ok := m.tables[session]
	if !ok {
		return unknown(session)
	}
	put := func(session string, fr Frame) {
		f := m.frames[session]
		if f == nil {
			f = map[uint32][]byte{}
			m.frames[session] = f
		}
		f[fr.Page] = append([]byte{}, fr.Data...)
	}
	for _, fr := range frames {
		put(session, fr)
		t[fr.Page] = owner
	}
	put(answers, answer)
	return nil
}

func (m *Memory) ReleaseFrames(ctx context.Context, session string, pages []uint32, self uint32) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	if t, ok := m.tables[session]; ok {
		for _, p := range pages {
			if o, ok := t[p]; ok && o == self {
				return 0, stillOwned(session, p, self)
			}
		}
	}
	return m.dropFrames(session, pages), nil
}

func stillOwned(session string, page, self uint32) error {
	return fmt.Errorf("page %d of session %q is owned by satellite %d by its own page table: %w", page, session, self, errs.ErrStillOwned)
}

func (m *Memory) Close() error { return nil }

// lock takes mu unless ctx is already done (a store call honours the deadline it gets).
func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	return nil
}
