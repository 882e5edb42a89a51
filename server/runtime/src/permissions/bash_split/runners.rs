//! Runners: programs that start a command given after options of their own, to set its
//! CPUs (`taskset`), I/O or CPU scheduling (`ionice`, `chrt`), credentials (`setpriv`),
//! limits (`prlimit`), a terminal (`script -c`), a lock (`flock`), a root (`chroot`), or
//! to load it (`ld.so`). Each is unwrapped like `timeout`, so the rules judge the command
//! it runs: `taskset 1 rm x` is `rm x` to a deny rule. A form that runs no command (acting
//! on a process id, printing) is the program itself; an option that injects code (the
//! loader's `--preload`) makes the command opaque.

use super::ShellWord;
use super::wrappers::{Options, Unwrap, literal_argument, runs, skip_options};

/// Whether an option was given among `words[1..end]` (the options `skip_options` skipped),
/// as `-s` (alone or in a cluster; `None`: it has no short form) or `--long`.
fn option_given(
    words: &[ShellWord],
    end: usize,
    options: &Options,
    short: Option<char>,
    long: &str,
) -> bool {
    option_at(words, end, options, short, long).is_some()
}

/// Where an option was given among `words[1..end]`, and its value: the rest of its cluster
/// (`-cCMD`), the text after `=` (`--command=CMD`) or the next word.
fn option_at(
    words: &[ShellWord],
    end: usize,
    options: &Options,
    short: Option<char>,
    long: &str,
) -> Option<Option<ShellWord>> {
    let end = end.min(words.len());
    let mut i = 1;
    while i < end {
        let word = &words[i];
        let text = word.text.as_str();
        i += 1;
        if let Some(given) = text.strip_prefix("--") {
            let (name, value) = match given.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (given, None),
            };
            let takes_value = options.long_valued.contains(&name);
            let next = (takes_value && value.is_none() && !options.long_flags.contains(&name))
                .then(|| words.get(i).cloned())
                .flatten();
            if next.is_some() {
                i += 1;
            }
            if name == long {
                let attached = value.map(|v| ShellWord {
                    text: v.to_owned(),
                    ..word.clone()
                });
                return Some(attached.or(next));
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            continue;
        };
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            let valued = options.valued.contains(c);
            if Some(c) == short {
                let value = match (valued, rest.is_empty()) {
                    (true, true) => words.get(i).cloned(),
                    (true, false) => Some(ShellWord {
                        text: rest.to_owned(),
                        ..word.clone()
                    }),
                    (false, _) => None,
                };
                return Some(value);
            }
            if valued {
                if rest.is_empty() {
                    i += 1;
                }
                break;
            }
            if options.attached.contains(c) {
                break;
            }
        }
    }
    None
}

/// `taskset [options] MASK command`; `-p` acts on a running process instead.
pub(super) fn taskset(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "acp",
        long_flags: &["all-tasks", "cpu-list", "pid"],
        ..Options::default()
    };
    let start = skip_options(words, &options, "taskset")?;
    if option_given(words, start, &options, Some('p'), "pid") {
        return Ok(Unwrap::Program);
    }
    if let Some(mask) = words.get(start) {
        literal_argument(mask, "taskset")?;
    }
    Ok(runs(words.get(start + 1..), Vec::new(), false))
}

/// `ionice [-c CLASS] [-n LEVEL] [-t] command`; `-p`, `-P`, `-u` act on running processes.
pub(super) fn ionice(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "t",
        valued: "cnpPu",
        long_flags: &["ignore"],
        long_valued: &["class", "classdata", "pid", "pgid", "uid"],
        ..Options::default()
    };
    let start = skip_options(words, &options, "ionice")?;
    let on_processes = [('p', "pid"), ('P', "pgid"), ('u', "uid")]
        .iter()
        .any(|(short, long)| option_given(words, start, &options, Some(*short), long));
    if on_processes {
        return Ok(Unwrap::Program);
    }
    Ok(runs(words.get(start..), Vec::new(), false))
}

/// `chrt [options] [PRIORITY] command`; `-p` acts on a running process, `-m` prints.
pub(super) fn chrt(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "abdfimoprRv",
        valued: "TPD",
        long_flags: &[
            "all-tasks",
            "batch",
            "deadline",
            "fifo",
            "idle",
            "max",
            "other",
            "pid",
            "rr",
            "reset-on-fork",
            "verbose",
        ],
        long_valued: &["sched-runtime", "sched-period", "sched-deadline"],
        ..Options::default()
    };
    let mut start = skip_options(words, &options, "chrt")?;
    if option_given(words, start, &options, Some('p'), "pid")
        || option_given(words, start, &options, Some('m'), "max")
    {
        return Ok(Unwrap::Program);
    }
    // The priority may be left out for the policies that have none.
    if let Some(priority) = words.get(start) {
        let text = literal_argument(priority, "chrt")?;
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            start += 1;
        }
    }
    Ok(runs(words.get(start..), Vec::new(), false))
}

/// `setpriv [options] command`; `-d` prints the current state.
pub(super) fn setpriv(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "d",
        long_flags: &[
            "dump",
            "clear-groups",
            "keep-groups",
            "init-groups",
            "nnp",
            "no-new-privs",
            "reset-env",
        ],
        long_valued: &[
            "groups",
            "inh-caps",
            "ambient-caps",
            "bounding-set",
            "ruid",
            "euid",
            "rgid",
            "egid",
            "reuid",
            "regid",
            "securebits",
            "pdeathsig",
            "selinux-label",
            "apparmor-profile",
            "landlock-access",
            "landlock-rule",
            "seccomp-filter",
        ],
        ..Options::default()
    };
    let start = skip_options(words, &options, "setpriv")?;
    if option_given(words, start, &options, Some('d'), "dump") {
        return Ok(Unwrap::Program);
    }
    Ok(runs(words.get(start..), Vec::new(), false))
}

