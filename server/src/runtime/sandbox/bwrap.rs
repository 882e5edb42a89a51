//! The bubblewrap command line of a restricted run, and the Landlock lists that match it.
//!
//! Both are derived from one [`CellView`] so the two layers agree: what bubblewrap binds
//! read-only, Landlock grants read-only; what it binds writable, Landlock grants writable.
//! The sandbox starts from an empty root: only the system folders programs need, a few
//! `/etc` files, a fresh `/proc` and `/dev`, the cell's folders (at their own paths) and
//! the declared mounts are visible. `<home>` itself is never bound.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::egress::EGRESS_MOUNT;
use super::helper::HelperArgs;
use super::types::CellPaths;
use crate::runtime::policy::SandboxMode;

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

/// The cell's folders and the mounts, as the process sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellView {
    pub read_only: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
}

impl CellView {
    /// `read_only` mode: only tmp and this run's folder are writable. `workspace_write`:
    /// also the workspace, the cache and the writable mounts. The app is never writable.
    pub fn new(
        cell: &CellPaths,
        run_dir: &Path,
        mode: SandboxMode,
        mounts_read: &[PathBuf],
        mounts_write: &[PathBuf],
    ) -> Self {
        let mut read_only = vec![cell.app.clone()];
        let mut read_write = vec![cell.tmp.clone(), run_dir.to_path_buf()];
        read_only.extend(mounts_read.iter().cloned());
        if mode == SandboxMode::ReadOnly {
            read_only.extend([cell.data.clone(), cell.cache.clone()]);
            read_only.extend(mounts_write.iter().cloned());
        } else {
            read_write.extend([cell.data.clone(), cell.cache.clone()]);
            read_write.extend(mounts_write.iter().cloned());
        }
        Self {
            read_only,
            read_write,
        }
    }

    /// Every bind, parents before children so a nested mount is not hidden by its parent.
    fn binds(&self) -> Vec<(&Path, bool)> {
        let mut binds: Vec<(&Path, bool)> = self
            .read_only
            .iter()
            .map(|p| (p.as_path(), false))
            .chain(self.read_write.iter().map(|p| (p.as_path(), true)))
            .collect();
        binds.sort_by_key(|(path, _)| path.components().count());
        binds
    }
}

