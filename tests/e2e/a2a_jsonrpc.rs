//! The Agent2Agent protocol's JSON-RPC binding (`POST /a2a/jsonrpc` on the HTTP listener):
//! behind the token, a message runs a task, a streamed one comes as server-sent events of
//! JSON-RPC responses, an input-required task is answered with a decision, and bad
//! requests get JSON-RPC's and A2A's codes and change nothing.

use odyssey_runtime::{PageRequest, SessionFilter};
use serde_json::{Value, json};

use crate::support::{Project, TestServer, loopback};

const TOKEN: &str = "jsonrpc-token";

struct Rpc {
    http: reqwest::Client,
    url: String,
}

impl Rpc {
    /// Posts `body` (with the token) and returns the HTTP response.
    async fn post(&self, body: String) -> reqwest::Response {
        self.http
            .post(&self.url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("post")
    }

    /// Calls `method` and returns the JSON-RPC response object.
    async fn call(&self, method: &str, params: Value) -> Value {
        let request = json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params});
        let response = self.post(request.to_string()).await;
        assert_eq!(response.status(), reqwest::StatusCode::OK);
        response.json().await.expect("JSON-RPC response")
    }
}

fn message(message_id: &str, parts: Value) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": parts}})
}

/// The error of a JSON-RPC response: its code, and the reason of its ErrorInfo if any.
fn error_of(response: &Value) -> (i64, Option<String>) {
    assert!(response.get("result").is_none(), "{response}");
    let error = &response["error"];
    let reason = error["data"]
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .and_then(|info| info["reason"].as_str())
        .map(str::to_owned);
    (error["code"].as_i64().expect("an error code"), reason)
}

async fn session_count(server: &TestServer) -> usize {
    server
        .handle
        .runtime()
        .list_sessions(SessionFilter::default(), PageRequest::first(100))
        .await
        .expect("list sessions")
        .items
        .len()
}