/// `prlimit [--RESOURCE[=LIMITS]...] command`; `-p PID` acts on a running process. The
/// resource options take an optional value, attached (`-n512`, `--nofile=512`).
pub(super) fn prlimit(words: &[ShellWord]) -> Result<Unwrap, String> {
    const RESOURCES_AND_FLAGS: &[&str] = &[
        "core",
        "data",
        "nice",
        "fsize",
        "sigpending",
        "memlock",
        "rss",
        "nofile",
        "msgqueue",
        "rtprio",
        "stack",
        "cpu",
        "nproc",
        "as",
        "locks",
        "rttime",
        "noheadings",
        "raw",
        "verbose",
    ];
    const RESOURCES_AND_VALUED: &[&str] = &[
        "core",
        "data",
        "nice",
        "fsize",
        "sigpending",
        "memlock",
        "rss",
        "nofile",
        "msgqueue",
        "rtprio",
        "stack",
        "cpu",
        "nproc",
        "as",
        "locks",
        "rttime",
        "output",
        "pid",
    ];
    let options = Options {
        valued: "op",
        attached: "cdefilmnqrstuvxy",
        long_flags: RESOURCES_AND_FLAGS,
        long_valued: RESOURCES_AND_VALUED,
        ..Options::default()
    };
    let start = skip_options(words, &options, "prlimit")?;
    if option_given(words, start, &options, Some('p'), "pid") {
        return Ok(Unwrap::Program);
    }
    Ok(runs(words.get(start..), Vec::new(), false))
}

/// `script -c COMMAND [file]` runs a command line in a new terminal; without `-c` it
/// starts the user's shell, the program itself.
pub(super) fn script(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "aefqhV",
        valued: "cEIOBTmo",
        attached: "t",
        long_flags: &[
            "append", "return", "flush", "quiet", "timing", "help", "version",
        ],
        long_valued: &[
            "command",
            "echo",
            "log-in",
            "log-out",
            "log-io",
            "log-timing",
            "logging-format",
            "output-limit",
            "timing",
        ],
    };
    let start = skip_options(words, &options, "script")?;
    match option_at(words, start, &options, Some('c'), "command") {
        Some(Some(command)) => Ok(Unwrap::Script(command)),
        Some(None) => Err("`script -c` names no command".to_owned()),
        None => Ok(Unwrap::Program),
    }
}

/// `flock [options] FILE command` or `flock [options] FILE -c COMMAND`; `flock FD` (a
/// descriptor of the calling shell) runs nothing.
pub(super) fn flock(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        flags: "sxenouF",
        valued: "wE",
        long_flags: &[
            "shared",
            "exclusive",
            "unlock",
            "nonblock",
            "nb",
            "close",
            "no-fork",
            "verbose",
        ],
        long_valued: &["wait", "timeout", "conflict-exit-code"],
        ..Options::default()
    };
    let start = skip_options(words, &options, "flock")?;
    if let Some(file) = words.get(start) {
        literal_argument(file, "flock")?;
    }
    let after = start + 1;
    match words.get(after).map(|w| w.text.as_str()) {
        Some("-c" | "--command") => match words.get(after + 1) {
            Some(command) => Ok(Unwrap::Script(command.clone())),
            None => Err("`flock -c` names no command".to_owned()),
        },
        _ => Ok(runs(words.get(after..), Vec::new(), false)),
    }
}

/// `chroot [options] NEWROOT [command]`: the command runs under another root (a shell when
/// none is given, the program itself).
pub(super) fn chroot(words: &[ShellWord]) -> Result<Unwrap, String> {
    let options = Options {
        long_flags: &["skip-chdir"],
        long_valued: &["groups", "userspec"],
        ..Options::default()
    };
    let start = skip_options(words, &options, "chroot")?;
    if let Some(root) = words.get(start) {
        literal_argument(root, "chroot")?;
    }
    Ok(runs(words.get(start + 1..), Vec::new(), false))
}

/// Whether `name` is the dynamic loader (`ld.so`, `ld-linux-x86-64.so.2`, `ld64.so.1`,
/// `ld-musl-x86_64.so.1`), which runs the program named in its arguments.
pub(super) fn is_dynamic_loader(name: &str) -> bool {
    name == "ld.so"
        || ((name.starts_with("ld-") || name.starts_with("ld64.")) && name.contains(".so"))
}

/// `ld.so [options] PROGRAM [arguments]`. `--preload`, `--audit` and `--library-path` load
/// libraries of the caller's choosing into the program, as `LD_PRELOAD` would: opaque.
pub(super) fn loader(words: &[ShellWord], name: &str) -> Result<Unwrap, String> {
    let options = Options {
        long_flags: &[
            "list",
            "verify",
            "inhibit-cache",
            "list-tunables",
            "list-diagnostics",
            "help",
            "version",
        ],
        long_valued: &[
            "library-path",
            "inhibit-rpath",
            "audit",
            "preload",
            "argv0",
            "glibc-hwcaps-prefix",
            "glibc-hwcaps-mask",
        ],
        ..Options::default()
    };
    let start = skip_options(words, &options, name)?;
    for injects in ["preload", "audit", "library-path"] {
        if option_given(words, start, &options, None, injects) {
            return Err(format!(
                "`{name} --{injects}` loads libraries of its own choosing into the program"
            ));
        }
    }
    if option_given(words, start, &options, None, "list")
        || option_given(words, start, &options, None, "verify")
    {
        return Ok(Unwrap::Program);
    }
    Ok(runs(words.get(start..), Vec::new(), false))
}
