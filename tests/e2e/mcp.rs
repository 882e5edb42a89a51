//! MCP servers of bundles: what CreateSession refuses, naming the operator's setting;
//! real stdio servers (`@modelcontextprotocol/server-everything`, and a small server made
//! with the official TypeScript SDK that fails on purpose) run in the session's sandbox;
//! a remote streamable-HTTP server made with the Python `mcp` package; all called by
//! turns whose model is the loopback OpenAI wire server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use odyssey_api::v1 as pb;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use tonic::Code;

use odyssey_api::v1::approval_service_client::ApprovalServiceClient;

use crate::support::{Project, TestServer, error_reason, payload_kind};

mod elicit;
mod images;
mod tools;

/// A replay project declaring `servers` (YAML lines under `spec.mcp_servers`) and an
/// agent using `uses`.
fn with_servers(name: &str, servers: &str, uses: &str) -> Project {
    let project = Project::replay(name, &[]);
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  mcp_servers:\n{servers}  sandbox:\n    mode: workspace_write\n"
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: replay\n    name: main\n  mcp_servers: {uses}\n"),
    );
    project
}

async fn refusal(server: &TestServer, bundle: &str) -> tonic::Status {
    server
        .sessions()
        .create_session(pb::CreateSessionRequest {
            bundle_reference: bundle.into(),
            ..Default::default()
        })
        .await
        .expect_err("refused")
}

#[tokio::test]
async fn servers_and_urls_the_operator_has_not_allowed_are_refused_at_create_session() {
    let server = TestServer::start().await;
    let cases = [
        ("named", "    - name: github\n", "mcp.servers.github"),
        (
            "remote",
            "    - { name: docs, url: \"https://mcp.example.com/mcp\" }\n",
            "mcp.allowed_urls",
        ),
        (
            "hostenv",
            "    - { name: fs, command: [node, server.js], env: { TOKEN: ODYSSEY_MCP_TEST_SECRET } }\n",
            "sandbox.env_allow",
        ),
    ];
    for (name, servers, setting) in cases {
        server
            .install(&with_servers(
                name,
                servers,
                &format!("[{}]", servers_names(servers)),
            ))
            .await;
        let status = refusal(&server, name).await;
        assert_eq!(status.code(), Code::PermissionDenied, "{name}: {status:?}");
        assert!(
            status.message().contains(setting),
            "{name}: names {setting}: {}",
            status.message()
        );
        assert_eq!(
            error_reason(&status).as_deref(),
            Some("PERMISSION_DENIED"),
            "{name}"
        );
    }
    // An agent without servers is not concerned by its bundle's.
    server
        .install(&with_servers("unused", "    - name: github\n", "[]"))
        .await;
    server.create_session("unused").await;
}

