//! The Agent2Agent protocol's HTTP+JSON binding (under `/a2a/` on the HTTP listener):
//! behind the token, the specification's paths with and without the tenant run, get,
//! list, stream and cancel tasks, and errors are `google.rpc.Status` bodies with A2A's
//! HTTP statuses and reasons.

use serde_json::{Value, json};

use crate::support::{Project, TestServer, loopback};

const TOKEN: &str = "rest-token";

struct Rest {
    http: reqwest::Client,
    base: String,
}

impl Rest {
    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("get");
        let status = response.status().as_u16();
        (status, response.json().await.expect("JSON"))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self.post_raw(path, body).await;
        let status = response.status().as_u16();
        (status, response.json().await.expect("JSON"))
    }

    async fn post_raw(&self, path: &str, body: Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(TOKEN)
            .header("content-type", "application/a2a+json")
            .body(body.to_string())
            .send()
            .await
            .expect("post")
    }
}

fn message(message_id: &str, text: &str) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// The reason of an error body's ErrorInfo.
fn reason(body: &Value) -> &str {
    body["error"]["details"]
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|d| d["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .and_then(|info| info["reason"].as_str())
        .unwrap_or("")
}

/// The `data` of every server-sent event of a stream, as JSON.
async fn events(response: reqwest::Response) -> Vec<(String, Value)> {
    let text = response.text().await.expect("the stream");
    text.split("\n\n")
        .filter_map(|event| {
            let name = event
                .lines()
                .find_map(|l| l.strip_prefix("event:"))
                .map_or("message".to_owned(), |n| n.trim().to_owned());
            let data = event.lines().find_map(|l| l.strip_prefix("data:"))?;
            Some((name, serde_json::from_str(data.trim()).expect("JSON data")))
        })
        .collect()
}

#[tokio::test]
async fn the_http_json_binding_runs_lists_streams_and_cancels_tasks_at_the_specifications_paths() {
    let server = TestServer::start_with(|args| {
        args.auth_token = Some(TOKEN.into());
        args.http_listen = Some(loopback());
    })
    .await;
    let project = Project::replay(
        "resty",
        &[
            r#"{"text": ["Plain answer"]}"#,
            r#"{"text": ["one ", "two"]}"#,
            r#"{"text": ["w0 ", "w1 ", "w2 ", "w3 ", "w4 ", "w5 ", "w6 ", "w7"], "chunk_delay_ms": 500}"#,
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

    // The card leads to the binding.
    let card: Value = http
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("card JSON");
    let interface = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|i| i["protocolBinding"] == "HTTP+JSON")
        .unwrap_or_else(|| panic!("an HTTP+JSON interface: {card}"))
        .clone();
    assert_eq!(interface["url"], format!("{base}/a2a"), "{card}");
    assert_eq!(interface["tenant"], "resty.main", "{card}");
    let rest = Rest {
        http: http.clone(),
        base: format!("{base}/a2a"),
    };

    // Without the token: 401, and nothing runs.
    let response = http
        .post(format!("{base}/a2a/message:send"))
        .header("content-type", "application/json")
        .body(message("m-0", "Hi").to_string())
        .send()
        .await
        .expect("post");
    assert_eq!(response.status().as_u16(), 401);

    // A message, with the tenant in the path.
    let (status, sent) = rest
        .post("/resty.main/message:send", message("m-1", "Say it"))
        .await;
    assert_eq!(status, 200, "{sent}");
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Plain answer");
    let id = task["id"].as_str().expect("id").to_owned();
    let context = task["contextId"].as_str().expect("context").to_owned();

    // Get it, with and without the tenant, its history cut by the query.
    let (status, got) = rest.get(&format!("/tasks/{id}?historyLength=1")).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1), "{got}");
    let (status, got) = rest.get(&format!("/resty.main/tasks/{id}")).await;
    assert_eq!(
        (status, got["id"].as_str()),
        (200, Some(id.as_str())),
        "{got}"
    );

    // A streamed message on the same context: the task, then updates, as events.
    let response = rest
        .post_raw(
            "/message:stream",
            json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "contextId": context,
                               "parts": [{"text": "Count"}]}}),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let streamed = events(response).await;
    assert!(streamed[0].1.get("task").is_some(), "{streamed:?}");
    let text: String = streamed
        .iter()
        .filter_map(|(_, e)| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "one two");
    assert_eq!(
        streamed
            .last()
            .map(|(_, e)| e["statusUpdate"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_COMPLETED"))
    );

    // Both tasks of the context, most recent first.
    let (status, listed) = rest
        .get(&format!(
            "/resty.main/tasks?contextId={context}&pageSize=10"
        ))
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["totalSize"], 2, "{listed}");
    assert_eq!(listed["tasks"][1]["id"], id.as_str(), "{listed}");
    assert_eq!(listed["nextPageToken"], "", "{listed}");
    let (status, listed) = rest
        .get("/tasks?status=TASK_STATE_COMPLETED&pageSize=1&includeArtifacts=true")
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["tasks"][0]["artifacts"][0]["parts"][0]["text"], "one two",
        "{listed}"
    );
    assert!(
        listed["nextPageToken"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );

    // The context's next (slow) task: subscribe (POST, as SDKs do), then cancel it.
    let (status, sent) = rest
        .post(
            "/message:send",
            json!({"message": {"messageId": "m-3", "role": "ROLE_USER", "contextId": context,
                               "parts": [{"text": "Slowly"}]},
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    let slow = sent["task"]["id"].as_str().expect("id").to_owned();
    let subscribe_path = format!("/tasks/{slow}:subscribe");
    let subscriber = rest.post_raw(&subscribe_path, json!({}));
    let cancel = async {
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        rest.post(&format!("/tasks/{slow}:cancel"), json!({})).await
    };
    let (subscribed, (status, cancelled)) = tokio::join!(subscriber, cancel);
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(
        cancelled["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let updates = events(subscribed).await;
    assert_eq!(
        updates
            .last()
            .map(|(_, e)| e["statusUpdate"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_CANCELED")),
        "{updates:?}"
    );

    // Errors: google.rpc.Status bodies with A2A's statuses and reasons.
    let unknown = format!("{context}.{}", uuid::Uuid::now_v7());
    let (status, body) = rest.get(&format!("/tasks/{unknown}")).await;
    assert_eq!((status, reason(&body)), (404, "TASK_NOT_FOUND"), "{body}");
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body}");
    let (status, body) = rest.post(&format!("/tasks/{id}:cancel"), json!({})).await;
    assert_eq!(
        (status, reason(&body)),
        (400, "TASK_NOT_CANCELABLE"),
        "{body}"
    );
    let (status, body) = rest.get(&format!("/tasks/{id}:subscribe")).await;
    assert_eq!(
        (status, reason(&body)),
        (400, "UNSUPPORTED_OPERATION"),
        "{body}"
    );
    let (status, body) = rest
        .post("/message:send", json!({"message": {"role": "ROLE_USER"}}))
        .await;
    assert_eq!(
        (status, body["error"]["status"].as_str()),
        (400, Some("INVALID_ARGUMENT")),
        "{body}"
    );
    let (status, body) = rest.get("/tasks?pageToken=forged").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = rest.get("/nowhere").await;
    assert_eq!(status, 404, "{body}");
    let response = http
        .post(format!("{base}/a2a/message:send"))
        .bearer_auth(TOKEN)
        .header("content-type", "text/plain")
        .body(message("m-9", "Hi").to_string())
        .send()
        .await
        .expect("post");
    assert_eq!(
        response.status().as_u16(),
        400,
        "a body must be declared JSON"
    );
    let response = http
        .get(format!("{base}/a2a/tasks/{id}"))
        .bearer_auth(TOKEN)
        .header("a2a-version", "0.3")
        .send()
        .await
        .expect("get");
    assert_eq!(response.status().as_u16(), 400);
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(reason(&body), "VERSION_NOT_SUPPORTED", "{body}");
}
