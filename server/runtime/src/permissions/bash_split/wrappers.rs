//! Commands that run other commands. `timeout 5 curl x` runs `curl`; `sh -c 'ls; rm x'`
//! runs a whole command line; `find -exec rm {} +` runs `rm` besides itself. More runners
//! are in [`runners`] (`taskset`, `chrt`, `flock`, ...); programs that run code written in
//! their arguments (`awk`, `git -c`, `tar --to-command`) in [`inline_code`]. The rules must
//! judge what finally runs, so each wrapper's options are parsed just far enough to find
//! it. An option a wrapper is not known to take, or an argument only known at run time
//! where the command is looked for, makes the command opaque rather than guessed at.

use super::{Assignment, ShellWord, inline_code, runners};

/// What a command does with the command inside it.
pub(super) enum Unwrap {
    /// Not a wrapper (or a wrapper with nothing to run): the words are the program.
    Program,
    /// Runs `command` (possibly with extra environment assignments). `open_ended`: the
    /// wrapper appends arguments at run time (`xargs`).
    Runs {
        assignments: Vec<Assignment>,
        command: Vec<ShellWord>,
        open_ended: bool,
    },
    /// Runs the command line held in this word (`sh -c`, `eval`, `trap`).
    Script(ShellWord),
    /// Is a program itself, and also runs these commands (`find -exec`); the flag marks
    /// commands whose arguments grow at run time.
    AlsoRuns(Vec<(Vec<ShellWord>, bool)>),
    /// A wrapper used in a way this module does not interpret.
    Opaque(String),
}

/// The options a wrapper takes, enough to skip them and find its operands.
#[derive(Default)]
pub(super) struct Options {
    /// Short options without a value.
    pub flags: &'static str,
    /// Short options whose value follows (attached or as the next word).
    pub valued: &'static str,
    /// Short options whose value can only be attached (`xargs -i`, `-e`, `-l`).
    pub attached: &'static str,
    /// Long options without a value. One that is also in `long_valued` takes an optional
    /// value, which must then be attached (`--nofile` or `--nofile=64`).
    pub long_flags: &'static [&'static str],
    pub long_valued: &'static [&'static str],
}

