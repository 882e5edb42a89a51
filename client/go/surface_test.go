package odyssey_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	odysseyv1 "github.com/odyssey-ai/odyssey/client/go/gen/odyssey/v1"
	"google.golang.org/grpc/codes"
)

// must returns value, or fails the test (by a panic, which the test reports with its
// stack) when err is set.
func must[T any](value T, err error) T {
	if err != nil {
		panic(err)
	}
	return value
}

// Every bundle RPC through the SDK: scaffold, build, inspect, list page by page,
// export, import, delete; push and pull refused without a registry, their status decoded.
func TestBundleCalls(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, _ := demoSession(ctx, t, addr)

	scaffold := must(client.InitBundle(ctx, "scaffold"))
	if _, err := gzip.NewReader(bytes.NewReader(scaffold)); err != nil {
		t.Fatalf("the scaffold is not gzip: %v", err)
	}
	if built := must(client.BuildBundle(ctx, scaffold, odyssey.BuildOptions{})); built.GetRef().GetName() != "scaffold" {
		t.Fatalf("built %v", built)
	}
	inspected := must(client.InspectBundle(ctx, "demo"))
	if len(inspected.GetAgents()) != 1 || inspected.GetAgents()[0].GetId() != "guide" {
		t.Fatalf("inspected %v", inspected)
	}
	// One bundle a page: the iterator follows every page.
	var names []string
	for bundle, err := range client.ListBundles(ctx, odyssey.ListOptions{PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, bundle.GetRef().GetName())
	}
	if !slices.Contains(names, "demo") || !slices.Contains(names, "scaffold") {
		t.Fatalf("listed %v", names)
	}
	if agents := must(client.ListAgents(ctx, "demo")); len(agents) != 1 {
		t.Fatalf("agents %v", agents)
	}
	if models := must(client.ListModels(ctx, "demo")); len(models) == 0 {
		t.Fatal("no models")
	}
	if skills := must(client.ListSkills(ctx, "demo")); len(skills) != 1 || skills[0].GetName() != "tour" {
		t.Fatalf("skills %v", skills)
	}
	bundle, archive, err := client.ExportBundle(ctx, "demo")
	if err != nil || bundle.GetRef().GetName() != "demo" || len(archive) == 0 {
		t.Fatalf("export: %v, %d bytes, %v", bundle, len(archive), err)
	}
	imported := must(client.ImportBundle(ctx, archive, odyssey.BuildOptions{Namespace: "copies"}))
	if imported.GetRef().GetNamespace() != "copies" || imported.GetRef().GetDigest() != bundle.GetRef().GetDigest() {
		t.Fatalf("imported %v", imported)
	}
	if removed := must(client.DeleteBundle(ctx, "scaffold")); removed.GetRef().GetName() != "scaffold" {
		t.Fatalf("removed %v", removed)
	}
	short, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if _, err := client.PushBundle(short, "demo", "127.0.0.1:1/demo:0.1.0"); asError(t, err).Reason == "" {
		t.Fatalf("push without a registry: %+v", err)
	}
	if _, err := client.PullBundle(short, "127.0.0.1:1/demo:0.1.0", odyssey.BuildOptions{}); asError(t, err).Reason == "" {
		t.Fatalf("pull without a registry: %+v", err)
	}
}

// Sessions with their options, turns with theirs, commands, the cassette export, and
// the raw stubs carrying the token by themselves.
func TestSessionTurnAndCommandCalls(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, other := demoSession(ctx, t, addr)

	session := must(client.CreateSession(ctx, "demo",
		odyssey.WithAgent("guide"),
		odyssey.WithSandboxMode(odyssey.ReadOnly),
		odyssey.WithApprovalPolicy(odyssey.Never),
		odyssey.WithMetadata(map[string]string{"team": "sdk"}),
		odyssey.WithTokenBudget(1_000_000),
	))
	if session.GetSandboxMode() != odyssey.ReadOnly || session.GetApprovalPolicy() != odyssey.Never ||
		session.GetTokenBudget() != 1_000_000 || session.GetMetadata()["team"] != "sdk" {
		t.Fatalf("session %v", session)
	}
	ids := must(odyssey.Collect(client.ListSessions(ctx, odyssey.ListOptions{Bundle: "demo", PageSize: 1})))
	if len(ids) < 2 {
		t.Fatalf("listed %d sessions", len(ids))
	}

	// Approval policy never: the Bash call that would ask is denied, and the turn ends.
	status := must(client.Run(ctx, session.GetId(), "Give me a tour", odyssey.WithMetadata(map[string]string{"ticket": "42"})))
	if status.GetState() != odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED {
		t.Fatalf("run: %v", status)
	}
	submitted := must(client.Submit(ctx, session.GetId(), "Give me a tour", odyssey.WithCwd(""), odyssey.WithMetadata(map[string]string{"ticket": "43"})))
	must(client.Cancel(ctx, submitted))

	result := must(client.RunCommand(ctx, other.GetId(), odyssey.Command{Argv: []string{"echo", "hello"}}))
	if result.GetExitCode() != 0 || result.GetStdout() != "hello\n" {
		t.Fatalf("command %v", result)
	}
	var kinds []string
	var output strings.Builder
	for item, err := range client.StreamCommand(ctx, other.GetId(), odyssey.Command{Line: "echo streamed"}) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case item.GetBegin() != nil:
			kinds = append(kinds, "begin")
		case item.GetOutput() != nil:
			kinds = append(kinds, "output")
			output.WriteString(item.GetOutput().GetText())
		case item.GetEnd() != nil:
			kinds = append(kinds, "end")
		}
	}
	if len(kinds) < 2 || kinds[0] != "begin" || kinds[len(kinds)-1] != "end" || !strings.Contains(output.String(), "streamed") {
		t.Fatalf("streamed %v %q", kinds, output.String())
	}
	if _, err := client.ExportCassette(ctx, session.GetId()); odyssey.Code(err) != codes.FailedPrecondition {
		t.Fatalf("cassette: %v", err)
	}

	// The raw stubs carry the token too.
	if _, err := client.Sessions.GetSession(ctx, &odysseyv1.GetSessionRequest{SessionId: other.GetId()}); err != nil {
		t.Fatalf("raw stub: %v", err)
	}
	if err := client.DeleteSession(ctx, other.GetId()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetSession(ctx, other.GetId()); asError(t, err).Reason != "SESSION_NOT_FOUND" {
		t.Fatalf("deleted session: %v", err)
	}
}

