//! What a call waiting for approval will run, as a person is shown it: in the approval
//! prompt, `odyssey approvals`, `approve`/`deny` confirmations and event lines.
//!
//! The text is the server's display form (`PermissionRequested.display`): the subject and
//! every argument, with control characters as visible escapes, so a command that would
//! erase or overwrite itself on a terminal is shown as it is. A call holding control
//! characters says so. Nothing is cut silently: a long call shows how much is left out
//! and how to see it all.

use odyssey_api::v1 as pb;

use super::json::struct_to_json;

/// Shown beside a call holding control characters.
pub(crate) const CONTROL_NOTE: &str = "contains control characters, shown as escapes \
     (\\r, \\x1b, \\u202e): a terminal would not draw what runs";
/// The command that shows every pending call whole.
pub(crate) const SEE_ALL: &str = "odyssey approvals --full";
/// At most this many lines of a call in the prompt and confirmations.
const MAX_LINES: usize = 40;
/// At most this many characters of a call in the prompt and confirmations.
const MAX_CHARS: usize = 4000;

/// One call, ready to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CallView {
    /// Escaped: newlines and tabs are the only characters left that a terminal acts on.
    text: String,
    control_characters: bool,
}

impl CallView {
    pub fn of_request(request: &pb::PermissionRequested) -> Self {
        Self::new(
            &request.display,
            request.control_characters,
            &request.summary,
            &request.tool,
            request.arguments.as_ref(),
        )
    }

    pub fn of_approval(approval: &pb::Approval) -> Self {
        Self::new(
            &approval.display,
            approval.control_characters,
            &approval.summary,
            &approval.tool,
            approval.arguments.as_ref(),
        )
    }

    /// The server's display form, escaped again (escaping is idempotent, and the server
    /// may be another program); from a server without one, the summary or the arguments.
    /// Whether there are control characters is also read from the raw text, whatever the
    /// server says.
    fn new(
        display: &str,
        control_characters: bool,
        summary: &str,
        tool: &str,
        arguments: Option<&prost_types::Struct>,
    ) -> Self {
        let raw_controls =
            odyssey_visible::has_controls(summary) || arguments.is_some_and(struct_has_controls);
        let text = if !display.is_empty() {
            odyssey_visible::escape(display).into_owned()
        } else if !summary.trim().is_empty() {
            odyssey_visible::escape(summary).into_owned()
        } else {
            let arguments = arguments
                .map(|a| struct_to_json(a).to_string())
                .unwrap_or_default();
            odyssey_visible::escape(&format!("{tool} {arguments}")).into_owned()
        };
        Self {
            text,
            control_characters: control_characters
                || raw_controls
                || odyssey_visible::has_controls(display),
        }
    }

    pub fn control_characters(&self) -> bool {
        self.control_characters
    }

    /// The whole call, each line after `indent`.
    pub fn full(&self, indent: &str) -> String {
        indented(&self.text, indent)
    }

    /// The call for the prompt and confirmations: at most [`MAX_LINES`] lines and
    /// [`MAX_CHARS`] characters after `indent`, then what was left out and how to see it
    /// (`see_all`); then the control-character note when it applies.
    pub fn block(&self, indent: &str, see_all: &str) -> String {
        let total_lines = self.text.lines().count().max(1);
        let total_chars = self.text.chars().count();
        let mut shown: String = self
            .text
            .lines()
            .take(MAX_LINES)
            .collect::<Vec<_>>()
            .join("\n");
        if shown.chars().count() > MAX_CHARS {
            shown = shown.chars().take(MAX_CHARS).collect();
        }
        let mut block = indented(&shown, indent);
        let shown_lines = shown.lines().count().max(1);
        let shown_chars = shown.chars().count();
        if shown_chars < total_chars {
            block.push_str(&format!(
                "\n{indent}… cut here: {shown_lines} of {total_lines} lines, {shown_chars} of \
                 {total_chars} characters shown; {see_all}"
            ));
        }
        if self.control_characters {
            block.push_str(&format!("\n{indent}! {CONTROL_NOTE}"));
        }
        block
    }

