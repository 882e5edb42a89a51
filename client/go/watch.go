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

// ApprovalWatch follows the pending approval requests (WatchApprovals): the first change
// is a snapshot of every pending request, then each request filed (Added) and each that
// ends (Removed: decided by anyone, timed out, cancelled). Pending holds the requests
// pending after the changes yielded so far. When the connection drops, the watch is
// opened again as its ReconnectPolicy allows; its first change is a fresh snapshot that
// replaces Pending. Heartbeats are counted, never yielded. Not safe for concurrent use,
// except Close.
type ApprovalWatch struct {
	client    *Client
	ctx       context.Context
	sessionID string
	policy    ReconnectPolicy
	retry     bool

	stream     grpc.ServerStreamingClient[odysseyv1.WatchApprovalsResponse]
	cancel     context.CancelFunc
	pending    []*odysseyv1.Approval
	heartbeats uint64
	reconnects uint64
	mu         sync.Mutex
	closed     bool
}

// WatchApprovals opens a watch of the pending approval requests of one session (of all
// when sessionID is empty). It waits for the server's answer; an unknown session is
// reported by the first iteration, as codes.NotFound.
func (c *Client) WatchApprovals(ctx context.Context, sessionID string, opts ...SubscribeOption) (*ApprovalWatch, error) {
	o := subscribeOptions{reconnect: DefaultReconnectPolicy}
	for _, opt := range opts {
		opt(&o)
	}
	w := &ApprovalWatch{client: c, ctx: ctx, sessionID: sessionID, policy: o.reconnect}
	if err := w.watch(); err != nil {
		return nil, err
	}
	header, err := w.stream.Header()
	w.retry = err == nil && header != nil
	return w, nil
}

func (w *ApprovalWatch) watch() error {
	ctx, cancel := context.WithCancel(w.ctx)
	stream, err := w.client.Approvals.WatchApprovals(ctx, &odysseyv1.WatchApprovalsRequest{SessionId: w.sessionID})
	if err != nil {
		cancel()
		return wrap(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		cancel()
	}
	w.stream, w.cancel = stream, cancel
	return nil
}

// All iterates the changes (each a WatchApprovalsResponse with Snapshot, Added or Removed
// set) until the watch is over. It yields an *Error, last, when the server refused or the
// connection stayed down past the ReconnectPolicy. Ending the loop closes the watch.
func (w *ApprovalWatch) All() iter.Seq2[*odysseyv1.WatchApprovalsResponse, error] {
	return func(yield func(*odysseyv1.WatchApprovalsResponse, error) bool) {
		defer w.Close()
		for {
			change, err := w.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(change, err) || err != nil {
				return
			}
		}
	}
}

func (w *ApprovalWatch) next() (*odysseyv1.WatchApprovalsResponse, error) {
	attempts := 0
	for {
		if w.isClosed() {
			return nil, io.EOF
		}
		if w.stream == nil {
			if err := w.watch(); err != nil {
				if err := w.backoff(err, &attempts); err != nil {
					w.Close()
					return nil, err
				}
				continue
			}
			if header, err := w.stream.Header(); err == nil && header != nil {
				w.reconnects++
			}
		}
		item, err := w.stream.Recv()
		if errors.Is(err, io.EOF) {
			w.Close()
			return nil, io.EOF
		} else if err != nil {
			if w.isClosed() {
				return nil, io.EOF
			}
			w.mu.Lock()
			w.cancel()
			w.mu.Unlock()
			w.stream = nil
			if err := w.backoff(err, &attempts); err != nil {
				w.Close()
				return nil, err
			}
			continue
		}
		attempts = 0
		switch {
		case item.GetSnapshot() != nil:
			w.pending = append([]*odysseyv1.Approval(nil), item.GetSnapshot().GetApprovals()...)
		case item.GetAdded() != nil:
			w.drop(item.GetAdded().GetRequestId())
			w.pending = append(w.pending, item.GetAdded())
		case item.GetRemoved() != nil:
			w.drop(item.GetRemoved().GetRequestId())
		default:
			// A heartbeat, or an item this client does not know yet.
			if item.GetHeartbeat() != nil {
				w.heartbeats++
			}
			continue
		}
		return item, nil
	}
}

func (w *ApprovalWatch) drop(requestID string) {
	kept := w.pending[:0]
	for _, a := range w.pending {
		if a.GetRequestId() != requestID {
			kept = append(kept, a)
		}
	}
	w.pending = kept
}

func (w *ApprovalWatch) backoff(err error, attempts *int) error {
	if !w.retry || Code(err) != codes.Unavailable || *attempts >= w.policy.MaxAttempts {
		return wrap(err)
	}
	*attempts++
	select {
	case <-time.After(w.policy.Delay(*attempts)):
		return nil
	case <-w.ctx.Done():
		return wrap(err)
	}
}

func (w *ApprovalWatch) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Pending is the requests pending after the changes yielded so far, oldest first.
func (w *ApprovalWatch) Pending() []*odysseyv1.Approval { return w.pending }

// Heartbeats counts the heartbeats received.
func (w *ApprovalWatch) Heartbeats() uint64 { return w.heartbeats }

// Reconnects counts how often the watch was opened again after a dropped connection.
func (w *ApprovalWatch) Reconnects() uint64 { return w.reconnects }

// Close ends the watch; a loop over All that is waiting ends.
func (w *ApprovalWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.cancel != nil {
		w.cancel()
	}
}
