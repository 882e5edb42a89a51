//! Rows for `ExecutionService`.

use odyssey_api::v1 as pb;

use super::{Case, Ctx, UNKNOWN_ID, case, done, first, huge};

fn input(c: &Ctx, prompt: &str) -> pb::TurnInput {
    pb::TurnInput {
        session_id: c.session_id.clone(),
        prompt: prompt.into(),
        ..Default::default()
    }
}

fn with_overrides(c: &Ctx, cwd: &str, model: Option<(&str, &str)>) -> Option<pb::TurnInput> {
    Some(pb::TurnInput {
        overrides: Some(pb::TurnOverrides {
            cwd: cwd.into(),
            model: model.map(|(provider, name)| pb::ModelSpec {
                provider: provider.into(),
                name: name.into(),
                config: None,
            }),
        }),
        ..input(c, "hello")
    })
}

fn command(c: &Ctx, argv: &[&str], line: &str, cwd: &str) -> pb::RunSessionCommandRequest {
    pb::RunSessionCommandRequest {
        session_id: c.session_id.clone(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
        command_line: line.into(),
        cwd: cwd.into(),
        timeout_ms: 0,
    }
}

fn stream(r: pb::RunSessionCommandRequest) -> pb::StreamSessionCommandRequest {
    pb::StreamSessionCommandRequest {
        session_id: r.session_id,
        argv: r.argv,
        command_line: r.command_line,
        cwd: r.cwd,
        timeout_ms: r.timeout_ms,
    }
}

pub(super) fn cases() -> Vec<Case> {
    let mut cases = turn_cases();
    cases.extend(execution_id_cases());
    cases.extend(command_cases());
    cases.extend(input_cases());
    cases
}

fn send_input(c: &Ctx, text: &str, mode: pb::InputMode) -> pb::SendInputRequest {
    pb::SendInputRequest {
        session_id: c.session_id.clone(),
        text: text.into(),
        mode: mode as i32,
    }
}

/// SendInput: the session, the text (bounded like a prompt) and the mode.
fn input_cases() -> Vec<Case> {
    vec![
        case!(
            "ExecutionService/SendInput",
            "missing session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                let request = pb::SendInputRequest {
                    session_id: String::new(),
                    ..send_input(&c, "hi", pb::InputMode::Steer)
                };
                done(c.executions().send_input(request).await)
            }
        ),
        case!(
            "ExecutionService/SendInput",
            "unknown session",
            NotFound,
            None,
            |c| {
                let request = pb::SendInputRequest {
                    session_id: UNKNOWN_ID.into(),
                    ..send_input(&c, "hi", pb::InputMode::Queue)
                };
                done(c.executions().send_input(request).await)
            }
        ),
        case!(
            "ExecutionService/SendInput",
            "empty text",
            InvalidArgument,
            Some("text"),
            |c| {
                let request = send_input(&c, " ", pb::InputMode::Steer);
                done(c.executions().send_input(request).await)
            }
        ),
        case!(
            "ExecutionService/SendInput",
            "oversized text",
            InvalidArgument,
            Some("text"),
            |c| {
                let text = format!("{}b", huge());
                let request = send_input(&c, &text, pb::InputMode::Interrupt);
                done(c.executions().send_input(request).await)
            }
        ),
        case!(
            "ExecutionService/SendInput",
            "unspecified mode",
            InvalidArgument,
            Some("mode"),
            |c| {
                let request = send_input(&c, "hi", pb::InputMode::Unspecified);
                done(c.executions().send_input(request).await)
            }
        ),
        case!(
            "ExecutionService/SendInput",
            "unknown mode",
            InvalidArgument,
            Some("mode"),
            |c| {
                let request = pb::SendInputRequest {
                    mode: 42,
                    ..send_input(&c, "hi", pb::InputMode::Steer)
                };
                done(c.executions().send_input(request).await)
            }
        ),
    ]
}

