//! `odyssey exec SESSION -- CMD ARGS…`: one process in the session's sandbox cell, with its
//! output on the matching local stream as it is produced and its exit code as ours, so
//! `odyssey exec s -- make test && deploy` behaves like running `make test` locally. As
//! with `cat`, output reaches a pipe or a file byte for byte; on a terminal its control
//! characters are shown as escapes, since what runs in the sandbox is not trusted.

use std::path::PathBuf;
use std::time::Duration;

use odyssey_api::v1 as pb;
use pb::stream_session_command_response::Item;

use super::error::CliError;
use super::output::Output;
use super::{Global, json};
use odyssey_client::ClientError;
use odyssey_client::{CommandStream, OperatorCommand};

#[derive(Debug, clap::Args)]
pub(crate) struct ExecArgs {
    /// The session id.
    session: String,
    /// Working directory, relative to the session workspace.
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Kill the command and its children after this many milliseconds [default: the
    /// server's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: Option<u64>,
    /// The program and its arguments, after `--`. No shell runs them: write
    /// `-- sh -c 'a | b'` for a pipeline.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

pub(crate) async fn run(
    args: ExecArgs,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    let client = global.connect().await?;
    let cwd = args.cwd.as_ref().map(|p| p.to_string_lossy().into_owned());
    let mut stream = client
        .stream_session_command(
            &args.session,
            OperatorCommand::Argv(args.command),
            cwd.as_deref(),
            args.timeout_ms.map(Duration::from_millis),
        )
        .await?;
    let mut copier = OutputCopier::default();
    let copied = copy(&mut stream, &mut copier, output).await;
    // Our own line (an error, a note) must not continue the command's last stderr line.
    copier.close_err(output)?;
    copied?;
    let end = stream.end().ok_or_else(|| {
        ClientError::Protocol("the command's output stream ended without its end".into())
    })?;
    if !output.json && end.output_truncated {
        output.note("odyssey: the output was truncated (the server caps what it keeps)")?;
    }
    exit_status(end)
}

/// Hands every item to the local streams (or prints it as JSON) until the end item.
async fn copy(
    stream: &mut CommandStream,
    copier: &mut OutputCopier,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    while let Some(item) = stream.next().await? {
        if output.json {
            output.json_line(&json::message(&item)?)?;
        } else {
            copier.item(output, &item)?;
        }
    }
    Ok(())
}

/// Copies output items to the local streams; remembers whether stderr ends mid-line, so
/// a note or the error line after it starts on a line of its own.
#[derive(Default)]
struct OutputCopier {
    err_open: bool,
}

impl OutputCopier {
    fn item(
        &mut self,
        output: &mut Output<'_>,
        item: &pb::StreamSessionCommandResponse,
    ) -> std::io::Result<()> {
        let Some(Item::Output(chunk)) = &item.item else {
            return Ok(());
        };
        if chunk.text.is_empty() {
            return Ok(());
        }
        if chunk.stream == i32::from(pb::OutputStream::Stderr) {
            output.copy_err(&chunk.text)?;
            self.err_open = !chunk.text.ends_with('\n');
        } else {
            output.copy_out(&chunk.text)?;
        }
        Ok(())
    }

    fn close_err(&mut self, output: &mut Output<'_>) -> std::io::Result<()> {
        if self.err_open {
            output.err.write_all(b"\n")?;
            self.err_open = false;
        }
        Ok(())
    }
}

/// `Ok` for exit 0; otherwise an error carrying the code for our own exit.
fn exit_status(end: &pb::ExecCommandEnd) -> Result<(), CliError> {
    if end.timed_out || end.exit_code != 0 {
        Err(CliError::CommandExited {
            code: end.exit_code,
            timed_out: end.timed_out,
            duration_ms: end.duration_ms,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::Style;

    fn output_item(stream: pb::OutputStream, text: &str) -> pb::StreamSessionCommandResponse {
        pb::StreamSessionCommandResponse {
            item: Some(Item::Output(pb::ExecCommandOutputDelta {
                exec_id: "x1".into(),
                stream: stream.into(),
                text: text.into(),
            })),
        }
    }

    #[test]
    fn output_goes_to_the_matching_stream() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut output = Output {
            out: &mut out,
            err: &mut err,
            json: false,
            style: Style::plain(),
        };
        let mut copier = OutputCopier::default();
        let items = [
            pb::StreamSessionCommandResponse {
                item: Some(Item::Begin(pb::ExecCommandBegin {
                    exec_id: "x1".into(),
                    argv: vec!["make".into()],
                    ..Default::default()
                })),
            },
            output_item(pb::OutputStream::Stdout, "building\n"),
            output_item(pb::OutputStream::Stderr, "warning: x"),
            output_item(pb::OutputStream::Unspecified, "done\n"),
        ];
        for item in &items {
            copier.item(&mut output, item).unwrap();
        }
        copier.close_err(&mut output).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "building\ndone\n");
        assert_eq!(String::from_utf8(err).unwrap(), "warning: x\n");
    }

    #[test]
    fn the_exit_code_becomes_ours() {
        let end = |exit_code, timed_out| pb::ExecCommandEnd {
            exit_code,
            timed_out,
            duration_ms: 5000,
            ..Default::default()
        };
        assert!(exit_status(&end(0, false)).is_ok());
        let failed = exit_status(&end(3, false)).unwrap_err();
        assert_eq!(failed.exit_code(), 3);
        assert!(failed.is_silent());
        let timed_out = exit_status(&end(137, true)).unwrap_err();
        assert_eq!(timed_out.exit_code(), 137);
        assert!(!timed_out.is_silent());
        assert_eq!(
            timed_out.line(),
            "odyssey: the command timed out after 5000 ms and was killed"
        );
        // Codes a shell cannot carry still fail.
        assert_eq!(exit_status(&end(-1, false)).unwrap_err().exit_code(), 1);
        assert_eq!(exit_status(&end(0, true)).unwrap_err().exit_code(), 124);
        assert_eq!(exit_status(&end(300, false)).unwrap_err().exit_code(), 1);
    }

    /// Issue 23: a command's output is escaped on a terminal and copied unchanged to a
    /// pipe or a file.
    #[test]
    fn output_is_escaped_on_a_terminal_only() {
        let hostile = "a\x1b]0;title\x07\r\u{202e}b\n";
        for (terminal, shown) in [(false, hostile), (true, "a\\x1b]0;title\\x07\\r\\u202eb\n")] {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let mut output = Output {
                out: &mut out,
                err: &mut err,
                json: false,
                style: Style {
                    stdout_terminal: terminal,
                    stderr_terminal: terminal,
                    ..Style::plain()
                },
            };
            let mut copier = OutputCopier::default();
            copier
                .item(&mut output, &output_item(pb::OutputStream::Stdout, hostile))
                .unwrap();
            copier
                .item(&mut output, &output_item(pb::OutputStream::Stderr, hostile))
                .unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), shown);
            assert_eq!(String::from_utf8(err).unwrap(), shown);
        }
    }
}
