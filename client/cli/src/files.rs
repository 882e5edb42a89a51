//! Writing files the CLI produces (exports) so that a failure never leaves a truncated
//! file behind under the name the user asked for.

use std::io::Write;
use std::path::Path;

use super::error::CliError;

/// Writes `bytes` to a temporary file beside `path`, then renames it into place.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(parent)
        .map_err(|e| CliError::file("cannot write", path, e))?;
    file.write_all(bytes)
        .map_err(|e| CliError::file("cannot write", path, e))?;
    file.as_file()
        .sync_all()
        .map_err(|e| CliError::file("cannot write", path, e))?;
    file.persist(path)
        .map_err(|e| CliError::file("cannot write", path, e.error))?;
    Ok(())
}

/// `12.3 KiB`.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(12_595), "12.3 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn writes_replace_the_target_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.tar.gz");
        write_atomically(&path, b"first").unwrap();
        write_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
