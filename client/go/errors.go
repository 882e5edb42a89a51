package odyssey

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a call the server refused or could not answer.
type Error struct {
	// Code is the gRPC status code: codes.NotFound, codes.InvalidArgument, ...
	Code codes.Code
	// Message is the server's message; it names what was wrong.
	Message string
	status  *status.Status
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
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

// wrap turns an error from a generated stub into an *Error; nil stays nil.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	return &Error{Code: s.Code(), Message: s.Message(), status: s}
}