#[tokio::test]
async fn jsonrpc_runs_tasks_streams_them_as_events_and_answers_bad_calls_with_a2a_codes() {
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
    })
    .await;
    let project = Project::replay(
        "rpcy",
        &[
            r#"{"text": ["Plain answer"]}"#,
            r#"{"text": ["one ", "two ", "three"]}"#,
        ],
    );
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base = format!(
        "http://{}",
        server.handle.http_addr().expect("the gateway runs")
    );
    let http = reqwest::Client::new();

    // The card leads to the binding, with the agent's tenant.
    let card: Value = http
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("get card")
        .json()
        .await
        .expect("card JSON");
    let interface = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|i| i["protocolBinding"] == "JSONRPC")
        .unwrap_or_else(|| panic!("a JSONRPC interface: {card}"))
        .clone();
    assert_eq!(interface["url"], format!("{base}/a2a/jsonrpc"), "{card}");
    assert_eq!(interface["tenant"], "rpcy.main", "{card}");
    assert_eq!(interface["protocolVersion"], "1.0", "{card}");
    // How to answer an input-required task is declared beside it.
    let extension = &card["capabilities"]["extensions"][0];
    assert_eq!(
        extension["uri"], "urn:odyssey:a2a:approval-decision:v1",
        "{card}"
    );
    assert_eq!(
        extension["params"]["decisionSchema"]["properties"]["decision"]["enum"],
        json!(["allow_once", "allow_always", "deny"]),
        "{card}"
    );
    // So is the sequence number every streamed update carries.
    assert_eq!(
        card["capabilities"]["extensions"][1]["uri"], "urn:odyssey:a2a:event-sequence:v1",
        "{card}"
    );
    assert_eq!(
        card["capabilities"]["extensions"][1]["params"]["metadataKey"], "odysseySequence",
        "{card}"
    );
    let rpc = Rpc {
        http: http.clone(),
        url: interface["url"].as_str().expect("url").to_owned(),
    };

    // Without the token: refused before any JSON-RPC.
    let refused = http
        .post(&rpc.url)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .expect("post");
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);

    // Bad calls: the envelope's codes, then A2A's, and no session is opened.
    let response: Value = rpc
        .post("{not json".into())
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(error_of(&response).0, -32700, "{response}");
    assert_eq!(response["id"], Value::Null);
    let response: Value = rpc
        .post(json!({"id": 5, "method": "GetTask"}).to_string())
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(error_of(&response).0, -32600, "{response}");
    assert_eq!(response["id"], 5);
    let form = http
        .post(&rpc.url)
        .bearer_auth(TOKEN)
        .header("content-type", "text/plain")
        .body(json!({"jsonrpc": "2.0", "id": 6, "method": "SendMessage"}).to_string())
        .send()
        .await
        .expect("post");
    let response: Value = form.json().await.expect("json");
    assert_eq!(
        error_of(&response).0,
        -32600,
        "not JSON by its type: {response}"
    );
    let old: Value = http
        .post(&rpc.url)
        .bearer_auth(TOKEN)
        .header("a2a-version", "0.3")
        .json(&json!({"jsonrpc": "2.0", "id": 8, "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("json");
    assert_eq!(
        error_of(&old),
        (-32009, Some("VERSION_NOT_SUPPORTED".into())),
        "{old}"
    );
    let response = rpc.call("SendMail", json!({})).await;
    assert_eq!(error_of(&response).0, -32601, "{response}");
    let response = rpc.call("GetTask", json!({"id": 7, "colour": "red"})).await;
    assert_eq!(error_of(&response).0, -32602, "{response}");
    let response = rpc
        .call("GetTask", json!({"id": uuid::Uuid::new_v4().to_string()}))
        .await;
    assert_eq!(
        error_of(&response),
        (-32001, Some("TASK_NOT_FOUND".into())),
        "{response}"
    );
    let response = rpc
        .call(
            "SendMessage",
            message("m-data", json!([{"data": {"decision": "allow_once"}}])),
        )
        .await;
    assert_eq!(
        error_of(&response),
        (-32005, Some("CONTENT_TYPE_NOT_SUPPORTED".into())),
        "{response}"
    );
    let response = rpc
        .call("SendMessage", message("", json!([{"text": "hi"}])))
        .await;
    assert_eq!(error_of(&response).0, -32602, "{response}");
    let violation = &response["error"]["data"][1]["fieldViolations"][0];
    assert_eq!(violation["field"], "message.message_id", "{response}");
    let response = rpc
        .call(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "t", "url": "https://example.com/hook"}),
        )
        .await;
    assert_eq!(
        error_of(&response),
        (-32003, Some("PUSH_NOTIFICATION_NOT_SUPPORTED".into())),
        "{response}"
    );
    assert_eq!(session_count(&server).await, 0, "bad calls open no session");

    // A message is a task, answered once its turn ends; the tenant picks the agent.
    let mut params = message("m-1", json!([{"text": "Hello"}]));
    params["tenant"] = interface["tenant"].clone();
    let response = rpc.call("SendMessage", params).await;
    assert_eq!(response["id"], "r-1", "{response}");
    let task = &response["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{response}"
    );
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "Plain answer",
        "{response}"
    );
    assert_eq!(task["history"][0]["messageId"], "m-1", "{response}");
    let task_id = task["id"].as_str().expect("task id").to_owned();
    let context_id = task["contextId"].as_str().expect("context id").to_owned();
    let response = rpc
        .call("GetTask", json!({"id": task_id, "historyLength": 1}))
        .await;
    assert_eq!(response["result"]["id"], task_id.as_str(), "{response}");
    assert_eq!(
        response["result"]["history"].as_array().map(Vec::len),
        Some(1)
    );
    let response = rpc.call("CancelTask", json!({"id": task_id})).await;
    assert_eq!(
        error_of(&response),
        (-32002, Some("TASK_NOT_CANCELABLE".into())),
        "{response}"
    );

    // A streamed task in the same context: server-sent events, each a JSON-RPC response.
    let mut params = message("m-2", json!([{"text": "Count"}]));
    params["message"]["contextId"] = json!(context_id);
    let request =
        json!({"jsonrpc": "2.0", "id": 42, "method": "SendStreamingMessage", "params": params});
    let response = rpc.post(request.to_string()).await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    let content_type = response.headers()[reqwest::header::CONTENT_TYPE]
        .to_str()
        .expect("content type")
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    let body = tokio::time::timeout(std::time::Duration::from_secs(30), response.text())
        .await
        .expect("the stream ends with the task")
        .expect("stream body");
    let events: Vec<Value> = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).expect("an event is JSON"))
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["jsonrpc"] == "2.0" && e["id"] == 42),
        "{body}"
    );
    let results: Vec<&Value> = events.iter().map(|e| &e["result"]).collect();
    assert_eq!(
        results[0]["task"]["contextId"],
        context_id.as_str(),
        "{body}"
    );
    let chunks: String = results
        .iter()
        .filter_map(|r| r["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(chunks, "one two three", "{body}");
    let last = results.last().expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    assert!(
        last["statusUpdate"]["metadata"]["odysseySequence"].is_number(),
        "{body}"
    );

    // Subscribing to the ended task is refused before any stream: one JSON error.
    let streamed_id = results[0]["task"]["id"].as_str().expect("id");
    let response = rpc
        .call("SubscribeToTask", json!({"id": streamed_id}))
        .await;
    assert_eq!(
        error_of(&response),
        (-32004, Some("UNSUPPORTED_OPERATION".into())),
        "{response}"
    );
    assert_eq!(session_count(&server).await, 1);
}

#[tokio::test]
async fn jsonrpc_answers_an_input_required_task_with_the_decision_of_a_data_part() {
    const CALL: &str = r#"{"tool_calls": [{"id": "call_a", "name": "Bash", "arguments": {"command": "echo asked"}}]}"#;
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
    })
    .await;
    let project = Project::with_tools(
        "asky",
        &[CALL, r#"{"text": ["Not run."]}"#],
        &["Bash"],
        "[]",
        "[Bash]",
        "[]",
    );
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rpc = Rpc {
        http: reqwest::Client::new(),
        url: format!(
            "http://{}/a2a/jsonrpc",
            server.handle.http_addr().expect("the gateway runs")
        ),
    };
    let response = rpc
        .call("SendMessage", message("m-1", json!([{"text": "Run it"}])))
        .await;
    let task = &response["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{response}"
    );
    let (task_id, context_id) = (task["id"].clone(), task["contextId"].clone());
    let answer = |message_id: &str, data: Value| {
        json!({"message": {
            "messageId": message_id, "role": "ROLE_USER", "taskId": task_id,
            "contextId": context_id, "parts": [{"data": data}],
        }})
    };

    // A decision of the wrong shape is invalid params, and the task still waits.
    let response = rpc
        .call("SendMessage", answer("m-2", json!({"decision": "yes"})))
        .await;
    assert_eq!(error_of(&response).0, -32602, "{response}");
    let field = &response["error"]["data"][1]["fieldViolations"][0]["field"];
    assert_eq!(field, "message.parts[0].data", "{response}");
    let response = rpc.call("GetTask", json!({"id": task_id})).await;
    assert_eq!(
        response["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{response}"
    );

    // The deny resolves the approval: the turn goes on to its end without the call.
    let response = rpc
        .call(
            "SendMessage",
            answer("m-3", json!({"decision": "deny", "reason": "not today"})),
        )
        .await;
    let task = &response["result"]["task"];
    assert_eq!(task["id"], task_id, "{response}");
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{response}"
    );
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "Not run.",
        "{response}"
    );
    let pending = server
        .handle
        .runtime()
        .list_approvals(None, PageRequest::first(10))
        .expect("approvals")
        .items;
    assert!(pending.is_empty(), "nothing waits any more");
}

