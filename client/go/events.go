package odyssey

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"
	"time"

	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// ReconnectPolicy says how an EventStream resubscribes after its connection fails
// (codes.Unavailable: a network failure, a server restarting). The first retry waits
// InitialDelay, each further one twice as long, up to MaxDelay; after MaxAttempts
// consecutive failures Next returns the error. Any message received (event or heartbeat)
// resets the count.
type ReconnectPolicy struct {
	InitialDelay time.Duration
	MaxDelay     time.Duration
	MaxAttempts  int
}

// DefaultReconnectPolicy retries for about half a minute: enough for a server restart,
// short enough that a server gone for good is reported.
var DefaultReconnectPolicy = ReconnectPolicy{
	InitialDelay: 100 * time.Millisecond,
	MaxDelay:     5 * time.Second,
	MaxAttempts:  10,
}

// NoReconnect ends the stream at the first connection failure.
var NoReconnect = ReconnectPolicy{}

// Delay is the wait before retry number attempt (1-based).
func (p ReconnectPolicy) Delay(attempt int) time.Duration {
	delay := p.InitialDelay
	for i := 1; i < attempt && delay < p.MaxDelay; i++ {
		delay *= 2
	}
	return min(delay, p.MaxDelay)
}

// SubscribeOption configures Subscribe; it is a TurnOption too (StreamTurn's stream).
type SubscribeOption func(*subscribeOptions)

func (f SubscribeOption) applyTurn(o *turnOptions) { f(&o.subscribe) }

type subscribeOptions struct {
	reconnect ReconnectPolicy
}

// WithReconnect sets how the stream resubscribes after a dropped connection
// (DefaultReconnectPolicy unless set; NoReconnect: not at all).
func WithReconnect(policy ReconnectPolicy) SubscribeOption {
	return func(o *subscribeOptions) { o.reconnect = policy }
}

// EventStream yields a session's events after a sequence number, replayed then live, in
// sequence order, each once. When the connection drops, it resubscribes by itself after
// the last sequence it returned, as its ReconnectPolicy allows, so the caller sees every
// event once. Reconnects counts resubscriptions: each new subscription the server
// answered after a dropped connection, once, however many attempts failed before it.
// Heartbeats only prove the stream is alive: they are counted, never returned.
//
// All iterates the events: `for event, err := range stream.All()`. An error (an *Error)
// is yielded last. The stream is closed when the loop ends, a break included.
//
// LastSequence is the sequence of the last event yielded: after the loop, or an error,
// Subscribe(ctx, sessionID, stream.LastSequence()) resumes with nothing missed and nothing
// repeated. Not safe for concurrent use, except Close.
type EventStream struct {
	client    *Client
	ctx       context.Context
	sessionID string
	policy    ReconnectPolicy
	// retry is false when the first subscribe got no answer: that failure is reported,
	// never retried.
	retry bool

	stream        grpc.ServerStreamingClient[odysseyv1.SubscribeSessionResponse]
	cancel        context.CancelFunc
	lastSequence  uint64
	heartbeats    uint64
	lastHeartbeat *odysseyv1.Heartbeat
	reconnects    uint64
	// When set, the events it rejects are skipped (LastSequence still moves past them).
	keep func(*odysseyv1.SessionEvent) bool
	// When set, the stream ends after the first event it accepts.
	until func(*odysseyv1.SessionEvent) bool
	// mu guards cancel and closed, which Close may touch from another goroutine.
	mu     sync.Mutex
	closed bool
}

// Subscribe opens the event stream of a session after afterSequence (0: from the start).
// It waits for the server's answer: the subscription is open on the server when it
// returns. A session that does not exist is reported by the first iteration, as
// codes.NotFound.
func (c *Client) Subscribe(ctx context.Context, sessionID string, afterSequence uint64, opts ...SubscribeOption) (*EventStream, error) {
	o := subscribeOptions{reconnect: DefaultReconnectPolicy}
	for _, opt := range opts {
		opt(&o)
	}
	s := &EventStream{
		client:       c,
		ctx:          ctx,
		sessionID:    sessionID,
		policy:       o.reconnect,
		lastSequence: afterSequence,
	}
	if err := s.subscribe(); err != nil {
		return nil, err
	}
	// Header blocks until the server answers; no header means the call ended at once
	// (refused, or no server), which the first iteration reports.
	header, err := s.stream.Header()
	s.retry = err == nil && header != nil
	return s, nil
}

