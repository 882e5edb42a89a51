//! The turns a session's log holds, read back from the log file: when each started and
//! ended, how, with what prompt and answer. This is how a turn is found once the server no
//! longer holds it in memory (after a restart, or long after it ended).
//!
//! Only the lines that can matter are parsed: a line is decoded when it holds the type of
//! an event asked for (and the turn's id, when one turn is asked for), so reading a long
//! log costs a byte search per line, not a JSON parse per event.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use uuid::Uuid;

use super::handle::SessionHandle;
use crate::chat::TokenUsage;
use crate::error::{Result, RuntimeError};
use crate::events::{ApprovalDecision, ApprovalResolution, Event, EventPayload, TurnOutcome};

/// A turn as the session's log has it.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedTurn {
    pub turn_id: Uuid,
    pub prompt: String,
    /// The turn's metadata, as its request gave it.
    pub metadata: BTreeMap<String, String>,
    /// The sequence and time of its `turn_started`.
    pub first_sequence: u64,
    pub started_at_ms: u64,
    /// How it ended, if the log shows its end yet.
    pub end: Option<LoggedEnd>,
    /// The decisions a person made on its approval requests, in order.
    pub decisions: Vec<LoggedDecision>,
}

/// The end of a turn, as its `turn_completed` records it.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedEnd {
    pub outcome: TurnOutcome,
    pub response: String,
    pub error: String,
    pub usage: TokenUsage,
    pub last_sequence: u64,
    pub ended_at_ms: u64,
}

/// A person's decision on one approval request of a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedDecision {
    pub request_id: String,
    pub decision: ApprovalDecision,
    pub reason: String,
    pub sequence: u64,
    pub at_ms: u64,
}

impl LoggedTurn {
    /// When the turn last changed, as far as these events tell.
    pub fn updated_at_ms(&self) -> u64 {
        let decided = self.decisions.last().map_or(0, |d| d.at_ms);
        let ended = self.end.as_ref().map_or(0, |e| e.ended_at_ms);
        self.started_at_ms.max(decided).max(ended)
    }
}

/// The event types a turn listing reads.
const TYPES: [&[u8]; 3] = [
    b"\"type\":\"turn_started\"",
    b"\"type\":\"turn_completed\"",
    b"\"type\":\"approval_resolved\"",
];

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

impl SessionHandle {
    /// The turns of this session's log, oldest first; with `only`, just that turn (an
    /// empty list when the log has no such turn). Reads the file: call it off the async
    /// threads.
    pub fn logged_turns(&self, only: Option<Uuid>) -> Result<Vec<LoggedTurn>> {
        let (path, end) = {
            let state = self.lock();
            (state.log.path().to_path_buf(), state.log.size())
        };
        let visible = self.visible_sequence();
        let storage = |e: std::io::Error| RuntimeError::storage(path.display().to_string(), e);
        let mut file = std::fs::File::open(&path).map_err(storage)?;
        file.seek(SeekFrom::Start(0)).map_err(storage)?;
        let mut reader = BufReader::with_capacity(64 * 1024, file.take(end));
        let wanted_turn = only.map(|id| id.to_string());
        let mut turns: Vec<LoggedTurn> = Vec::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(storage)? == 0 {
                break;
            }
            if !TYPES.iter().any(|t| contains(&line, t)) {
                continue;
            }
            if let Some(turn) = &wanted_turn
                && !contains(&line, turn.as_bytes())
            {
                continue;
            }
            let Ok(event) = serde_json::from_slice::<Event>(line.trim_ascii_end()) else {
                // A torn tail past the log's end cannot be here (the read stops at the
                // length of whole events); any other bad line was refused when the log
                // was opened.
                continue;
            };
            if event.sequence > visible {
                break;
            }
            let Some(turn_id) = event.turn_id else {
                continue;
            };
            if only.is_some_and(|id| id != turn_id) {
                continue;
            }
            observe(&mut turns, turn_id, event);
        }
        Ok(turns)
    }
}

