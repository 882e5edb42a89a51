// Command tour installs the demo bundle, runs its tour turn and approves the command it
// asks to run:
//
//	cd client/go && go run ./examples/tour    # with odysseyd running
//
// ODYSSEY_ADDRESS (default 127.0.0.1:8472) and ODYSSEY_AUTH_TOKEN say where and how to
// connect.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
)

func main() {
	address := os.Getenv("ODYSSEY_ADDRESS")
	if address == "" {
		address = "127.0.0.1:8472"
	}
	_, file, _, _ := runtime.Caller(0)
	demo := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "bundles", "demo")

	ctx := context.Background()
	client, err := odyssey.Dial(address, odyssey.WithToken(os.Getenv("ODYSSEY_AUTH_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	if _, err := client.InstallBundle(ctx, demo, odyssey.BuildOptions{}); err != nil {
		log.Fatal(err)
	}
	session, err := client.CreateSession(ctx, "demo")
	if err != nil {
		log.Fatal(err)
	}
	turn, err := client.StreamTurn(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		log.Fatal(err)
	}
	for event, err := range turn.All() {
		if err != nil {
			log.Fatalf("stream: %v (resume with client.Subscribe(ctx, id, %d))", err, turn.LastSequence())
		}
		if d := event.GetAgentMessageDelta(); d != nil {
			fmt.Print(d.GetDelta())
		}
		if p := event.GetPermissionRequested(); p != nil {
			fmt.Printf("\n[approving: %s]\n", p.GetDisplay())
			if err := client.Approve(ctx, p.GetRequestId(), odyssey.AllowOnce); err != nil {
				log.Fatal(err)
			}
		}
	}
	fmt.Printf("\n[turn %s ended at sequence %d]\n", turn.ExecutionID, turn.LastSequence())

	_, err = client.GetSession(ctx, "00000000-0000-0000-0000-000000000000")
	var failure *odyssey.Error
	if errors.As(err, &failure) {
		fmt.Printf("[an unknown session is %s, reason %s]\n", failure.CodeName(), failure.Reason)
	}
}
