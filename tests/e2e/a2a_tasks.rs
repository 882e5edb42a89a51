//! A2A tasks kept by the sessions' logs: found after a restart, listed (ListTasks) most
//! recently updated first with checked page tokens, a decision shown in the history; the
//! gRPC binding checks the `A2A-Version` a client names; the operator's default agent.

use odyssey_api::a2a::v1 as a2a;
use odyssey_api::a2a::v1::a2a_service_client::A2aServiceClient;
use tonic::Code;
use tonic::transport::Channel;
use tonic_types::StatusExt;

use crate::support::{Project, TestServer};

fn client(server: &TestServer) -> A2aServiceClient<Channel> {
    A2aServiceClient::new(server.channel.clone())
}

fn send(tenant: &str, context_id: &str, message_id: &str, prompt: &str) -> a2a::SendMessageRequest {
    a2a::SendMessageRequest {
        tenant: tenant.into(),
        message: Some(a2a::Message {
            message_id: message_id.into(),
            context_id: context_id.into(),
            role: a2a::Role::User as i32,
            parts: vec![a2a::Part {
                content: Some(a2a::part::Content::Text(prompt.into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn run(a2a: &mut A2aServiceClient<Channel>, request: a2a::SendMessageRequest) -> a2a::Task {
    match a2a
        .send_message(request)
        .await
        .expect("send message")
        .into_inner()
        .payload
    {
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

fn reason(status: &tonic::Status) -> String {
    status
        .get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

fn field(status: &tonic::Status) -> String {
    status
        .get_details_bad_request()
        .and_then(|b| b.field_violations.first().map(|v| v.field.clone()))
        .unwrap_or_default()
}

async fn list(
    a2a: &mut A2aServiceClient<Channel>,
    request: a2a::ListTasksRequest,
) -> Result<a2a::ListTasksResponse, tonic::Status> {
    a2a.list_tasks(request).await.map(|r| r.into_inner())
}

#[tokio::test]
async fn tasks_are_read_from_the_log_after_a_restart_and_listed_most_recent_first() {
    let server = TestServer::start().await;
    server
        .install(&Project::replay(
            "keeper",
            &[
                r#"{"text": ["First"]}"#,
                r#"{"text": ["Second"]}"#,
                r#"{"text": ["Elsewhere"]}"#,
            ],
        ))
        .await;
    let mut a2a = client(&server);
    let first = run(&mut a2a, send("keeper.main", "", "m-1", "one")).await;
    let second = run(&mut a2a, send("", &first.context_id, "m-2", "two")).await;
    let other = run(&mut a2a, send("keeper.main", "", "m-3", "three")).await;
    assert_eq!(state(&second), a2a::TaskState::Completed, "{second:?}");
    // A task's id names its context and its turn.
    assert!(
        second.id.starts_with(&format!("{}.", second.context_id)),
        "{}",
        second.id
    );

    // One context's tasks, most recent first, a page at a time.
    let page = list(
        &mut a2a,
        a2a::ListTasksRequest {
            context_id: first.context_id.clone(),
            page_size: Some(1),
            ..Default::default()
        },
    )
    .await
    .expect("list");
    assert_eq!(page.total_size, 2, "{page:?}");
    assert_eq!(page.page_size, 1);
    assert_eq!(page.tasks.len(), 1);
    assert_eq!(page.tasks[0].id, second.id);
    assert!(
        page.tasks[0].artifacts.is_empty(),
        "artifacts only when asked"
    );
    assert!(!page.next_page_token.is_empty());
    let next = list(
        &mut a2a,
        a2a::ListTasksRequest {
            context_id: first.context_id.clone(),
            page_size: Some(1),
            page_token: page.next_page_token.clone(),
            include_artifacts: Some(true),
            ..Default::default()
        },
    )
    .await
    .expect("second page");
    assert_eq!(next.tasks.len(), 1);
    assert_eq!(next.tasks[0].id, first.id);
    assert_eq!(texts(&next.tasks[0].artifacts[0].parts), "First");
    assert_eq!(next.next_page_token, "", "the last page");

    // A token is bound to its filters, and made by the server.
    let refused = list(
        &mut a2a,
        a2a::ListTasksRequest {
            context_id: other.context_id.clone(),
            page_token: page.next_page_token.clone(),
            ..Default::default()
        },
    )
    .await
    .expect_err("another context's token");
    assert_eq!(
        (refused.code(), field(&refused).as_str()),
        (Code::InvalidArgument, "page_token")
    );
    let refused = list(
        &mut a2a,
        a2a::ListTasksRequest {
            page_token: "not-a-token".into(),
            ..Default::default()
        },
    )
    .await
    .expect_err("a made-up token");
    assert_eq!(field(&refused), "page_token", "{refused:?}");
    let refused = list(
        &mut a2a,
        a2a::ListTasksRequest {
            page_size: Some(0),
            ..Default::default()
        },
    )
    .await
    .expect_err("an empty page");
    assert_eq!(field(&refused), "page_size", "{refused:?}");
    let refused = list(
        &mut a2a,
        a2a::ListTasksRequest {
            context_id: "../../etc".into(),
            ..Default::default()
        },
    )
    .await
    .expect_err("no such context");
    assert_eq!(field(&refused), "context_id", "{refused:?}");

    // Every task of the agent, and the filter on the state.
    let all = list(&mut a2a, a2a::ListTasksRequest::default())
        .await
        .expect("all of the default agent's");
    let ids: Vec<&str> = all.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [&other.id, &second.id, &first.id]);
    let working = list(
        &mut a2a,
        a2a::ListTasksRequest {
            tenant: "keeper.main".into(),
            status: a2a::TaskState::Working as i32,
            ..Default::default()
        },
    )
    .await
    .expect("working ones");
    assert_eq!((working.total_size, working.tasks.len()), (0, 0));

    // After a restart the server holds no turn, and the log answers.
    let server = server.restart().await;
    let mut a2a = client(&server);
    let again = a2a
        .get_task(a2a::GetTaskRequest {
            tenant: "keeper.main".into(),
            id: second.id.clone(),
            history_length: None,
        })
        .await
        .expect("the task after a restart")
        .into_inner();
    assert_eq!(state(&again), a2a::TaskState::Completed, "{again:?}");
    assert_eq!(texts(&again.artifacts[0].parts), "Second");
    let history: Vec<(i32, String, String)> = again
        .history
        .iter()
        .map(|m| (m.role, m.message_id.clone(), texts(&m.parts)))
        .collect();
    assert_eq!(
        history[0],
        (a2a::Role::User as i32, "m-2".into(), "two".into())
    );
    assert_eq!(
        (history[1].0, history[1].2.as_str()),
        (a2a::Role::Agent as i32, "Second")
    );
    let refused = a2a
        .subscribe_to_task(a2a::SubscribeToTaskRequest {
            tenant: String::new(),
            id: second.id.clone(),
        })
        .await
        .expect_err("an ended task has no more updates");
    assert_eq!(reason(&refused), "UNSUPPORTED_OPERATION", "{refused:?}");
    let all = list(&mut a2a, a2a::ListTasksRequest::default())
        .await
        .expect("listed after a restart");
    assert_eq!(all.total_size, 3, "{all:?}");

    // An id whose turn is not in its session's log, or that is no id of this server's.
    let (session, _) = second.id.split_once('.').expect("two parts");
    for id in [
        format!("{session}.{}", uuid::Uuid::now_v7()),
        format!("{}.{}", uuid::Uuid::now_v7(), uuid::Uuid::now_v7()),
        format!("{session}/../{session}"),
        second.id.to_uppercase(),
    ] {
        let refused = a2a
            .get_task(a2a::GetTaskRequest {
                id: id.clone(),
                ..Default::default()
            })
            .await
            .expect_err("unknown task");
        assert_eq!(
            (refused.code(), reason(&refused).as_str()),
            (Code::NotFound, "TASK_NOT_FOUND"),
            "{id}: {refused:?}"
        );
    }
    // Another agent's tenant does not see the task.
    server
        .install(&Project::replay("stranger", &[r#"{"text": ["x"]}"#]))
        .await;
    let refused = a2a
        .get_task(a2a::GetTaskRequest {
            tenant: "stranger.main".into(),
            id: second.id.clone(),
            history_length: None,
        })
        .await
        .expect_err("another agent's");
    assert_eq!(reason(&refused), "TASK_NOT_FOUND");
}

#[tokio::test]
async fn a_decision_on_the_task_is_a_message_of_its_history() {
    const BASH_CALL: &str = r#"{"tool_calls": [{"id": "call_a", "name": "Bash", "arguments": {"command": "echo asked"}}]}"#;
    let server = TestServer::start().await;
    server
        .install(&Project::with_tools(
            "judged",
            &[BASH_CALL, r#"{"text": ["Not run."]}"#],
            &["Bash"],
            "[]",
            "[Bash]",
            "[]",
        ))
        .await;
    let mut a2a = client(&server);
    let task = run(&mut a2a, send("judged.main", "", "m-1", "Run it")).await;
    assert_eq!(state(&task), a2a::TaskState::InputRequired, "{task:?}");
    let decision: serde_json::Value =
        serde_json::json!({"decision": "deny", "reason": "not today"});
    let part = odyssey_api::json::from_str::<a2a::Part>(
        &serde_json::json!({"data": decision}).to_string(),
    )
    .expect("a data part");
    let answer = a2a::SendMessageRequest {
        message: Some(a2a::Message {
            message_id: "m-2".into(),
            task_id: task.id.clone(),
            role: a2a::Role::User as i32,
            parts: vec![part],
            ..Default::default()
        }),
        ..Default::default()
    };
    let decided = run(&mut a2a, answer).await;
    assert_eq!(state(&decided), a2a::TaskState::Completed, "{decided:?}");
    let kinds: Vec<(i32, Option<serde_json::Value>, String)> = decided
        .history
        .iter()
        .map(|m| {
            let data = m.parts.iter().find_map(|p| {
                let json = odyssey_api::json::to_value(p).expect("a part's JSON");
                json.get("data").cloned()
            });
            (m.role, data, texts(&m.parts))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (a2a::Role::User as i32, None, "Run it".into()),
            (a2a::Role::User as i32, Some(decision), String::new()),
            (a2a::Role::Agent as i32, None, "Not run.".into()),
        ]
    );
}

#[tokio::test]
async fn the_grpc_binding_refuses_a_version_it_does_not_speak() {
    let server = TestServer::start().await;
    server
        .install(&Project::replay("versioned", &[r#"{"text": ["Fine"]}"#]))
        .await;
    let mut a2a = client(&server);
    let with_version = |version: &str| {
        let mut request = tonic::Request::new(send("versioned.main", "", "m-1", "Hi"));
        request
            .metadata_mut()
            .insert("a2a-version", version.parse().expect("ascii"));
        request
    };
    let refused = a2a
        .send_message(with_version("0.3"))
        .await
        .expect_err("an older version");
    assert_eq!(
        (refused.code(), reason(&refused).as_str()),
        (Code::FailedPrecondition, "VERSION_NOT_SUPPORTED")
    );
    assert!(refused.message().contains("0.3"), "{refused:?}");
    let mut listing = tonic::Request::new(a2a::ListTasksRequest::default());
    listing
        .metadata_mut()
        .insert("a2a-version", "2.0".parse().expect("ascii"));
    let refused = a2a.list_tasks(listing).await.expect_err("a newer version");
    assert_eq!(reason(&refused), "VERSION_NOT_SUPPORTED");
    // Nothing ran: the agent has no task.
    let none = list(&mut a2a, a2a::ListTasksRequest::default())
        .await
        .expect("list");
    assert_eq!(none.total_size, 0);
    let done = a2a
        .send_message(with_version("1.0"))
        .await
        .expect("1.0 is spoken")
        .into_inner();
    assert!(done.payload.is_some());
}

#[tokio::test]
async fn the_operators_default_agent_answers_requests_without_a_tenant() {
    let config_dir = tempfile::tempdir().expect("temp dir");
    let config = config_dir.path().join("odyssey.toml");
    std::fs::write(&config, "[a2a]\ndefault_agent = \"second.main\"\n").expect("config");
    let server = TestServer::start_with(|args| args.config = Some(config.clone())).await;
    let mut a2a = client(&server);
    // Named but not installed: the setting is named.
    let refused = a2a
        .send_message(send("", "", "m-0", "Hi"))
        .await
        .expect_err("no such agent yet");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(
        refused.message().contains("a2a.default_agent"),
        "{refused:?}"
    );
    // `first` sorts first, and would be the default without the setting.
    server
        .install(&Project::replay("first", &[r#"{"text": ["From first"]}"#]))
        .await;
    server
        .install(&Project::replay(
            "second",
            &[r#"{"text": ["From second"]}"#],
        ))
        .await;
    let task = run(&mut a2a, send("", "", "m-1", "Who are you?")).await;
    assert_eq!(texts(&task.artifacts[0].parts), "From second");
    let session = server.get_session(&task.context_id).await;
    assert_eq!(
        (session.bundle_reference.as_str(), session.agent_id.as_str()),
        ("second", "main"),
        "{session:?}"
    );
}
