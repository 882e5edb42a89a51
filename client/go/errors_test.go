package odyssey_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc/codes"
)

// asError is err as an *odyssey.Error, or the test fails.
func asError(t *testing.T, err error) *odyssey.Error {
	t.Helper()
	var e *odyssey.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *odyssey.Error, got %T %v", err, err)
	}
	return e
}

// Every failed call returns an *odyssey.Error with the server's status decoded: the code
// and its name, the message, and the google.rpc details, from real refusals.
func TestErrorsCarryTheirDetails(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	missing := "00000000-0000-0000-0000-000000000000"
	_, err = client.GetSession(ctx, missing)
	e := asError(t, err)
	if e.Code != codes.NotFound || e.CodeName() != "NOT_FOUND" || e.Reason != "SESSION_NOT_FOUND" || e.Domain != "odyssey.ai" {
		t.Fatalf("unknown session: %+v", e)
	}
	if !strings.Contains(e.Message, missing) || len(e.FieldViolations) != 0 || e.RetryDelay != 0 {
		t.Fatalf("unknown session: %+v", e)
	}

	_, err = client.GetSession(ctx, "not-a-session-id")
	e = asError(t, err)
	if e.CodeName() != "INVALID_ARGUMENT" || e.Reason == "" || len(e.FieldViolations) != 1 || e.FieldViolations[0].Field != "session_id" {
		t.Fatalf("bad request: %+v", e)
	}
	if !strings.Contains(e.FieldViolations[0].Description, "not-a-session-id") {
		t.Fatalf("bad request: %+v", e)
	}

	if got := odyssey.CodeName(codes.Canceled); got != "CANCELLED" {
		t.Fatalf("CodeName(Canceled) = %s", got)
	}
}

// One worker and room for one queued turn: turns that wait on an approval fill both, and
// the next submit is refused with a RetryInfo delay.
func TestFullQueueSaysWhenToRetry(t *testing.T) {
	addr := startServerWith(t, []string{"--worker-count", "1", "--queue-capacity", "1"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, _ := demoSession(ctx, t, addr)
	var err error
	for range 6 {
		session, createErr := client.CreateSession(ctx, "demo")
		if createErr != nil {
			t.Fatal(createErr)
		}
		// The raw stub: Submit itself would wait the delay out and send it again.
		request := &odysseyv1.SubmitRequest{Input: &odysseyv1.TurnInput{SessionId: session.GetId(), Prompt: "Tour"}}
		if _, err = client.Executions.Submit(ctx, request); err != nil {
			err = odyssey.AsError(err)
			break
		}
	}
	e := asError(t, err)
	if e.Code != codes.ResourceExhausted || e.Reason != "QUEUE_FULL" || e.RetryDelay <= 0 {
		t.Fatalf("full queue: %+v", e)
	}
}

// The queue frees up while Submit waits the server's RetryInfo delay: the same submit then
// goes through, and the caller never sees QUEUE_FULL.
func TestSubmitRefusedForAFullQueueIsSentAgainAfterTheDelay(t *testing.T) {
	addr := startServerWith(t, []string{"--worker-count", "1", "--queue-capacity", "1"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, _ := demoSession(ctx, t, addr)
	var ids []string
	for range 3 {
		session, err := client.CreateSession(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, session.GetId())
	}
	first, err := client.Submit(ctx, ids[0], "Give me a tour")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Submit(ctx, ids[1], "Give me a tour"); err != nil {
		t.Fatal(err)
	}
	freed := time.AfterFunc(300*time.Millisecond, func() { _, _ = client.Cancel(ctx, first) })
	defer freed.Stop()
	started := time.Now()
	if _, err := client.Submit(ctx, ids[2], "Give me a tour"); err != nil {
		t.Fatalf("submit after the queue freed up: %v", err)
	}
	if time.Since(started) < 300*time.Millisecond {
		t.Fatalf("it did not wait for the queue")
	}
}
