//! The JSON-RPC 2.0 binding of A2A v1.0 on the HTTP listener: `POST /a2a/jsonrpc`, behind
//! the gateway's token. Method names are the gRPC binding's (`SendMessage`, `GetTask`, ...),
//! params and results are the same `lf.a2a.v1` messages in their proto3 JSON form, so every
//! call is translated by the gRPC binding's own code ([`A2a`]) and only the envelope is
//! written here. The streaming methods answer with server-sent events, one JSON-RPC
//! response per event; a call refused before its stream starts is answered in plain JSON.
//! A2A's errors carry the specification's JSON-RPC codes (`-32001` task not found, ...)
//! and the gRPC status's details as `data` (`google.rpc.ErrorInfo`, `BadRequest`).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::post;
use futures::StreamExt;
use odyssey_api::a2a::v1 as pb;
use odyssey_api::a2a::v1::a2a_service_server::A2aService;
use odyssey_runtime::OdysseyRuntime;
use prost::{Message, Name};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

use super::error::{A2A_ERROR_DOMAIN, A2aError};
use super::service::A2a;
use super::stream::TaskStream;

/// Where the binding is served on the HTTP listener.
pub const PATH: &str = "/a2a/jsonrpc";

/// JSON-RPC's own error codes.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;
/// A2A's code for an operation the server does not offer.
const UNSUPPORTED_OPERATION: i64 = -32004;
/// A2A's code for a protocol version the server does not speak.
const VERSION_NOT_SUPPORTED: i64 = -32009;

/// The header in which a client names the A2A version it speaks.
const VERSION_HEADER: &str = "a2a-version";

const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";

#[derive(Clone)]
struct Binding {
    a2a: Arc<A2a>,
    heartbeat: Duration,
}

/// The binding's route, and the HTTP+JSON binding's ([`super::rest`]); the caller puts
/// them behind the token.
pub fn routes(
    runtime: OdysseyRuntime,
    heartbeat: Duration,
    shutdown: CancellationToken,
    options: super::A2aOptions,
) -> Router {
    let a2a = Arc::new(A2a::new(runtime, shutdown, options));
    Router::new()
        .route(PATH, post(call))
        .with_state(Binding {
            a2a: a2a.clone(),
            heartbeat,
        })
        .merge(super::rest::routes(a2a, heartbeat))
}

/// A JSON-RPC error object, before it is put in a response.
#[derive(Debug)]
pub(super) struct RpcError {
    pub(super) code: i64,
    pub(super) message: String,
    pub(super) data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(data), Some(fields)) = (&self.data, error.as_object_mut()) {
            fields.insert("data".into(), data.clone());
        }
        error
    }
}

impl From<Status> for RpcError {
    /// A2A's errors (ErrorInfo domain `a2a-protocol.org`) by their reason; Odyssey's by
    /// their gRPC code: bad input is invalid params, an operation not offered is A2A's
    /// unsupported operation, the rest an internal error with the status's message (which
    /// never holds internal details).
    fn from(status: Status) -> Self {
        let details = status.get_error_details();
        let a2a_code = details
            .error_info()
            .filter(|info| info.domain == A2A_ERROR_DOMAIN)
            .and_then(|info| a2a_error_code(&info.reason));
        let code = a2a_code.unwrap_or(match status.code() {
            Code::InvalidArgument | Code::OutOfRange => INVALID_PARAMS,
            Code::Unimplemented => UNSUPPORTED_OPERATION,
            _ => INTERNAL_ERROR,
        });
        let data = status_details(&status);
        Self {
            code,
            message: status.message().to_owned(),
            data: (!data.is_empty()).then_some(Value::Array(data)),
        }
    }
}

/// The details of a status as JSON objects with their `@type`: its
/// `google.rpc.ErrorInfo` and, for bad input, its `google.rpc.BadRequest`.
pub(super) fn status_details(status: &Status) -> Vec<Value> {
    let details = status.get_error_details();
    let mut data = Vec::new();
    if let Some(info) = details.error_info() {
        data.push(json!({
            "@type": ERROR_INFO_TYPE,
            "reason": info.reason,
            "domain": info.domain,
            "metadata": info.metadata,
        }));
    }
    if let Some(bad) = details.bad_request() {
        let violations: Vec<Value> = bad
            .field_violations
            .iter()
            .map(|v| json!({"field": v.field, "description": v.description}))
            .collect();
        data.push(json!({"@type": BAD_REQUEST_TYPE, "fieldViolations": violations}));
    }
    data
}