pub(super) fn unwrap(words: &[ShellWord]) -> Unwrap {
    let Some(program) = words.first().and_then(ShellWord::as_literal) else {
        return Unwrap::Program;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    let result = match name {
        "env" => env(words),
        "nohup" | "builtin" => runs_after(words, &Options::default(), name),
        "busybox" => Ok(runs(words.get(1..), Vec::new(), false)),
        "command" => command(words),
        "exec" => exec(words),
        "nice" => runs_after(
            words,
            &Options {
                flags: "0123456789",
                valued: "n",
                long_valued: &["adjustment"],
                ..Options::default()
            },
            name,
        ),
        "timeout" => timeout(words),
        "time" => runs_after(
            words,
            &Options {
                flags: "pvaq",
                valued: "f",
                long_flags: &["portability", "verbose", "append", "quiet"],
                long_valued: &["format"],
                ..Options::default()
            },
            name,
        ),
        "sudo" => sudo(words),
        "doas" => runs_after(
            words,
            &Options {
                flags: "n",
                valued: "uC",
                ..Options::default()
            },
            name,
        ),
        "xargs" => xargs(words),
        "stdbuf" => runs_after(
            words,
            &Options {
                valued: "ioe",
                long_valued: &["input", "output", "error"],
                ..Options::default()
            },
            name,
        ),
        "setsid" => runs_after(
            words,
            &Options {
                flags: "cfw",
                long_flags: &["ctty", "fork", "wait"],
                ..Options::default()
            },
            name,
        ),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "rbash" => shell(words, name),
        "eval" => eval(words),
        "trap" => trap(words),
        "find" => find(words),
        "taskset" => runners::taskset(words),
        "ionice" => runners::ionice(words),
        "chrt" => runners::chrt(words),
        "setpriv" => runners::setpriv(words),
        "prlimit" => runners::prlimit(words),
        "script" => runners::script(words),
        "flock" => runners::flock(words),
        "chroot" => runners::chroot(words),
        name if runners::is_dynamic_loader(name) => runners::loader(words, name),
        name if inline_code::is_awk(name) => inline_code::awk(words, name),
        "git" => inline_code::git(words),
        "tar" => inline_code::tar(words),
        _ => Ok(Unwrap::Program),
    };
    result.unwrap_or_else(Unwrap::Opaque)
}

pub(super) fn runs(
    command: Option<&[ShellWord]>,
    assignments: Vec<Assignment>,
    open_ended: bool,
) -> Unwrap {
    match command {
        Some(command) if !command.is_empty() => Unwrap::Runs {
            assignments,
            command: command.to_vec(),
            open_ended,
        },
        _ => Unwrap::Program,
    }
}

/// The common shape: options, then the command.
pub(super) fn runs_after(
    words: &[ShellWord],
    options: &Options,
    name: &str,
) -> Result<Unwrap, String> {
    let start = skip_options(words, options, name)?;
    Ok(runs(words.get(start..), Vec::new(), false))
}

/// Skips the options after `words[0]` and returns the index of the first operand (past
/// the end when an option's value is missing).
pub(super) fn skip_options(
    words: &[ShellWord],
    options: &Options,
    name: &str,
) -> Result<usize, String> {
    let mut i = 1;
    while let Some(word) = words.get(i) {
        let text = literal_argument(word, name)?;
        if text == "--" {
            return Ok(i + 1);
        }
        if let Some(long) = text.strip_prefix("--") {
            let (option, has_value) = match long.split_once('=') {
                Some((option, _)) => (option, true),
                None => (long, false),
            };
            if !has_value && options.long_flags.contains(&option) {
                i += 1;
            } else if options.long_valued.contains(&option) {
                i += if has_value { 1 } else { 2 };
            } else {
                return Err(format!("`{name}` option `--{option}` is not understood"));
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            return Ok(i);
        };
        let mut takes_next = false;
        for (at, c) in cluster.char_indices() {
            if options.flags.contains(c) {
                continue;
            }
            if options.attached.contains(c) {
                break;
            }
            if options.valued.contains(c) {
                takes_next = at + c.len_utf8() == cluster.len();
                break;
            }
            return Err(format!("`{name}` option `-{c}` is not understood"));
        }
        i += if takes_next { 2 } else { 1 };
    }
    Ok(i)
}

/// A wrapper's argument must be known before it runs: `sudo $X rm` could be anything.
pub(super) fn literal_argument<'a>(word: &'a ShellWord, name: &str) -> Result<&'a str, String> {
    word.as_literal().ok_or_else(|| {
        format!(
            "`{name}` is given `{}`, only known at run time, where its options or command are",
            word.text
        )
    })
}

/// `NAME=value` words (as `env` and `sudo` take them) from `start`; returns them and the
/// index of the first word that is not one.
fn assignments_from(words: &[ShellWord], start: usize) -> (Vec<Assignment>, usize) {
    let mut assignments = Vec::new();
    let mut i = start;
    while let Some(word) = words.get(i) {
        let Some((name, value)) = word.text.split_once('=') else {
            break;
        };
        if !is_variable_name(name) {
            break;
        }
        assignments.push(Assignment {
            name: name.to_owned(),
            value: ShellWord {
                text: value.to_owned(),
                dynamic: word.dynamic,
                carries_code: word.carries_code,
            },
        });
        i += 1;
    }
    (assignments, i)
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn env(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "i0v",
        valued: "uC",
        long_flags: &["ignore-environment", "null", "debug"],
        long_valued: &["unset", "chdir"],
        ..Options::default()
    };
    let start = skip_options(words, &options, "env")?;
    let (assignments, start) = assignments_from(words, start);
    Ok(match words.get(start..) {
        Some(command) if !command.is_empty() => runs(Some(command), assignments, false),
        // `env X=1` with no command prints the environment; still record the assignments.
        _ if !assignments.is_empty() => Unwrap::Runs {
            assignments,
            command: vec![ShellWord::literal("env")],
            open_ended: false,
        },
        _ => Unwrap::Program,
    })
}

