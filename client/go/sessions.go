package odyssey

import (
	"context"
	"errors"
	"io"
	"iter"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// SessionOption configures CreateSession. WithModel and WithMetadata are options of a
// session and of a turn alike.
type SessionOption interface {
	applySession(*odysseyv1.CreateSessionRequest)
}

type sessionOption func(*odysseyv1.CreateSessionRequest)

func (f sessionOption) applySession(r *odysseyv1.CreateSessionRequest) { f(r) }

// WithAgent picks the agent to talk to; the bundle's default agent without it.
func WithAgent(agentID string) SessionOption {
	return sessionOption(func(r *odysseyv1.CreateSessionRequest) { r.AgentId = agentID })
}

// WithSandboxMode asks for a sandbox mode no more permissive than the operator allows
// (ReadOnly, WorkspaceWrite, DangerFullAccess); the manifest's without it.
func WithSandboxMode(mode odysseyv1.SandboxMode) SessionOption {
	return sessionOption(func(r *odysseyv1.CreateSessionRequest) { r.SandboxMode = mode })
}

// WithApprovalPolicy says whether tool calls wait for a person: OnRequest (the agent's
// rules decide), Untrusted (anything not allowed asks), Never (what would ask is denied).
func WithApprovalPolicy(policy odysseyv1.ApprovalPolicy) SessionOption {
	return sessionOption(func(r *odysseyv1.CreateSessionRequest) { r.ApprovalPolicy = policy })
}

// WithTokenBudget bounds the tokens (input + output) the session may spend over its life;
// the server's default without it.
func WithTokenBudget(tokens uint64) SessionOption {
	return sessionOption(func(r *odysseyv1.CreateSessionRequest) { r.TokenBudget = tokens })
}

// Sandbox modes and approval policies, as short names.
const (
	ReadOnly         = odysseyv1.SandboxMode_SANDBOX_MODE_READ_ONLY
	WorkspaceWrite   = odysseyv1.SandboxMode_SANDBOX_MODE_WORKSPACE_WRITE
	DangerFullAccess = odysseyv1.SandboxMode_SANDBOX_MODE_DANGER_FULL_ACCESS

	OnRequest = odysseyv1.ApprovalPolicy_APPROVAL_POLICY_ON_REQUEST
	Untrusted = odysseyv1.ApprovalPolicy_APPROVAL_POLICY_UNTRUSTED
	Never     = odysseyv1.ApprovalPolicy_APPROVAL_POLICY_NEVER
)

// Model is the model spec of provider and name ("openai", "gpt-4.1-mini").
func Model(provider, name string) *odysseyv1.ModelSpec {
	return &odysseyv1.ModelSpec{Provider: provider, Name: name}
}

// CreateSession opens a session on an installed bundle (`name`, `name@version`,
// `ns/name@version` or `@sha256:<hex>`).
func (c *Client) CreateSession(ctx context.Context, bundleReference string, opts ...SessionOption) (*odysseyv1.Session, error) {
	request := &odysseyv1.CreateSessionRequest{BundleReference: bundleReference}
	for _, opt := range opts {
		opt.applySession(request)
	}
	r, err := c.Sessions.CreateSession(ctx, request)
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetSession(), nil
}

// GetSession returns a session.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*odysseyv1.Session, error) {
	r, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.GetSessionResponse, error) {
		return c.Sessions.GetSession(ctx, &odysseyv1.GetSessionRequest{SessionId: sessionID})
	})
	return r.GetSession(), err
}

// ListSessions iterates every session (of one bundle or agent, or the sub-agents one
// session started, when opts says), page after page.
func (c *Client) ListSessions(ctx context.Context, opts ListOptions) iter.Seq2[*odysseyv1.Session, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*odysseyv1.Session, string, error) {
		r, err := c.Sessions.ListSessions(ctx, &odysseyv1.ListSessionsRequest{
			Bundle: opts.Bundle, AgentId: opts.AgentID, ParentSessionId: opts.ParentSessionID,
			PageSize: opts.PageSize, PageToken: token,
		})
		return r.GetSessions(), r.GetNextPageToken(), err
	})
}

// DeleteSession cancels the session's turns and removes it.
func (c *Client) DeleteSession(ctx context.Context, sessionID string) error {
	_, err := c.Sessions.DeleteSession(ctx, &odysseyv1.DeleteSessionRequest{SessionId: sessionID})
	return wrap(err)
}

// ExportCassette returns the cassette the server recorded for a session (servers started
// with --record-cassettes): one JSON line per model call, as the replay provider plays
// them. codes.FailedPrecondition when nothing was recorded.
func (c *Client) ExportCassette(ctx context.Context, sessionID string) ([]byte, error) {
	return read(ctx, c, func(ctx context.Context) ([]byte, error) {
		stream, err := c.Sessions.ExportSessionCassette(ctx, &odysseyv1.ExportSessionCassetteRequest{SessionId: sessionID})
		if err != nil {
			return nil, err
		}
		var cassette []byte
		for {
			part, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return cassette, nil
			} else if err != nil {
				return nil, err
			}
			cassette = append(cassette, part.GetChunk()...)
		}
	})
}