fn servers_names(servers: &str) -> String {
    servers
        .lines()
        .filter_map(|line| {
            let rest = line.split("name: ").nth(1)?;
            Some(rest.split([',', ' ', '}']).next()?.to_owned())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const KEY: &str = "sk-test-loopback-key-mcp";

/// Where the test MCP servers are installed (`scripts/install-tools`), or
/// `ODYSSEY_TEST_NODE_MODULES`.
fn node_modules() -> PathBuf {
    let dir = std::env::var_os("ODYSSEY_TEST_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/tools/node_modules"));
    let dir = dir.canonicalize().unwrap_or(dir);
    assert!(
        dir.join("@modelcontextprotocol/server-everything/dist/index.js")
            .is_file(),
        "the test MCP servers are not installed in {}: run scripts/install-tools",
        dir.display()
    );
    dir
}

/// One model reply calling `tool` with `arguments`.
fn call(id: &str, tool: &str, arguments: &str) -> Reply {
    StreamBuilder::new()
        .tool_call(0, id, tool, arguments, 2)
        .finish("tool_calls")
        .done()
        .build()
}

fn text(answer: &str) -> Reply {
    StreamBuilder::new()
        .text(answer, 1)
        .finish("stop")
        .done()
        .build()
}

/// A server whose provider `openai` is `model`, whose sessions may mount `modules`, and
/// whose MCP calls time out after `call_timeout`.
async fn server_for(
    model: &OpenAiWireServer,
    modules: &Path,
    call_timeout: Duration,
) -> TestServer {
    server_with(model, modules, call_timeout, Duration::from_secs(600)).await
}

/// [`server_for`] with MCP servers stopped after `idle_timeout` without a call.
async fn server_with(
    model: &OpenAiWireServer,
    modules: &Path,
    call_timeout: Duration,
    idle_timeout: Duration,
) -> TestServer {
    let base_url = model.base_url();
    let modules = modules.to_path_buf();
    TestServer::start_configured(
        move |args| {
            args.mount_roots = vec![modules];
            args.env_allowlist = vec!["PATH".into()];
        },
        move |config| {
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
            config.mcp.call_timeout = call_timeout;
            config.mcp.idle_timeout = idle_timeout;
        },
    )
    .await
}

/// A bundle whose agent talks to `openai`, uses the MCP server `name` (started with
/// `command`) and has the given rules; the sandbox may read `modules`.
fn mcp_project(name: &str, command: &[String], modules: &Path, allow: &str, deny: &str) -> Project {
    let project = Project::empty();
    let command = serde_json::to_string(command).expect("json");
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: mcp-{name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  mcp_servers:\n    - name: {name}\n      command: {command}\n      env: {{ FROM_HOST: PATH }}\n  sandbox:\n    mode: workspace_write\n    permissions:\n      filesystem:\n        mounts:\n          read: [\"{}\"]\n",
            modules.display()
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        &format!("apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  mcp_servers: [{name}]\n  tools:\n    allow: {allow}\n    deny: {deny}\n"),
    );
    project
}

/// The finished tool calls of a turn's events, in order: (tool, success, result).
fn finished(events: &[pb::SessionEvent]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Some(pb::session_event::Payload::ToolCallFinished(f)) => {
                Some((f.tool.clone(), f.success, f.result.clone()))
            }
            _ => None,
        })
        .collect()
}

/// The MCP server processes recorded as running under the server's sandbox folder.
fn running_servers(server: &TestServer) -> Vec<String> {
    running_under(server.home())
}

/// How many MCP servers run once the count reached `expected` (a stopped server's
/// record goes a moment after it exits), or after ten seconds of waiting for it.
async fn running_servers_settled(server: &TestServer, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let running = running_servers(server).len();
        if running == expected || std::time::Instant::now() > deadline {
            return running;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn running_under(home: &Path) -> Vec<String> {
    let dir = home.join("sandbox/.running");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|name| name.starts_with("mcp-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_turn_calls_a_stdio_server_in_the_sandbox_which_stays_up_across_turns() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "mcp__everything__echo",
                r#"{"message": "hello from the model"}"#,
            ))
            .reply(text("Echoed."))
            .reply(call("c2", "mcp__everything__get-env", "{}"))
            .reply(text("Listed.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &modules, Duration::from_secs(60)).await;
    let command = everything(&modules);
    let project = mcp_project(
        "everything",
        &command,
        &modules,
        "[\"mcp__everything__*\"]",
        "[\"mcp__everything__get-tiny-image\"]",
    );
    let session = server.session_on(&project).await;

    let status = server.run(&session.id, "Echo something.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "Echoed.");
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].0, "mcp__everything__echo");
    assert!(calls[0].1, "{calls:?}");
    assert!(calls[0].2.contains("hello from the model"), "{calls:?}");
    assert!(
        !events
            .iter()
            .any(|e| payload_kind(e) == "permission_requested"),
        "the server's wildcard allows its tools"
    );

    // What the model was offered: the server's tools under their mapped names, with the
    // server's JSON schema, minus the one a rule denies outright.
    let requests = model.requests();
    let tools: Vec<&serde_json::Value> = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| &t["function"])
        .collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    assert!(
        !names.contains(&"mcp__everything__get-tiny-image"),
        "{names:?}"
    );
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .expect("echo offered");
    assert_eq!(
        echo["parameters"]["properties"]["message"]["type"],
        "string"
    );
    let first = running_servers(&server);
    assert_eq!(first.len(), 1, "one server runs between turns: {first:?}");

    // The next turn uses the same process, which runs in the session's cell.
    let status = server.run(&session.id, "List the environment.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let env = &calls[1].2;
    assert!(calls[1].1, "{env}");
    assert!(
        env.contains("\"HOME\": \"/workspace\""),
        "HOME is the cell's workspace: {env}"
    );
    assert!(
        env.contains("\"FROM_HOST\": \"********\""),
        "the mapped variable is set, and its value never shown: {env}"
    );
    assert_eq!(running_servers(&server), first, "the same server answered");

    // Deleting the session stops it.
    server
        .sessions()
        .delete_session(pb::DeleteSessionRequest {
            session_id: session.id.clone(),
        })
        .await
        .expect("delete");
    assert!(
        running_servers(&server).is_empty(),
        "{:?}",
        running_servers(&server)
    );
}

/// A stdio server made with the official TypeScript SDK whose tools fail on purpose.
fn faulty_server(modules: &Path) -> String {
    let sdk = modules.join("@modelcontextprotocol/sdk/dist/esm");
    format!(
        r#"import {{ writeFileSync }} from "node:fs";
import {{ Server }} from "{sdk}/server/index.js";
import {{ StdioServerTransport }} from "{sdk}/server/stdio.js";
import {{ ListToolsRequestSchema, CallToolRequestSchema }} from "{sdk}/types.js";

const server = new Server({{ name: "faulty", version: "1.0.0" }}, {{ capabilities: {{ tools: {{}} }} }});
const tool = (name, properties = {{}}) => ({{ name, description: name, inputSchema: {{ type: "object", properties }} }});
server.setRequestHandler(ListToolsRequestSchema, async () => ({{
  tools: [tool("fail"), tool("hang"), tool("crash"), tool("ping"), tool("write", {{ path: {{ type: "string" }} }})],
}}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {{
  const text = (t) => [{{ type: "text", text: t }}];
  switch (request.params.name) {{
    case "fail": return {{ content: text("it failed on purpose"), isError: true }};
    case "hang": return new Promise(() => {{}});
    case "crash": process.exit(3);
    case "ping": return {{ content: text("pong") }};
    case "write":
      try {{
        writeFileSync(request.params.arguments.path, "written by the MCP server");
        return {{ content: text("wrote " + request.params.arguments.path) }};
      }} catch (e) {{
        return {{ content: text("cannot write: " + e.code), isError: true }};
      }}
  }}
  return {{ content: text("unknown tool"), isError: true }};
}});
await server.connect(new StdioServerTransport());
"#,
        sdk = sdk.display()
    )
}

#[tokio::test]
async fn failing_hanging_and_crashing_servers_give_error_results_and_come_back() {
    let modules = node_modules();
    let after = |delay_ms: u64, reply: Reply| reply.delayed(Duration::from_millis(delay_ms));
    let outside = tempfile::tempdir().expect("outside folder");
    let escape = outside.path().join("escaped.txt");
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "mcp__faulty__fail", "{}"))
            .reply(call("c2", "mcp__faulty__hang", "{}"))
            // Past the one-second delay before a stopped server starts again.
            .reply(after(1500, call("c3", "mcp__faulty__ping", "{}")))
            .reply(call("c4", "mcp__faulty__crash", "{}"))
            .reply(call("c5", "mcp__faulty__ping", "{}"))
            .reply(after(1500, call("c6", "mcp__faulty__ping", "{}")))
            .reply(call(
                "c7",
                "mcp__faulty__write",
                &serde_json::json!({ "path": escape.display().to_string() }).to_string(),
            ))
            .reply(call(
                "c8",
                "mcp__faulty__write",
                r#"{"path": "inside.txt"}"#,
            ))
            .reply(text("Survived.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &modules, Duration::from_secs(2)).await;
    let project = mcp_project(
        "faulty",
        &["node".to_owned(), "/app/faulty.mjs".to_owned()],
        &modules,
        "[\"mcp__faulty__*\"]",
        "[]",
    );
    project.write("faulty.mjs", &faulty_server(&modules));
    let session = server.session_on(&project).await;

    let status = tokio::time::timeout(
        Duration::from_secs(60),
        server.run(&session.id, "Try every tool."),
    )
    .await
    .expect("the turn never hangs");
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "Survived.");
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    let outcome: Vec<(&str, bool)> = calls
        .iter()
        .map(|(tool, ok, _)| (tool.trim_start_matches("mcp__faulty__"), *ok))
        .collect();
    assert_eq!(
        outcome,
        [
            ("fail", false),
            ("hang", false),
            ("ping", true),
            ("crash", false),
            ("ping", false),
            ("ping", true),
            ("write", false),
            ("write", true),
        ],
        "{calls:#?}"
    );
    assert_eq!(calls[0].2, "it failed on purpose");
    assert!(
        calls[1].2.contains("did not finish within 2s"),
        "{}",
        calls[1].2
    );
    assert!(
        calls[3].2.contains("ended during the call"),
        "{}",
        calls[3].2
    );
    assert!(calls[4].2.contains("started again in"), "{}", calls[4].2);
    assert!(calls[6].2.contains("cannot write"), "{}", calls[6].2);
    assert!(!escape.exists(), "the server wrote outside its cell");
    let inside = server
        .home()
        .join("sandbox")
        .join(&session.id)
        .join("data/inside.txt");
    assert_eq!(
        std::fs::read_to_string(&inside).expect("written in the workspace"),
        "written by the MCP server"
    );
}

fn everything(modules: &Path) -> Vec<String> {
    vec![
        "node".to_owned(),
        modules
            .join("@modelcontextprotocol/server-everything/dist/index.js")
            .display()
            .to_string(),
        "stdio".to_owned(),
    ]
}

/// Answers the session's next approval request with `decision`.
async fn answer(
    server: &TestServer,
    session_id: &str,
    decision: pb::ApprovalDecision,
) -> pb::Approval {
    let mut approvals = ApprovalServiceClient::new(server.channel.clone());
    for _ in 0..400 {
        let pending = approvals
            .list_approvals(pb::ListApprovalsRequest {
                session_id: session_id.into(),
                ..Default::default()
            })
            .await
            .expect("list approvals")
            .into_inner()
            .approvals;
        if let Some(request) = pending.into_iter().next() {
            approvals
                .resolve_approval(pb::ResolveApprovalRequest {
                    request_id: request.request_id.clone(),
                    decision: decision as i32,
                    reason: "not now".into(),
                    ..Default::default()
                })
                .await
                .expect("resolve");
            return request;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval request appeared");
}

#[tokio::test]
async fn an_ask_rule_on_an_mcp_tool_waits_for_a_human_and_idle_servers_stop() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "mcp__everything__echo",
                r#"{"message": "first"}"#,
            ))
            .reply(call(
                "c2",
                "mcp__everything__echo",
                r#"{"message": "second"}"#,
            ))
            .reply(text("Asked twice."))
            .reply(call(
                "c3",
                "mcp__everything__get-sum",
                r#"{"a": 2, "b": 3}"#,
            ))
            .reply(text("Summed.")),
    )
    .await
    .expect("loopback model");
    let server = server_with(
        &model,
        &modules,
        Duration::from_secs(60),
        Duration::from_millis(300),
    )
    .await;
    let project = mcp_project(
        "everything",
        &everything(&modules),
        &modules,
        "[\"mcp__everything__*\"]",
        "[]",
    );
    // The tool's own rule beats the server's wildcard.
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  mcp_servers: [everything]\n  tools:\n    allow: [\"mcp__everything__*\"]\n    ask: [mcp__everything__echo]\n",
    );
    let session = server.session_on(&project).await;
    let execution = server
        .submit(&session.id, "Echo twice.")
        .await
        .expect("submit");
    let asked = answer(&server, &session.id, pb::ApprovalDecision::AllowOnce).await;
    assert_eq!(asked.tool, "mcp__everything__echo");
    let denied = answer(&server, &session.id, pb::ApprovalDecision::Deny).await;
    assert_eq!(denied.tool, "mcp__everything__echo");
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].1 && calls[0].2.contains("first"), "{calls:?}");
    assert!(!calls[1].1 && calls[1].2.contains("not now"), "{calls:?}");
    assert!(
        !calls[1].2.contains("second"),
        "the denied call never ran: {calls:?}"
    );

    // Unused past the idle time, the server is stopped; the next turn starts it again.
    let mut waited = 0;
    while !running_servers(&server).is_empty() {
        assert!(waited < 100, "the idle server was never stopped");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    let status = server.run(&session.id, "Add.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls[2].1 && calls[2].2.contains('5'), "{calls:?}");

    // A server shutting down stops the servers it started.
    assert_eq!(running_servers(&server).len(), 1);
    let stopped = server.stop().await;
    assert!(
        running_under(stopped.home()).is_empty(),
        "{:?}",
        running_under(stopped.home())
    );
}

/// The interpreter with the Python `mcp` package (`scripts/install-tools`), or
/// `ODYSSEY_TEST_PYTHON`.
fn mcp_python() -> PathBuf {
    let python = std::env::var_os("ODYSSEY_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/tools/venv/bin/python")
        });
    let found = std::process::Command::new(&python)
        .args(["-c", "import mcp.server.mcpserver"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "{} cannot import the Python `mcp` package: run scripts/install-tools",
        python.display()
    );
    python
}