fn observe(turns: &mut Vec<LoggedTurn>, turn_id: Uuid, event: Event) {
    if let EventPayload::TurnStarted(started) = event.payload {
        turns.push(LoggedTurn {
            turn_id,
            prompt: started.prompt,
            metadata: started.context.metadata,
            first_sequence: event.sequence,
            started_at_ms: event.created_at_ms,
            end: None,
            decisions: Vec::new(),
        });
        return;
    }
    // Events of a turn come after its start, and turns of a session do not overlap: the
    // turn is the last one started, in all but a log written by hand.
    let Some(turn) = turns.iter_mut().rev().find(|t| t.turn_id == turn_id) else {
        return;
    };
    match event.payload {
        EventPayload::TurnCompleted(completed) => {
            turn.end = Some(LoggedEnd {
                outcome: completed.outcome,
                response: completed.response,
                error: completed.error,
                usage: completed.usage,
                last_sequence: event.sequence,
                ended_at_ms: event.created_at_ms,
            });
        }
        EventPayload::ApprovalResolved {
            request_id,
            decision,
            resolution: ApprovalResolution::Decided,
            reason,
        } => turn.decisions.push(LoggedDecision {
            request_id,
            decision,
            reason,
            sequence: event.sequence,
            at_ms: event.created_at_ms,
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use uuid::Uuid;

    use super::super::{BundlePin, SessionRecord, SessionStore};
    use crate::events::{
        ApprovalDecision, ApprovalResolution, EventPayload, TurnCompleted, TurnContext,
        TurnOutcome, TurnStarted,
    };
    use crate::model::ModelSpec;
    use crate::policy::{ApprovalPolicy, SandboxMode};

    fn started(prompt: &str, message_id: &str) -> EventPayload {
        EventPayload::TurnStarted(TurnStarted {
            prompt: prompt.into(),
            context: TurnContext {
                cwd: ".".into(),
                model: ModelSpec::new("replay", "main"),
                sandbox_mode: SandboxMode::WorkspaceWrite,
                approval_policy: ApprovalPolicy::OnRequest,
                metadata: BTreeMap::from([("a2a.message_id".into(), message_id.into())]),
            },
        })
    }

    fn completed(outcome: TurnOutcome, response: &str) -> EventPayload {
        EventPayload::TurnCompleted(TurnCompleted {
            outcome,
            response: response.into(),
            error: String::new(),
            usage: Default::default(),
            messages: Vec::new(),
            model_calls: 0,
            reason: String::new(),
        })
    }

    fn resolved(request: &str, resolution: ApprovalResolution) -> EventPayload {
        EventPayload::ApprovalResolved {
            request_id: request.into(),
            decision: ApprovalDecision::Deny,
            resolution,
            reason: "no".into(),
        }
    }

    fn record() -> SessionRecord {
        SessionRecord {
            id: Uuid::now_v7(),
            bundle_reference: "demo".into(),
            bundle: BundlePin {
                namespace: "local".into(),
                name: "demo".into(),
                version: "0.1.0".into(),
                digest: "sha256:00".into(),
            },
            agent_id: "main".into(),
            model: ModelSpec::new("replay", "main"),
            sandbox_mode: SandboxMode::WorkspaceWrite,
            approval_policy: ApprovalPolicy::OnRequest,
            created_at_ms: 1,
            metadata: Default::default(),
            token_budget: None,
            forked: None,
            parent: None,
        }
    }

    #[tokio::test]
    async fn the_logs_turns_are_read_back_with_their_ends_and_decisions() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = SessionStore::open(dir.path().join("sessions"), dir.path().join("q"))
            .unwrap_or_else(|e| panic!("{e}"));
        let handle = store.create(record()).unwrap_or_else(|e| panic!("{e}"));
        let (first, second, open) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let delta = |text: &str| EventPayload::AgentMessageDelta { delta: text.into() };
        for (turn, payload) in [
            (first, started("one", "m-1")),
            (
                first,
                delta("mentions \"type\":\"turn_started\" in its text"),
            ),
            (first, completed(TurnOutcome::Completed, "answer one")),
            (second, started("two", "m-2")),
            (second, resolved("r-1", ApprovalResolution::Decided)),
            (second, resolved("r-2", ApprovalResolution::TimedOut)),
            (second, completed(TurnOutcome::Cancelled, "")),
            (open, started("three", "m-3")),
        ] {
            handle
                .append(Some(turn), payload)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        handle.sync().await.unwrap_or_else(|e| panic!("{e}"));

        let turns = handle.logged_turns(None).unwrap_or_else(|e| panic!("{e}"));
        let seen: Vec<(Uuid, &str, Option<TurnOutcome>)> = turns
            .iter()
            .map(|t| {
                (
                    t.turn_id,
                    t.prompt.as_str(),
                    t.end.as_ref().map(|e| e.outcome),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (first, "one", Some(TurnOutcome::Completed)),
                (second, "two", Some(TurnOutcome::Cancelled)),
                (open, "three", None),
            ]
        );
        let one = &turns[0];
        assert_eq!(one.first_sequence, 1);
        assert_eq!(
            one.metadata.get("a2a.message_id").map(String::as_str),
            Some("m-1")
        );
        let end = one.end.as_ref().unwrap_or_else(|| panic!("ended"));
        assert_eq!(
            (end.response.as_str(), end.last_sequence),
            ("answer one", 3)
        );

        let only = handle
            .logged_turns(Some(second))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(only.len(), 1);
        let decisions: Vec<&str> = only[0]
            .decisions
            .iter()
            .map(|d| d.request_id.as_str())
            .collect();
        assert_eq!(decisions, ["r-1"], "only a person's decisions");
        assert!(only[0].updated_at_ms() >= only[0].started_at_ms);
        assert!(
            handle
                .logged_turns(Some(Uuid::now_v7()))
                .unwrap_or_else(|e| panic!("{e}"))
                .is_empty()
        );
    }
}
