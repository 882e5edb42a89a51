package odyssey

import (
	"context"
	"errors"
	"io"
	"iter"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// SessionOptions are the optional fields of CreateSession.
type SessionOptions struct {
	// The agent to talk to; the bundle's default agent when empty.
	AgentID string
	// Replaces the agent's model for this session (see Model).
	Model *odysseyv1.ModelSpec
	// A sandbox mode no more permissive than the operator allows; the manifest's when
	// unspecified.
	SandboxMode odysseyv1.SandboxMode
	// Whether tool calls wait for a person: on request (the agent's rules decide),
	// untrusted (anything not allowed asks), never (what would ask is denied).
	ApprovalPolicy odysseyv1.ApprovalPolicy
	Metadata       map[string]string
	// Tokens (input + output) the session may spend over its life; 0 takes the server's
	// default.
	TokenBudget uint64
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
func (c *Client) CreateSession(ctx context.Context, bundleReference string, opts SessionOptions) (*odysseyv1.Session, error) {
	r, err := c.Sessions.CreateSession(ctx, &odysseyv1.CreateSessionRequest{
		BundleReference: bundleReference,
		AgentId:         opts.AgentID,
		Model:           opts.Model,
		SandboxMode:     opts.SandboxMode,
		ApprovalPolicy:  opts.ApprovalPolicy,
		Metadata:        opts.Metadata,
		TokenBudget:     opts.TokenBudget,
	})
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

// ListSessions iterates every session (of one bundle or agent, when opts says), page
// after page.
func (c *Client) ListSessions(ctx context.Context, opts ListOptions) iter.Seq2[*odysseyv1.Session, error] {
	return pages(ctx, c, func(ctx context.Context, token string) ([]*odysseyv1.Session, string, error) {
		r, err := c.Sessions.ListSessions(ctx, &odysseyv1.ListSessionsRequest{
			Bundle: opts.Bundle, AgentId: opts.AgentID, PageSize: opts.PageSize, PageToken: token,
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
