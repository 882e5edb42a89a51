//! Path checks: where a working directory may be and which host folders may be mounted.
//!
//! Checks resolve symlinks first (`canonicalize`) and compare the results, so a symlink
//! planted in the workspace cannot make an outside folder look like an inside one.

use std::path::{Path, PathBuf};

use super::error::SandboxError;

/// Whether `path` is `root` or lies beneath it (component-wise).
pub fn is_within(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// Whether one of the two paths contains the other.
pub fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The real location of `path`, which must exist.
pub fn canonical(field: &'static str, path: &Path) -> Result<PathBuf, SandboxError> {
    path.canonicalize().map_err(|e| {
        SandboxError::invalid(
            field,
            format!("`{}` cannot be resolved: {e}", path.display()),
        )
    })
}

/// Resolves `path` (absolute, existing) and checks that it lies inside one of `roots`
/// (already canonical). Answers the resolved path. Only the resolved path is compared:
/// `..` and symlinks are applied first, whichever way they point.
pub fn resolve_inside(
    field: &'static str,
    path: &Path,
    roots: &[&Path],
    allowed: &str,
) -> Result<PathBuf, SandboxError> {
    let escape = || SandboxError::PathEscape {
        field,
        path: path.to_path_buf(),
        allowed: allowed.to_owned(),
    };
    if !path.is_absolute() {
        return Err(escape());
    }
    let real = canonical(field, path)?;
    if roots.iter().any(|root| is_within(&real, root)) {
        Ok(real)
    } else {
        Err(escape())
    }
}

/// `.` and `..` applied to the text of an absolute path (`..` at `/` stays at `/`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out
}

/// Checks that `path` (absolute, as a sandboxed process sees it) lies inside one of
/// `roots` once `.` and `..` are applied to its text. The kernel resolves it inside the
/// sandbox, where nothing but the binds exists, so its links cannot lead to the host.
pub fn lexically_inside(
    field: &'static str,
    path: &Path,
    roots: &[&Path],
    allowed: &str,
) -> Result<PathBuf, SandboxError> {
    let escape = || SandboxError::PathEscape {
        field,
        path: path.to_path_buf(),
        allowed: allowed.to_owned(),
    };
    if !path.is_absolute() {
        return Err(escape());
    }
    let normal = normalize(path);
    if roots.iter().any(|root| is_within(&normal, root)) {
        Ok(normal)
    } else {
        Err(escape())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_is_component_wise() {
        assert!(is_within(
            Path::new("/cell/data/x"),
            Path::new("/cell/data")
        ));
        assert!(is_within(Path::new("/cell/data"), Path::new("/cell/data")));
        assert!(!is_within(
            Path::new("/cell/database"),
            Path::new("/cell/data")
        ));
        assert!(overlaps(Path::new("/"), Path::new("/home/x")));
        assert!(!overlaps(Path::new("/srv/a"), Path::new("/srv/b")));
    }

    #[test]
    fn resolve_inside_refuses_dot_dot_and_symlink_escapes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let data = root.join("data");
        std::fs::create_dir_all(data.join("sub")).expect("mkdir");
        std::os::unix::fs::symlink("/etc", data.join("link")).expect("symlink");
        let roots = [data.as_path()];

        let ok = resolve_inside("cwd", &data.join("sub"), &roots, "the workspace");
        assert_eq!(ok.expect("inside"), data.join("sub"));

        let dotdot = resolve_inside("cwd", &data.join("../"), &roots, "the workspace");
        assert!(matches!(dotdot, Err(SandboxError::PathEscape { .. })));

        let link = resolve_inside("cwd", &data.join("link"), &roots, "the workspace");
        assert!(matches!(link, Err(SandboxError::PathEscape { .. })));

        let missing = resolve_inside("cwd", &data.join("nope"), &roots, "the workspace");
        assert!(matches!(missing, Err(SandboxError::InvalidRequest { .. })));
    }

    #[test]
    fn lexically_inside_applies_dot_dot_to_the_text() {
        let roots = [Path::new("/workspace"), Path::new("/tmp")];
        let ok = lexically_inside("cwd", Path::new("/workspace/a/../b"), &roots, "x");
        assert_eq!(ok.expect("inside"), PathBuf::from("/workspace/b"));
        for bad in ["/workspace/../etc", "/", "relative", "/workspaces"] {
            assert!(
                lexically_inside("cwd", Path::new(bad), &roots, "x").is_err(),
                "{bad}"
            );
        }
    }
}
