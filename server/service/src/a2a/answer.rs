//! Answering an input-required task: a message on the task whose one data part carries a
//! decision, `{"decision": "allow_once" | "allow_always" | "deny", "reason": "..."}`,
//! resolves the approval the turn waits for. Cards declare the part's schema as an
//! extension ([`extension`]).

use odyssey_api::a2a::v1 as pb;
use odyssey_runtime::events::ApprovalDecision;
use serde::Deserialize;
use serde_json::json;
use tonic::Status;

use crate::grpc::convert;
use crate::grpc::invalid;

/// The extension under which cards declare the decision's schema.
pub const DECISION_EXTENSION: &str = "urn:odyssey:a2a:approval-decision:v1";

/// A person's answer to the approval a task waits for.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    pub decision: ApprovalDecision,
    #[serde(default)]
    pub reason: String,
}

/// What the decision part must look like, as JSON Schema.
fn schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {"enum": ["allow_once", "allow_always", "deny"]},
            "reason": {"type": "string", "maxLength": 4096},
        },
        "required": ["decision"],
        "additionalProperties": false,
    })
}

/// The card's declaration of the decision part.
pub fn extension() -> pb::AgentExtension {
    let params = json!({"decisionSchema": schema()});
    pb::AgentExtension {
        uri: DECISION_EXTENSION.into(),
        description: "A task in TASK_STATE_INPUT_REQUIRED waits for a person to approve a tool \
                      call. Answer it with a message on the task (its taskId and contextId) \
                      whose one part is a data part matching decisionSchema; allow_always also \
                      allows the same call for the rest of the context; a deny's reason is \
                      shown to the agent."
            .into(),
        required: false,
        params: match convert::json_to_value(&params).kind {
            Some(prost_types::value::Kind::StructValue(s)) => Some(s),
            _ => None,
        },
    }
}

const EXPECTED: &str =
    r#"one data part {"decision": "allow_once" | "allow_always" | "deny", "reason": "..."}"#;

/// The decision a message answering task `task_id` carries.
pub fn decision(message: &pb::Message, task_id: &str) -> Result<Decision, Status> {
    let [part] = message.parts.as_slice() else {
        return Err(invalid(
            "message.parts",
            format!(
                "task {task_id} waits for an approval; answer it with {EXPECTED}, and nothing \
                 else ({} parts given)",
                message.parts.len()
            ),
        ));
    };
    let Some(pb::part::Content::Data(data)) = &part.content else {
        return Err(invalid(
            "message.parts[0]",
            format!("task {task_id} waits for an approval; answer it with {EXPECTED}"),
        ));
    };
    serde_json::from_value(convert::value_to_json(data)).map_err(|e| {
        invalid(
            "message.parts[0].data",
            format!("is not a decision ({e}); expected {EXPECTED}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(parts: Vec<pb::Part>) -> pb::Message {
        pb::Message {
            message_id: "m".into(),
            task_id: "t".into(),
            parts,
            ..Default::default()
        }
    }

    fn data(value: serde_json::Value) -> pb::Part {
        pb::Part {
            content: Some(pb::part::Content::Data(convert::json_to_value(&value))),
            ..Default::default()
        }
    }

    #[test]
    fn a_data_part_with_a_decision_is_read_with_its_reason() {
        let d = decision(
            &answer(vec![data(json!({"decision": "deny", "reason": "not now"}))]),
            "t",
        )
        .unwrap();
        assert_eq!(
            d,
            Decision {
                decision: ApprovalDecision::Deny,
                reason: "not now".into()
            }
        );
        let d = decision(
            &answer(vec![data(json!({"decision": "allow_always"}))]),
            "t",
        )
        .unwrap();
        assert_eq!(d.decision, ApprovalDecision::AllowAlways);
    }

    #[test]
    fn anything_but_one_well_formed_decision_part_is_refused_naming_the_field() {
        let text = pb::Part {
            content: Some(pb::part::Content::Text("yes".into())),
            ..Default::default()
        };
        for (parts, field) in [
            (vec![], "message.parts"),
            (vec![text.clone()], "message.parts[0]"),
            (
                vec![data(json!({"decision": "allow_once"})), text],
                "message.parts",
            ),
            (
                vec![data(json!({"decision": "maybe"}))],
                "message.parts[0].data",
            ),
            (
                vec![data(json!({"decision": "deny", "extra": 1}))],
                "message.parts[0].data",
            ),
        ] {
            let status = decision(&answer(parts), "t").unwrap_err();
            assert_eq!(status.code(), tonic::Code::InvalidArgument);
            let details = tonic_types::StatusExt::get_error_details(&status);
            let violation = &details.bad_request().unwrap().field_violations[0];
            assert_eq!(violation.field, field, "{status:?}");
        }
    }

    #[test]
    fn the_declared_schema_is_a_struct_in_the_extension() {
        let e = extension();
        assert_eq!(e.uri, DECISION_EXTENSION);
        let params = convert::struct_to_json(&e.params.unwrap());
        assert_eq!(params["decisionSchema"]["required"], json!(["decision"]));
    }
}
