//! The `odyssey-sandbox` helper: the last step before a sandboxed command runs.
//!
//! bubblewrap builds the namespaces and the file system view; the helper, started inside
//! it, then narrows the process itself, in this order:
//!
//! 1. rlimits (open files, processes, CPU seconds, address space), hard and soft;
//! 2. with `--relay`, the egress relay is started (see `relay`);
//! 3. Landlock: read (and execute) beneath the `--ro` paths, everything beneath `--rw`,
//!    read/write of existing files beneath `--dev`, nothing anywhere else; TCP bind and
//!    connect denied when the network is off, and with a relay every TCP bind and every
//!    connect but to the relay's port; signals and abstract sockets scoped;
//! 4. seccomp: `EPERM` for the kernel interfaces a command has no business with (see
//!    [`seccomp`]), and for `socket(AF_INET/AF_INET6)` when the network is off (with a
//!    relay, for every such socket but an IPv4 stream);
//!
//! then it `execvp`s the command. Landlock has to come after bubblewrap, not before:
//! bubblewrap cannot set up its user namespace from inside a Landlock domain.
//!
//! # Command line
//!
//! ```text
//! odyssey-sandbox [OPTION]... -- PROGRAM [ARG]...
//!   --ro PATH            read and execute beneath PATH (repeatable)
//!   --rw PATH            full access beneath PATH (repeatable)
//!   --dev PATH           read/write existing files and device ioctls beneath PATH
//!   --no-network         deny TCP (Landlock) and AF_INET/AF_INET6 sockets (seccomp)
//!   --relay PORT SOCKET  start the egress relay on 127.0.0.1:PORT, forwarding to SOCKET;
//!                        TCP only to PORT, AF_INET stream sockets only
//!   --landlock-best-effort
//!                        run even when the kernel cannot enforce Landlock
//!   --nofile N  --nproc N  --cpu SECONDS  --as BYTES
//!                        rlimits
//!   --lifeline FD        kill the sandbox's processes once FD reads end of file
//! ```
//!
//! Paths that do not exist are skipped (they grant nothing). Exit status when the command
//! could not be started: 125 for a setup failure, 126 when the program cannot be executed,
//! 127 when it is not found, like `env` and `chroot`.

pub mod host;
mod landlock;
mod lifeline;
mod limits;
mod relay;
pub mod rlimits;
pub mod seccomp;
pub mod stage;

pub use limits::RlimitValues;
pub use relay::Relay;

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Exit status for a failure of the helper itself.
pub const EXIT_SETUP_FAILED: u8 = 125;
/// Exit status when the program exists but cannot be executed.
pub const EXIT_CANNOT_EXECUTE: u8 = 126;
/// Exit status when the program is not found.
pub const EXIT_NOT_FOUND: u8 = 127;

/// Whether a kernel without Landlock is acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LandlockRequirement {
    Required,
    BestEffort,
}

/// Everything the helper is told, in one value: the server builds it and renders it with
/// [`HelperArgs::to_args`]; the helper parses it back with [`HelperArgs::parse`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelperArgs {
    pub read_only: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
    pub devices: Vec<PathBuf>,
    pub network: bool,
    /// The egress relay a networked command reaches the outside through.
    pub relay: Option<Relay>,
    pub landlock: LandlockRequirement,
    pub limits: RlimitValues,
    /// A descriptor of the server's lifeline pipe: when it reads its end, the server is
    /// gone and the sandbox's processes are killed (see [`lifeline`]).
    pub lifeline: Option<i32>,
    /// The program and its arguments.
    pub command: Vec<OsString>,
}

/// Why the helper could not start the command.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("setting {limit}: {source}")]
    Rlimit {
        limit: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("landlock: {0}")]
    Landlock(String),
    #[error("seccomp: {0}")]
    Seccomp(String),
    #[error("staging the sandbox's folders: {0}")]
    Stage(String),
    #[error("watching the server's lifeline: {0}")]
    Lifeline(io::Error),
    #[error("egress relay: {0}")]
    Relay(String),
    #[error("cannot run {program}: {source}")]
    Exec {
        program: String,
        #[source]
        source: io::Error,
    },
}

impl HelperError {
    /// The exit status the helper ends with for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Exec { source, .. } if source.kind() == io::ErrorKind::NotFound => EXIT_NOT_FOUND,
            Self::Exec { .. } => EXIT_CANNOT_EXECUTE,
            _ => EXIT_SETUP_FAILED,
        }
    }
}

