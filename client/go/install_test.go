package odyssey_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// consumer is a program of another module that uses the SDK.
const consumer = `package main

import (
	"context"
	"fmt"
	"log"
	"os"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
)

func main() {
	client, err := odyssey.Dial(os.Args[1], odyssey.WithToken(os.Args[2]))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	info, err := client.ServerInfo(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", info.GetVersion())
}
`

// The route docs/clients/go.md gives, performed as written (testdata/install.sh, which
// scripts/check-docs finds verbatim in the page): a new module takes the SDK from a
// checkout, builds, and talks to a real server.
func TestInstallFromCheckoutAsDocumented(t *testing.T) {
	goBinary, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command: %v", err)
	}
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	project := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		command := exec.CommandContext(ctx, name, args...)
		command.Dir = project
		command.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "ODYSSEY="+repoRoot(t))
		out, err := command.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(goBinary, "mod", "init", "example.com/consumer")
	if err := os.WriteFile(filepath.Join(project, "main.go"), []byte(consumer), 0o644); err != nil {
		t.Fatal(err)
	}
	run("bash", "-euo", "pipefail", filepath.Join(repoRoot(t), "client", "go", "testdata", "install.sh"))
	out := run(goBinary, "run", ".", addr, testToken)
	if !strings.HasPrefix(out, "version ") {
		t.Fatalf("the program printed %q", out)
	}
}
