//! A2A push notifications: a webhook registered for a task gets its updates as
//! `StreamResponse` JSON, in order, with the credentials the client gave, a failed delivery
//! retried; only to URLs the operator allows (`a2a.push_allowed_urls`); configs are
//! created, read, listed and deleted while their task runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use odyssey_api::a2a::v1 as a2a;
use odyssey_api::a2a::v1::a2a_service_client::A2aServiceClient;
use serde_json::Value;
use tokio::sync::mpsc;
use tonic::Code;
use tonic_types::StatusExt;

use crate::support::{Project, TestServer, loopback};

/// What the webhook received: the authorization header and the body.
type Received = (String, Value);

#[derive(Clone)]
struct Receiver {
    sent: mpsc::UnboundedSender<Received>,
    /// Requests answered so far; the first is answered 503, to be retried.
    count: Arc<Mutex<usize>>,
}

async fn hook(
    State(receiver): State<Receiver>,
    headers: http::HeaderMap,
    body: Bytes,
) -> http::StatusCode {
    let first = {
        let mut count = receiver.count.lock().expect("count");
        *count += 1;
        *count == 1
    };
    if first {
        return http::StatusCode::SERVICE_UNAVAILABLE;
    }
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let _ = receiver.sent.send((auth, body));
    http::StatusCode::OK
}