impl HelperArgs {
    /// The command line the helper parses back into `self`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        let mut push_paths = |flag: &str, paths: &[PathBuf]| {
            for path in paths {
                args.push(flag.into());
                args.push(path.clone().into_os_string());
            }
        };
        push_paths("--ro", &self.read_only);
        push_paths("--rw", &self.read_write);
        push_paths("--dev", &self.devices);
        if !self.network {
            args.push("--no-network".into());
        }
        if let Some(relay) = &self.relay {
            args.push("--relay".into());
            args.push(relay.port.to_string().into());
            args.push(relay.socket.clone().into_os_string());
        }
        if self.landlock == LandlockRequirement::BestEffort {
            args.push("--landlock-best-effort".into());
        }
        let limits = [
            ("--nofile", self.limits.open_files),
            ("--nproc", self.limits.processes),
            ("--cpu", self.limits.cpu_seconds),
            ("--as", self.limits.address_space_bytes),
        ];
        for (flag, value) in limits {
            if let Some(value) = value {
                args.push(flag.into());
                args.push(value.to_string().into());
            }
        }
        if let Some(fd) = self.lifeline {
            args.push("--lifeline".into());
            args.push(fd.to_string().into());
        }
        args.push("--".into());
        args.extend(self.command.iter().cloned());
        args
    }

    /// Parses the helper's command line (without the program name).
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, HelperError> {
        let mut parsed = Self {
            read_only: Vec::new(),
            read_write: Vec::new(),
            devices: Vec::new(),
            network: true,
            relay: None,
            landlock: LandlockRequirement::Required,
            limits: RlimitValues::default(),
            lifeline: None,
            command: Vec::new(),
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let flag = arg.to_str().unwrap_or_default();
            match flag {
                "--" => {
                    parsed.command = args.collect();
                    break;
                }
                "--ro" => parsed.read_only.push(value(flag, args.next())?.into()),
                "--rw" => parsed.read_write.push(value(flag, args.next())?.into()),
                "--dev" => parsed.devices.push(value(flag, args.next())?.into()),
                "--no-network" => parsed.network = false,
                "--relay" => {
                    let port = number(flag, args.next())?;
                    let port = u16::try_from(port).map_err(|_| {
                        HelperError::Usage(format!("`--relay` needs a port, got {port}"))
                    })?;
                    let socket = value(flag, args.next())?.into();
                    parsed.relay = Some(Relay { port, socket });
                }
                "--landlock-best-effort" => parsed.landlock = LandlockRequirement::BestEffort,
                "--nofile" => parsed.limits.open_files = Some(number(flag, args.next())?),
                "--nproc" => parsed.limits.processes = Some(number(flag, args.next())?),
                "--cpu" => parsed.limits.cpu_seconds = Some(number(flag, args.next())?),
                "--as" => parsed.limits.address_space_bytes = Some(number(flag, args.next())?),
                "--lifeline" => {
                    let fd = number(flag, args.next())?;
                    parsed.lifeline = Some(i32::try_from(fd).map_err(|_| {
                        HelperError::Usage(format!("`{flag}` needs a descriptor, got {fd}"))
                    })?);
                }
                _ => {
                    return Err(HelperError::Usage(format!(
                        "unknown option `{}`",
                        arg.to_string_lossy()
                    )));
                }
            }
        }
        if parsed.command.is_empty() {
            return Err(HelperError::Usage(
                "no command: expected `-- PROGRAM [ARG]...`".to_owned(),
            ));
        }
        Ok(parsed)
    }
}

fn value(flag: &str, next: Option<OsString>) -> Result<OsString, HelperError> {
    next.ok_or_else(|| HelperError::Usage(format!("`{flag}` needs a value")))
}

fn number(flag: &str, next: Option<OsString>) -> Result<u64, HelperError> {
    let text = value(flag, next)?;
    text.to_str().and_then(|t| t.parse().ok()).ok_or_else(|| {
        HelperError::Usage(format!(
            "`{flag}` needs a number, got `{}`",
            text.to_string_lossy()
        ))
    })
}

