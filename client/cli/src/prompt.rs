//! Asking the human at the terminal whether a tool call may run. The question goes to the
//! error stream and the answer comes from stdin, so stdout keeps only the turn's answer.
//!
//! Anything but a clear yes is a no: end of input denies, and so does an answer that is
//! still unreadable after a few tries. A typo must never run a command.
//!
//! The call is shown whole, as the server's display form: control characters as visible
//! escapes (a command that would erase itself on the terminal is shown as it is), with a
//! note when there are any; a call too long for the screen says how much is cut and `s`
//! shows it all before the question is asked again.

use std::io::{self, BufRead, Write};

use odyssey_api::v1 as pb;

use super::call_view::CallView;
use super::render::shorten;

/// How many unreadable answers are re-asked before the request is denied.
const MAX_TRIES: usize = 3;
/// Longest reason shown with the question.
const REASON_WIDTH: usize = 400;
/// How the prompt offers the whole of a cut call.
const SHOW_ALL: &str = "answer s to see it all";

/// The deny reason when the human said no without giving one.
pub(crate) const DENIED_AT_TERMINAL: &str = "denied by the user";
/// The deny reason when the terminal closed before an answer.
pub(crate) const DENIED_NO_INPUT: &str = "denied: no answer (the input ended)";
/// The deny reason after [`MAX_TRIES`] unreadable answers.
pub(crate) const DENIED_UNREADABLE: &str = "denied: no valid answer at the terminal";

/// Where answers are read from.
pub(crate) enum Input {
    /// The process's stdin.
    Stdin,
    /// Scripted answers.
    #[cfg(test)]
    Reader(Box<dyn BufRead + Send>),
}

impl Input {
    /// One line without its line ending; `None` at end of input.
    async fn read_line(&mut self) -> io::Result<Option<String>> {
        let line = match self {
            Self::Stdin => read_stdin_line().await?,
            #[cfg(test)]
            Self::Reader(reader) => {
                let mut line = String::new();
                (reader.read_line(&mut line)? > 0).then_some(line)
            }
        };
        Ok(line.map(|l| l.trim_end_matches(['\n', '\r']).to_owned()))
    }
}

/// Reads one line of stdin on a thread of its own, so the runtime keeps serving the
/// connection (keepalives, the event stream) while the human thinks. Not `spawn_blocking`:
/// dropping the runtime waits for blocking tasks, so after Ctrl-C the process would hang
/// until Enter; a detached thread ends with the process.
async fn read_stdin_line() -> io::Result<Option<String>> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("odyssey-stdin".into())
        .spawn(move || {
            let mut line = String::new();
            let read = io::stdin()
                .lock()
                .read_line(&mut line)
                .map(|n| (n > 0).then_some(line));
            // The asker is gone only when the command is over; the line is nobody's then.
            drop(sender.send(read));
        })?;
    receiver
        .await
        .map_err(|_| io::Error::other("the terminal reader stopped without an answer"))?
}

/// The answers a human can give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    AllowOnce,
    AllowAlways,
    Deny,
    /// Show the whole call, then ask again.
    ShowAll,
}

/// Reads one typed answer: `y`/`yes`, `a`/`always`, `n`/`no` (or just Enter, which is no),
/// `s`/`show`. `None` for anything else.
pub(crate) fn parse_choice(answer: &str) -> Option<Choice> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Choice::AllowOnce),
        "a" | "always" => Some(Choice::AllowAlways),
        "" | "n" | "no" => Some(Choice::Deny),
        "s" | "show" => Some(Choice::ShowAll),
        _ => None,
    }
}

/// What to send with ResolveApproval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    pub decision: pb::ApprovalDecision,
    /// Shown to the model with a deny.
    pub reason: Option<String>,
}

impl Answer {
    pub fn allow_once() -> Self {
        Self {
            decision: pb::ApprovalDecision::AllowOnce,
            reason: None,
        }
    }

    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            decision: pb::ApprovalDecision::Deny,
            reason: Some(reason.into()),
        }
    }
}