/// A streamable-HTTP MCP server made with the Python `mcp` package, on a loopback port;
/// killed when dropped.
struct RemoteServer {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
    url: String,
}

const REMOTE_SERVER: &str = r#"import sys
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("remote-notes")


@server.tool()
def shout(text: str) -> str:
    """Returns the text in capitals."""
    return text.upper()


@server.tool()
def whoami(ctx: Context) -> str:
    """Says which Authorization header the request carried."""
    request = ctx.request_context.request
    header = request.headers.get("authorization", "none") if request is not None else "none"
    return "authorization: " + header


server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
"#;

async fn start_remote() -> RemoteServer {
    let python = mcp_python();
    let dir = tempfile::tempdir().expect("script folder");
    let script = dir.path().join("remote.py");
    std::fs::write(&script, REMOTE_SERVER).expect("write the script");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = tokio::process::Command::new(python)
        .arg(&script)
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the remote server");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return RemoteServer {
                _child: child,
                _dir: dir,
                url: format!("http://127.0.0.1:{port}/mcp"),
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the remote MCP server never listened on port {port}");
}

#[tokio::test]
async fn allow_always_on_an_mcp_tool_lets_the_same_call_run_again_and_asks_for_another() {
    let modules = node_modules();
    let echo = |id: &str, message: &str| {
        call(
            id,
            "mcp__everything__echo",
            &serde_json::json!({ "message": message }).to_string(),
        )
    };
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(echo("c1", "same"))
            .reply(echo("c2", "same"))
            .reply(echo("c3", "other"))
            .reply(text("Done.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &modules, Duration::from_secs(60)).await;
    let project = mcp_project("everything", &everything(&modules), &modules, "[]", "[]");
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  mcp_servers: [everything]\n  tools:\n    ask: [mcp__everything__echo]\n",
    );
    let session = server.session_on(&project).await;
    let execution = server.submit(&session.id, "Echo.").await.expect("submit");
    let first = answer(&server, &session.id, pb::ApprovalDecision::AllowAlways).await;
    assert!(
        format!("{:?}", first.arguments).contains("same"),
        "{first:?}"
    );
    // The same call again runs without asking; the call with other arguments asks.
    let other = answer(&server, &session.id, pb::ApprovalDecision::Deny).await;
    assert!(
        format!("{:?}", other.arguments).contains("other"),
        "{other:?}"
    );
    server
        .wait_for_state(&execution, pb::ExecutionState::Completed)
        .await;
    let status = server.status(&execution).await;
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let asked = events
        .iter()
        .filter(|e| {
            matches!(
                e.payload,
                Some(pb::session_event::Payload::PermissionRequested(_))
            )
        })
        .count();
    assert_eq!(asked, 2, "the repeated call asked again");
    let calls = finished(&events);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls[0].1 && calls[0].2.contains("same"), "{calls:?}");
    assert!(calls[1].1 && calls[1].2.contains("same"), "{calls:?}");
    assert!(!calls[2].1, "the denied call ran: {calls:?}");
}

