// Package store holds one satellite's page frames and the page tables of the
// sessions it serves, behind the PageStore interface. Two implementations,
// Memory and Redis, pass the same conformance suite (package storetest).
package store

import "context"

// Frame is the content of one page of a session. A frame's bytes are never
// changed in place, by a store or by its callers: a new value is a new slice.
// So Cached keeps the Data it is given and hands out the Data it keeps without
// copying them (a one-page fault would copy the page twice more).
type Frame struct {
	Page uint32
	Data []byte
}

// Table is a session's page table: page -> owning satellite index.
type Table map[uint32]uint32

// PageStore is the state of one satellite. Ownership: the store owns what it
// holds; slices and maps passed in are not retained (the store copies what it
// keeps), and slices and maps returned belong to the caller, except a frame's
// Data, which is read-only (Frame) and may be shared.
//
// A single call is atomic with respect to other calls on the same store; a
// sequence of calls is not (the node serialises a session's operations).
// Errors wrap errs.ErrNotFound, errs.ErrUnknownSession or errs.ErrUnavailable
// (the backend failed) and name the session and page.
type PageStore interface {
	// OpenTable creates an empty page table for session; errs.ErrSessionExists
	// when it already has one here.
	OpenTable(ctx context.Context, session string) error
	// PutTable stores (replacing) the page table of session, creating it if needed.
	PutTable(ctx context.Context, session string, table Table) error
	// GetTable returns the page table of session; errs.ErrUnknownSession when absent.
	GetTable(ctx context.Context, session string) (Table, error)
	// TableSize is the number of entries; errs.ErrUnknownSession when absent.
	TableSize(ctx context.Context, session string) (int, error)
	// Owners looks up the entries of pages in one step: the result holds the
	// pages that exist (a page never created is absent from it);
	// errs.ErrUnknownSession when there is no table.
	Owners(ctx context.Context, session string, pages []uint32) (Table, error)
	// SetOwner sets one entry; errs.ErrUnknownSession when there is no table.
	SetOwner(ctx context.Context, session string, pages []uint32, owner uint32) error
	// DeleteTable removes the page table of session; errs.ErrUnknownSession when absent.
	DeleteTable(ctx context.Context, session string) error

	// PutFrames stores (overwriting) frames of session.
	PutFrames(ctx context.Context, session string, frames []Frame) error
	// GetFrames returns the frames of pages in the order asked;
	// errs.ErrNotFound naming the first page not held here.
	GetFrames(ctx context.Context, session string, pages []uint32) ([]Frame, error)
	// DeleteFrames deletes the frames of pages held here and returns how many it deleted.
	DeleteFrames(ctx context.Context, session string, pages []uint32) (int, error)
	// CountFrames is the number of frames of session held here (0 when none).
	CountFrames(ctx context.Context, session string) (int, error)
	// DropFrames deletes every frame of session held here and returns how many.
	DropFrames(ctx context.Context, session string) (int, error)

	// AdoptFrames stores frames and points their page-table entries at owner in one
	// atomic step (a created or moved page); errs.ErrUnknownSession, storing
	// nothing, when there is no table.
	AdoptFrames(ctx context.Context, session string, frames []Frame, owner uint32) error
	// AdoptAnswered is AdoptFrames (frames may be empty) that also stores answer
	// as a frame of session answers, in the same atomic step: the reply to a
	// request kept with the change it reports, so that a crash leaves both or
	// neither (exactly-once). errs.ErrUnknownSession, storing nothing, when
	// session has no table.
	AdoptAnswered(ctx context.Context, session string, frames []Frame, owner uint32, answers string, answer Frame) error
	// ReleaseFrames deletes the frames of pages held here (the old owner's step of a
	// move) and returns how many it deleted, unless this store also holds the
	// session's page table and it names self as the owner of one of the pages:
	// then errs.ErrStillOwned naming the page, and nothing is deleted. Atomic.
	ReleaseFrames(ctx context.Context, session string, pages []uint32, self uint32) (int, error)

	// Close releases the backend connection.
	Close() error
}

// FrameLister is a backend that lists the pages of a session's frames, keys
// only (Cached's index of small sessions, Cached.IndexFrames).
type FrameLister interface {
	// FramePages is the pages of session's frames held here, in no order.
	FramePages(ctx context.Context, session string) ([]uint32, error)
}
