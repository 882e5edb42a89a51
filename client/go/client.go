package odyssey

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

const (
	// chunkBytes is the archive size per BuildBundle message, well under the message limit.
	chunkBytes = 256 * 1024
	// maxReceiveBytes is the largest message accepted from the server. The server caps
	// what it sends (4 MiB by default, configurable), so this only has to be as large.
	maxReceiveBytes = 64 << 20
)

// Keepalive pings find a dead connection under a long-lived event stream, which would
// otherwise wait forever on a peer that vanished without closing it.
var keepaliveParams = keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 20 * time.Second}

// Client is a connection to an odysseyd server. Safe for concurrent use.
type Client struct {
	conn      *grpc.ClientConn
	token     string
	readRetry ReconnectPolicy

	Bundles    odysseyv1.BundleServiceClient
	Sessions   odysseyv1.SessionServiceClient
	Executions odysseyv1.ExecutionServiceClient
	Approvals  odysseyv1.ApprovalServiceClient
	Server     odysseyv1.ServerServiceClient
	health     healthpb.HealthClient
}

type options struct {
	token     string
	tls       *tls.Config
	dialOps   []grpc.DialOption
	readRetry ReconnectPolicy
}

// Option configures Dial.
type Option func(*options) error

// WithToken sends `authorization: Bearer <token>` on every call, the raw stubs' too (an
// interceptor adds it).
func WithToken(token string) Option {
	return func(o *options) error { o.token = token; return nil }
}

// WithTLS connects over TLS, checking the server against the system's roots.
func WithTLS() Option {
	return func(o *options) error {
		if o.tls == nil {
			o.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		return nil
	}
}

// WithCA connects over TLS, checking the server against the given PEM certificates only.
func WithCA(pem []byte) Option {
	return func(o *options) error {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return errors.New("odyssey: WithCA: no certificate found in the PEM data")
		}
		o.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
		return nil
	}
}

// WithDialOptions passes extra options to grpc.NewClient.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) error { o.dialOps = append(o.dialOps, opts...); return nil }
}

// Dial prepares a client for address (host:port). Like grpc.NewClient it connects lazily:
// the first call (or WaitUntilServing) reports an unreachable server.
func Dial(address string, opts ...Option) (*Client, error) {
	o := options{readRetry: DefaultReadRetry}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	dialOps := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithKeepaliveParams(keepaliveParams),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReceiveBytes)),
		grpc.WithChainUnaryInterceptor(unaryToken(o.token)),
		grpc.WithChainStreamInterceptor(streamToken(o.token)),
	}, o.dialOps...)
	conn, err := grpc.NewClient(address, dialOps...)
	if err != nil {
		return nil, fmt.Errorf("odyssey: %s: %w", address, err)
	}
	return &Client{
		conn:       conn,
		token:      o.token,
		readRetry:  o.readRetry,
		Bundles:    odysseyv1.NewBundleServiceClient(conn),
		Sessions:   odysseyv1.NewSessionServiceClient(conn),
		Executions: odysseyv1.NewExecutionServiceClient(conn),
		Approvals:  odysseyv1.NewApprovalServiceClient(conn),
		Server:     odysseyv1.NewServerServiceClient(conn),
		health:     healthpb.NewHealthClient(conn),
	}, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	return c.conn.Close()
}

// Context returns ctx. Calls on the raw stubs carry the token by themselves (an
// interceptor adds it); it remains for programs written before that.
//
// Deprecated: call the raw stubs with ctx itself.
func (c *Client) Context(ctx context.Context) context.Context {
	return ctx
}

// WithReadRetry sets how reads (gets, lists, inspections, exports, server info) retry
// after codes.Unavailable (DefaultReadRetry unless set; NoReconnect: not at all). Writes
// (Submit, Run, CreateSession, ...) are never retried.
func WithReadRetry(policy ReconnectPolicy) Option {
	return func(o *options) error { o.readRetry = policy; return nil }
}

// unaryToken adds the bearer token to every unary call that does not carry one.
func unaryToken(token string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(withToken(ctx, token), method, req, reply, cc, opts...)
	}
}

// streamToken adds the bearer token to every streaming call that does not carry one.
func streamToken(token string) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(withToken(ctx, token), desc, cc, method, opts...)
	}
}

func withToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get("authorization")) > 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// Health returns the serving status of the whole server (service "") or of one service.
func (c *Client) Health(ctx context.Context, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	r, err := c.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return healthpb.HealthCheckResponse_UNKNOWN, wrap(err)
	}
	return r.GetStatus(), nil
}

// WaitUntilServing polls health until the server answers SERVING or ctx ends.
func (c *Client) WaitUntilServing(ctx context.Context) error {
	for {
		s, err := c.Health(ctx, "")
		if err == nil && s == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return err
			}
			return wrap(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ServerInfo returns facts about the running server.
func (c *Client) ServerInfo(ctx context.Context) (*odysseyv1.GetServerInfoResponse, error) {
	return read(ctx, c, func(ctx context.Context) (*odysseyv1.GetServerInfoResponse, error) {
		return c.Server.GetServerInfo(ctx, &odysseyv1.GetServerInfoRequest{})
	})
}
