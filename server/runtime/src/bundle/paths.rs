//! Rules for paths inside a bundle: which files belong to it, and how a path written in a
//! manifest is checked so it can never reach outside the bundle.

use std::io;
use std::path::{Path, PathBuf};

use super::error::BundleError;

/// How deep a bundle's tree may go: a path has at most this many components (so directories
/// nest at most one less). Deeper trees are refused rather than recursed into.
pub(crate) const MAX_DEPTH: usize = 64;

/// Directory names that are build output or dependencies, never bundle content.
const EXCLUDED_NAMES: [&str; 2] = ["target", "node_modules"];

/// Whether a single path component is left out of bundles: hidden entries (`.git`, the
/// store's own `.odyssey-bundle.json`) and build/dependency folders.
pub(crate) fn is_excluded_component(name: &str) -> bool {
    name.starts_with('.') || EXCLUDED_NAMES.contains(&name)
}

/// Whether a normalized relative path (forward slashes) is left out of bundles.
pub(crate) fn is_excluded(rel: &str) -> bool {
    rel.split('/').any(is_excluded_component)
}

/// Normalizes a path written in a manifest to `a/b/c`: relative, no `..`, no `.`, forward
/// slashes only. The error is a message for the field holding the path.
pub(crate) fn normalize_relative(raw: &str) -> Result<String, String> {
    if raw.trim().is_empty() {
        return Err("must not be empty".to_owned());
    }
    if raw.starts_with('/') || Path::new(raw).is_absolute() {
        return Err(format!("`{raw}` must be a relative path inside the bundle"));
    }
    if raw.contains('\\') {
        return Err(format!("`{raw}` must use forward slashes"));
    }
    if raw.contains('\0') {
        return Err(format!(
            "`{}` must not contain a NUL character",
            raw.escape_debug()
        ));
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(format!("`{raw}` must not contain `..`")),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err(format!("`{raw}` does not name a file"));
    }
    let rel = parts.join("/");
    if is_excluded(&rel) {
        return Err(format!(
            "`{raw}` is excluded from bundles (hidden entries, target/ and node_modules/ are never packaged)"
        ));
    }
    Ok(rel)
}

/// What a manifest path turned out to be on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    File,
    Dir,
}

/// Resolves `rel` (already normalized) under `root` (canonical), following symlinks, and
/// checks the result is still inside `root` and is a file or directory. Failures name
/// `file` (the YAML file holding the path) and `field`.
pub(crate) fn resolve_inside(
    root: &Path,
    rel: &str,
    file: &str,
    field: &str,
) -> Result<(PathBuf, Found), BundleError> {
    let refuse = |message: String| BundleError::manifest(file, field, message);
    let resolved = match root.join(rel).canonicalize() {
        Ok(path) => path,
        // A file standing where the path needs a folder, or a name longer than the file
        // system allows, is as absent as a missing file: the manifest's mistake.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound
                    | io::ErrorKind::NotADirectory
                    | io::ErrorKind::InvalidFilename
            ) =>
        {
            return Err(refuse(format!("`{rel}` does not exist in the bundle")));
        }
        Err(e) => return Err(BundleError::io(format!("resolving {rel}"), e)),
    };
    if !resolved.starts_with(root) {
        return Err(refuse(format!("`{rel}` resolves outside the bundle")));
    }
    let meta =
        std::fs::metadata(&resolved).map_err(|e| BundleError::io(format!("reading {rel}"), e))?;
    if meta.is_file() {
        Ok((resolved, Found::File))
    } else if meta.is_dir() {
        Ok((resolved, Found::Dir))
    } else {
        Err(refuse(format!("`{rel}` is not a regular file")))
    }
}
