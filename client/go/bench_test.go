package odyssey_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
)

// Events per second one subscriber receives: the SDK's EventStream beside the bare
// generated stub, replaying the same stored events from one real odysseyd.
//
//	ODYSSEYD=... go test -run '^$' -bench Subscribe     (ODYSSEY_BENCH_TURNS: 1500)
func BenchmarkSubscribe(b *testing.B) {
	addr := startServerWith(b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client, _ := demoSession(ctx, b, addr)
	session := must(client.CreateSession(ctx, "demo", odyssey.WithApprovalPolicy(odyssey.Never)))
	turns := 1500
	if n, err := strconv.Atoi(os.Getenv("ODYSSEY_BENCH_TURNS")); err == nil && n > 0 {
		turns = n
	}
	for range turns {
		must(client.Run(ctx, session.GetId(), "Give me a tour"))
	}
	last := must(client.GetSession(ctx, session.GetId())).GetLastSequence()

	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			ctx, cancel := context.WithCancel(ctx)
			stream := must(client.Sessions.SubscribeSession(ctx, &odysseyv1.SubscribeSessionRequest{SessionId: session.GetId()}))
			for {
				item := must(stream.Recv())
				if item.GetEvent().GetSequence() == last {
					break
				}
			}
			cancel()
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("EventStream", func(b *testing.B) {
		for b.Loop() {
			stream := must(client.Subscribe(ctx, session.GetId(), 0))
			for event, err := range stream.All() {
				if err != nil {
					b.Fatal(err)
				}
				if event.GetSequence() == last {
					break
				}
			}
		}
		b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
}