/// `command -v x` only looks `x` up; `command x` runs it.
fn command(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "pvV",
        ..Options::default()
    };
    let start = skip_options(words, &options, "command")?;
    let options_given = words.get(1..start.min(words.len())).unwrap_or_default();
    let looks_up = options_given
        .iter()
        .any(|w| w.text.starts_with('-') && w.text != "--" && w.text.contains(['v', 'V']));
    if looks_up {
        return Ok(Unwrap::Program);
    }
    Ok(runs(words.get(start..), Vec::new(), false))
}

/// `exec cmd` replaces the shell with `cmd`; a bare `exec` only applies redirections.
fn exec(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "cl",
        valued: "a",
        ..Options::default()
    };
    let start = skip_options(words, &options, "exec")?;
    Ok(match words.get(start..) {
        Some(command) if !command.is_empty() => runs(Some(command), Vec::new(), false),
        _ => Unwrap::Runs {
            assignments: Vec::new(),
            command: Vec::new(),
            open_ended: false,
        },
    })
}

/// `timeout [options] DURATION command`.
fn timeout(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "v",
        valued: "ks",
        long_flags: &["preserve-status", "foreground", "verbose"],
        long_valued: &["kill-after", "signal"],
        ..Options::default()
    };
    let start = skip_options(words, &options, "timeout")?;
    if let Some(duration) = words.get(start) {
        literal_argument(duration, "timeout")?;
    }
    Ok(runs(words.get(start + 1..), Vec::new(), false))
}

/// `sudo [options] [NAME=value...] command`. Shell forms (`-s`, `-i`), editing (`-e`) and
/// listing are not unwrapped: they are reported as options not understood.
fn sudo(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "AbEHknPS",
        valued: "ugCDprtTU",
        long_flags: &[
            "preserve-env",
            "non-interactive",
            "askpass",
            "background",
            "set-home",
            "reset-timestamp",
            "preserve-groups",
            "stdin",
        ],
        long_valued: &[
            "user",
            "group",
            "close-from",
            "chdir",
            "prompt",
            "role",
            "type",
            "command-timeout",
            "other-user",
            "preserve-env",
        ],
        ..Options::default()
    };
    let start = skip_options(words, &options, "sudo")?;
    let (assignments, start) = assignments_from(words, start);
    Ok(runs(words.get(start..), assignments, false))
}

/// `xargs [options] [command [initial-arguments]]`: runs the command with arguments read
/// from its input (`echo` when no command is given).
fn xargs(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "0rtpxo",
        valued: "adEILnPs",
        attached: "eil",
        long_flags: &[
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
            "replace",
            "eof",
            "max-lines",
        ],
        long_valued: &[
            "arg-file",
            "delimiter",
            "eof",
            "replace",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
    };
    let start = skip_options(words, &options, "xargs")?;
    Ok(runs(words.get(start..), Vec::new(), true))
}

