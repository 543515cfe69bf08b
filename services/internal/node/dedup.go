package node

// Exactly-once page requests (docs/services.md): a ReadPage, ReadPages or
// WritePage that carries a request_id is answered once; a retry with the same
// id (after a timeout, a lost reply, a gateway crash) gets the first answer
// back instead of acting again, so a movement is neither lost nor repeated and
// an older write is not applied over a newer one. The answer is kept in the
// serving satellite's store, under the session's lock right after the change
// it reports, so it is replicated with the change (--replicas) and survives
// the satellite's restart. Kept per session in dedupSlots slots (the last
// request of each slot); dropped with the session.

import (
	"context"
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
	if !ok || got != rid {
		return false, nil // the slot holds another request's answer
	}
	if err := proto.Unmarshal([]byte(body), out); err != nil {
		return false, fmt.Errorf("answer kept for request %q: %v: %w", rid, err, errs.ErrUnavailable)
	}
	n.m.Accesses.WithLabelValues("deduplicated").Inc()
	return true, nil
}

// remember keeps the answer to request rid of session.
func (n *Node) remember(ctx context.Context, session, rid string, answer proto.Message) error {
	if rid == "" {
		return nil
	}
	body, err := proto.Marshal(answer)
	if err != nil {
		return err
	}
	data := append([]byte(rid+"\x00"), body...)
	return n.store.PutFrames(ctx, dedupSession(session), []store.Frame{{Page: dedupSlot(rid), Data: data}})
}

// forget drops the answers kept for session (it ended).
func (n *Node) forget(ctx context.Context, session string) {
	if _, err := n.store.DropFrames(ctx, dedupSession(session)); err != nil {
		n.log.WarnContext(ctx, "drop of the answers kept for a session failed", "session", session, "err", err)
	}
}
