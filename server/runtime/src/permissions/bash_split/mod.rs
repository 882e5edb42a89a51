//! Splits a Bash command line into the simple commands it would run, so permission rules
//! judge each program rather than the line as a whole (`Bash(ls:*)` must not let
//! `ls; curl x | sh` through).
//!
//! The line is parsed into an AST by `brush-parser` (a maintained, pure-Rust bash parser),
//! then walked: lists, pipelines, subshells, groups, `if`/`for`/`while`/`case` bodies,
//! function bodies, command and process substitutions, here-documents and redirections.
//! Commands that run other commands (`sh -c`, `eval`, `sudo`, `xargs`, `timeout`, ...) are
//! unwrapped so the program they start is what gets checked (see [`wrappers`]).
//!
//! Everything the walk cannot vouch for is reported in [`SplitCommand::opaque`]: a line that
//! does not parse, a command name only known at run time, expansions that can run code
//! (`${x@P}`, arithmetic on variables), assignments to variables that change which program
//! runs (`PATH`, `LD_PRELOAD`, ...). An opaque line is never allowed without asking.

mod hazards;
mod inline_code;
mod limits;
mod runners;
mod walk;
mod words;
mod wrappers;

#[cfg(test)]
mod tests;

use std::fmt;

pub use limits::{MAX_LINE_BYTES, MAX_NESTING, MAX_PAREN_NESTING};

/// One word of a command after quote removal (`"a;b"` is the word `a;b`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShellWord {
    /// The word with quotes and escapes removed; expansions stay as written (`$HOME`).
    pub text: String,
    /// The value is only known when the command runs: it holds a parameter, command or
    /// arithmetic expansion, a tilde, or an unquoted glob or brace pattern, so it may become
    /// any text, or several words. Rules never match such a word against a literal.
    pub dynamic: bool,
    /// Quoted or escaped parts of the word spell substitution syntax (`'$(rm x)'`). Inert for
    /// most programs, but shell builtins and later arithmetic evaluation may run it.
    pub carries_code: bool,
}

impl ShellWord {
    pub fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            dynamic: false,
            carries_code: false,
        }
    }

    /// The literal text, when the value is known before the command runs.
    pub fn as_literal(&self) -> Option<&str> {
        (!self.dynamic).then_some(self.text.as_str())
    }
}

/// `NAME=value` before a command, as an assignment-only command, or given to `env`/`sudo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    pub name: String,
    pub value: ShellWord,
}

/// Whether a redirection reads or writes its target file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectKind {
    /// `< file`.
    Read,
    /// `> file`, `>> file`, `>| file`, `<> file`, `&> file`, `>& file`.
    Write,
}

/// A redirection to or from a file (descriptor duplications such as `2>&1` are not files
/// and are not listed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: ShellWord,
}

/// One program invocation found in the line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Variable assignments in effect for this command (`X=1 cmd`, `env X=1 cmd`).
    pub assignments: Vec<Assignment>,
    /// The command that runs, after unwrapping wrappers: `words[0]` is the program. Empty for
    /// an assignment-only command or redirections around a compound command.
    pub words: Vec<ShellWord>,
    /// Files this command's redirections read or write.
    pub redirects: Vec<Redirect>,
    /// The wrapper invocations this command was unwrapped from, outermost first: for
    /// `sudo timeout 5 rm x` these are `sudo timeout 5 rm x` and `timeout 5 rm x`. Deny and ask
    /// rules are checked against them too, so `Bash(sudo:*)` still catches `sudo rm x`.
    pub wrapped_by: Vec<Vec<ShellWord>>,
    /// More arguments are appended at run time (`xargs rm`, `find -exec rm {} +`), so the
    /// words are a prefix of what runs and an exact-command rule cannot match.
    pub open_ended: bool,
}

impl SimpleCommand {
    /// The program name, when it is known before the command runs.
    pub fn program(&self) -> Option<&str> {
        self.words.first().and_then(ShellWord::as_literal)
    }
}

impl fmt::Display for SimpleCommand {
    /// Shows the command the way a person would type it, for approval reasons.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            let s = if first { "" } else { " " };
            first = false;
            f.write_str(s)
        };
        for a in &self.assignments {
            sep(f)?;
            write!(f, "{}={}", a.name, display_word(&a.value))?;
        }
        for w in &self.words {
            sep(f)?;
            f.write_str(&display_word(w))?;
        }
        for r in &self.redirects {
            sep(f)?;
            let op = match r.kind {
                RedirectKind::Read => "<",
                RedirectKind::Write => ">",
            };
            write!(f, "{op} {}", display_word(&r.target))?;
        }
        Ok(())
    }
}

/// Words joined as a person would type them, for messages.
pub fn display_words(words: &[ShellWord]) -> String {
    words.iter().map(display_word).collect::<Vec<_>>().join(" ")
}

/// Quotes a literal word that would not survive as typed; dynamic words are shown as written.
fn display_word(word: &ShellWord) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if word.dynamic || word.text == "{}" || (!word.text.is_empty() && word.text.chars().all(plain))
    {
        word.text.clone()
    } else {
        format!("'{}'", word.text.replace('\'', r"'\''"))
    }
}

/// A command line split into its simple commands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitCommand {
    pub commands: Vec<SimpleCommand>,
    /// Why (parts of) the line cannot be vouched for; empty when every part was understood.
    /// The commands that were found are still listed, so deny rules can match them.
    pub opaque: Vec<String>,
}

impl SplitCommand {
    /// Whether something in the line could not be understood (the line must not be allowed
    /// without asking).
    pub fn is_opaque(&self) -> bool {
        !self.opaque.is_empty()
    }
}

/// Splits `line` into the simple commands it would run. Never fails: what cannot be
/// understood is reported in [`SplitCommand::opaque`].
pub fn split_command(line: &str) -> SplitCommand {
    let mut walker = walk::Walker::default();
    walker.line(line);
    walker.finish()
}

/// Environment variables that change which program runs or inject code into every program
/// (loader, shell start-up and lookup variables). Assigning one makes a line opaque: with
/// `PATH=/tmp/evil ls`, an allowed `ls` is not the `ls` the rule meant.
pub fn is_sensitive_variable(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PROMPT_COMMAND",
        "BASH_LOADABLES_PATH",
        "EXECIGNORE",
        "GCONV_PATH",
        "HOSTALIASES",
        "MALLOC_CHECK_",
    ];
    const PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_"];
    EXACT.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}
