//! Whether one tool call runs, asks a human, or is refused.
//!
//! The most specific matching rule decides (a pattern beats a bare tool name, a longer
//! literal beats a shorter one, and at equal specificity deny > ask > allow). With no
//! matching rule, read-only tools run and the rest ask. A Bash command line is split into
//! its simple commands and runs only if every one of them is allowed; a denied part denies
//! the whole line, and a part that cannot be checked makes the line ask. A command line
//! holding control characters always asks (see [`always_asks`]). The session's approval
//! policy is applied last.

use super::bash_split::{self, RedirectKind, ShellWord, SimpleCommand, split_command};
use super::patterns::Match;
use super::rules::{BASH_TOOL, PermissionRules, Rule, RuleAction, RulePattern};
use crate::policy::ApprovalPolicy;

/// The tool whose rules judge files a Bash redirection writes (`ls > out`).
const WRITE_TOOL: &str = "Write";
/// The tool whose rules judge files a Bash redirection reads (`cmd < in`).
const READ_TOOL: &str = "Read";

/// What happens to a tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// A human decides; `reason` says which rule or part of the call needs approval.
    Ask {
        reason: String,
    },
    /// Refused; `reason` is what the model is told.
    Deny {
        reason: String,
    },
}

impl Decision {
    pub fn is_allow(&self) -> bool {
        matches!(self, Self::Allow)
    }

    /// What a session that may not ask (policy `never`) does with this decision: an ask
    /// becomes a deny that says why. Also for decisions tightened later (by hooks).
    pub fn without_asking(self) -> Self {
        match self {
            Self::Ask { reason } => Self::Deny {
                reason: format!(
                    "{reason}; the session's approval policy is `never`, which does not allow \
                     asking, so the call is denied"
                ),
            },
            other => other,
        }
    }

    /// 0 allow, 1 ask, 2 deny: decisions combine to the strictest.
    pub(crate) fn strictness(&self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Ask { .. } => 1,
            Self::Deny { .. } => 2,
        }
    }
}

/// How the rules judge something, before the session's policy is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Verdict {
    /// `explicit`: a rule allows it (not just the read-only default).
    Allow {
        explicit: bool,
    },
    Ask(String),
    Deny(String),
}

/// The rules that bear on one thing: the winning match, and the strongest deny or ask rule
/// that may match once run-time values are known and would then beat the winner.
struct Judgement<'a> {
    winner: Option<&'a Rule>,
    maybe: Option<&'a Rule>,
}

impl PermissionRules {
    /// Decides one call. `subject` is the tool's permission subject (the command for Bash,
    /// the workspace-relative path for file tools); `read_only` says whether the tool only
    /// reads (such tools run when no rule matches).
    pub fn decide(
        &self,
        tool: &str,
        subject: Option<&str>,
        read_only: bool,
        policy: ApprovalPolicy,
    ) -> Decision {
        let verdict = match subject {
            Some(line) if tool == BASH_TOOL => shown_first(line, self.bash(line, read_only)),
            _ => self.call(tool, subject, read_only),
        };
        apply_policy(tool, verdict, policy)
    }

    /// Whether the model is told about the tool at all: every tool is, unless a bare `Tool`
    /// deny rule refuses it outright (and no pattern rule lets some of its calls through).
    pub fn offered(&self, tool: &str) -> bool {
        let denied_outright = self
            .for_tool(tool)
            .any(|r| r.action == RuleAction::Deny && r.pattern.is_none());
        let partly_allowed = self
            .for_tool(tool)
            .any(|r| r.action != RuleAction::Deny && r.pattern.is_some());
        !denied_outright || partly_allowed
    }

