//! The `odyssey` command line: argument parsing (clap derive) and dispatch. Each command
//! group lives in its own file; this one only routes and turns errors into exit codes.

mod a2a;
mod approval;
mod approvals;
mod args;
mod bundle;
mod call_view;
mod catalog;
mod config;
mod demo;
mod error;
mod events;
mod exec;
mod execution;
mod files;
mod info;
mod input;
mod input_request;
mod json;
mod output;
mod printer;
mod prompt;
mod render;
mod session;
mod time;

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

use self::error::CliError;
use self::output::Output;
pub use self::output::Style;
use odyssey_client::ClientError;
use odyssey_client::{ConnectOptions, OdysseyClient};

/// Where `odysseyd` listens unless told otherwise.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8472";

/// Odyssey: package agents as bundles, run them as sessions, follow every event.
#[derive(Debug, Parser)]
#[command(
    name = "odyssey",
    version,
    propagate_version = true,
    max_term_width = 100
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Flags every command accepts.
#[derive(Clone, Debug, clap::Args)]
struct Global {
    /// Server URL.
    #[arg(long, global = true, env = "ODYSSEY_SERVER", default_value = DEFAULT_SERVER)]
    server: String,
    /// Bearer token for a server started with --auth-token.
    #[arg(long, global = true, env = "ODYSSEY_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Machine output: one JSON object per line, each API message in its proto3 JSON form
    /// (what grpcurl prints; events as SubscribeSession sends them).
    #[arg(long, global = true)]
    json: bool,
    /// Trust this CA certificate (PEM) for an https:// server, instead of the system's
    /// roots.
    #[arg(long, global = true, env = "ODYSSEY_TLS_CA", value_name = "FILE")]
    tls_ca: Option<PathBuf>,
}

impl Global {
    async fn connect(&self) -> Result<OdysseyClient, ClientError> {
        let mut options = ConnectOptions::new();
        if let Some(token) = &self.token {
            options = options.token(token.clone());
        }
        if let Some(path) = &self.tls_ca {
            let pem = std::fs::read(path)
                .map_err(|e| ClientError::io("cannot read the CA certificate", path, e))?;
            options = options.ca_certificate_pem(pem);
        }
        OdysseyClient::connect_with(self.server.clone(), options).await
    }
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Run the Odyssey server (odysseyd) in the foreground.
    Serve(Box<odyssey_server::config::ServeArgs>),
    /// Start a throwaway server, install the demo bundle and watch one turn stream.
    Demo(demo::DemoArgs),
    /// Inspect the server configuration (files, environment and flags) on this machine.
    #[command(subcommand)]
    Config(Box<config::ConfigCommand>),
    /// Create, build, install and move bundles.
    #[command(subcommand)]
    Bundle(bundle::BundleCommand),
    /// List the agents of an installed bundle.
    Agents(catalog::CatalogArgs),
    /// List the models of a bundle's agents and whether this server can run them.
    Models(catalog::CatalogArgs),
    /// List the skills an installed bundle's agents can use (the bundle's and the server's).
    Skills(catalog::CatalogArgs),
    /// Create, list, show and delete sessions.
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// Run a turn and stream it: the answer on stdout, activity on stderr. Tool calls
    /// that need approval are asked on the terminal.
    ///
    /// On a terminal, text from the model and its tools is shown with control characters
    /// as visible escapes (`\x1b`, `\r`, `\u202e`), never acted on. With stdout not a
    /// terminal (a pipe, a file), the answer is written byte for byte, unchanged, as `cat`
    /// would; `--json` prints JSON-escaped events.
    Run(execution::RunArgs),
    /// Enqueue a turn and print its execution id.
    Submit(execution::SubmitArgs),
    /// Show an execution's state.
    Status(execution::ExecutionArgs),
    /// Cancel a queued or running execution.
    Cancel(execution::ExecutionArgs),
    /// Send a session input while a turn may be running: --steer adds it to the running
    /// turn before its next model call, --queue runs it as a turn after, --interrupt stops
    /// the running turn and runs it next. With no turn running, each starts a turn. Prints
    /// the execution that carries it.
    Send(input::SendArgs),
    /// Print a session's stored events; with --follow, keep streaming live ones.
    Events(events::EventsArgs),
    /// Run a command in a session's sandbox, streaming its output; exits with its code.
    Exec(exec::ExecArgs),
    /// List the tool calls waiting for approval.
    Approvals(approvals::ApprovalsArgs),
    /// Allow a tool call that waits for approval.
    Approve(approvals::ApproveArgs),
    /// Refuse a tool call that waits for approval.
    Deny(approvals::DenyArgs),
    /// The server's agents over the Agent2Agent protocol (A2A v1.0): cards and tasks.
    #[command(subcommand)]
    A2a(a2a::A2aCommand),
    /// Show what the server is: version, capacity, sandbox, workspace snapshots, and
    /// where it keeps sessions (the store, and the replicas sharing it).
    Info,
}

