package odyssey_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
	"google.golang.org/grpc/codes"
)

// TLS end to end: a real odysseyd serving a certificate from a test CA. A client that
// trusts the CA runs a turn with its token; one that does not, or speaks plaintext, fails
// with codes.Unavailable; the token is still required over TLS.
func TestTLS(t *testing.T) {
	pki := issuePKI(t, "odyssey test CA")
	addr := startServerWith(t,
		[]string{"--tls-cert", pki.certFile, "--tls-key", pki.keyFile},
		odyssey.WithCA(pki.caPEM))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	client, err := odyssey.Dial(addr, odyssey.WithCA(pki.caPEM), odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "demo"), odyssey.BuildOptions{}); err != nil {
		t.Fatalf("install over TLS: %v", err)
	}
	session, err := client.CreateSession(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := client.StreamTurn(ctx, session.GetId(), "Give me a tour")
	if err != nil {
		t.Fatal(err)
	}
	for event, err := range turn.All() {
		if err != nil {
			t.Fatalf("event stream over TLS: %v", err)
		}
		if p := event.GetPermissionRequested(); p != nil {
			if err := client.Deny(ctx, p.GetRequestId(), "not over TLS"); err != nil {
				t.Fatal(err)
			}
		}
	}
	status, err := client.ExecutionStatus(ctx, turn.ExecutionID)
	if err != nil || status.GetLastSequence() != turn.LastSequence() {
		t.Fatalf("execution status %v, %v", status, err)
	}

	anonymous, err := odyssey.Dial(addr, odyssey.WithCA(pki.caPEM))
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err := anonymous.ServerInfo(ctx); odyssey.Code(err) != codes.Unauthenticated {
		t.Fatalf("over TLS without the token: %v, want UNAUTHENTICATED", err)
	}

	stranger := issuePKI(t, "another CA")
	refused := map[string][]odyssey.Option{
		"another CA":       {odyssey.WithCA(stranger.caPEM)},
		"the system roots": {odyssey.WithTLS()},
	}
	for name, opts := range refused {
		c, err := odyssey.Dial(addr, append(opts, odyssey.WithToken(testToken))...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ServerInfo(ctx)
		_ = c.Close()
		if odyssey.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("trusting %s: %v, want UNAVAILABLE naming the certificate", name, err)
		}
	}

	plaintext, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer plaintext.Close()
	if _, err := plaintext.ServerInfo(ctx); odyssey.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext to a TLS port: %v, want UNAVAILABLE", err)
	}
}