#[tokio::test]
async fn remote_servers_the_operator_allows_are_called_with_only_the_operators_headers() {
    const SECRET: &str = "Bearer vault-secret-4242";
    let remote = start_remote().await;
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "mcp__notes__shout", r#"{"text": "quiet"}"#))
            .reply(call("c2", "mcp__notes__whoami", "{}"))
            .reply(call("c3", "mcp__vault__whoami", "{}"))
            .reply(text("Done.")),
    )
    .await
    .expect("loopback model");
    let base_url = model.base_url();
    let url = remote.url.clone();
    let server = TestServer::start_configured(
        |_| {},
        move |config| {
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
            let origin = url.trim_end_matches("/mcp");
            config.mcp.allowed_urls = vec![format!("{origin}/*").parse().expect("pattern")];
            config.mcp.servers.insert(
                "vault".into(),
                odyssey_runtime::tools::mcp::OperatorMcpServer {
                    url: Some(url.clone()),
                    headers: [("Authorization".to_owned(), SECRET.to_owned())].into(),
                    ..Default::default()
                },
            );
        },
    )
    .await;
    let project = Project::empty();
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: remote\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  mcp_servers:\n    - {{ name: notes, url: \"{}\" }}\n    - name: vault\n",
            remote.url
        ),
    );
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  mcp_servers: [notes, vault]\n  tools:\n    allow: [\"mcp__notes__*\", \"mcp__vault__*\"]\n",
    );
    let session = server.session_on(&project).await;
    let status = server
        .run(&session.id, "Shout, then say who you are.")
        .await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert!(calls[0].1 && calls[0].2.contains("QUIET"), "{calls:?}");
    assert!(
        calls[1].1 && calls[1].2.contains("authorization: none"),
        "the bundle's server gets no credentials: {calls:?}"
    );
    assert!(
        calls[2].1 && calls[2].2.contains("authorization: ********"),
        "the operator's header reached its server, and is masked in the result: {calls:?}"
    );
    let recorded = format!("{events:?}");
    assert!(
        !recorded.contains("vault-secret-4242"),
        "a credential reached the events"
    );
}