fn send(context_id: &str, message_id: &str, prompt: &str) -> a2a::SendMessageRequest {
    a2a::SendMessageRequest {
        tenant: "pushy.main".into(),
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
        configuration: Some(a2a::SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with_push(mut request: a2a::SendMessageRequest, url: &str) -> a2a::SendMessageRequest {
    if let Some(configuration) = request.configuration.as_mut() {
        configuration.task_push_notification_config = Some(a2a::TaskPushNotificationConfig {
            url: url.into(),
            authentication: Some(a2a::AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "receiver-secret".into(),
            }),
            ..Default::default()
        });
    }
    request
}

fn task_of(response: a2a::SendMessageResponse) -> a2a::Task {
    match response.payload {
        Some(a2a::send_message_response::Payload::Task(task)) => task,
        other => panic!("a task, not {other:?}"),
    }
}

fn reason(status: &tonic::Status) -> String {
    status
        .get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_tasks_updates_are_pushed_to_an_allowed_webhook_in_order_with_its_credentials() {
    let (sent, mut received) = mpsc::unbounded_channel();
    let receiver = Receiver {
        sent,
        count: Arc::new(Mutex::new(0)),
    };
    let listener = tokio::net::TcpListener::bind(loopback())
        .await
        .expect("bind");
    let hook_addr = listener.local_addr().expect("addr");
    let app = Router::new()
        .route("/hook", post(hook))
        .with_state(receiver);
    tokio::spawn(async move { axum::serve(listener, app).await });

    let config_dir = tempfile::tempdir().expect("temp dir");
    let config = config_dir.path().join("odyssey.toml");
    std::fs::write(
        &config,
        format!("[a2a]\npush_allowed_urls = [\"http://{hook_addr}/*\"]\n"),
    )
    .expect("config");
    let server = TestServer::start_with(|args| {
        args.config = Some(config.clone());
        args.http_listen = Some(loopback());
    })
    .await;
    server
        .install(&Project::replay(
            "pushy",
            &[
                r#"{"text": ["p0 ", "p1 ", "p2"], "chunk_delay_ms": 100}"#,
                r#"{"text": ["slow0 ", "slow1 ", "slow2 ", "slow3"], "chunk_delay_ms": 1000}"#,
            ],
        ))
        .await;
    let mut a2a = A2aServiceClient::new(server.channel.clone());
    let hook_url = format!("http://{hook_addr}/hook");

    // The card says pushes are offered.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let card: Value = reqwest::get(format!(
        "http://{}/.well-known/agent-card.json",
        server.handle.http_addr().expect("gateway")
    ))
    .await
    .expect("card")
    .json()
    .await
    .expect("JSON");
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");

    // A URL the operator does not allow is refused, naming the setting; nothing runs.
    let refused = a2a
        .send_message(with_push(
            send("", "m-0", "Hi"),
            "http://127.0.0.1:9/elsewhere",
        ))
        .await
        .expect_err("not allowed");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(
        refused.message().contains("a2a.push_allowed_urls"),
        "{refused:?}"
    );
    let listed = a2a
        .list_tasks(a2a::ListTasksRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.total_size, 0, "nothing ran: {listed:?}");

    // A message that starts a task with a webhook: every update, in order, then the end.
    let task = task_of(
        a2a.send_message(with_push(send("", "m-1", "Count"), &hook_url))
            .await
            .expect("send")
            .into_inner(),
    );
    let mut updates = Vec::new();
    loop {
        let (auth, body) = tokio::time::timeout(Duration::from_secs(20), received.recv())
            .await
            .expect("pushes come")
            .expect("the receiver runs");
        assert_eq!(auth, "Bearer receiver-secret");
        let done = body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED";
        updates.push(body);
        if done {
            break;
        }
    }
    assert_eq!(
        updates[0]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING",
        "the first update, delivered on its second attempt: {updates:?}"
    );
    assert!(
        updates
            .iter()
            .all(|u| u["statusUpdate"]["taskId"] == task.id.as_str()
                || u["artifactUpdate"]["taskId"] == task.id.as_str()),
        "{updates:?}"
    );
    let text: String = updates
        .iter()
        .filter_map(|u| u["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "p0 p1 p2");
    let sequences: Vec<u64> = updates
        .iter()
        .filter_map(|u| {
            u.get("statusUpdate")
                .or(u.get("artifactUpdate"))
                .and_then(|e| e["metadata"]["odysseySequence"].as_u64())
        })
        .collect();
    assert!(
        sequences.windows(2).all(|w| w[0] <= w[1]),
        "in order: {sequences:?}"
    );

    // Configs of a running task: created, read, listed, deleted.
    let slow = task_of(
        a2a.send_message(send(&task.context_id, "m-2", "Slowly"))
            .await
            .expect("send")
            .into_inner(),
    );
    let created = a2a
        .create_task_push_notification_config(a2a::TaskPushNotificationConfig {
            task_id: slow.id.clone(),
            id: "mine".into(),
            url: hook_url.clone(),
            token: "t-1".into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    assert_eq!(
        (created.id.as_str(), created.task_id.as_str()),
        ("mine", slow.id.as_str())
    );
    let got = a2a
        .get_task_push_notification_config(a2a::GetTaskPushNotificationConfigRequest {
            task_id: slow.id.clone(),
            id: "mine".into(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got.url, hook_url);
    let listed = a2a
        .list_task_push_notification_configs(a2a::ListTaskPushNotificationConfigsRequest {
            task_id: slow.id.clone(),
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.configs.len(), 1);
    // The same registry over the HTTP bindings.
    let gateway = format!("http://{}", server.handle.http_addr().expect("gateway"));
    let http = reqwest::Client::new();
    let rest: Value = http
        .get(format!(
            "{gateway}/a2a/tasks/{}/pushNotificationConfigs",
            slow.id
        ))
        .send()
        .await
        .expect("REST list")
        .json()
        .await
        .expect("JSON");
    assert_eq!(rest["configs"][0]["id"], "mine", "{rest}");
    assert_eq!(rest["configs"][0]["token"], "t-1", "{rest}");
    let rpc: Value = http
        .post(format!("{gateway}/a2a/jsonrpc"))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1,
            "method": "GetTaskPushNotificationConfig",
            "params": {"taskId": slow.id, "id": "mine"}}))
        .send()
        .await
        .expect("JSON-RPC get")
        .json()
        .await
        .expect("JSON");
    assert_eq!(rpc["result"]["url"], hook_url.as_str(), "{rpc}");
    let bad_id = a2a
        .create_task_push_notification_config(a2a::TaskPushNotificationConfig {
            task_id: slow.id.clone(),
            id: "../x".into(),
            url: hook_url.clone(),
            ..Default::default()
        })
        .await
        .expect_err("a bad id");
    assert_eq!(bad_id.code(), Code::InvalidArgument, "{bad_id:?}");
    a2a.delete_task_push_notification_config(a2a::DeleteTaskPushNotificationConfigRequest {
        task_id: slow.id.clone(),
        id: "mine".into(),
        ..Default::default()
    })
    .await
    .expect("delete");
    let gone = a2a
        .get_task_push_notification_config(a2a::GetTaskPushNotificationConfigRequest {
            task_id: slow.id.clone(),
            id: "mine".into(),
            ..Default::default()
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound, "{gone:?}");

    // An ended task takes no config; an unknown one is not found.
    let ended = a2a
        .create_task_push_notification_config(a2a::TaskPushNotificationConfig {
            task_id: task.id.clone(),
            url: hook_url.clone(),
            ..Default::default()
        })
        .await
        .expect_err("ended");
    assert_eq!(reason(&ended), "UNSUPPORTED_OPERATION", "{ended:?}");
    let unknown = a2a
        .create_task_push_notification_config(a2a::TaskPushNotificationConfig {
            task_id: format!("{}.{}", task.context_id, uuid::Uuid::now_v7()),
            url: hook_url.clone(),
            ..Default::default()
        })
        .await
        .expect_err("unknown");
    assert_eq!(reason(&unknown), "TASK_NOT_FOUND", "{unknown:?}");
    a2a.cancel_task(a2a::CancelTaskRequest {
        id: slow.id.clone(),
        ..Default::default()
    })
    .await
    .expect("cancel");
}