    fn judge<'a>(
        &'a self,
        tool: &'a str,
        mut matcher: impl FnMut(&RulePattern, bool) -> Match,
    ) -> Judgement<'a> {
        let (mut winner, mut maybe): (Option<&Rule>, Option<&Rule>) = (None, None);
        for rule in self.for_tool(tool) {
            let lenient = rule.action != RuleAction::Allow;
            let found = rule
                .pattern
                .as_ref()
                .map_or(Match::Yes, |p| matcher(p, lenient));
            let slot = match found {
                Match::Yes => &mut winner,
                Match::Maybe => &mut maybe,
                Match::No => continue,
            };
            if slot.is_none_or(|best| rule.rank() > best.rank()) {
                *slot = Some(rule);
            }
        }
        let maybe = maybe.filter(|m| winner.is_none_or(|w| m.rank() > w.rank()));
        Judgement { winner, maybe }
    }

    /// A call of any tool but a Bash command line.
    fn call(&self, tool: &str, subject: Option<&str>, read_only: bool) -> Verdict {
        let judgement = self.judge(tool, |pattern, _| match (pattern, subject) {
            (RulePattern::Path(p), Some(s)) if p.matches(s) => Match::Yes,
            _ => Match::No,
        });
        let what = match subject {
            Some(s) => format!("`{tool}` on `{s}`"),
            None => format!("`{tool}`"),
        };
        ruled(&judgement, &what).unwrap_or_else(|| default_verdict(&what, read_only))
    }

    /// A Bash command line: every simple command must be allowed.
    fn bash(&self, line: &str, read_only: bool) -> Verdict {
        let split = split_command(line);
        if split.commands.is_empty() && !split.is_opaque() {
            return self.call(BASH_TOOL, None, read_only);
        }
        let mut denied = Vec::new();
        let mut asks = Vec::new();
        let mut explicit = true;
        for command in &split.commands {
            match self.simple_command(command, read_only) {
                Verdict::Deny(reason) => denied.push(reason),
                Verdict::Ask(reason) => asks.push(reason),
                Verdict::Allow { explicit: e } => explicit &= e,
            }
        }
        if !denied.is_empty() {
            return Verdict::Deny(denied.join("; "));
        }
        if split.is_opaque() {
            let mut reason = format!(
                "the command needs approval because it cannot be checked part by part: {}",
                split.opaque.join("; ")
            );
            if !asks.is_empty() {
                reason = format!("{reason}; also {}", asks.join("; "));
            }
            return Verdict::Ask(reason);
        }
        if !asks.is_empty() {
            return Verdict::Ask(asks.join("; "));
        }
        Verdict::Allow { explicit }
    }

    /// One simple command: its wrappers' deny/ask rules, the program, and the files its
    /// redirections touch.
    fn simple_command(&self, command: &SimpleCommand, read_only: bool) -> Verdict {
        let mut verdicts = Vec::new();
        for layer in &command.wrapped_by {
            let judgement = self.judge(BASH_TOOL, |p, lenient| {
                words_match(p, layer, false, lenient)
            });
            let what = format!("`{}`", bash_split::display_words(layer));
            if let Some(v @ (Verdict::Deny(_) | Verdict::Ask(_))) = ruled(&judgement, &what) {
                verdicts.push(v);
            }
        }
        if !command.words.is_empty() {
            let judgement = self.judge(BASH_TOOL, |p, lenient| {
                words_match(p, &command.words, command.open_ended, lenient)
            });
            let what = format!("`{}`", bash_split::display_words(&command.words));
            verdicts.push(
                ruled(&judgement, &what).unwrap_or_else(|| default_verdict(&what, read_only)),
            );
        }
        for redirect in &command.redirects {
            if is_device(&redirect.target) {
                continue;
            }
            let target = &redirect.target;
            let (tool, what) = match redirect.kind {
                RedirectKind::Write => (WRITE_TOOL, format!("writing `{}`", target.text)),
                RedirectKind::Read => (READ_TOOL, format!("reading `{}`", target.text)),
            };
            let judgement = self.judge(tool, |p, lenient| path_match(p, target, lenient));
            match (redirect.kind, ruled(&judgement, &what)) {
                (RedirectKind::Write, verdict) => verdicts.push(verdict.unwrap_or_else(|| {
                    Verdict::Ask(format!(
                        "{what} needs approval: no `{WRITE_TOOL}` rule allows it"
                    ))
                })),
                // The command may read what it likes; only deny and ask rules on reads count.
                (RedirectKind::Read, Some(v @ (Verdict::Deny(_) | Verdict::Ask(_)))) => {
                    verdicts.push(v);
                }
                (RedirectKind::Read, _) => {}
            }
        }
        combine(verdicts)
    }
}

/// Why a command line with control characters asks.
const CONTROL_CHARACTERS: &str = "the command contains control characters (shown escaped, \
     e.g. `\\r`, `\\x1b`), which a terminal may draw as something else than what runs, so \
     it always needs approval";

