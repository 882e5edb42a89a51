//! The Agent2Agent protocol's gRPC binding (`lf.a2a.v1.A2AService`) on the main port:
//! a message runs a turn as a task, streamed and replayed from the session's log,
//! cancelled; bad requests get A2A's errors and change nothing.

use std::time::Duration;

use futures::StreamExt;
use odyssey_api::a2a::v1 as a2a;
use odyssey_api::a2a::v1::a2a_service_client::A2aServiceClient;
use odyssey_api::v1 as pb;
use tonic::Code;
use tonic::transport::Channel;
use tonic_types::StatusExt;

use crate::support::{Project, TestServer};

fn client(server: &TestServer) -> A2aServiceClient<Channel> {
    A2aServiceClient::new(server.channel.clone())
}

fn text(text: &str) -> a2a::Part {
    a2a::Part {
        content: Some(a2a::part::Content::Text(text.into())),
        ..Default::default()
    }
}

fn send(tenant: &str, context_id: &str, message_id: &str, prompt: &str) -> a2a::SendMessageRequest {
    a2a::SendMessageRequest {
        tenant: tenant.into(),
        message: Some(a2a::Message {
            message_id: message_id.into(),
            context_id: context_id.into(),
            role: a2a::Role::User as i32,
            parts: vec![text(prompt)],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn returning_at_once(mut request: a2a::SendMessageRequest) -> a2a::SendMessageRequest {
    request.configuration = Some(a2a::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    request
}

fn task_of(response: a2a::SendMessageResponse) -> a2a::Task {
    match response.payload {
        Some(a2a::send_message_response::Payload::Task(task)) => task,
        other => panic!("a task, not {other:?}"),
    }
}

fn state(task: &a2a::Task) -> a2a::TaskState {
    task.status
        .as_ref()
        .map_or(a2a::TaskState::Unspecified, |s| s.state())
}

fn texts(parts: &[a2a::Part]) -> String {
    parts
        .iter()
        .filter_map(|p| match &p.content {
            Some(a2a::part::Content::Text(t)) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// A2A's own error: its gRPC code and `ErrorInfo` in the `a2a-protocol.org` domain.
fn assert_a2a_error(status: &tonic::Status, code: Code, reason: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    let info = status.get_details_error_info().expect("ErrorInfo");
    assert_eq!(
        (info.reason.as_str(), info.domain.as_str()),
        (reason, "a2a-protocol.org"),
        "{status:?}"
    );
}

async fn session_count(server: &TestServer) -> usize {
    server
        .sessions()
        .list_sessions(pb::ListSessionsRequest::default())
        .await
        .expect("list sessions")
        .into_inner()
        .sessions
        .len()
}

/// A cassette answer streamed in `chunks` pieces, `delay_ms` apart.
fn slow_answer(chunks: usize, delay_ms: u64) -> String {
    let pieces: Vec<String> = (0..chunks).map(|i| format!("\"w{i} \"")).collect();
    format!(
        r#"{{"text": [{}], "chunk_delay_ms": {delay_ms}}}"#,
        pieces.join(",")
    )
}

#[tokio::test]
async fn a_message_runs_a_turn_of_the_named_agent_as_a_task_and_its_context_is_the_session() {
    let server = TestServer::start().await;
    server
        .install(&Project::replay(
            "greeter",
            &[
                r#"{"text": ["Hel", "lo"]}"#,
                r#"{"text": ["Again"]}"#,
                r#"{"text": ["Default"]}"#,
            ],
        ))
        .await;
    let mut a2a = client(&server);

    let task = task_of(
        a2a.send_message(send("greeter.main", "", "m-1", "Say hello"))
            .await
            .expect("send message")
            .into_inner(),
    );
    assert_eq!(state(&task), a2a::TaskState::Completed, "{task:?}");
    assert_eq!(task.artifacts.len(), 1, "{task:?}");
    assert_eq!(texts(&task.artifacts[0].parts), "Hello");
    let history: Vec<(i32, String, String)> = task
        .history
        .iter()
        .map(|m| (m.role, m.message_id.clone(), texts(&m.parts)))
        .collect();
    assert_eq!(
        history[0],
        (a2a::Role::User as i32, "m-1".into(), "Say hello".into())
    );
    assert_eq!(
        (history[1].0, history[1].2.as_str()),
        (a2a::Role::Agent as i32, "Hello")
    );
    assert_eq!(history.len(), 2);

    // The context is the session the message opened, on the named agent.
    let session = server.get_session(&task.context_id).await;
    assert_eq!(session.agent_id, "main");
    assert_eq!(session.turn_count, 1);

    // GetTask reads the same task, its history cut to the last message.
    let got = a2a
        .get_task(a2a::GetTaskRequest {
            id: task.id.clone(),
            history_length: Some(1),
            ..Default::default()
        })
        .await
        .expect("get task")
        .into_inner();
    assert_eq!(state(&got), a2a::TaskState::Completed);
    assert_eq!(got.history.len(), 1);
    assert_eq!(got.history[0].role, a2a::Role::Agent as i32);
    assert_eq!(texts(&got.artifacts[0].parts), "Hello");

    // A message with the context is a new task (turn) of the same session.
    let again = task_of(
        a2a.send_message(send("greeter.main", &task.context_id, "m-2", "Once more"))
            .await
            .expect("send in the context")
            .into_inner(),
    );
    assert_ne!(again.id, task.id);
    assert_eq!(again.context_id, task.context_id);
    assert_eq!(texts(&again.artifacts[0].parts), "Again");
    assert_eq!(server.get_session(&task.context_id).await.turn_count, 2);

    // No tenant: the server's default agent (here, of the only bundle).
    let default = task_of(
        a2a.send_message(send("", "", "m-3", "Who answers?"))
            .await
            .expect("send to the default agent")
            .into_inner(),
    );
    assert_ne!(default.context_id, task.context_id);
    assert_eq!(
        server.get_session(&default.context_id).await.agent_id,
        "main"
    );
}

#[tokio::test]
async fn a_streamed_task_sends_the_task_then_status_and_text_chunks_until_it_completes() {
    let server = TestServer::start().await;
    server
        .install(&Project::replay(
            "streamer",
            &[r#"{"text": ["One ", "two ", "three"]}"#],
        ))
        .await;
    let mut stream = client(&server)
        .send_streaming_message(send("streamer.main", "", "m-1", "Count"))
        .await
        .expect("stream")
        .into_inner();
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        items.push(item.expect("stream item").payload.expect("payload"));
    }
    use a2a::stream_response::Payload;
    let Some(Payload::Task(first)) = items.first() else {
        panic!("the task first: {items:?}");
    };
    assert_eq!(state(first), a2a::TaskState::Submitted);
    assert_eq!(texts(&first.history[0].parts), "Count");

    let mut answer = String::new();
    let mut states = Vec::new();
    let mut sequences = Vec::new();
    let mut last_chunk = false;
    for item in &items[1..] {
        let metadata = match item {
            Payload::StatusUpdate(update) => {
                assert_eq!(update.task_id, first.id);
                states.push(update.status.as_ref().expect("status").state());
                update.metadata.as_ref()
            }
            Payload::ArtifactUpdate(update) => {
                assert_eq!(update.context_id, first.context_id);
                let artifact = update.artifact.as_ref().expect("artifact");
                assert_eq!(
                    update.append,
                    !answer.is_empty(),
                    "the first chunk replaces"
                );
                answer.push_str(&texts(&artifact.parts));
                last_chunk |= update.last_chunk;
                update.metadata.as_ref()
            }
            other => panic!("an update, not {other:?}"),
        };
        let sequence = metadata
            .and_then(|m| m.fields.get("odysseySequence"))
            .and_then(|v| match v.kind {
                Some(prost_types::value::Kind::NumberValue(n)) => Some(n as u64),
                _ => None,
            })
            .expect("the event's sequence");
        sequences.push(sequence);
    }
    assert_eq!(answer, "One two three");
    assert!(last_chunk, "the artifact is closed");
    assert_eq!(
        states,
        [a2a::TaskState::Working, a2a::TaskState::Completed],
        "{items:?}"
    );
    assert!(sequences.windows(2).all(|w| w[0] <= w[1]), "{sequences:?}");
}

#[tokio::test]
async fn a_subscriber_gets_the_turn_from_its_start_and_a_cancel_ends_the_task() {
    let server = TestServer::start().await;
    server
        .install(&Project::replay("slow", &[&slow_answer(100, 100)]))
        .await;
    let mut a2a = client(&server);
    let task = task_of(
        a2a.send_message(returning_at_once(send(
            "slow.main",
            "",
            "m-1",
            "Take your time",
        )))
        .await
        .expect("send")
        .into_inner(),
    );
    assert_eq!(state(&task), a2a::TaskState::Submitted);

    // Wait for some text, so that the subscription has a past to replay.
    let execution = task.id.clone();
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let got = a2a
                .get_task(a2a::GetTaskRequest {
                    id: execution.clone(),
                    ..Default::default()
                })
                .await
                .expect("get task")
                .into_inner();
            if !got.artifacts.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the turn streams text");

    let mut stream = a2a
        .subscribe_to_task(a2a::SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("subscribe")
        .into_inner();
    use a2a::stream_response::Payload;
    let first = stream.next().await.expect("first").expect("ok").payload;
    let Some(Payload::Task(current)) = first else {
        panic!("the task first: {first:?}");
    };
    assert_eq!(state(&current), a2a::TaskState::Working);
    // The replay starts at the turn's start: the first chunk is `w0`.
    let mut answer = String::new();
    while !answer.starts_with("w0 w1") {
        match stream.next().await.expect("more").expect("ok").payload {
            Some(Payload::ArtifactUpdate(update)) => {
                answer.push_str(&texts(&update.artifact.expect("artifact").parts));
            }
            Some(Payload::StatusUpdate(_)) => {}
            other => panic!("an update, not {other:?}"),
        }
    }

    let cancelled = a2a
        .cancel_task(a2a::CancelTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("cancel")
        .into_inner();
    assert_eq!(state(&cancelled), a2a::TaskState::Canceled);

    // The stream ends with the cancellation.
    let mut last_state = None;
    while let Some(item) = stream.next().await {
        if let Some(Payload::StatusUpdate(update)) = item.expect("ok").payload {
            last_state = update.status.map(|s| s.state());
        }
    }
    assert_eq!(last_state, Some(a2a::TaskState::Canceled));

    // Cancelling again changes nothing and says the same.
    let again = a2a
        .cancel_task(a2a::CancelTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("cancel again")
        .into_inner();
    assert_eq!(state(&again), a2a::TaskState::Canceled);
    // An ended task has nothing to follow.
    let ended = a2a
        .subscribe_to_task(a2a::SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect_err("ended");
    assert_a2a_error(&ended, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn bad_a2a_requests_get_a2a_errors_and_change_nothing() {
    let server = TestServer::start().await;
    server
        .install(&Project::replay("strict", &[r#"{"text": ["Done"]}"#]))
        .await;
    let mut a2a = client(&server);

    // A part that is not text: CONTENT_TYPE_NOT_SUPPORTED, and no session is opened.
    let mut request = send("strict.main", "", "m-1", "Look at this");
    if let Some(message) = request.message.as_mut() {
        message.parts.push(a2a::Part {
            content: Some(a2a::part::Content::Url("https://example.com/a.png".into())),
            ..Default::default()
        });
    }
    let refused = a2a.send_message(request).await.expect_err("url part");
    assert_a2a_error(
        &refused,
        Code::InvalidArgument,
        "CONTENT_TYPE_NOT_SUPPORTED",
    );
    assert!(
        refused.message().contains("message.parts[1]"),
        "{refused:?}"
    );
    assert_eq!(session_count(&server).await, 0);

    // An unknown agent.
    let refused = a2a
        .send_message(send("strict.nobody", "", "m-1", "Hi"))
        .await
        .expect_err("unknown agent");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert_eq!(session_count(&server).await, 0);

    // Unknown tasks: TASK_NOT_FOUND, whether the id is a UUID or not.
    for id in [uuid::Uuid::now_v7().to_string(), "not-a-task".to_string()] {
        let refused = a2a
            .get_task(a2a::GetTaskRequest {
                id: id.clone(),
                ..Default::default()
            })
            .await
            .expect_err("unknown task");
        assert_a2a_error(&refused, Code::NotFound, "TASK_NOT_FOUND");
        let refused = a2a
            .cancel_task(a2a::CancelTaskRequest {
                id,
                ..Default::default()
            })
            .await
            .expect_err("unknown task");
        assert_a2a_error(&refused, Code::NotFound, "TASK_NOT_FOUND");
    }

    let task = task_of(
        a2a.send_message(send("strict.main", "", "m-1", "Finish"))
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&task), a2a::TaskState::Completed);

    // A task named with a context that is not its own.
    let mut request = send(
        "strict.main",
        &uuid::Uuid::now_v7().to_string(),
        "m-2",
        "More",
    );
    if let Some(message) = request.message.as_mut() {
        message.task_id = task.id.clone();
    }
    let refused = a2a.send_message(request).await.expect_err("wrong context");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    // A context this server does not have.
    let refused = a2a
        .send_message(send(
            "strict.main",
            &uuid::Uuid::now_v7().to_string(),
            "m-2",
            "More",
        ))
        .await
        .expect_err("unknown context");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    // A message to an ended task.
    let mut request = send("strict.main", &task.context_id, "m-2", "More");
    if let Some(message) = request.message.as_mut() {
        message.task_id = task.id.clone();
    }
    let refused = a2a.send_message(request).await.expect_err("ended task");
    assert_a2a_error(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
    // A completed task cannot be cancelled.
    let refused = a2a
        .cancel_task(a2a::CancelTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect_err("completed");
    assert_a2a_error(&refused, Code::FailedPrecondition, "TASK_NOT_CANCELABLE");
    // Another agent's tenant does not see the task; its own does.
    server
        .install(&Project::replay("other", &[r#"{"text": ["No"]}"#]))
        .await;
    let refused = a2a
        .get_task(a2a::GetTaskRequest {
            tenant: "other.main".into(),
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect_err("another agent's task");
    assert_a2a_error(&refused, Code::NotFound, "TASK_NOT_FOUND");
    a2a.get_task(a2a::GetTaskRequest {
        tenant: "strict.main".into(),
        id: task.id.clone(),
        ..Default::default()
    })
    .await
    .expect("its own tenant sees it");

    // Nothing of the above touched the session: one turn, one session.
    assert_eq!(session_count(&server).await, 1);
    assert_eq!(server.get_session(&task.context_id).await.turn_count, 1);
    let task_again = a2a
        .get_task(a2a::GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("get task")
        .into_inner();
    assert_eq!(state(&task_again), a2a::TaskState::Completed);
}

#[tokio::test]
async fn a2a_calls_need_the_servers_token_and_health_lists_the_service() {
    let server = TestServer::start_with(|args| args.auth_token = Some("a2a-token".into())).await;
    let mut a2a = client(&server);
    let denied = a2a
        .get_task(a2a::GetTaskRequest {
            id: uuid::Uuid::now_v7().to_string(),
            ..Default::default()
        })
        .await
        .expect_err("no token");
    assert_eq!(denied.code(), Code::Unauthenticated, "{denied:?}");

    let mut request = tonic::Request::new(a2a::GetTaskRequest {
        id: uuid::Uuid::now_v7().to_string(),
        ..Default::default()
    });
    request.metadata_mut().insert(
        "authorization",
        tonic::metadata::MetadataValue::from_static("Bearer a2a-token"),
    );
    let unknown = a2a.get_task(request).await.expect_err("no such task");
    assert_a2a_error(&unknown, Code::NotFound, "TASK_NOT_FOUND");

    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel.clone());
    let serving = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "lf.a2a.v1.A2AService".into(),
        })
        .await
        .expect("health of the A2A service")
        .into_inner();
    assert_eq!(
        serving.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
}

#[tokio::test]
async fn agent_cards_are_public_declare_the_token_and_lead_to_the_agent_over_grpc() {
    const TOKEN: &str = "card-token";
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(crate::support::loopback());
    })
    .await;
    let base = format!(
        "http://{}",
        server.handle.http_addr().expect("the gateway runs")
    );
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let get = |path: &str| http.get(format!("{base}{path}")).send();

    // No bundle yet: no default agent, hence no card.
    let none = get("/.well-known/agent-card.json").await.expect("get");
    assert_eq!(none.status(), reqwest::StatusCode::NOT_FOUND);

    let project = Project::replay("cardy", &[r#"{"text": ["From the card"]}"#]);
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");
    // Public: no token needed to read a card.
    let response = get("/.well-known/agent-card.json").await.expect("get");
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let card: serde_json::Value = response.json().await.expect("card JSON");
    assert_eq!(card["name"], "main", "{card}");
    assert_eq!(card["description"], "test agent", "{card}");
    assert_eq!(card["capabilities"]["streaming"], true, "{card}");
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "Bearer",
        "{card}"
    );
    assert!(
        card["securityRequirements"][0]["schemes"]["bearer"].is_object(),
        "{card}"
    );
    assert_eq!(card["skills"][0]["id"], "main", "{card}");
    let interface = &card["supportedInterfaces"][0];
    assert_eq!(interface["protocolBinding"], "GRPC", "{card}");
    assert_eq!(interface["protocolVersion"], "1.0", "{card}");
    assert_eq!(interface["tenant"], "cardy.main", "{card}");
    assert_eq!(
        interface["url"],
        format!("127.0.0.1:{}", server.handle.addr().port()),
        "{card}"
    );

    // The per-agent URL gives the same card; an agent the bundle lacks has none.
    let same: serde_json::Value = get("/a2a/agents/cardy/main/agent-card.json")
        .await
        .expect("get")
        .json()
        .await
        .expect("card JSON");
    assert_eq!(same, card);
    let missing = get("/a2a/agents/cardy/nobody/agent-card.json")
        .await
        .expect("get");
    assert_eq!(missing.status(), reqwest::StatusCode::NOT_FOUND);
    // The rest of the gateway still needs the token.
    let refused = get("/approvals").await.expect("get");
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);

    // What the card says is enough to run a task: its URL, its tenant, the token.
    let url = interface["url"].as_str().expect("url");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{url}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut request = tonic::Request::new(send(
        interface["tenant"].as_str().expect("tenant"),
        "",
        "m-1",
        "Hello card",
    ));
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {TOKEN}").parse().expect("header"),
    );
    let task = task_of(
        A2aServiceClient::new(channel)
            .send_message(request)
            .await
            .expect("send message")
            .into_inner(),
    );
    assert_eq!(texts(&task.artifacts[0].parts), "From the card");
}

/// The `urn:odyssey:a2a:agent-details:v1` params of a card's extensions, if it has them.
fn details_of(card: &serde_json::Value) -> Option<serde_json::Value> {
    card["capabilities"]["extensions"]
        .as_array()?
        .iter()
        .find(|e| e["uri"] == "urn:odyssey:a2a:agent-details:v1")
        .map(|e| e["params"].clone())
}

#[tokio::test]
async fn the_extended_card_is_behind_the_token_on_every_binding_and_tells_the_agents_tools() {
    const TOKEN: &str = "extended-token";
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(crate::support::loopback());
    })
    .await;
    let project = Project::with_tools("carded", &[], &["Read", "Bash"], "[Read]", "[Bash]", "[]");
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");
    let http_addr = server.handle.http_addr().expect("the gateway runs");
    let base = format!("http://{http_addr}");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();

    // The public card offers the extended one and holds none of its details.
    let public: serde_json::Value = http
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("card JSON");
    assert_eq!(
        public["capabilities"]["extendedAgentCard"], true,
        "{public}"
    );
    assert_eq!(details_of(&public), None, "{public}");

    // gRPC: the token is needed.
    let mut a2a = client(&server);
    let denied = a2a
        .get_extended_agent_card(a2a::GetExtendedAgentCardRequest::default())
        .await
        .expect_err("no token");
    assert_eq!(denied.code(), Code::Unauthenticated, "{denied:?}");
    let with_token = |tenant: &str| {
        let mut request = tonic::Request::new(a2a::GetExtendedAgentCardRequest {
            tenant: tenant.into(),
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {TOKEN}").parse().expect("header"),
        );
        request
    };
    let card = a2a
        .get_extended_agent_card(with_token("carded.main"))
        .await
        .expect("extended card over gRPC")
        .into_inner();
    let over_grpc = odyssey_api::json::to_value(&card).expect("card JSON");
    let details = details_of(&over_grpc).expect("the details extension");
    assert_eq!(details["agent"], "main", "{details}");
    assert_eq!(details["bundle"]["name"], "carded", "{details}");
    assert_eq!(details["model"]["provider"], "replay", "{details}");
    assert_eq!(
        details["tools"],
        serde_json::json!(["Read", "Bash"]),
        "{details}"
    );
    assert_eq!(details["permissions"]["allow"], serde_json::json!(["Read"]));
    assert_eq!(details["permissions"]["ask"], serde_json::json!(["Bash"]));
    assert_eq!(details["sandbox"]["mode"], "workspace_write", "{details}");
    // Reached over gRPC, it still leads to every binding, each with the agent's tenant.
    let interfaces: Vec<(String, String)> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            assert_eq!(i.tenant, "carded.main");
            (i.protocol_binding.clone(), i.url.clone())
        })
        .collect();
    assert_eq!(
        interfaces,
        [
            (
                "GRPC".into(),
                format!("127.0.0.1:{}", server.handle.addr().port())
            ),
            ("JSONRPC".into(), format!("{base}/a2a/jsonrpc")),
            ("HTTP+JSON".into(), format!("{base}/a2a")),
        ]
    );
    // The default agent's, without a tenant; a tenant naming no agent is refused.
    let default = a2a
        .get_extended_agent_card(with_token(""))
        .await
        .expect("the default agent's card")
        .into_inner();
    assert_eq!(default, card);
    let unknown = a2a
        .get_extended_agent_card(with_token("nowhere.main"))
        .await
        .expect_err("no such agent");
    assert_eq!(unknown.code(), Code::InvalidArgument, "{unknown:?}");

    // JSON-RPC and HTTP+JSON: the same card, behind the same token.
    let jsonrpc = |token: Option<&str>| {
        let mut request = http
            .post(format!("{base}/a2a/jsonrpc"))
            .json(&serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "GetExtendedAgentCard", "params": {"tenant": "carded.main"}}));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let refused = jsonrpc(None).await.expect("post");
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    let answer: serde_json::Value = jsonrpc(Some(TOKEN))
        .await
        .expect("post")
        .json()
        .await
        .expect("JSON-RPC answer");
    assert_eq!(answer["result"], over_grpc, "{answer}");
    let rest = |token: Option<&str>| {
        let mut request = http.get(format!("{base}/a2a/carded.main/extendedAgentCard"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    let refused = rest(None).await.expect("get");
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    let answer: serde_json::Value = rest(Some(TOKEN))
        .await
        .expect("get")
        .json()
        .await
        .expect("card JSON");
    assert_eq!(answer, over_grpc);
}

#[tokio::test]
async fn a_turn_waiting_for_an_approval_is_input_required_until_it_is_decided() {
    const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_a", "name": "Bash", "arguments": {"command": "echo asked"}}]}"#;
    let server = TestServer::start().await;
    server
        .install(&Project::with_tools(
            "asker",
            &[BASH_CALL, r#"{"text": ["Understood, ", "not run."]}"#],
            &["Bash"],
            "[]",
            "[Bash]",
            "[]",
        ))
        .await;
    let mut a2a = client(&server);

    // SendMessage comes back when the turn stops to wait for a person.
    let task = task_of(
        a2a.send_message(send("asker.main", "", "m-1", "Run it"))
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&task), a2a::TaskState::InputRequired, "{task:?}");
    let asking = task
        .status
        .as_ref()
        .and_then(|s| s.message.as_ref())
        .map(|m| texts(&m.parts))
        .unwrap_or_default();
    assert!(asking.contains("waiting for an approval"), "{asking}");

    // A subscriber replays the turn up to the question, then follows it live.
    let mut stream = a2a
        .subscribe_to_task(a2a::SubscribeToTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("subscribe")
        .into_inner();
    use a2a::stream_response::Payload;
    let mut states = Vec::new();
    while states.last().map(|(s, _)| *s) != Some(a2a::TaskState::InputRequired) {
        match stream.next().await.expect("more").expect("ok").payload {
            Some(Payload::Task(current)) => {
                assert_eq!(state(&current), a2a::TaskState::InputRequired)
            }
            Some(Payload::StatusUpdate(update)) => states.push(status_of(update)),
            other => panic!("no text before the question: {other:?}"),
        }
    }
    assert_eq!(
        states,
        [
            (a2a::TaskState::Working, None),
            (
                a2a::TaskState::Working,
                Some(serde_json::json!({"toolCall": {
                    "callId": "call_a", "tool": "Bash", "arguments": {"command": "echo asked"}
                }}))
            ),
            (a2a::TaskState::InputRequired, None),
        ]
    );

    // Decided through Odyssey's approvals, the task goes on to its end.
    let mut approvals = odyssey_api::v1::approval_service_client::ApprovalServiceClient::new(
        server.channel.clone(),
    );
    let pending = approvals
        .list_approvals(pb::ListApprovalsRequest {
            session_id: task.context_id.clone(),
            ..Default::default()
        })
        .await
        .expect("list approvals")
        .into_inner()
        .approvals;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(
        format!("{}.{}", task.context_id, pending[0].execution_id),
        task.id,
        "a task's id names its context and its turn"
    );
    approvals
        .resolve_approval(pb::ResolveApprovalRequest {
            request_id: pending[0].request_id.clone(),
            decision: pb::ApprovalDecision::Deny as i32,
            reason: "not now".into(),
            ..Default::default()
        })
        .await
        .expect("deny");
    let mut answer = String::new();
    let mut rest = Vec::new();
    while let Some(item) = stream.next().await {
        match item.expect("ok").payload {
            Some(Payload::StatusUpdate(update)) => rest.push(status_of(update)),
            Some(Payload::ArtifactUpdate(update)) => {
                answer.push_str(&texts(&update.artifact.expect("artifact").parts));
            }
            other => panic!("an update, not {other:?}"),
        }
    }
    let rest_states: Vec<a2a::TaskState> = rest.iter().map(|(s, _)| *s).collect();
    assert_eq!(
        rest_states,
        [
            a2a::TaskState::Working,
            a2a::TaskState::Working,
            a2a::TaskState::Completed
        ]
    );
    let result = rest[1].1.as_ref().expect("the tool's result as data");
    assert_eq!(result["toolResult"]["tool"], "Bash", "{result}");
    assert_eq!(result["toolResult"]["success"], false, "denied: {result}");
    assert_eq!(answer, "Understood, not run.");
}

/// A status update's state, and the data part of its message (tool activity), as JSON.
fn status_of(update: a2a::TaskStatusUpdateEvent) -> (a2a::TaskState, Option<serde_json::Value>) {
    let status = update.status.expect("status");
    let data = status.message.as_ref().and_then(|m| {
        m.parts.iter().find_map(|p| match &p.content {
            Some(a2a::part::Content::Data(value)) => Some(value_json(value)),
            _ => None,
        })
    });
    (status.state(), data)
}

fn value_json(value: &prost_types::Value) -> serde_json::Value {
    use prost_types::value::Kind;
    match &value.kind {
        Some(Kind::StringValue(s)) => serde_json::json!(s),
        Some(Kind::NumberValue(n)) => serde_json::json!(n),
        Some(Kind::BoolValue(b)) => serde_json::json!(b),
        Some(Kind::StructValue(s)) => serde_json::Value::Object(
            s.fields
                .iter()
                .map(|(k, v)| (k.clone(), value_json(v)))
                .collect(),
        ),
        Some(Kind::ListValue(l)) => l.values.iter().map(value_json).collect(),
        Some(Kind::NullValue(_)) | None => serde_json::Value::Null,
    }
}

/// A message answering task `task`: one data part, an object of the string `fields`.
fn answer(task: &a2a::Task, message_id: &str, fields: &[(&str, &str)]) -> a2a::SendMessageRequest {
    use prost_types::value::Kind;
    let string = |s: &str| prost_types::Value {
        kind: Some(Kind::StringValue(s.into())),
    };
    let json = prost_types::Value {
        kind: Some(Kind::StructValue(prost_types::Struct {
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), string(v)))
                .collect(),
        })),
    };
    a2a::SendMessageRequest {
        message: Some(a2a::Message {
            message_id: message_id.into(),
            context_id: task.context_id.clone(),
            task_id: task.id.clone(),
            role: a2a::Role::User as i32,
            parts: vec![a2a::Part {
                content: Some(a2a::part::Content::Data(json)),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn an_input_required_task_is_answered_by_a_message_whose_data_part_is_the_decision() {
    const FIRST_CALL: &str = r#"{"tool_calls": [{"id": "call_a", "name": "Bash", "arguments": {"command": "echo first"}}]}"#;
    const SECOND_CALL: &str = r#"{"tool_calls": [{"id": "call_b", "name": "Bash", "arguments": {"command": "echo second"}}]}"#;
    let server = TestServer::start().await;
    server
        .install(&Project::with_tools(
            "decider",
            &[
                FIRST_CALL,
                r#"{"text": ["Denied, ", "fine."]}"#,
                SECOND_CALL,
                r#"{"text": ["It ran."]}"#,
            ],
            &["Bash"],
            "[]",
            "[Bash]",
            "[]",
        ))
        .await;
    let mut a2a = client(&server);
    let task = task_of(
        a2a.send_message(send("decider.main", "", "m-1", "Run the first"))
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&task), a2a::TaskState::InputRequired, "{task:?}");

    // Answers that are not a decision are refused and leave the approval waiting.
    let field_of = |status: &tonic::Status| {
        status
            .get_details_bad_request()
            .and_then(|b| b.field_violations.first().map(|v| v.field.clone()))
            .unwrap_or_default()
    };
    let mut text_answer = send("", &task.context_id, "m-2", "yes please");
    if let Some(message) = text_answer.message.as_mut() {
        message.task_id = task.id.clone();
    }
    let refused = a2a.send_message(text_answer).await.expect_err("text");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert_eq!(field_of(&refused), "message.parts[0]", "{refused:?}");
    let refused = a2a
        .send_message(answer(&task, "m-3", &[("decision", "maybe")]))
        .await
        .expect_err("not a decision");
    assert_eq!(field_of(&refused), "message.parts[0].data", "{refused:?}");
    let mut elsewhere = answer(&task, "m-4", &[("decision", "deny")]);
    if let Some(message) = elsewhere.message.as_mut() {
        message.context_id = uuid::Uuid::now_v7().to_string();
    }
    let refused = a2a
        .send_message(elsewhere)
        .await
        .expect_err("wrong context");
    assert_eq!(field_of(&refused), "message.context_id", "{refused:?}");
    let mut unknown = answer(&task, "m-5", &[("decision", "deny")]);
    if let Some(message) = unknown.message.as_mut() {
        message.task_id = uuid::Uuid::now_v7().to_string();
    }
    let refused = a2a.send_message(unknown).await.expect_err("unknown task");
    assert_a2a_error(&refused, Code::NotFound, "TASK_NOT_FOUND");
    let still = a2a
        .get_task(a2a::GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(state(&still), a2a::TaskState::InputRequired);

    // A deny with its reason: the call does not run and the turn ends.
    let denied = task_of(
        a2a.send_message(answer(
            &task,
            "m-6",
            &[("decision", "deny"), ("reason", "not now")],
        ))
        .await
        .expect("deny")
        .into_inner(),
    );
    assert_eq!(denied.id, task.id);
    assert_eq!(state(&denied), a2a::TaskState::Completed, "{denied:?}");
    assert_eq!(texts(&denied.artifacts[0].parts), "Denied, fine.");
    // An ended task takes no more answers.
    let refused = a2a
        .send_message(answer(&task, "m-7", &[("decision", "allow_once")]))
        .await
        .expect_err("ended");
    assert_a2a_error(&refused, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");

    // The next task of the context, allowed once through a stream: the stream replays the
    // turn, then the call runs and the turn completes.
    let second = task_of(
        a2a.send_message(send("", &task.context_id, "m-8", "Run the second"))
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&second), a2a::TaskState::InputRequired, "{second:?}");
    let mut stream = a2a
        .send_streaming_message(answer(&second, "m-9", &[("decision", "allow_once")]))
        .await
        .expect("allow once")
        .into_inner();
    use a2a::stream_response::Payload;
    let mut states = Vec::new();
    let mut text = String::new();
    while let Some(item) = stream.next().await {
        match item.expect("ok").payload {
            Some(Payload::Task(first)) => assert_eq!(first.id, second.id),
            Some(Payload::StatusUpdate(update)) => states.push(status_of(update)),
            Some(Payload::ArtifactUpdate(update)) => {
                text.push_str(&texts(&update.artifact.expect("artifact").parts))
            }
            other => panic!("a task or an update, not {other:?}"),
        }
    }
    let result = states
        .iter()
        .find_map(|(_, data)| data.as_ref().filter(|d| d.get("toolResult").is_some()))
        .expect("the tool's result");
    assert_eq!(result["toolResult"]["success"], true, "allowed: {result}");
    assert_eq!(
        states.last().map(|(s, _)| *s),
        Some(a2a::TaskState::Completed)
    );
    assert_eq!(text, "It ran.");
}
