//! Skill roots and catalogs on real folders.

mod catalog;
mod roots;

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use crate::bundle::{ArchiveLimits, BundleId, InstalledBundle, load_project};

/// Writes `text` at `rel` under `dir`, creating folders.
pub(crate) fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

/// A SKILL.md with front matter.
pub(crate) fn skill_md(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n{body}")
}

/// A bundle in `dir` whose manifest lists `skills` (`(name, SKILL.md text)`), loaded the
/// way the store loads an installed bundle.
pub(crate) fn bundle(dir: &Path, skills: &[(&str, &str)]) -> InstalledBundle {
    let list: String = skills
        .iter()
        .map(|(name, _)| format!("    - name: {name}\n      path: skills/{name}\n"))
        .collect();
    let skills_yaml = if list.is_empty() {
        String::new()
    } else {
        format!("  skills:\n{list}")
    };
    write(
        dir,
        "odyssey.bundle.yaml",
        &format!(
            "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: prompted\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n{skills_yaml}"
        ),
    );
    write(
        dir,
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You help.\n  model:\n    provider: replay\n    name: main\n",
    );
    for (name, text) in skills {
        write(dir, &format!("skills/{name}/SKILL.md"), text);
    }
    let loaded = load_project(dir, &ArchiveLimits::default()).expect("bundle loads");
    InstalledBundle {
        id: BundleId {
            namespace: "test".into(),
            name: loaded.manifest.name.clone(),
            version: loaded.manifest.version.clone(),
            digest: loaded.digest,
        },
        root: loaded.root,
        manifest: loaded.manifest,
        installed_at: SystemTime::now(),
        size_bytes: loaded.size_bytes,
        file_count: loaded.file_count,
    }
}
