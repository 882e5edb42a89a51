//! How `run` and `demo` answer a permission request of the turn they follow: ask the human
//! at the terminal, answer automatically (flags, or the demo off a terminal), or leave the
//! request to someone else and say exactly how to answer it. Each way shows the whole call
//! as the server's display form ([`CallView`](super::call_view::CallView)).

use std::io::{self, Write};

use odyssey_api::v1 as pb;
use tonic::Code;

use super::DEFAULT_SERVER;
use super::call_view::SEE_ALL;
use super::error::CliError;
use super::output::Output;
use super::prompt::{self, Answer, Input, requested_call};
use odyssey_client::OdysseyClient;

/// Where the whole of a call answered without asking can be read.
pub(crate) const IN_THE_EVENTS: &str = "the session's events hold it whole (odyssey events --json)";

/// The deny reason the model sees when the CLI denied without asking anyone.
pub(crate) const NON_INTERACTIVE_DENY: &str = "denied by the CLI (non-interactive)";

/// `run`'s answers for scripts.
#[derive(Clone, Copy, Debug, Default, clap::Args)]
pub(crate) struct AutoAnswer {
    /// Allow every approval request of this turn once, without asking.
    #[arg(long, conflicts_with = "auto_deny")]
    pub auto_approve: bool,
    /// Deny every approval request of this turn, without asking.
    #[arg(long)]
    pub auto_deny: bool,
}

/// Why a request is denied without asking; it decides the note the human reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AutoDeny {
    /// `--auto-deny`.
    Flag,
    /// The demo, with no terminal to ask on.
    DemoNotATerminal,
}

/// What happens when a permission request of the turn arrives.
pub(crate) enum Responder {
    /// Ask at the terminal.
    Ask(Input),
    /// Allow once (`--auto-approve`).
    AllowOnce,
    Deny(AutoDeny),
    /// Print how to answer and keep streaming: someone else may approve or deny.
    Wait {
        /// `--server URL` for the printed commands, when not the default server.
        server: Option<String>,
    },
}

impl Responder {
    /// `run`: the flags win; otherwise ask when a human is at the terminal, else wait.
    pub fn for_run(auto: AutoAnswer, interactive: bool, server: &str) -> Self {
        if auto.auto_approve {
            Self::AllowOnce
        } else if auto.auto_deny {
            Self::Deny(AutoDeny::Flag)
        } else if interactive {
            Self::Ask(Input::Stdin)
        } else {
            Self::Wait {
                server: (server != DEFAULT_SERVER).then(|| server.to_owned()),
            }
        }
    }

    /// `demo`: ask when a human is at the terminal; deny otherwise, so the demo never
    /// hangs in CI or a pipe (its embedded server is not reachable from elsewhere).
    pub fn for_demo(interactive: bool) -> Self {
        if interactive {
            Self::Ask(Input::Stdin)
        } else {
            Self::Deny(AutoDeny::DemoNotATerminal)
        }
    }

    /// Tells the human what happens with `request` and returns what to send; `None` when
    /// the request is left for someone else.
    pub async fn decide(
        &mut self,
        request: &pb::PermissionRequested,
        err: &mut (dyn Write + Send),
    ) -> io::Result<Option<Answer>> {
        match self {
            Self::Ask(input) => prompt::ask(input, err, request).await.map(Some),
            Self::AllowOnce => {
                writeln!(
                    err,
                    "? {} asks to run — allowed once (--auto-approve):\n{}",
                    odyssey_visible::escape_line(&request.tool),
                    requested_call(request, "    ", IN_THE_EVENTS)
                )?;
                Ok(Some(Answer::allow_once()))
            }
            Self::Deny(why) => {
                writeln!(err, "{}", auto_deny_note(*why, request))?;
                Ok(Some(Answer::deny(NON_INTERACTIVE_DENY)))
            }
            Self::Wait { server } => {
                write!(err, "{}", wait_note(request, server.as_deref()))?;
                Ok(None)
            }
        }
    }
}

/// The line printed when a request is denied without asking.
pub(crate) fn auto_deny_note(why: AutoDeny, request: &pb::PermissionRequested) -> String {
    match why {
        AutoDeny::Flag => format!(
            "? {} asks to run — denied (--auto-deny):\n{}",
            odyssey_visible::escape_line(&request.tool),
            requested_call(request, "    ", IN_THE_EVENTS)
        ),
        AutoDeny::DemoNotATerminal => format!(
            "not a terminal: denying this {} call; run the demo in a terminal to approve \
             it:\n{}",
            odyssey_visible::escape_line(&request.tool),
            requested_call(request, "    ", IN_THE_EVENTS)
        ),
    }
}

/// The lines printed when the turn is left waiting: what waits, and the exact commands
/// that answer it.
pub(crate) fn wait_note(request: &pb::PermissionRequested, server: Option<&str>) -> String {
    let program = match server {
        Some(url) => format!("odyssey --server {url}"),
        None => "odyssey".to_owned(),
    };
    let id = odyssey_visible::escape_line(&request.request_id);
    format!(
        "? {tool} waits for approval (request {id}):\n{call}\n  \
         the turn waits until someone answers; not a terminal, so not asking here:\n    \
         {program} approve {id}   (add --always to allow this exact call for the session)\n    \
         {program} deny {id}      (add --reason TEXT to tell the model why)\n",
        tool = odyssey_visible::escape_line(&request.tool),
        call = requested_call(request, "    ", SEE_ALL),
    )
}

