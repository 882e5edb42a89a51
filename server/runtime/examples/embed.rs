//! Embeds the Odyssey runtime in a Rust program, without gRPC: install the demo bundle,
//! open a session, run a turn and print its events.
//!
//! Run it with `cargo run -p odyssey-runtime --example embed`.

use std::path::Path;
use std::time::Duration;

use odyssey_runtime::events::EventPayload;
use odyssey_runtime::{
    ExecutionRequest, InstallOptions, OdysseyRuntime, RuntimeConfig, RuntimeError, SessionSpec,
};

#[tokio::main]
async fn main() -> Result<(), RuntimeError> {
    let home = tempfile::tempdir().map_err(|e| RuntimeError::storage("temp home", e))?;
    let runtime = OdysseyRuntime::start(RuntimeConfig::with_home(home.path())).await?;

    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/demo");
    let bundle = runtime
        .build_and_install(&demo, InstallOptions::default())
        .await?;
    println!("installed {} ({})", bundle.id, bundle.id.digest);

    let session = runtime
        .create_session(SessionSpec::new(bundle.id.to_string()))
        .await?;
    let session_id = session.record.id;
    let mut events = runtime.subscribe_session(session_id, 0).await?;

    let status = runtime
        .run(ExecutionRequest {
            session_id,
            prompt: "Give me a tour of this turn.".into(),
            ..Default::default()
        })
        .await?;

    // The turn is over; its events are all in the log. Print them.
    while let Some(batch) = events.next_batch().await? {
        for event in &batch {
            match &event.payload {
                EventPayload::AgentMessageDelta { delta } => print!("{delta}"),
                EventPayload::TurnCompleted(done) => println!("\n[{:?}]", done.outcome),
                other => println!("#{} {}", event.sequence, kind(other)),
            }
        }
        if events.cursor() >= status.last_sequence {
            break;
        }
    }
    runtime.shutdown(Duration::from_secs(5)).await;
    Ok(())
}

fn kind(payload: &EventPayload) -> &'static str {
    match payload {
        EventPayload::TurnStarted(_) => "turn started",
        EventPayload::ReasoningDelta { .. } => "reasoning",
        EventPayload::TokenUsageReported { .. } => "token usage",
        _ => "event",
    }
}
