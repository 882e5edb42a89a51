//! The installed bundles on disk: `<root>/<namespace>/<name>/<version>/`, each directory
//! holding the bundle files and its install record.
//!
//! Installs are atomic: the bundle is unpacked into `<root>/.staging/<uuid>/`, validated and
//! digested there, then renamed into place. Writers (install, delete) are serialized by one
//! lock; readers never wait for them. Parsed bundles are cached by directory, so resolving a
//! bundle again costs a directory lookup, not a YAML parse.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::archive::{ArchiveLimits, write_files};
use super::catalog::Catalog;
use super::error::BundleError;
use super::files::{collect_files, copy_into};
use super::installed::{InstallRecord, InstalledBundle};
use super::names::check_name;
use super::project::{LoadedBundle, find_project_root, load_project};
#[cfg(doc)]
use super::reference::BundleReference;
use super::reference::DEFAULT_NAMESPACE;
use super::staging::{self, Staging};
use super::types::BundleId;
use super::unpack::{ArchiveKind, unpack};

const STAGING_DIR: &str = ".staging";

/// How to install a bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallOptions {
    pub namespace: String,
    /// Replace an installed bundle of the same version whose content differs.
    pub force: bool,
}

impl Default for InstallOptions {
    fn default() -> Self {
        Self {
            namespace: DEFAULT_NAMESPACE.to_owned(),
            force: false,
        }
    }
}

/// The bundles installed under one root directory. `Send + Sync`; its calls block on disk
/// I/O, so async callers run them on a blocking thread.
#[derive(Debug)]
pub struct BundleStore {
    root: PathBuf,
    limits: ArchiveLimits,
    catalog: Catalog,
    writer: Mutex<()>,
}

impl BundleStore {
    /// Opens (creating it if needed) the store at `root`, removing staging directories a
    /// crash left behind. One process owns a root at a time.
    pub fn open(root: PathBuf) -> Result<Self, BundleError> {
        fs::create_dir_all(&root)
            .map_err(|e| BundleError::io(format!("creating {}", root.display()), e))?;
        staging::reset(&root.join(STAGING_DIR))?;
        Ok(Self {
            catalog: Catalog::new(root.clone()),
            root,
            limits: ArchiveLimits::default(),
            writer: Mutex::new(()),
        })
    }

