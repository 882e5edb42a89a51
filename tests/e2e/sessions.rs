//! Session lifecycle, paging and filtering, and bad requests answered with the right code.

use odyssey_api::v1 as pb;
use tonic::Code;

use crate::support::{Project, TestServer, bad_fields, error_reason};

const HELLO: &str = r#"{"text": "hello"}"#;

#[tokio::test]
async fn create_get_list_page_filter_delete() {
    let server = TestServer::start().await;
    server.install(&Project::replay("alpha", &[HELLO])).await;
    server.install(&Project::replay("beta", &[HELLO])).await;
    let mut created = Vec::new();
    for i in 0..5 {
        let bundle = if i % 2 == 0 { "alpha" } else { "beta" };
        let session = server
            .sessions()
            .create_session(pb::CreateSessionRequest {
                bundle_reference: bundle.into(),
                metadata: [("n".to_string(), i.to_string())].into(),
                ..Default::default()
            })
            .await
            .expect("create")
            .into_inner()
            .session
            .expect("session");
        assert_eq!(session.agent_id, "main");
        assert_eq!(session.sandbox_mode, pb::SandboxMode::WorkspaceWrite as i32);
        assert_eq!(
            session.model.as_ref().map(|m| m.provider.as_str()),
            Some("replay")
        );
        created.push(session.id);
    }

    let got = server.get_session(&created[0]).await;
    assert_eq!(got.bundle.as_ref().map(|b| b.name.as_str()), Some("alpha"));
    assert_eq!(got.metadata.get("n").map(String::as_str), Some("0"));

    // Pages of 2, newest first, every session exactly once.
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = server
            .sessions()
            .list_sessions(pb::ListSessionsRequest {
                page_size: 2,
                page_token: token.clone(),
                ..Default::default()
            })
            .await
            .expect("list")
            .into_inner();
        assert!(page.sessions.len() <= 2);
        seen.extend(page.sessions.into_iter().map(|s| s.id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let mut newest_first = created.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);

    let betas = server
        .sessions()
        .list_sessions(pb::ListSessionsRequest {
            bundle: "beta".into(),
            ..Default::default()
        })
        .await
        .expect("filtered list")
        .into_inner();
    assert_eq!(betas.sessions.len(), 2);
    assert!(
        betas
            .sessions
            .iter()
            .all(|s| s.bundle.as_ref().is_some_and(|b| b.name == "beta"))
    );
    let by_agent = server
        .sessions()
        .list_sessions(pb::ListSessionsRequest {
            agent_id: "nobody".into(),
            ..Default::default()
        })
        .await
        .expect("agent filter")
        .into_inner();
    assert!(by_agent.sessions.is_empty());

    server
        .sessions()
        .delete_session(pb::DeleteSessionRequest {
            session_id: created[0].clone(),
        })
        .await
        .expect("delete");
    assert!(
        !server.sessions_dir().join(&created[0]).exists(),
        "files removed"
    );
    let gone = server
        .sessions()
        .get_session(pb::GetSessionRequest {
            session_id: created[0].clone(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
    assert_eq!(error_reason(&gone).as_deref(), Some("SESSION_NOT_FOUND"));
}

#[tokio::test]
async fn bad_session_requests_name_the_field_and_change_nothing() {
    let server = TestServer::start().await;
    server.install(&Project::replay("gamma", &[HELLO])).await;
    let mut sessions = server.sessions();

    let bad_id = sessions
        .get_session(pb::GetSessionRequest {
            session_id: "not-a-uuid".into(),
        })
        .await
        .expect_err("bad uuid");
    assert_eq!(bad_id.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&bad_id), vec!["session_id"]);

    let unknown = sessions
        .get_session(pb::GetSessionRequest {
            session_id: uuid::Uuid::new_v4().to_string(),
        })
        .await
        .expect_err("unknown session");
    assert_eq!(unknown.code(), Code::NotFound);

    let no_bundle = sessions
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "missing".into(),
            ..Default::default()
        })
        .await
        .expect_err("unknown bundle");
    assert_eq!(no_bundle.code(), Code::NotFound);

    let empty_bundle = sessions
        .create_session(pb::CreateSessionRequest::default())
        .await
        .expect_err("empty reference");
    assert_eq!(empty_bundle.code(), Code::InvalidArgument);
    assert_eq!(bad_fields(&empty_bundle), vec!["bundle_reference"]);

    let no_agent = sessions
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "gamma".into(),
            agent_id: "ghost".into(),
            ..Default::default()
        })
        .await
        .expect_err("unknown agent");
    assert_eq!(no_agent.code(), Code::InvalidArgument);
    assert!(
        no_agent.message().contains("main"),
        "lists the agents: {}",
        no_agent.message()
    );

    let bad_provider = sessions
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "gamma".into(),
            model: Some(pb::ModelSpec {
                provider: "nonesuch".into(),
                name: "x".into(),
                config: None,
            }),
            ..Default::default()
        })
        .await
        .expect_err("unknown provider");
    assert_eq!(bad_provider.code(), Code::InvalidArgument);
    assert!(
        bad_provider.message().contains("openai"),
        "lists known providers: {}",
        bad_provider.message()
    );

    let danger = sessions
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "gamma".into(),
            sandbox_mode: pb::SandboxMode::DangerFullAccess as i32,
            ..Default::default()
        })
        .await
        .expect_err("full access not allowed");
    assert_eq!(danger.code(), Code::PermissionDenied);

    let bad_enum = sessions
        .create_session(pb::CreateSessionRequest {
            bundle_reference: "gamma".into(),
            sandbox_mode: 42,
            ..Default::default()
        })
        .await
        .expect_err("invalid enum");
    assert_eq!(bad_enum.code(), Code::InvalidArgument);

    let listed = sessions
        .list_sessions(pb::ListSessionsRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(listed.sessions.is_empty(), "no session was half-created");

    let forged = sessions
        .list_sessions(pb::ListSessionsRequest {
            page_token: "%%%".into(),
            ..Default::default()
        })
        .await
        .expect_err("forged token");
    assert_eq!(forged.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn an_idle_subscription_receives_heartbeats() {
    use futures::StreamExt;
    let server = TestServer::start().await; // heartbeat every second
    server.install(&Project::replay("quiet", &[HELLO])).await;
    let session = server.create_session("quiet").await;
    let mut stream = server
        .sessions()
        .subscribe_session(pb::SubscribeSessionRequest {
            session_id: session.id.clone(),
            after_sequence: 0,
        })
        .await
        .expect("subscribe")
        .into_inner();
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
        .await
        .expect("something arrives while idle")
        .expect("stream open")
        .expect("ok item");
    let Some(pb::subscribe_session_response::Item::Heartbeat(beat)) = first.item else {
        panic!("a heartbeat, not an event: {first:?}");
    };
    assert_eq!(beat.last_sequence, 0);
    assert!(beat.sent_at.is_some());
}