    /// The call on one line of at most about `width` characters, newlines shown as `\n`:
    /// for tables and event lines. A cut says how long the call is; a call with control
    /// characters says so.
    pub fn one_line(&self, width: usize) -> String {
        let line = odyssey_visible::escape_line(&self.text);
        let total = line.chars().count();
        let mut shown: String = if total > width {
            let kept: String = line.chars().take(width.saturating_sub(1)).collect();
            format!("{kept}… ({total} characters)")
        } else {
            line.into_owned()
        };
        if self.control_characters {
            shown.push_str(" [contains control characters]");
        }
        shown
    }

    /// Whether [`CallView::one_line`] cuts the call at `width`.
    pub fn cut_at(&self, width: usize) -> bool {
        odyssey_visible::escape_line(&self.text).chars().count() > width
    }
}

/// Whether any name or string in `arguments` holds control characters.
fn struct_has_controls(arguments: &prost_types::Struct) -> bool {
    arguments
        .fields
        .iter()
        .any(|(name, value)| odyssey_visible::has_controls(name) || value_has_controls(value))
}

fn value_has_controls(value: &prost_types::Value) -> bool {
    use prost_types::value::Kind;
    match &value.kind {
        Some(Kind::StringValue(text)) => odyssey_visible::has_controls(text),
        Some(Kind::StructValue(fields)) => struct_has_controls(fields),
        Some(Kind::ListValue(list)) => list.values.iter().any(value_has_controls),
        Some(Kind::NullValue(_) | Kind::NumberValue(_) | Kind::BoolValue(_)) | None => false,
    }
}

fn indented(text: &str, indent: &str) -> String {
    text.lines()
        .map(|line| format!("{indent}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn request(display: &str, control_characters: bool) -> pb::PermissionRequested {
        pb::PermissionRequested {
            request_id: "req-1".into(),
            tool: "Bash".into(),
            display: display.into(),
            control_characters,
            ..Default::default()
        }
    }

    #[test]
    fn a_hidden_command_is_shown_escaped_and_flagged() {
        let command = "rm -rf ~/important \r\x1b[2Kls -la";
        // From an older server: no display form, only the raw summary.
        let old = pb::PermissionRequested {
            summary: command.into(),
            ..request("", false)
        };
        let view = CallView::of_request(&old);
        assert!(view.control_characters());
        assert_eq!(
            view.block("    ", SEE_ALL),
            format!("    rm -rf ~/important \\r\\x1b[2Kls -la\n    ! {CONTROL_NOTE}")
        );
        // A display form that was not escaped is escaped here.
        let view = CallView::of_request(&request(command, false));
        assert_eq!(
            view.one_line(80),
            "rm -rf ~/important \\r\\x1b[2Kls -la [contains control characters]"
        );
    }

    #[test]
    fn long_calls_say_what_is_cut_and_how_to_see_it() {
        let long = "x".repeat(MAX_CHARS + 500);
        let view = CallView::of_request(&request(&long, false));
        let block = view.block("  ", SEE_ALL);
        assert!(
            block.ends_with(&format!(
                "… cut here: 1 of 1 lines, {MAX_CHARS} of {} characters shown; {SEE_ALL}",
                MAX_CHARS + 500
            )),
            "{block}"
        );
        let many: String = (0..100).map(|i| format!("echo {i}\n")).collect();
        let view = CallView::of_request(&request(&many, false));
        let block = view.block("", "see above");
        assert!(block.starts_with("echo 0\necho 1\n"), "{block}");
        assert!(
            block.contains("echo 39\n… cut here: 40 of 100 lines"),
            "{block}"
        );
        assert_eq!(view.full("").lines().count(), 100);
        assert_eq!(view.one_line(20), "echo 0\\necho 1\\nech… (890 characters)");
        assert!(view.cut_at(20));
        assert!(!CallView::of_request(&request("ls", false)).cut_at(20));
    }

    #[test]
    fn plain_calls_are_shown_as_they_are() {
        let view = CallView::of_request(&request("make test\ncwd: src", false));
        assert!(!view.control_characters());
        assert_eq!(view.block("  ", SEE_ALL), "  make test\n  cwd: src");
        assert_eq!(view.one_line(60), "make test\\ncwd: src");
    }
}