    /// Replaces the default archive and project limits.
    pub fn with_limits(mut self, limits: ArchiveLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn limits(&self) -> ArchiveLimits {
        self.limits
    }

    /// Installs a project tree sent as an archive (BuildBundle).
    pub fn install_project_archive(
        &self,
        archive: &[u8],
        opts: &InstallOptions,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        self.install_with(opts, None, |dir| {
            unpack(archive, dir, ArchiveKind::Project, &self.limits)?;
            Ok(find_project_root(dir))
        })
    }

    /// Installs a built bundle archive, as written by `export` or `build_to` (ImportBundle).
    pub fn install_bundle_archive(
        &self,
        archive: &[u8],
        opts: &InstallOptions,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        self.install_with(opts, None, |dir| {
            unpack(archive, dir, ArchiveKind::Bundle, &self.limits)?;
            Ok(dir.to_path_buf())
        })
    }

    /// Installs a bundle archive like [`Self::install_bundle_archive`], only if its content
    /// digest is `expected` (a bundle fetched from a registry, which announced its digest).
    pub fn install_verified_archive(
        &self,
        archive: &[u8],
        opts: &InstallOptions,
        expected: &str,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        self.install_with(opts, Some(expected), |dir| {
            unpack(archive, dir, ArchiveKind::Bundle, &self.limits)?;
            Ok(dir.to_path_buf())
        })
    }

    /// Builds the project in `project_dir` (on this machine) and installs it.
    pub fn build_and_install(
        &self,
        project_dir: &Path,
        opts: &InstallOptions,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        let files = collect_files(project_dir, &self.limits)?;
        self.install_with(opts, None, |dir| {
            copy_into(&files, dir)?;
            Ok(dir.to_path_buf())
        })
    }

    /// The installed bundle `reference` names (see [`BundleReference`] for the forms).
    /// Resolving a bundle again is served from memory.
    pub fn resolve(&self, reference: &str) -> Result<Arc<InstalledBundle>, BundleError> {
        self.catalog.resolve(reference)
    }

    /// The bundle an exact reference names when it is cached, touching no file (see
    /// [`Catalog::cached`]); `None` means: resolve it.
    pub fn cached(&self, reference: &str) -> Option<Arc<InstalledBundle>> {
        self.catalog.cached(reference)
    }

    /// Installed bundles, optionally of one namespace, sorted by namespace, name, version.
    /// A damaged install is logged and left out rather than failing the whole listing.
    pub fn list(&self, namespace: Option<&str>) -> Result<Vec<Arc<InstalledBundle>>, BundleError> {
        if let Some(ns) = namespace {
            check_name("namespace", ns)?;
        }
        self.catalog.scan(namespace, None)
    }

    /// Removes an installed bundle and returns what it was.
    pub fn delete(&self, reference: &str) -> Result<Arc<InstalledBundle>, BundleError> {
        let _writer = self.lock_writer();
        let bundle = self.resolve(reference)?;
        let aside = Staging::reserve(&self.root.join(STAGING_DIR), "-deleted");
        match fs::rename(&bundle.root, aside.path()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(BundleError::NotFound {
                    reference: reference.to_owned(),
                });
            }
            Err(e) => return Err(BundleError::io(format!("removing {}", bundle.id), e)),
        }
        self.catalog.forget(&bundle.root);
        // Empty name and namespace folders go too; a non-empty one simply stays.
        if let Some(name_dir) = bundle.root.parent() {
            let _ = fs::remove_dir(name_dir);
            if let Some(ns_dir) = name_dir.parent() {
                let _ = fs::remove_dir(ns_dir);
            }
        }
        drop(aside);
        tracing::info!(bundle = %bundle.id, "bundle deleted");
        Ok(bundle)
    }

    /// Writes the bundle `reference` names as an archive into `out` (ExportBundle).
    pub fn export(
        &self,
        reference: &str,
        out: impl Write,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        let (bundle, digest) = self.write_archive(reference, out)?;
        if digest != bundle.id.digest {
            tracing::warn!(bundle = %bundle.id, recorded = %bundle.id.digest, actual = %digest, "installed bundle files changed since install");
        }
        Ok(bundle)
    }

    /// Like [`Self::export`], but refuses a bundle whose files no longer have the digest
    /// recorded at install: what is published must be what its digest says.
    pub fn export_exact(
        &self,
        reference: &str,
        out: impl Write,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        let (bundle, digest) = self.write_archive(reference, out)?;
        if digest != bundle.id.digest {
            return Err(BundleError::Corrupt {
                path: bundle.root.clone(),
                message: format!(
                    "its files changed since install (recorded {}, now {digest}); reinstall it",
                    bundle.id.digest
                ),
            });
        }
        Ok(bundle)
    }

    fn write_archive(
        &self,
        reference: &str,
        mut out: impl Write,
    ) -> Result<(Arc<InstalledBundle>, String), BundleError> {
        let bundle = self.resolve(reference)?;
        let files = collect_files(&bundle.root, &self.limits)?;
        let (_, digest) = write_files(&files, &mut out)?;
        out.flush()
            .map_err(|e| BundleError::io(format!("writing the archive of {}", bundle.id), e))?;
        Ok((bundle, digest))
    }

