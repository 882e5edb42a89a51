//! [`Sandbox::run`]: one request, checked, turned into a launch (bubblewrap + helper, or
//! the bare command for `danger_full_access`) and supervised to its end.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;
use tokio_util::sync::CancellationToken;

use super::Sandbox;
use super::beneath::BeneathDir;
use super::bwrap::{Bind, BwrapPlan, cell_binds};
use super::cell;
use super::egress::{self, EGRESS_MOUNT};
use super::env::sandbox_env;
use super::error::SandboxError;
use super::helper::stage::{self, StageArgs};
use super::helper::{EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, HelperArgs, LandlockRequirement};
use super::limits::RlimitValues;
use super::paths;
use super::process::{self, Launch, Supervision};
use super::types::{CellPaths, ExecOutcome, ExecRequest};
use super::view::{ProcessView, RESERVED};
use crate::events::OutputStream;
use crate::policy::SandboxMode;

const MAX_EXEC_ID_LEN: usize = 128;

/// A request with its paths resolved and checked.
pub(super) struct Checked {
    pub(super) cell: CellPaths,
    /// Where this server records the command's process group and keys its cgroup.
    pub(super) records_root: PathBuf,
    pub(super) run_dir: PathBuf,
    cwd: PathBuf,
    mounts_read: Vec<PathBuf>,
    mounts_write: Vec<PathBuf>,
    env: Vec<(OsString, OsString)>,
}

impl Sandbox {
    /// Runs `request` in `cell`: `on_output` receives output as it arrives (UTF-8, lossy),
    /// `cancel` kills the process group. A process that starts always yields an outcome
    /// (also when it fails, times out or is cancelled); errors mean nothing could start.
    pub async fn run(
        &self,
        cell: &CellPaths,
        request: ExecRequest,
        on_output: impl FnMut(OutputStream, String) + Send,
        cancel: CancellationToken,
    ) -> Result<ExecOutcome, SandboxError> {
        let started = std::time::Instant::now();
        let mode = request.mode;
        let result = self.run_checked(cell, request, on_output, cancel).await;
        self.metrics.record(mode, &result, started.elapsed());
        result
    }

    async fn run_checked(
        &self,
        cell: &CellPaths,
        request: ExecRequest,
        mut on_output: impl FnMut(OutputStream, String) + Send,
        cancel: CancellationToken,
    ) -> Result<ExecOutcome, SandboxError> {
        let checked = self.check(cell, &request)?;
        let mut launch = match request.mode {
            SandboxMode::DangerFullAccess => self.direct_launch(&request, &checked),
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => {
                self.bwrap_launch(&request, &checked)?
            }
        };
        // Without a pids cgroup, the session's processes are bounded by its commands'
        // shares, so the commands themselves are counted.
        let max_in_cell =
            (!self.enforcement().pids_cgroup).then_some(self.settings.limits.commands_per_session);
        let guard =
            self.running
                .register(&request.exec_id, &checked.cell.root, &cancel, max_in_cell)?;
        launch.cgroup_files = self.cgroups.enter(
            &checked.records_root,
            &session_name(&checked.cell)?,
            self.settings.limits.group(&request),
        )?;
        let timeout = if request.timeout.is_zero() {
            self.settings.default_timeout
        } else {
            request.timeout
        };
        let program = launch.program.display().to_string();
        let direct = request.mode == SandboxMode::DangerFullAccess;
        let child = match process::spawn(launch) {
            Ok(child) => child,
            Err(e) if direct => return not_started(&program, e),
            Err(e) => {
                return Err(SandboxError::Spawn { program, source: e });
            }
        };
        let watch = Supervision {
            timeout,
            max_output_bytes: self.settings.max_output_bytes,
            cancel: guard.cancel_token(),
            sandbox_root: &checked.records_root,
            exec_id: &request.exec_id,
        };
        let outcome = process::supervise(child, watch, &mut on_output).await;
        // The run folder is scratch space: kept when the command left something in it,
        // removed when empty so a long session does not collect thousands of them.
        let _ = std::fs::remove_dir(&checked.run_dir);
        outcome
    }

