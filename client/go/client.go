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
	conn  *grpc.ClientConn
	token string

	Bundles    odysseyv1.BundleServiceClient
	Sessions   odysseyv1.SessionServiceClient
	Executions odysseyv1.ExecutionServiceClient
	Approvals  odysseyv1.ApprovalServiceClient
	Server     odysseyv1.ServerServiceClient
	health     healthpb.HealthClient
}

type options struct {
	token   string
	tls     *tls.Config
	dialOps []grpc.DialOption
}

// Option configures Dial.
type Option func(*options) error

// WithToken sends `authorization: Bearer <token>` on every call.
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
	var o options
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
	}, o.dialOps...)
	conn, err := grpc.NewClient(address, dialOps...)
	if err != nil {
		return nil, fmt.Errorf("odyssey: %s: %w", address, err)
	}
	return &Client{
		conn:       conn,
		token:      o.token,
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

// Context adds the bearer token to ctx, for calls made on the raw stubs.
func (c *Client) Context(ctx context.Context) context.Context {
	if c.token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
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
	r, err := c.Server.GetServerInfo(c.Context(ctx), &odysseyv1.GetServerInfoRequest{})
	return r, wrap(err)
}

// BuildOptions are the options of InstallBundle.
type BuildOptions struct {
	// Namespace to install into; the server's default (`local`) when empty.
	Namespace string
	// Replace an installed bundle of the same version with different content.
	Force bool
}

// InstallBundle packs the bundle project in dir, uploads it and returns the installed
// bundle.
func (c *Client) InstallBundle(ctx context.Context, dir string, opts BuildOptions) (*odysseyv1.Bundle, error) {
	archive, err := PackProject(dir)
	if err != nil {
		return nil, err
	}
	stream, err := c.Bundles.BuildBundle(c.Context(ctx))
	if err != nil {
		return nil, wrap(err)
	}
	first := &odysseyv1.BuildBundleRequest{Item: &odysseyv1.BuildBundleRequest_Options{
		Options: &odysseyv1.BuildOptions{Namespace: opts.Namespace, Force: opts.Force},
	}}
	if err := stream.Send(first); err != nil {
		return nil, c.closeAndWrap(stream, err)
	}
	for start := 0; start < len(archive); start += chunkBytes {
		end := min(start+chunkBytes, len(archive))
		chunk := &odysseyv1.BuildBundleRequest{Item: &odysseyv1.BuildBundleRequest_Chunk{Chunk: archive[start:end]}}
		if err := stream.Send(chunk); err != nil {
			return nil, c.closeAndWrap(stream, err)
		}
	}
	r, err := stream.CloseAndRecv()
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetBundle(), nil
}

// closeAndWrap reports the server's status when a send fails: Send returns io.EOF when the
// server has already answered, and the answer is what the caller needs.
func (c *Client) closeAndWrap(stream grpc.ClientStreamingClient[odysseyv1.BuildBundleRequest, odysseyv1.BuildBundleResponse], err error) error {
	if _, recvErr := stream.CloseAndRecv(); recvErr != nil {
		return wrap(recvErr)
	}
	return wrap(err)
}

// SessionOptions are the optional fields of CreateSession.
type SessionOptions struct {
	// The agent to talk to; the bundle's default agent when empty.
	AgentID  string
	Metadata map[string]string
}

// CreateSession opens a session on an installed bundle (`name`, `name@version`,
// `ns/name@version` or `@sha256:<hex>`).
func (c *Client) CreateSession(ctx context.Context, bundleReference string, opts SessionOptions) (*odysseyv1.Session, error) {
	r, err := c.Sessions.CreateSession(c.Context(ctx), &odysseyv1.CreateSessionRequest{
		BundleReference: bundleReference,
		AgentId:         opts.AgentID,
		Metadata:        opts.Metadata,
	})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetSession(), nil
}

// GetSession returns a session.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*odysseyv1.Session, error) {
	r, err := c.Sessions.GetSession(c.Context(ctx), &odysseyv1.GetSessionRequest{SessionId: sessionID})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetSession(), nil
}

// DeleteSession cancels the session's turns and removes it.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	_, err := c.Sessions.DeleteSession(c.Context(ctx), &odysseyv1.DeleteSessionRequest{SessionId: sessionID})
	return wrap(err)
}

// Submit queues a turn and returns its execution id at once.
func (c *Client) Submit(ctx context.Context, sessionID, prompt string) (string, error) {
	r, err := c.Executions.Submit(c.Context(ctx), &odysseyv1.SubmitRequest{
		Input: &odysseyv1.TurnInput{SessionId: sessionID, Prompt: prompt},
	})
	if err != nil {
		return "", wrap(err)
	}
	return r.GetExecutionId(), nil
}

// Run runs a turn and waits for it to end (a turn that needs an approval waits for it).
func (c *Client) Run(ctx context.Context, sessionID, prompt string) (*odysseyv1.ExecutionStatus, error) {
	r, err := c.Executions.Run(c.Context(ctx), &odysseyv1.RunRequest{
		Input: &odysseyv1.TurnInput{SessionId: sessionID, Prompt: prompt},
	})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetStatus(), nil
}

// ExecutionStatus returns the state of a turn.
func (c *Client) ExecutionStatus(ctx context.Context, executionID string) (*odysseyv1.ExecutionStatus, error) {
	r, err := c.Executions.GetExecutionStatus(c.Context(ctx), &odysseyv1.GetExecutionStatusRequest{ExecutionId: executionID})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetStatus(), nil
}

// Cancel cancels a queued or running turn.
func (c *Client) Cancel(ctx context.Context, executionID string) (*odysseyv1.ExecutionStatus, error) {
	r, err := c.Executions.CancelExecution(c.Context(ctx), &odysseyv1.CancelExecutionRequest{ExecutionId: executionID})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetStatus(), nil
}