/// Decides on a permission request of the turn and sends the answer. A request that was
/// answered elsewhere in the meantime (another terminal, the timeout, a cancel) is not an
/// error: the turn goes on, and its `approval_resolved` event says how it was answered.
pub(crate) async fn respond(
    client: &OdysseyClient,
    responder: &mut Responder,
    output: &mut Output<'_>,
    request: &pb::PermissionRequested,
) -> Result<(), CliError> {
    let decided = responder.decide(request, &mut *output.err).await?;
    output.err.flush()?;
    let Some(answer) = decided else {
        return Ok(());
    };
    let sent = client
        .resolve_approval(
            &request.request_id,
            answer.decision,
            answer.reason.as_deref(),
        )
        .await;
    match sent {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.code(), Some(Code::NotFound | Code::FailedPrecondition)) => {
            output.note(format!(
                "  request {} was already answered elsewhere: {e}",
                request.request_id
            ))?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::tests::bash_request;

    async fn decided(responder: &mut Responder) -> (Option<Answer>, String) {
        let mut err = Vec::new();
        let answer = responder
            .decide(&bash_request("git push"), &mut err)
            .await
            .unwrap();
        (answer, String::from_utf8(err).unwrap())
    }

    #[test]
    fn run_picks_flags_then_the_terminal_then_waiting() {
        let approve = AutoAnswer {
            auto_approve: true,
            auto_deny: false,
        };
        let deny = AutoAnswer {
            auto_approve: false,
            auto_deny: true,
        };
        assert!(matches!(
            Responder::for_run(approve, true, DEFAULT_SERVER),
            Responder::AllowOnce
        ));
        assert!(matches!(
            Responder::for_run(deny, true, DEFAULT_SERVER),
            Responder::Deny(AutoDeny::Flag)
        ));
        assert!(matches!(
            Responder::for_run(AutoAnswer::default(), true, DEFAULT_SERVER),
            Responder::Ask(Input::Stdin)
        ));
        assert!(matches!(
            Responder::for_run(AutoAnswer::default(), false, DEFAULT_SERVER),
            Responder::Wait { server: None }
        ));
        assert!(matches!(
            Responder::for_run(AutoAnswer::default(), false, "http://h:1"),
            Responder::Wait { server: Some(url) } if url == "http://h:1"
        ));
    }

    #[test]
    fn the_demo_asks_on_a_terminal_and_denies_elsewhere() {
        assert!(matches!(
            Responder::for_demo(false),
            Responder::Deny(AutoDeny::DemoNotATerminal)
        ));
        assert!(matches!(
            Responder::for_demo(true),
            Responder::Ask(Input::Stdin)
        ));
    }

    #[tokio::test]
    async fn waiting_prints_the_exact_commands_and_sends_nothing() {
        let (answer, err) = decided(&mut Responder::Wait { server: None }).await;
        assert_eq!(answer, None);
        assert!(
            err.starts_with("? Bash waits for approval (request req-1):\n    git push\n"),
            "{err}"
        );
        assert!(err.contains("\n    odyssey approve req-1 "), "{err}");
        assert!(err.contains("\n    odyssey deny req-1 "), "{err}");
        let (_, err) = decided(&mut Responder::Wait {
            server: Some("http://h:1".into()),
        })
        .await;
        assert!(
            err.contains("odyssey --server http://h:1 approve req-1"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn auto_answers_say_what_they_did() {
        let (answer, err) = decided(&mut Responder::AllowOnce).await;
        assert_eq!(answer, Some(Answer::allow_once()));
        assert_eq!(
            err,
            "? Bash asks to run — allowed once (--auto-approve):\n    git push\n"
        );
        let (answer, err) = decided(&mut Responder::Deny(AutoDeny::Flag)).await;
        assert_eq!(answer, Some(Answer::deny(NON_INTERACTIVE_DENY)));
        assert_eq!(
            err,
            "? Bash asks to run — denied (--auto-deny):\n    git push\n"
        );
    }

    /// Issue 23: every way of answering shows the whole call escaped, and says when it
    /// holds control characters.
    #[tokio::test]
    async fn every_answer_shows_a_hidden_command_escaped() {
        let request = bash_request("rm -rf ~/important \r\x1b[2Kls -la");
        let shown = "    rm -rf ~/important \\r\\x1b[2Kls -la\n    ! contains control characters";
        let responders = [
            Responder::AllowOnce,
            Responder::Deny(AutoDeny::Flag),
            Responder::Wait { server: None },
            Responder::Ask(Input::Reader(Box::new(std::io::Cursor::new(
                b"n\n\n".to_vec(),
            )))),
        ];
        for mut responder in responders {
            let mut err = Vec::new();
            responder.decide(&request, &mut err).await.unwrap();
            let err = String::from_utf8(err).unwrap();
            assert!(err.contains(shown), "{err}");
            assert!(!odyssey_visible::has_controls(&err), "{err:?}");
        }
    }

    #[tokio::test]
    async fn the_demo_off_a_terminal_denies_with_a_note() {
        let (answer, err) = decided(&mut Responder::Deny(AutoDeny::DemoNotATerminal)).await;
        assert_eq!(answer, Some(Answer::deny(NON_INTERACTIVE_DENY)));
        assert_eq!(
            err,
            "not a terminal: denying this Bash call; run the demo in a terminal to approve \
             it:\n    git push\n"
        );
    }

    #[tokio::test]
    async fn asking_reads_the_injected_input() {
        let input = Input::Reader(Box::new(std::io::Cursor::new(b"a\n".to_vec())));
        let (answer, err) = decided(&mut Responder::Ask(input)).await;
        let answer = answer.unwrap();
        assert_eq!(answer.decision, pb::ApprovalDecision::AllowAlways);
        assert!(err.contains("asks for approval (request req-1)"), "{err}");
    }
}
