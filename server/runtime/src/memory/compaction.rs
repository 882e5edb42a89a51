//! Compaction: when a session's history no longer fits the model's window, the model is
//! asked (same provider and model, no tools, a fixed instruction) for a summary of the
//! older turns, which then stands in for them.
//!
//! The older turns are sent as a plain-text transcript in one user message rather than as
//! chat messages: the request then needs no tool definitions, carries no tool-call pairing
//! a provider could refuse, and ends with what the model must do. Long tool results are
//! cut in the transcript; if the transcript still overflows the window, its oldest turns
//! are left out and the transcript says so.

use crate::text::byte_prefix;
use futures::StreamExt;

use super::estimate::{system_tokens, text_tokens};
use super::window::SAFETY_MARGIN_PERCENT;
use crate::chat::{ChatMessage, Role, TokenUsage};
use crate::model::ModelSpec;
use crate::provider::context_window::context_window;
use crate::provider::{ModelDelta, ModelProvider, ModelRequest, ProviderError};

/// The system prompt of a compaction call.
pub const SUMMARY_INSTRUCTION: &str = "You compact the history of a conversation between a user and an AI agent so \
that the agent can continue the work within a limited context window. Read the transcript \
and write a summary that lets the agent carry on without it: what the user asked for and \
why, decisions made, facts learned (names of files, commands, values, results of tool \
calls), work completed, and anything still open or promised. If the transcript starts with \
an earlier summary, fold it in. Be concise and specific; write plain sentences or short \
bullet points. Output only the summary.";

/// What precedes the summary where it stands in for the older turns.
pub const SUMMARY_PREFACE: &str = "Summary of the earlier part of this conversation (older turns were compacted to fit the context window):";

/// Longest excerpt of one tool result or tool-call argument list in a transcript, bytes.
const TRANSCRIPT_ITEM_BYTES: usize = 2_000;

/// Smallest and largest summary asked for, in tokens.
const SUMMARY_TOKENS_MIN: u64 = 64;
const SUMMARY_TOKENS_MAX: u64 = 2_048;

/// Why a compaction produced no summary.
#[derive(Debug, thiserror::Error)]
pub enum CompactionError {
    #[error("the model call failed: {0}")]
    Provider(#[from] ProviderError),
    #[error("the model answered with an empty summary")]
    Empty,
}

/// The message a summary is sent as, before the turns it did not replace.
pub fn summary_message(summary: &str) -> ChatMessage {
    ChatMessage::user(format!("{SUMMARY_PREFACE}\n\n{summary}"))
}

/// The summary length asked for, in tokens: a quarter of the history budget, bounded.
pub fn summary_limit(history_budget: u64) -> u64 {
    (history_budget / 4).clamp(SUMMARY_TOKENS_MIN, SUMMARY_TOKENS_MAX)
}

/// The compaction call for `previous` summary and the `turns` it should absorb.
pub fn request(
    model: &ModelSpec,
    previous: Option<&str>,
    turns: &[&[ChatMessage]],
    summary_tokens: u64,
    call_index: u64,
) -> ModelRequest {
    let window = context_window(model);
    let instruction = format!(
        "{SUMMARY_INSTRUCTION} Keep it under {} words.",
        summary_tokens * 3 / 4
    );
    let room = window
        .saturating_sub(window * SAFETY_MARGIN_PERCENT / 100)
        .saturating_sub(summary_tokens)
        .saturating_sub(system_tokens(&instruction))
        .saturating_sub(16);
    ModelRequest {
        model: model.clone(),
        system_prompt: instruction,
        messages: vec![ChatMessage::user(transcript(previous, turns, room))],
        tools: Vec::new(),
        call_index,
    }
}

/// The transcript of `turns` after `previous`, within about `max_tokens`: the oldest turns
/// are left out first.
pub fn transcript(previous: Option<&str>, turns: &[&[ChatMessage]], max_tokens: u64) -> String {
    let head = previous
        .map(|summary| format!("Earlier summary:\n{summary}\n\n"))
        .unwrap_or_default();
    let rendered: Vec<String> = turns.iter().map(|turn| render_turn(turn)).collect();
    let mut left = max_tokens.saturating_sub(text_tokens(&head));
    let mut first = rendered.len();
    while first > 0 && text_tokens(&rendered[first - 1]) <= left {
        left -= text_tokens(&rendered[first - 1]);
        first -= 1;
    }
    let mut text = head;
    if first > 0 {
        text.push_str(&format!(
            "[{first} earlier turn(s) omitted: too long to summarize at once]\n\n"
        ));
    }
    text.push_str("Transcript:\n");
    for turn in &rendered[first..] {
        text.push_str(turn);
    }
    text
}

fn render_turn(messages: &[ChatMessage]) -> String {
    let mut text = String::new();
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => text.push_str(&format!("\nUser: {}\n", message.content.trim())),
            Role::Assistant => {
                if !message.content.trim().is_empty() {
                    text.push_str(&format!("Assistant: {}\n", message.content.trim()));
                }
                for call in &message.tool_calls {
                    text.push_str(&format!(
                        "Assistant called {}({})\n",
                        call.name,
                        excerpt(&call.arguments)
                    ));
                }
            }
            Role::Tool => {
                let label = if message.is_error {
                    "Tool error"
                } else {
                    "Tool result"
                };
                text.push_str(&format!("{label}: {}\n", excerpt(message.content.trim())));
            }
        }
    }
    text
}

