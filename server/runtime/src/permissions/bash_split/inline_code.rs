//! Programs that run code written in their own arguments: an awk program calling
//! `system()` or piping to a command, `git -c alias.x='!rm y' x` or `git rebase --exec`,
//! `tar --to-command=sh`. What runs is decided inside the program, out of the rules' sight,
//! so these forms make the command opaque: it asks, whatever the rules allow. The rules
//! still see the program itself, so `Bash(git:*)` in `deny` keeps denying them.

use super::ShellWord;
use super::wrappers::{Unwrap, literal_argument};

/// `awk`, `gawk`, `mawk`, `nawk` (and `busybox awk`, once unwrapped).
pub(super) fn is_awk(name: &str) -> bool {
    matches!(name, "awk" | "gawk" | "mawk" | "nawk")
}

/// An awk program is opaque when it can run commands (`system()`, `|` pipes to or from a
/// command, `getline` from one, loaded extensions) or is read from a file.
pub(super) fn awk(words: &[ShellWord], name: &str) -> Result<Unwrap, String> {
    let mut programs = Vec::new();
    let mut i = 1;
    while let Some(word) = words.get(i) {
        let text = literal_argument(word, name)?;
        i += 1;
        if text == "--" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (option, value) = match long.split_once('=') {
                Some((option, value)) => (option, Some(value)),
                None => (long, None),
            };
            match option {
                "file" | "include" | "load" | "exec" => {
                    return Err(format!("`{name} --{option}` runs a program from a file"));
                }
                "source" => {
                    let value = match value {
                        Some(value) => value.to_owned(),
                        None => next_literal(words, &mut i, name)?,
                    };
                    programs.push(value);
                }
                "field-separator" | "assign" => {
                    if value.is_none() {
                        i += 1;
                    }
                }
                _ if option.chars().all(|c| c.is_ascii_lowercase() || c == '-') => {
                    // gawk's other long options (--posix, --sandbox, --lint[=…], ...)
                    // change no command that runs; a value is always attached.
                }
                _ => return Err(format!("`{name}` option `--{option}` is not understood")),
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            // The first operand is the program text, unless one was given with -e.
            if programs.is_empty() {
                programs.push(text.to_owned());
            }
            break;
        };
        let Some(option) = cluster.chars().next() else {
            continue;
        };
        let attached = &cluster[option.len_utf8()..];
        match option {
            'f' | 'i' | 'l' | 'E' | 'W' => {
                return Err(format!(
                    "`{name} -{option}` runs a program from a file or option"
                ));
            }
            'e' => {
                let value = if attached.is_empty() {
                    next_literal(words, &mut i, name)?
                } else {
                    attached.to_owned()
                };
                programs.push(value);
            }
            'F' | 'v' => {
                if attached.is_empty() {
                    i += 1;
                }
            }
            // gawk's flags and options with an optional attached value.
            c if "bcCdDghLMnNoOpPrsStV".contains(c) => {}
            c => return Err(format!("`{name}` option `-{c}` is not understood")),
        }
    }
    for program in &programs {
        if let Some(why) = awk_runs_commands(program) {
            return Err(format!("the `{name}` program {why}"));
        }
    }
    Ok(Unwrap::Program)
}

fn next_literal(words: &[ShellWord], i: &mut usize, name: &str) -> Result<String, String> {
    let word = words
        .get(*i)
        .ok_or_else(|| format!("`{name}` is missing a program"))?;
    *i += 1;
    literal_argument(word, name).map(str::to_owned)
}

/// Why an awk program can run commands, if it can. `|` is taken for a pipe wherever it is
/// not `||`: a regular expression's alternation (`/a|b/`) asks too, which is safe.
fn awk_runs_commands(program: &str) -> Option<&'static str> {
    if program.contains("system") {
        return Some("calls system()");
    }
    if program.contains("getline") && program.contains('|') {
        return Some("reads a command's output with getline");
    }
    if program.contains('@') {
        return Some("loads an extension or a file (@load, @include)");
    }
    let single_pipe = program.split("||").any(|part| part.contains('|'));
    single_pipe.then_some("pipes to or from a command")
}

/// `git -c KEY=VALUE` settings that cannot run a program. Every other one asks: aliases
/// (`alias.x=!cmd`, or another subcommand under a harmless name), `core.sshCommand`,
/// `core.pager`, `core.editor`, `core.fsmonitor`, `core.hooksPath`, filters, `diff.external`,
/// credential helpers, `include.path`, ...
const HARMLESS_GIT_SETTINGS: &[&str] = &[
    "user.name",
    "user.email",
    "core.quotepath",
    "core.autocrlf",
    "core.filemode",
    "core.ignorecase",
    "init.defaultbranch",
    "safe.directory",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "commit.gpgsign",
    "tag.gpgsign",
    "merge.ff",
    "log.showsignature",
];
const HARMLESS_GIT_PREFIXES: &[&str] = &["color.", "advice.", "column."];

