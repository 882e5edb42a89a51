package odyssey_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc/codes"
)

// An MCP server's request for input (bundles/mcp-input, trip.py asks during its tool
// call) waits on the approvals surface: a bad answer is refused naming the field, a good
// one reaches the server, and the turn's events record both ends.
func TestAServersRequestForInputIsAnsweredThroughTheSDK(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	must(client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "mcp-input"), odyssey.BuildOptions{}))
	session := must(client.CreateSession(ctx, "mcp-input"))
	running := must(client.Submit(ctx, session.GetId(), "Plan a trip"))
	waitForApproval(ctx, t, client, session.GetId(), running)

	pending := must(odyssey.Collect(client.ListApprovals(ctx, session.GetId())))
	asked := pending[0]
	if !odyssey.IsInput(asked) || asked.GetMessage() != "Where to, and for how long?" ||
		asked.GetTool() != "mcp__trip__plan" {
		t.Fatalf("the request: %v", asked)
	}
	if _, ok := asked.GetRequestedSchema().GetFields()["properties"].GetStructValue().GetFields()["days"]; !ok {
		t.Fatalf("the schema: %v", asked.GetRequestedSchema())
	}

	_, err = client.Answer(ctx, asked.GetRequestId(), map[string]any{"city": "Lisbon", "days": 90})
	var refused *odyssey.Error
	if !errors.As(err, &refused) || refused.Code != codes.InvalidArgument ||
		len(refused.FieldViolations) != 1 || refused.FieldViolations[0].Field != "answer.days" {
		t.Fatalf("an answer outside the schema: %v", err)
	}
	if _, err := client.Answer(ctx, asked.GetRequestId(), map[string]any{"city": "Lisbon", "days": 4}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	status := waitForEnd(ctx, t, client, running)
	if status.GetState() != odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED {
		t.Fatalf("the turn: %v", status)
	}

	stream := must(client.Subscribe(ctx, session.GetId(), 0))
	defer stream.Close()
	var requested, answered bool
	for event, err := range stream.All() {
		if err != nil {
			t.Fatal(err)
		}
		if r := event.GetHumanInputRequested(); r != nil {
			requested = r.GetRequestId() == asked.GetRequestId() && r.GetServer() == "trip"
		}
		if a := event.GetHumanInputAnswered(); a != nil {
			answered = a.GetAction() == odysseyv1.HumanInputAction_HUMAN_INPUT_ACTION_ACCEPT &&
				a.GetAnswer().GetFields()["city"].GetStringValue() == "Lisbon"
		}
		if f := event.GetToolCallFinished(); f != nil && !strings.Contains(f.GetResult(), "trip to Lisbon for 4 days") {
			t.Fatalf("the tool's result: %v", f)
		}
		if event.GetTurnCompleted() != nil {
			break
		}
	}
	if !requested || !answered {
		t.Fatalf("events: requested %v, answered %v", requested, answered)
	}
}
