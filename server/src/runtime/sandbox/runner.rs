//! [`Sandbox::run`]: one request, checked, turned into a launch (bubblewrap + helper, or
//! the bare command for `danger_full_access`) and supervised to its end.

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use super::Sandbox;
use super::bwrap::{BwrapPlan, CellView};
use super::cell;
use super::egress;
use super::env::sandbox_env;
use super::error::SandboxError;
use super::helper::{EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, HelperArgs, LandlockRequirement};
use super::limits::RlimitValues;
use super::paths;
use super::process::{self, Launch, Supervision};
use super::types::{CellPaths, ExecOutcome, ExecRequest};
use crate::runtime::events::OutputStream;
use crate::runtime::policy::SandboxMode;

const MAX_EXEC_ID_LEN: usize = 128;

/// A request with its paths resolved and checked.
struct Checked {
    cell: CellPaths,
    sandbox_root: PathBuf,
    run_dir: PathBuf,
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
        let launch = match request.mode {
            SandboxMode::DangerFullAccess => self.direct_launch(&request, &checked),
            SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => {
                self.bwrap_launch(&request, &checked)?
            }
        };
        let guard = self
            .running
            .register(&request.exec_id, &checked.cell.root, &cancel)?;
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
            sandbox_root: &checked.sandbox_root,
            exec_id: &request.exec_id,
        };
        let outcome = process::supervise(child, watch, &mut on_output).await;
        // The run folder is scratch space: kept when the command left something in it,
        // removed when empty so a long session does not collect thousands of them.
        let _ = std::fs::remove_dir(&checked.run_dir);
        outcome
    }

    fn check(&self, cell: &CellPaths, request: &ExecRequest) -> Result<Checked, SandboxError> {
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
        let cell = CellPaths::under(paths::canonical("cell", &cell.root)?);
        let sandbox_root = cell
            .root
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| SandboxError::invalid("cell", "the cell has no parent folder"))?;
        let home = sandbox_root.parent().unwrap_or(&sandbox_root).to_path_buf();
        let mounts_read = check_mounts("mounts_read", &request.mounts_read, &home)?;
        let mounts_write = check_mounts("mounts_write", &request.mounts_write, &home)?;
        let owner = self.sandbox_owner();
        let run_dir = cell::prepare_run_dir(&cell, &request.exec_id, owner)?;
        let mut visible: Vec<&Path> = vec![&cell.data, &cell.app, &cell.cache, &cell.tmp, &run_dir];
        visible.extend(mounts_read.iter().map(PathBuf::as_path));
        visible.extend(mounts_write.iter().map(PathBuf::as_path));
        let cwd = paths::resolve_inside(
            "cwd",
            &request.cwd,
            &visible,
            "the cell's workspace, app, cache, tmp, run folder and mounts",
        )?;
        let env = sandbox_env(&cell, &run_dir, &request.env)?;
        Ok(Checked {
            cell,
            sandbox_root,
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
    fn direct_launch(&self, request: &ExecRequest, checked: &Checked) -> Launch {
        let limits = self.settings.limits.for_request(request);
        Launch {
            program: PathBuf::from(&request.argv[0]),
            args: request.argv[1..].iter().map(OsString::from).collect(),
            env: checked.env.clone(),
            cwd: checked.cwd.clone(),
            run_as: None,
            rlimits: Some(RlimitValues {
                processes: None,
                ..limits
            }),
        }
    }

    /// `read_only` / `workspace_write`: bubblewrap, then the helper, then the command.
    fn bwrap_launch(
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
        let view = CellView::new(
            &checked.cell,
            &checked.run_dir,
            request.mode,
            &checked.mounts_read,
            &checked.mounts_write,
        );
        let owner = self.sandbox_owner();
        if let Some((uid, gid)) = owner {
            check_reachable(uid, gid, helper, &view)?;
        }
        // A networked process reaches the outside only through the session's proxy.
        let egress_dir = match &request.network {
            Some(grant) => Some(self.egress.open(&checked.cell.root, grant, owner)?),
            None => None,
        };
        let env = match egress_dir {
            Some(_) => egress::proxy_env(&checked.env),
            None => checked.env.clone(),
        };
        let plan = BwrapPlan {
            layout: &self.layout,
            view: &view,
            cell_tmp: &checked.cell.tmp,
            bind_tmp: !checked.cell.root.starts_with("/tmp"),
            egress: egress_dir.as_deref(),
            env: &env,
            cwd: &checked.cwd,
            helper,
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
            limits: self.settings.limits.for_request(request),
            command: request.argv.iter().map(OsString::from).collect(),
        };
        Ok(Launch {
            program: bwrap.clone(),
            args: plan.args(&helper_args),
            env: Vec::new(),
            // bubblewrap changes into the command's folder itself; starting it at `/`
            // spares it a working directory the sandbox user may not be able to search.
            cwd: PathBuf::from("/"),
            run_as: owner,
            rlimits: None,
        })
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
/// another cell or the server's state.
fn check_mounts(
    field: &'static str,
    mounts: &[PathBuf],
    home: &Path,
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
            if paths::overlaps(&real, home) {
                return Err(SandboxError::PathEscape {
                    field,
                    path: mount.clone(),
                    allowed: format!("folders apart from the server home {}", home.display()),
                });
            }
            Ok(real)
        })
        .collect()
}

/// bubblewrap, started as the sandbox user, resolves every bind source itself.
fn check_reachable(uid: u32, gid: u32, helper: &Path, view: &CellView) -> Result<(), SandboxError> {
    let sources = view
        .read_only
        .iter()
        .chain(view.read_write.iter())
        .map(PathBuf::as_path)
        .chain(std::iter::once(helper));
    for source in sources {
        if let Some(blocker) = source
            .parent()
            .and_then(|p| paths::unsearchable_ancestor(p, uid, gid))
        {
            return Err(SandboxError::Unreachable {
                uid,
                path: source.to_path_buf(),
                blocker,
            });
        }
    }
    let helper_mode = helper
        .metadata()
        .map_err(|e| SandboxError::io(format!("reading {}", helper.display()), e))?;
    let executable = if helper_mode.uid() == uid {
        helper_mode.mode() & 0o100 != 0
    } else {
        helper_mode.mode() & 0o001 != 0
    };
    if !executable {
        return Err(SandboxError::Unreachable {
            uid,
            path: helper.to_path_buf(),
            blocker: helper.to_path_buf(),
        });
    }
    Ok(())
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
            check_mounts("mounts_read", std::slice::from_ref(&apart), &home).expect("apart"),
            vec![apart.clone()]
        );
        for bad in [inside, home.clone(), base, PathBuf::from("/")] {
            let err = check_mounts("mounts_read", std::slice::from_ref(&bad), &home)
                .expect_err("refused");
            assert!(
                matches!(err, SandboxError::PathEscape { .. }),
                "{}",
                bad.display()
            );
        }
        let relative = check_mounts("mounts_write", &[PathBuf::from("rel")], &home);
        assert!(matches!(relative, Err(SandboxError::InvalidRequest { .. })));
    }
}
