package odyssey

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// TurnOption configures Submit, Run and StreamTurn. WithReconnect, a SubscribeOption, is
// one too: it sets how StreamTurn's stream resubscribes.
type TurnOption interface {
	applyTurn(*turnOptions)
}

type turnOptions struct {
	cwd       string
	model     *odysseyv1.ModelSpec
	metadata  map[string]string
	subscribe subscribeOptions
}

type turnOption func(*turnOptions)

func (f turnOption) applyTurn(o *turnOptions) { f(o) }

// WithCwd sets the turn's working directory, relative to the session workspace.
func WithCwd(cwd string) TurnOption {
	return turnOption(func(o *turnOptions) { o.cwd = cwd })
}

// SessionTurnOption is an option of both a session (CreateSession) and a turn (Submit,
// Run, StreamTurn).
type SessionTurnOption interface {
	SessionOption
	TurnOption
}

type sharedOption struct {
	session func(*odysseyv1.CreateSessionRequest)
	turn    func(*turnOptions)
}

func (o sharedOption) applySession(r *odysseyv1.CreateSessionRequest) { o.session(r) }
func (o sharedOption) applyTurn(t *turnOptions)                       { o.turn(t) }

// WithModel replaces the agent's model: for the whole session at CreateSession, for one
// turn at Submit, Run or StreamTurn (see Model).
func WithModel(model *odysseyv1.ModelSpec) SessionTurnOption {
	return sharedOption{
		session: func(r *odysseyv1.CreateSessionRequest) { r.Model = model },
		turn:    func(o *turnOptions) { o.model = model },
	}
}

// WithMetadata attaches metadata to the session (CreateSession) or to the turn.
func WithMetadata(metadata map[string]string) SessionTurnOption {
	return sharedOption{
		session: func(r *odysseyv1.CreateSessionRequest) { r.Metadata = metadata },
		turn:    func(o *turnOptions) { o.metadata = metadata },
	}
}

func newTurnOptions(opts []TurnOption) turnOptions {
	o := turnOptions{subscribe: subscribeOptions{reconnect: DefaultReconnectPolicy}}
	for _, opt := range opts {
		opt.applyTurn(&o)
	}
	return o
}

func (o turnOptions) input(sessionID, prompt string) *odysseyv1.TurnInput {
	input := &odysseyv1.TurnInput{SessionId: sessionID, Prompt: prompt, Metadata: o.metadata}
	if o.cwd != "" || o.model != nil {
		input.Overrides = &odysseyv1.TurnOverrides{Cwd: o.cwd, Model: o.model}
	}
	return input
}

// Submit queues a turn and returns its execution id at once.
func (c *Client) Submit(ctx context.Context, sessionID, prompt string, opts ...TurnOption) (string, error) {
	o := newTurnOptions(opts)
	r, err := submit(ctx, func(ctx context.Context) (*odysseyv1.SubmitResponse, error) {
		return c.Executions.Submit(ctx, &odysseyv1.SubmitRequest{Input: o.input(sessionID, prompt)})
	})
	if err != nil {
		return "", err
	}
	return r.GetExecutionId(), nil
}

// Run runs a turn and waits for it to end (a turn that needs an approval waits for it).
// When ctx ends first the call returns codes.DeadlineExceeded or codes.Canceled; the turn
// runs on.
func (c *Client) Run(ctx context.Context, sessionID, prompt string, opts ...TurnOption) (*odysseyv1.ExecutionStatus, error) {
	o := newTurnOptions(opts)
	r, err := submit(ctx, func(ctx context.Context) (*odysseyv1.RunResponse, error) {
		return c.Executions.Run(ctx, &odysseyv1.RunRequest{Input: o.input(sessionID, prompt)})
	})
	if err != nil {
		return nil, err
	}
	return r.GetStatus(), nil
}

// ExecutionStatus returns the state of a turn.
func (c *Client) ExecutionStatus(ctx context.Context, executionID string) (*odysseyv1.ExecutionStatus, error) {
	r, err := read(ctx, c, func(ctx context.Context) (*odysseyv1.GetExecutionStatusResponse, error) {
		return c.Executions.GetExecutionStatus(ctx, &odysseyv1.GetExecutionStatusRequest{ExecutionId: executionID})
	})
	return r.GetStatus(), err
}

// Cancel cancels a queued or running turn.
func (c *Client) Cancel(ctx context.Context, executionID string) (*odysseyv1.ExecutionStatus, error) {
	r, err := c.Executions.CancelExecution(ctx, &odysseyv1.CancelExecutionRequest{ExecutionId: executionID})
	if err != nil {
		return nil, wrap(err)
	}
	return r.GetStatus(), nil
}

// SendInput gives a session input while a turn may be running. InputMode_INPUT_MODE_STEER
// adds the text to the running turn before its next model call (a UserInputAdded event),
// INPUT_MODE_QUEUE submits a turn after it, INPUT_MODE_INTERRUPT stops it (cancelled, reason
// "interrupted_by_input") and runs a turn with the text next. With no turn running, every
// mode starts a turn. The response's Disposition says which happened; ExecutionId is the
// turn that carries the text.
func (c *Client) SendInput(ctx context.Context, sessionID, text string, mode odysseyv1.InputMode) (*odysseyv1.SendInputResponse, error) {
	r, err := c.Executions.SendInput(ctx, &odysseyv1.SendInputRequest{SessionId: sessionID, Text: text, Mode: mode})
	if err != nil {
		return nil, wrap(err)
	}
	return r, nil
}

// Command is a command to run in a session's sandbox: Argv (the program and its
// arguments) or Line (a command line split with shell quoting rules; no shell runs it).
type Command struct {
	Argv []string
	Line string
	// Working directory, relative to the session workspace.
	Cwd string
	// The command's own time limit (the server's default when 0).
	Timeout time.Duration
}

// RunCommand runs a command in the session's sandbox and returns its exit code and
// output.
func (c *Client) RunCommand(ctx context.Context, sessionID string, cmd Command) (*odysseyv1.RunSessionCommandResponse, error) {
	r, err := c.Executions.RunSessionCommand(ctx, &odysseyv1.RunSessionCommandRequest{
		SessionId: sessionID, Argv: cmd.Argv, CommandLine: cmd.Line, Cwd: cmd.Cwd,
		TimeoutMs: uint64(cmd.Timeout.Milliseconds()),
	})
	return r, wrap(err)
}

// StreamCommand runs a command and yields its begin, output deltas and end as they
// happen. Breaking out of the loop cancels the call.
func (c *Client) StreamCommand(ctx context.Context, sessionID string, cmd Command) iter.Seq2[*odysseyv1.StreamSessionCommandResponse, error] {
	return func(yield func(*odysseyv1.StreamSessionCommandResponse, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.Executions.StreamSessionCommand(ctx, &odysseyv1.StreamSessionCommandRequest{
			SessionId: sessionID, Argv: cmd.Argv, CommandLine: cmd.Line, Cwd: cmd.Cwd,
			TimeoutMs: uint64(cmd.Timeout.Milliseconds()),
		})
		if err != nil {
			yield(nil, wrap(err))
			return
		}
		for {
			item, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			} else if err != nil {
				yield(nil, wrap(err))
				return
			}
			if !yield(item, nil) {
				return
			}
		}
	}
}
