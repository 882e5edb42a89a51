package odyssey

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a call the server refused or could not answer, with the google.rpc details
// of its status decoded.
type Error struct {
	// Code is the gRPC status code: codes.NotFound, codes.InvalidArgument, ...
	Code codes.Code
	// Message is the server's message; it names what was wrong.
	Message string
	// Reason and Domain are the status's ErrorInfo ("SESSION_NOT_FOUND", "odyssey.ai"):
	// a stable name of the failure to branch on. Empty when the failure did not come
	// from the server (a connection that could not be made).
	Reason string
	Domain string
	// Metadata is the ErrorInfo's metadata (nil when none).
	Metadata map[string]string
	// FieldViolations are the request fields at fault (a BadRequest detail), with the
	// field's path as the request spells it ("input.prompt").
	FieldViolations []FieldViolation
	// RetryDelay is how long to wait before trying again (a RetryInfo detail: a full
	// queue); zero when the status gives none.
	RetryDelay time.Duration
	status     *status.Status
}

// FieldViolation is one field of a request that was wrong, and what was wrong with it.
type FieldViolation struct {
	Field       string
	Description string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.CodeName(), e.Message)
}

// CodeName is the code's gRPC name: "NOT_FOUND", "CANCELLED", "RESOURCE_EXHAUSTED".
func (e *Error) CodeName() string {
	return CodeName(e.Code)
}

// GRPCStatus lets status.Code and status.FromError read the status through an *Error.
func (e *Error) GRPCStatus() *status.Status {
	return e.status
}

// Code returns the gRPC code of err: an *Error's code, codes.OK for nil, codes.Unknown
// for an error that carries none.
func Code(err error) codes.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return status.Code(err)
}

// CodeName is the gRPC name of a code ("NOT_FOUND"; codes.Code's String is "NotFound").
func CodeName(code codes.Code) string {
	if code == codes.Canceled {
		return "CANCELLED"
	}
	name := code.String()
	var b strings.Builder
	for i, r := range name {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// AsError decodes an error from a generated stub (the raw clients: c.Sessions, ...) into
// an *Error, as the Client's own calls return; nil when err is not a gRPC status.
func AsError(err error) *Error {
	var e *Error
	if errors.As(wrap(err), &e) {
		return e
	}
	return nil
}

// wrap turns an error from a generated stub into an *Error; nil stays nil.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	return fromStatus(s)
}

// fromStatus decodes the details of a status (those it does not know are left out).
func fromStatus(s *status.Status) *Error {
	e := &Error{Code: s.Code(), Message: s.Message(), status: s}
	for _, detail := range s.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			e.Reason, e.Domain = d.GetReason(), d.GetDomain()
			if len(d.GetMetadata()) > 0 {
				e.Metadata = d.GetMetadata()
			}
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				e.FieldViolations = append(e.FieldViolations, FieldViolation{Field: v.GetField(), Description: v.GetDescription()})
			}
		case *errdetails.RetryInfo:
			e.RetryDelay = d.GetRetryDelay().AsDuration()
		}
	}
	return e
}
