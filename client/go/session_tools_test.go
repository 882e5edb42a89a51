package odyssey_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	odyssey "github.com/odyssey-ai/odyssey/client/go"
)

// An agent's MCP servers as InspectBundle and ListAgents show them, and the tools of a
// session as ListSessionTools lists them: the server starts the agent's stdio MCP server
// (bundles/mcp-tools, clock.py) in the session's sandbox cell.
func TestAgentsShowTheirMcpServersAndSessionsListTheirTools(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "mcp-tools"), odyssey.BuildOptions{}); err != nil {
		t.Fatalf("install: %v", err)
	}

	inspected, err := client.InspectBundle(ctx, "mcp-tools")
	if err != nil {
		t.Fatalf("inspect: %v", err)
	}
	var servers []string
	for _, s := range inspected.GetAgents()[0].GetMcpServers() {
		servers = append(servers, s.GetName()+"/"+s.GetKind())
		if s.GetOperator() {
			t.Fatalf("%s is the bundle's, not the operator's", s.GetName())
		}
	}
	if strings.Join(servers, ",") != "clock/stdio,missing/stdio" {
		t.Fatalf("servers %v", servers)
	}
	agents, err := client.ListAgents(ctx, "mcp-tools")
	if err != nil {
		t.Fatalf("list agents: %v", err)
	}
	if n := len(agents[0].GetMcpServers()); n != 2 {
		t.Fatalf("ListAgents shows %d servers", n)
	}

	session, err := client.CreateSession(ctx, "mcp-tools")
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	listed, err := client.ListSessionTools(ctx, session.GetId())
	if err != nil {
		t.Fatalf("list session tools: %v", err)
	}
	var names []string
	for _, tool := range listed.GetTools() {
		names = append(names, tool.GetName())
	}
	// LS is denied outright, so it is not offered; sorted by name.
	if strings.Join(names, ",") != "Read,mcp__clock__now" {
		t.Fatalf("tools %v", names)
	}
	read, now := listed.GetTools()[0], listed.GetTools()[1]
	if read.GetSource() != "builtin" || read.GetMcpServer() != "" {
		t.Fatalf("Read: %v", read)
	}
	if now.GetSource() != "mcp" || now.GetMcpServer() != "clock" || !strings.Contains(now.GetInputSchemaJson(), `"type":"object"`) {
		t.Fatalf("now: %v", now)
	}
	failed := listed.GetMcpServerErrors()
	if len(failed) != 1 || failed[0].GetServer() != "missing" || failed[0].GetError() == "" {
		t.Fatalf("server errors %v", failed)
	}
}

// An agent's remote A2A agents as InspectBundle and ListAgents show them: the bundle's
// with its URL, the operator's (not configured on this server) without one.
func TestAgentsShowTheirRemoteA2aAgents(t *testing.T) {
	addr := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := odyssey.Dial(addr, odyssey.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.InstallBundle(ctx, filepath.Join(repoRoot(t), "bundles", "a2a-delegate"), odyssey.BuildOptions{}); err != nil {
		t.Fatalf("install: %v", err)
	}
	agents, err := client.ListAgents(ctx, "a2a-delegate")
	if err != nil {
		t.Fatalf("list agents: %v", err)
	}
	var remotes []string
	for _, a := range agents[0].GetA2AAgents() {
		remotes = append(remotes, fmt.Sprintf("%s|%s|%v", a.GetName(), a.GetUrl(), a.GetOperator()))
	}
	want := "helper|https://agents.example.com/helper|false,research||true"
	if strings.Join(remotes, ",") != want {
		t.Fatalf("remote agents %v", remotes)
	}
}
