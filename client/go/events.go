package odyssey

import (
	"context"
	"errors"
	"io"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// EventStream yields a session's events after a sequence number, replayed then live, in
// sequence order, each once. Heartbeats only prove the stream is alive: they are counted,
// never returned.
//
// LastSequence is the sequence of the last event returned: after a disconnect,
// Subscribe(ctx, sessionID, stream.LastSequence()) resumes with nothing missed and nothing
// repeated. Not safe for concurrent use.
type EventStream struct {
	stream       grpc.ServerStreamingClient[odysseyv1.SubscribeSessionResponse]
	cancel       context.CancelFunc
	lastSequence uint64
	heartbeats   uint64
	// When set, the stream ends after the first event it accepts.
	until  func(*odysseyv1.SessionEvent) bool
	closed bool
}

// Subscribe opens the event stream of a session after afterSequence (0: from the start).
// A session that does not exist is reported by the first Next, as codes.NotFound.
func (c *Client) Subscribe(ctx context.Context, sessionID string, afterSequence uint64) (*EventStream, error) {
	ctx, cancel := context.WithCancel(c.Context(ctx))
	stream, err := c.Sessions.SubscribeSession(ctx, &odysseyv1.SubscribeSessionRequest{
		SessionId:     sessionID,
		AfterSequence: afterSequence,
	})
	if err != nil {
		cancel()
		return nil, wrap(err)
	}
	return &EventStream{stream: stream, cancel: cancel, lastSequence: afterSequence}, nil
}

// Next returns the next event. It returns io.EOF once the stream is over (the server
// ended it, Close was called, or the turn of a TurnStream completed), and an *Error when
// the server refused (codes.NotFound for an unknown or deleted session) or went away.
func (s *EventStream) Next() (*odysseyv1.SessionEvent, error) {
	for {
		if s.closed {
			return nil, io.EOF
		}
		item, err := s.stream.Recv()
		if err != nil {
			closedByUs := s.closed
			s.Close()
			if errors.Is(err, io.EOF) || (closedByUs && Code(err) == codes.Canceled) {
				return nil, io.EOF
			}
			return nil, wrap(err)
		}
		if item.GetHeartbeat() != nil {
			s.heartbeats++
			continue
		}
		event := item.GetEvent()
		// Replay and live delivery never overlap on the server; this guard keeps the
		// promise even if a caller resumes from an older sequence than it has seen.
		if event == nil || event.GetSequence() <= s.lastSequence {
			continue
		}
		s.lastSequence = event.GetSequence()
		if s.until != nil && s.until(event) {
			s.Close()
		}
		return event, nil
	}
}

// LastSequence is the sequence of the last event returned (or the starting point).
func (s *EventStream) LastSequence() uint64 { return s.lastSequence }

// Heartbeats counts the heartbeats received.
func (s *EventStream) Heartbeats() uint64 { return s.heartbeats }

// Close ends the subscription; the server sees the client go away.
func (s *EventStream) Close() {
	s.closed = true
	s.cancel()
}

// TurnStream is the live events of one turn, ending (io.EOF) after its turn_completed.
type TurnStream struct {
	*EventStream
	// ExecutionID names the turn.
	ExecutionID string
}

// StreamTurn starts a turn and streams its events as they happen. It subscribes before
// submitting, so nothing is missed.
func (c *Client) StreamTurn(ctx context.Context, sessionID, prompt string) (*TurnStream, error) {
	session, err := c.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	events, err := c.Subscribe(ctx, sessionID, session.GetLastSequence())
	if err != nil {
		return nil, err
	}
	executionID, err := c.Submit(ctx, sessionID, prompt)
	if err != nil {
		events.Close()
		return nil, err
	}
	events.until = func(e *odysseyv1.SessionEvent) bool {
		return e.GetTurnId() == executionID && e.GetTurnCompleted() != nil
	}
	return &TurnStream{EventStream: events, ExecutionID: executionID}, nil
}