func (s *EventStream) subscribe() error {
	ctx, cancel := context.WithCancel(s.ctx)
	stream, err := s.client.Sessions.SubscribeSession(ctx, &odysseyv1.SubscribeSessionRequest{
		SessionId:     s.sessionID,
		AfterSequence: s.lastSequence,
	})
	if err != nil {
		cancel()
		return wrap(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Closed while subscribing: the new call ends at once.
		cancel()
	}
	s.stream, s.cancel = stream, cancel
	return nil
}

// All iterates the stream's events until it is over: the server ended it, Close was
// called, or the turn of a TurnStream completed. It yields an *Error, last, when the
// server refused (codes.NotFound for an unknown or deleted session) or the connection
// stayed down past the ReconnectPolicy. Ending the loop closes the stream.
func (s *EventStream) All() iter.Seq2[*odysseyv1.SessionEvent, error] {
	return func(yield func(*odysseyv1.SessionEvent, error) bool) {
		defer s.Close()
		for {
			event, err := s.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(event, err) || err != nil {
				return
			}
		}
	}
}

// next returns the next event, io.EOF once the stream is over, or an *Error.
func (s *EventStream) next() (*odysseyv1.SessionEvent, error) {
	attempts := 0
	for {
		if s.isClosed() {
			return nil, io.EOF
		}
		if s.stream == nil {
			// Between a failure and the next resubscribe.
			if err := s.subscribe(); err != nil {
				if err := s.backoff(err, &attempts); err != nil {
					s.Close()
					return nil, err
				}
				continue
			}
			// Counted once the server answers the new subscription; a failed attempt
			// is not a resubscription.
			if header, err := s.stream.Header(); err == nil && header != nil {
				s.reconnects++
			}
		}
		item, err := s.stream.Recv()
		if errors.Is(err, io.EOF) {
			s.Close()
			return nil, io.EOF
		} else if err != nil {
			if s.isClosed() {
				// Close from another goroutine cancelled the call under Recv.
				return nil, io.EOF
			}
			s.mu.Lock()
			s.cancel()
			s.mu.Unlock()
			s.stream = nil
			if err := s.backoff(err, &attempts); err != nil {
				s.Close()
				return nil, err
			}
			continue
		}
		attempts = 0
		if heartbeat := item.GetHeartbeat(); heartbeat != nil {
			s.heartbeats++
			s.lastHeartbeat = heartbeat
			continue
		}
		event := item.GetEvent()
		// Already returned before a resubscribe (or the caller resumed from an older
		// sequence than it has seen): skipped, never repeated.
		if event == nil || event.GetSequence() <= s.lastSequence {
			continue
		}
		s.lastSequence = event.GetSequence()
		if s.keep != nil && !s.keep(event) {
			continue
		}
		if s.until != nil && s.until(event) {
			s.Close()
		}
		return event, nil
	}
}

// backoff waits before the next resubscribe after err, or returns err as an *Error when
// the stream should end instead: the failure is not the connection's, the policy is
// spent, or the stream's context ended.
func (s *EventStream) backoff(err error, attempts *int) error {
	if !s.retry || Code(err) != codes.Unavailable || *attempts >= s.policy.MaxAttempts {
		return wrap(err)
	}
	*attempts++
	select {
	case <-time.After(s.policy.Delay(*attempts)):
		return nil
	case <-s.ctx.Done():
		return wrap(err)
	}
}

func (s *EventStream) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// LastSequence is the sequence of the last event returned (or the starting point).
func (s *EventStream) LastSequence() uint64 { return s.lastSequence }

// Heartbeats counts the heartbeats received.
func (s *EventStream) Heartbeats() uint64 { return s.heartbeats }

// LastHeartbeat is the most recent heartbeat (when the server sent it, and its last
// sequence then), or nil before the first.
func (s *EventStream) LastHeartbeat() *odysseyv1.Heartbeat { return s.lastHeartbeat }

// Reconnects counts how often the stream resubscribed after a dropped connection: each
// subscription the server answered counts once; failed attempts do not count.
func (s *EventStream) Reconnects() uint64 { return s.reconnects }

// Close ends the subscription; the server sees the client go away. A loop over All that
// is waiting for an event ends.
func (s *EventStream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
}

// TurnStream is the live events of one turn, ending after its turn_completed.
// The events of the session's other turns (one queued before it, say) are left out.
type TurnStream struct {
	*EventStream
	// ExecutionID names the turn.
	ExecutionID string
}

// StreamTurn starts a turn and streams its events as they happen. It subscribes before
// submitting, so nothing is missed. opts are Submit's (WithCwd, WithModel, WithMetadata)
// and the stream's (WithReconnect).
func (c *Client) StreamTurn(ctx context.Context, sessionID, prompt string, opts ...TurnOption) (*TurnStream, error) {
	o := newTurnOptions(opts)
	session, err := c.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	events, err := c.Subscribe(ctx, sessionID, session.GetLastSequence(), WithReconnect(o.subscribe.reconnect))
	if err != nil {
		return nil, err
	}
	executionID, err := c.Submit(ctx, sessionID, prompt, opts...)
	if err != nil {
		events.Close()
		return nil, err
	}
	events.keep = func(e *odysseyv1.SessionEvent) bool { return e.GetTurnId() == executionID }
	events.until = func(e *odysseyv1.SessionEvent) bool {
		return e.GetTurnId() == executionID && e.GetTurnCompleted() != nil
	}
	return &TurnStream{EventStream: events, ExecutionID: executionID}, nil
}