/// The call the request will run, under `indent`, as [`CallView::block`] shows it.
pub(crate) fn requested_call(
    request: &pb::PermissionRequested,
    indent: &str,
    see_all: &str,
) -> String {
    CallView::of_request(request).block(indent, see_all)
}

/// Shows the request and asks until the answer is readable (or denies).
pub(crate) async fn ask(
    input: &mut Input,
    err: &mut (dyn Write + Send),
    request: &pb::PermissionRequested,
) -> io::Result<Answer> {
    let call = CallView::of_request(request);
    writeln!(
        err,
        "? {} asks for approval (request {}):",
        odyssey_visible::escape_line(&request.tool),
        odyssey_visible::escape_line(&request.request_id)
    )?;
    writeln!(err, "{}", call.block("    ", SHOW_ALL))?;
    if !request.reason.trim().is_empty() {
        writeln!(err, "  why: {}", shorten(&request.reason, REASON_WIDTH))?;
    }
    let mut tries = 0;
    while tries < MAX_TRIES {
        write!(
            err,
            "  [y] allow once  [a] allow always  [n] deny (default)  [s] show all > "
        )?;
        err.flush()?;
        let Some(line) = input.read_line().await? else {
            writeln!(err)?;
            writeln!(err, "  no answer: denied")?;
            return Ok(Answer::deny(DENIED_NO_INPUT));
        };
        match parse_choice(&line) {
            Some(Choice::ShowAll) => {
                writeln!(err, "{}", call.full("    "))?;
                continue;
            }
            Some(Choice::AllowOnce) => return Ok(Answer::allow_once()),
            Some(Choice::AllowAlways) => {
                return Ok(Answer {
                    decision: pb::ApprovalDecision::AllowAlways,
                    reason: None,
                });
            }
            Some(Choice::Deny) => {
                write!(err, "  reason for the model (optional) > ")?;
                err.flush()?;
                let reason = input
                    .read_line()
                    .await?
                    .map(|r| r.trim().to_owned())
                    .filter(|r| !r.is_empty());
                return Ok(Answer::deny(
                    reason.unwrap_or_else(|| DENIED_AT_TERMINAL.to_owned()),
                ));
            }
            None => writeln!(err, "  please answer y, a, n or s")?,
        }
        tries += 1;
    }
    writeln!(err, "  no valid answer: denied")?;
    Ok(Answer::deny(DENIED_UNREADABLE))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;

    pub(crate) fn bash_request(command: &str) -> pb::PermissionRequested {
        let mut fields = BTreeMap::new();
        fields.insert(
            "command".to_owned(),
            prost_types::Value::from(command.to_owned()),
        );
        pb::PermissionRequested {
            request_id: "req-1".into(),
            call_id: "call-1".into(),
            tool: "Bash".into(),
            arguments: Some(prost_types::Struct { fields }),
            summary: command.to_owned(),
            reason: "no rule allows Bash(git push:*)".into(),
            display: odyssey_visible::escape(command).into_owned(),
            control_characters: odyssey_visible::has_controls(command),
        }
    }

    async fn answer(typed: &str) -> (Answer, String) {
        let mut input = Input::Reader(Box::new(io::Cursor::new(typed.as_bytes().to_vec())));
        let mut err = Vec::new();
        let answer = ask(&mut input, &mut err, &bash_request("git push"))
            .await
            .unwrap();
        (answer, String::from_utf8(err).unwrap())
    }

    #[test]
    fn parses_choices() {
        assert_eq!(parse_choice("y"), Some(Choice::AllowOnce));
        assert_eq!(parse_choice(" YES \r"), Some(Choice::AllowOnce));
        assert_eq!(parse_choice("a"), Some(Choice::AllowAlways));
        assert_eq!(parse_choice("Always"), Some(Choice::AllowAlways));
        assert_eq!(parse_choice("n"), Some(Choice::Deny));
        assert_eq!(parse_choice("no"), Some(Choice::Deny));
        assert_eq!(parse_choice(""), Some(Choice::Deny));
        assert_eq!(parse_choice("s"), Some(Choice::ShowAll));
        assert_eq!(parse_choice("show"), Some(Choice::ShowAll));
        assert_eq!(parse_choice("sure"), None);
        assert_eq!(parse_choice("ya"), None);
    }

    #[tokio::test]
    async fn the_question_shows_tool_summary_and_reason() {
        let (_, err) = answer("y\n").await;
        assert!(
            err.starts_with("? Bash asks for approval (request req-1):\n"),
            "{err}"
        );
        assert!(err.contains("):\n    git push\n  why: "), "{err}");
        assert!(
            err.contains("  why: no rule allows Bash(git push:*)\n"),
            "{err}"
        );
        assert!(
            err.contains("[y] allow once  [a] allow always  [n] deny"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn y_allows_once_and_a_allows_always() {
        assert_eq!(answer("y\n").await.0, Answer::allow_once());
        let (always, _) = answer("a\n").await;
        assert_eq!(always.decision, pb::ApprovalDecision::AllowAlways);
        assert_eq!(always.reason, None);
    }

    #[tokio::test]
    async fn n_denies_with_the_typed_reason_or_a_default() {
        let (denied, err) = answer("n\nnot on main\n").await;
        assert_eq!(denied, Answer::deny("not on main"));
        assert!(err.contains("reason for the model (optional)"), "{err}");
        assert_eq!(answer("n\n\n").await.0, Answer::deny(DENIED_AT_TERMINAL));
        // Enter alone is the default, deny; end of input at the reason is no reason.
        assert_eq!(answer("\n").await.0, Answer::deny(DENIED_AT_TERMINAL));
    }

    #[tokio::test]
    async fn garbage_is_asked_again_then_denied() {
        let (allowed, err) = answer("sure\ny\n").await;
        assert_eq!(allowed, Answer::allow_once());
        assert!(err.contains("please answer y, a, n or s"), "{err}");
        let (denied, err) = answer("sure\nok\nfine\ny\n").await;
        assert_eq!(denied, Answer::deny(DENIED_UNREADABLE));
        assert_eq!(err.matches("please answer").count(), 3, "{err}");
    }

    #[tokio::test]
    async fn end_of_input_denies() {
        let (denied, err) = answer("").await;
        assert_eq!(denied, Answer::deny(DENIED_NO_INPUT));
        assert!(err.ends_with("no answer: denied\n"), "{err}");
    }

    /// Issue 23: the prompt shows the command a terminal would draw as `ls -la` as it is,
    /// says it holds control characters, and never cuts a long call silently: `s` shows
    /// all of it, and the question is asked again.
    #[tokio::test]
    async fn a_hidden_or_long_command_is_shown_as_it_is() {
        let mut input = Input::Reader(Box::new(io::Cursor::new(b"n\n\n".to_vec())));
        let mut err = Vec::new();
        let request = bash_request("rm -rf ~/important \r\x1b[2Kls -la");
        ask(&mut input, &mut err, &request).await.unwrap();
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.contains(
                "(request req-1):\n    rm -rf ~/important \\r\\x1b[2Kls -la\n    ! contains control characters"
            ),
            "{err}"
        );
        assert!(!odyssey_visible::has_controls(&err), "{err:?}");

        let long: String = (0..300).map(|i| format!("echo {i}\n")).collect();
        let mut input = Input::Reader(Box::new(io::Cursor::new(b"s\ny\n".to_vec())));
        let mut err = Vec::new();
        let answer = ask(&mut input, &mut err, &bash_request(&long))
            .await
            .unwrap();
        assert_eq!(answer, Answer::allow_once());
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.contains("    echo 39\n    … cut here: 40 of 300 lines"),
            "{err}"
        );
        assert!(err.contains("answer s to see it all"), "{err}");
        // After `s`, every line, then the question again.
        assert!(err.contains("    echo 299\n  [y] allow once"), "{err}");
        assert_eq!(err.matches("[y] allow once").count(), 2, "{err}");
    }
}
