package odyssey_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
)

const testToken = "go-sdk-test-token"

// repoRoot is the repository root, two folders above this file.
func repoRoot(t testing.TB) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// startServer starts a real odysseyd ($ODYSSEYD, else target/debug/odysseyd) on a free
// loopback port with a temporary home, and returns its address. It stops with the test.
func startServer(t *testing.T) string {
	t.Helper()
	return startServerWith(t, nil)
}

// startServerWith is startServer with further flags (e.g. TLS), checked for SERVING by a
// client dialed with dial.
func startServerWith(t testing.TB, flags []string, dial ...odyssey.Option) string {
	t.Helper()
	home := serverHome(t)
	addr, stop := runServer(t, home, "127.0.0.1:0", flags, dial...)
	t.Cleanup(stop)
	return addr
}

// serverHome is a new home folder for odysseyd, removed when the test ends. Not under the
// test's private temp folder: sandboxed commands run as another user, who must be able to
// reach the home's sandbox cells.
func serverHome(t testing.TB) string {
	t.Helper()
	home, err := os.MkdirTemp("", "odyssey-go-sdk-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	return home
}

// runServer starts odysseyd on listen with home and flags, waits until a client dialed
// with dial sees it SERVING, and returns its address and a function that stops it (a
// second server on the same home and address is the first one restarted).
func runServer(t testing.TB, home, listen string, flags []string, dial ...odyssey.Option) (string, func()) {
	t.Helper()
	binary := os.Getenv("ODYSSEYD")
	if binary == "" {
		binary = filepath.Join(repoRoot(t), "target", "debug", "odysseyd")
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("no odysseyd at %s (run `cargo build` or set ODYSSEYD): %v", binary, err)
	}
	args := append([]string{
		"--listen", listen,
		"--home", home,
		"--log-format", "json",
		"--heartbeat-seconds", "1",
		"--auth-token", testToken,
	}, flags...)
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start odysseyd: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(stop)

	// The server binds port 0 and logs its address in `odysseyd serving`.
	addresses := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for scanner.Scan() {
			var record struct {
				Fields struct {
					Message string `json:"message"`
					Addr    string `json:"addr"`
				} `json:"fields"`
			}
			if json.Unmarshal(scanner.Bytes(), &record) == nil && record.Fields.Message == "odysseyd serving" {
				addresses <- record.Fields.Addr
			}
			if testing.Verbose() {
				t.Log(scanner.Text())
			}
		}
	}()
	select {
	case addr := <-addresses:
		client, err := odyssey.Dial(addr, dial...)
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := client.WaitUntilServing(ctx); err != nil {
			t.Fatalf("odysseyd not serving: %v", err)
		}
		return addr, stop
	case <-time.After(60 * time.Second):
		t.Fatal("odysseyd did not start within 60 s")
		return "", stop
	}
}
