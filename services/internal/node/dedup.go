package node

// Exactly-once page requests (docs/faults.md): a ReadPage, ReadPages,
// WritePage or MovePages that carries a request_id is answered once; a retry
// with the same id (after a timeout, a lost reply, a gateway crash, a
// failover) gets the first answer back instead of acting again, so a movement
// is neither lost nor repeated and an older write is not applied over a newer
// one. The answer is stored in the same atomic store step as the change it
// reports (store.PageStore.AdoptAnswered: one Redis script, one replicated
// op), so a crash leaves both or neither. It is replicated with the change
// (--replicas), survives the satellite's restart and moves with a takeover.
// Kept per session in dedupSlots slots (the last request of each slot);
// dropped with the session.
//
// A record is rid NUL kind body: kind 'd' a whole answer, 'p' the progress of
// a MovePages cut off midway (the pages moved so far, each chunk stored with
// its count), which a retry continues from.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/satpage/satpage/services/internal/errs"
	"github.com/satpage/satpage/services/internal/store"
)

const (
	dedupSlots        = 1024
	MaxRequestIDBytes = 128
	dedupPrefix       = "\x00requests:" // no client session id starts with NUL (checkSession)
)

func dedupSession(session string) string { return dedupPrefix + session }

func checkRequestID(rid string) error {
	if len(rid) > MaxRequestIDBytes || strings.ContainsRune(rid, 0) {
		return fmt.Errorf("request_id of %d bytes (at most %d, no NUL): %w", len(rid), MaxRequestIDBytes, errs.ErrInvalid)
	}
	return nil
}

func dedupSlot(rid string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(rid))
	return h.Sum32() % dedupSlots
}

// recall fills out with the answer given to request rid of session, if any.
func (n *Node) recall(ctx context.Context, session, rid string, out proto.Message) (bool, error) {
	if rid == "" {
		return false, nil
	}
	if err := checkRequestID(rid); err != nil {
		return false, err
	}
	f, err := n.store.GetFrames(ctx, dedupSession(session), []uint32{dedupSlot(rid)})
	if errors.Is(err, errs.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	got, body, ok := strings.Cut(string(f[0].Data), "\x00")
	if !ok || got != rid || body == "" {
		return false, nil // the slot holds another request's answer
	}
	if body[0] != answerDone {
		return false, nil // progress, read by recallProgress
	}
	if err := proto.Unmarshal([]byte(body[1:]), out); err != nil {
		return false, fmt.Errorf("answer kept for request %q: %v: %w", rid, err, errs.ErrUnavailable)
	}
	if n.primary != nil {
		// The answer was stored here with its change, but the change may have
		// failed at a replica (the first attempt then failed): it is
		// acknowledged only once every replica holds it, as the first would
		// have been. A replica that missed it gets a snapshot first.
		if err := n.primary.Barrier(ctx); err != nil {
			return false, fmt.Errorf("answer kept for request %q: %w", rid, err)
		}
	}
	n.m.Accesses.WithLabelValues("deduplicated").Inc()
	return true, nil
}

// Kinds of kept records.
const (
	answerDone     = 'd'
	answerProgress = 'p'
)

// recallProgress fills out with the progress kept for request rid (a MovePages
// cut off midway) and reports whether there is one.
func (n *Node) recallProgress(ctx context.Context, session, rid string, out proto.Message) (bool, error) {
	f, err := n.store.GetFrames(ctx, dedupSession(session), []uint32{dedupSlot(rid)})
	if errors.Is(err, errs.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	got, body, ok := strings.Cut(string(f[0].Data), "\x00")
	if !ok || got != rid || body == "" || body[0] != answerProgress {
		return false, nil
	}
	if err := proto.Unmarshal([]byte(body[1:]), out); err != nil {
		return false, fmt.Errorf("progress kept for request %q: %v: %w", rid, err, errs.ErrUnavailable)
	}
	return true, nil
}

// answerFrame is the record of rid's answer (or progress) in its slot.
func answerFrame(rid string, kind byte, answer proto.Message) (store.Frame, error) {
	body, err := proto.Marshal(answer)
	if err != nil {
		return store.Frame{}, err
	}
	data := make([]byte, 0, len(rid)+2+len(body))
	data = append(append(append(append(data, rid...), 0), kind), body...)
	return store.Frame{Page: dedupSlot(rid), Data: data}, nil
}

// commitChunkBytes bounds one store step of a request's frames (one replicated
// message); a request whose frames fit keeps its answer in the same step.
const commitChunkBytes = 8 << 20

// commit stores frames (owned here from now on: created, moved or written)
// and, with rid, the answer (kind answerDone or answerProgress) in the same
// atomic step. Frames beyond commitChunkBytes go in earlier steps of their own
// (the answer with the last): exactly-once is atomic for requests that fit.
func (n *Node) commit(ctx context.Context, session string, frames []store.Frame, rid string, kind byte, answer proto.Message) error {
	var chunks [][]store.Frame
	for i := 0; i < len(frames); {
		j, size := i, 0
		for j < len(frames) && (j == i || size+len(frames[j].Data) <= commitChunkBytes) {
			size += len(frames[j].Data)
			j++
		}
		chunks = append(chunks, frames[i:j])
		i = j
	}
	last := []store.Frame(nil)
	if len(chunks) > 0 {
		last = chunks[len(chunks)-1]
		chunks = chunks[:len(chunks)-1]
	}
	for _, c := range chunks {
		if err := n.store.AdoptFrames(ctx, session, c, n.self); err != nil {
			return err
		}
	}
	if rid == "" {
		if len(last) == 0 {
			return nil
		}
		return n.store.AdoptFrames(ctx, session, last, n.self)
	}
	a, err := answerFrame(rid, kind, answer)
	if err != nil {
		return err
	}
	return n.store.AdoptAnswered(ctx, session, last, n.self, dedupSession(session), a)
}

// forget drops the answers kept for session (it ended).
func (n *Node) forget(ctx context.Context, session string) {
	if _, err := n.store.DropFrames(ctx, dedupSession(session)); err != nil {
		n.log.WarnContext(ctx, "drop of the answers kept for a session failed", "session", session, "err", err)
	}
}

// versionSlot is the frame of a session's answers that holds the newest
// version of its page table held here (AcceptTable): outside the request
// slots (dedupSlot is below dedupSlots).
const versionSlot = dedupSlots

// tableVersion is the newest version of session's page table held here (0: none).
func (n *Node) tableVersion(ctx context.Context, session string) (int64, error) {
	f, err := n.store.GetFrames(ctx, dedupSession(session), []uint32{versionSlot})
	if errors.Is(err, errs.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(f[0].Data) != 8 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint64(f[0].Data)), nil
}

// setTableVersion records version as the newest of session's page table held here.
func (n *Node) setTableVersion(ctx context.Context, session string, version int64) error {
	return n.store.PutFrames(ctx, dedupSession(session), []store.Frame{{Page: versionSlot, Data: binary.BigEndian.AppendUint64(nil, uint64(version))}})
}
