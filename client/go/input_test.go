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

// SendInput while the demo's turn waits for its Bash approval: steered input joins that
// turn, interrupt stops it and runs the input next; an idle session starts a turn; a bad
// mode is refused naming the field.
func TestSendInputSteersAndInterruptsAWaitingTurn(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	must(client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "demo"), odyssey.BuildOptions{}))
	session := must(client.CreateSession(ctx, "demo"))

	running := must(client.Submit(ctx, session.GetId(), "Give me a tour"))
	waitForApproval(ctx, t, client, session.GetId(), running)

	steered := must(client.SendInput(ctx, session.GetId(), "Keep it short", odysseyv1.InputMode_INPUT_MODE_STEER))
	if steered.GetDisposition() != odysseyv1.InputDisposition_INPUT_DISPOSITION_STEERED || steered.GetExecutionId() != running {
		t.Fatalf("steer: %v", steered)
	}
	stopped := must(client.SendInput(ctx, session.GetId(), "Stop the tour", odysseyv1.InputMode_INPUT_MODE_INTERRUPT))
	if stopped.GetDisposition() != odysseyv1.InputDisposition_INPUT_DISPOSITION_INTERRUPTED ||
		stopped.GetInterruptedExecutionId() != running || stopped.GetExecutionId() == running {
		t.Fatalf("interrupt: %v", stopped)
	}
	old := must(client.ExecutionStatus(ctx, running))
	if old.GetState() != odysseyv1.ExecutionState_EXECUTION_STATE_CANCELLED || !strings.Contains(old.GetError(), stopped.GetExecutionId()) {
		t.Fatalf("the interrupted turn: %v", old)
	}
	next := waitForEnd(ctx, t, client, stopped.GetExecutionId())
	if next.GetState() != odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED {
		t.Fatalf("the new turn: %v", next)
	}

	idle := must(client.SendInput(ctx, session.GetId(), "Give me a tour", odysseyv1.InputMode_INPUT_MODE_QUEUE))
	if idle.GetDisposition() != odysseyv1.InputDisposition_INPUT_DISPOSITION_STARTED {
		t.Fatalf("idle: %v", idle)
	}
	must(client.Cancel(ctx, idle.GetExecutionId()))

	_, err = client.SendInput(ctx, session.GetId(), "hi", odysseyv1.InputMode_INPUT_MODE_UNSPECIFIED)
	var refused *odyssey.Error
	if !errors.As(err, &refused) || refused.Code != codes.InvalidArgument ||
		len(refused.FieldViolations) != 1 || refused.FieldViolations[0].Field != "mode" {
		t.Fatalf("unspecified mode: %v", err)
	}
}

func waitForApproval(ctx context.Context, t *testing.T, client *odyssey.Client, sessionID, executionID string) {
	t.Helper()
	for range 1200 {
		for approval, err := range client.ListApprovals(ctx, sessionID) {
			if err != nil {
				t.Fatal(err)
			}
			if approval.GetExecutionId() == executionID {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("turn %s never asked", executionID)
}

func waitForEnd(ctx context.Context, t *testing.T, client *odyssey.Client, executionID string) *odysseyv1.ExecutionStatus {
	t.Helper()
	for range 1200 {
		status := must(client.ExecutionStatus(ctx, executionID))
		switch status.GetState() {
		case odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED,
			odysseyv1.ExecutionState_EXECUTION_STATE_FAILED,
			odysseyv1.ExecutionState_EXECUTION_STATE_CANCELLED:
			return status
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("turn %s never ended", executionID)
	return nil
}
