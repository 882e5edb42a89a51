package odyssey_test

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// A session's event stream outlives the server it was opened on: the server stops (the
// stream's connection drops), starts again on the same address and home, and the stream
// resubscribes by itself after its last sequence, counted once in Reconnects, then
// carries the events of a turn run after the restart.
func TestStreamResubscribesOnceThroughARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	home := serverHome(t)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := probe.Addr().String()
	_ = probe.Close()

	addr, stop := runServer(t, home, address, nil)
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	must(client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "demo"), odyssey.BuildOptions{}))
	session := must(client.CreateSession(ctx, "demo", odyssey.WithApprovalPolicy(odyssey.Never)))
	before := must(client.Run(ctx, session.GetId(), "Give me a tour"))

	stream := must(client.Subscribe(ctx, session.GetId(), before.GetLastSequence()))
	defer stream.Close()
	events := make(chan *odysseyv1.SessionEvent, 64)
	failed := make(chan error, 1)
	go func() {
		defer close(events)
		for event, err := range stream.All() {
			if err != nil {
				failed <- err
				return
			}
			events <- event
			if event.GetTurnCompleted() != nil {
				return
			}
		}
	}()

	stop()
	_, stop = runServer(t, home, address, nil)
	defer stop()
	// A client of its own: Run is a write, never retried, and the old connection may
	// still be waiting out its reconnect backoff.
	fresh, err := odyssey.Dial(address, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	after := must(fresh.Run(ctx, session.GetId(), "Give me a tour"))

	var seen []*odysseyv1.SessionEvent
	for event := range events {
		seen = append(seen, event)
	}
	select {
	case err := <-failed:
		t.Fatalf("the stream failed: %v", err)
	default:
	}
	if stream.Reconnects() != 1 {
		t.Fatalf("%d reconnects, want 1", stream.Reconnects())
	}
	if len(seen) == 0 {
		t.Fatal("no events after the restart")
	}
	if seen[0].GetSequence() != before.GetLastSequence()+1 || seen[len(seen)-1].GetSequence() != after.GetLastSequence() {
		t.Fatalf("events %d..%d after the restart, want %d..%d", seen[0].GetSequence(), seen[len(seen)-1].GetSequence(), before.GetLastSequence()+1, after.GetLastSequence())
	}
	for i, event := range seen {
		if event.GetSequence() != seen[0].GetSequence()+uint64(i) || event.GetTurnId() != after.GetExecutionId() {
			t.Fatalf("event %d: sequence %d of turn %s", i, event.GetSequence(), event.GetTurnId())
		}
	}
}
