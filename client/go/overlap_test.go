package odyssey_test

import (
	"context"
	"slices"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// Two turns of one session at once: turn A waits on an approval while turn B is queued
// behind it. B's stream carries B's events only; A's (its approval included) never show,
// so an approval loop on B's stream cannot answer A's request.
func TestTurnStreamCarriesOnlyItsOwnTurn(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, session := demoSession(ctx, t, addr)

	first, err := client.Submit(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := client.StreamTurn(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close()
	start := turn.LastSequence()
	// A runs while B's stream is open: its approval, tool call and completion all happen
	// after B subscribed.
	approved := make(chan error, 1)
	go func() { approved <- approveTurn(ctx, client, session.GetId(), first) }()

	var seen []*odysseyv1.SessionEvent
	for event, err := range turn.All() {
		if err != nil {
			t.Fatalf("after %d events: %v", len(seen), err)
		}
		seen = append(seen, event)
		if p := event.GetPermissionRequested(); p != nil { // B's own, if it asks
			if err := client.Approve(ctx, p.GetRequestId(), odyssey.AllowOnce); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := <-approved; err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || seen[0].GetTurnStarted() == nil || seen[len(seen)-1].GetTurnCompleted() == nil {
		t.Fatalf("unexpected turn: %v", seen)
	}
	for _, event := range seen {
		if event.GetTurnId() != turn.ExecutionID {
			t.Fatalf("turn %s's stream carried an event of turn %s: %v", turn.ExecutionID, event.GetTurnId(), event)
		}
	}

	// The overlap was real: A's events were appended while B's stream was open.
	everything, err := client.Subscribe(ctx, session.GetId(), start)
	if err != nil {
		t.Fatal(err)
	}
	defer everything.Close()
	var others []string
	for event, err := range everything.All() {
		if err != nil {
			t.Fatal(err)
		}
		if event.GetTurnId() == first {
			others = append(others, kind(event))
		}
		if event.GetSequence() >= seen[len(seen)-1].GetSequence() {
			break
		}
	}
	if !slices.Contains(others, "approval_resolved") || !slices.Contains(others, "turn_completed") {
		t.Fatalf("turn A's events after B subscribed: %v", others)
	}
}

// approveTurn approves the first request of the given turn as soon as it is pending.
func approveTurn(ctx context.Context, client *odyssey.Client, sessionID, executionID string) error {
	for {
		for approval, err := range client.ListApprovals(ctx, sessionID) {
			if err != nil {
				return err
			}
			if approval.GetExecutionId() == executionID {
				return client.Approve(ctx, approval.GetRequestId(), odyssey.AllowOnce)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kind names an event's payload ("turn_started", "approval_resolved", ...).
func kind(event *odysseyv1.SessionEvent) string {
	which := event.ProtoReflect().WhichOneof(event.ProtoReflect().Descriptor().Oneofs().ByName("payload"))
	if which == nil {
		return ""
	}
	return string(which.Name())
}
