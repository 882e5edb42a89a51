//! Parsing rule entries: what is accepted, and malformed entries named by their field.

use crate::bundle::ToolRules;
use crate::error::ErrorKind;
use crate::permissions::RuleError;
use crate::permissions::rules::{PermissionRules, RuleAction, RulePattern};

fn strings(entries: &[&str]) -> Vec<String> {
    entries.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn well_formed_entries_parse() {
    let rules = PermissionRules::parse(
        &strings(&[
            "Read",
            "Bash(git status:*)",
            " Write(data/*) ",
            "Bash(npm run *)",
        ]),
        &strings(&["Edit(src/**)"]),
        &strings(&["Bash(rm -rf:*)", "mcp.fetch-url_2"]),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let shape: Vec<(RuleAction, &str, &str, bool)> = rules
        .rules()
        .iter()
        .map(|r| {
            let kind = match &r.pattern {
                None => "bare",
                Some(RulePattern::Command(_)) => "command",
                Some(RulePattern::Path(_)) => "path",
            };
            (r.action, r.tool.as_str(), kind, r.specificity().0)
        })
        .collect();
    assert_eq!(
        shape,
        [
            (RuleAction::Allow, "Read", "bare", false),
            (RuleAction::Allow, "Bash", "command", true),
            (RuleAction::Allow, "Write", "path", true),
            (RuleAction::Allow, "Bash", "command", true),
            (RuleAction::Ask, "Edit", "path", true),
            (RuleAction::Deny, "Bash", "command", true),
            (RuleAction::Deny, "mcp.fetch-url_2", "bare", false),
        ]
    );
    assert_eq!(rules.rules()[2].entry, "Write(data/*)");
}

#[test]
fn longer_literals_are_more_specific() {
    let rules = PermissionRules::parse(
        &strings(&[
            "Bash(git:*)",
            "Bash(git status:*)",
            "Write(src/**)",
            "Write(src/main.rs)",
        ]),
        &[],
        &[],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let spec: Vec<usize> = rules.rules().iter().map(|r| r.specificity().1).collect();
    assert!(spec[0] < spec[1], "{spec:?}");
    assert!(spec[2] < spec[3], "{spec:?}");
}

#[test]
fn malformed_entries_are_named() {
    #[rustfmt::skip]
    let table: &[(&str, &str)] = &[
        ("", "names no tool"),
        ("   ", "names no tool"),
        ("(ls)", "names no tool"),
        ("Bash(", "must end with `)`"),
        ("Bash(ls", "must end with `)`"),
        ("Bash()", "pattern is empty"),
        ("mcp__*", "except `mcp__<server>__*`"),
        ("mcp__a__b*", "except `mcp__<server>__*`"),
        ("mcp__a__b__*", "except `mcp__<server>__*`"),
        ("a2a_*", "and `a2a__*`"),
        ("a2a__x*", "and `a2a__*`"),
        ("Write( )", "pattern is empty"),
        ("Ba sh", "not allowed in a tool name"),
        ("Bash*", "tool names take no wildcards"),
        ("Bash(ls; rm:*)", "one rule per command"),
        ("Bash(echo 'x')", "not allowed in a Bash pattern"),
        ("Bash(ls $(x))", "not allowed in a Bash pattern"),
        ("Bash(:*)", "names no command"),
        ("Bash(ls:* -la)", "`:*` may only end"),
        ("Write(./)", "names no path"),
    ];
    for (entry, message) in table {
        let err = PermissionRules::parse(&[], &[], &strings(&["Read", entry]))
            .err()
            .unwrap_or_else(|| panic!("{entry:?} was accepted"));
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert_eq!(err.reason(), "INVALID_PERMISSION_RULE");
        assert_eq!(err.field(), Some("tools.deny[1]"), "{entry:?}");
        let text = err.to_string();
        assert!(text.contains(message), "{entry:?}: {text}");
        assert!(text.contains(entry.trim()), "{entry:?}: {text}");
    }
}

#[test]
fn an_agents_rules_come_from_its_tool_rules() {
    let tool_rules = ToolRules {
        allow: strings(&["Read"]),
        ask: strings(&["Bash(", "Write"]),
        deny: Vec::new(),
    };
    let Err(RuleError::Malformed { field, .. }) = PermissionRules::from_tool_rules(&tool_rules)
    else {
        panic!("accepted");
    };
    assert_eq!(field, "tools.ask[0]");
}
