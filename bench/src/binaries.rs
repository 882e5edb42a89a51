//! Which `odysseyd` and `odyssey-sandbox` are measured, and at which commit.
//!
//! The workspace's release binaries (in the target folder of this harness) are measured.
//! Cargo decides whether they are up to date: `cargo build --release` of the two binaries
//! says, for each, whether it was `fresh` (nothing to rebuild; it then takes well under a
//! second) or built now, from sources newer than the last build. A binary given with
//! `--odysseyd` is used as is.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};

/// One measured binary.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Binary {
    pub path: PathBuf,
    pub bytes: u64,
    /// Its modification time, UTC.
    pub modified: String,
}

/// The measured binaries and the workspace's commit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    pub odysseyd: Binary,
    pub sandbox_helper: Option<Binary>,
    /// `odysseyd --version`.
    pub version: String,
    /// `git rev-parse HEAD` of the workspace.
    pub commit: Option<String>,
    /// Uncommitted changes to tracked files at the time of the run.
    pub dirty: bool,
    /// How the binaries were chosen: up to date, built by this run, or given.
    pub origin: String,
}

/// The workspace's release `odysseyd` (with `odyssey-sandbox` beside it), built first
/// only when cargo finds it out of date; the binary and how it was chosen.
pub fn release_odysseyd() -> Result<(PathBuf, String)> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or_else(|| BenchError::Build("no workspace above the bench crate".into()))?;
    // This binary is <target>/<profile>/odyssey-bench: build into the same target folder.
    let exe = std::env::current_exe().map_err(|e| BenchError::io("locate", "odyssey-bench", e))?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| BenchError::Build(format!("no target folder above {}", exe.display())))?
        .to_path_buf();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = std::process::Command::new(cargo)
        .args(["build", "--release", "--locked"])
        .args(["--message-format", "json-render-diagnostics"])
        .args(["-p", "odyssey-server", "--bin", "odysseyd"])
        .args(["-p", "odyssey-sandbox", "--bin", "odyssey-sandbox"])
        .arg("--target-dir")
        .arg(&target)
        .current_dir(workspace)
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| BenchError::Build(e.to_string()))?;
    // (binary name, its executable, fresh) of each artifact cargo reports.
    let mut built: Vec<(String, PathBuf, bool)> = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.map_err(|e| BenchError::Build(e.to_string()))?;
            let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let executable = message.get("executable").and_then(|e| e.as_str());
            let name = message
                .pointer("/target/name")
                .and_then(|n| n.as_str())
                .unwrap_or_default();
            if let Some(executable) = executable {
                let fresh = message
                    .get("fresh")
                    .and_then(serde_json::Value::as_bool)
                    .unwrap_or(false);
                built.push((name.to_owned(), PathBuf::from(executable), fresh));
            }
        }
    }
    let status = child.wait().map_err(|e| BenchError::Build(e.to_string()))?;
    if !status.success() {
        return Err(BenchError::Build(format!(
            "cargo build ended with {status}"
        )));
    }
    let find = |name: &str| built.iter().find(|(n, _, _)| n == name);
    let (Some(daemon), Some(helper)) = (find("odysseyd"), find("odyssey-sandbox")) else {
        return Err(BenchError::Build(
            "cargo build did not report odysseyd and odyssey-sandbox".into(),
        ));
    };
    let origin = if daemon.2 && helper.2 {
        "the workspace's release build, up to date (cargo: fresh)".to_owned()
    } else {
        "built by this run (`cargo build --release`): its sources were newer".to_owned()
    };
    Ok((daemon.1.clone(), origin))
}

/// Describes the binaries and the workspace's commit.
pub fn describe(odysseyd: &Path, origin: String) -> Measured {
    let version = std::process::Command::new(odysseyd)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "HEAD"]);
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    let helper = odysseyd.with_file_name("odyssey-sandbox");
    Measured {
        odysseyd: binary(odysseyd),
        sandbox_helper: helper.exists().then(|| binary(&helper)),
        version,
        commit,
        dirty,
        origin,
    }
}

fn binary(path: &Path) -> Binary {
    let meta = std::fs::metadata(path).ok();
    Binary {
        path: path.canonicalize().unwrap_or_else(|_| path.to_path_buf()),
        bytes: meta.as_ref().map_or(0, std::fs::Metadata::len),
        modified: meta
            .and_then(|m| m.modified().ok())
            .map(|t| {
                chrono::DateTime::<chrono::Utc>::from(t)
                    .format("%Y-%m-%d %H:%M:%S UTC")
                    .to_string()
            })
            .unwrap_or_default(),
    }
}
