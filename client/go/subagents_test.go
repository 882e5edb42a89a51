package odyssey_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// A sub-agent through the SDK: the delegate bundle's planner hands the writing to its
// coder, whose child session is listed under the planner's, and the planner's log holds
// the child's start and end.
func TestSubAgentRunsInAChildSessionListedUnderItsParent(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	if _, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "delegate"), odyssey.BuildOptions{}); err != nil {
		t.Fatalf("install: %v", err)
	}
	session, err := client.CreateSession(ctx, "delegate")
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	status, err := client.Run(ctx, session.GetId(), "Get the notes written")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if status.GetState() != odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED || !strings.Contains(status.GetResponse(), "hello from the coder") {
		t.Fatalf("turn ended %v: %q %s", status.GetState(), status.GetResponse(), status.GetError())
	}

	var children []*odysseyv1.Session
	for child, err := range client.ListSessions(ctx, odyssey.ListOptions{ParentSessionID: session.GetId()}) {
		if err != nil {
			t.Fatalf("list children: %v", err)
		}
		children = append(children, child)
	}
	if len(children) != 1 {
		t.Fatalf("children: %v", children)
	}
	child := children[0]
	if child.GetAgentId() != "coder" || child.GetParentSessionId() != session.GetId() || child.GetParentCallId() != "call_agent" {
		t.Fatalf("child: %v", child)
	}

	stream, err := client.Subscribe(ctx, session.GetId(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var started *odysseyv1.SubagentStarted
	var finished *odysseyv1.SubagentFinished
	for event, err := range stream.All() {
		if err != nil {
			t.Fatalf("events: %v", err)
		}
		if s := event.GetSubagentStarted(); s != nil {
			started = s
		}
		if f := event.GetSubagentFinished(); f != nil {
			finished = f
		}
		if event.GetSequence() == status.GetLastSequence() {
			break
		}
	}
	if started.GetChildSessionId() != child.GetId() || started.GetWorkspace() != "shared" {
		t.Fatalf("subagent_started: %v", started)
	}
	if finished.GetOutcome() != odysseyv1.TurnOutcome_TURN_OUTCOME_COMPLETED || finished.GetUsage().GetInputTokens() != 200 {
		t.Fatalf("subagent_finished: %v", finished)
	}
	info, err := client.ServerInfo(ctx)
	if err != nil || info.GetLimits().GetMaxSubagentDepth() != 3 {
		t.Fatalf("server info: %v, %v", info, err)
	}
}