/// `text` cut to [`TRANSCRIPT_ITEM_BYTES`] on a character boundary, marked when cut.
fn excerpt(text: &str) -> String {
    if text.len() <= TRANSCRIPT_ITEM_BYTES {
        return text.to_owned();
    }
    format!(
        "{} […{} bytes cut]",
        byte_prefix(text, TRANSCRIPT_ITEM_BYTES),
        text.len() - TRANSCRIPT_ITEM_BYTES
    )
}

/// Runs the compaction call: the answer's text (reasoning and stray tool calls ignored),
/// cut to half again the length asked for, and the call's usage.
pub async fn summarize(
    provider: &dyn ModelProvider,
    request: ModelRequest,
    summary_tokens: u64,
) -> (Result<String, CompactionError>, TokenUsage) {
    let mut stream = provider.stream(request);
    let mut text = String::new();
    let mut usage = TokenUsage::default();
    while let Some(delta) = stream.next().await {
        match delta {
            Ok(ModelDelta::Text(delta)) => text.push_str(&delta),
            Ok(ModelDelta::Usage(call)) => usage += call,
            Ok(_) => {}
            Err(e) => return (Err(e.into()), usage),
        }
    }
    let max_bytes = usize::try_from(summary_tokens * 6).unwrap_or(usize::MAX);
    let summary = byte_prefix(text.trim(), max_bytes).trim_end().to_owned();
    if summary.is_empty() {
        return (Err(CompactionError::Empty), usage);
    }
    (Ok(summary), usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ToolCall;
    use crate::provider::{Cassette, ReplayProvider};

    fn turn(n: usize) -> Vec<ChatMessage> {
        vec![
            ChatMessage::user(format!("question {n}")),
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: format!("c{n}"),
                    name: "Read".into(),
                    arguments: r#"{"path":"notes.md"}"#.into(),
                }],
            ),
            ChatMessage::tool_result(format!("c{n}"), "z".repeat(5_000), false),
            ChatMessage::assistant(format!("answer {n}"), Vec::new()),
        ]
    }

    #[test]
    fn the_transcript_names_who_said_what_and_cuts_long_results() {
        let t = turn(1);
        let text = transcript(Some("they met"), &[&t], 10_000);
        assert!(
            text.starts_with("Earlier summary:\nthey met\n\nTranscript:\n"),
            "{text}"
        );
        assert!(text.contains("User: question 1\n"));
        assert!(text.contains("Assistant called Read({\"path\":\"notes.md\"})\n"));
        assert!(text.contains("Tool result: zzz"));
        assert!(text.contains("[…3000 bytes cut]"));
        assert!(text.contains("Assistant: answer 1\n"));
        assert!(text.len() < 3_000, "{} bytes", text.len());
    }

    #[test]
    fn an_overlong_transcript_drops_its_oldest_turns() {
        let turns: Vec<Vec<ChatMessage>> = (0..5).map(turn).collect();
        let refs: Vec<&[ChatMessage]> = turns.iter().map(Vec::as_slice).collect();
        let one = text_tokens(&render_turn(&turns[0]));
        let text = transcript(None, &refs, one * 2 + 1);
        assert!(text.starts_with("[3 earlier turn(s) omitted"), "{text}");
        assert!(!text.contains("question 2") && text.contains("question 3"));
        assert!(text.contains("question 4"));
    }

    #[test]
    fn the_request_has_no_tools_and_a_fixed_instruction() {
        let t = turn(1);
        let model = ModelSpec::new("openai", "gpt-4o");
        let request = request(&model, None, &[&t], 200, 7);
        assert!(request.tools.is_empty());
        assert_eq!(request.call_index, 7);
        assert!(request.system_prompt.starts_with(SUMMARY_INSTRUCTION));
        assert!(request.system_prompt.ends_with("Keep it under 150 words."));
        assert_eq!(request.messages.len(), 1);
        assert_eq!(request.messages[0].role, Role::User);
    }

    #[test]
    fn limits_and_cuts_respect_their_bounds() {
        assert_eq!(summary_limit(0), SUMMARY_TOKENS_MIN);
        assert_eq!(summary_limit(2_000), 500);
        assert_eq!(summary_limit(1_000_000), SUMMARY_TOKENS_MAX);
        assert_eq!(byte_prefix("héllo", 2), "h");
        assert_eq!(byte_prefix("héllo", 3), "hé");
        assert!(summary_message("S").content.ends_with("\n\nS"));
    }

    /// The replay provider playing `lines`: a real provider, offline.
    fn replay(lines: &[&str]) -> ReplayProvider {
        let cassette = Cassette::parse("cassettes/test.jsonl", &lines.join("\n"))
            .unwrap_or_else(|e| panic!("cassette: {e}"));
        ReplayProvider::new(std::sync::Arc::new(cassette))
    }

    #[tokio::test]
    async fn summaries_keep_the_text_and_report_usage_or_failure() {
        let model = ModelSpec::new("replay", "test");
        let call = |index| request(&model, None, &[], 100, index);
        let long = format!(r#"{{"text": "{}"}}"#, "w ".repeat(1_000));
        let provider = replay(&[
            r#"{"reasoning": "thinking", "text": ["  They agreed", " on teal. "], "usage": {"output_tokens": 5}}"#,
            r#"{"text": "  \n", "usage": {"output_tokens": 1}}"#,
            &long,
        ]);
        let (summary, spent) = summarize(&provider, call(0), 100).await;
        assert_eq!(summary.expect("summary"), "They agreed on teal.");
        assert_eq!(spent.output_tokens, 5);

        let (summary, spent) = summarize(&provider, call(1), 100).await;
        assert!(matches!(summary, Err(CompactionError::Empty)));
        assert_eq!(
            spent.output_tokens, 1,
            "a failed compaction still reports usage"
        );

        let (summary, _) = summarize(&provider, call(2), 64).await;
        assert!(summary.expect("summary").len() <= 64 * 6);

        let (summary, spent) = summarize(&provider, call(3), 100).await;
        let e = summary.expect_err("the cassette has no fourth entry");
        assert!(
            e.to_string().contains("has no entry for model call 3"),
            "{e}"
        );
        assert!(spent.is_zero());
    }
}
