//! `odyssey-sandbox stage`: how a server running as root hands a session's folders to
//! bubblewrap, which runs as the unprivileged sandbox user.
//!
//! bubblewrap resolves every bind source by path, as the user it runs as, before it
//! builds the sandbox; bubblewrap 0.8 (Debian 12) has no way to take a folder as an open
//! descriptor. The server's home is private (0700, often under `/root`), so the sandbox
//! user could not even reach the cell. The server therefore starts this helper as root,
//! which, in a mount namespace of its own (invisible to the host, receiving nothing back
//! into it):
//!
//! 1. opens each source by its real path, refusing any symbolic link on the way, so a
//!    path changed since the server checked it names nothing instead of something else;
//! 2. mounts a fresh tmpfs over `/dev/shm` (bubblewrap builds its own `/dev`, so the
//!    host's is never needed) and bind-mounts each source, through its descriptor, at
//!    `/dev/shm/<n>`;
//! 3. drops to the sandbox user (no supplementary groups) for good and execs bubblewrap,
//!    whose arguments name the staged places.
//!
//! The sandboxed process still sees the cell at `/workspace`, `/app`, ...; only
//! bubblewrap sees the staging.
//!
//! ```text
//! odyssey-sandbox stage --uid UID --gid GID [--source PATH]... -- BWRAP [ARG]...
//! ```

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::process::{Gid, Signal, Uid};
use rustix::thread::UnshareFlags;

use super::HelperError;

/// Where the staged sources appear to bubblewrap.
pub const STAGE_DIR: &str = "/dev/shm";
/// The subcommand's name.
pub const SUBCOMMAND: &str = "stage";

/// The staged place of source number `index`.
pub fn staged_path(index: usize) -> PathBuf {
    Path::new(STAGE_DIR).join(index.to_string())
}

/// What the server tells the staging helper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageArgs {
    pub uid: u32,
    pub gid: u32,
    /// Host paths, real (no symbolic link anywhere in them), staged in this order.
    pub sources: Vec<PathBuf>,
    /// bubblewrap and its arguments.
    pub command: Vec<OsString>,
}

impl StageArgs {
    /// The command line (after the program name) that [`StageArgs::parse`] reads back.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            SUBCOMMAND.into(),
            "--uid".into(),
            self.uid.to_string().into(),
            "--gid".into(),
            self.gid.to_string().into(),
        ];
        for source in &self.sources {
            args.push("--source".into());
            args.push(source.clone().into_os_string());
        }
        args.push("--".into());
        args.extend(self.command.iter().cloned());
        args
    }

    /// Parses the arguments following the subcommand's name.
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Self, HelperError> {
        let mut uid = None;
        let mut gid = None;
        let mut sources = Vec::new();
        let mut command = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.to_str().unwrap_or_default() {
                "--" => {
                    command = args.collect();
                    break;
                }
                "--uid" => uid = Some(super::number("--uid", args.next())?),
                "--gid" => gid = Some(super::number("--gid", args.next())?),
                "--source" => sources.push(PathBuf::from(super::value("--source", args.next())?)),
                _ => {
                    return Err(HelperError::Usage(format!(
                        "unknown option `{}`",
                        arg.to_string_lossy()
                    )));
                }
            }
        }
        let need = |value: Option<u64>, flag: &str| {
            value
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| HelperError::Usage(format!("`{flag}` is required")))
        };
        let (uid, gid) = (need(uid, "--uid")?, need(gid, "--gid")?);
        if uid == 0 || gid == 0 {
            return Err(HelperError::Usage(
                "the sandbox user may not be root".to_owned(),
            ));
        }
        if command.is_empty() {
            return Err(HelperError::Usage(
                "no command: expected `-- BWRAP [ARG]...`".to_owned(),
            ));
        }
        Ok(Self {
            uid,
            gid,
            sources,
            command,
        })
    }
}

/// Stages, drops root and execs the command. Only returns on failure.
pub fn stage_and_exec(args: &StageArgs) -> HelperError {
    let server = rustix::process::getppid();
    if let Err(e) = stage(&args.sources) {
        return e;
    }
    if let Err(e) = drop_to(args.uid, args.gid) {
        return HelperError::Stage(format!("dropping to uid {}: {e}", args.uid));
    }
    // Changing credentials cleared the parent-death signal the server set: set it again,
    // so bubblewrap (and with it the sandbox) dies with the server, SIGKILL included.
    if let Err(e) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
        return HelperError::Stage(format!("tying its life to the server's: {e}"));
    }
    if rustix::process::getppid() != server {
        return HelperError::Stage("the server exited while the sandbox was staged".to_owned());
    }
    let Some((program, rest)) = args.command.split_first() else {
        return HelperError::Usage("no command".to_owned());
    };
    let source = Command::new(program).args(rest).exec();
    HelperError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

