//! The HTTP+JSON binding of A2A v1.0 on the HTTP listener, under `/a2a/`, behind the
//! gateway's token: the specification's paths (`POST /message:send`, `GET /tasks/{id}`,
//! ...), each optionally after the tenant (`/a2a/demo.assistant/tasks/{id}`; a tenant
//! outside the `local` namespace spans two segments, `acme/demo.assistant`). Bodies and
//! answers are the `lf.a2a.v1` messages in their proto3 JSON form, query parameters their
//! camelCase fields; every call is translated by the gRPC binding's code ([`A2a`]), as the
//! JSON-RPC binding's are. Errors are `google.rpc.Status` in JSON with the specification's
//! HTTP status, and A2A's errors carry their `google.rpc.ErrorInfo`; streams are
//! server-sent events, one `StreamResponse` per event, and an error once a stream has
//! started is an `error` event.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::any;
use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode};
use odyssey_api::a2a::v1 as pb;
use odyssey_api::a2a::v1::a2a_service_server::A2aService;
use prost::{Message, Name};
use serde_json::{Map, Value, json};
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

use super::error::{A2A_ERROR_DOMAIN, A2aError};
use super::jsonrpc;
use super::service::A2a;
use super::stream::TaskStream;

/// Where the binding is served: the interface URL cards give.
pub const BASE: &str = "/a2a";

/// The header in which a client names the A2A version it speaks.
const VERSION_HEADER: &str = "a2a-version";

#[derive(Clone)]
struct Binding {
    a2a: Arc<A2a>,
    heartbeat: Duration,
}

/// The binding's routes; the caller puts them behind the token.
pub fn routes(a2a: Arc<A2a>, heartbeat: Duration) -> Router {
    Router::new()
        .route("/a2a/{*path}", any(call))
        .with_state(Binding { a2a, heartbeat })
}

/// An operation of the binding, read from the path after `/a2a/`.
#[derive(Debug, PartialEq, Eq)]
enum Operation {
    SendMessage,
    SendStreamingMessage,
    GetTask(String),
    ListTasks,
    CancelTask(String),
    SubscribeToTask(String),
    CreatePushConfig(String),
    ListPushConfigs(String),
    GetPushConfig(String, String),
    DeletePushConfig(String, String),
    GetExtendedAgentCard,
}

/// The tenant and operation a path names (segments after `/a2a/`), read from its end so
/// that a tenant may span segments; `None` for a path that is no operation of A2A's.
fn route(method: &Method, path: &str) -> Result<(String, Operation), Status> {
    let segments: Vec<&str> = path.split('/').collect();
    let n = segments.len();
    let at = |i: usize| segments.get(i).copied().unwrap_or("");
    let tenant = |used: usize| segments[..n - used].join("/");
    let not_allowed = || {
        Status::new(
            Code::Unimplemented,
            format!("{method} is not allowed on /a2a/{path}"),
        )
    };
    let id = |s: &str| s.to_owned();
    // `tasks/{id}/pushNotificationConfigs/{configId}`
    if n >= 4 && at(n - 4) == "tasks" && at(n - 2) == "pushNotificationConfigs" {
        let (task, config) = (id(at(n - 3)), id(at(n - 1)));
        let op = match *method {
            Method::GET => Operation::GetPushConfig(task, config),
            Method::DELETE => Operation::DeletePushConfig(task, config),
            _ => return Err(not_allowed()),
        };
        return Ok((tenant(4), op));
    }
    // `tasks/{id}/pushNotificationConfigs`
    if n >= 3 && at(n - 3) == "tasks" && at(n - 1) == "pushNotificationConfigs" {
        let task = id(at(n - 2));
        let op = match *method {
            Method::POST => Operation::CreatePushConfig(task),
            Method::GET => Operation::ListPushConfigs(task),
            _ => return Err(not_allowed()),
        };
        return Ok((tenant(3), op));
    }
    // `tasks/{id}`, `tasks/{id}:cancel`, `tasks/{id}:subscribe`
    if n >= 2 && at(n - 2) == "tasks" && !at(n - 1).is_empty() {
        let last = at(n - 1);
        let op = if let Some(task) = last.strip_suffix(":cancel") {
            match *method {
                Method::POST => Operation::CancelTask(id(task)),
                _ => return Err(not_allowed()),
            }
        } else if let Some(task) = last.strip_suffix(":subscribe") {
            // The specification's table says GET, its SDKs send POST: both are taken.
            match *method {
                Method::GET | Method::POST => Operation::SubscribeToTask(id(task)),
                _ => return Err(not_allowed()),
            }
        } else {
            match *method {
                Method::GET => Operation::GetTask(id(last)),
                _ => return Err(not_allowed()),
            }
        };
        return Ok((tenant(2), op));
    }
    let op = match (at(n - 1), method) {
        ("message:send", &Method::POST) => Operation::SendMessage,
        ("message:stream", &Method::POST) => Operation::SendStreamingMessage,
        ("tasks", &Method::GET) => Operation::ListTasks,
        ("extendedAgentCard", &Method::GET) => Operation::GetExtendedAgentCard,
        ("message:send" | "message:stream" | "tasks" | "extendedAgentCard", _) => {
            return Err(not_allowed());
        }
        _ => {
            return Err(Status::not_found(format!(
                "no A2A operation at /a2a/{}; the HTTP+JSON binding serves message:send, \
                 message:stream, tasks, tasks/{{id}}, tasks/{{id}}:cancel, \
                 tasks/{{id}}:subscribe and extendedAgentCard, each optionally after the \
                 tenant",
                crate::grpc::shorten(path)
            )));
        }
    };
    Ok((tenant(1), op))
}

