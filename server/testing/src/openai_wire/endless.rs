//! Endless answers for benchmarks: any number of requests, answered at once, with nothing
//! recorded but when each request arrived and when its answer was sent.
//!
//! A benchmark measures the runtime, so the model's own cost must be as small and as flat
//! as possible: a repeated reply is rendered to bytes once, request bodies are neither
//! kept nor (for [`Script::repeat`]) parsed, and memory does not grow with the number of
//! calls beyond one timing each (taken with [`OpenAiWireServer::take_timings`]).
//!
//! [`Script::repeat`]: super::Script::repeat
//! [`OpenAiWireServer::take_timings`]: super::OpenAiWireServer::take_timings

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Instant;

use axum::body::Bytes;
use serde_json::Value;

use super::script::{Reply, StreamBuilder, WireEvent, WireUsage};

/// When the server got one request (its body read) and when the last byte of its answer
/// was handed to the connection: the model's own time, as its client cannot avoid it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTiming {
    pub received: Instant,
    pub answered: Instant,
}

impl CallTiming {
    /// How long the server took with the request.
    pub fn duration(&self) -> std::time::Duration {
        self.answered.saturating_duration_since(self.received)
    }
}

/// What an endless server answers.
#[derive(Clone, Debug)]
pub(super) enum Endless {
    /// The same reply to every request, pre-rendered.
    Repeat(Rendered),
    /// A tool call to `tool` with `arguments` while the conversation holds fewer than
    /// `calls` tool results after its last user message; then `done`. A request that
    /// offers no tools (a history summary) is answered `done` too.
    ToolLoop {
        tool: String,
        arguments: String,
        calls: usize,
        done: Rendered,
    },
}

/// A reply rendered once: the bytes of a stream, or a reply that needs time (pauses,
/// delays, errors) and is rendered per request.
#[derive(Clone, Debug)]
pub(super) enum Rendered {
    Bytes(Bytes),
    Reply(Reply),
}

impl Rendered {
    pub fn new(reply: Reply) -> Self {
        match &reply {
            Reply::Stream(events) if !events.iter().any(|e| matches!(e, WireEvent::Pause(_))) => {
                let mut text = String::new();
                for event in events {
                    push_event(&mut text, event);
                }
                Self::Bytes(Bytes::from(text))
            }
            _ => Self::Reply(reply),
        }
    }
}

/// The SSE text of one event (`Pause` writes nothing).
pub(super) fn push_event(text: &mut String, event: &WireEvent) {
    match event {
        WireEvent::Data(value) => {
            text.push_str("data: ");
            text.push_str(&value.to_string());
            text.push_str("\n\n");
        }
        WireEvent::Done => text.push_str("data: [DONE]\n\n"),
        WireEvent::Raw(raw) => text.push_str(raw),
        WireEvent::Pause(_) => {}
    }
}

/// Numbers the tool calls, so every call of a conversation has its own id.
static TOOL_CALLS: AtomicU64 = AtomicU64::new(0);

impl Endless {
    /// The answer to `body`; `Err` is a bad request's message.
    pub fn answer(&self, body: &[u8]) -> Result<Rendered, String> {
        match self {
            Self::Repeat(rendered) => Ok(rendered.clone()),
            Self::ToolLoop {
                tool,
                arguments,
                calls,
                done,
            } => {
                let request: Value = serde_json::from_slice(body).map_err(|e| {
                    format!("We could not parse the JSON body of your request. ({e})")
                })?;
                let offers_tools = request["tools"].as_array().is_some_and(|t| !t.is_empty());
                if !offers_tools || tool_results_since_user(&request) >= *calls {
                    return Ok(done.clone());
                }
                let id = format!("call_{}", TOOL_CALLS.fetch_add(1, Ordering::Relaxed));
                let reply = StreamBuilder::new()
                    .tool_call(0, &id, tool, arguments, 1)
                    .finish("tool_calls")
                    .usage(WireUsage {
                        prompt_tokens: 10,
                        completion_tokens: 5,
                        ..WireUsage::default()
                    })
                    .done()
                    .build();
                Ok(Rendered::new(reply))
            }
        }
    }
}

/// Tool results after the conversation's last user message.
fn tool_results_since_user(request: &Value) -> usize {
    let Some(messages) = request["messages"].as_array() else {
        return 0;
    };
    messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count()
}

/// An empty stream that tells `on_end` when it is polled: chained after a body's last
/// chunk, that is when the chunk has been handed to the connection.
pub(super) fn end_marker(
    on_end: impl FnOnce(Instant) + Send + 'static,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let mut on_end = Some(on_end);
    futures::stream::poll_fn(move |_| {
        if let Some(on_end) = on_end.take() {
            on_end(Instant::now());
        }
        Poll::Ready(None)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_repeated_stream_is_rendered_once_as_sse_text() {
        let Rendered::Bytes(bytes) = Rendered::new(Reply::text("hi")) else {
            panic!("a stream without pauses renders to bytes");
        };
        let text = std::str::from_utf8(&bytes).expect("utf-8");
        assert!(text.starts_with("data: {"), "{text}");
        assert!(text.contains(r#""content":"hi""#), "{text}");
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        let paused = StreamBuilder::new()
            .pause(std::time::Duration::from_millis(1))
            .build();
        assert!(matches!(Rendered::new(paused), Rendered::Reply(_)));
    }

    #[test]
    fn a_tool_loop_calls_until_the_turn_has_its_results() {
        let endless = Endless::ToolLoop {
            tool: "Bash".into(),
            arguments: r#"{"command":"true"}"#.into(),
            calls: 2,
            done: Rendered::new(Reply::text("done")),
        };
        let tools = json!([{ "type": "function", "function": { "name": "Bash" } }]);
        let ask = |messages: Value| {
            let body = json!({ "messages": messages, "tools": tools }).to_string();
            match endless.answer(body.as_bytes()).expect("answer") {
                Rendered::Bytes(bytes) => String::from_utf8(bytes.to_vec()).expect("utf-8"),
                Rendered::Reply(_) => panic!("rendered"),
            }
        };
        let user = json!({ "role": "user", "content": "go" });
        let tool = json!({ "role": "tool", "tool_call_id": "c", "content": "" });
        let assistant = json!({ "role": "assistant", "content": "" });
        let first = ask(json!([tool, user]));
        assert!(first.contains(r#""name":"Bash""#), "{first}");
        let second = ask(json!([user, assistant, tool]));
        assert!(second.contains(r#""name":"Bash""#), "{second}");
        let last = ask(json!([user, assistant, tool, assistant, tool]));
        assert!(last.contains(r#""content":"done""#), "{last}");
        let no_tools = json!({ "messages": [user] }).to_string();
        assert!(matches!(
            endless.answer(no_tools.as_bytes()),
            Ok(Rendered::Bytes(b)) if String::from_utf8_lossy(&b).contains(r#""content":"done""#)
        ));
        assert!(endless.answer(b"not json").is_err());
    }
}
