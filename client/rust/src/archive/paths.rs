//! The path rules both directions share. They match the server's, so a project packs to
//! exactly the files the server would take from the same folder.

/// Folder names that are build output or dependencies, never bundle content.
const EXCLUDED_NAMES: [&str; 2] = ["target", "node_modules"];

/// Whether one path component is left out: hidden entries (`.git`, `.env`) and build or
/// dependency folders.
pub fn is_excluded_component(name: &str) -> bool {
    name.starts_with('.') || EXCLUDED_NAMES.contains(&name)
}

/// Checks an archive path and normalizes it to `a/b/c`. `Ok(None)` is the root itself
/// (`./`). The error says why the path could escape the destination.
pub(crate) fn normalize_entry(raw: &str) -> Result<Option<String>, &'static str> {
    if raw.starts_with('/') || raw.starts_with('\\') || std::path::Path::new(raw).is_absolute() {
        return Err("absolute paths are not allowed");
    }
    if raw.contains('\\') {
        return Err("backslashes are not allowed in archive paths");
    }
    if raw
        .split('/')
        .next()
        .is_some_and(|first| first.len() == 2 && first.ends_with(':'))
    {
        return Err("drive-relative paths are not allowed");
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("`..` is not allowed in archive paths"),
            other => parts.push(other),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_relative_paths() {
        assert_eq!(
            normalize_entry("./a//b/./c").unwrap().as_deref(),
            Some("a/b/c")
        );
        assert_eq!(normalize_entry("./").unwrap(), None);
    }

    #[test]
    fn refuses_escapes() {
        for raw in ["/etc/passwd", "a/../../b", "..", "a\\b", "\\x", "C:/x"] {
            assert!(normalize_entry(raw).is_err(), "{raw} was accepted");
        }
    }

    #[test]
    fn excludes_hidden_and_build_folders() {
        assert!(is_excluded_component(".git"));
        assert!(is_excluded_component("target"));
        assert!(is_excluded_component("node_modules"));
        assert!(!is_excluded_component("agents"));
    }
}