/// The HTTP status of a refused call: A2A's errors as the specification's table maps
/// them, Odyssey's by their gRPC code.
fn http_status(status: &Status) -> StatusCode {
    let details = status.get_error_details();
    if let Some(info) = details
        .error_info()
        .filter(|info| info.domain == A2A_ERROR_DOMAIN)
    {
        return match info.reason.as_str() {
            "TASK_NOT_FOUND" => StatusCode::NOT_FOUND,
            "INVALID_AGENT_RESPONSE" => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        };
    }
    match status.code() {
        Code::InvalidArgument | Code::OutOfRange | Code::FailedPrecondition => {
            StatusCode::BAD_REQUEST
        }
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::METHOD_NOT_ALLOWED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A status as the body of an error answer: `google.rpc.Status` in JSON.
fn error_body(status: &Status, http: StatusCode) -> Value {
    json!({"error": {
        "code": http.as_u16(),
        "status": grpc_code_name(status.code()),
        "message": status.message(),
        "details": jsonrpc::status_details(status),
    }})
}

fn grpc_code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

fn refused(status: Status) -> Response {
    let http = http_status(&status);
    (http, Json(error_body(&status, http))).into_response()
}

/// A request message from JSON (a body, or query parameters with the path's values), as
/// bad input: `INVALID_ARGUMENT` naming the message.
fn parse<M: Message + Name + Default>(value: &Value) -> Result<M, Status> {
    jsonrpc::params::<M>(value).map_err(|e| crate::grpc::invalid("body", e.message))
}

fn encoded<M: Message + Name>(message: &M) -> Response {
    match jsonrpc::result(message) {
        Ok(value) => Json(value).into_response(),
        Err(e) => refused(Status::internal(e.message)),
    }
}

/// Whether a body is declared JSON (`application/json` or A2A's `application/a2a+json`).
/// Required of a body, so that a browser's plain form post is never taken for a call.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| {
            let essence = essence.trim();
            essence.eq_ignore_ascii_case("application/json")
                || essence.eq_ignore_ascii_case("application/a2a+json")
        })
}

/// The body as a JSON object (an empty body is an empty object).
fn body_object(headers: &HeaderMap, body: &Bytes) -> Result<Map<String, Value>, Status> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    if !is_json(headers) {
        return Err(crate::grpc::invalid(
            "body",
            "must be sent as `content-type: application/json` (or application/a2a+json)",
        ));
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(_) => Err(crate::grpc::invalid("body", "must be a JSON object")),
        Err(e) => Err(crate::grpc::invalid("body", format!("is not JSON: {e}"))),
    }
}

/// Query parameters as the request's JSON fields: `true`/`false` as booleans, the rest as
/// strings (which proto3 JSON takes for numbers, enums and timestamps alike).
fn query_object(query: Vec<(String, String)>) -> Map<String, Value> {
    query
        .into_iter()
        .map(|(key, value)| {
            let value = match value.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(value),
            };
            (key, value)
        })
        .collect()
}

/// Puts the path's values into the request's fields; a body or query naming another value
/// for one of them is refused.
fn with_path_values(
    mut fields: Map<String, Value>,
    values: &[(&str, &str)],
) -> Result<Value, Status> {
    for (name, value) in values {
        if value.is_empty() {
            continue;
        }
        match fields.get(*name) {
            Some(Value::String(given)) if !given.is_empty() && given != value => {
                return Err(crate::grpc::invalid(
                    name,
                    format!(
                        "is `{}` in the request but `{}` in the path",
                        crate::grpc::shorten(given),
                        crate::grpc::shorten(value)
                    ),
                ));
            }
            _ => {
                fields.insert((*name).to_owned(), Value::String((*value).to_owned()));
            }
        }
    }
    Ok(Value::Object(fields))
}

async fn call(
    State(binding): State<Binding>,
    method: Method,
    Path(path): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    uri: http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let asked = headers
        .get(VERSION_HEADER)
        .map(|v| v.to_str().unwrap_or(""));
    if let Some(error) = A2aError::unsupported_version(asked) {
        return refused(error.into());
    }
    let (tenant, operation) = match route(&method, &path) {
        Ok(routed) => routed,
        Err(status) => return refused(status),
    };
    let reached = super::card::Reached::Http(
        crate::grpc::host::NamedHost::of(&uri, &headers).map(|named| named.0),
    );
    match answer(
        &binding, &tenant, operation, query, &headers, &body, reached,
    )
    .await
    {
        Ok(response) => response,
        Err(status) => refused(status),
    }
}