/// The specification's JSON-RPC code of an A2A error reason.
fn a2a_error_code(reason: &str) -> Option<i64> {
    Some(match reason {
        "TASK_NOT_FOUND" => -32001,
        "TASK_NOT_CANCELABLE" => -32002,
        "PUSH_NOTIFICATION_NOT_SUPPORTED" => -32003,
        "UNSUPPORTED_OPERATION" => -32004,
        "CONTENT_TYPE_NOT_SUPPORTED" => -32005,
        "INVALID_AGENT_RESPONSE" => -32006,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED" => -32007,
        "EXTENSION_SUPPORT_REQUIRED" => -32008,
        "VERSION_NOT_SUPPORTED" => VERSION_NOT_SUPPORTED,
        _ => return None,
    })
}

fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn failure(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}

/// A checked request: its id, method and params.
struct Call {
    id: Value,
    method: String,
    params: Value,
}

/// Checks the envelope; a refusal comes with the id to answer it under (null when the
/// request has none that can be read).
fn envelope(body: &[u8]) -> Result<Call, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        (
            Value::Null,
            RpcError::new(PARSE_ERROR, format!("the body is not JSON: {e}")),
        )
    })?;
    let Value::Object(mut fields) = value else {
        let why = match value {
            Value::Array(_) => "batch requests are not supported; send one request object",
            _ => "the body must be a JSON-RPC request object",
        };
        return Err((Value::Null, RpcError::new(INVALID_REQUEST, why)));
    };
    let id = match fields.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(Value::Null) | None => {
            return Err((
                Value::Null,
                RpcError::new(
                    INVALID_REQUEST,
                    "`id` is required (a string or a number): every A2A call has an answer",
                ),
            ));
        }
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::new(INVALID_REQUEST, "`id` must be a string or a number"),
            ));
        }
    };
    if fields.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err((
            id,
            RpcError::new(INVALID_REQUEST, "`jsonrpc` must be exactly \"2.0\""),
        ));
    }
    let method = match fields.remove("method") {
        Some(Value::String(method)) if !method.is_empty() => method,
        _ => {
            return Err((
                id,
                RpcError::new(INVALID_REQUEST, "`method` is required (a string)"),
            ));
        }
    };
    let params = match fields.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(params @ Value::Object(_)) => params,
        Some(_) => {
            return Err((
                id,
                RpcError::new(INVALID_PARAMS, "`params` must be an object"),
            ));
        }
    };
    Ok(Call { id, method, params })
}

