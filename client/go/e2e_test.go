package odyssey_test

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The whole SDK against a real server: install the demo bundle, run a turn whose replayed
// model calls Bash (which the agent's rules say must ask), approve it from the client,
// drop the event stream mid-turn and resume it with no gap and no duplicate.
func TestTurnWithApprovalAndResumedStream(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	bundle, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "demo"), odyssey.BuildOptions{})
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if bundle.GetRef().GetName() != "demo" || !strings.HasPrefix(bundle.GetRef().GetDigest(), "sha256:") {
		t.Fatalf("unexpected bundle %v", bundle)
	}
	session, err := client.CreateSession(ctx, "demo")
	if err != nil {
		t.Fatalf("create session: %v", err)
	}

	var seen []*odysseyv1.SessionEvent
	turn, err := client.StreamTurn(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		t.Fatalf("stream turn: %v", err)
	}
	// Disconnect after a few events, while the turn is still streaming: breaking out of
	// the loop closes the stream.
	for event, err := range turn.All() {
		if err != nil {
			t.Fatalf("event %d: %v", len(seen)+1, err)
		}
		seen = append(seen, event)
		if len(seen) == 3 {
			break
		}
	}
	for event, err := range turn.All() {
		t.Fatalf("a closed stream should yield nothing, got %v, %v", event, err)
	}

	resumed, err := client.Subscribe(ctx, session.GetId(), turn.LastSequence())
	if err != nil {
		t.Fatal(err)
	}
	approvals := 0
	for event, err := range resumed.All() {
		if err != nil {
			t.Fatalf("resumed stream after %d events: %v", len(seen), err)
		}
		seen = append(seen, event)
		if request := event.GetPermissionRequested(); request != nil {
			if request.GetTool() != "Bash" {
				t.Fatalf("unexpected approval for %s", request.GetTool())
			}
			pending, err := odyssey.Collect(client.ListApprovals(ctx, session.GetId()))
			if err != nil || len(pending) != 1 || pending[0].GetRequestId() != request.GetRequestId() {
				t.Fatalf("pending approvals %v, %v", pending, err)
			}
			// What a person is shown: the call, control characters escaped (none here).
			if request.GetDisplay() == "" || request.GetControlCharacters() || pending[0].GetDisplay() != request.GetDisplay() {
				t.Fatalf("display form %q (control characters: %v), listed as %q",
					request.GetDisplay(), request.GetControlCharacters(), pending[0].GetDisplay())
			}
			if err := client.Approve(ctx, request.GetRequestId(), odyssey.AllowOnce); err != nil {
				t.Fatalf("approve: %v", err)
			}
			approvals++
		}
		if event.GetTurnCompleted() != nil && event.GetTurnId() == turn.ExecutionID {
			break
		}
	}
	resumed.Close()

	for i, event := range seen {
		if event.GetSequence() != uint64(i+1) {
			t.Fatalf("event %d has sequence %d: a gap or a duplicate", i+1, event.GetSequence())
		}
		if event.GetTurnId() != turn.ExecutionID {
			t.Fatalf("event %d belongs to turn %q", i+1, event.GetTurnId())
		}
	}
	if seen[0].GetTurnStarted() == nil {
		t.Fatal("the first event is not turn_started")
	}
	if approvals != 1 {
		t.Fatalf("%d approvals", approvals)
	}
	var bash []*odysseyv1.ToolCallFinished
	var resolved []*odysseyv1.ApprovalResolved
	for _, event := range seen {
		if f := event.GetToolCallFinished(); f != nil && f.GetTool() == "Bash" {
			bash = append(bash, f)
		}
		if r := event.GetApprovalResolved(); r != nil {
			resolved = append(resolved, r)
		}
	}
	if len(bash) != 1 || !bash[0].GetSuccess() {
		t.Fatalf("Bash results: %v", bash)
	}
	if len(resolved) != 1 || resolved[0].GetDecision() != odysseyv1.ApprovalDecision_APPROVAL_DECISION_ALLOW_ONCE {
		t.Fatalf("approval events: %v", resolved)
	}
	completed := seen[len(seen)-1].GetTurnCompleted()
	if completed.GetOutcome() != odysseyv1.TurnOutcome_TURN_OUTCOME_COMPLETED {
		t.Fatalf("turn ended %v: %s", completed.GetOutcome(), completed.GetError())
	}
	if !strings.Contains(completed.GetResponse(), "approval flow") {
		t.Fatalf("unexpected response %q", completed.GetResponse())
	}

	// A full replay from the start is the same events, in the same order.
	replay, err := client.Subscribe(ctx, session.GetId(), 0)
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(replay.All())
	defer stop()
	for i, want := range seen {
		got, err, _ := next()
		if err != nil {
			t.Fatalf("replay event %d: %v", i+1, err)
		}
		if got.GetId() != want.GetId() {
			t.Fatalf("replay event %d is %s, live was %s", i+1, got.GetId(), want.GetId())
		}
	}
	status, err := client.ExecutionStatus(ctx, turn.ExecutionID)
	if err != nil || status.GetLastSequence() != seen[len(seen)-1].GetSequence() {
		t.Fatalf("execution status %v, %v", status, err)
	}
}

// A server on its home folder keeps sessions in files: no replica id, no replicas.
func TestServerInfoNamesTheStore(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	info, err := client.ServerInfo(ctx)
	if err != nil {
		t.Fatalf("server info: %v", err)
	}
	store := info.GetStore()
	if store.GetKind() != "files" || store.GetReplicaId() != "" || len(store.GetReplicas()) != 0 {
		t.Fatalf("store = %v, want files with no replica", store)
	}
}

func TestUnknownSessionIsNotFound(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	missing := "0195a3c4-7b1e-7000-8000-000000000000"
	_, err = client.GetSession(ctx, missing)
	var e *odyssey.Error
	if !errors.As(err, &e) || e.Code != codes.NotFound || !strings.Contains(e.Message, missing) {
		t.Fatalf("GetSession(unknown) = %v, want NOT_FOUND naming the id", err)
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("status.Code reads %v through *Error", status.Code(err))
	}
	stream, err := client.Subscribe(ctx, missing, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range stream.All() {
		if odyssey.Code(err) != codes.NotFound {
			t.Fatalf("Subscribe(unknown) yields %v, want NOT_FOUND", err)
		}
	}
	if _, err := client.Submit(ctx, missing, "hello"); odyssey.Code(err) != codes.NotFound {
		t.Fatalf("Submit(unknown) = %v, want NOT_FOUND", err)
	}
	if _, err := client.GetSession(ctx, "not-a-session-id"); odyssey.Code(err) != codes.InvalidArgument {
		t.Fatalf("GetSession(malformed) = %v, want INVALID_ARGUMENT", err)
	}

	anonymous, err := odyssey.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err := anonymous.ServerInfo(ctx); odyssey.Code(err) != codes.Unauthenticated {
		t.Fatalf("ServerInfo without a token = %v, want UNAUTHENTICATED", err)
	}
}
