//! The `init` template must be a bundle this module accepts.

use std::fs;

use super::fixtures::load;
use crate::bundle::{BundleError, BundleStore, InstallOptions, scaffold_archive, write_scaffold};
use crate::error::ErrorKind;

#[test]
fn written_scaffold_passes_validation() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("my-agent");
    write_scaffold(&project, "my-agent").unwrap();
    let manifest = load(&project).unwrap().manifest;
    assert_eq!(manifest.name, "my-agent");
    assert_eq!(manifest.version, semver::Version::new(0, 1, 0));
    let agent = manifest.default_agent();
    assert_eq!(
        (
            agent.id.as_str(),
            agent.model.provider.as_str(),
            agent.model.name.as_str()
        ),
        ("hello", "replay", "hello")
    );
    assert_eq!(
        agent.tools.allow,
        ["Read", "LS", "Glob", "Grep", "Skill", "UpdatePlan"]
    );
    assert_eq!(agent.tools.ask, ["Write", "Edit", "Bash"]);
    let tools: Vec<_> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        tools,
        [
            "Read",
            "LS",
            "Glob",
            "Grep",
            "Write",
            "Edit",
            "Bash",
            "Skill",
            "UpdatePlan"
        ]
    );
    assert!(manifest.tools.iter().all(|t| t.source == "builtin"));
    assert_eq!(
        manifest.sandbox.mode,
        crate::policy::SandboxMode::WorkspaceWrite
    );
    assert!(manifest.sandbox.network.is_empty());
    assert_eq!(manifest.skills[0].name, "greet");
    assert_eq!(manifest.skills[0].error, None);
    assert!(!manifest.skills[0].description.is_empty());
    assert!(!manifest.description.is_empty());
    let cassette = fs::read_to_string(project.join("cassettes/hello.jsonl")).unwrap();
    assert_eq!(
        cassette,
        "{\"text\": \"Hello! I am the hello agent. Edit agents/hello/agent.yaml to give me a real model.\"}\n"
    );
    let line: serde_json::Value = serde_json::from_str(cassette.trim()).unwrap();
    assert!(line["text"].is_string());
}

#[test]
fn scaffold_archive_installs_and_is_deterministic() {
    let bytes = scaffold_archive("demo").unwrap();
    assert_eq!(bytes, scaffold_archive("demo").unwrap());
    let root = tempfile::tempdir().unwrap();
    let store = BundleStore::open(root.path().join("bundles")).unwrap();
    let installed = store
        .install_project_archive(bytes.as_slice(), &InstallOptions::default())
        .unwrap();
    assert_eq!(installed.id.to_string(), "local/demo@0.1.0");
    assert_eq!(installed.file_count, 5);
}

#[test]
fn scaffold_refuses_bad_names_and_non_empty_directories() {
    let err = scaffold_archive("Bad Name").unwrap_err();
    assert!(
        matches!(
            err,
            BundleError::InvalidName {
                field: "bundle name",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);

    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("keep.txt"), "mine").unwrap();
    let err = write_scaffold(dir.path(), "demo").unwrap_err();
    assert!(
        matches!(err, BundleError::DirectoryNotEmpty { .. }),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn numeric_looking_names_stay_strings() {
    let dir = tempfile::tempdir().unwrap();
    write_scaffold(dir.path(), "123").unwrap();
    assert_eq!(load(dir.path()).unwrap().manifest.name, "123");
}
