//! Typed execution calls: submitting turns, following one to its end, status and cancel,
//! and input sent while a turn runs.

use odyssey_api::v1 as pb;

use crate::client::OdysseyClient;
use crate::error::ClientError;
use crate::turn::TurnStream;

impl OdysseyClient {
    /// Enqueues a turn and returns its execution id at once. The id is also the `turn_id`
    /// of every event the turn produces.
    pub async fn submit(
        &self,
        session_id: &str,
        prompt: &str,
        overrides: pb::TurnOverrides,
    ) -> Result<pb::SubmitResponse, ClientError> {
        let request = pb::SubmitRequest {
            input: Some(turn_input(session_id, prompt, overrides)),
        };
        let response =
            crate::retry::submit(|| async { Ok(self.executions().submit(request.clone()).await?) })
                .await?;
        Ok(response.into_inner())
    }

    /// Runs a turn and waits for its end (`Run`): its final status, with the answer. A
    /// full queue is waited out as the server asks (`RetryInfo`); give the client a
    /// deadline ([`OdysseyClient::with_deadline`]) to bound the wait for the turn.
    pub async fn run(
        &self,
        session_id: &str,
        prompt: &str,
        overrides: pb::TurnOverrides,
    ) -> Result<pb::ExecutionStatus, ClientError> {
        let request = pb::RunRequest {
            input: Some(turn_input(session_id, prompt, overrides)),
        };
        let response =
            crate::retry::submit(|| async { Ok(self.executions().run(request.clone()).await?) })
                .await?;
        response
            .into_inner()
            .status
            .ok_or_else(|| ClientError::Protocol("Run answered without a status".into()))
    }

    /// Runs a turn and streams its events as they happen, ending with its `turn_completed`.
    ///
    /// The order matters and is why this is one call: it reads the session's current last
    /// sequence, subscribes after it, and only then submits. Every event of the turn is
    /// therefore after the subscription point (none missed at the seam), and events of
    /// other turns that share the log are filtered out by `turn_id`.
    pub async fn run_turn(
        &self,
        session_id: &str,
        prompt: &str,
        overrides: pb::TurnOverrides,
    ) -> Result<TurnStream, ClientError> {
        let session = self.get_session(session_id).await?;
        let events = self.subscribe(session_id, session.last_sequence).await?;
        let submitted = self.submit(session_id, prompt, overrides).await?;
        Ok(TurnStream::new(events, submitted.execution_id))
    }

    pub async fn execution_status(
        &self,
        execution_id: &str,
    ) -> Result<pb::ExecutionStatus, ClientError> {
        let request = pb::GetExecutionStatusRequest {
            execution_id: execution_id.to_owned(),
        };
        let response = crate::retry::read(|| async {
            Ok(self
                .executions()
                .get_execution_status(request.clone())
                .await?)
        })
        .await?
        .into_inner();
        response.status.ok_or_else(|| {
            ClientError::Protocol("GetExecutionStatus answered without a status".into())
        })
    }

    /// Cancels a queued or running turn; the turn still ends with a `turn_completed` event
    /// (outcome CANCELLED).
    pub async fn cancel_execution(
        &self,
        execution_id: &str,
    ) -> Result<pb::ExecutionStatus, ClientError> {
        let request = pb::CancelExecutionRequest {
            execution_id: execution_id.to_owned(),
        };
        let response = self
            .executions()
            .cancel_execution(request)
            .await?
            .into_inner();
        response.status.ok_or_else(|| {
            ClientError::Protocol("CancelExecution answered without a status".into())
        })
    }
}

impl OdysseyClient {
    /// Gives a session input while a turn may be running (`SendInput`): `Steer` adds the
    /// text to the running turn before its next model call, `Queue` submits a turn after
    /// it, `Interrupt` stops it (cancelled, reason `interrupted_by_input`) and runs a turn
    /// with the text next. With no turn running, every mode starts a turn. The answer says
    /// which happened and names the executions to follow.
    pub async fn send_input(
        &self,
        session_id: &str,
        text: &str,
        mode: pb::InputMode,
    ) -> Result<pb::SendInputResponse, ClientError> {
        let request = pb::SendInputRequest {
            session_id: session_id.to_owned(),
            text: text.to_owned(),
            mode: mode.into(),
        };
        Ok(self.executions().send_input(request).await?.into_inner())
    }
}

fn turn_input(session_id: &str, prompt: &str, overrides: pb::TurnOverrides) -> pb::TurnInput {
    pb::TurnInput {
        session_id: session_id.to_owned(),
        prompt: prompt.to_owned(),
        overrides: Some(overrides),
        metadata: Default::default(),
    }
}
