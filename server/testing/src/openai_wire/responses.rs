//! Streamed replies in the shape of OpenAI's Responses API (`POST /v1/responses`).
//!
//! Every event is sent as OpenAI sends it: an `event:` line naming the type and a `data:`
//! line with the JSON (which repeats the type), each with a `sequence_number`. A reply
//! opens with `response.created` and `response.in_progress`; each output item is framed
//! by `response.output_item.added` / `.done`; the stream ends with `response.completed`
//! (or `response.failed`) and has no `[DONE]`.

use serde_json::{Value, json};

use super::script::{Reply, WireEvent, split};

/// The model name written into scripted responses.
const MODEL: &str = "gpt-loopback";

/// Token counts for `response.usage`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResponsesUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
}

/// Builds a Responses API stream event by event.
#[derive(Clone, Debug)]
pub struct ResponsesBuilder {
    events: Vec<WireEvent>,
    sequence: u64,
    output_index: u64,
}

impl Default for ResponsesBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponsesBuilder {
    pub fn new() -> Self {
        let mut builder = Self {
            events: Vec::new(),
            sequence: 0,
            output_index: 0,
        };
        let response = response("in_progress", Value::Null, Value::Null);
        builder.push(json!({ "type": "response.created", "response": response }));
        builder.push(json!({ "type": "response.in_progress", "response": response }));
        builder
    }

    /// A message item with `text` in `pieces` `response.output_text.delta` events.
    pub fn text(mut self, text: &str, pieces: usize) -> Self {
        let index = self.next_output();
        let id = format!("msg_{index}");
        let item = |status: &str, text: &str| {
            json!({ "id": id, "type": "message", "status": status, "role": "assistant",
                    "content": if status == "completed" {
                        json!([{ "type": "output_text", "text": text, "annotations": [] }])
                    } else { json!([]) } })
        };
        let at = json!({ "item_id": id, "output_index": index, "content_index": 0 });
        self.push(
            json!({ "type": "response.output_item.added", "output_index": index,
                          "item": item("in_progress", "") }),
        );
        self.push(merge(
            &at,
            json!({ "type": "response.content_part.added",
            "part": { "type": "output_text", "text": "", "annotations": [] } }),
        ));
        for piece in split(text, pieces) {
            self.push(merge(
                &at,
                json!({ "type": "response.output_text.delta", "delta": piece, "logprobs": [] }),
            ));
        }
        self.push(merge(
            &at,
            json!({ "type": "response.output_text.done", "text": text, "logprobs": [] }),
        ));
        self.push(merge(
            &at,
            json!({ "type": "response.content_part.done",
            "part": { "type": "output_text", "text": text, "annotations": [] } }),
        ));
        self.push(
            json!({ "type": "response.output_item.done", "output_index": index,
                          "item": item("completed", text) }),
        );
        self
    }

    /// A reasoning item whose summary has one part per entry of `parts`, each streamed in
    /// `pieces` `response.reasoning_summary_text.delta` events.
    pub fn reasoning_summary(mut self, parts: &[&str], pieces: usize) -> Self {
        let index = self.next_output();
        let id = format!("rs_{index}");
        self.push(
            json!({ "type": "response.output_item.added", "output_index": index,
            "item": { "id": id, "type": "reasoning", "summary": [] } }),
        );
        for (summary_index, text) in parts.iter().enumerate() {
            let at =
                json!({ "item_id": id, "output_index": index, "summary_index": summary_index });
            self.push(merge(
                &at,
                json!({ "type": "response.reasoning_summary_part.added",
                "part": { "type": "summary_text", "text": "" } }),
            ));
            for piece in split(text, pieces) {
                self.push(merge(
                    &at,
                    json!({ "type": "response.reasoning_summary_text.delta", "delta": piece }),
                ));
            }
            self.push(merge(
                &at,
                json!({ "type": "response.reasoning_summary_text.done", "text": text }),
            ));
            self.push(merge(
                &at,
                json!({ "type": "response.reasoning_summary_part.done",
                "part": { "type": "summary_text", "text": text } }),
            ));
        }
        let summary: Vec<Value> = parts
            .iter()
            .map(|text| json!({ "type": "summary_text", "text": text }))
            .collect();
        self.push(
            json!({ "type": "response.output_item.done", "output_index": index,
            "item": { "id": id, "type": "reasoning", "summary": summary } }),
        );
        self
    }

    /// A function call item with `arguments` in `pieces`
    /// `response.function_call_arguments.delta` events.
    pub fn function_call(
        mut self,
        call_id: &str,
        name: &str,
        arguments: &str,
        pieces: usize,
    ) -> Self {
        let index = self.next_output();
        let id = format!("fc_{index}");
        let item = |status: &str, arguments: &str| {
            json!({ "id": id, "type": "function_call", "status": status, "call_id": call_id,
                    "name": name, "arguments": arguments })
        };
        let at = json!({ "item_id": id, "output_index": index });
        self.push(
            json!({ "type": "response.output_item.added", "output_index": index,
                          "item": item("in_progress", "") }),
        );
        for piece in split(arguments, pieces) {
            self.push(merge(
                &at,
                json!({ "type": "response.function_call_arguments.delta", "delta": piece }),
            ));
        }
        self.push(merge(
            &at,
            json!({ "type": "response.function_call_arguments.done", "arguments": arguments }),
        ));
        self.push(
            json!({ "type": "response.output_item.done", "output_index": index,
                          "item": item("completed", arguments) }),
        );
        self
    }

    /// `response.completed` with usage; ends the stream.
    pub fn completed(mut self, usage: ResponsesUsage) -> Self {
        let usage = json!({
            "input_tokens": usage.input_tokens,
            "input_tokens_details": { "cached_tokens": usage.cached_tokens },
            "output_tokens": usage.output_tokens,
            "output_tokens_details": { "reasoning_tokens": usage.reasoning_tokens },
            "total_tokens": usage.input_tokens + usage.output_tokens,
        });
        let response = response("completed", usage, Value::Null);
        self.push(json!({ "type": "response.completed", "response": response }));
        self
    }

    /// `response.failed` with OpenAI's error object; ends the stream.
    pub fn failed(mut self, code: &str, message: &str) -> Self {
        let error = json!({ "code": code, "message": message });
        let response = response("failed", Value::Null, error);
        self.push(json!({ "type": "response.failed", "response": response }));
        self
    }

    /// A top-level `error` event, as sent when the stream itself breaks.
    pub fn error(mut self, code: &str, message: &str) -> Self {
        self.push(json!({ "type": "error", "code": code, "message": message, "param": null }));
        self
    }

    pub fn build(self) -> Reply {
        Reply::Stream(self.events)
    }

    fn next_output(&mut self) -> u64 {
        self.output_index += 1;
        self.output_index - 1
    }

    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = self.sequence.into();
        self.sequence += 1;
        let kind = event["type"].as_str().unwrap_or("message").to_owned();
        self.events
            .push(WireEvent::Raw(format!("event: {kind}\ndata: {event}\n\n")));
    }
}

/// `base` with the fields of `extra` added.
fn merge(base: &Value, extra: Value) -> Value {
    let mut merged = base.clone();
    if let (Value::Object(target), Value::Object(extra)) = (&mut merged, extra) {
        target.extend(extra);
    }
    merged
}

/// A `response` object as the lifecycle events carry it.
fn response(status: &str, usage: Value, error: Value) -> Value {
    json!({
        "id": "resp_loopback",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": MODEL,
        "output": [],
        "error": error,
        "usage": usage,
    })
}
