//! Operator pre-tool hooks: commands that see each pending tool call (as JSON on stdin)
//! and answer `{"decision": "allow"|"deny"|"ask", "reason": "..."}` on stdout.
//!
//! Hooks can only tighten: a hook's allow never overrides the rules' ask or deny, and the
//! strictest answer wins (deny > ask > allow). A hook is a security control, so a hook that
//! cannot start, exits non-zero, runs past its timeout or prints something else than an
//! answer fails closed: the call is denied, and the reason says which hook failed and how.

use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

use super::decide::Decision;

/// How long a hook may take when its configuration does not say.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a hook may print on stdout; an answer is one small JSON object.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How much of a failing hook's stderr is quoted in the reason.
const MAX_STDERR_QUOTE: usize = 300;

/// One operator-configured hook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookConfig {
    /// The program and its arguments (run directly, not through a shell).
    pub command: Vec<String>,
    /// The hook is killed, and the call denied, if it has not answered by then.
    pub timeout: Duration,
}

impl HookConfig {
    pub fn new(command: Vec<String>, timeout: Duration) -> Self {
        Self { command, timeout }
    }

    /// The hook as named in reasons.
    fn name(&self) -> String {
        self.command.join(" ")
    }
}

/// A hook's answer.
#[derive(Debug, Deserialize)]
struct Answer {
    decision: AnswerDecision,
    #[serde(default)]
    reason: String,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum AnswerDecision {
    Allow,
    Ask,
    Deny,
}

/// Runs the hooks on a call the rules already decided, and returns the stricter of that
/// decision and every hook's answer. A denied call runs no hooks; hooks run one after the
/// other and stop at the first deny. The session's policy is the caller's to apply again
/// (`Decision::without_asking` for `never`), since a hook may turn an allow into an ask.
pub async fn apply_hooks(
    hooks: &[HookConfig],
    call: &serde_json::Value,
    decision: Decision,
) -> Decision {
    if hooks.is_empty() || matches!(decision, Decision::Deny { .. }) {
        return decision;
    }
    let input = call.to_string();
    let mut decision = decision;
    for hook in hooks {
        let answer = match run_hook(hook, &input).await {
            Ok(answer) => answer,
            Err(failure) => {
                return Decision::Deny {
                    reason: format!(
                        "pre-tool hook `{}` {failure}; hooks fail closed, so the call is denied",
                        hook.name()
                    ),
                };
            }
        };
        let said = |verb: &str| {
            if answer.reason.is_empty() {
                format!("pre-tool hook `{}` {verb}", hook.name())
            } else {
                format!("pre-tool hook `{}` {verb}: {}", hook.name(), answer.reason)
            }
        };
        let from_hook = match answer.decision {
            AnswerDecision::Allow => Decision::Allow,
            AnswerDecision::Ask => Decision::Ask {
                reason: said("asks for approval"),
            },
            AnswerDecision::Deny => Decision::Deny {
                reason: said("denied the call"),
            },
        };
        decision = stricter(decision, from_hook);
        if matches!(decision, Decision::Deny { .. }) {
            break;
        }
    }
    decision
}

/// The stricter decision; two asks keep both reasons.
fn stricter(current: Decision, other: Decision) -> Decision {
    match (current, other) {
        (Decision::Ask { reason: a }, Decision::Ask { reason: b }) => Decision::Ask {
            reason: format!("{a}; {b}"),
        },
        (current, other) if other.strictness() > current.strictness() => other,
        (current, _) => current,
    }
}

/// Runs one hook to completion within its timeout. The error completes the sentence
/// "pre-tool hook `x` ...".
async fn run_hook(hook: &HookConfig, input: &str) -> Result<Answer, String> {
    let Some((program, args)) = hook.command.split_first() else {
        return Err("has no command configured".to_owned());
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let conversation = async {
        let write = async {
            if let Some(mut stdin) = stdin {
                // A hook that answers without reading its input closes the pipe early;
                // that is its business, the answer is what counts.
                let _ = stdin.write_all(input.as_bytes()).await;
                let _ = stdin.shutdown().await;
            }
        };
        let (_, out, err, status) = tokio::join!(
            write,
            read_capped(stdout, MAX_ANSWER_BYTES + 1),
            read_capped(stderr, MAX_STDERR_QUOTE),
            child.wait()
        );
        (out, err, status)
    };
    let (out, err, status) = tokio::time::timeout(hook.timeout, conversation)
        .await
        .map_err(|_| format!("did not answer within {} ms", hook.timeout.as_millis()))?;
    let status = status.map_err(|e| format!("could not be waited for: {e}"))?;
    if !status.success() {
        let stderr = String::from_utf8_lossy(&err);
        let stderr = stderr.trim();
        let code = status
            .code()
            .map_or_else(|| "a signal".to_owned(), |c| format!("status {c}"));
        return Err(if stderr.is_empty() {
            format!("exited with {code}")
        } else {
            format!("exited with {code} ({stderr})")
        });
    }
    if out.len() > MAX_ANSWER_BYTES {
        return Err(format!("printed more than {MAX_ANSWER_BYTES} bytes"));
    }
    serde_json::from_slice::<Answer>(&out).map_err(|e| {
        let printed = String::from_utf8_lossy(&out);
        let printed: String = printed.trim().chars().take(120).collect();
        format!(
            "gave no valid answer ({e}); expected {{\"decision\": \"allow\"|\"deny\"|\"ask\", \
             \"reason\": \"...\"}}, got `{printed}`"
        )
    })
}

/// Reads a pipe to its end, keeping the first `limit` bytes: a hook that prints more is
/// still drained, so it never blocks on a full pipe; a read error ends the output there.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let Some(mut pipe) = pipe else { return out };
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(out.len());
                out.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    out
}