    pub(super) fn check(
        &self,
        cell: &CellPaths,
        request: &ExecRequest,
    ) -> Result<Checked, SandboxError> {
        check_exec_id(&request.exec_id)?;
        if request.argv.is_empty() || request.argv[0].is_empty() {
            return Err(SandboxError::invalid("argv", "no program to run"));
        }
        if request.argv.iter().any(|arg| arg.contains('\0')) {
            return Err(SandboxError::invalid(
                "argv",
                "an argument contains a NUL byte",
            ));
        }
        // Everything below compares and binds real paths, so symlinks in the server's
        // home cannot make two views of the cell disagree.
        let workspace = paths::canonical("workspace", &cell.data)?;
        let cell = CellPaths {
            data: workspace,
            ..CellPaths::under(paths::canonical("cell", &cell.root)?)
        };
        let sandbox_root = cell
            .root
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| SandboxError::invalid("cell", "the cell has no parent folder"))?;
        // A workspace is a cell's `data/`: this one's, or, for a sub-agent that shares it,
        // that of another cell under the same root. Never any other folder.
        let workspace_cell = cell.data.parent().and_then(Path::parent);
        if cell.data.file_name() != Some(std::ffi::OsStr::new("data"))
            || workspace_cell != Some(sandbox_root.as_path())
        {
            return Err(SandboxError::invalid(
                "cell",
                "the workspace is not the data folder of a cell of this server",
            ));
        }
        let mut homes = vec![sandbox_root.parent().unwrap_or(&sandbox_root).to_path_buf()];
        if let Some(home) = &self.settings.server_home {
            homes.push(paths::canonical("server home", home)?);
            homes.push(sandbox_root.clone());
        }
        let mounts_read = check_mounts("mounts_read", &request.mounts_read, &homes)?;
        let mounts_write = check_mounts("mounts_write", &request.mounts_write, &homes)?;
        let owner = self.sandbox_owner();
        let run_dir = cell::prepare_run_dir(&cell, &request.exec_id, owner)?;
        let view = ProcessView::new(request.mode, &cell);
        let seen_run_dir = view.run_dir(&request.exec_id);
        let cwd = if request.mode == SandboxMode::DangerFullAccess {
            let mut visible: Vec<&Path> =
                vec![&cell.data, &cell.app, &cell.cache, &cell.tmp, &run_dir];
            visible.extend(mounts_read.iter().map(PathBuf::as_path));
            visible.extend(mounts_write.iter().map(PathBuf::as_path));
            paths::resolve_inside(
                "cwd",
                &request.cwd,
                &visible,
                "the cell's workspace, app, cache, tmp, run folder and mounts",
            )?
        } else {
            // Resolved by the kernel inside the sandbox, where only the binds exist; checked
            // here beneath the host folder it is bound from, for a clear error up front.
            let mut places: Vec<(&Path, &Path)> = vec![
                (&view.workspace, &cell.data),
                (&view.app, &cell.app),
                (&view.cache, &cell.cache),
                (&view.tmp, &cell.tmp),
                (&seen_run_dir, &run_dir),
            ];
            places.extend(mounts_read.iter().map(|m| (m.as_path(), m.as_path())));
            places.extend(mounts_write.iter().map(|m| (m.as_path(), m.as_path())));
            let visible: Vec<&Path> = places.iter().map(|(seen, _)| *seen).collect();
            let cwd = paths::lexically_inside(
                "cwd",
                &request.cwd,
                &visible,
                "the workspace, app, cache, tmp, run folder and mounts",
            )?;
            check_folder_in_sandbox(&cwd, &places)?;
            cwd
        };
        let env = sandbox_env(&view, &seen_run_dir, &request.env)?;
        let records_root = self.records_root(&sandbox_root);
        Ok(Checked {
            cell,
            records_root,
            run_dir,
            cwd,
            mounts_read,
            mounts_write,
            env,
        })
    }

    /// `danger_full_access`: the command itself, on the host, with a clean environment.
    /// `RLIMIT_NPROC` is left out: on the host it would count every process of the
    /// server's user, not just this command's.
    pub(super) fn direct_launch(&self, request: &ExecRequest, checked: &Checked) -> Launch {
        let limits = self
            .settings
            .limits
            .for_request(request, self.enforcement());
        Launch {
            program: PathBuf::from(&request.argv[0]),
            args: request.argv[1..].iter().map(OsString::from).collect(),
            env: checked.env.clone(),
            cwd: checked.cwd.clone(),
            rlimits: Some(RlimitValues {
                processes: None,
                ..limits
            }),
            inherit_fd: None,
            cgroup_files: Vec::new(),
        }
    }

    /// `read_only` / `workspace_write`: bubblewrap, then the helper, then the command.
    pub(super) fn bwrap_launch(
        &self,
        request: &ExecRequest,
        checked: &Checked,
    ) -> Result<Launch, SandboxError> {
        let bwrap = self
            .bwrap
            .as_ref()
            .map_err(|looked_for| SandboxError::BubblewrapMissing {
                looked_for: looked_for.clone(),
            })?;
        let helper = self
            .helper
            .as_ref()
            .map_err(|looked_for| SandboxError::HelperMissing {
                looked_for: looked_for.clone(),
            })?;
        let binds = cell_binds(
            &checked.cell,
            &checked.run_dir,
            request.mode,
            &checked.mounts_read,
            &checked.mounts_write,
        );
        let helper = paths::canonical("helper", helper)?;
        let owner = self.sandbox_owner();
        // A networked process reaches the outside only through the session's proxy, whose
        // socket folder it sees read-only.
        let egress_dir = match &request.network {
            Some(grant) => Some(self.egress.open(&checked.cell.root, grant, owner)?),
            None => None,
        };
        let mut binds = binds;
        if let Some(dir) = &egress_dir {
            binds.push(Bind::new(dir, EGRESS_MOUNT, false));
        }
        let env = match egress_dir {
            Some(_) => egress::proxy_env(&checked.env),
            None => checked.env.clone(),
        };
        // As root, bubblewrap (run as the sandbox user) gets the sources staged where it
        // can reach them; otherwise it reaches them itself.
        let mut sources = Vec::new();
        let mut name = |source: &Path| match owner {
            Some(_) => {
                sources.push(source.to_path_buf());
                stage::staged_path(sources.len() - 1)
            }
            None => source.to_path_buf(),
        };
        let binds: Vec<Bind> = binds
            .into_iter()
            .map(|bind| Bind {
                source: name(&bind.source),
                ..bind
            })
            .collect();
        let helper = name(&helper);
        let plan = BwrapPlan {
            layout: &self.layout,
            binds: &binds,
            env: &env,
            cwd: &checked.cwd,
            helper: &helper,
        };
        let (read_only, read_write, devices) = plan.landlock_paths();
        let helper_args = HelperArgs {
            read_only,
            read_write,
            devices,
            network: egress_dir.is_some(),
            relay: egress_dir.as_ref().map(|_| egress::relay()),
            landlock: if self.settings.require_landlock {
                LandlockRequirement::Required
            } else {
                LandlockRequirement::BestEffort
            },
            limits: self
                .settings
                .limits
                .for_request(request, self.enforcement()),
            lifeline: self.lifeline.as_ref().map(|l| l.read_fd()),
            command: request.argv.iter().map(OsString::from).collect(),
        };
        let bwrap_args = plan.args(&helper_args);
        let (program, args) = match owner {
            Some((uid, gid)) => {
                let mut command = vec![bwrap.clone().into_os_string()];
                command.extend(bwrap_args);
                let stage = StageArgs {
                    uid,
                    gid,
                    sources,
                    command,
                };
                (self.helper_path()?, stage.to_args())
            }
            None => (bwrap.clone(), bwrap_args),
        };
        Ok(Launch {
            program,
            args,
            env: Vec::new(),
            // bubblewrap changes into the command's folder itself; starting it at `/`
            // spares it a working directory the sandbox user may not be able to search.
            cwd: PathBuf::from("/"),
            rlimits: None,
            inherit_fd: self.lifeline.as_ref().map(|l| l.read_fd()),
            cgroup_files: Vec::new(),
        })
    }

    fn helper_path(&self) -> Result<PathBuf, SandboxError> {
        self.helper
            .clone()
            .map_err(|looked_for| SandboxError::HelperMissing { looked_for })
    }
}

