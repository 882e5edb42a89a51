//! Path checks: where a working directory may be, which host folders may be mounted, and
//! whether the sandbox user can reach a folder bubblewrap has to bind.
//!
//! Checks resolve symlinks first (`canonicalize`) and compare the results, so a symlink
//! planted in the workspace cannot make an outside folder look like an inside one.

use std::os::unix::fs::MetadataExt;
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

/// The first folder on the way to `path` (including `path` when it is a folder) that
/// `uid`/`gid` may not search, judged from the mode bits. A folder carrying an ACL is
/// assumed searchable: the ACL may grant what the mode bits do not, and bubblewrap will
/// report the truth if it does not.
pub fn unsearchable_ancestor(path: &Path, uid: u32, gid: u32) -> Option<PathBuf> {
    let mut current = PathBuf::new();
    for component in path.components() {
        current.push(component);
        let Ok(meta) = current.metadata() else {
            return Some(current);
        };
        if !meta.is_dir() {
            break;
        }
        let mode = meta.mode();
        let searchable = if meta.uid() == uid {
            mode & 0o100 != 0
        } else if meta.gid() == gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !searchable && !has_acl(&current) {
            return Some(current);
        }
    }
    None
}

/// Whether the folder carries a POSIX access ACL.
fn has_acl(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: both strings are NUL-terminated and live across the call; a null buffer
    // with size 0 only asks for the attribute's size.
    let size = unsafe {
        libc::getxattr(
            c_path.as_ptr(),
            c"system.posix_acl_access".as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    size > 0
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
    fn unsearchable_ancestor_reads_mode_bits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let locked = dir.path().join("locked");
        let inner = locked.join("inner");
        std::fs::create_dir_all(&inner).expect("mkdir");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
            .expect("chmod");
        // uid/gid that own nothing here: only the "other" bits count.
        let (uid, gid) = (4_000_000, 4_000_000);
        assert_eq!(
            unsearchable_ancestor(&inner, uid, gid),
            Some(locked.clone())
        );
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o711)).expect("chmod");
        assert_eq!(unsearchable_ancestor(&inner, uid, gid), None);
    }
}