/// Runs one `odyssey` invocation in-process and returns its exit code: 0 on success, 1 on
/// errors (one line on `err`: `odyssey: <message> (<GRPC_CODE>)`), 2 on usage errors.
///
/// `args` are the arguments after the program name (`["bundle", "list"]`); a leading
/// `odyssey` (as in `std::env::args()`) is accepted and skipped. Output is plain, without
/// color, so tests can compare it.
pub async fn run_cli(
    args: Vec<String>,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
) -> i32 {
    run_cli_with(args, out, err, Style::plain()).await
}

/// [`run_cli`] with a chosen [`Style`] (the binary passes [`Style::detect`]).
pub async fn run_cli_with(
    args: Vec<String>,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    style: Style,
) -> i32 {
    let argv = std::iter::once("odyssey".to_owned()).chain(skip_program_name(args));
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let rendered = if style.color {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            let written = if e.use_stderr() {
                err.write_all(rendered.as_bytes())
                    .and_then(|()| err.flush())
            } else {
                out.write_all(rendered.as_bytes())
                    .and_then(|()| out.flush())
            };
            // Nowhere left to report a failed write of the usage message itself.
            drop(written);
            return e.exit_code();
        }
    };
    let mut output = Output {
        out,
        err,
        json: cli.global.json,
        style,
    };
    let result = dispatch(cli.command, &cli.global, &mut output).await;
    let flushed = output.out.flush();
    match result.and(flushed.map_err(CliError::from)) {
        Ok(()) => 0,
        // The reader went away (`| head`): nothing left worth saying.
        Err(e) if e.is_broken_pipe() => 141,
        Err(e) => {
            if !e.is_silent() {
                // A server's message may quote what a model or a bundle wrote.
                let _ = writeln!(output.err, "{}", odyssey_visible::escape(&e.line()));
            }
            let _ = output.err.flush();
            e.exit_code()
        }
    }
}

/// Drops a leading program name, so both `["bundle", "list"]` and `env::args()` work. No
/// command is called `odyssey`, so this never eats a real argument.
fn skip_program_name(mut args: Vec<String>) -> Vec<String> {
    let is_program = args.first().is_some_and(|first| {
        std::path::Path::new(first)
            .file_stem()
            .is_some_and(|stem| stem == "odyssey")
    });
    if is_program {
        args.remove(0);
    }
    args
}

