package odyssey_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc/codes"
)

// outage is how long the connection stays cut: several retries fail before one gets
// through.
const outage = time.Second

// An event stream whose connection is cut mid-turn resubscribes by itself after its last
// sequence: the events the server appends while the connection is down arrive after it,
// with no gap and no duplicate.
func TestCutStreamResumesByItself(t *testing.T) {
	addr := startServer(t)
	relay := startProxy(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, session := demoSession(ctx, t, addr)

	relayed, err := odyssey.Dial(relay.addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer relayed.Close()
	turn, err := relayed.StreamTurn(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		t.Fatal(err)
	}
	var seen []*odysseyv1.SessionEvent
	cutAt := -1
	for event, err := range turn.All() {
		if err != nil {
			t.Fatalf("after %d events: %v", len(seen), err)
		}
		seen = append(seen, event)
		if p := event.GetPermissionRequested(); p != nil {
			// Cut the stream while the turn waits, let the turn run to its end while
			// nothing gets through, then let the retries through.
			relay.cut()
			cutAt = len(seen)
			if err := client.Approve(ctx, p.GetRequestId(), odyssey.AllowOnce); err != nil {
				t.Fatal(err)
			}
			waitUntilEnded(ctx, t, client, turn.ExecutionID)
			time.AfterFunc(outage, relay.mend)
		}
	}
	// One outage, one resubscription, however many attempts failed during it.
	if turn.Reconnects() != 1 {
		t.Fatalf("%d reconnects, want 1", turn.Reconnects())
	}
	for i, event := range seen {
		if event.GetSequence() != seen[0].GetSequence()+uint64(i) {
			t.Fatalf("event %d has sequence %d: a gap or a duplicate", i, event.GetSequence())
		}
	}
	if cutAt < 0 || seen[0].GetTurnStarted() == nil {
		t.Fatalf("unexpected turn: cut at %d", cutAt)
	}
	resolved := false
	for _, event := range seen[cutAt:] {
		resolved = resolved || event.GetApprovalResolved() != nil
	}
	last := seen[len(seen)-1].GetTurnCompleted()
	if !resolved || last.GetOutcome() != odysseyv1.TurnOutcome_TURN_OUTCOME_COMPLETED {
		t.Fatalf("after the cut: approval resolved %v, last %v", resolved, last)
	}
}

func TestWithoutReconnectACutStreamIsUnavailable(t *testing.T) {
	addr := startServer(t)
	relay := startProxy(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, session := demoSession(ctx, t, addr)

	relayed, err := odyssey.Dial(relay.addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer relayed.Close()
	events, err := relayed.Subscribe(ctx, session.GetId(), 0, odyssey.WithReconnect(odyssey.NoReconnect))
	if err != nil {
		t.Fatal(err)
	}
	relay.cut()
	var failure error
	for _, err := range events.All() {
		failure = err
	}
	if odyssey.Code(failure) != codes.Unavailable {
		t.Fatalf("a cut stream without reconnect: %v, want UNAVAILABLE", failure)
	}
	if events.Reconnects() != 0 {
		t.Fatalf("%d reconnects", events.Reconnects())
	}
}

func TestBackoffDoublesUpToTheCap(t *testing.T) {
	p := odyssey.DefaultReconnectPolicy
	for attempt, want := range map[int]time.Duration{
		1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond,
		10: 5 * time.Second, 200: 5 * time.Second,
	} {
		if got := p.Delay(attempt); got != want {
			t.Errorf("Delay(%d) = %v, want %v", attempt, got, want)
		}
	}
}

// demoSession installs the demo bundle and opens a session on it, directly.
func demoSession(ctx context.Context, t testing.TB, addr string) (*odyssey.Client, *odysseyv1.Session) {
	t.Helper()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if _, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "demo"), odyssey.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	session, err := client.CreateSession(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	return client, session
}

// waitUntilEnded polls the turn's state until it has ended.
func waitUntilEnded(ctx context.Context, t *testing.T, client *odyssey.Client, executionID string) {
	t.Helper()
	for {
		status, err := client.ExecutionStatus(ctx, executionID)
		if err != nil {
			t.Fatal(err)
		}
		switch status.GetState() {
		case odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED,
			odysseyv1.ExecutionState_EXECUTION_STATE_FAILED,
			odysseyv1.ExecutionState_EXECUTION_STATE_CANCELLED,
			odysseyv1.ExecutionState_EXECUTION_STATE_INTERRUPTED:
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the turn did not end in time")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
