//! An installed bundle and the install record kept beside its files.
//!
//! The record (`.odyssey-bundle.json`) holds what is expensive or impossible to recompute
//! from the files: the digest and the install time. It is hidden, so it is never part of the
//! digest or of an export.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::error::BundleError;
use super::markdown::truncate;
use super::project::read_manifest;
use super::skill::skill_body;
use super::types::{BundleId, BundleManifest};

/// The install record's file name inside an installed bundle directory.
pub const RECORD_FILE: &str = ".odyssey-bundle.json";
const RECORD_FORMAT: u32 = 1;

/// An installed bundle, parsed once and shared (as `Arc`) by everyone who resolves it.
#[derive(Clone, Debug)]
pub struct InstalledBundle {
    pub id: BundleId,
    /// The installed directory; treat it as read-only.
    pub root: PathBuf,
    pub manifest: BundleManifest,
    pub installed_at: SystemTime,
    pub size_bytes: u64,
    pub file_count: u32,
}

impl InstalledBundle {
    /// The readme's text, when the manifest names one and it reads as UTF-8.
    pub fn readme_text(&self) -> Option<String> {
        let readme = self.manifest.readme.as_ref()?;
        fs::read_to_string(self.root.join(readme)).ok()
    }

    /// The instructions of skill `name`: its SKILL.md without the front matter.
    pub fn read_skill(&self, name: &str) -> Result<String, BundleError> {
        let skill = self
            .manifest
            .skill(name)
            .ok_or_else(|| BundleError::SkillNotFound {
                bundle: self.id.to_string(),
                skill: name.to_owned(),
            })?;
        let text = fs::read_to_string(self.root.join(&skill.path))
            .map_err(|e| BundleError::io(format!("reading skill {name} of {}", self.id), e))?;
        Ok(skill_body(&text).to_owned())
    }

    /// Reads an installed bundle directory: its record and its manifest.
    pub(crate) fn load(root: PathBuf) -> Result<Self, BundleError> {
        let record = InstallRecord::read(&root)?;
        let manifest = read_manifest(&root).map_err(|e| corrupt(&root, e.to_string()))?;
        if manifest.name != record.name || manifest.version.to_string() != record.version {
            return Err(corrupt(
                &root,
                "the install record does not match the manifest".to_owned(),
            ));
        }
        Ok(Self {
            id: BundleId {
                namespace: record.namespace,
                name: manifest.name.clone(),
                version: manifest.version.clone(),
                digest: record.digest,
            },
            root,
            manifest,
            installed_at: UNIX_EPOCH + Duration::from_millis(record.installed_at_unix_ms),
            size_bytes: record.size_bytes,
            file_count: record.file_count,
        })
    }
}

fn corrupt(root: &Path, message: String) -> BundleError {
    BundleError::Corrupt {
        path: root.to_path_buf(),
        message: truncate(message, 300),
    }
}

/// What the store writes beside the bundle files at install time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstallRecord {
    pub format: u32,
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub digest: String,
    pub installed_at_unix_ms: u64,
    pub size_bytes: u64,
    pub file_count: u32,
}

impl InstallRecord {
    pub fn new(id: &BundleId, installed_at: SystemTime, size_bytes: u64, file_count: u32) -> Self {
        let millis = installed_at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        Self {
            format: RECORD_FORMAT,
            namespace: id.namespace.clone(),
            name: id.name.clone(),
            version: id.version.to_string(),
            digest: id.digest.clone(),
            installed_at_unix_ms: u64::try_from(millis).unwrap_or(u64::MAX),
            size_bytes,
            file_count,
        }
    }

    pub fn read(dir: &Path) -> Result<Self, BundleError> {
        let path = dir.join(RECORD_FILE);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(corrupt(dir, format!("{RECORD_FILE} is missing")));
            }
            Err(e) => return Err(BundleError::io(format!("reading {}", path.display()), e)),
        };
        let record: Self = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(dir, format!("{RECORD_FILE}: {e}")))?;
        if record.format != RECORD_FORMAT {
            return Err(corrupt(
                dir,
                format!("{RECORD_FILE}: unknown format {}", record.format),
            ));
        }
        Ok(record)
    }

    /// Writes the record into the staging directory before it is renamed in; the store then
    /// syncs the directory, record and files together.
    pub fn write(&self, dir: &Path) -> Result<(), BundleError> {
        let path = dir.join(RECORD_FILE);
        let ctx = |e| BundleError::io(format!("writing {}", path.display()), e);
        let json = serde_json::to_vec_pretty(self).map_err(|e| ctx(io::Error::other(e)))?;
        let mut file = File::create_new(&path).map_err(ctx)?;
        file.write_all(&json).map_err(ctx)
    }
}