async fn dispatch(
    command: Command,
    global: &Global,
    output: &mut Output<'_>,
) -> Result<(), CliError> {
    match command {
        Command::Serve(args) => Ok(odyssey_server::serve::run(*args).await?),
        Command::Demo(args) => demo::run(args, output).await,
        Command::Config(command) => config::run(*command, output),
        Command::Bundle(command) => bundle::run(command, global, output).await,
        Command::Agents(args) => catalog::agents(args, global, output).await,
        Command::Models(args) => catalog::models(args, global, output).await,
        Command::Skills(args) => catalog::skills(args, global, output).await,
        Command::Session(command) => session::run(command, global, output).await,
        Command::Run(args) => execution::run(args, global, output).await,
        Command::Submit(args) => execution::submit(args, global, output).await,
        Command::Status(args) => execution::status(args, global, output).await,
        Command::Cancel(args) => execution::cancel(args, global, output).await,
        Command::Send(args) => input::send(args, global, output).await,
        Command::Events(args) => events::run(args, global, output).await,
        Command::Exec(args) => exec::run(args, global, output).await,
        Command::Approvals(args) => approvals::list(args, global, output).await,
        Command::Approve(args) => approvals::approve(args, global, output).await,
        Command::Deny(args) => approvals::deny(args, global, output).await,
        Command::A2a(command) => a2a::run(command, global, output).await,
        Command::Info => info::run(global, output).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("odyssey").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_tree_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_work_after_the_command() {
        let cli = parse(&[
            "session",
            "list",
            "--json",
            "--server",
            "http://h:1",
            "--token",
            "t",
        ])
        .unwrap();
        assert!(cli.global.json);
        assert_eq!(cli.global.server, "http://h:1");
        assert_eq!(cli.global.token.as_deref(), Some("t"));
    }

    #[test]
    fn program_name_is_optional() {
        assert_eq!(
            skip_program_name(vec!["odyssey".into(), "run".into()]),
            ["run"]
        );
        assert_eq!(
            skip_program_name(vec!["/usr/bin/odyssey".into(), "run".into()]),
            ["run"]
        );
        assert_eq!(skip_program_name(vec!["run".into()]), ["run"]);
    }

    #[test]
    fn exec_takes_the_command_after_a_double_dash() {
        let cli = parse(&[
            "exec",
            "s1",
            "--cwd",
            "src",
            "--timeout-ms",
            "1500",
            "--",
            "ls",
            "-la",
            "--color=never",
        ])
        .unwrap();
        let Command::Exec(args) = cli.command else {
            panic!("not exec: {:?}", cli.command);
        };
        let text = format!("{args:?}");
        assert!(text.contains("session: \"s1\""), "{text}");
        assert!(text.contains("cwd: Some(\"src\")"), "{text}");
        assert!(text.contains("timeout_ms: Some(1500)"), "{text}");
        assert!(
            text.contains("command: [\"ls\", \"-la\", \"--color=never\"]"),
            "{text}"
        );
        // The command is required, must follow `--`, and a zero timeout is refused.
        assert!(parse(&["exec", "s1"]).is_err());
        assert!(parse(&["exec", "s1", "ls"]).is_err());
        assert!(parse(&["exec", "s1", "--timeout-ms", "0", "--", "ls"]).is_err());
    }

    #[test]
    fn approval_commands_parse() {
        let Command::Approvals(args) = parse(&["approvals", "--session", "s1"]).unwrap().command
        else {
            panic!("not approvals");
        };
        assert!(format!("{args:?}").contains("Some(\"s1\")"));
        assert!(matches!(
            parse(&["approvals"]).unwrap().command,
            Command::Approvals(_)
        ));

        let Command::Approve(args) = parse(&["approve", "r1", "--always"]).unwrap().command else {
            panic!("not approve");
        };
        assert_eq!(
            format!("{args:?}"),
            "ApproveArgs { request: \"r1\", always: true, answer: None }"
        );
        let Command::Approve(args) = parse(&["approve", "r1"]).unwrap().command else {
            panic!("not approve");
        };
        assert_eq!(
            format!("{args:?}"),
            "ApproveArgs { request: \"r1\", always: false, answer: None }"
        );
        assert!(parse(&["approve"]).is_err());

        let Command::Deny(args) = parse(&["deny", "r1", "--reason", "not on main"])
            .unwrap()
            .command
        else {
            panic!("not deny");
        };
        assert_eq!(
            format!("{args:?}"),
            "DenyArgs { request: \"r1\", reason: Some(\"not on main\"), cancel: false }"
        );
        assert!(parse(&["deny", "r1", "--always"]).is_err());
        let Command::Approve(args) = parse(&["approve", "r1", "--answer", "{\"name\": \"Ada\"}"])
            .unwrap()
            .command
        else {
            panic!("not approve");
        };
        assert!(format!("{args:?}").contains("answer: Some("));
        assert!(parse(&["approve", "r1", "--answer", "{}", "--always"]).is_err());
        assert!(parse(&["deny", "r1", "--cancel", "--reason", "x"]).is_err());
    }

    #[test]
    fn run_auto_answers_are_exclusive_and_only_for_run() {
        for (flag, approve, deny) in [
            ("--auto-approve", true, false),
            ("--auto-deny", false, true),
        ] {
            let Command::Run(args) = parse(&["run", "s1", "hi", flag]).unwrap().command else {
                panic!("not run");
            };
            let text = format!("{args:?}");
            assert!(
                text.contains(&format!("auto_approve: {approve}, auto_deny: {deny}")),
                "{text}"
            );
        }
        let both = parse(&["run", "s1", "hi", "--auto-approve", "--auto-deny"]).unwrap_err();
        assert_eq!(both.kind(), clap::error::ErrorKind::ArgumentConflict);
        assert!(parse(&["submit", "s1", "hi", "--auto-deny"]).is_err());
        assert!(parse(&["submit", "s1", "hi", "--cwd", "src"]).is_ok());
    }

    /// Issue 23: `run --help` says how the answer is written off a terminal.
    #[tokio::test]
    async fn run_help_says_the_answer_is_unchanged_off_a_terminal() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let args = vec!["run".into(), "--help".into()];
        assert_eq!(run_cli(args, &mut out, &mut err).await, 0);
        let help = String::from_utf8(out).unwrap();
        assert!(
            help.contains("byte for byte, unchanged, as `cat` would"),
            "{help}"
        );
        assert!(help.contains("visible escapes"), "{help}");
    }

    #[tokio::test]
    async fn usage_errors_exit_2_on_stderr() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_cli(vec!["session".into(), "create".into()], &mut out, &mut err).await;
        assert_eq!(code, 2);
        assert!(out.is_empty());
        assert!(String::from_utf8(err).unwrap().contains("BUNDLE"));
    }

    #[tokio::test]
    async fn bad_meta_is_a_usage_error() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let args = ["session", "create", "demo", "--meta", "novalue"]
            .map(String::from)
            .to_vec();
        assert_eq!(run_cli(args, &mut out, &mut err).await, 2);
        assert!(String::from_utf8(err).unwrap().contains("KEY=VALUE"));
    }

    #[tokio::test]
    async fn help_goes_to_stdout_and_succeeds() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(run_cli(vec!["--help".into()], &mut out, &mut err).await, 0);
        let help = String::from_utf8(out).unwrap();
        for command in ["bundle", "session", "run", "events"] {
            assert!(help.contains(command), "help lacks {command}");
        }
    }

    #[tokio::test]
    async fn unreachable_servers_are_one_line_errors() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        // Port 1 on loopback: nothing listens there.
        let args = ["bundle", "list", "--server", "http://127.0.0.1:1"]
            .map(String::from)
            .to_vec();
        assert_eq!(run_cli(args, &mut out, &mut err).await, 1);
        let err = String::from_utf8(err).unwrap();
        assert!(
            err.starts_with("odyssey: cannot connect to http://127.0.0.1:1"),
            "{err}"
        );
        assert!(err.trim_end().ends_with("(UNAVAILABLE)"), "{err}");
        assert_eq!(err.lines().count(), 1);
    }
}