#[tokio::test]
async fn a_filesystem_server_told_to_serve_a_host_folder_reaches_only_its_cell() {
    let modules = node_modules();
    let outside = tempfile::tempdir().expect("a host folder outside the cell");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "host secret").expect("write the host file");
    let escape = outside.path().join("escaped.txt");
    let args = |path: &Path, content: Option<&str>| {
        let mut args = serde_json::json!({ "path": path.display().to_string() });
        if let Some(content) = content {
            args["content"] = content.into();
        }
        args.to_string()
    };
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call(
                "c1",
                "mcp__fs__write_file",
                &args(Path::new("/workspace/note.txt"), Some("kept")),
            ))
            .reply(call("c2", "mcp__fs__read_text_file", &args(&secret, None)))
            .reply(call(
                "c3",
                "mcp__fs__write_file",
                &args(&escape, Some("escaped")),
            ))
            .reply(text("Tried.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &modules, Duration::from_secs(60)).await;
    // The server is told to serve the host folder too: in the sandbox that folder does
    // not exist, so the server can only serve the workspace.
    let command = vec![
        "node".to_owned(),
        modules
            .join("@modelcontextprotocol/server-filesystem/dist/index.js")
            .display()
            .to_string(),
        "/workspace".to_owned(),
        outside.path().display().to_string(),
    ];
    let project = mcp_project("fs", &command, &modules, "[\"mcp__fs__*\"]", "[]");
    let session = server.session_on(&project).await;
    let status = server.run(&session.id, "Write, then read the host.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    let outcome: Vec<bool> = calls.iter().map(|(_, ok, _)| *ok).collect();
    assert_eq!(outcome, [true, false, false], "{calls:#?}");
    assert!(!calls[1].2.contains("host secret"), "{calls:?}");
    assert!(!escape.exists(), "the server wrote outside its cell");
    let note = server
        .home()
        .join("sandbox")
        .join(&session.id)
        .join("data/note.txt");
    assert_eq!(
        std::fs::read_to_string(note).expect("written in the workspace"),
        "kept"
    );
}

/// A stdio server whose `grow` tool adds a tool and says so (`tools/list_changed`) before
/// it answers the call.
fn growing_server(modules: &Path) -> String {
    let sdk = modules.join("@modelcontextprotocol/sdk/dist/esm");
    format!(
        r#"import {{ Server }} from "{sdk}/server/index.js";
import {{ StdioServerTransport }} from "{sdk}/server/stdio.js";
import {{ ListToolsRequestSchema, CallToolRequestSchema }} from "{sdk}/types.js";

const server = new Server({{ name: "growing", version: "1.0.0" }}, {{ capabilities: {{ tools: {{ listChanged: true }} }} }});
let grown = false;
const tool = (name) => ({{ name, description: name, inputSchema: {{ type: "object", properties: {{}} }} }});
server.setRequestHandler(ListToolsRequestSchema, async () => ({{
  tools: grown ? [tool("grow"), tool("grown")] : [tool("grow")],
}}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {{
  if (request.params.name === "grow") {{
    grown = true;
    await server.sendToolListChanged();
    return {{ content: [{{ type: "text", text: "grew" }}] }};
  }}
  return {{ content: [{{ type: "text", text: "I am new" }}] }};
}});
await server.connect(new StdioServerTransport());
"#,
        sdk = sdk.display()
    )
}

/// The names of the tools a model request offers.
fn offered(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Deterministic: the server says its list changed before it answers the call, and the
/// client marks the list stale as it reads that notification, before the answer.
#[tokio::test]
async fn a_servers_tool_list_change_reaches_the_next_model_call_of_the_turn() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "mcp__growing__grow", "{}"))
            .reply(call("c2", "mcp__growing__grown", "{}"))
            .reply(text("Used."))
            .reply(text("Still there.")),
    )
    .await
    .expect("loopback model");
    let server = server_for(&model, &modules, Duration::from_secs(60)).await;
    let project = mcp_project(
        "growing",
        &["node".to_owned(), "/app/growing.mjs".to_owned()],
        &modules,
        "[\"mcp__growing__*\"]",
        "[]",
    );
    project.write("growing.mjs", &growing_server(&modules));
    let session = server.session_on(&project).await;
    let first = server
        .run(&session.id, "Grow, then use the new tool.")
        .await;
    assert_eq!(
        first.state,
        pb::ExecutionState::Completed as i32,
        "{first:?}"
    );
    let second = server.run(&session.id, "Anything new?").await;
    assert_eq!(
        second.state,
        pb::ExecutionState::Completed as i32,
        "{second:?}"
    );
    let requests = model.requests();
    assert_eq!(offered(&requests[0]), ["mcp__growing__grow"]);
    let both = ["mcp__growing__grow", "mcp__growing__grown"];
    assert_eq!(offered(&requests[1]), both, "the same turn's next call");
    assert_eq!(offered(&requests[2]), both);
    assert_eq!(offered(&requests[3]), both, "the next turn");
    let events = server.events(&session.id, 0, first.last_sequence).await;
    let calls = finished(&events);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[1].1 && calls[1].2 == "I am new", "{calls:?}");
    assert_eq!(
        running_servers(&server).len(),
        1,
        "the same server answered"
    );
}

