//! Issue 11 item 3: networked sandboxes against a real `odysseyd` with its HTTP gateway.
//!
//! The original attack: with `--allow-network`, a bundle asking for `network: ["*"]` and
//! no token (the loopback default), a sandboxed `curl` read another session's events
//! through the HTTP gateway and ran commands in it through gRPC-Web. Now the sandbox has
//! its own network namespace and its only way out is the session's egress proxy, which
//! refuses loopback by default and the server's own listeners always.

use odyssey_api::v1 as pb;
use pb::session_event::Payload;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Project, TestServer, build, loopback, payload_kind};

/// A replay project whose bundle asks for `network`.
fn networked_project(name: &str, network: &str) -> Project {
    let project = Project::replay(name, &[r#"{"text": "hi"}"#]);
    project.write(
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: {name}\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  sandbox:\n    mode: workspace_write\n    permissions:\n      network: {network}\n"
        ),
    );
    project
}

async fn run(server: &TestServer, session_id: &str, script: &str) -> pb::RunSessionCommandResponse {
    server
        .executions()
        .run_session_command(pb::RunSessionCommandRequest {
            session_id: session_id.into(),
            argv: vec!["bash".into(), "-c".into(), script.into()],
            ..Default::default()
        })
        .await
        .expect("run command")
        .into_inner()
}

/// The session's connection attempts, in order.
async fn attempts(server: &TestServer, session_id: &str) -> Vec<pb::NetworkConnectionAttempted> {
    let info = server.get_session(session_id).await;
    server
        .events(session_id, 0, info.last_sequence)
        .await
        .into_iter()
        .filter_map(|event| match event.payload {
            Some(Payload::NetworkConnectionAttempted(attempt)) => {
                assert!(event.turn_id.is_empty(), "a session event, outside turns");
                Some(attempt)
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_networked_sandbox_cannot_reach_the_servers_gateway_or_grpc_web() {
    // Loopback closed (the default), then opened by the operator: the server's own
    // listeners stay out of reach either way, and are named as such.
    for cidrs in [Vec::new(), vec!["127.0.0.0/8".to_owned()]] {
        let server = TestServer::start_with(|args| {
            args.allow_network = true;
            args.http_listen = Some(loopback());
            args.network_cidrs = cidrs.clone();
        })
        .await;
        let victim = server
            .session_on(&Project::replay("victim", &[r#"{"text": "secret"}"#]))
            .await;
        let attacker = server
            .session_on(&networked_project("attacker", "[\"*\"]"))
            .await;
        let gateway = server.handle.http_addr().expect("gateway").port();
        let grpc = server.handle.addr().port();
        let events = format!("/sessions/{}/events", victim.id);
        let grpc_web = "-X POST -H 'content-type: application/grpc-web+proto' \
                        -H 'x-grpc-web: 1' --data-binary @/dev/null";
        let scripts = [
            format!("curl -sSf -m 5 http://127.0.0.1:{gateway}{events}"),
            format!("curl -sSf -m 5 -p http://localhost:{gateway}{events}"),
            format!(
                "curl -sSf -m 5 {grpc_web} \
                 http://127.0.0.1:{grpc}/odyssey.v1.SessionService/ListSessions"
            ),
            format!("curl -sSf -m 5 --noproxy '*' http://127.0.0.1:{gateway}{events}"),
        ];
        for script in &scripts {
            let ran = run(&server, &attacker.id, script).await;
            assert_ne!(ran.exit_code, 0, "{script}: {ran:?}");
            assert!(
                !ran.stdout.contains(&victim.id) && !ran.stdout.contains("secret"),
                "{script}: {ran:?}"
            );
        }
        let seen = attempts(&server, &attacker.id).await;
        let ports: Vec<u32> = seen.iter().map(|a| a.port).collect();
        // The direct attempt never reached the proxy: nothing to record.
        assert_eq!(ports, [gateway, gateway, grpc].map(u32::from), "{seen:?}");
        for attempt in &seen {
            assert!(!attempt.allowed, "{attempt:?}");
            assert_eq!(attempt.address, "127.0.0.1", "{attempt:?}");
            assert!(
                attempt.reason.contains("is a listener of this server"),
                "{attempt:?}"
            );
        }
        // The session's proxy runs until the server stops, and leaves no socket behind.
        let socket = server
            .home()
            .join("sandbox")
            .join(&attacker.id)
            .join("egress/proxy.sock");
        assert!(socket.exists(), "{}", socket.display());
        server.stop().await;
        assert!(!socket.exists(), "{}", socket.display());
    }
}

#[tokio::test]
async fn the_operators_domains_and_ranges_narrow_what_a_bundle_reaches() {
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = upstream.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = upstream.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nupdated\n")
                    .await;
            });
        }
    });
    let server = TestServer::start_with(|args| {
        args.allow_network = true;
        args.network_domains = vec!["localhost".into()];
        args.network_cidrs = vec!["127.0.0.0/8".into()];
    })
    .await;
    let session = server
        .session_on(&networked_project("fetcher", "[\"*\"]"))
        .await;
    let ran = run(
        &server,
        &session.id,
        &format!(
            "curl -sSf -m 10 http://localhost:{port}/ && curl -sSf -m 10 -p http://localhost:{port}/; \
             curl -sSf -m 5 http://127.0.0.1:{port}/"
        ),
    )
    .await;
    assert_eq!(ran.stdout, "updated\nupdated\n", "{ran:?}");
    assert_ne!(ran.exit_code, 0, "{ran:?}");
    let seen = attempts(&server, &session.id).await;
    let verdicts: Vec<(&str, bool)> = seen.iter().map(|a| (a.host.as_str(), a.allowed)).collect();
    assert_eq!(
        verdicts,
        [
            ("localhost", true),
            ("localhost", true),
            ("127.0.0.1", false)
        ],
        "{seen:?}"
    );
    assert!(
        seen[2].reason.contains("sandbox.network_domains"),
        "{:?}",
        seen[2]
    );
    let kinds: Vec<&str> = server
        .events(
            &session.id,
            0,
            server.get_session(&session.id).await.last_sequence,
        )
        .await
        .iter()
        .map(payload_kind)
        .collect();
    assert!(kinds.contains(&"network_connection_attempted"), "{kinds:?}");
}

#[tokio::test]
async fn a_bad_network_pattern_is_refused_when_the_bundle_is_built() {
    let server = TestServer::start_with(|args| args.allow_network = true).await;
    let project = networked_project("sloppy", "[\"api.github.com\", \"https://pypi.org\"]");
    let refused = build(&mut server.bundles(), project.archive(), "", false)
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused
            .message()
            .contains("odyssey.bundle.yaml: spec.sandbox.permissions.network[1]")
            && refused.message().contains("is not a host pattern"),
        "{}",
        refused.message()
    );
}
