//! What every benchmark starts from: the `odysseyd` binary, a temporary folder that is
//! removed however the run ends, loopback model servers and daemons with fresh homes.

use std::path::{Path, PathBuf};

use odyssey_testing::openai_wire::{OpenAiWireServer, Script};

use crate::daemon::{Daemon, DaemonSpec};
use crate::error::{BenchError, Result};
use crate::settings::Settings;

pub struct Env {
    pub binary: PathBuf,
    pub settings: Settings,
    /// Removed when the harness ends (also on error; a kill leaves it to the OS's
    /// temporary-file cleanup).
    tmp: tempfile::TempDir,
}

/// A home folder for one daemon, with its log beside it.
pub struct Home {
    pub dir: PathBuf,
    pub log: PathBuf,
}

impl Env {
    pub fn new(binary: PathBuf, settings: Settings, tmp_parent: &Path) -> Result<Self> {
        let tmp = tempfile::Builder::new()
            .prefix("odyssey-bench-")
            .tempdir_in(tmp_parent)
            .map_err(|e| BenchError::io("create a temporary folder in", tmp_parent, e))?;
        Ok(Self {
            binary,
            settings,
            tmp,
        })
    }

    pub fn tmp(&self) -> &Path {
        self.tmp.path()
    }

    /// A new, empty home named after `name` under `parent`, or under the run's temporary
    /// folder.
    pub fn home_in(&self, parent: Option<&Path>, name: &str) -> Result<Home> {
        let parent = parent.unwrap_or(self.tmp.path());
        // A later round asks for the same name: it gets a home of its own (`name-2`, ...).
        let mut unique = name.to_owned();
        let mut n = 1;
        while parent.join(&unique).exists() {
            n += 1;
            unique = format!("{name}-{n}");
        }
        let dir = parent.join(&unique);
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::io("create", &dir, e))?;
        Ok(Home {
            log: self.tmp.path().join(format!("{unique}.log")),
            dir,
        })
    }

    pub fn home(&self, name: &str) -> Result<Home> {
        self.home_in(None, name)
    }

    /// The spec of a daemon on `home`, using `model` as its `openai` provider.
    pub fn spec(
        &self,
        home: &Home,
        model: Option<&OpenAiWireServer>,
        args: &[String],
    ) -> DaemonSpec {
        DaemonSpec {
            binary: self.binary.clone(),
            home: home.dir.clone(),
            log: home.log.clone(),
            model_url: model.map(OpenAiWireServer::base_url),
            args: args
                .iter()
                .chain(&self.settings.daemon_args)
                .cloned()
                .collect(),
            env: Vec::new(),
        }
    }

    pub async fn daemon(
        &self,
        home: &Home,
        model: Option<&OpenAiWireServer>,
        args: &[String],
    ) -> Result<Daemon> {
        Daemon::start(&self.spec(home, model, args)).await
    }
}

/// Starts a loopback model server on `127.0.0.1:0`.
pub async fn model(script: Script) -> Result<OpenAiWireServer> {
    OpenAiWireServer::start(script)
        .await
        .map_err(BenchError::Model)
}
