//! The bubblewrap command line of a restricted run, and the Landlock lists that match it.
//!
//! Both are derived from one list of [`Bind`]s so the two layers agree: what bubblewrap binds
//! read-only, Landlock grants read-only; what it binds writable, Landlock grants writable.
//! The sandbox starts from an empty root: only the system folders programs need, a few
//! `/etc` files, a fresh `/proc` and `/dev`, the cell's folders at fixed places
//! (`/workspace`, `/app`, `/cache`, `/tmp`, `/run/odyssey`) and the declared mounts at
//! their own paths are visible. `<home>` itself is never bound.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::helper::HelperArgs;
use super::types::CellPaths;
use super::view::{APP, CACHE, RUN, TMP, WORKSPACE};
use crate::policy::SandboxMode;

/// Top-level system folders bound read-only (or recreated as the symlinks they are).
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// The `/etc` entries programs need: the dynamic loader, users and groups, name
/// resolution, TLS roots, the time zone, Debian alternatives. Bound when they exist.
pub const ETC_ENTRIES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/ssl/certs",
    "/etc/localtime",
    "/etc/alternatives",
];

/// Where the helper binary appears inside the sandbox.
pub const HELPER_MOUNT: &str = "/run/odyssey-sandbox";

/// How one system folder exists on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemEntry {
    Dir(PathBuf),
    /// A merged-/usr link such as `/bin -> usr/bin`, recreated as is.
    Symlink {
        path: PathBuf,
        target: PathBuf,
    },
}

/// The host's system folders, detected once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemLayout {
    pub entries: Vec<SystemEntry>,
}

impl SystemLayout {
    pub fn detect() -> Self {
        let entries = SYSTEM_DIRS
            .iter()
            .filter_map(|dir| {
                let path = PathBuf::from(dir);
                let meta = path.symlink_metadata().ok()?;
                if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(&path).ok()?;
                    Some(SystemEntry::Symlink { path, target })
                } else if meta.is_dir() {
                    Some(SystemEntry::Dir(path))
                } else {
                    None
                }
            })
            .collect();
        Self { entries }
    }

    /// The folders Landlock grants read and execute on (links resolve to their target).
    fn paths(&self) -> impl Iterator<Item = &Path> {
        self.entries.iter().map(|entry| match entry {
            SystemEntry::Dir(path) | SystemEntry::Symlink { path, .. } => path.as_path(),
        })
    }
}

/// One host folder (or file) made visible inside the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    /// Where it is on the host (or where the server's staging put it, see
    /// [`super::helper::stage`]).
    pub source: PathBuf,
    /// Where the sandboxed process sees it.
    pub dest: PathBuf,
    pub writable: bool,
}

impl Bind {
    pub(crate) fn new(source: &Path, dest: impl Into<PathBuf>, writable: bool) -> Self {
        Self {
            source: source.to_path_buf(),
            dest: dest.into(),
            writable,
        }
    }
}

/// The cell's folders at their fixed places and the mounts at their own paths.
/// `read_only` mode: only tmp and this run's folder are writable. `workspace_write`:
/// also the workspace, the cache and the writable mounts. The app is never writable.
/// Sorted parents first, so a nested mount is not hidden by its parent.
pub fn cell_binds(
    cell: &CellPaths,
    run_dir: &Path,
    mode: SandboxMode,
    mounts_read: &[PathBuf],
    mounts_write: &[PathBuf],
) -> Vec<Bind> {
    let writable = mode != SandboxMode::ReadOnly;
    let mut binds = vec![
        Bind::new(&cell.data, WORKSPACE, writable),
        Bind::new(&cell.app, APP, false),
        Bind::new(&cell.cache, CACHE, writable),
        Bind::new(&cell.tmp, TMP, true),
        Bind::new(run_dir, RUN, true),
    ];
    binds.extend(mounts_read.iter().map(|m| Bind::new(m, m, false)));
    binds.extend(mounts_write.iter().map(|m| Bind::new(m, m, writable)));
    binds.sort_by_key(|bind| bind.dest.components().count());
    binds
}

/// Everything one bubblewrap invocation needs.
#[derive(Debug)]
pub struct BwrapPlan<'a> {
    pub layout: &'a SystemLayout,
    pub binds: &'a [Bind],
    pub env: &'a [(OsString, OsString)],
    /// The working directory, as the process sees it.
    pub cwd: &'a Path,
    /// The helper binary (on the host, or staged).
    pub helper: &'a Path,
}

