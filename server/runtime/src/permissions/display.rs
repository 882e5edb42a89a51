//! The display form of a call waiting for approval: what a person is shown before they
//! allow it, computed once here so the CLI, the SDKs, the HTTP gateway and a web console
//! all show the same thing.
//!
//! The model writes the arguments, and a terminal acts on some characters instead of
//! drawing them: `rm -rf ~/important \r\x1b[2Kls -la` is drawn as `ls -la`. In the display
//! form every such character is a visible escape (`\r`, `\x1b`, `\u202e`; the rules are
//! `odyssey-visible`'s), nothing is cut, and `control_characters` says whether there were
//! any, so a client can say so beside it.
//!
//! Layout: one entry per line. The call's subject comes first (the Bash command, the path
//! a file tool works on, ...), then every other argument as `name: value` in name order.
//! An entry that spans lines (a multi-line command) continues on lines indented by two
//! spaces, so a line that starts flush left always starts an entry, and a command cannot
//! pass one of its own lines off as another argument.

use serde_json::Value;

/// How a call waiting for approval is shown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallDisplay {
    /// The whole call with control characters as visible escapes.
    pub text: String,
    /// Whether the subject or any argument (names included) holds control characters
    /// other than newline and tab: the text shows them as escapes, and a person should
    /// be told.
    pub control_characters: bool,
}

/// The display form of a call whose permission subject is `subject` (see
/// `Tool::permission_subject`) and whose recorded arguments are `arguments`. A string
/// argument equal to the subject is not repeated.
pub fn display_call(subject: Option<&str>, arguments: &Value) -> CallDisplay {
    let mut entries = Vec::new();
    let mut control_characters = false;
    if let Some(subject) = subject {
        control_characters |= odyssey_visible::has_controls(subject);
        entries.push(odyssey_visible::escape(subject).into_owned());
    }
    match arguments {
        Value::Object(fields) => {
            for (name, value) in fields {
                if subject.is_some() && value.as_str() == subject {
                    continue;
                }
                control_characters |= odyssey_visible::has_controls(name) || has_controls(value);
                entries.push(format!(
                    "{}: {}",
                    odyssey_visible::escape_line(name),
                    shown_value(value)
                ));
            }
        }
        // Arguments that were not a JSON object are recorded as given.
        other => {
            control_characters |= has_controls(other);
            entries.push(shown_value(other));
        }
    }
    let text = entries
        .iter()
        .map(|entry| entry.replace('\n', "\n  "))
        .collect::<Vec<_>>()
        .join("\n");
    CallDisplay {
        text,
        control_characters,
    }
}

/// A string as its text, anything else as compact JSON; on one line either way.
fn shown_value(value: &Value) -> String {
    match value {
        Value::String(text) => odyssey_visible::escape_line(text).into_owned(),
        other => odyssey_visible::escape_line(&other.to_string()).into_owned(),
    }
}

/// Whether any string in `value`, or any name of a field in it, holds control characters.
fn has_controls(value: &Value) -> bool {
    match value {
        Value::String(text) => odyssey_visible::has_controls(text),
        Value::Array(items) => items.iter().any(has_controls),
        Value::Object(fields) => fields
            .iter()
            .any(|(name, v)| odyssey_visible::has_controls(name) || has_controls(v)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}