/// `params` as the request message `M`.
pub(super) fn params<M: Message + Name + Default>(params: &Value) -> Result<M, RpcError> {
    odyssey_api::json::from_str::<M>(&params.to_string()).map_err(|e| {
        let why = match e {
            odyssey_api::json::JsonError::Json { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        RpcError::new(
            INVALID_PARAMS,
            format!("params are not a valid {}: {why}", M::full_name()),
        )
    })
}

pub(super) fn result<M: Message + Name>(message: &M) -> Result<Value, RpcError> {
    odyssey_api::json::to_value(message).map_err(|e| {
        tracing::error!(error = %e, "cannot encode an A2A result");
        RpcError::new(
            INTERNAL_ERROR,
            "internal error; the server log has the details",
        )
    })
}

/// A ListTasksResponse's JSON with every field the specification requires present, also
/// at its default (proto3 JSON leaves out an empty `nextPageToken` of the last page).
pub(super) fn with_list_fields(mut value: Value) -> Value {
    if let Some(fields) = value.as_object_mut() {
        for (name, default) in [
            ("tasks", json!([])),
            ("nextPageToken", json!("")),
            ("pageSize", json!(0)),
            ("totalSize", json!(0)),
        ] {
            fields.entry(name).or_insert(default);
        }
    }
    value
}

/// Parses the params, makes the call on the gRPC binding, and encodes its answer.
async fn unary<Req, Res, F, Fut>(raw: &Value, call: F) -> Result<Value, RpcError>
where
    Req: Message + Name + Default,
    Res: Message + Name,
    F: FnOnce(Request<Req>) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Res>, Status>>,
{
    let request = params::<Req>(raw)?;
    let response = call(Request::new(request)).await?;
    result(response.get_ref())
}

/// Whether the request says its body is JSON (`application/json`, parameters allowed).
/// Required, so that a browser's plain form post can never be taken for a call.
fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// A version the client asks for that is not this server's (see
/// [`A2aError::unsupported_version`]).
fn unsupported_version(headers: &http::HeaderMap) -> Option<RpcError> {
    let asked = headers
        .get(VERSION_HEADER)
        .map(|v| v.to_str().unwrap_or(""));
    A2aError::unsupported_version(asked).map(|e| RpcError::from(Status::from(e)))
}

async fn call(
    State(binding): State<Binding>,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
) -> Response {
    if !is_json(&headers) {
        let error = RpcError::new(
            INVALID_REQUEST,
            "the body must be sent as `content-type: application/json`",
        );
        return Json(failure(&Value::Null, &error)).into_response();
    }
    let call = match envelope(&body) {
        Ok(call) => call,
        Err((id, error)) => return Json(failure(&id, &error)).into_response(),
    };
    if let Some(error) = unsupported_version(&headers) {
        return Json(failure(&call.id, &error)).into_response();
    }
    let a2a = &binding.a2a;
    let p = &call.params;
    let answer = match call.method.as_str() {
        "SendMessage" => unary(p, |r| a2a.send_message(r)).await,
        "GetTask" => unary(p, |r| a2a.get_task(r)).await,
        "ListTasks" => unary(p, |r| a2a.list_tasks(r)).await.map(with_list_fields),
        "CancelTask" => unary(p, |r| a2a.cancel_task(r)).await,
        "CreateTaskPushNotificationConfig" => {
            unary(p, |r| a2a.create_task_push_notification_config(r)).await
        }
        "GetTaskPushNotificationConfig" => {
            unary(p, |r| a2a.get_task_push_notification_config(r)).await
        }
        "ListTaskPushNotificationConfigs" => {
            unary(p, |r| a2a.list_task_push_notification_configs(r)).await
        }
        "DeleteTaskPushNotificationConfig" => {
            match params::<pb::DeleteTaskPushNotificationConfigRequest>(p) {
                Ok(r) => a2a
                    .delete_task_push_notification_config(Request::new(r))
                    .await
                    .map(|_| json!({}))
                    .map_err(RpcError::from),
                Err(e) => Err(e),
            }
        }
        "GetExtendedAgentCard" => {
            let reached = super::card::Reached::Http(
                crate::grpc::host::NamedHost::of(&uri, &headers).map(|named| named.0),
            );
            unary(p, |mut r: Request<pb::GetExtendedAgentCardRequest>| {
                r.extensions_mut().insert(reached);
                a2a.get_extended_agent_card(r)
            })
            .await
        }
        "SendStreamingMessage" => {
            let stream = match params::<pb::SendMessageRequest>(p) {
                Ok(r) => a2a.send_streaming_message(Request::new(r)).await,
                Err(e) => return Json(failure(&call.id, &e)).into_response(),
            };
            return streamed(call.id, stream, binding.heartbeat);
        }
        "SubscribeToTask" => {
            let stream = match params::<pb::SubscribeToTaskRequest>(p) {
                Ok(r) => a2a.subscribe_to_task(Request::new(r)).await,
                Err(e) => return Json(failure(&call.id, &e)).into_response(),
            };
            return streamed(call.id, stream, binding.heartbeat);
        }
        other => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!(
                "no method `{}`; A2A's are SendMessage, SendStreamingMessage, GetTask, \
                 ListTasks, CancelTask, SubscribeToTask, the push notification config \
                 methods and GetExtendedAgentCard",
                crate::grpc::shorten(other)
            ),
        )),
    };
    let body = match answer {
        Ok(value) => success(&call.id, value),
        Err(error) => failure(&call.id, &error),
    };
    Json(body).into_response()
}

