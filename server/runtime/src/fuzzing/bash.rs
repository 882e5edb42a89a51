//! `bash_split`: splitting a Bash command line into the simple commands permission rules
//! judge, and deciding the line under a small rule set.
//!
//! The input is the line, decoded as UTF-8 with invalid bytes replaced (a model's tool call
//! arrives as JSON text). Splitting never fails; every command found is shown as approval
//! reasons show it. Under rules that allow `echo` and deny `rm`, the rules' promise must
//! hold: an allowed line runs nothing but `echo` (no opaque part, no other program, no
//! file written), a line in which `rm` is found is denied, and a session that may not ask
//! never gets an `Ask`.

use std::sync::OnceLock;

use crate::ApprovalPolicy;
use crate::permissions::bash_split::{RedirectKind, display_words};
use crate::permissions::{BASH_TOOL, Decision, PermissionRules, split_command};

pub fn bash_split(data: &[u8]) {
    let line = String::from_utf8_lossy(data);
    let split = split_command(&line);
    for command in &split.commands {
        let _ = command.to_string();
        for layer in &command.wrapped_by {
            let _ = display_words(layer);
        }
    }

    let decide = |policy| rules().decide(BASH_TOOL, Some(&line), false, policy);
    let decision = decide(ApprovalPolicy::OnRequest);
    if decision == Decision::Allow {
        assert!(!split.is_opaque(), "an opaque line was allowed: {line:?}");
        assert!(
            !split.commands.is_empty(),
            "an empty line was allowed: {line:?}"
        );
        for command in &split.commands {
            assert!(
                command.words.is_empty() || command.program() == Some("echo"),
                "`{command}` runs under `Bash(echo:*)`: {line:?}"
            );
            assert!(
                command
                    .redirects
                    .iter()
                    .all(|r| r.kind == RedirectKind::Read
                        || r.target.as_literal().is_some_and(is_device)),
                "`{command}` writes a file with no `Write` rule: {line:?}"
            );
        }
    }
    if split.commands.iter().any(|c| c.program() == Some("rm")) {
        assert!(
            matches!(decision, Decision::Deny { .. }),
            "`rm` was found but the line is not denied ({decision:?}): {line:?}"
        );
    }
    assert!(
        !matches!(decide(ApprovalPolicy::Never), Decision::Ask { .. }),
        "a session that may not ask was asked: {line:?}"
    );
}

/// The targets a redirection may write without a `Write` rule: terminal streams and the
/// null device.
fn is_device(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || target
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// For the fuzz target's start: a panic raised inside brush-parser unwinds to the splitter's
/// guard, which makes the line opaque, as in the server; libFuzzer's hook would abort on it
/// although it is caught. A panic anywhere else still aborts.
pub fn bash_split_init() {
    let abort = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_parser = info
            .location()
            .is_some_and(|at| at.file().contains("/brush-parser-"));
        if !in_parser {
            abort(info);
        }
    }));
}

fn rules() -> &'static PermissionRules {
    static RULES: OnceLock<PermissionRules> = OnceLock::new();
    RULES.get_or_init(|| {
        PermissionRules::parse(
            &["Bash(echo:*)".to_owned()],
            &[],
            &["Bash(rm:*)".to_owned()],
        )
        .unwrap_or_else(|e| panic!("the harness rules do not parse: {e}"))
    })
}