/// `sh -c STRING` runs a command line; `sh FILE` and `sh` reading its input are the shell
/// program itself. Start-up files (`-i`, `-l`, `--rcfile`) are not unwrapped.
fn shell(words: &[ShellWord], name: &str) -> Result<Unwrap, String> {
    const FLAGS: &str = "abefhkmnprstuvxBCEHPT";
    let mut wants_command = false;
    let mut i = 1;
    while let Some(word) = words.get(i) {
        let text = literal_argument(word, name)?;
        if text == "--" || text == "-" {
            i += 1;
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            match long {
                "noprofile" | "norc" | "posix" | "noediting" | "restricted" | "verbose" => {
                    i += 1;
                    continue;
                }
                _ => return Err(format!("`{name}` option `--{long}` is not understood")),
            }
        }
        let Some(cluster) = text
            .strip_prefix('-')
            .or_else(|| text.strip_prefix('+'))
            .filter(|c| !c.is_empty())
        else {
            break;
        };
        let mut takes_next = false;
        for c in cluster.chars() {
            match c {
                'c' => wants_command = true,
                'o' | 'O' => takes_next = true,
                c if FLAGS.contains(c) => {}
                c => return Err(format!("`{name}` option `-{c}` is not understood")),
            }
        }
        i += if takes_next { 2 } else { 1 };
    }
    if !wants_command {
        return Ok(Unwrap::Program);
    }
    match words.get(i) {
        Some(script) => Ok(Unwrap::Script(script.clone())),
        None => Ok(Unwrap::Program),
    }
}

/// `eval ARGS` joins its arguments with spaces and runs the result as a command line.
fn eval(words: &[ShellWord]) -> Result<Unwrap, String> {
    let start = match words.get(1).map(|w| w.text.as_str()) {
        Some("--") => 2,
        _ => 1,
    };
    let Some(args) = words.get(start..).filter(|a| !a.is_empty()) else {
        return Ok(Unwrap::Program);
    };
    let dynamic = args.iter().any(|w| w.dynamic);
    let text = args
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Unwrap::Script(ShellWord {
        text,
        dynamic,
        carries_code: false,
    }))
}

/// `trap ACTION SIGNAL...` runs ACTION later; `trap -p`, `trap -l`, `trap SIGNAL` and
/// `trap - SIGNAL` set nothing to run.
fn trap(words: &[ShellWord]) -> Result<Unwrap, String> {
    let mut start = 1;
    match words.get(1).map(|w| w.text.as_str()) {
        Some("-p" | "-l" | "-lp" | "-pl") => return Ok(Unwrap::Program),
        Some("--") => start = 2,
        _ => {}
    }
    match words.get(start..) {
        Some([action, _, ..]) if action.text != "-" => Ok(Unwrap::Script(action.clone())),
        _ => Ok(Unwrap::Program),
    }
}

/// `find … -exec CMD … ;` (also `-execdir`, `-ok`, `-okdir`, and `+` terminated): `find`
/// runs, and so does each CMD. An argument only known at run time could add an `-exec`.
/// `-delete` and the actions that write files (`-fprint`, `-fprintf`, `-fls`) do what `rm`
/// and a redirection would, out of the rules' sight: opaque.
fn find(words: &[ShellWord]) -> Result<Unwrap, String> {
    if let Some(word) = words.iter().skip(1).find(|w| w.dynamic) {
        return Err(format!(
            "`find` is given `{}`, only known at run time, which could add an -exec",
            word.text
        ));
    }
    if let Some(word) = words.iter().skip(1).find(|w| {
        matches!(
            w.text.as_str(),
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls"
        )
    }) {
        return Err(format!("`find {}` deletes or writes files", word.text));
    }
    let mut inner = Vec::new();
    let mut i = 1;
    while let Some(word) = words.get(i) {
        i += 1;
        if !matches!(word.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            continue;
        }
        let end = words[i..]
            .iter()
            .position(|w| w.text == ";" || w.text == "+")
            .map(|p| p + i)
            .ok_or_else(|| format!("`find {}` has no terminating `;` or `+`", word.text))?;
        if end == i {
            return Err(format!("`find {}` names no command", word.text));
        }
        let open_ended = words[end].text == "+";
        // `{}` stands for the file names found.
        let command = words[i..end]
            .iter()
            .map(|w| ShellWord {
                dynamic: w.dynamic || w.text.contains("{}"),
                ..w.clone()
            })
            .collect();
        inner.push((command, open_ended));
        i = end + 1;
    }
    Ok(if inner.is_empty() {
        Unwrap::Program
    } else {
        Unwrap::AlsoRuns(inner)
    })
}
