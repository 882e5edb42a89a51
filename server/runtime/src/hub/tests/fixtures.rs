//! An installed bundle to publish, in a store of its own.

use std::sync::Arc;

use tempfile::TempDir;

use crate::bundle::{BundleStore, InstallOptions, InstalledBundle};

const MANIFEST: &str = "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: NAME\n  version: 1.0.0\n  readme: README.md\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n";
const AGENT: &str = "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You help.\n  model:\n    provider: replay\n    name: main\n";

/// A store holding one bundle `name` (its readme says `readme`).
pub struct Installed {
    /// Holds the store; removed on drop.
    pub _dir: TempDir,
    pub store: BundleStore,
    pub bundle: Arc<InstalledBundle>,
}

impl Installed {
    pub fn new(name: &str, readme: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("project");
        for (rel, text) in [
            ("odyssey.bundle.yaml", MANIFEST.replace("NAME", name)),
            ("agents/main/agent.yaml", AGENT.to_owned()),
            ("README.md", format!("# {name}\n\n{readme}\n")),
        ] {
            let path = project.join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        let store = BundleStore::open(dir.path().join("bundles")).expect("store");
        let bundle = store
            .build_and_install(&project, &InstallOptions::default())
            .expect("installs");
        Self {
            _dir: dir,
            store,
            bundle,
        }
    }

    /// The bundle's archive, exactly as a push sends it.
    pub fn archive(&self) -> Vec<u8> {
        let mut archive = Vec::new();
        self.store
            .export_exact(&self.bundle.id.to_string(), &mut archive)
            .expect("export");
        archive
    }
}
