// Package odyssey is the Go SDK of the Odyssey agent runtime: a call for every RPC of
// package odyssey.v1 over the generated gRPC stubs (in gen/odyssey/v1, imported as
// odysseyv1).
//
// Dial connects (plaintext or TLS) with a bearer token set once: an interceptor adds it
// to every call, the raw stubs' (client.Bundles, client.Sessions, ...) included. Every
// call takes a context.Context for its deadline and cancellation. Streams and lists are
// range-over-func iterators (iter.Seq2[T, error]): StreamTurn's and Subscribe's All,
// StreamCommand, ListBundles, ListSessions and ListApprovals, which follow every page.
// Event streams resubscribe by themselves after a dropped connection (Reconnects counts
// the resubscriptions the server answered); a turn's stream carries only its turn's
// events. Reads retry codes.Unavailable with backoff (WithReadRetry); writes never do.
// Failed calls return an *Error with the gRPC code and its name, the message, and the
// status's ErrorInfo reason, BadRequest field violations and RetryInfo delay (status.Code
// from google.golang.org/grpc reads the code too).
package odyssey
