package token

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/satpage/satpage/services/internal/errs"
)

// A ticket is a session's registration signed by the gateway that took it
// (docs/faults.md, "Lost gateways"): the client keeps it and sends it in
// metadata TicketMetadataKey, and any gateway holding a verification key
// rebuilds a session it does not know from it. The body is opaque here (the
// gateway's serialized RegisterSessionRequest).
//
// Wire form (ASCII, fits gRPC metadata):
//
//	t1.<kid>.<base64url(body)>.<base64url(signature)>
//
// the signature covering "satpage-ticket/v1." followed by everything before
// the last dot; an --insecure gateway seals with no key: "t1.-.<body>.".

// TicketMetadataKey is the gRPC metadata key that carries a session's ticket.
const TicketMetadataKey = "satpage-ticket"

const (
	ticketVersion = "t1"
	ticketContext = "satpage-ticket/v1."
	unsignedKid   = "-"
)

// Seal signs body as a ticket (a nil issuer: an unsigned one, for --insecure).
func (i *Issuer) Seal(body []byte) string {
	kid := unsignedKid
	if i != nil {
		kid = i.kid
	}
	head := ticketVersion + "." + kid + "." + base64.RawURLEncoding.EncodeToString(body)
	if i == nil {
		return head + "."
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(i.key, []byte(ticketContext+head)))
}

// Verifier verifies what i signs (its own key only).
func (i *Issuer) Verifier() *Verifier { return NewVerifier(i.key.Public().(ed25519.PublicKey)) }

// OpenTicket returns the body of a ticket signed by one of v's keys (a nil
// verifier: --insecure, any ticket's body, signed or not).
// errs.ErrUnauthenticated when it is malformed, signed by an unknown key or
// forged; the error never quotes the ticket.
func (v *Verifier) OpenTicket(t string, maxBytes int) ([]byte, error) {
	bad := func(why string) ([]byte, error) {
		return nil, fmt.Errorf("session ticket %s: %w", why, errs.ErrUnauthenticated)
	}
	if len(t) > maxBytes {
		return bad(fmt.Sprintf("of %d bytes is longer than %d", len(t), maxBytes))
	}
	parts := strings.Split(t, ".")
	if len(parts) != 4 || parts[0] != ticketVersion {
		return bad("is malformed")
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return bad("is malformed")
	}
	if v == nil {
		return body, nil
	}
	if why := v.signed(ticketContext, t, parts[1], parts[3]); why != "" {
		return bad(why)
	}
	return body, nil
}
