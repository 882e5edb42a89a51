package odyssey_test

import (
	"context"
	"iter"
	"path/filepath"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc/codes"
)

// WatchApprovals and Session.State against a real server: a turn's Bash call appears in a
// watch, another client decides it, the watch sees it go, and the session's state follows.
func TestWatchFollowsARequestDecidedByAnotherClient(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "demo"), odyssey.BuildOptions{}); err != nil {
		t.Fatalf("install: %v", err)
	}
	session, err := client.CreateSession(ctx, "demo")
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	if session.GetState() != odysseyv1.SessionState_SESSION_STATE_IDLE {
		t.Fatalf("a new session is %v", session.GetState())
	}
	watch, err := client.WatchApprovals(ctx, session.GetId())
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(watch.All())
	defer stop()
	change := func() *odysseyv1.WatchApprovalsResponse {
		t.Helper()
		item, err, ok := next()
		if err != nil || !ok {
			t.Fatalf("watch: %v (still open: %v)", err, ok)
		}
		return item
	}
	if first := change(); first.GetSnapshot() == nil || len(first.GetSnapshot().GetApprovals()) != 0 {
		t.Fatalf("expected an empty snapshot, got %v", first)
	}

	execution, err := client.Submit(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	added := change().GetAdded()
	if added == nil || added.GetExecutionId() != execution || added.GetTool() != "Bash" || added.GetReason() == "" {
		t.Fatalf("expected the Bash request of %s, got %v", execution, added)
	}
	if len(watch.Pending()) != 1 {
		t.Fatalf("pending: %v", watch.Pending())
	}
	got, err := client.GetSession(ctx, session.GetId())
	if err != nil || got.GetState() != odysseyv1.SessionState_SESSION_STATE_WAITING_FOR_APPROVAL {
		t.Fatalf("session while its call waits: %v, %v", got.GetState(), err)
	}

	other, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Deny(ctx, added.GetRequestId(), "not from Go"); err != nil {
		t.Fatalf("deny: %v", err)
	}
	removed := change().GetRemoved()
	if removed == nil || removed.GetRequestId() != added.GetRequestId() ||
		removed.GetDecision() != odysseyv1.ApprovalDecision_APPROVAL_DECISION_DENY ||
		removed.GetReason() != "not from Go" {
		t.Fatalf("expected the removal of %s, got %v", added.GetRequestId(), removed)
	}
	if len(watch.Pending()) != 0 {
		t.Fatalf("pending after the removal: %v", watch.Pending())
	}
	for range 400 {
		got, err = client.GetSession(ctx, session.GetId())
		if err == nil && got.GetState() == odysseyv1.SessionState_SESSION_STATE_IDLE {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the session never became idle: %v, %v", got.GetState(), err)
}

func TestWatchingAnUnknownSessionIsNotFound(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	watch, err := client.WatchApprovals(ctx, "0190a4c1-0000-7000-8000-000000000000", odyssey.WithReconnect(odyssey.NoReconnect))
	if err != nil {
		t.Fatal(err)
	}
	for item, err := range watch.All() {
		if odyssey.Code(err) != codes.NotFound {
			t.Fatalf("expected NotFound, got %v, %v", item, err)
		}
		return
	}
	t.Fatal("the watch ended without an error")
}
