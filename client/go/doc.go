// Package odyssey is the Go SDK of the Odyssey agent runtime: a thin wrapper over the
// generated gRPC stubs of package odyssey.v1 (in gen/odyssey/v1, imported as odysseyv1).
//
// Dial connects (plaintext or TLS, with a bearer token); the Client installs bundles from
// folders, opens sessions, runs turns and streams their events, resolves approvals, and
// resumes an event stream from the last sequence seen. Failed calls return an *Error
// carrying the gRPC code (also readable with status.Code from google.golang.org/grpc).
package odyssey
