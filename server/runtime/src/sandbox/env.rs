//! The environment of a sandboxed process: built from nothing, never inherited, so the
//! server's own variables (provider keys above all) cannot leak into a command.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use super::error::SandboxError;
use super::view::ProcessView;

/// The search path inside the sandbox: only system folders, which are read-only there.
pub const SANDBOX_PATH: &str = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
const SANDBOX_LANG: &str = "C.UTF-8";

/// Variables that locate the cell; a request's own `env` cannot move them elsewhere.
const CELL_VARIABLES: &[&str] = &[
    "HOME",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
];

/// The full environment: PATH and LANG (overridable by `extra`), then `extra`, then the
/// cell locations as the process sees them (HOME = the workspace, TMPDIR = the cell's tmp,
/// XDG dirs inside the cell, XDG_RUNTIME_DIR = this run's folder).
pub(crate) fn sandbox_env(
    view: &ProcessView,
    run_dir: &Path,
    extra: &BTreeMap<String, String>,
) -> Result<Vec<(OsString, OsString)>, SandboxError> {
    let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
    env.insert("PATH".into(), SANDBOX_PATH.into());
    env.insert("LANG".into(), SANDBOX_LANG.into());
    for (name, value) in extra {
        check_variable(name, value)?;
        if !CELL_VARIABLES.contains(&name.as_str()) {
            env.insert(name.into(), value.into());
        }
    }
    let locations: [(&str, &Path, Option<&str>); 7] = [
        ("HOME", &view.workspace, None),
        ("TMPDIR", &view.tmp, None),
        ("XDG_CACHE_HOME", &view.cache, None),
        ("XDG_CONFIG_HOME", &view.workspace, Some(".config")),
        ("XDG_DATA_HOME", &view.workspace, Some(".local/share")),
        ("XDG_STATE_HOME", &view.workspace, Some(".local/state")),
        ("XDG_RUNTIME_DIR", run_dir, None),
    ];
    for (name, base, sub) in locations {
        let path = match sub {
            Some(sub) => base.join(sub),
            None => base.to_path_buf(),
        };
        env.insert(name.into(), path.into_os_string());
    }
    Ok(env.into_iter().collect())
}

fn check_variable(name: &str, value: &str) -> Result<(), SandboxError> {
    let valid_name = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid_name {
        return Err(SandboxError::invalid(
            "env",
            format!("`{name}` is not a valid environment variable name"),
        ));
    }
    if value.contains('\0') {
        return Err(SandboxError::invalid(
            "env",
            format!("the value of `{name}` contains a NUL byte"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsString> {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    use crate::policy::SandboxMode;
    use crate::sandbox::CellPaths;

    #[test]
    fn cell_locations_win_and_extras_pass() {
        let cell = CellPaths::under(PathBuf::from("/h/sandbox/s"));
        let view = ProcessView::new(SandboxMode::WorkspaceWrite, &cell);
        let extra = BTreeMap::from([
            ("HOME".to_owned(), "/root".to_owned()),
            ("PATH".to_owned(), "/opt/bin:/usr/bin".to_owned()),
            ("API_URL".to_owned(), "https://example".to_owned()),
        ]);
        let env = sandbox_env(&view, &view.run_dir("x"), &extra).expect("env");
        assert_eq!(lookup(&env, "HOME"), Some(&OsString::from("/workspace")));
        assert_eq!(lookup(&env, "TMPDIR"), Some(&OsString::from("/tmp")));
        assert_eq!(
            lookup(&env, "XDG_RUNTIME_DIR"),
            Some(&OsString::from("/run/odyssey"))
        );
        assert_eq!(
            lookup(&env, "XDG_CACHE_HOME"),
            Some(&OsString::from("/cache"))
        );
        assert_eq!(
            lookup(&env, "PATH"),
            Some(&OsString::from("/opt/bin:/usr/bin"))
        );
        assert_eq!(
            lookup(&env, "API_URL"),
            Some(&OsString::from("https://example"))
        );
        assert_eq!(lookup(&env, "LANG"), Some(&OsString::from("C.UTF-8")));
        assert_eq!(env.len(), 10);
    }

    #[test]
    fn bad_names_and_values_are_refused() {
        let cell = CellPaths::under(PathBuf::from("/c"));
        let view = ProcessView::new(SandboxMode::ReadOnly, &cell);
        for (name, value) in [("A=B", "x"), ("", "x"), ("1X", "x"), ("OK", "a\0b")] {
            let extra = BTreeMap::from([(name.to_owned(), value.to_owned())]);
            let err = sandbox_env(&view, Path::new("/run/odyssey"), &extra).expect_err(name);
            assert_eq!(err.field(), Some("env"));
        }
    }
}