/// The helper's whole life: parse, restrict (or stage, see [`stage`]), exec. Only
/// returns on failure.
pub fn main(args: impl IntoIterator<Item = OsString>) -> HelperError {
    let mut args = args.into_iter().peekable();
    if args.peek().is_some_and(|first| first == stage::SUBCOMMAND) {
        return match stage::StageArgs::parse(args.skip(1)) {
            Ok(parsed) => stage::stage_and_exec(&parsed),
            Err(e) => e,
        };
    }
    match HelperArgs::parse(args) {
        Ok(parsed) => restrict_and_exec(&parsed),
        Err(e) => e,
    }
}

/// Applies rlimits, Landlock and seccomp to this process, then replaces it with the
/// command. Only returns on failure.
pub fn restrict_and_exec(args: &HelperArgs) -> HelperError {
    if let Err(e) = rlimits::apply(&args.limits) {
        return e;
    }
    if let Some(relay) = &args.relay
        && let Err(e) = relay::start(relay, args.landlock)
    {
        return e;
    }
    if let Err(e) = landlock::apply(args) {
        return e;
    }
    if let Err(e) = seccomp::apply(seccomp::Sockets::of(args)) {
        return e;
    }
    if let Some(fd) = args.lifeline
        && let Err(e) = lifeline::watch(fd)
    {
        return e;
    }
    let Some((program, rest)) = args.command.split_first() else {
        return HelperError::Usage("no command".to_owned());
    };
    // `Command::exec` searches PATH like execvp and restores SIGPIPE to its default, which
    // the Rust runtime of this helper set to "ignore" (an ignored disposition survives exec).
    let source = Command::new(program).args(rest).exec();
    HelperError::Exec {
        program: display(program),
        source,
    }
}

fn display(text: &OsStr) -> String {
    text.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_round_trip() {
        let args = HelperArgs {
            read_only: vec!["/usr".into(), "/etc".into()],
            read_write: vec!["/cell/data".into()],
            devices: vec!["/dev".into()],
            network: false,
            relay: Some(Relay {
                port: 3128,
                socket: "/run/odyssey-egress/proxy.sock".into(),
            }),
            landlock: LandlockRequirement::BestEffort,
            limits: RlimitValues {
                open_files: Some(64),
                processes: Some(32),
                cpu_seconds: None,
                address_space_bytes: Some(1 << 30),
            },
            lifeline: Some(9),
            command: os(&["/bin/bash", "-c", "echo --rw"]),
        };
        let rendered = args.to_args();
        assert_eq!(
            rendered,
            os(&[
                "--ro",
                "/usr",
                "--ro",
                "/etc",
                "--rw",
                "/cell/data",
                "--dev",
                "/dev",
                "--no-network",
                "--relay",
                "3128",
                "/run/odyssey-egress/proxy.sock",
                "--landlock-best-effort",
                "--nofile",
                "64",
                "--nproc",
                "32",
                "--as",
                "1073741824",
                "--lifeline",
                "9",
                "--",
                "/bin/bash",
                "-c",
                "echo --rw",
            ])
        );
        assert_eq!(HelperArgs::parse(rendered).expect("parses"), args);
    }

    #[test]
    fn defaults_are_network_on_and_landlock_required() {
        let parsed = HelperArgs::parse(os(&["--", "true"])).expect("parses");
        assert!(parsed.network);
        assert_eq!(parsed.landlock, LandlockRequirement::Required);
        assert_eq!(parsed.limits, RlimitValues::default());
    }

    #[test]
    fn bad_command_lines_are_usage_errors() {
        for bad in [
            os(&[]),
            os(&["--ro"]),
            os(&["--nproc", "many", "--", "true"]),
            os(&["--frobnicate", "--", "true"]),
            os(&["--ro", "/usr", "--"]),
            os(&["--relay", "70000", "/s", "--", "true"]),
            os(&["--relay", "3128", "--", "true"]),
        ] {
            let err = HelperArgs::parse(bad.clone()).expect_err("refused");
            assert!(matches!(err, HelperError::Usage(_)), "{bad:?}: {err}");
            assert_eq!(err.exit_code(), EXIT_SETUP_FAILED);
        }
    }

    #[test]
    fn exec_failures_map_to_shell_exit_codes() {
        let not_found = HelperError::Exec {
            program: "x".into(),
            source: io::Error::from(io::ErrorKind::NotFound),
        };
        assert_eq!(not_found.exit_code(), EXIT_NOT_FOUND);
        let denied = HelperError::Exec {
            program: "x".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert_eq!(denied.exit_code(), EXIT_CANNOT_EXECUTE);
    }
}
