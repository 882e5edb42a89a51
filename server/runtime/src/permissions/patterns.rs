//! The two kinds of rule pattern and how they match: word patterns for Bash commands
//! (`git status:*`) and path globs for everything else (`data/*`, `src/**`).
//!
//! Matching answers Yes, No, or Maybe. Maybe means the call holds something only known at
//! run time (`rm $X`) that could make it match: an allow rule never counts a Maybe, while a
//! deny or ask rule that may match keeps the call from running without a human.

use super::bash_split::ShellWord;

/// How a pattern matches a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Match {
    No,
    /// It would match for some run-time value of the call's dynamic parts.
    Maybe,
    Yes,
}

/// `*` matches any run of characters (including none); everything else is literal.
pub fn wildcard(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was and how much of the text it has swallowed: the classic
    // linear backtracking glob.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((star_pi, star_ti)) = star {
            pi = star_pi + 1;
            ti = star_ti + 1;
            star = Some((star_pi, star_ti + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn literal_len(text: &str) -> usize {
    text.chars().filter(|&c| c != '*').count()
}

/// A pattern over the words of one simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandPattern {
    /// Each word may hold `*` (any characters within that word).
    words: Vec<String>,
    /// Further words may follow (`:*`, or a last word that is a lone `*`).
    prefix: bool,
    literal_len: usize,
}

impl CommandPattern {
    /// Parses `git status:*` (prefix) or `git status` (exact command).
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(c) = text.chars().find(|c| "\"'\\`$;&|<>(){}\n".contains(*c)) {
            return Err(format!(
                "`{c}` is not allowed in a Bash pattern: a pattern lists the plain words of one \
                 command (write one rule per command)"
            ));
        }
        let (body, mut prefix) = match text.strip_suffix(":*") {
            Some(body) => (body, true),
            None => (text, false),
        };
        let mut words: Vec<String> = body.split_whitespace().map(str::to_owned).collect();
        if !prefix && words.len() > 1 && words.last().is_some_and(|w| w == "*") {
            words.pop();
            prefix = true;
        }
        if words.is_empty() {
            return Err("the pattern names no command".to_owned());
        }
        if words.iter().any(|w| w.contains(":*")) {
            return Err("`:*` may only end the pattern".to_owned());
        }
        let literal_len =
            words.iter().map(|w| literal_len(w)).sum::<usize>() + words.len().saturating_sub(1);
        Ok(Self {
            words,
            prefix,
            literal_len,
        })
    }

    /// How much of the pattern is literal; longer literals are more specific.
    pub fn literal_len(&self) -> usize {
        self.literal_len
    }

    /// Matches a command's words. `lenient` is for deny and ask rules: the program may be
    /// named by a path (`/bin/rm` for `rm`), and dynamic words or appended arguments answer
    /// Maybe; for allow rules only literal words can match, and run-time words may only
    /// fall in a `:*` tail.
    pub fn matches(&self, words: &[ShellWord], open_ended: bool, lenient: bool) -> Match {
        if !self.prefix && open_ended && !lenient {
            return Match::No;
        }
        let tail = ShellWord {
            text: String::new(),
            dynamic: true,
            carries_code: false,
        };
        // Appended arguments behave like one more run-time word at the end.
        let words: Vec<&ShellWord> = if open_ended {
            words.iter().chain(std::iter::once(&tail)).collect()
        } else {
            words.iter().collect()
        };
        let (k, n) = (self.words.len(), words.len());
        // best[i][j]: how pattern words i.. match command words j.. (a dynamic word may
        // expand to any number of words, including none).
        let mut best = vec![vec![Match::No; n + 1]; k + 1];
        for j in (0..=n).rev() {
            best[k][j] = if j == n || self.prefix {
                Match::Yes
            } else if lenient && words[j..].iter().all(|w| w.dynamic) {
                Match::Maybe
            } else {
                Match::No
            };
        }
        for i in (0..k).rev() {
            for j in (0..n).rev() {
                let word = words[j];
                best[i][j] = if let Some(text) = word.as_literal() {
                    let program = (i == 0 && j == 0 && lenient)
                        .then(|| text.rsplit('/').next())
                        .flatten();
                    if wildcard(&self.words[i], text)
                        || program.is_some_and(|p| wildcard(&self.words[i], p))
                    {
                        best[i + 1][j + 1]
                    } else {
                        Match::No
                    }
                } else if lenient {
                    // Expands to nothing, to this pattern word and more, or to this one.
                    let options = best[i][j + 1].max(best[i + 1][j]).max(best[i + 1][j + 1]);
                    options.min(Match::Maybe)
                } else {
                    Match::No
                };
            }
        }
        best[0][0]
    }
}

/// A glob over a `/`-separated path: `*` within one segment, `**` across segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPattern {
    segments: Vec<Segment>,
    literal_len: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// `**`: any number of segments (at least one when it ends the pattern).
    Any,
    Glob(String),
}

impl PathPattern {
    pub fn parse(text: &str) -> Result<Self, String> {
        let segments: Vec<Segment> = normalize(text)
            .into_iter()
            .map(|s| {
                if s == "**" {
                    Segment::Any
                } else {
                    Segment::Glob(s)
                }
            })
            .collect();
        if segments.is_empty() {
            return Err("the pattern names no path".to_owned());
        }
        Ok(Self {
            segments,
            literal_len: literal_len(text.trim_start_matches("./")),
        })
    }

    pub fn literal_len(&self) -> usize {
        self.literal_len
    }

    /// Whether `subject` (a path relative to the workspace, or an absolute one) matches.
    /// Wildcards never match `..` or the root, so an escaping path is only matched by a
    /// pattern that spells it out.
    pub fn matches(&self, subject: &str) -> bool {
        let path = normalize(subject);
        let (k, n) = (self.segments.len(), path.len());
        let plain = |s: &str| !s.is_empty() && s != "..";
        let mut ok = vec![vec![false; n + 1]; k + 1];
        ok[k][n] = true;
        for i in (0..k).rev() {
            for j in (0..=n).rev() {
                ok[i][j] = match &self.segments[i] {
                    Segment::Any if i + 1 == k => j < n && path[j..].iter().all(|s| plain(s)),
                    Segment::Any => ok[i + 1][j] || (j < n && plain(&path[j]) && ok[i][j + 1]),
                    Segment::Glob(glob) => {
                        j < n
                            && (glob == &path[j] || (plain(&path[j]) && wildcard(glob, &path[j])))
                            && ok[i + 1][j + 1]
                    }
                };
            }
        }
        ok[0][0]
    }
}

/// Splits a path into segments, dropping `.` and empty segments and folding `dir/..`. An
/// absolute path keeps a leading empty segment (the root); leading `..` segments stay.
pub fn normalize(path: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if path.starts_with('/') {
        out.push(String::new());
    }
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match out.last().map(String::as_str) {
                Some("") => {}
                Some(last) if last != ".." => {
                    out.pop();
                }
                _ => out.push("..".to_owned()),
            },
            s => out.push(s.to_owned()),
        }
    }
    out
}