/// The results of a JSON-RPC event stream's events, read until it ends or `enough` of
/// them came (then the connection is dropped).
async fn read_events(response: reqwest::Response, enough: usize) -> Vec<Value> {
    use futures::StreamExt;
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let mut results = Vec::new();
    while results.len() < enough {
        let Some(chunk) = body.next().await else {
            break;
        };
        text.push_str(std::str::from_utf8(&chunk.expect("chunk")).expect("UTF-8"));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            for data in event.lines().filter_map(|l| l.strip_prefix("data:")) {
                let response: Value = serde_json::from_str(data.trim()).expect("JSON");
                results.push(response["result"].clone());
            }
        }
    }
    results
}

#[tokio::test]
async fn jsonrpc_subscribers_that_reconnect_get_the_whole_turn_again() {
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
    })
    .await;
    let project = Project::replay(
        "slowy",
        &[r#"{"text": ["w0 ", "w1 ", "w2 ", "w3 ", "w4 ", "w5"], "chunk_delay_ms": 150}"#],
    );
    server
        .handle
        .runtime()
        .build_and_install(project.path(), Default::default())
        .await
        .expect("install");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rpc = Rpc {
        http: reqwest::Client::new(),
        url: format!(
            "http://{}/a2a/jsonrpc",
            server.handle.http_addr().expect("the gateway runs")
        ),
    };
    let mut params = message("m-1", json!([{"text": "Go slowly"}]));
    params["configuration"] = json!({"returnImmediately": true});
    let response = rpc.call("SendMessage", params).await;
    let task_id = response["result"]["task"]["id"].clone();
    assert!(task_id.is_string(), "{response}");
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": task_id}})
            .to_string();

    // A first subscriber leaves after a few events.
    let first = read_events(rpc.post(subscribe.clone()).await, 3).await;
    assert_eq!(first.len(), 3, "{first:?}");
    assert_eq!(first[0]["task"]["id"], task_id);

    // Subscribing again replays the turn from its start: the whole answer, then the end.
    let again = read_events(rpc.post(subscribe).await, usize::MAX).await;
    let text: String = again
        .iter()
        .filter_map(|r| r["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "w0 w1 w2 w3 w4 w5", "{again:?}");
    let last = again.last().expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{again:?}"
    );
}