#[tokio::test]
async fn cancelling_a_turn_ends_its_mcp_call_and_the_server_serves_the_next_turn() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "mcp__faulty__hang", "{}"))
            .reply(call("c2", "mcp__faulty__ping", "{}"))
            .reply(text("Pinged.")),
    )
    .await
    .expect("loopback model");
    // A call timeout far beyond the test: only the cancellation can end the call.
    let server = server_for(&model, &modules, Duration::from_secs(600)).await;
    let project = mcp_project(
        "faulty",
        &["node".to_owned(), "/app/faulty.mjs".to_owned()],
        &modules,
        "[\"mcp__faulty__*\"]",
        "[]",
    );
    project.write("faulty.mjs", &faulty_server(&modules));
    let session = server.session_on(&project).await;
    let execution = server.submit(&session.id, "Hang.").await.expect("submit");
    let mut waited = 0;
    while !server
        .events(
            &session.id,
            0,
            server.get_session(&session.id).await.last_sequence,
        )
        .await
        .iter()
        .any(|e| payload_kind(e) == "tool_call_started")
    {
        assert!(waited < 200, "the call never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    server
        .executions()
        .cancel_execution(pb::CancelExecutionRequest {
            execution_id: execution.clone(),
        })
        .await
        .expect("cancel");
    tokio::time::timeout(
        Duration::from_secs(20),
        server.wait_for_state(&execution, pb::ExecutionState::Cancelled),
    )
    .await
    .expect("the cancelled turn ends without waiting for the call");

    let status = server.run(&session.id, "Ping.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let calls = finished(&events);
    assert!(
        calls
            .iter()
            .any(|(tool, ok, out)| tool == "mcp__faulty__ping" && *ok && out == "pong"),
        "{calls:?}"
    );
    assert_eq!(
        running_servers(&server).len(),
        1,
        "the same server answered"
    );
}