/// The session a cell belongs to: its folder's name.
pub(super) fn session_name(cell: &CellPaths) -> Result<String, SandboxError> {
    cell.root
        .file_name()
        .and_then(|name| name.to_str())
        .map(str::to_owned)
        .ok_or_else(|| SandboxError::invalid("cell", "the cell has no name"))
}

/// Checks that `cwd` (a path inside the sandbox, already known to lie in one of `places`)
/// is a folder there, looking beneath the host folder its place is bound from.
fn check_folder_in_sandbox(cwd: &Path, places: &[(&Path, &Path)]) -> Result<(), SandboxError> {
    let place = places
        .iter()
        .filter(|(seen, _)| cwd.starts_with(seen))
        .max_by_key(|(seen, _)| seen.components().count());
    let found = place.is_some_and(|(seen, host)| {
        let rel = cwd.strip_prefix(seen).unwrap_or(Path::new(""));
        BeneathDir::open(host)
            .and_then(|dir| dir.open_at(rel, OFlags::PATH | OFlags::DIRECTORY))
            .is_ok()
    });
    if found {
        Ok(())
    } else {
        Err(SandboxError::invalid(
            "cwd",
            format!("`{}` is not a folder in the sandbox", cwd.display()),
        ))
    }
}

/// Exec ids name a folder and a record file: a safe, short file name.
fn check_exec_id(exec_id: &str) -> Result<(), SandboxError> {
    let valid = !exec_id.is_empty()
        && exec_id.len() <= MAX_EXEC_ID_LEN
        && !exec_id.starts_with('.')
        && exec_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        Ok(())
    } else {
        Err(SandboxError::invalid(
            "exec_id",
            format!(
                "`{exec_id}` must be 1 to {MAX_EXEC_ID_LEN} letters, digits, `-`, `_` or `.`, \
                 not starting with `.`"
            ),
        ))
    }
}

