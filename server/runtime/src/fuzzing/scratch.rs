//! What the targets share: scratch directories, and the check that a refused bundle is
//! refused as the client's mistake.

use std::path::Path;

use tempfile::TempDir;

use crate::ErrorKind;
use crate::bundle::BundleError;

/// A fresh directory under the system's temporary directory (`TMPDIR`; `scripts/fuzz`
/// points it at a tmpfs when there is one, so the code's fsyncs cost nothing).
pub(super) fn dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("odyssey-fuzz-")
        .tempdir()
        .unwrap_or_else(|e| panic!("cannot create a scratch directory: {e}"))
}

/// A bundle, archive or tree from a client is refused with `INVALID_ARGUMENT`, names the
/// field or entry at fault, and never shows the server's own paths (`scratch`, where the
/// harness put the client's files).
pub(super) fn assert_bad_input(err: &BundleError, scratch: &Path) {
    let message = err.to_string();
    assert_eq!(
        err.kind(),
        ErrorKind::InvalidArgument,
        "a bad bundle was reported as {:?} ({}): {message}",
        err.kind(),
        err.reason()
    );
    assert!(
        err.field().is_some_and(|f| !f.is_empty()),
        "the error names no field or entry: {message}"
    );
    for path in [scratch.to_path_buf(), canonical(scratch)] {
        let path = path.to_string_lossy();
        assert!(
            !message.contains(path.as_ref()),
            "the error shows a server path: {message}"
        );
    }
}

pub(super) fn canonical(path: &Path) -> std::path::PathBuf {
    path.canonicalize()
        .unwrap_or_else(|e| panic!("cannot resolve {}: {e}", path.display()))
}