    fn install_with(
        &self,
        opts: &InstallOptions,
        expected_digest: Option<&str>,
        fill: impl FnOnce(&Path) -> Result<PathBuf, BundleError>,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        check_name("namespace", &opts.namespace)?;
        let staging = Staging::create(&self.root.join(STAGING_DIR), "")?;
        let bundle_root = fill(staging.path())?;
        let loaded = load_project(&bundle_root, &self.limits)?;
        if let Some(expected) = expected_digest
            && loaded.digest != expected
        {
            return Err(BundleError::DigestMismatch {
                expected: expected.to_owned(),
                actual: loaded.digest,
            });
        }
        self.commit(loaded, opts)
        // `staging` drops here: whatever was not renamed into place is removed.
    }

    /// Moves a validated staging directory into place (see the module docs).
    fn commit(
        &self,
        loaded: LoadedBundle,
        opts: &InstallOptions,
    ) -> Result<Arc<InstalledBundle>, BundleError> {
        let id = BundleId {
            namespace: opts.namespace.clone(),
            name: loaded.manifest.name.clone(),
            version: loaded.manifest.version.clone(),
            digest: loaded.digest.clone(),
        };
        let target = self
            .catalog
            .bundle_dir(&id.namespace, &id.name, &id.version);
        let _writer = self.lock_writer();
        let replacing = target.exists();
        if replacing {
            let installed = match InstallRecord::read(&target) {
                Ok(record) if record.digest == id.digest => return self.catalog.load(&target),
                Ok(record) => record.digest,
                Err(BundleError::Corrupt { message, .. }) => {
                    format!("an unreadable install ({message})")
                }
                Err(e) => return Err(e),
            };
            if !opts.force {
                return Err(BundleError::VersionExists {
                    bundle: id.to_string(),
                    installed,
                    new: id.digest,
                });
            }
        }
        let record =
            InstallRecord::new(&id, SystemTime::now(), loaded.size_bytes, loaded.file_count);
        record.write(&loaded.root)?;
        sync_files(&loaded.root)?;
        let parent = self.root.join(&id.namespace).join(&id.name);
        let ctx = |e| BundleError::io(format!("installing {id}"), e);
        fs::create_dir_all(&parent).map_err(ctx)?;
        if replacing {
            let old = Staging::reserve(&self.root.join(STAGING_DIR), "-replaced");
            fs::rename(&target, old.path()).map_err(ctx)?;
            if let Err(e) = fs::rename(&loaded.root, &target) {
                if let Err(restore) = fs::rename(old.path(), &target) {
                    tracing::error!(bundle = %id, error = %restore, "could not restore the replaced bundle");
                }
                return Err(ctx(e));
            }
        } else {
            fs::rename(&loaded.root, &target).map_err(ctx)?;
        }
        sync_dir(&parent);
        let bundle = Arc::new(InstalledBundle {
            id,
            root: target.clone(),
            manifest: loaded.manifest,
            installed_at: UNIX_EPOCH + Duration::from_millis(record.installed_at_unix_ms),
            size_bytes: record.size_bytes,
            file_count: record.file_count,
        });
        self.catalog.remember(&bundle);
        tracing::info!(bundle = %bundle.id, digest = %bundle.id.digest, replaced = replacing, "bundle installed");
        Ok(bundle)
    }

    /// Serializes writers. A panic in another writer leaves nothing half-done on disk that
    /// the next writer could trip over (staging is separate), so poisoning is ignored.
    fn lock_writer(&self) -> MutexGuard<'_, ()> {
        crate::sync::lock(&self.writer)
    }
}

/// Makes every file written under `dir` durable with one call, rather than one sync per file
/// as they are written: a bundle of thousands of small files costs one flush, and an
/// install that is refused costs none.
fn sync_files(dir: &Path) -> Result<(), BundleError> {
    let ctx = |e: io::Error| BundleError::io(format!("syncing {}", dir.display()), e);
    let handle = fs::File::open(dir).map_err(ctx)?;
    rustix::fs::syncfs(&handle).map_err(|e| ctx(e.into()))
}

/// Makes a rename durable. Best effort: not every platform can sync a directory.
fn sync_dir(dir: &Path) {
    if let Err(e) = fs::File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(path = %dir.display(), error = %e, "could not sync a directory");
    }
}
