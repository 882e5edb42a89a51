//! Pre-tool hooks run as real processes (`sh -c` scripts).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::permissions::{Decision, HookConfig, apply_hooks};

fn hook(script: &str, timeout_ms: u64) -> HookConfig {
    HookConfig::new(
        vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
        Duration::from_millis(timeout_ms),
    )
}

/// A hook that reads its input and prints `answer`.
fn answering(answer: &str) -> HookConfig {
    hook(&format!("cat >/dev/null; printf '%s' '{answer}'"), 5_000)
}

fn call() -> serde_json::Value {
    json!({ "tool": "Bash", "arguments": { "command": "rm -rf build" } })
}

fn ask(reason: &str) -> Decision {
    Decision::Ask {
        reason: reason.to_owned(),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Want {
    Allow,
    Ask,
    Deny,
}

fn summarize(decision: &Decision) -> (Want, &str) {
    match decision {
        Decision::Allow => (Want::Allow, ""),
        Decision::Ask { reason } => (Want::Ask, reason),
        Decision::Deny { reason } => (Want::Deny, reason),
    }
}

#[tokio::test]
async fn answers_only_tighten_the_rules_decision() {
    let allow = r#"{"decision": "allow"}"#;
    let ask_answer = r#"{"decision": "ask", "reason": "touches build"}"#;
    let deny = r#"{"decision": "deny", "reason": "not today"}"#;
    #[rustfmt::skip]
    let table: &[(&str, Decision, Want, &str)] = &[
        (allow, Decision::Allow, Want::Allow, ""),
        (allow, ask("rule asks"), Want::Ask, "rule asks"),
        (ask_answer, Decision::Allow, Want::Ask, "asks for approval: touches build"),
        (ask_answer, ask("rule asks"), Want::Ask, "rule asks; pre-tool hook"),
        (deny, Decision::Allow, Want::Deny, "denied the call: not today"),
        (deny, ask("rule asks"), Want::Deny, "not today"),
        (r#"{"decision":"deny"}"#, Decision::Allow, Want::Deny, "denied the call"),
        (r#"{"decision":"allow","extra":1}"#, Decision::Allow, Want::Allow, ""),
    ];
    for (answer, rules_say, want, because) in table {
        let decision = apply_hooks(&[answering(answer)], &call(), rules_say.clone()).await;
        let (got, reason) = summarize(&decision);
        assert_eq!(got, *want, "{answer} after {rules_say:?}: {reason}");
        assert!(reason.contains(because), "{answer}: {reason}");
    }
}

#[tokio::test]
async fn the_hook_reads_the_call_on_stdin() {
    let script = r#"if grep -q '"command":"rm -rf build"'; then
        echo '{"decision":"deny","reason":"saw the command"}'
    else
        echo '{"decision":"allow"}'
    fi"#;
    let decision = apply_hooks(&[hook(script, 5_000)], &call(), Decision::Allow).await;
    assert_eq!(summarize(&decision).0, Want::Deny, "{decision:?}");
    assert!(summarize(&decision).1.contains("saw the command"));
}

#[tokio::test]
async fn failing_hooks_fail_closed() {
    #[rustfmt::skip]
    let table: &[(HookConfig, &str)] = &[
        (hook("echo boom >&2; exit 3", 5_000), "exited with status 3 (boom)"),
        (hook("cat >/dev/null; echo this is not json", 5_000), "gave no valid answer"),
        (hook("echo '{\"decision\": \"maybe\"}'", 5_000), "gave no valid answer"),
        (hook("true", 5_000), "gave no valid answer"),
        (hook("sleep 5; echo '{\"decision\":\"allow\"}'", 200), "did not answer within 200 ms"),
        (HookConfig::new(vec!["/nonexistent/odyssey-hook".to_owned()], Duration::from_secs(5)), "could not start"),
        (HookConfig::new(Vec::new(), Duration::from_secs(5)), "has no command"),
    ];
    for (config, because) in table {
        let started = Instant::now();
        let decision = apply_hooks(std::slice::from_ref(config), &call(), Decision::Allow).await;
        let (got, reason) = summarize(&decision);
        assert_eq!(got, Want::Deny, "{config:?}: {reason}");
        assert!(reason.contains(because), "{config:?}: {reason}");
        assert!(reason.contains("fail closed"), "{reason}");
        // Bounded by the hook's timeout, not by the hook.
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{config:?} took {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn a_denied_call_runs_no_hook_and_a_deny_stops_the_rest() {
    let denied = Decision::Deny {
        reason: "rule says no".to_owned(),
    };
    let failing = hook("exit 1", 5_000);
    assert_eq!(
        apply_hooks(std::slice::from_ref(&failing), &call(), denied.clone()).await,
        denied
    );

    let hooks = [
        answering(r#"{"decision":"ask","reason":"first"}"#),
        answering(r#"{"decision":"deny","reason":"second"}"#),
        failing,
    ];
    let decision = apply_hooks(&hooks, &call(), Decision::Allow).await;
    assert_eq!(
        summarize(&decision),
        (
            Want::Deny,
            "pre-tool hook `sh -c cat >/dev/null; printf '%s' '{\"decision\":\"deny\",\"reason\":\"second\"}'` denied the call: second"
        )
    );
    assert_eq!(
        apply_hooks(&[], &call(), Decision::Allow).await,
        Decision::Allow
    );
}