/// Everything one bubblewrap invocation needs.
#[derive(Debug)]
pub struct BwrapPlan<'a> {
    pub layout: &'a SystemLayout,
    pub view: &'a CellView,
    pub cell_tmp: &'a Path,
    /// Whether the cell's tmp also appears as `/tmp`. Not when the cell itself lives under
    /// `/tmp`: binding over `/tmp` would hide the cell's own binds, so `/tmp` is then not
    /// writable and only `TMPDIR` (the cell's tmp) is.
    pub bind_tmp: bool,
    /// The cell's egress folder (the proxy's socket), bound read-only at
    /// [`EGRESS_MOUNT`] for a networked process. The network namespace is private either
    /// way: the socket is a networked process's only way out.
    pub egress: Option<&'a Path>,
    pub env: &'a [(OsString, OsString)],
    pub cwd: &'a Path,
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
        for (path, writable) in self.view.binds() {
            args.bind(if writable { "--bind" } else { "--ro-bind" }, path, path);
        }
        if self.bind_tmp {
            args.bind("--bind", self.cell_tmp, Path::new("/tmp"));
        }
        args.bind("--ro-bind", self.helper, Path::new(HELPER_MOUNT));
        if let Some(egress) = self.egress {
            args.bind("--ro-bind", egress, Path::new(EGRESS_MOUNT));
        }
        args.push("--chdir").push(self.cwd);
        args.push("--").push(HELPER_MOUNT);
        args.0.extend(helper_args.to_args());
        args.0
    }

    /// The Landlock lists matching the binds: system folders, `/etc` and `/proc` readable,
    /// `/dev` usable, the view as bound.
    pub fn landlock_paths(&self) -> (Vec<PathBuf>, Vec<PathBuf>, Vec<PathBuf>) {
        let mut read_only: Vec<PathBuf> = self.layout.paths().map(Path::to_path_buf).collect();
        read_only.extend([PathBuf::from("/etc"), PathBuf::from("/proc")]);
        read_only.extend(self.view.read_only.iter().cloned());
        let mut read_write = self.view.read_write.clone();
        if self.bind_tmp {
            read_write.push(PathBuf::from("/tmp"));
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
    use crate::runtime::sandbox::helper::{LandlockRequirement, Relay};
    use crate::runtime::sandbox::limits::RlimitValues;

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

    fn render(mode: SandboxMode, network: bool, bind_tmp: bool) -> (Vec<String>, HelperArgs) {
        let cell = CellPaths::under(PathBuf::from("/h/sandbox/s1"));
        let run_dir = cell.runs.join("e1");
        let view = CellView::new(
            &cell,
            &run_dir,
            mode,
            &[PathBuf::from("/srv/ref")],
            &[PathBuf::from("/srv/out")],
        );
        let layout = layout();
        let env = vec![(OsString::from("HOME"), OsString::from("/h/sandbox/s1/data"))];
        let egress = cell.root.join("egress");
        let plan = BwrapPlan {
            layout: &layout,
            view: &view,
            cell_tmp: &cell.tmp,
            bind_tmp,
            egress: network.then_some(egress.as_path()),
            env: &env,
            cwd: &cell.data,
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
    fn workspace_write_binds_the_workspace_writable() {
        let (args, helper) = render(SandboxMode::WorkspaceWrite, false, true);
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
        for path in [
            "/h/sandbox/s1/data",
            "/h/sandbox/s1/cache",
            "/h/sandbox/s1/tmp",
            "/h/sandbox/s1/runs/e1",
            "/srv/out",
        ] {
            assert!(
                rw.contains(&pair(path, path)),
                "{path} not writable: {rw:?}"
            );
        }
        assert!(rw.contains(&pair("/h/sandbox/s1/tmp", "/tmp")));
        let ro = after(&args, "--ro-bind", 2);
        for path in ["/usr", "/h/sandbox/s1/app", "/srv/ref"] {
            assert!(
                ro.contains(&pair(path, path)),
                "{path} not read-only: {ro:?}"
            );
        }
        assert!(ro.contains(&pair("/opt/odyssey/odyssey-sandbox", HELPER_MOUNT)));
        assert_eq!(after(&args, "--symlink", 2), vec![pair("usr/bin", "/bin")]);
        assert_eq!(
            after(&args, "--chdir", 1),
            vec![vec!["/h/sandbox/s1/data".to_owned()]]
        );
        assert!(after(&args, "--ro-bind-try", 2).contains(&pair("/etc/passwd", "/etc/passwd")));
        assert_eq!(
            after(&args, "--setenv", 2),
            vec![pair("HOME", "/h/sandbox/s1/data")]
        );
        // The helper comes last, with the same lists Landlock will enforce.
        let tail = args.iter().position(|a| a == "--").expect("separator");
        assert_eq!(args[tail + 1], HELPER_MOUNT);
        assert!(
            helper
                .read_write
                .contains(&PathBuf::from("/h/sandbox/s1/data"))
        );
        assert!(helper.read_write.contains(&PathBuf::from("/tmp")));
        assert!(
            helper
                .read_only
                .contains(&PathBuf::from("/h/sandbox/s1/app"))
        );
        assert!(!helper.network);
        assert!(!ro.iter().any(|p| p[1] == EGRESS_MOUNT));
    }

    #[test]
    fn read_only_leaves_only_tmp_and_the_run_folder_writable() {
        let (args, helper) = render(SandboxMode::ReadOnly, false, true);
        let rw: Vec<String> = after(&args, "--bind", 2)
            .into_iter()
            .map(|p| p[0].clone())
            .collect();
        assert_eq!(
            rw,
            vec![
                "/h/sandbox/s1/tmp".to_owned(),
                "/h/sandbox/s1/runs/e1".to_owned(),
                "/h/sandbox/s1/tmp".to_owned(),
            ]
        );
        let ro = after(&args, "--ro-bind", 2);
        for path in ["/h/sandbox/s1/data", "/h/sandbox/s1/cache", "/srv/out"] {
            assert!(ro.contains(&pair(path, path)), "{path} not read-only");
        }
        assert!(
            !helper
                .read_write
                .contains(&PathBuf::from("/h/sandbox/s1/data"))
        );
        assert!(
            helper
                .read_only
                .contains(&PathBuf::from("/h/sandbox/s1/data"))
        );
    }

    /// Issue 11 item 3: a networked process still gets a network namespace of its own
    /// (only loopback); its way out is the proxy socket bound in read-only.
    #[test]
    fn network_goes_through_the_proxy_socket_and_tmp_is_optional() {
        let (args, helper) = render(SandboxMode::WorkspaceWrite, true, false);
        assert!(args.contains(&"--unshare-net".to_owned()));
        let ro = after(&args, "--ro-bind", 2);
        assert!(ro.contains(&pair("/h/sandbox/s1/egress", EGRESS_MOUNT)));
        assert!(helper.network && helper.relay.is_some());
        assert!(!after(&args, "--bind", 2).iter().any(|p| p[1] == "/tmp"));
        assert!(!helper.read_write.contains(&PathBuf::from("/tmp")));
    }

    #[test]
    fn home_and_cell_root_are_never_bound() {
        for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
            let (args, _) = render(mode, false, true);
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
            assert!(!args.contains(&"--tmpfs".to_owned()));
        }
    }
}