// A Run whose context expires while the turn waits for an approval nobody gives.
func TestDeadlineThatExpires(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, session := demoSession(ctx, t, addr)

	short, stop := context.WithTimeout(ctx, time.Second)
	defer stop()
	_, err := client.Run(short, session.GetId(), "Give me a tour")
	if e := asError(t, err); e.CodeName() != "DEADLINE_EXCEEDED" {
		t.Fatalf("run past its deadline: %v", err)
	}
	// The turn runs on; deny its request so it ends.
	for {
		pending := must(odyssey.Collect(client.ListApprovals(ctx, session.GetId())))
		if len(pending) > 0 {
			if err := client.Deny(ctx, pending[0].GetRequestId(), "not now"); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A stream closed from another goroutine while its loop waits ends the loop; so does
// cancelling its context.
func TestCancelledStream(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, session := demoSession(ctx, t, addr)

	stream := must(client.Subscribe(ctx, session.GetId(), 0))
	time.AfterFunc(500*time.Millisecond, stream.Close)
	for event, err := range stream.All() {
		t.Fatalf("a quiet session yielded %v, %v", event, err)
	}

	cancelled, cancelStream := context.WithCancel(ctx)
	stream = must(client.Subscribe(cancelled, session.GetId(), 0))
	time.AfterFunc(500*time.Millisecond, cancelStream)
	for event, err := range stream.All() {
		if event != nil || odyssey.Code(err) != codes.Canceled {
			t.Fatalf("a cancelled stream yielded %v, %v", event, err)
		}
	}
}

// Fork, rewind and turn changes, with a file written by a session command.
func TestForkRewindAndTurnChanges(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, _ := demoSession(ctx, t, addr)
	session := must(client.CreateSession(ctx, "demo",
		odyssey.WithSandboxMode(odyssey.WorkspaceWrite),
		odyssey.WithApprovalPolicy(odyssey.Never),
	))
	id := session.GetId()
	shell := func(id, line string) string {
		t.Helper()
		result := must(client.RunCommand(ctx, id, odyssey.Command{Argv: []string{"sh", "-c", line}}))
		if result.GetExitCode() != 0 {
			t.Fatalf("%s: %v", line, result)
		}
		return result.GetStdout()
	}
	shell(id, "echo one > notes.txt")
	if status := must(client.Run(ctx, id, "Give me a tour")); status.GetState() != odysseyv1.ExecutionState_EXECUTION_STATE_COMPLETED {
		t.Fatalf("run: %v", status)
	}

	changes := must(client.TurnChanges(ctx, id, 1))
	if len(changes.GetChanges()) != 1 || changes.GetChanges()[0].GetPath() != "notes.txt" ||
		changes.GetChanges()[0].GetChange() != odysseyv1.FileChangeKind_FILE_CHANGE_KIND_ADDED ||
		!strings.Contains(changes.GetChanges()[0].GetUnifiedDiff(), "+one") {
		t.Fatalf("changes %v", changes)
	}

	fork := must(client.ForkSession(ctx, id, 1))
	if fork.GetForkedFrom() != id || fork.GetForkedAt().GetTurn() != 1 {
		t.Fatalf("fork %v", fork)
	}
	if got := shell(fork.GetId(), "cat notes.txt"); got != "one\n" {
		t.Fatalf("fork's notes.txt %q", got)
	}

	shell(id, "echo two > notes.txt")
	rewound := must(client.RewindSession(ctx, id, 1))
	if rewound.GetEvent().GetSessionRewound().GetToTurn() != 1 {
		t.Fatalf("rewound %v", rewound)
	}
	if got := shell(id, "cat notes.txt"); got != "one\n" {
		t.Fatalf("rewound notes.txt %q", got)
	}
	if _, err := client.ForkSessionAtSequence(ctx, id, 1); odyssey.Code(err) != codes.InvalidArgument {
		t.Fatalf("fork at a sequence that is no turn's end: %v", err)
	}
}
