//! `UpdatePlan`: the model publishes its plan, which clients show as a checklist. The
//! plan is an event, not state the runtime acts on.

use futures::future::{self, BoxFuture, FutureExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::{invalid, parse};
use super::spec_of;
use crate::events::{EventPayload, PlanStep, PlanStepStatus};
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolOutput};

pub(crate) const NAME: &str = "UpdatePlan";

const MAX_STEPS: usize = 100;
const MAX_STEP_CHARS: usize = 1000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdatePlanArgs {
    /// The whole plan, in order; it replaces the previous one.
    #[schemars(length(max = 100))]
    steps: Vec<StepArg>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StepArg {
    /// What the step does, in a short sentence.
    text: String,
    status: StepStatus,
}

/// Where a step stands. At most one step is `in_progress`.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

impl From<StepStatus> for PlanStepStatus {
    fn from(status: StepStatus) -> Self {
        match status {
            StepStatus::Pending => Self::Pending,
            StepStatus::InProgress => Self::InProgress,
            StepStatus::Completed => Self::Completed,
        }
    }
}

/// Publishes the model's plan as a `PlanUpdated` event.
pub struct UpdatePlanTool;

impl Tool for UpdatePlanTool {
    fn spec(&self) -> ToolSpec {
        spec_of::<UpdatePlanArgs>(
            NAME,
            "Publish your plan for the task as an ordered list of steps, each `pending`, \
             `in_progress` or `completed`; the user sees it as a checklist. Send the whole \
             plan each time (it replaces the previous one) and update it as steps finish. \
             At most one step may be in_progress; at most 100 steps of up to 1000 \
             characters.",
        )
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call(&self, ctx: ToolContext, arguments: Value) -> BoxFuture<'static, ToolOutput> {
        // Appending an event is a quick in-memory append (synced later), no blocking thread.
        let output = match parse::<UpdatePlanArgs>(NAME, arguments).and_then(validate) {
            Ok(steps) => match ctx.events.emit(EventPayload::PlanUpdated { steps }) {
                Ok(()) => ToolOutput::ok("plan updated"),
                Err(e) => {
                    tracing::warn!(session = %ctx.session_id, error = %e, "recording a plan failed");
                    ToolOutput::error(
                        "the plan could not be recorded (a server storage error); go on without it",
                    )
                }
            },
            Err(output) => output,
        };
        future::ready(output).boxed()
    }
}

fn validate(args: UpdatePlanArgs) -> Result<Vec<PlanStep>, ToolOutput> {
    if args.steps.len() > MAX_STEPS {
        return Err(invalid(
            NAME,
            "steps",
            format!("{} steps; at most {MAX_STEPS}", args.steps.len()),
        ));
    }
    let mut in_progress = None;
    let mut steps = Vec::with_capacity(args.steps.len());
    for (index, step) in args.steps.into_iter().enumerate() {
        let text = step.text.trim();
        if text.is_empty() {
            return Err(invalid(
                NAME,
                &format!("steps[{index}].text"),
                "must not be empty",
            ));
        }
        if text.chars().count() > MAX_STEP_CHARS {
            return Err(invalid(
                NAME,
                &format!("steps[{index}].text"),
                format!("longer than {MAX_STEP_CHARS} characters"),
            ));
        }
        if matches!(step.status, StepStatus::InProgress) {
            if let Some(first) = in_progress {
                return Err(invalid(
                    NAME,
                    &format!("steps[{index}].status"),
                    format!("steps[{first}] is already in_progress; at most one step may be"),
                ));
            }
            in_progress = Some(index);
        }
        steps.push(PlanStep {
            text: text.to_owned(),
            status: step.status.into(),
        });
    }
    Ok(steps)
}
