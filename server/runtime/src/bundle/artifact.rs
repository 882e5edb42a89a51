//! `build_to`: validating a project and writing its bundle archive locally, without a
//! store. The archive is the one `BundleStore::install_bundle_archive` imports.

use std::fs;
use std::io::BufWriter;
use std::path::Path;

use super::archive::{ArchiveLimits, write_files};
use super::error::BundleError;
use super::files::collect_files;
use super::project::read_manifest;
use super::reference::DEFAULT_NAMESPACE;
use super::types::BundleId;

/// Validates the project in `project_dir` and writes its archive to `output`, replacing it
/// atomically. The id's namespace is `local`; nothing is installed.
pub fn build_to(project_dir: &Path, output: &Path) -> Result<BundleId, BundleError> {
    build_to_with_limits(project_dir, output, &ArchiveLimits::default())
}

/// [`build_to`] with explicit limits.
pub fn build_to_with_limits(
    project_dir: &Path,
    output: &Path,
    limits: &ArchiveLimits,
) -> Result<BundleId, BundleError> {
    let mut files = collect_files(project_dir, limits)?;
    // An earlier build written into the project must not end up inside the next one.
    if let Ok(previous) = output.canonicalize() {
        files.retain(|f| f.path != previous);
    }
    let manifest = read_manifest(project_dir)?;

    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let ctx = |e| BundleError::io(format!("writing {}", output.display()), e);
    fs::create_dir_all(parent).map_err(ctx)?;
    let tmp = tempfile::Builder::new()
        .prefix(".odyssey-bundle-")
        .tempfile_in(parent)
        .map_err(ctx)?;
    let (writer, digest) = write_files(&files, BufWriter::new(tmp))?;
    let tmp = writer.into_inner().map_err(|e| ctx(e.into_error()))?;
    tmp.as_file().sync_all().map_err(ctx)?;
    tmp.persist(output).map_err(|e| ctx(e.error))?;

    Ok(BundleId {
        namespace: DEFAULT_NAMESPACE.to_owned(),
        name: manifest.name,
        version: manifest.version,
        digest,
    })
}