async fn answer(
    binding: &Binding,
    tenant: &str,
    operation: Operation,
    query: Vec<(String, String)>,
    headers: &HeaderMap,
    body: &Bytes,
    reached: super::card::Reached,
) -> Result<Response, Status> {
    let a2a = &binding.a2a;
    let from_body = |values: &[(&str, &str)]| {
        body_object(headers, body).and_then(|fields| with_path_values(fields, values))
    };
    let from_query =
        |values: &[(&str, &str)]| with_path_values(query_object(query.clone()), values);
    let tenant_only = [("tenant", tenant)];
    Ok(match operation {
        Operation::SendMessage => {
            let r = parse::<pb::SendMessageRequest>(&from_body(&tenant_only)?)?;
            encoded(a2a.send_message(Request::new(r)).await?.get_ref())
        }
        Operation::SendStreamingMessage => {
            let r = parse::<pb::SendMessageRequest>(&from_body(&tenant_only)?)?;
            streamed(
                a2a.send_streaming_message(Request::new(r)).await?,
                binding.heartbeat,
            )
        }
        Operation::GetTask(id) => {
            let r = parse::<pb::GetTaskRequest>(&from_query(&[("tenant", tenant), ("id", &id)])?)?;
            encoded(a2a.get_task(Request::new(r)).await?.get_ref())
        }
        Operation::ListTasks => {
            let r = parse::<pb::ListTasksRequest>(&from_query(&tenant_only)?)?;
            let listed = a2a.list_tasks(Request::new(r)).await?;
            match jsonrpc::result(listed.get_ref()) {
                Ok(value) => Json(jsonrpc::with_list_fields(value)).into_response(),
                Err(e) => refused(Status::internal(e.message)),
            }
        }
        Operation::CancelTask(id) => {
            let r =
                parse::<pb::CancelTaskRequest>(&from_body(&[("tenant", tenant), ("id", &id)])?)?;
            encoded(a2a.cancel_task(Request::new(r)).await?.get_ref())
        }
        Operation::SubscribeToTask(id) => {
            let r = parse::<pb::SubscribeToTaskRequest>(&with_path_values(
                Map::new(),
                &[("tenant", tenant), ("id", &id)],
            )?)?;
            streamed(
                a2a.subscribe_to_task(Request::new(r)).await?,
                binding.heartbeat,
            )
        }
        Operation::CreatePushConfig(task) => {
            let r = parse::<pb::TaskPushNotificationConfig>(&from_body(&[
                ("tenant", tenant),
                ("taskId", &task),
            ])?)?;
            encoded(
                a2a.create_task_push_notification_config(Request::new(r))
                    .await?
                    .get_ref(),
            )
        }
        Operation::ListPushConfigs(task) => {
            let r = parse::<pb::ListTaskPushNotificationConfigsRequest>(&from_query(&[
                ("tenant", tenant),
                ("taskId", &task),
            ])?)?;
            encoded(
                a2a.list_task_push_notification_configs(Request::new(r))
                    .await?
                    .get_ref(),
            )
        }
        Operation::GetPushConfig(task, config) => {
            let r = parse::<pb::GetTaskPushNotificationConfigRequest>(&from_query(&[
                ("tenant", tenant),
                ("taskId", &task),
                ("id", &config),
            ])?)?;
            encoded(
                a2a.get_task_push_notification_config(Request::new(r))
                    .await?
                    .get_ref(),
            )
        }
        Operation::DeletePushConfig(task, config) => {
            let r = parse::<pb::DeleteTaskPushNotificationConfigRequest>(&from_query(&[
                ("tenant", tenant),
                ("taskId", &task),
                ("id", &config),
            ])?)?;
            a2a.delete_task_push_notification_config(Request::new(r))
                .await?;
            Json(json!({})).into_response()
        }
        Operation::GetExtendedAgentCard => {
            let r = parse::<pb::GetExtendedAgentCardRequest>(&with_path_values(
                Map::new(),
                &tenant_only,
            )?)?;
            let mut request = Request::new(r);
            request.extensions_mut().insert(reached);
            encoded(a2a.get_extended_agent_card(request).await?.get_ref())
        }
    })
}

/// A started stream as server-sent events, each a `StreamResponse`; an error once it has
/// started is an `error` event holding the error body, and ends it.
fn streamed(response: tonic::Response<TaskStream>, heartbeat: Duration) -> Response {
    let events = response.into_inner().map(|item| {
        let event = match item {
            Ok(update) => match jsonrpc::result(&update) {
                Ok(value) => SseEvent::default().data(value.to_string()),
                Err(e) => error_event(&Status::internal(e.message)),
            },
            Err(status) => error_event(&status),
        };
        Ok::<_, Infallible>(event)
    });
    let keep_alive = match heartbeat.is_zero() {
        true => KeepAlive::new(),
        false => KeepAlive::new().interval(heartbeat),
    };
    Sse::new(events).keep_alive(keep_alive).into_response()
}

fn error_event(status: &Status) -> SseEvent {
    let body = error_body(status, http_status(status));
    SseEvent::default().event("error").data(body.to_string())
}
