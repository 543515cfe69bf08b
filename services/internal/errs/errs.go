// Package errs holds satpage's sentinel errors in one block. Code wraps them
// with %w and the value that was wrong; only gRPC handlers turn them into
// status codes (Code), so the core stays free of transport concerns.
package errs

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
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
	// ErrStaleEpoch: a change or snapshot of a namespace's older serving epoch
	// (its primary was taken over from, and has not taken the new epoch up):
	// refused, so a stale primary acknowledges nothing (docs/faults.md).
	ErrStaleEpoch = errors.New("stale serving epoch")
	// ErrStaleTable: a page table older than one this satellite has held of
	// the session (a handover sent on an out-of-date view of it): refused, so
	// it never replaces the newer table.
	ErrStaleTable = errors.New("stale page table")
	// ErrSilent: a satellite did not answer within the deadline (it may be
	// alive but paused or slow), as opposed to refusing (nothing at its address).
	ErrSilent = errors.New("satellite silent")
)

// The google.rpc.ErrorInfo reasons (domain Domain) that mark each sentinel on
// the wire: codes are shared by several causes (Unavailable is both a refused
// connection and a missing route), so callers across a process boundary,
// Python included, decide on the reason and never on the message text.
const (
	Domain                = "satpage"
	ReasonNotFound        = "PAGE_NOT_FOUND"
	ReasonUnknownSession  = "UNKNOWN_SESSION"
	ReasonSessionExists   = "SESSION_EXISTS"
	ReasonOutOfRange      = "OUT_OF_RANGE"
	ReasonInvalid         = "INVALID_ARGUMENT"
	ReasonRelayLoop       = "RELAY_LOOP"
	ReasonNoRoute         = "NO_ROUTE"
	ReasonNotServing      = "NOT_SERVING"
	ReasonStillOwned      = "STILL_OWNED"
	ReasonUnavailable     = "UNAVAILABLE"
	ReasonUnauthenticated = "UNAUTHENTICATED"
	ReasonPermission      = "PERMISSION_DENIED"
	ReasonExhausted       = "RESOURCE_EXHAUSTED"
	ReasonNotSynced       = "REPLICA_NOT_SYNCED"
	ReasonNoFailover      = "NO_FAILOVER"
	ReasonStaleEpoch      = "STALE_EPOCH"
	ReasonStaleTable      = "STALE_TABLE"
	ReasonSilent          = "SATELLITE_SILENT"
)

// sentinels lists every sentinel with its reason, most specific first: an
// error wrapping two (a missing route found while a peer was unavailable)
// takes the first.
var sentinels = []struct {
	err    error
	reason string
}{
	{ErrStaleEpoch, ReasonStaleEpoch},
	{ErrStaleTable, ReasonStaleTable},
	{ErrNoRoute, ReasonNoRoute},
	{ErrSilent, ReasonSilent},
	{ErrUnknownSession, ReasonUnknownSession},
	{ErrNotFound, ReasonNotFound},
	{ErrSessionExists, ReasonSessionExists},
	{ErrOutOfRange, ReasonOutOfRange},
	{ErrInvalid, ReasonInvalid},
	{ErrRelayLoop, ReasonRelayLoop},
	{ErrNotServing, ReasonNotServing},
	{ErrStillOwned, ReasonStillOwned},
	{ErrNotSynced, ReasonNotSynced},
	{ErrNoFailover, ReasonNoFailover},
	{ErrUnavailable, ReasonUnavailable},
	{ErrUnauthenticated, ReasonUnauthenticated},
	{ErrPermissionDenied, ReasonPermission},
	{ErrResourceExhausted, ReasonExhausted},
}

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
		errors.Is(err, ErrNoFailover), errors.Is(err, ErrStaleEpoch), errors.Is(err, ErrStaleTable):
		return codes.FailedPrecondition
	case errors.Is(err, ErrNoRoute), errors.Is(err, ErrUnavailable), errors.Is(err, ErrSilent):
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
// A sentinel also carries a google.rpc.ErrorInfo with its reason, so that the
// receiver can tell causes that share a code apart (Reason); a status from
// downstream passes through with its details.
func Status(err error) error {
	if err == nil {
		return nil
	}
	if s, ok := status.FromError(err); ok && !isSentinel(err) {
		return s.Err()
	}
	s := status.New(Code(err), err.Error())
	if r := Reason(err); r != "" {
		if d, derr := s.WithDetails(&errdetails.ErrorInfo{Reason: r, Domain: Domain}); derr == nil {
			s = d
		}
	}
	return s.Err()
}

// Reason is err's ErrorInfo reason: its sentinel's, or the one a status from
// another process carries (domain Domain); "" when it has none.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.reason
		}
	}
	if s, ok := status.FromError(err); ok {
		for _, d := range s.Details() {
			if e, ok := d.(*errdetails.ErrorInfo); ok && e.Domain == Domain {
				return e.Reason
			}
		}
	}
	return ""
}

// Has reports whether err is sentinel, here or over the wire (by its reason).
func Has(err, sentinel error) bool {
	if errors.Is(err, sentinel) {
		return true
	}
	for _, s := range sentinels {
		if s.err == sentinel {
			return Reason(err) == s.reason
		}
	}
	return false
}

// Retryable reports whether err may pass when the same request is sent again:
// Unavailable (a relay or the destination went away with it in flight), but
// not a missing ISL route, which the same scenario time cannot change.
func Retryable(err error) bool {
	if err == nil || Has(err, ErrNoRoute) {
		return false
	}
	return Code(err) == codes.Unavailable
}

func isSentinel(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return true
		}
	}
	return false
}

// StatusBytes is err as a serialised google.rpc.Status (code, message and
// details), what a stream's answer carries where a unary call's trailers
// would; nil for nil.
func StatusBytes(err error) []byte {
	if err == nil {
		return nil
	}
	b, merr := proto.Marshal(status.Convert(err).Proto())
	if merr != nil {
		b, _ = proto.Marshal(status.New(codes.Internal, "unencodable error").Proto())
	}
	return b
}

// FromStatusBytes is the error StatusBytes encoded: the status with its
// details; bytes that do not decode, or say OK, are an Internal error.
func FromStatusBytes(b []byte) error {
	var sp spb.Status
	if err := proto.Unmarshal(b, &sp); err != nil || sp.Code == int32(codes.OK) {
		return status.Error(codes.Internal, "malformed status in a stream's answer")
	}
	return status.ErrorProto(&sp)
}

// Answer is a stream's answer as its unary call would have returned: the
// error its status carries (FromStatusBytes), else its response; an answer
// with neither is an Internal error.
func Answer[R any](resp *R, st []byte) (*R, error) {
	if len(st) > 0 {
		return nil, FromStatusBytes(st)
	}
	if resp == nil {
		return nil, status.Error(codes.Internal, "a stream's answer carries neither a response nor an error")
	}
	return resp, nil
}
