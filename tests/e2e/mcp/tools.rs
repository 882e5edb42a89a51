//! What clients are shown of an agent's MCP servers: InspectBundle and ListAgents name
//! them and say how each is reached; ListSessionTools lists the tools the session's agent
//! is offered, starting its servers in the session's cell.

use super::*;
use odyssey_client::{ConnectOptions, OdysseyClient};

/// A bundle with two builtin tools, the stdio servers `growing` and `broken` (its program
/// does not exist), a remote server and an operator's one, whose agent `main` uses all
/// four and `plain` none.
fn visible_project(modules: &Path) -> Project {
    let project = Project::empty();
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: visible\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n    - id: plain\n      spec: agents/plain/agent.yaml\n  tools:\n    - {{ name: Read, source: builtin }}\n    - {{ name: LS, source: builtin }}\n  mcp_servers:\n    - name: growing\n      command: [node, /app/growing.mjs]\n    - name: broken\n      command: [/app/missing-program]\n    - {{ name: docs, url: \"http://127.0.0.1:9/mcp\" }}\n    - name: notes\n  sandbox:\n    mode: workspace_write\n    permissions:\n      filesystem:\n        mounts:\n          read: [\"{}\"]\n",
            modules.display()
        ),
    );
    project.write("growing.mjs", &growing_server(modules));
    let agent = |name: &str, servers: &str, deny: &str| {
        format!(
            "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: {name}\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  mcp_servers: {servers}\n  tools:\n    allow: [\"mcp__growing__*\", Read]\n    deny: {deny}\n"
        )
    };
    project.write(
        "agents/main/agent.yaml",
        &agent("main", "[growing, broken, docs, notes]", "[LS]"),
    );
    project.write("agents/plain/agent.yaml", &agent("plain", "[]", "[]"));
    project
}

const OPERATOR_SECRET: &str = "operator-secret-notes-token";

/// A server that allows the `docs` URL and offers the operator's stdio server `notes`
/// (with a key in its environment, which no answer may show).
async fn visible_server(model: &OpenAiWireServer, modules: &Path) -> TestServer {
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
            config.mcp.allowed_urls = vec!["http://127.0.0.1:9/*".parse().expect("pattern")];
            config.mcp.servers.insert(
                "notes".into(),
                odyssey_runtime::tools::mcp::OperatorMcpServer {
                    command: vec!["/app/missing-notes".into()],
                    env: [("NOTES_TOKEN".to_owned(), OPERATOR_SECRET.to_owned())].into(),
                    ..Default::default()
                },
            );
        },
    )
    .await
}

fn servers_of(agent: &pb::AgentInfo) -> Vec<(String, String, bool)> {
    agent
        .mcp_servers
        .iter()
        .map(|s| (s.name.clone(), s.kind.clone(), s.operator))
        .collect()
}

/// Runs the CLI in-process; returns (exit code, stdout, stderr).
async fn cli(args: &[&str]) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = odyssey_cli::run_cli(args, &mut out, &mut err).await;
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

async fn sdk(server: &TestServer) -> OdysseyClient {
    OdysseyClient::connect_with(server.handle.url(), ConnectOptions::new())
        .await
        .expect("connect")
}

