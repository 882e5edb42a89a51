//! `--metrics-listen`: a turn with a sandboxed tool call counted in every family (RPCs by
//! method and code, turns, model calls, sandbox runs, events), streams counted when they
//! end, labels that never name a session, and the endpoint's tokens and bind rules.

use odyssey_api::v1 as pb;
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::ServeError;
use tonic::metadata::MetadataValue;

use super::{sample, scrape, scrape_until};
use crate::support::{Project, TestServer, loopback};

const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_m", "name": "Bash", "arguments": {"command": "printf metered"}}]}"#;
const API_TOKEN: &str = "api-token-for-metrics-tests";
const METRICS_TOKEN: &str = "scrape-only-token";

fn rpc<'a>(service: &'a str, method: &'a str, code: &'a str) -> [(&'a str, &'a str); 3] {
    [("service", service), ("method", method), ("code", code)]
}

#[tokio::test]
async fn a_turn_shows_in_every_metric_family() {
    let server = TestServer::start_with(|args| args.metrics_listen = Some(loopback())).await;
    let addr = server.handle.metrics_addr().expect("the endpoint runs");
    let project = Project::with_tools(
        "metered",
        &[BASH_CALL, r#"{"text": "Counted."}"#],
        &["Bash"],
        "[Bash]",
        "[]",
        "[]",
    );
    let session = server.session_on(&project).await;
    let status = server.run(&session.id, "count this").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    let missing = server
        .sessions()
        .get_session(pb::GetSessionRequest {
            session_id: uuid::Uuid::now_v7().to_string(),
        })
        .await
        .expect_err("no such session");
    assert_eq!(missing.code(), tonic::Code::NotFound);
    // A stream read to the turn's end, then dropped by the client.
    let events = server.events(&session.id, 0, status.last_sequence).await;
    let subscribe = rpc("odyssey.v1.SessionService", "SubscribeSession", "CANCELLED");
    let text = scrape_until(addr, None, "the ended stream", |text| {
        sample(text, "odyssey_rpc_calls_total", &subscribe) == Some(1.0)
    })
    .await;

    let expect = |name: &str, labels: &[(&str, &str)], value: f64| {
        assert_eq!(
            sample(&text, name, labels),
            Some(value),
            "{name} {labels:?} in\n{text}"
        );
    };
    let exec = "odyssey.v1.ExecutionService";
    expect("odyssey_rpc_calls_total", &rpc(exec, "Run", "OK"), 1.0);
    expect(
        "odyssey_rpc_duration_seconds_count",
        &rpc(exec, "Run", "OK"),
        1.0,
    );
    expect(
        "odyssey_rpc_calls_total",
        &rpc("odyssey.v1.BundleService", "BuildBundle", "OK"),
        1.0,
    );
    expect(
        "odyssey_rpc_calls_total",
        &rpc("odyssey.v1.SessionService", "GetSession", "NOT_FOUND"),
        1.0,
    );
    expect(
        "odyssey_rpc_in_flight",
        &[
            ("service", "odyssey.v1.SessionService"),
            ("method", "SubscribeSession"),
        ],
        0.0,
    );
    expect("odyssey_turns_total", &[("outcome", "completed")], 1.0);
    expect("odyssey_turns_total", &[("outcome", "failed")], 0.0);
    expect(
        "odyssey_turn_duration_seconds_count",
        &[("outcome", "completed")],
        1.0,
    );
    expect("odyssey_turns_running", &[], 0.0);
    expect(
        "odyssey_provider_calls_total",
        &[("provider", "replay"), ("outcome", "ok")],
        2.0,
    );
    expect(
        "odyssey_provider_first_delta_seconds_count",
        &[("provider", "replay")],
        2.0,
    );
    expect(
        "odyssey_sandbox_executions_total",
        &[("mode", "workspace_write"), ("outcome", "success")],
        1.0,
    );
    let appended = |kind: &str| {
        let count = events
            .iter()
            .filter(|e| crate::support::payload_kind(e) == kind)
            .count();
        count as f64
    };
    for kind in [
        "turn_started",
        "tool_call_started",
        "exec_command_end",
        "turn_completed",
    ] {
        expect(
            "odyssey_events_appended_total",
            &[("type", kind)],
            appended(kind),
        );
    }
    expect("odyssey_queue_depth", &[], 0.0);
    expect("odyssey_queue_capacity", &[], 128.0);
    expect("odyssey_workers", &[], 4.0);
    expect("odyssey_approvals_pending", &[], 0.0);
    expect("odyssey_subscriptions", &[], 0.0);
    assert!(
        text.contains("odyssey_runtime_tasks ") && text.contains("odyssey_sessions_open "),
        "the runtime's activity is exposed"
    );
    expect(
        "odyssey_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    assert!(text.ends_with("# EOF\n"), "a complete exposition");
    assert!(
        !text.contains(&session.id),
        "no session id in a label:\n{text}"
    );
    assert!(!text.contains("count this"), "no prompt:\n{text}");
}

#[tokio::test]
async fn the_endpoint_asks_for_a_token_that_opens_nothing_else() {
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(API_TOKEN.into());
        args.metrics_auth_token = Some(METRICS_TOKEN.into());
        args.metrics_listen = Some(loopback());
    })
    .await;
    let addr = server.handle.metrics_addr().expect("the endpoint runs");
    assert_eq!(scrape(addr, None).await.0, 401);
    assert_eq!(scrape(addr, Some("wrong")).await.0, 401);
    assert_eq!(scrape(addr, Some(API_TOKEN)).await.0, 200);
    let (status, text) = scrape(addr, Some(METRICS_TOKEN)).await;
    assert_eq!(status, 200);
    assert!(text.contains("odyssey_turns_total"), "{text}");
    let elsewhere = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .expect("answers");
    assert_eq!(elsewhere.status().as_u16(), 404);
    let response = reqwest::Client::new()
        .get(format!("http://{addr}/metrics"))
        .bearer_auth(METRICS_TOKEN)
        .send()
        .await
        .expect("answers");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap_or_default();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );

    // The metrics token is no API token; the refusal itself is counted.
    let mut request = tonic::Request::new(pb::ListSessionsRequest::default());
    request.metadata_mut().insert(
        "authorization",
        MetadataValue::try_from(format!("Bearer {METRICS_TOKEN}")).expect("ascii"),
    );
    let refused = server
        .sessions()
        .list_sessions(request)
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let list = rpc(
        "odyssey.v1.SessionService",
        "ListSessions",
        "UNAUTHENTICATED",
    );
    let text = scrape(addr, Some(METRICS_TOKEN)).await.1;
    assert_eq!(
        sample(&text, "odyssey_rpc_calls_total", &list),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_are_off_by_default_and_stay_on_loopback_without_a_token() {
    let server = TestServer::start().await;
    assert!(server.handle.metrics_addr().is_none());

    let home = tempfile::tempdir().expect("home");
    let mut args = ServeArgs::new(loopback(), home.path().to_path_buf());
    args.metrics_listen = Some("0.0.0.0:0".parse().expect("address"));
    match odyssey_server::serve::start(&args).await {
        Err(e @ ServeError::InsecureMetricsBind(_)) => {
            assert!(e.to_string().contains("--metrics-auth-token"), "{e}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a public metrics endpoint without a token started"),
    }
}
