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

// ListSessionTools returns every tool the session's agent is offered (builtin, host and
// MCP ones, sorted by name), read page by page, with the agent's MCP servers that could
// not be started (McpServerErrors). The server starts those not running in the session's
// sandbox cell.
func (c *Client) ListSessionTools(ctx context.Context, sessionID string) (*odysseyv1.ListSessionToolsResponse, error) {
	all := &odysseyv1.ListSessionToolsResponse{}
	token := ""
	for {
		page, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.ListSessionToolsResponse, error) {
			return c.Sessions.ListSessionTools(ctx, &odysseyv1.ListSessionToolsRequest{SessionId: sessionID, PageToken: token})
		})
		if err != nil {
			return nil, err
		}
		all.Tools = append(all.Tools, page.GetTools()...)
		all.McpServerErrors = page.GetMcpServerErrors()
		token = page.GetNextPageToken()
		if token == "" {
			return all, nil
		}
	}
}

// ForkSession creates a session whose history is sessionID's up to the end of turn
// afterTurn (1 for the first) and whose workspace is what it held then. The source is
// untouched. codes.InvalidArgument for a turn the session does not have.
func (c *Client) ForkSession(ctx context.Context, sessionID string, afterTurn uint64) (*odysseyv1.Session, error) {
	return c.fork(ctx, &odysseyv1.ForkSessionRequest{
		SessionId: sessionID,
		Point:     &odysseyv1.ForkSessionRequest_AfterTurn{AfterTurn: afterTurn},
	})
}

// ForkSessionAtSequence is ForkSession from the turn whose end (its turn_completed event)
// has this sequence; codes.InvalidArgument for a sequence that is not a turn's end.
func (c *Client) ForkSessionAtSequence(ctx context.Context, sessionID string, sequence uint64) (*odysseyv1.Session, error) {
	return c.fork(ctx, &odysseyv1.ForkSessionRequest{
		SessionId: sessionID,
		Point:     &odysseyv1.ForkSessionRequest_AtSequence{AtSequence: sequence},
	})
}

func (c *Client) fork(ctx context.Context, request *odysseyv1.ForkSessionRequest) (*odysseyv1.Session, error) {
	r, err := c.Sessions.ForkSession(ctx, request)
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetSession(), nil
}

// RewindSession puts the session's conversation and workspace back to the end of turn
// toTurn; later turns stay in its log but leave the model's history. It answers the
// session and the session_rewound event. codes.FailedPrecondition while a turn runs.
func (c *Client) RewindSession(ctx context.Context, sessionID string, toTurn uint64) (*odysseyv1.RewindSessionResponse, error) {
	r, err := c.Sessions.RewindSession(ctx, &odysseyv1.RewindSessionRequest{SessionId: sessionID, ToTurn: toTurn})
	return r, wrap(err)
}

// TurnChanges returns the files one turn added, changed or removed in the workspace,
// with a unified diff of each text file.
func (c *Client) TurnChanges(ctx context.Context, sessionID string, turn uint64) (*odysseyv1.GetTurnChangesResponse, error) {
	return read(ctx, c, func(ctx context.Context) (*odysseyv1.GetTurnChangesResponse, error) {
		return c.Sessions.GetTurnChanges(ctx, &odysseyv1.GetTurnChangesRequest{SessionId: sessionID, Turn: turn})
	})
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
