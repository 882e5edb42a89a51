//! Running turns through `ExecutionService.Run` and checking that they completed.

use std::time::{Duration, Instant};

use odyssey_client::{OdysseyClient, proto as pb};

use crate::error::{BenchError, ClientContext, Result};

/// One completed turn, as the client saw it.
pub struct TurnRun {
    pub status: pb::ExecutionStatus,
    /// From sending Run to its answer.
    pub wall: Duration,
}

/// Runs one turn with `Run` and fails unless it completed.
pub async fn run(client: &OdysseyClient, session_id: &str, prompt: &str) -> Result<TurnRun> {
    let request = pb::RunRequest {
        input: Some(pb::TurnInput {
            session_id: session_id.to_owned(),
            prompt: prompt.to_owned(),
            overrides: None,
            metadata: Default::default(),
        }),
    };
    let started = Instant::now();
    let response = client.executions().run(request).await.context("Run")?;
    let wall = started.elapsed();
    let status = response
        .into_inner()
        .status
        .ok_or_else(|| BenchError::check("Run answered without a status"))?;
    completed(&status)?;
    Ok(TurnRun { status, wall })
}

/// Fails unless the execution completed.
pub fn completed(status: &pb::ExecutionStatus) -> Result<()> {
    if status.state == pb::ExecutionState::Completed as i32 {
        return Ok(());
    }
    Err(BenchError::check(format!(
        "turn {} ended {:?}: {}",
        status.execution_id,
        pb::ExecutionState::try_from(status.state).unwrap_or(pb::ExecutionState::Unspecified),
        status.error
    )))
}

/// A turn's wall time less the model server's time on its calls: what the runtime (and
/// the loopback network) added.
pub fn overhead(
    wall: Duration,
    model_calls: &[odyssey_testing::openai_wire::CallTiming],
) -> Duration {
    let model: Duration = model_calls.iter().map(|c| c.duration()).sum();
    wall.saturating_sub(model)
}