fn stage(sources: &[PathBuf]) -> Result<(), HelperError> {
    let fail = |what: String, e: io::Error| HelperError::Stage(format!("{what}: {e}"));
    // SAFETY: the helper is single-threaded (it starts no thread), so giving the process
    // a mount namespace (and file-system attributes) of its own affects only itself.
    unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNS) }
        .map_err(|e| fail("entering a mount namespace of its own".into(), e.into()))?;
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    )
    .map_err(|e| fail("keeping its mounts from the host".into(), e.into()))?;
    // Opened after entering the namespace: a bind mount's source must be one of its own.
    let opened: Vec<(OwnedFd, bool)> = sources
        .iter()
        .map(|source| {
            open_source(source).map_err(|e| fail(format!("opening {}", source.display()), e))
        })
        .collect::<Result<_, _>>()?;
    rustix::mount::mount(
        "odyssey-stage",
        STAGE_DIR,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        c"mode=0755",
    )
    .map_err(|e| fail(format!("mounting a tmpfs on {STAGE_DIR}"), e.into()))?;
    for (index, (fd, is_dir)) in opened.iter().enumerate() {
        let target = staged_path(index);
        let made = if *is_dir {
            rustix::fs::mkdir(&target, Mode::from_raw_mode(0o755))
        } else {
            rustix::fs::open(
                &target,
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o444),
            )
            .map(drop)
        };
        made.map_err(|e| fail(format!("creating {}", target.display()), e.into()))?;
        let from = format!("/proc/self/fd/{}", fd.as_raw_fd());
        rustix::mount::mount_bind_recursive(from.as_str(), &target)
            .map_err(|e| fail(format!("staging source {index}"), e.into()))?;
    }
    Ok(())
}

/// Opens `path` refusing a symbolic link anywhere in it; answers whether it is a folder.
fn open_source(path: &Path) -> io::Result<(OwnedFd, bool)> {
    let fd = rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    Ok((
        fd,
        FileType::from_raw_mode(stat.st_mode) == FileType::Directory,
    ))
}

fn drop_to(uid: u32, gid: u32) -> io::Result<()> {
    // The helper is single-threaded, so the thread's credentials are the process's.
    rustix::thread::set_thread_groups(&[])?;
    let gid = Gid::from_raw(gid);
    rustix::thread::set_thread_res_gid(gid, gid, gid)?;
    let uid = Uid::from_raw(uid);
    rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_round_trip() {
        let args = StageArgs {
            uid: 65534,
            gid: 65534,
            sources: vec!["/srv/home/sandbox/s/data".into(), "/opt/helper".into()],
            command: os(&["/usr/bin/bwrap", "--ro-bind", "/dev/shm/0", "/workspace"]),
        };
        let rendered = args.to_args();
        assert_eq!(rendered[0], OsString::from(SUBCOMMAND));
        assert_eq!(
            StageArgs::parse(rendered.into_iter().skip(1)).expect("parses"),
            args
        );
    }

    #[test]
    fn root_and_missing_parts_are_refused() {
        for bad in [
            os(&["--uid", "0", "--gid", "1", "--", "bwrap"]),
            os(&["--uid", "5", "--", "bwrap"]),
            os(&["--uid", "5", "--gid", "5"]),
            os(&["--uid", "5", "--gid", "5", "--mystery", "--", "bwrap"]),
        ] {
            let err = StageArgs::parse(bad.clone()).expect_err("refused");
            assert!(matches!(err, HelperError::Usage(_)), "{bad:?}: {err}");
        }
    }

    #[test]
    fn sources_through_a_symbolic_link_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).expect("mkdir");
        std::os::unix::fs::symlink(&real, dir.path().join("link")).expect("link");
        let real = real.canonicalize().expect("canonical");
        assert!(open_source(&real).expect("real path").1);
        let err = open_source(&real.parent().expect("parent").join("link/.")).expect_err("link");
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }
}
