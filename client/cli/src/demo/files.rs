//! The demo bundle, compiled into the binary so `odyssey demo` works from any directory
//! with nothing installed. The source of truth is `bundles/demo/` at the repository root;
//! the test below fails when a file is added there but not here.

/// Every file of the demo bundle: (path relative to the bundle root, contents).
pub(crate) const DEMO_FILES: &[(&str, &str)] = &[
    (
        "odyssey.bundle.yaml",
        include_str!("../../../../bundles/demo/odyssey.bundle.yaml"),
    ),
    (
        "README.md",
        include_str!("../../../../bundles/demo/README.md"),
    ),
    (
        "agents/guide/agent.yaml",
        include_str!("../../../../bundles/demo/agents/guide/agent.yaml"),
    ),
    (
        "cassettes/guide.jsonl",
        include_str!("../../../../bundles/demo/cassettes/guide.jsonl"),
    ),
    (
        "skills/tour/SKILL.md",
        include_str!("../../../../bundles/demo/skills/tour/SKILL.md"),
    ),
];

/// The files as byte slices, ready for [`odyssey_client::pack_files`].
pub(crate) fn demo_files() -> Vec<(&'static str, &'static [u8])> {
    DEMO_FILES
        .iter()
        .map(|(path, text)| (*path, text.as_bytes()))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;
    use odyssey_client::is_excluded_component;

    fn walk(root: &Path, dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_excluded_component(&name) {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, found);
            } else {
                let rel = path.strip_prefix(root).unwrap();
                let rel: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                found.insert(rel.join("/"));
            }
        }
    }

    #[test]
    fn every_file_of_the_demo_folder_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/demo");
        let mut on_disk = BTreeSet::new();
        walk(&root, &root, &mut on_disk);
        let embedded: BTreeSet<String> = DEMO_FILES.iter().map(|(p, _)| (*p).to_owned()).collect();
        let missing: Vec<_> = on_disk.difference(&embedded).collect();
        assert!(missing.is_empty(), "add these to DEMO_FILES: {missing:?}");
        let stale: Vec<_> = embedded.difference(&on_disk).collect();
        assert!(stale.is_empty(), "remove these from DEMO_FILES: {stale:?}");
    }

    #[test]
    fn the_demo_packs() {
        let archive = odyssey_client::pack_files(&demo_files()).unwrap();
        assert!(!archive.is_empty());
    }
}
