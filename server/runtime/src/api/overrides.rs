//! Checks of a turn's overrides.
//!
//! `cwd` names an existing folder of the session workspace (`data/` of its cell),
//! relative, without `..`; after symlinks are resolved it must still lie inside the
//! workspace. It is not created: a typo should fail, not leave a stray folder. Submit
//! checks it when the session's workspace exists; a new session has none until its first
//! turn, and the workspace may change while a turn waits in the queue, so the turn checks
//! it again when it starts and fails with an error event if it no longer holds.
//!
//! `model` goes through the provider registry like a session's model: an unknown
//! provider, a malformed config or one holding a credential is refused at submit, naming
//! the field; a provider whose key the server lacks is FAILED_PRECONDITION.

use std::path::{Component, Path};

use rustix::fs::OFlags;

use uuid::Uuid;

use super::OdysseyRuntime;
use crate::error::{Result, RuntimeError, shorten};
use crate::execution::ExecutionRequest;
use crate::sandbox::CellPaths;
use crate::sandbox::beneath::{self, BeneathDir};

impl OdysseyRuntime {
    /// What submit can check of a turn's overrides before queueing it.
    pub(crate) fn check_overrides(
        &self,
        session_id: Uuid,
        request: &ExecutionRequest,
    ) -> Result<()> {
        if let Some(model) = &request.model {
            self.inner
                .providers
                .check_usable(model)
                .map_err(|e| super::sessions::model_error(e, true))?;
        }
        if let Some(cwd) = &request.cwd {
            let (cell, workspace_of) = match self.inner.sessions.peek(session_id) {
                Some(info) => (
                    self.session_cell(&info.record)?,
                    info.record.parent.as_ref().and_then(|p| p.workspace_of),
                ),
                None => (
                    CellPaths::under(self.inner.config.sandbox_dir().join(session_id.to_string())),
                    None,
                ),
            };
            // An overlay workspace not mounted yet is checked when the turn mounts it.
            let unmounted = self
                .inner
                .workspaces
                .awaits_mount(workspace_of.unwrap_or(session_id));
            if cell.data.is_dir() && !unmounted {
                workspace_dir(&cell.data, cwd)?;
            }
        }
        Ok(())
    }
}

/// Longest `cwd` accepted, and longest folder name in it: the file system's own limits
/// (Linux's `PATH_MAX` and `NAME_MAX`), so a longer one could name no folder anyway.
const MAX_CWD_BYTES: usize = 4096;
const MAX_CWD_NAME_BYTES: usize = 255;

/// Checks what can be checked of a `cwd` without the workspace: relative, without `..`,
/// within the file system's length limits.
pub(super) fn check_cwd(cwd: &str) -> Result<()> {
    let path = Path::new(cwd);
    if path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(RuntimeError::invalid(
            "cwd",
            "must be a path inside the session workspace (relative, without `..`)",
        ));
    }
    let longest_name = path
        .components()
        .map(|c| c.as_os_str().len())
        .max()
        .unwrap_or(0);
    if cwd.len() > MAX_CWD_BYTES || longest_name > MAX_CWD_NAME_BYTES {
        return Err(RuntimeError::invalid(
            "cwd",
            format!(
                "must be at most {MAX_CWD_BYTES} bytes, each folder name at most \
                 {MAX_CWD_NAME_BYTES}"
            ),
        ));
    }
    Ok(())
}

/// The turn's `cwd` as it is recorded: normal components joined by `/`, `.` for the
/// workspace itself.
pub(crate) fn normalized_cwd(cwd: Option<&str>) -> String {
    let parts: Vec<String> = cwd
        .map(Path::new)
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

/// Checks that `cwd` names a folder beneath the workspace `data` (links followed only
/// while they stay inside).
pub(crate) fn workspace_dir(data: &Path, cwd: &str) -> Result<()> {
    let not_a_folder = || {
        RuntimeError::invalid(
            "cwd",
            format!(
                "`{}` is not a folder of the session workspace",
                shorten(cwd)
            ),
        )
    };
    let root = BeneathDir::open(data).map_err(|_| not_a_folder())?;
    match root.open_at(Path::new(cwd), OFlags::PATH | OFlags::DIRECTORY) {
        Ok(_) => Ok(()),
        Err(e) if beneath::is_escape(&e) => Err(RuntimeError::invalid(
            "cwd",
            format!("`{}` leads outside the session workspace", shorten(cwd)),
        )),
        Err(_) => Err(not_a_folder()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_is_recorded_in_its_plain_form() {
        assert_eq!(normalized_cwd(None), ".");
        assert_eq!(normalized_cwd(Some("")), ".");
        assert_eq!(normalized_cwd(Some("./src//lib/")), "src/lib");
        assert_eq!(normalized_cwd(Some(".")), ".");
    }

    #[test]
    fn cwd_must_be_relative_and_within_the_file_system_limits() {
        for cwd in ["src", "a/b/c", ".", "./x"] {
            assert!(check_cwd(cwd).is_ok(), "{cwd}");
        }
        let long_name = "n".repeat(256);
        let long_path = ["d"; 2100].join("/");
        for cwd in ["/etc", "../x", "a/../../b", &long_name, &long_path] {
            let e = check_cwd(cwd).expect_err(cwd);
            assert_eq!(e.field(), Some("cwd"), "{cwd}");
        }
    }

    #[test]
    fn cwd_must_be_an_existing_folder_inside_the_workspace() {
        let dir = tempfile::tempdir().expect("dir");
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("src")).expect("mkdir");
        std::fs::write(data.join("notes.txt"), "x").expect("write");
        std::os::unix::fs::symlink(dir.path(), data.join("out")).expect("symlink");
        std::os::unix::fs::symlink("src", data.join("code")).expect("symlink");
        for cwd in ["src", ".", "code"] {
            assert!(workspace_dir(&data, cwd).is_ok(), "{cwd}");
        }
        for (cwd, words) in [
            ("missing", "is not a folder"),
            ("notes.txt", "is not a folder"),
            ("out", "leads outside"),
        ] {
            let e = workspace_dir(&data, cwd).expect_err(cwd);
            assert_eq!(e.field(), Some("cwd"));
            assert!(e.to_string().contains(words), "{cwd}: {e}");
        }
    }
}
