//! `odyssey.v1.ExecutionService`.

use std::pin::Pin;

use std::time::Duration;

use futures::{Stream, StreamExt};
use odyssey_api::v1 as pb;
use odyssey_api::v1::execution_service_server::ExecutionService;
use tonic::{Request, Response, Status};

use super::convert;
use super::status::{invalid, parse_uuid, to_status, to_status_at};
use odyssey_runtime::{
    CommandEvent, CommandLine, ExecutionRequest, OdysseyRuntime, SessionCommand, SessionInput,
};

pub struct Executions {
    runtime: OdysseyRuntime,
}

impl Executions {
    pub fn new(runtime: OdysseyRuntime) -> Self {
        Self { runtime }
    }
}

/// Where a turn request's values sit in `RunRequest` and `SubmitRequest`.
const TURN_FIELDS: &[(&str, &str)] = &[
    ("prompt", "input.prompt"),
    ("metadata", "input.metadata"),
    ("cwd", "input.overrides.cwd"),
    ("model", "input.overrides.model"),
];

fn execution_request(input: Option<pb::TurnInput>) -> Result<ExecutionRequest, Status> {
    let input = input.ok_or_else(|| invalid("input", "is required"))?;
    let session_id = parse_uuid("input.session_id", &input.session_id)?;
    let overrides = input.overrides.unwrap_or_default();
    Ok(ExecutionRequest {
        session_id,
        prompt: input.prompt,
        cwd: Some(overrides.cwd).filter(|c| !c.is_empty()),
        model: convert::model_from(overrides.model.as_ref()),
        metadata: input.metadata.into_iter().collect(),
    })
}

fn message(item: pb::stream_session_command_response::Item) -> pb::StreamSessionCommandResponse {
    pb::StreamSessionCommandResponse { item: Some(item) }
}

/// Exactly one of `argv` and `command_line`.
fn session_command(
    session_id: &str,
    argv: Vec<String>,
    command_line: String,
    cwd: String,
    timeout_ms: u64,
) -> Result<SessionCommand, Status> {
    let session_id = parse_uuid("session_id", session_id)?;
    let command = match (argv.is_empty(), command_line.trim().is_empty()) {
        (false, true) => CommandLine::Argv(argv),
        (true, false) => CommandLine::Line(command_line),
        (true, true) => return Err(invalid("argv", "set argv or command_line")),
        (false, false) => {
            return Err(invalid(
                "command_line",
                "set argv or command_line, not both",
            ));
        }
    };
    Ok(SessionCommand {
        session_id,
        command,
        cwd: Some(cwd).filter(|c| !c.is_empty()),
        timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
    })
}

type CommandStream =
    Pin<Box<dyn Stream<Item = Result<pb::StreamSessionCommandResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ExecutionService for Executions {
    async fn run(
        &self,
        request: Request<pb::RunRequest>,
    ) -> Result<Response<pb::RunResponse>, Status> {
        let request = execution_request(request.into_inner().input)?;
        let status = self
            .runtime
            .run(request)
            .await
            .map_err(|e| to_status_at(e, TURN_FIELDS))?;
        Ok(Response::new(pb::RunResponse {
            status: Some(convert::execution_status(&status)),
        }))
    }

    async fn submit(
        &self,
        request: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        let request = execution_request(request.into_inner().input)?;
        let handle = self
            .runtime
            .submit(request)
            .await
            .map_err(|e| to_status_at(e, TURN_FIELDS))?;
        Ok(Response::new(pb::SubmitResponse {
            execution_id: handle.execution_id.to_string(),
            session_id: handle.session_id.to_string(),
        }))
    }

    async fn get_execution_status(
        &self,
        request: Request<pb::GetExecutionStatusRequest>,
    ) -> Result<Response<pb::GetExecutionStatusResponse>, Status> {
        let id = parse_uuid("execution_id", &request.into_inner().execution_id)?;
        let status = self
            .runtime
            .find_execution_status(id)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::GetExecutionStatusResponse {
            status: Some(convert::execution_status(&status)),
        }))
    }

    async fn cancel_execution(
        &self,
        request: Request<pb::CancelExecutionRequest>,
    ) -> Result<Response<pb::CancelExecutionResponse>, Status> {
        let id = parse_uuid("execution_id", &request.into_inner().execution_id)?;
        let status = self.runtime.cancel(id).await.map_err(to_status)?;
        Ok(Response::new(pb::CancelExecutionResponse {
            status: Some(convert::execution_status(&status)),
        }))
    }

    async fn run_session_command(
        &self,
        request: Request<pb::RunSessionCommandRequest>,
    ) -> Result<Response<pb::RunSessionCommandResponse>, Status> {
        let r = request.into_inner();
        let command = session_command(&r.session_id, r.argv, r.command_line, r.cwd, r.timeout_ms)?;
        // The command stops if the caller goes away: tonic drops this future, and with it
        // the command's events.
        let result = self
            .runtime
            .session_command(command)
            .finish()
            .await
            .map_err(to_status)?;
        let outcome = result.outcome;
        Ok(Response::new(pb::RunSessionCommandResponse {
            exec_id: result.exec_id,
            exit_code: outcome.exit_code,
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            output_truncated: outcome.truncated,
            timed_out: outcome.timed_out,
            duration_ms: outcome.duration.as_millis() as u64,
        }))
    }

    type StreamSessionCommandStream = CommandStream;

    async fn stream_session_command(
        &self,
        request: Request<pb::StreamSessionCommandRequest>,
    ) -> Result<Response<Self::StreamSessionCommandStream>, Status> {
        use pb::stream_session_command_response::Item;
        let r = request.into_inner();
        let command = session_command(&r.session_id, r.argv, r.command_line, r.cwd, r.timeout_ms)?;
        // The command stops when the caller goes away: tonic drops the stream then.
        let events = self.runtime.session_command(command).map(|event| {
            let item = match event.map_err(to_status)? {
                CommandEvent::Began { exec_id, argv, cwd } => Item::Begin(pb::ExecCommandBegin {
                    exec_id,
                    argv,
                    cwd,
                    call_id: String::new(),
                }),
                CommandEvent::Output {
                    exec_id,
                    stream,
                    text,
                } => Item::Output(pb::ExecCommandOutputDelta {
                    exec_id,
                    stream: convert::output_stream(stream),
                    text,
                }),
                CommandEvent::Ended(result) => Item::End(pb::ExecCommandEnd {
                    exec_id: result.exec_id,
                    exit_code: result.outcome.exit_code,
                    duration_ms: result.outcome.duration.as_millis() as u64,
                    timed_out: result.outcome.timed_out,
                    output_truncated: result.outcome.truncated,
                }),
            };
            Ok(message(item))
        });
        Ok(Response::new(Box::pin(events)))
    }

    async fn send_input(
        &self,
        request: Request<pb::SendInputRequest>,
    ) -> Result<Response<pb::SendInputResponse>, Status> {
        let r = request.into_inner();
        let session_id = parse_uuid("session_id", &r.session_id)?;
        let mode = convert::input_mode_from(r.mode).map_err(|message| invalid("mode", message))?;
        let receipt = self
            .runtime
            .send_input(SessionInput {
                session_id,
                text: r.text,
                mode,
            })
            .await
            .map_err(to_status)?;
        Ok(Response::new(convert::input_receipt(&receipt)))
    }
}