/// Whether a call must ask whatever the rules and remembered approvals say: a Bash
/// command line with control characters other than newline and tab. A terminal acts on
/// them (`\r` returns to the start of the line, ESC sequences erase it), so the line a rule
/// was written for, or a person once approved, may not be the one that runs.
pub fn always_asks(tool: &str, subject: Option<&str>) -> bool {
    tool == BASH_TOOL && subject.is_some_and(odyssey_visible::has_controls)
}

/// A Bash line's verdict, made to ask when the line [always asks](always_asks). A deny
/// stays a deny.
fn shown_first(line: &str, verdict: Verdict) -> Verdict {
    if !always_asks(BASH_TOOL, Some(line)) {
        return verdict;
    }
    match verdict {
        Verdict::Allow { .. } => Verdict::Ask(CONTROL_CHARACTERS.to_owned()),
        Verdict::Ask(reason) => Verdict::Ask(format!("{CONTROL_CHARACTERS}; also {reason}")),
        deny @ Verdict::Deny(_) => deny,
    }
}

/// The verdict of the rules that matched, if any did.
fn ruled(judgement: &Judgement<'_>, what: &str) -> Option<Verdict> {
    let cite = |rule: &Rule| format!("`{}` ({})", rule.entry, rule.action.field());
    match (judgement.winner, judgement.maybe) {
        (Some(rule), _) if rule.action == RuleAction::Deny => {
            Some(Verdict::Deny(format!("{what} is denied by {}", cite(rule))))
        }
        (Some(rule), _) if rule.action == RuleAction::Ask => Some(Verdict::Ask(format!(
            "{what} needs approval: {} asks for it",
            cite(rule)
        ))),
        (_, Some(rule)) => Some(Verdict::Ask(format!(
            "{what} needs approval: it may match {} once its run-time values are known",
            cite(rule)
        ))),
        (Some(_), None) => Some(Verdict::Allow { explicit: true }),
        (None, None) => None,
    }
}

fn default_verdict(what: &str, read_only: bool) -> Verdict {
    if read_only {
        Verdict::Allow { explicit: false }
    } else {
        Verdict::Ask(format!("{what} needs approval: no rule allows it"))
    }
}

/// The strictest of several verdicts; asks are listed together.
fn combine(verdicts: Vec<Verdict>) -> Verdict {
    let mut asks = Vec::new();
    let mut explicit = true;
    for verdict in verdicts {
        match verdict {
            Verdict::Deny(reason) => return Verdict::Deny(reason),
            Verdict::Ask(reason) => asks.push(reason),
            Verdict::Allow { explicit: e } => explicit &= e,
        }
    }
    if asks.is_empty() {
        Verdict::Allow { explicit }
    } else {
        Verdict::Ask(asks.join("; "))
    }
}

fn apply_policy(tool: &str, verdict: Verdict, policy: ApprovalPolicy) -> Decision {
    match (verdict, policy) {
        (Verdict::Deny(reason), _) => Decision::Deny { reason },
        (Verdict::Allow { explicit: false }, ApprovalPolicy::Untrusted) => Decision::Ask {
            reason: format!(
                "the session's approval policy is `untrusted`: only calls a rule allows run \
                 without asking, and no rule allows this `{tool}` call"
            ),
        },
        (Verdict::Allow { .. }, _) => Decision::Allow,
        (Verdict::Ask(reason), ApprovalPolicy::Never) => Decision::Ask { reason }.without_asking(),
        (Verdict::Ask(reason), _) => Decision::Ask { reason },
    }
}

fn words_match(
    pattern: &RulePattern,
    words: &[ShellWord],
    open_ended: bool,
    lenient: bool,
) -> Match {
    match pattern {
        RulePattern::Command(p) => p.matches(words, open_ended, lenient),
        RulePattern::Path(_) => Match::No,
    }
}

fn path_match(pattern: &RulePattern, target: &ShellWord, lenient: bool) -> Match {
    match (pattern, target.as_literal()) {
        (RulePattern::Path(p), Some(path)) if p.matches(path) => Match::Yes,
        (RulePattern::Path(_), None) if lenient => Match::Maybe,
        _ => Match::No,
    }
}

/// Redirections to the terminal streams and the null device touch no file.
fn is_device(target: &ShellWord) -> bool {
    target.as_literal().is_some_and(|t| {
        matches!(t, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
            || t.strip_prefix("/dev/fd/")
                .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    })
}