/// Mounts must exist and must neither contain nor lie inside the server's home: binding
/// `/` or `/home` would expose every session, and a folder inside `<home>` would expose
/// another cell or the server's state. Nor may they take the places the sandbox keeps for
/// the cell and the kernel (`/workspace`, `/tmp`, `/proc`, ...).
fn check_mounts(
    field: &'static str,
    mounts: &[PathBuf],
    homes: &[PathBuf],
) -> Result<Vec<PathBuf>, SandboxError> {
    mounts
        .iter()
        .map(|mount| {
            if !mount.is_absolute() {
                return Err(SandboxError::invalid(
                    field,
                    format!("`{}` is not an absolute path", mount.display()),
                ));
            }
            let real = paths::canonical(field, mount)?;
            if let Some(home) = homes.iter().find(|home| paths::overlaps(&real, home)) {
                return Err(SandboxError::PathEscape {
                    field,
                    path: mount.clone(),
                    allowed: format!("folders apart from the server home {}", home.display()),
                });
            }
            if let Some(place) = RESERVED
                .iter()
                .find(|place| paths::overlaps(&real, Path::new(place)))
            {
                return Err(SandboxError::PathEscape {
                    field,
                    path: mount.clone(),
                    allowed: format!(
                        "folders that neither hold nor lie in {place}, where the sandbox keeps \
                         its own"
                    ),
                });
            }
            Ok(real)
        })
        .collect()
}

/// A command that could not be started on the host answers like a shell would: 127 when
/// it does not exist, 126 when it cannot be executed.
fn not_started(program: &str, error: io::Error) -> Result<ExecOutcome, SandboxError> {
    let exit_code = match error.kind() {
        io::ErrorKind::NotFound => EXIT_NOT_FOUND,
        io::ErrorKind::PermissionDenied => EXIT_CANNOT_EXECUTE,
        _ => {
            return Err(SandboxError::Spawn {
                program: program.to_owned(),
                source: error,
            });
        }
    };
    Ok(ExecOutcome {
        exit_code: i32::from(exit_code),
        stderr: format!("cannot run {program}: {error}\n"),
        ..ExecOutcome::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_ids_are_safe_file_names() {
        for good in ["e1", "0190a7b2-aaaa-7bbb-8ccc-0123456789ab", "bash_1.2"] {
            assert!(check_exec_id(good).is_ok(), "{good}");
        }
        let long = "x".repeat(MAX_EXEC_ID_LEN + 1);
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "a/b",
            "../x",
            "a b",
            long.as_str(),
        ] {
            assert!(check_exec_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mounts_may_not_touch_the_home() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let home = base.join("home");
        let inside = home.join("sessions");
        let apart = base.join("shared");
        for path in [&inside, &apart] {
            std::fs::create_dir_all(path).expect("mkdir");
        }
        assert_eq!(
            check_mounts(
                "mounts_read",
                std::slice::from_ref(&apart),
                std::slice::from_ref(&home)
            )
            .expect("apart"),
            vec![apart.clone()]
        );
        for bad in [inside, home.clone(), base, PathBuf::from("/")] {
            let err = check_mounts(
                "mounts_read",
                std::slice::from_ref(&bad),
                std::slice::from_ref(&home),
            )
            .expect_err("refused");
            assert!(
                matches!(err, SandboxError::PathEscape { .. }),
                "{}",
                bad.display()
            );
        }
        let relative = check_mounts(
            "mounts_write",
            &[PathBuf::from("rel")],
            std::slice::from_ref(&home),
        );
        assert!(matches!(relative, Err(SandboxError::InvalidRequest { .. })));
    }
}