#[tokio::test]
async fn inspect_bundle_and_list_agents_show_each_agents_mcp_servers() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(Script::new(KEY))
        .await
        .expect("loopback model");
    let server = visible_server(&model, &modules).await;
    server.install(&visible_project(&modules)).await;
    let client = sdk(&server).await;
    let expected = vec![
        ("growing".to_owned(), "stdio".to_owned(), false),
        ("broken".to_owned(), "stdio".to_owned(), false),
        ("docs".to_owned(), "url".to_owned(), false),
        ("notes".to_owned(), "stdio".to_owned(), true),
    ];
    let inspected = client.inspect_bundle("visible").await.expect("inspect");
    let agent = |id: &str| {
        inspected
            .agents
            .iter()
            .find(|a| a.id == id)
            .expect("agent")
            .clone()
    };
    assert_eq!(servers_of(&agent("main")), expected);
    assert!(agent("plain").mcp_servers.is_empty());
    let agents = client.list_agents("visible").await.expect("list agents");
    let main = agents.iter().find(|a| a.id == "main").expect("main");
    assert_eq!(servers_of(main), expected);
    let url = server.handle.url();
    let (code, out, err) = cli(&["--server", &url, "agents", "visible"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("MCP SERVERS"), "{out}");
    assert!(
        out.contains("growing (stdio), broken (stdio), docs (url), notes (operator, stdio)"),
        "{out}"
    );
    let (code, inspect_out, err) = cli(&["--server", &url, "bundle", "inspect", "visible"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(inspect_out.contains("docs (url)"), "{inspect_out}");
    let shown = format!("{inspected:?} {agents:?} {out} {inspect_out}");
    for hidden in [
        OPERATOR_SECRET,
        "missing-notes",
        "127.0.0.1:9",
        "growing.mjs",
    ] {
        assert!(!shown.contains(hidden), "`{hidden}` shown: {shown}");
    }
}

#[tokio::test]
async fn an_operators_server_this_server_lacks_is_shown_without_a_kind() {
    let model = OpenAiWireServer::start(Script::new(KEY))
        .await
        .expect("loopback model");
    let server = server_for(&model, &node_modules(), Duration::from_secs(60)).await;
    server
        .install(&with_servers("lacking", "    - name: github\n", "[github]"))
        .await;
    let inspected = server
        .bundles()
        .inspect_bundle(pb::InspectBundleRequest {
            reference: "lacking".into(),
        })
        .await
        .expect("inspect")
        .into_inner();
    assert_eq!(
        servers_of(&inspected.agents[0]),
        [("github".to_owned(), String::new(), true)]
    );
}

#[tokio::test]
async fn list_session_tools_starts_the_servers_and_lists_what_the_model_is_offered() {
    let modules = node_modules();
    let model = OpenAiWireServer::start(
        Script::new(KEY)
            .reply(call("c1", "mcp__growing__grow", "{}"))
            .reply(text("Grown.")),
    )
    .await
    .expect("loopback model");
    let server = visible_server(&model, &modules).await;
    let session = server.session_on(&visible_project(&modules)).await;
    assert!(running_servers(&server).is_empty(), "nothing runs yet");

    let client = sdk(&server).await;
    let listed = client
        .list_session_tools(&session.id)
        .await
        .expect("list session tools");
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    // `LS` is denied outright, so it is not offered; the rest sorted by name.
    assert_eq!(names, ["Read", "mcp__growing__grow"], "{listed:?}");
    let read = &listed.tools[0];
    assert_eq!(
        (read.source.as_str(), read.mcp_server.as_str()),
        ("builtin", "")
    );
    let grow = &listed.tools[1];
    assert_eq!(
        (grow.source.as_str(), grow.mcp_server.as_str()),
        ("mcp", "growing")
    );
    assert!(
        grow.description.contains("MCP server `growing`"),
        "{grow:?}"
    );
    for tool in &listed.tools {
        let schema: serde_json::Value =
            serde_json::from_str(&tool.input_schema_json).expect("schema is JSON");
        assert_eq!(schema["type"], "object", "{tool:?}");
    }

    // The servers that could not start say why; the operator's key is never shown.
    let mut failed: Vec<&str> = listed
        .mcp_server_errors
        .iter()
        .map(|e| e.server.as_str())
        .collect();
    failed.sort_unstable();
    assert_eq!(failed, ["broken", "docs", "notes"], "{listed:?}");
    assert!(
        listed.mcp_server_errors.iter().all(|e| !e.error.is_empty()),
        "{listed:?}"
    );
    let shown = format!("{listed:?}");
    assert!(!shown.contains(OPERATOR_SECRET), "{shown}");
    assert!(
        !shown.contains("127.0.0.1:9"),
        "a server's URL is not shown: {shown}"
    );
    // A server that failed (`broken` exits at once) leaves its process record a moment
    // after its listing answered.
    assert_eq!(
        running_servers_settled(&server, 1).await,
        1,
        "the listing started `growing`"
    );

    // The turn that follows uses the same server; once its tools changed, the listing
    // shows the new one.
    let status = server.run(&session.id, "Grow.").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(
        running_servers_settled(&server, 1).await,
        1,
        "the same server answered"
    );
    let listed = client
        .list_session_tools(&session.id)
        .await
        .expect("list again");
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["Read", "mcp__growing__grow", "mcp__growing__grown"]);

    let url = server.handle.url();
    let (code, out, err) = cli(&["--server", &url, "session", "tools", &session.id]).await;
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().take(2).collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["Read", "builtin"],
            vec!["mcp__growing__grow", "mcp:growing"],
            vec!["mcp__growing__grown", "mcp:growing"],
        ],
        "{out}"
    );
    assert!(err.contains("MCP server `broken` offers no tools"), "{err}");
    let (code, out, err) =
        cli(&["--server", &url, "--json", "session", "tools", &session.id]).await;
    assert_eq!(code, 0, "{err}");
    let answer: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(answer["tools"][1]["mcpServer"], "growing", "{answer}");
    assert!(answer["mcpServerErrors"].is_array(), "{answer}");

    // Paged one by one, the pages add up to the whole list.
    let mut paged = Vec::new();
    let mut token = String::new();
    loop {
        let page = server
            .sessions()
            .list_session_tools(pb::ListSessionToolsRequest {
                session_id: session.id.clone(),
                page_size: 1,
                page_token: std::mem::take(&mut token),
            })
            .await
            .expect("page")
            .into_inner();
        assert!(page.tools.len() <= 1, "{page:?}");
        paged.extend(page.tools.into_iter().map(|t| t.name));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(paged, names);
}
