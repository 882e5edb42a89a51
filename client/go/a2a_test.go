package odyssey_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	a2av1 "github.com/odyssey-ai/odyssey/client/go/gen/lf/a2a/v1"
	"google.golang.org/grpc/codes"
)

// untilInputRequired collects a task's updates up to its input-required status update.
func untilInputRequired(t *testing.T, updates func(func(odyssey.TaskUpdate, error) bool)) []odyssey.TaskUpdate {
	t.Helper()
	var seen []odyssey.TaskUpdate
	for update, err := range updates {
		if err != nil {
			t.Fatalf("update %d: %v", len(seen)+1, err)
		}
		seen = append(seen, update)
		if update.Response.GetStatusUpdate().GetStatus().GetState() == a2av1.TaskState_TASK_STATE_INPUT_REQUIRED {
			break
		}
	}
	return seen
}

func sequences(updates []odyssey.TaskUpdate) []uint64 {
	var out []uint64
	for _, u := range updates {
		if u.Sequence != 0 {
			out = append(out, u.Sequence)
		}
	}
	return out
}

// The SDK's A2A client against a real server: the demo agent's extended card, a task
// that waits for an approval answered with a decision, its stream resumed from a sequence
// number with nothing missed and nothing twice, and A2A's errors.
func TestA2ACardTaskDecisionAndResumedStream(t *testing.T) {
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
	a2a := client.A2A()

	card, err := a2a.AgentCard(ctx, "demo", "guide")
	if err != nil {
		t.Fatalf("card: %v", err)
	}
	var details *a2av1.AgentExtension
	for _, e := range card.GetCapabilities().GetExtensions() {
		if e.GetUri() == odyssey.DetailsExtension {
			details = e
		}
	}
	if card.GetName() != "guide" || details == nil {
		t.Fatalf("the extended card with its details: %v", card)
	}
	asked := details.GetParams().GetFields()["permissions"].GetStructValue().GetFields()["ask"].GetListValue().AsSlice()
	if !slices.Contains(asked, any("Bash")) {
		t.Fatalf("Bash asks first: %v", asked)
	}

	task, err := a2a.Send(ctx, "demo.guide", "", "Give me a tour")
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if task.GetStatus().GetState() != a2av1.TaskState_TASK_STATE_INPUT_REQUIRED {
		t.Fatalf("input-required, not %v", task.GetStatus().GetState())
	}

	whole := untilInputRequired(t, a2a.Subscribe(ctx, task.GetId(), 0))
	if whole[0].Response.GetTask() == nil {
		t.Fatalf("the task first: %v", whole[0])
	}
	all := sequences(whole)
	handled := all[2]
	resumed := sequences(untilInputRequired(t, a2a.Subscribe(ctx, task.GetId(), handled)))
	if !slices.Equal(resumed, all[3:]) {
		t.Fatalf("resumed after %d: %v, want %v", handled, resumed, all[3:])
	}

	decided, err := a2a.Decide(ctx, task, "allow_once", "")
	if err != nil {
		t.Fatalf("decide: %v", err)
	}
	if decided.GetStatus().GetState() != a2av1.TaskState_TASK_STATE_COMPLETED ||
		!strings.Contains(odyssey.AnswerText(decided), "That was the approval flow") {
		t.Fatalf("completed with the answer: %v", decided)
	}
	got, err := a2a.Get(ctx, task.GetId(), 1)
	if err != nil || got.GetId() != task.GetId() || len(got.GetHistory()) != 1 {
		t.Fatalf("get: %v, %v", got, err)
	}
	for _, err := range a2a.Subscribe(ctx, task.GetId(), 0) {
		var e *odyssey.Error
		if !errors.As(err, &e) || e.Code != codes.FailedPrecondition {
			t.Fatalf("an ended task cannot be followed: %v", err)
		}
		break
	}

	var streamed []odyssey.TaskUpdate
	for update, err := range a2a.Stream(ctx, "", task.GetContextId(), "Anything else?") {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		streamed = append(streamed, update)
	}
	last := streamed[len(streamed)-1].Response.GetStatusUpdate().GetStatus().GetState()
	if seq := sequences(streamed); last != a2av1.TaskState_TASK_STATE_COMPLETED || seq[0] <= all[len(all)-1] || !slices.IsSorted(seq) {
		t.Fatalf("a completed stream after the first task: %v %v", last, seq)
	}

	_, err = a2a.Get(ctx, task.GetContextId()+".00000000-0000-0000-0000-000000000000", -1)
	var e *odyssey.Error
	if !errors.As(err, &e) || e.Code != codes.NotFound || e.Reason != "TASK_NOT_FOUND" {
		t.Fatalf("an unknown task is TASK_NOT_FOUND: %v", err)
	}
}
