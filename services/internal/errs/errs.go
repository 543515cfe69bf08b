// Package errs holds satpage's sentinel errors in one block. Code wraps them
// with %w and the value that was wrong; only gRPC handlers turn them into
// status codes (Code), so the core stays free of transport concerns.
package errs

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	// ErrNotFound: a page frame or page-table entry is not held here.
	ErrNotFound = errors.New("not found")
	// ErrUnknownSession: no page table (satnode) or no registration (gateway) for the session.
	ErrUnknownSession = errors.New("unknown session")
	// ErrSessionExists: the session already has a page table or registration here.
	ErrSessionExists = errors.New("session already exists")
	// ErrOutOfRange: a satellite index, page, or scenario time outside the valid range.
	ErrOutOfRange = errors.New("out of range")
	// ErrInvalid: a malformed request (missing field, oversize page, bad schedule).
	ErrInvalid = errors.New("invalid argument")
	// ErrRelayLoop: a relayed request came back to a satellite it already passed, or
	// arrived over something that is not an ISL.
	ErrRelayLoop = errors.New("relay loop")
	// ErrNoRoute: no ISL path between two satellites at the scenario time.
	ErrNoRoute = errors.New("no ISL route")
	// ErrNotServing: the session's page table is held by another satellite.
	ErrNotServing = errors.New("not the serving satellite")
	// ErrStillOwned: a request would delete frames that this satellite's own page
	// table still names it the owner of (a release or drop aimed at the wrong node).
	ErrStillOwned = errors.New("still owned here")
	// ErrUnavailable: a peer or the store cannot be reached.
	ErrUnavailable = errors.New("unavailable")
	// ErrUnauthenticated: no credential, or one that is malformed, forged or expired.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrPermissionDenied: a valid credential that does not allow this request
	// (another session's token, a client calling a satellite-only RPC).
	ErrPermissionDenied = errors.New("permission denied")
	// ErrResourceExhausted: a quota or rate limit is reached; nothing was changed.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrNotSynced: this satellite holds no in-sync copy of another satellite's
	// state (it restarted empty, or the primary moved on); the primary sends a snapshot.
	ErrNotSynced = errors.New("replica not in sync")
	// ErrNoFailover: a session cannot be taken over from its serving satellite
	// (it is alive, or no live satellite holds a copy of its state: R = 1).
	ErrNoFailover = errors.New("no failover")
)

// Code maps an error to its gRPC status code. Errors that already carry a
// status (from a downstream RPC) keep it, so a relay passes codes through.
func Code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrUnknownSession):
		return codes.NotFound
	case errors.Is(err, ErrSessionExists):
		return codes.AlreadyExists
	case errors.Is(err, ErrOutOfRange):
		return codes.OutOfRange
	case errors.Is(err, ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, ErrRelayLoop):
		return codes.Aborted
	case errors.Is(err, ErrNotServing), errors.Is(err, ErrStillOwned), errors.Is(err, ErrNotSynced),
		errors.Is(err, ErrNoFailover):
		return codes.FailedPrecondition
	case errors.Is(err, ErrNoRoute), errors.Is(err, ErrUnavailable):
		return codes.Unavailable
	case errors.Is(err, ErrUnauthenticated):
		return codes.Unauthenticated
	case errors.Is(err, ErrPermissionDenied):
		return codes.PermissionDenied
	case errors.Is(err, ErrResourceExhausted):
		return codes.ResourceExhausted
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Internal
}

// Status turns err into a gRPC status error with its message (for handlers).
// ErrNoRoute also carries a google.rpc.ErrorInfo with ReasonNoRoute, so that
// the origin of a relayed request can tell it from a transient Unavailable.
func Status(err error) error {
	if err == nil {
		return nil
	}
	if s, ok := status.FromError(err); ok && !isSentinel(err) {
		return s.Err()
	}
	s := status.New(Code(err), err.Error())
	if errors.Is(err, ErrNoRoute) {
		if d, derr := s.WithDetails(&errdetails.ErrorInfo{Reason: ReasonNoRoute, Domain: Domain}); derr == nil {
			s = d
		}
	}
	return s.Err()
}

// Domain and ReasonNoRoute are the google.rpc.ErrorInfo that marks ErrNoRoute
// on the wire (its code, Unavailable, is shared with failures that can pass).
const (
	Domain        = "satpage"
	ReasonNoRoute = "NO_ROUTE"
)

// Retryable reports whether err may pass when the same request is sent again:
// Unavailable (a relay or the destination went away with it in flight), but
// not a missing ISL route, which the same scenario time cannot change.
func Retryable(err error) bool {
	if err == nil || errors.Is(err, ErrNoRoute) {
		return false
	}
	if s, ok := status.FromError(err); ok {
		for _, d := range s.Details() {
			if e, ok := d.(*errdetails.ErrorInfo); ok && e.Domain == Domain && e.Reason == ReasonNoRoute {
				return false
			}
		}
	}
	return Code(err) == codes.Unavailable
}

func isSentinel(err error) bool {
	for _, s := range []error{ErrNotFound, ErrUnknownSession, ErrSessionExists, ErrOutOfRange,
		ErrInvalid, ErrRelayLoop, ErrNoRoute, ErrNotServing, ErrStillOwned, ErrUnavailable,
		ErrUnauthenticated, ErrPermissionDenied, ErrResourceExhausted, ErrNotSynced,
		context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
