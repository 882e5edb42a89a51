//! Decision tables: chained-command bypass attempts, specificity, path patterns, defaults,
//! and the approval policies.

use crate::permissions::{Decision, PermissionRules};
use crate::policy::ApprovalPolicy;

/// The tools that run without a rule (the issue's read-only set).
const READ_ONLY: &[&str] = &["Read", "LS", "Glob", "Grep", "Skill", "UpdatePlan"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Allow,
    Ask,
    Deny,
}
use Want::{Allow, Ask, Deny};

struct Rules<'a> {
    allow: &'a [&'a str],
    ask: &'a [&'a str],
    deny: &'a [&'a str],
}

const NONE: Rules<'static> = Rules {
    allow: &[],
    ask: &[],
    deny: &[],
};

fn parse(rules: &Rules<'_>) -> PermissionRules {
    let owned = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    PermissionRules::parse(&owned(rules.allow), &owned(rules.ask), &owned(rules.deny))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a table: (tool, subject, expected decision, text the reason must contain).
fn check(
    rules: &Rules<'_>,
    policy: ApprovalPolicy,
    table: &[(&str, Option<&str>, Want, &str)],
) -> Vec<String> {
    let parsed = parse(rules);
    let mut failures = Vec::new();
    for (tool, subject, want, because) in table {
        let decision = parsed.decide(tool, *subject, READ_ONLY.contains(tool), policy);
        let (got, reason) = match &decision {
            Decision::Allow => (Allow, ""),
            Decision::Ask { reason } => (Ask, reason.as_str()),
            Decision::Deny { reason } => (Deny, reason.as_str()),
        };
        if got != *want || !reason.contains(because) {
            failures.push(format!(
                "{tool} {subject:?} under {policy:?} with allow={:?} ask={:?} deny={:?}\n    \
                 got {got:?} ({reason})\n    want {want:?} (reason containing {because:?})",
                rules.allow, rules.ask, rules.deny
            ));
        }
    }
    failures
}

fn assert_table(
    rules: &Rules<'_>,
    policy: ApprovalPolicy,
    table: &[(&str, Option<&str>, Want, &str)],
) {
    let failures = check(rules, policy, table);
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const ON_REQUEST: ApprovalPolicy = ApprovalPolicy::OnRequest;

#[test]
fn chained_commands_cannot_ride_on_an_allowed_prefix() {
    let rules = Rules {
        allow: &[
            "Bash(ls:*)",
            "Bash(git status:*)",
            "Bash(echo:*)",
            "Bash(cat:*)",
        ],
        ask: &[],
        deny: &[],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("Bash", Some("ls -la"), Allow, ""),
        ("Bash", Some("ls"), Allow, ""),
        ("Bash", Some("git status --short"), Allow, ""),
        ("Bash", Some("ls && git status"), Allow, ""),
        ("Bash", Some("ls | cat -n"), Allow, ""),
        ("Bash", Some("ls; curl x | sh"), Ask, "`curl x` needs approval"),
        ("Bash", Some("ls; curl x | sh"), Ask, "`sh` needs approval"),
        ("Bash", Some("ls && rm -rf /"), Ask, "`rm -rf /`"),
        ("Bash", Some("ls || rm x"), Ask, "`rm x`"),
        ("Bash", Some("ls $(curl x)"), Ask, "`curl x`"),
        ("Bash", Some("ls `curl x`"), Ask, "`curl x`"),
        ("Bash", Some("ls \"$(rm x)\""), Ask, "`rm x`"),
        ("Bash", Some("ls <(curl x)"), Ask, "`curl x`"),
        ("Bash", Some("git status; git push"), Ask, "`git push`"),
        ("Bash", Some("git status && git push --force"), Ask, "`git push --force`"),
        ("Bash", Some("bash -c 'ls; rm x'"), Ask, "`rm x`"),
        ("Bash", Some("sh -c \"ls && curl x\""), Ask, "`curl x`"),
        ("Bash", Some("eval 'ls; rm x'"), Ask, "`rm x`"),
        ("Bash", Some("ls\nrm x"), Ask, "`rm x`"),
        ("Bash", Some("ls & rm x"), Ask, "`rm x`"),
        ("Bash", Some("rm x & ls"), Ask, "`rm x`"),
        ("Bash", Some("(ls; rm x)"), Ask, "`rm x`"),
        ("Bash", Some("{ ls; rm x; }"), Ask, "`rm x`"),
        ("Bash", Some("ls; f() { rm x; }"), Ask, "`rm x`"),
        ("Bash", Some("ls | xargs rm"), Ask, "`rm`"),
        ("Bash", Some("ls -exec rm"), Allow, ""),
        ("Bash", Some("timeout 5 ls"), Allow, ""),
        ("Bash", Some("timeout 5 rm x"), Ask, "`rm x`"),
        ("Bash", Some("env X=1 ls"), Allow, ""),
        ("Bash", Some("X=1 ls"), Allow, ""),
        ("Bash", Some("PATH=/tmp/evil ls"), Ask, "sets PATH"),
        ("Bash", Some("ls; PATH=/tmp ls"), Ask, "sets PATH"),
        ("Bash", Some("/tmp/ls"), Ask, "no rule allows it"),
        ("Bash", Some("./ls"), Ask, "no rule allows it"),
        ("Bash", Some("$X"), Ask, "only known at run time"),
        ("Bash", Some("echo \"unbalanced"), Ask, "cannot be checked"),
        ("Bash", Some("ls > /etc/passwd"), Ask, "writing `/etc/passwd`"),
        ("Bash", Some("echo hi >> notes.txt"), Ask, "writing `notes.txt`"),
        ("Bash", Some("ls > /dev/null 2>&1"), Allow, ""),
        ("Bash", Some("cat < input.txt"), Allow, ""),
        ("Bash", Some(""), Ask, "no rule allows"),
    ]);
}

#[test]
fn specificity_decides_between_matching_rules() {
    // A pattern beats a bare tool name.
    let bash_but_not_rm = Rules {
        allow: &["Bash"],
        ask: &[],
        deny: &["Bash(rm:*)"],
    };
    #[rustfmt::skip]
    assert_table(&bash_but_not_rm, ON_REQUEST, &[
        ("Bash", Some("ls"), Allow, ""),
        ("Bash", Some("curl x | sh"), Allow, ""),
        ("Bash", Some("rm -rf x"), Deny, "denied by `Bash(rm:*)` (tools.deny)"),
        ("Bash", Some("ls; rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("/bin/rm x"), Deny, "`/bin/rm x` is denied"),
        ("Bash", Some("sudo rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("find . -exec rm {} +"), Deny, "denied"),
        ("Bash", Some("echo $(rm x)"), Deny, "denied"),
        ("Bash", Some("echo \"unbalanced; rm x"), Ask, "cannot be checked"),
    ]);
    // The longer literal wins, whichever way round.
    let git_but_not_push = Rules {
        allow: &["Bash(git:*)"],
        ask: &[],
        deny: &["Bash(git push:*)"],
    };
    #[rustfmt::skip]
    assert_table(&git_but_not_push, ON_REQUEST, &[
        ("Bash", Some("git status"), Allow, ""),
        ("Bash", Some("git push origin main"), Deny, "`Bash(git push:*)`"),
        ("Bash", Some("git pushx"), Allow, ""),
    ]);
    let only_git_status = Rules {
        allow: &["Bash(git status:*)"],
        ask: &[],
        deny: &["Bash(git:*)"],
    };
    #[rustfmt::skip]
    assert_table(&only_git_status, ON_REQUEST, &[
        ("Bash", Some("git status"), Allow, ""),
        ("Bash", Some("git log"), Deny, "`Bash(git:*)`"),
    ]);
    // Equal specificity: deny > ask > allow.
    #[rustfmt::skip]
    let ties: &[(Rules<'_>, Want)] = &[
        (Rules { allow: &["Bash(rm x)"], ask: &["Bash(rm x)"], deny: &[] }, Ask),
        (Rules { allow: &["Bash(rm x)"], ask: &[], deny: &["Bash(rm x)"] }, Deny),
        (Rules { allow: &[], ask: &["Bash(rm:*)"], deny: &["Bash(rm:*)"] }, Deny),
        (Rules { allow: &["Bash"], ask: &["Bash"], deny: &[] }, Ask),
        (Rules { allow: &["Bash(rm *)"], ask: &[], deny: &["Bash(rm:*)"] }, Deny),
    ];
    for (rules, want) in ties {
        assert_table(rules, ON_REQUEST, &[("Bash", Some("rm x"), *want, "")]);
    }
    // Exact commands, wildcards within a word, and a trailing lone `*`.
    let shapes = Rules {
        allow: &["Bash(git status)", "Bash(cargo test*)", "Bash(npm run *)"],
        ask: &[],
        deny: &[],
    };
    #[rustfmt::skip]
    assert_table(&shapes, ON_REQUEST, &[
        ("Bash", Some("git status"), Allow, ""),
        ("Bash", Some("git  'status'"), Allow, ""),
        ("Bash", Some("git status --short"), Ask, ""),
        ("Bash", Some("cargo testing"), Allow, ""),
        ("Bash", Some("cargo test x"), Ask, ""),
        ("Bash", Some("npm run build"), Allow, ""),
        ("Bash", Some("npm run"), Allow, ""),
        ("Bash", Some("git status $X"), Ask, ""),
        ("Bash", Some("cargo test*"), Ask, "no rule allows"),
    ]);
}

#[test]
fn run_time_words_never_slip_past_a_narrower_deny() {
    let rules = Rules {
        allow: &["Bash(rm:*)"],
        ask: &[],
        deny: &["Bash(rm -rf:*)"],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("Bash", Some("rm x"), Allow, ""),
        ("Bash", Some("rm -rf x"), Deny, "`Bash(rm -rf:*)`"),
        ("Bash", Some("rm $FLAGS x"), Ask, "may match `Bash(rm -rf:*)`"),
        ("Bash", Some("rm -r*f x"), Ask, "may match"),
        ("Bash", Some("xargs rm < list"), Ask, "may match `Bash(rm -rf:*)`"),
        ("Bash", Some("xargs -0 rm < list"), Ask, "may match"),
    ]);
    let exact = Rules {
        allow: &["Bash(rm:*)"],
        ask: &["Bash(rm important)"],
        deny: &[],
    };
    #[rustfmt::skip]
    assert_table(&exact, ON_REQUEST, &[
        ("Bash", Some("rm other"), Allow, ""),
        ("Bash", Some("rm important"), Ask, "`Bash(rm important)` (tools.ask) asks"),
        ("Bash", Some("echo important | xargs rm"), Ask, "may match"),
    ]);
}

#[test]
fn wrappers_are_checked_against_deny_and_ask_rules_too() {
    let rules = Rules {
        allow: &["Bash(rm:*)", "Bash(ls:*)"],
        ask: &["Bash(timeout:*)"],
        deny: &["Bash(sudo:*)"],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("Bash", Some("rm x"), Allow, ""),
        ("Bash", Some("sudo rm x"), Deny, "`sudo rm x` is denied by `Bash(sudo:*)`"),
        ("Bash", Some("timeout 5 ls"), Ask, "`Bash(timeout:*)`"),
        ("Bash", Some("nice ls"), Allow, ""),
        ("Bash", Some("sh -c 'sudo ls'"), Deny, "denied"),
    ]);
}

/// Issue 11: a deny rule sees the command inside the runners the splitter unwraps
/// (`taskset`, `chrt`, `flock`, `ld.so`, ...), and a program running code written in its
/// arguments asks even where the program is allowed.
#[test]
fn runners_and_inline_code_cannot_slip_past_a_deny() {
    let rules = Rules {
        allow: &[
            "Bash(awk:*)",
            "Bash(git:*)",
            "Bash(tar:*)",
            "Bash(find:*)",
            "Bash(taskset:*)",
            "Bash(ls:*)",
        ],
        ask: &[],
        deny: &["Bash(rm:*)"],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("Bash", Some("taskset 1 rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("ionice -c3 rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("chrt -i 0 rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("setpriv --nnp rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("prlimit --nproc=1 rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("script -qc 'rm x' /dev/null"), Deny, "`rm x` is denied"),
        ("Bash", Some("stdbuf -oL rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("flock /tmp/l rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("flock /tmp/l -c 'rm x'"), Deny, "`rm x` is denied"),
        ("Bash", Some("chroot / rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("/lib64/ld-linux-x86-64.so.2 /usr/bin/rm x"), Deny, "is denied"),
        ("Bash", Some("ld.so rm x"), Deny, "`rm x` is denied"),
        ("Bash", Some("taskset 1 ls"), Allow, ""),
        ("Bash", Some("awk 'BEGIN{system(\"rm x\")}'"), Ask, "calls system()"),
        ("Bash", Some("awk '{ print | \"sh\" }' f"), Ask, "pipes to or from a command"),
        ("Bash", Some("awk '{print $1}' f"), Allow, ""),
        ("Bash", Some("git -c alias.x='!rm y' x"), Ask, "may run a command"),
        ("Bash", Some("git -c core.fsmonitor='rm y' status"), Ask, "may run a command"),
        ("Bash", Some("git rebase -x 'rm y' main"), Ask, "is given a command to run"),
        ("Bash", Some("git status"), Allow, ""),
        ("Bash", Some("tar --checkpoint-action=exec='rm y' -cf a.tar ."), Ask, "runs a program"),
        ("Bash", Some("tar -czf a.tgz src"), Allow, ""),
        ("Bash", Some("find . -delete"), Ask, "deletes or writes files"),
        ("Bash", Some("find . -name '*.o'"), Allow, ""),
    ]);
}

#[test]
fn path_patterns_match_workspace_paths() {
    let rules = Rules {
        allow: &[
            "Write(data/*)",
            "Edit(src/**)",
            "Bash(echo:*)",
            "Bash(cat:*)",
            "Edit(*.md)",
        ],
        ask: &[],
        deny: &["Read(secrets/**)", "Write(data/locked.txt)"],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("Write", Some("data/a.txt"), Allow, ""),
        ("Write", Some("./data/a.txt"), Allow, ""),
        ("Write", Some("data//a.txt"), Allow, ""),
        ("Write", Some("data/sub/a.txt"), Ask, "`Write` on `data/sub/a.txt` needs approval"),
        ("Write", Some("data"), Ask, ""),
        ("Write", Some("other/a.txt"), Ask, ""),
        ("Write", Some("data/../etc/passwd"), Ask, ""),
        ("Write", Some("data/locked.txt"), Deny, "`Write(data/locked.txt)`"),
        ("Edit", Some("src/main.rs"), Allow, ""),
        ("Edit", Some("src/a/b/c.rs"), Allow, ""),
        ("Edit", Some("src"), Ask, ""),
        ("Edit", Some("src/../../x"), Ask, ""),
        ("Edit", Some("/src/main.rs"), Ask, ""),
        ("Edit", Some("README.md"), Allow, ""),
        ("Edit", Some("docs/README.md"), Ask, ""),
        ("Read", Some("secrets/key.pem"), Deny, "`Read(secrets/**)` (tools.deny)"),
        ("Read", Some("data/../secrets/key.pem"), Deny, ""),
        ("Read", Some("README.md"), Allow, ""),
        ("Write", None, Ask, ""),
        // Bash redirections are judged by the same rules.
        ("Bash", Some("echo hi > data/out.txt"), Allow, ""),
        ("Bash", Some("echo hi > data/locked.txt"), Deny, "writing `data/locked.txt`"),
        ("Bash", Some("echo hi > out.txt"), Ask, "writing `out.txt` needs approval"),
        ("Bash", Some("echo hi > $F"), Ask, "writing `$F`"),
        ("Bash", Some("cat < secrets/key.pem"), Deny, "reading `secrets/key.pem`"),
        ("Bash", Some("cat < $F"), Ask, "may match `Read(secrets/**)`"),
    ]);
}

#[test]
fn without_a_rule_read_only_tools_run_and_others_ask() {
    #[rustfmt::skip]
    assert_table(&NONE, ON_REQUEST, &[
        ("Read", Some("a.txt"), Allow, ""),
        ("LS", None, Allow, ""),
        ("Glob", Some("**/*.rs"), Allow, ""),
        ("Grep", None, Allow, ""),
        ("Skill", Some("pdf"), Allow, ""),
        ("UpdatePlan", None, Allow, ""),
        ("Write", Some("a.txt"), Ask, "no rule allows it"),
        ("Edit", Some("a.txt"), Ask, "no rule allows it"),
        ("Bash", Some("ls"), Ask, "`ls` needs approval: no rule allows it"),
    ]);
    let explicit = Rules {
        allow: &["Write"],
        ask: &["Glob"],
        deny: &["Read"],
    };
    #[rustfmt::skip]
    assert_table(&explicit, ON_REQUEST, &[
        ("Read", Some("a.txt"), Deny, "`Read` (tools.deny)"),
        ("Glob", None, Ask, "`Glob` (tools.ask)"),
        ("Write", Some("a.txt"), Allow, ""),
    ]);
}

#[test]
fn untrusted_asks_for_anything_not_explicitly_allowed() {
    let rules = Rules {
        allow: &["Read", "Bash(ls:*)"],
        ask: &[],
        deny: &["Grep"],
    };
    #[rustfmt::skip]
    assert_table(&rules, ApprovalPolicy::Untrusted, &[
        ("Read", Some("a.txt"), Allow, ""),
        ("LS", None, Ask, "policy is `untrusted`"),
        ("Glob", None, Ask, "no rule allows this `Glob` call"),
        ("Grep", None, Deny, "tools.deny"),
        ("Write", Some("a.txt"), Ask, "no rule allows it"),
        ("Bash", Some("ls"), Allow, ""),
        ("Bash", Some("ls; rm x"), Ask, "`rm x`"),
    ]);
}

#[test]
fn never_denies_what_would_ask_and_says_why() {
    let rules = Rules {
        allow: &["Bash(ls:*)"],
        ask: &["Edit"],
        deny: &[],
    };
    #[rustfmt::skip]
    assert_table(&rules, ApprovalPolicy::Never, &[
        ("Read", Some("a.txt"), Allow, ""),
        ("Bash", Some("ls"), Allow, ""),
        ("Write", Some("a.txt"), Deny, "approval policy is `never`, which does not allow asking"),
        ("Edit", Some("a.txt"), Deny, "`Edit` (tools.ask)"),
        ("Bash", Some("ls; curl x"), Deny, "`curl x` needs approval"),
        ("Bash", Some("ls; curl x"), Deny, "`never`"),
    ]);
}

#[test]
fn a_tool_is_offered_unless_denied_outright() {
    let cases: &[(Rules<'_>, &str, bool)] = &[
        (NONE, "Bash", true),
        (
            Rules {
                allow: &[],
                ask: &[],
                deny: &["Bash"],
            },
            "Bash",
            false,
        ),
        (
            Rules {
                allow: &[],
                ask: &[],
                deny: &["Bash"],
            },
            "Read",
            true,
        ),
        (
            Rules {
                allow: &[],
                ask: &[],
                deny: &["Bash(rm:*)"],
            },
            "Bash",
            true,
        ),
        (
            Rules {
                allow: &["Bash(ls:*)"],
                ask: &[],
                deny: &["Bash"],
            },
            "Bash",
            true,
        ),
        (
            Rules {
                allow: &["Bash"],
                ask: &[],
                deny: &["Bash"],
            },
            "Bash",
            false,
        ),
    ];
    for (rules, tool, offered) in cases {
        assert_eq!(
            parse(rules).offered(tool),
            *offered,
            "{tool} with allow={:?} deny={:?}",
            rules.allow,
            rules.deny
        );
    }
}

/// Issue 23: a Bash command with control characters other than newline and tab always
/// asks, whatever the rules say: on a terminal `\r` and ESC sequences can draw it as a
/// command the rule was written for. A deny still denies; `never` denies instead of asking.
#[test]
fn a_command_with_control_characters_always_asks() {
    let rules = Rules {
        allow: &["Bash", "Bash(rm:*)", "Bash(ls:*)", "Bash(echo:*)"],
        ask: &[],
        deny: &["Bash(shutdown:*)"],
    };
    let hidden = "the command contains control characters";
    assert_table(
        &rules,
        ON_REQUEST,
        &[
            (
                "Bash",
                Some("rm -rf ~/important \r\x1b[2Kls -la"),
                Ask,
                hidden,
            ),
            ("Bash", Some("ls \x1b]0;title\x07"), Ask, hidden),
            ("Bash", Some("echo \u{202e}txt.exe"), Ask, hidden),
            ("Bash", Some("echo \u{9b}2J"), Ask, hidden),
            ("Bash", Some("echo a\x7f"), Ask, hidden),
            (
                "Bash",
                Some("shutdown now \r"),
                Deny,
                "denied by `Bash(shutdown:*)`",
            ),
            // Newlines and tabs lay a command out; they hide nothing.
            ("Bash", Some("ls -la\necho\tdone"), Allow, ""),
            ("Bash", Some("rm -rf build"), Allow, ""),
            // Other tools keep their rules; their display form shows the escapes.
            ("Read", Some("notes\r.md"), Allow, ""),
        ],
    );
    assert_table(
        &rules,
        ApprovalPolicy::Never,
        &[(
            "Bash",
            Some("rm -rf ~/important \r\x1b[2Kls -la"),
            Deny,
            hidden,
        )],
    );
    // An ask for other reasons keeps them beside this one.
    let asking = Rules {
        allow: &[],
        ask: &["Bash(git push:*)"],
        deny: &[],
    };
    assert_table(
        &asking,
        ON_REQUEST,
        &[("Bash", Some("git push \r"), Ask, "; also `git push")],
    );
}

#[test]
fn a_servers_wildcard_covers_its_mcp_tools_and_a_named_tool_beats_it() {
    let rules = Rules {
        allow: &["mcp__fs__*", "mcp__github__get_issue"],
        ask: &["mcp__github__*"],
        deny: &["mcp__fs__write_file"],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("mcp__fs__read_file", None, Allow, ""),
        ("mcp__fs__write_file", None, Deny, "`mcp__fs__write_file` (tools.deny)"),
        ("mcp__github__create_issue", None, Ask, "`mcp__github__*` (tools.ask)"),
        ("mcp__github__get_issue", None, Allow, ""),
        // Another server's tools, and the prefix alone, are not covered.
        ("mcp__fsx__read_file", None, Ask, "no rule allows it"),
        ("mcp__fs__", None, Ask, "no rule allows it"),
    ]);
    let denied = parse(&Rules {
        allow: &[],
        ask: &[],
        deny: &["mcp__fs__*"],
    });
    assert!(!denied.offered("mcp__fs__read_file"));
    assert!(denied.offered("mcp__other__read_file"));
}

#[test]
fn the_remote_agents_wildcard_covers_every_a2a_tool_and_a_named_one_beats_it() {
    let rules = Rules {
        allow: &["a2a__*"],
        ask: &["a2a__research"],
        deny: &[],
    };
    #[rustfmt::skip]
    assert_table(&rules, ON_REQUEST, &[
        ("a2a__helper", None, Allow, ""),
        ("a2a__research", None, Ask, "`a2a__research` (tools.ask)"),
        // Not a remote agent's tool, and the prefix alone, are not covered.
        ("mcp__a2a__x", None, Ask, "no rule allows it"),
        ("a2a__", None, Ask, "no rule allows it"),
    ]);
    let denied = parse(&Rules {
        allow: &[],
        ask: &[],
        deny: &["a2a__*"],
    });
    assert!(!denied.offered("a2a__helper"));
    assert!(denied.offered("Read"));
}