impl BwrapPlan<'_> {
    /// The bubblewrap arguments, ending with the helper and its arguments (`helper_args`
    /// carries the command).
    pub fn args(&self, helper_args: &HelperArgs) -> Vec<OsString> {
        let mut args = Args::default();
        args.flags(&[
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
        ]);
        args.flags(&[
            "--hostname",
            "odyssey",
            "--die-with-parent",
            "--new-session",
        ]);
        args.flags(&["--clearenv"]);
        for (name, value) in self.env {
            args.push("--setenv").push(name).push(value);
        }
        for entry in &self.layout.entries {
            match entry {
                SystemEntry::Dir(path) => args.bind("--ro-bind", path, path),
                SystemEntry::Symlink { path, target } => {
                    args.push("--symlink").push(target).push(path);
                }
            }
        }
        for entry in ETC_ENTRIES {
            args.bind("--ro-bind-try", Path::new(entry), Path::new(entry));
        }
        args.flags(&["--proc", "/proc", "--dev", "/dev"]);
        for bind in self.binds {
            let how = if bind.writable { "--bind" } else { "--ro-bind" };
            args.bind(how, &bind.source, &bind.dest);
        }
        args.bind("--ro-bind", self.helper, Path::new(HELPER_MOUNT));
        args.push("--chdir").push(self.cwd);
        args.push("--").push(HELPER_MOUNT);
        args.0.extend(helper_args.to_args());
        args.0
    }

    /// The Landlock lists matching the binds, in the sandbox's own paths: system folders,
    /// `/etc` and `/proc` readable, `/dev` usable, the binds as bound.
    pub fn landlock_paths(&self) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
        let mut read_only: Vec<PathBuf> = self.layout.paths().map(Path::to_path_buf).collect();
        read_only.extend([PathBuf::from("/etc"), PathBuf::from("/proc")]);
        let mut read_write = Vec::new();
        for bind in self.binds {
            if bind.writable {
                read_write.push(bind.dest.clone());
            } else {
                read_only.push(bind.dest.clone());
            }
        }
        (read_only, read_write, vec![PathBuf::from("/dev")])
    }
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push(&mut self, arg: impl AsRef<std::ffi::OsStr>) -> &mut Self {
        self.0.push(arg.as_ref().to_os_string());
        self
    }

    fn flags(&mut self, flags: &[&str]) {
        for flag in flags {
            self.push(flag);
        }
    }

    fn bind(&mut self, how: &str, source: &Path, dest: &Path) {
        self.push(how).push(source).push(dest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::egress::EGRESS_MOUNT;
    use crate::sandbox::helper::{LandlockRequirement, Relay};
    use crate::sandbox::limits::RlimitValues;

    fn layout() -> SystemLayout {
        SystemLayout {
            entries: vec![
                SystemEntry::Dir("/usr".into()),
                SystemEntry::Symlink {
                    path: "/bin".into(),
                    target: "usr/bin".into(),
                },
            ],
        }
    }

    fn render(mode: SandboxMode, network: bool) -> (Vec<String>, HelperArgs) {
        let cell = CellPaths::under(PathBuf::from("/h/sandbox/s1"));
        let run_dir = cell.runs.join("e1");
        let mut binds = cell_binds(
            &cell,
            &run_dir,
            mode,
            &[PathBuf::from("/srv/ref")],
            &[PathBuf::from("/srv/out")],
        );
        if network {
            binds.push(Bind::new(&cell.root.join("egress"), EGRESS_MOUNT, false));
        }
        let layout = layout();
        let env = vec![(OsString::from("HOME"), OsString::from("/workspace"))];
        let plan = BwrapPlan {
            layout: &layout,
            binds: &binds,
            env: &env,
            cwd: Path::new("/workspace"),
            helper: Path::new("/opt/odyssey/odyssey-sandbox"),
        };
        let (read_only, read_write, devices) = plan.landlock_paths();
        let helper = HelperArgs {
            read_only,
            read_write,
            devices,
            network,
            relay: network.then(|| Relay {
                port: 3128,
                socket: PathBuf::from("/run/odyssey-egress/proxy.sock"),
            }),
            landlock: LandlockRequirement::Required,
            limits: RlimitValues {
                processes: Some(16),
                ..RlimitValues::default()
            },
            lifeline: None,
            command: vec!["true".into()],
        };
        let args = plan
            .args(&helper)
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        (args, helper)
    }

    /// The arguments following each occurrence of `flag`, `n` at a time.
    fn after(args: &[String], flag: &str, n: usize) -> Vec<Vec<String>> {
        let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
        args[..end]
            .iter()
            .enumerate()
            .filter(|(_, a)| *a == flag)
            .map(|(i, _)| args[i + 1..i + 1 + n].to_vec())
            .collect()
    }

    fn pair(a: &str, b: &str) -> Vec<String> {
        vec![a.to_owned(), b.to_owned()]
    }

    #[test]
    fn workspace_write_binds_the_cell_at_fixed_places() {
        let (args, helper) = render(SandboxMode::WorkspaceWrite, false);
        for flag in [
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ] {
            assert!(args.contains(&flag.to_owned()), "missing {flag}");
        }
        let rw = after(&args, "--bind", 2);
        for (source, dest) in [
            ("/h/sandbox/s1/data", "/workspace"),
            ("/h/sandbox/s1/cache", "/cache"),
            ("/h/sandbox/s1/tmp", "/tmp"),
            ("/h/sandbox/s1/runs/e1", "/run/odyssey"),
            ("/srv/out", "/srv/out"),
        ] {
            assert!(
                rw.contains(&pair(source, dest)),
                "{source} not writable at {dest}: {rw:?}"
            );
        }
        let ro = after(&args, "--ro-bind", 2);
        for (source, dest) in [
            ("/usr", "/usr"),
            ("/h/sandbox/s1/app", "/app"),
            ("/srv/ref", "/srv/ref"),
        ] {
            assert!(
                ro.contains(&pair(source, dest)),
                "{source} not read-only at {dest}: {ro:?}"
            );
        }
        assert!(ro.contains(&pair("/opt/odyssey/odyssey-sandbox", HELPER_MOUNT)));
        assert_eq!(after(&args, "--symlink", 2), vec![pair("usr/bin", "/bin")]);
        assert_eq!(
            after(&args, "--chdir", 1),
            vec![vec!["/workspace".to_owned()]]
        );
        assert!(after(&args, "--ro-bind-try", 2).contains(&pair("/etc/passwd", "/etc/passwd")));
        assert_eq!(
            after(&args, "--setenv", 2),
            vec![pair("HOME", "/workspace")]
        );
        // The helper comes last, with the same places Landlock will enforce.
        let tail = args.iter().position(|a| a == "--").expect("separator");
        assert_eq!(args[tail + 1], HELPER_MOUNT);
        for dest in ["/workspace", "/tmp", "/cache", "/run/odyssey", "/srv/out"] {
            assert!(helper.read_write.contains(&PathBuf::from(dest)), "{dest}");
        }
        assert!(helper.read_only.contains(&PathBuf::from("/app")));
        assert!(!helper.network);
        assert!(!ro.iter().any(|p| p[1] == EGRESS_MOUNT));
    }

    #[test]
    fn read_only_leaves_only_tmp_and_the_run_folder_writable() {
        let (args, helper) = render(SandboxMode::ReadOnly, false);
        let rw: Vec<String> = after(&args, "--bind", 2)
            .into_iter()
            .map(|p| p[1].clone())
            .collect();
        assert_eq!(rw, vec!["/tmp".to_owned(), "/run/odyssey".to_owned()]);
        let ro = after(&args, "--ro-bind", 2);
        for (source, dest) in [
            ("/h/sandbox/s1/data", "/workspace"),
            ("/h/sandbox/s1/cache", "/cache"),
            ("/srv/out", "/srv/out"),
        ] {
            assert!(ro.contains(&pair(source, dest)), "{source} not read-only");
        }
        assert!(!helper.read_write.contains(&PathBuf::from("/workspace")));
        assert!(helper.read_only.contains(&PathBuf::from("/workspace")));
    }

    /// Issue 11 item 3: a networked process still gets a network namespace of its own
    /// (only loopback); its way out is the proxy socket bound in read-only.
    #[test]
    fn network_goes_through_the_proxy_socket() {
        let (args, helper) = render(SandboxMode::WorkspaceWrite, true);
        assert!(args.contains(&"--unshare-net".to_owned()));
        let ro = after(&args, "--ro-bind", 2);
        assert!(ro.contains(&pair("/h/sandbox/s1/egress", EGRESS_MOUNT)));
        assert!(helper.network && helper.relay.is_some());
    }

    #[test]
    fn the_host_layout_appears_only_as_bind_sources() {
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
            let (args, helper) = render(mode, false);
            let end = args.iter().position(|a| a == "--").expect("separator");
            for forbidden in [
                "/h",
                "/h/sandbox",
                "/h/sandbox/s1",
                "/h/sandbox/s1/runs",
                "/",
            ] {
                assert!(
                    !args[..end].contains(&forbidden.to_owned()),
                    "{forbidden} appears in {mode} arguments"
                );
            }
            let sources: Vec<String> = after(&args, "--bind", 2)
                .into_iter()
                .chain(after(&args, "--ro-bind", 2))
                .map(|p| p[0].clone())
                .collect();
            let mentioned = args[..end]
                .iter()
                .filter(|a| a.starts_with("/h/"))
                .all(|a| sources.contains(a));
            assert!(mentioned, "a host path outside a bind source: {args:?}");
            assert!(
                !helper
                    .read_only
                    .iter()
                    .chain(&helper.read_write)
                    .any(|p| p.starts_with("/h")),
                "Landlock names a host path"
            );
            assert!(!args.contains(&"--tmpfs".to_owned()));
        }
    }
}