/// A started stream as server-sent events, each a JSON-RPC response under the request's
/// id; a call refused before its stream starts is one JSON response. The stream ends with
/// the task's last update, or with an error response when it cannot go on.
fn streamed(
    id: Value,
    started: Result<tonic::Response<TaskStream>, Status>,
    heartbeat: Duration,
) -> Response {
    let stream = match started {
        Ok(response) => response.into_inner(),
        Err(status) => return Json(failure(&id, &RpcError::from(status))).into_response(),
    };
    let events = stream.map(move |item| {
        let body = match item.map_err(RpcError::from).and_then(|r| result(&r)) {
            Ok(value) => success(&id, value),
            Err(error) => failure(&id, &error),
        };
        Ok::<_, Infallible>(SseEvent::default().data(body.to_string()))
    });
    let keep_alive = match heartbeat.is_zero() {
        true => KeepAlive::new(),
        false => KeepAlive::new().interval(heartbeat),
    };
    Sse::new(events).keep_alive(keep_alive).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_is_checked_before_anything_else() {
        let (id, e) = envelope(b"{not json").err().unwrap();
        assert_eq!((id, e.code), (Value::Null, PARSE_ERROR));
        let (_, e) = envelope(b"[]").err().unwrap();
        assert_eq!(e.code, INVALID_REQUEST);
        let (_, e) = envelope(br#"{"jsonrpc":"2.0","method":"GetTask"}"#)
            .err()
            .unwrap();
        assert_eq!(e.code, INVALID_REQUEST);
        let (id, e) = envelope(br#"{"jsonrpc":"1.0","id":7,"method":"GetTask"}"#)
            .err()
            .unwrap();
        assert_eq!((id, e.code), (json!(7), INVALID_REQUEST));
        let (_, e) = envelope(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":[1]}"#)
            .err()
            .unwrap();
        assert_eq!(e.code, INVALID_PARAMS);
        let call = envelope(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask"}"#).unwrap();
        assert_eq!((call.method.as_str(), call.params), ("GetTask", json!({})));
    }

    #[test]
    fn a2a_errors_keep_their_specification_codes_and_odyssey_bad_input_is_invalid_params() {
        let e = RpcError::from(Status::from(super::super::A2aError::task_not_found("x")));
        assert_eq!(e.code, -32001);
        let data = e.data.unwrap();
        assert_eq!(data[0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(data[0]["@type"], ERROR_INFO_TYPE);
        let e = RpcError::from(crate::grpc::invalid("message.message_id", "is required"));
        assert_eq!(e.code, INVALID_PARAMS);
        let data = e.data.unwrap();
        assert_eq!(data[1]["fieldViolations"][0]["field"], "message.message_id");
        assert_eq!(RpcError::from(Status::unimplemented("no")).code, -32004);
    }

    #[test]
    fn a_version_other_than_1_0_is_refused_and_none_is_taken_as_1_0() {
        let asking = |value: Option<&str>| {
            let mut headers = http::HeaderMap::new();
            if let Some(value) = value {
                headers.insert(VERSION_HEADER, value.parse().unwrap());
            }
            unsupported_version(&headers).map(|e| e.code)
        };
        assert_eq!(asking(None), None);
        assert_eq!(asking(Some("1.0")), None);
        assert_eq!(asking(Some("1.0.3")), None);
        assert_eq!(asking(Some("1")), None);
        assert_eq!(asking(Some("0.3")), Some(VERSION_NOT_SUPPORTED));
        assert_eq!(asking(Some("2.0")), Some(VERSION_NOT_SUPPORTED));
        assert_eq!(asking(Some("latest")), Some(VERSION_NOT_SUPPORTED));
    }

    #[test]
    fn only_a_json_body_is_taken() {
        let with = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::CONTENT_TYPE, value.parse().unwrap());
            is_json(&headers)
        };
        assert!(with("application/json"));
        assert!(with("Application/JSON; charset=utf-8"));
        assert!(!with("text/plain"));
        assert!(!with("application/x-www-form-urlencoded"));
        assert!(!is_json(&http::HeaderMap::new()));
    }

    #[test]
    fn params_of_the_wrong_shape_are_invalid_params_naming_the_message() {
        let e = params::<pb::GetTaskRequest>(&json!({"id": 5, "nope": true})).unwrap_err();
        assert_eq!(e.code, INVALID_PARAMS);
        assert!(
            e.message.contains("lf.a2a.v1.GetTaskRequest"),
            "{}",
            e.message
        );
        let r = params::<pb::GetTaskRequest>(&json!({"id": "t", "historyLength": 2})).unwrap();
        assert_eq!((r.id.as_str(), r.history_length), ("t", Some(2)));
    }
}