/// Run and Submit take the same input; both get every row.
fn turn_cases() -> Vec<Case> {
    vec![
        case!(
            "ExecutionService/Run",
            "missing input",
            InvalidArgument,
            Some("input"),
            |c| { done(c.executions().run(pb::RunRequest { input: None }).await) }
        ),
        case!(
            "ExecutionService/Run",
            "missing session id",
            InvalidArgument,
            Some("input.session_id"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(pb::TurnInput {
                                session_id: String::new(),
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "malformed session id",
            InvalidArgument,
            Some("input.session_id"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(pb::TurnInput {
                                session_id: "abc".into(),
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "unknown session",
            NotFound,
            None,
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(pb::TurnInput {
                                session_id: UNKNOWN_ID.into(),
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "empty prompt",
            InvalidArgument,
            Some("input.prompt"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(input(&c, "  ")),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "cwd out of the workspace",
            InvalidArgument,
            Some("input.overrides.cwd"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: with_overrides(&c, "../..", None),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "absolute cwd",
            InvalidArgument,
            Some("input.overrides.cwd"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: with_overrides(&c, "/etc", None),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "huge cwd",
            InvalidArgument,
            Some("input.overrides.cwd"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: with_overrides(&c, &huge(), None),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "model without a name",
            InvalidArgument,
            Some("input.overrides.model"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: with_overrides(&c, "", Some(("replay", ""))),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "model of an unknown provider",
            InvalidArgument,
            Some("input.overrides.model"),
            |c| {
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: with_overrides(&c, "", Some(("nonesuch", "x"))),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "too many metadata entries",
            InvalidArgument,
            Some("input.metadata"),
            |c| {
                let metadata = (0..100)
                    .map(|i| (format!("k{i}"), "v".to_owned()))
                    .collect();
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(pb::TurnInput {
                                metadata,
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "huge metadata value",
            InvalidArgument,
            Some("input.metadata[team]"),
            |c| {
                let metadata = [("team".to_owned(), huge())].into();
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(pb::TurnInput {
                                metadata,
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Run",
            "prompt beyond the message size limit",
            OutOfRange,
            None,
            |c| {
                let prompt = "a".repeat(5 << 20);
                done(
                    c.executions()
                        .run(pb::RunRequest {
                            input: Some(input(&c, &prompt)),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Submit",
            "missing input",
            InvalidArgument,
            Some("input"),
            |c| {
                done(
                    c.executions()
                        .submit(pb::SubmitRequest { input: None })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Submit",
            "malformed session id",
            InvalidArgument,
            Some("input.session_id"),
            |c| {
                done(
                    c.executions()
                        .submit(pb::SubmitRequest {
                            input: Some(pb::TurnInput {
                                session_id: huge(),
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Submit",
            "unknown session",
            NotFound,
            None,
            |c| {
                done(
                    c.executions()
                        .submit(pb::SubmitRequest {
                            input: Some(pb::TurnInput {
                                session_id: UNKNOWN_ID.into(),
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Submit",
            "empty prompt",
            InvalidArgument,
            Some("input.prompt"),
            |c| {
                done(
                    c.executions()
                        .submit(pb::SubmitRequest {
                            input: Some(input(&c, "")),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Submit",
            "cwd out of the workspace",
            InvalidArgument,
            Some("input.overrides.cwd"),
            |c| {
                done(
                    c.executions()
                        .submit(pb::SubmitRequest {
                            input: with_overrides(&c, "a/../../b", None),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/Submit",
            "huge metadata key",
            InvalidArgument,
            Some("input.metadata"),
            |c| {
                let metadata = [(huge(), "v".to_owned())].into();
                done(
                    c.executions()
                        .submit(pb::SubmitRequest {
                            input: Some(pb::TurnInput {
                                metadata,
                                ..input(&c, "hi")
                            }),
                        })
                        .await,
                )
            }
        ),
    ]
}

fn execution_id_cases() -> Vec<Case> {
    vec![
        case!(
            "ExecutionService/GetExecutionStatus",
            "missing id",
            InvalidArgument,
            Some("execution_id"),
            |c| {
                done(
                    c.executions()
                        .get_execution_status(pb::GetExecutionStatusRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/GetExecutionStatus",
            "malformed id",
            InvalidArgument,
            Some("execution_id"),
            |c| {
                done(
                    c.executions()
                        .get_execution_status(pb::GetExecutionStatusRequest {
                            execution_id: "exec-1".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/GetExecutionStatus",
            "huge id",
            InvalidArgument,
            Some("execution_id"),
            |c| {
                done(
                    c.executions()
                        .get_execution_status(pb::GetExecutionStatusRequest {
                            execution_id: huge(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/GetExecutionStatus",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.executions()
                        .get_execution_status(pb::GetExecutionStatusRequest {
                            execution_id: UNKNOWN_ID.into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/CancelExecution",
            "missing id",
            InvalidArgument,
            Some("execution_id"),
            |c| {
                done(
                    c.executions()
                        .cancel_execution(pb::CancelExecutionRequest::default())
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/CancelExecution",
            "malformed id",
            InvalidArgument,
            Some("execution_id"),
            |c| {
                done(
                    c.executions()
                        .cancel_execution(pb::CancelExecutionRequest {
                            execution_id: "0190f5c2".into(),
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/CancelExecution",
            "unknown id",
            NotFound,
            None,
            |c| {
                done(
                    c.executions()
                        .cancel_execution(pb::CancelExecutionRequest {
                            execution_id: UNKNOWN_ID.into(),
                        })
                        .await,
                )
            }
        ),
    ]
}

/// RunSessionCommand and StreamSessionCommand take the same fields; both get every row.
fn command_cases() -> Vec<Case> {
    vec![
        case!(
            "ExecutionService/RunSessionCommand",
            "missing session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(pb::RunSessionCommandRequest {
                            session_id: String::new(),
                            ..command(&c, &["true"], "", "")
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "malformed session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(pb::RunSessionCommandRequest {
                            session_id: "x".into(),
                            ..command(&c, &["true"], "", "")
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "unknown session",
            NotFound,
            None,
            |c| {
                done(
                    c.executions()
                        .run_session_command(pb::RunSessionCommandRequest {
                            session_id: UNKNOWN_ID.into(),
                            ..command(&c, &["true"], "", "")
                        })
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "no command",
            InvalidArgument,
            Some("argv"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &[], "", ""))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "argv and command line",
            InvalidArgument,
            Some("command_line"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &["true"], "true", ""))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "empty program",
            InvalidArgument,
            Some("argv"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &[""], "", ""))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "shell operators in the command line",
            InvalidArgument,
            Some("command_line"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &[], "true; rm -rf /", ""))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "cwd out of the workspace",
            InvalidArgument,
            Some("cwd"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &["true"], "", "../../.."))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "huge cwd",
            InvalidArgument,
            Some("cwd"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &["true"], "", &huge()))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/RunSessionCommand",
            "huge command line",
            InvalidArgument,
            Some("command_line"),
            |c| {
                done(
                    c.executions()
                        .run_session_command(command(&c, &[], &huge(), ""))
                        .await,
                )
            }
        ),
        case!(
            "ExecutionService/StreamSessionCommand",
            "missing session id",
            InvalidArgument,
            Some("session_id"),
            |c| {
                first(
                    c.executions()
                        .stream_session_command(stream(pb::RunSessionCommandRequest {
                            session_id: String::new(),
                            ..command(&c, &["true"], "", "")
                        }))
                        .await,
                )
                .await
            }
        ),
        case!(
            "ExecutionService/StreamSessionCommand",
            "unknown session",
            NotFound,
            None,
            |c| {
                first(
                    c.executions()
                        .stream_session_command(stream(pb::RunSessionCommandRequest {
                            session_id: UNKNOWN_ID.into(),
                            ..command(&c, &["true"], "", "")
                        }))
                        .await,
                )
                .await
            }
        ),
        case!(
            "ExecutionService/StreamSessionCommand",
            "no command",
            InvalidArgument,
            Some("argv"),
            |c| {
                first(
                    c.executions()
                        .stream_session_command(stream(command(&c, &[], "  ", "")))
                        .await,
                )
                .await
            }
        ),
        case!(
            "ExecutionService/StreamSessionCommand",
            "argv and command line",
            InvalidArgument,
            Some("command_line"),
            |c| {
                first(
                    c.executions()
                        .stream_session_command(stream(command(&c, &["ls"], "ls", "")))
                        .await,
                )
                .await
            }
        ),
        case!(
            "ExecutionService/StreamSessionCommand",
            "cwd out of the workspace",
            InvalidArgument,
            Some("cwd"),
            |c| {
                first(
                    c.executions()
                        .stream_session_command(stream(command(&c, &["true"], "", "/")))
                        .await,
                )
                .await
            }
        ),
        case!(
            "ExecutionService/StreamSessionCommand",
            "huge argv",
            InvalidArgument,
            Some("argv"),
            |c| {
                let word = huge();
                first(
                    c.executions()
                        .stream_session_command(stream(command(&c, &["echo", &word], "", "")))
                        .await,
                )
                .await
            }
        ),
    ]
}