/// `git` subcommands and the arguments with which they run a command line given in the
/// arguments (none listed: always; `filter-branch` runs its filters).
const GIT_COMMAND_OPTIONS: &[(&str, &[&str])] = &[
    ("rebase", &["-x", "--exec"]),
    ("bisect", &["run"]),
    ("submodule", &["foreach"]),
    ("filter-branch", &[]),
    ("difftool", &["-x", "--extcmd"]),
    ("fetch", &["--upload-pack"]),
    ("pull", &["--upload-pack"]),
    ("clone", &["-u", "--upload-pack"]),
    ("ls-remote", &["--upload-pack"]),
    ("push", &["--receive-pack", "--exec"]),
    ("archive", &["--exec"]),
    ("send-email", &["--sendmail-cmd", "--smtp-server"]),
];

/// `git [global options] SUBCOMMAND ...` is the program itself, unless a global option
/// sets something that runs code, or the subcommand runs a command from its arguments.
pub(super) fn git(words: &[ShellWord]) -> Result<Unwrap, String> {
    let mut i = 1;
    while let Some(word) = words.get(i) {
        let text = literal_argument(word, "git")?;
        i += 1;
        let setting = match text {
            "-c" => Some(next_literal(words, &mut i, "git")?),
            "--config-env" => Some(next_literal(words, &mut i, "git")?),
            _ => text
                .strip_prefix("--config-env=")
                .map(str::to_owned)
                .or_else(|| {
                    text.strip_prefix("-c")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                }),
        };
        if let Some(setting) = setting {
            let key = setting
                .split('=')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            let harmless = HARMLESS_GIT_SETTINGS.contains(&key.as_str())
                || HARMLESS_GIT_PREFIXES.iter().any(|p| key.starts_with(p));
            if !harmless {
                return Err(format!(
                    "`git -c {key}=…` may run a command of its own (aliases, pagers, editors, \
                     hooks, filters and helpers do)"
                ));
            }
            continue;
        }
        if text == "--exec-path" || text.starts_with("--exec-path=") {
            if text == "--exec-path" {
                // Alone it prints the path; with a value it picks where subcommands are.
                if words.get(i).is_some_and(|w| !w.text.starts_with('-')) {
                    return Err("`git --exec-path DIR` runs git's commands from DIR".to_owned());
                }
                continue;
            }
            return Err("`git --exec-path=DIR` runs git's commands from DIR".to_owned());
        }
        if matches!(text, "-C" | "--git-dir" | "--work-tree" | "--namespace") {
            i += 1;
            continue;
        }
        if text.starts_with('-') {
            continue;
        }
        // The subcommand.
        let Some((_, options)) = GIT_COMMAND_OPTIONS.iter().find(|(sub, _)| *sub == text) else {
            break;
        };
        let rest = &words[i..];
        let runs = options.is_empty()
            || rest.iter().any(|w| {
                options.iter().any(|o| {
                    w.text == *o
                        || (o.starts_with("--") && w.text.starts_with(&format!("{o}=")))
                        || (o.len() == 2 && o.starts_with('-') && w.text.starts_with(o))
                })
            });
        if runs {
            return Err(format!("`git {text}` is given a command to run"));
        }
        if let Some(word) = rest.iter().find(|w| w.dynamic) {
            return Err(format!(
                "`git {text}` is given `{}`, only known at run time, which could add an option \
                 that runs a command",
                word.text
            ));
        }
        break;
    }
    Ok(Unwrap::Program)
}

/// GNU tar's long options that run a program, and the short ones (`-I`, `-F`).
const TAR_COMMAND_OPTIONS: &[&str] = &[
    "checkpoint-action",
    "to-command",
    "use-compress-program",
    "info-script",
    "new-volume-script",
    "rsh-command",
    "rmt-command",
];
const TAR_COMMAND_SHORT: &[char] = &['I', 'F'];

/// `tar` is the program itself, unless an option runs a program
/// (`--checkpoint-action=exec=`, `--to-command`, `--use-compress-program`/`-I`,
/// `--info-script`/`-F`, ...). getopt accepts abbreviations, so any prefix of those counts;
/// a word only known at run time could be one.
pub(super) fn tar(words: &[ShellWord]) -> Result<Unwrap, String> {
    for (at, word) in words.iter().enumerate().skip(1) {
        if word.dynamic {
            return Err(format!(
                "`tar` is given `{}`, only known at run time, which could add an option that \
                 runs a program",
                word.text
            ));
        }
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            let option = long.split('=').next().unwrap_or_default();
            // `--checkpoint` is an option of its own, not an abbreviation.
            let runs = option.len() >= 2
                && option != "checkpoint"
                && TAR_COMMAND_OPTIONS.iter().any(|o| o.starts_with(option));
            if runs {
                return Err(format!("`tar --{option}` runs a program"));
            }
            continue;
        }
        // Short clusters, and the first word in the old style without a dash (`xIf`).
        let cluster = match text.strip_prefix('-') {
            Some(cluster) => cluster,
            None if at == 1 => text,
            None => continue,
        };
        if let Some(c) = cluster.chars().find(|c| TAR_COMMAND_SHORT.contains(c)) {
            return Err(format!("`tar -{c}` runs a program"));
        }
    }
    Ok(Unwrap::Program)
}
