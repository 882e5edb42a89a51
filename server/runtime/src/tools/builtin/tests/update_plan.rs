//! `UpdatePlan`: the plan lands in the session's event log.

use serde_json::json;

use super::fixture::Fixture;
use crate::events::{EventPayload, PlanStep, PlanStepStatus};

#[tokio::test]
async fn emits_the_plan_as_an_event() {
    let fx = Fixture::new();
    let text = fx
        .ok(
            "UpdatePlan",
            json!({"steps": [
                {"text": "Read the code", "status": "completed"},
                {"text": " Fix the bug ", "status": "in_progress"},
                {"text": "Run the tests", "status": "pending"},
            ]}),
        )
        .await;
    assert_eq!(text, "plan updated");

    let mut subscription = fx.session.subscribe(0);
    let batch = subscription
        .next_batch()
        .await
        .expect("read events")
        .expect("session alive");
    let event = batch.last().expect("one event");
    assert_eq!(event.turn_id, Some(fx.ctx.turn_id));
    let step = |text: &str, status| PlanStep {
        text: text.into(),
        status,
    };
    assert_eq!(
        event.payload,
        EventPayload::PlanUpdated {
            steps: vec![
                step("Read the code", PlanStepStatus::Completed),
                step("Fix the bug", PlanStepStatus::InProgress),
                step("Run the tests", PlanStepStatus::Pending),
            ]
        }
    );
}

#[tokio::test]
async fn bad_plans_name_the_step_and_emit_nothing() {
    let fx = Fixture::new();
    let message = fx
        .err(
            "UpdatePlan",
            json!({"steps": [{"text": "a", "status": "done"}]}),
        )
        .await;
    assert!(message.contains("`steps[0].status`"), "{message}");
    let message = fx
        .err(
            "UpdatePlan",
            json!({"steps": [
                {"text": "a", "status": "in_progress"},
                {"text": "b", "status": "in_progress"},
            ]}),
        )
        .await;
    assert!(message.contains("`steps[1].status`"), "{message}");
    let message = fx
        .err(
            "UpdatePlan",
            json!({"steps": [{"text": "  ", "status": "pending"}]}),
        )
        .await;
    assert!(message.contains("`steps[0].text`"), "{message}");
    assert_eq!(fx.session.stats().last_sequence, 0, "nothing was recorded");
}
