//! `odyssey.v1.ExecutionService`.

use std::pin::Pin;

use futures::Stream;
use odyssey_api::v1 as pb;
use odyssey_api::v1::execution_service_server::ExecutionService;
use tonic::{Request, Response, Status};

use super::convert;
use super::status::{invalid, parse_uuid, to_status, unimplemented};
use crate::runtime::{ExecutionRequest, OdysseyRuntime};

pub struct Executions {
    runtime: OdysseyRuntime,
}

impl Executions {
    pub fn new(runtime: OdysseyRuntime) -> Self {
        Self { runtime }
    }
}

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

type CommandStream =
    Pin<Box<dyn Stream<Item = Result<pb::StreamSessionCommandResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ExecutionService for Executions {
    async fn run(
        &self,
        request: Request<pb::RunRequest>,
    ) -> Result<Response<pb::RunResponse>, Status> {
        let request = execution_request(request.into_inner().input)?;
        let status = self.runtime.run(request).await.map_err(to_status)?;
        Ok(Response::new(pb::RunResponse {
            status: Some(convert::execution_status(&status)),
        }))
    }

    async fn submit(
        &self,
        request: Request<pb::SubmitRequest>,
    ) -> Result<Response<pb::SubmitResponse>, Status> {
        let request = execution_request(request.into_inner().input)?;
        let handle = self.runtime.submit(request).await.map_err(to_status)?;
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
        let status = self.runtime.execution_status(id).map_err(to_status)?;
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
        _: Request<pb::RunSessionCommandRequest>,
    ) -> Result<Response<pb::RunSessionCommandResponse>, Status> {
        Err(unimplemented(
            "RunSessionCommand (operator commands in the session sandbox) is not available on this server yet",
        ))
    }

    type StreamSessionCommandStream = CommandStream;

    async fn stream_session_command(
        &self,
        _: Request<pb::StreamSessionCommandRequest>,
    ) -> Result<Response<Self::StreamSessionCommandStream>, Status> {
        Err(unimplemented(
            "StreamSessionCommand (operator commands in the session sandbox) is not available on this server yet",
        ))
    }
}
