//! Reading what is installed: the `<root>/<namespace>/<name>/<version>/` layout, reference
//! resolution, and the cache of parsed bundles.
//!
//! The cache is keyed by installed directory. Its `epoch` changes on every install and
//! delete, so a reader that parsed a directory while a writer replaced it does not cache
//! stale content.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::error::BundleError;
use super::installed::InstalledBundle;
use super::names::name_problem;
use super::reference::{BundleReference, VersionSelector};

#[derive(Debug)]
pub(crate) struct Catalog {
    root: PathBuf,
    cache: RwLock<Cache>,
}

#[derive(Debug, Default)]
struct Cache {
    epoch: u64,
    bundles: HashMap<PathBuf, Arc<InstalledBundle>>,
}

impl Catalog {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            cache: RwLock::default(),
        }
    }

    pub fn bundle_dir(&self, namespace: &str, name: &str, version: &semver::Version) -> PathBuf {
        self.root
            .join(namespace)
            .join(name)
            .join(version.to_string())
    }

    /// The bundle an exact reference (`namespace/name@version`) names, if it is in the
    /// cache: no file is touched. Installs and deletes go through the store, which keeps
    /// the cache in step, so a hit is what [`Catalog::resolve`] would find. A turn
    /// resolves its session's pinned bundle this way without leaving the async threads.
    pub fn cached(&self, reference: &str) -> Option<Arc<InstalledBundle>> {
        let BundleReference::Named {
            namespace,
            name,
            version: VersionSelector::Exact(version),
        } = BundleReference::parse(reference).ok()?
        else {
            return None;
        };
        let dir = self.bundle_dir(&namespace, &name, &version);
        crate::sync::read(&self.cache).bundles.get(&dir).cloned()
    }

    /// The installed bundle `reference` names.
    pub fn resolve(&self, reference: &str) -> Result<Arc<InstalledBundle>, BundleError> {
        let not_found = || BundleError::NotFound {
            reference: reference.to_owned(),
        };
        match BundleReference::parse(reference)? {
            BundleReference::Named {
                namespace,
                name,
                version: VersionSelector::Exact(version),
            } => {
                let dir = self.bundle_dir(&namespace, &name, &version);
                if !dir.is_dir() {
                    return Err(not_found());
                }
                self.load(&dir)
            }
            BundleReference::Named {
                namespace,
                name,
                version: VersionSelector::Latest,
            } => {
                let latest = self
                    .versions(&namespace, &name)?
                    .into_iter()
                    .max()
                    .ok_or_else(not_found)?;
                self.load(&self.bundle_dir(&namespace, &name, &latest))
            }
            BundleReference::Digest { name, digest } => {
                let (ns, bundle_name) = name.map_or((None, None), |(ns, n)| (Some(ns), Some(n)));
                let mut found: Vec<_> = self
                    .scan(ns.as_deref(), bundle_name.as_deref())?
                    .into_iter()
                    .filter(|b| b.id.digest == digest)
                    .collect();
                match found.len() {
                    0 => Err(not_found()),
                    1 => Ok(found.remove(0)),
                    _ => Err(BundleError::AmbiguousReference {
                        reference: reference.to_owned(),
                        candidates: found.iter().map(|b| b.id.to_string()).collect(),
                    }),
                }
            }
        }
    }

    /// Installed versions of `namespace/name` (directories whose name parses as semver).
    fn versions(&self, namespace: &str, name: &str) -> Result<Vec<semver::Version>, BundleError> {
        Ok(subdirs(&self.root.join(namespace).join(name))?
            .into_iter()
            .filter_map(|v| semver::Version::parse(&v).ok())
            .collect())
    }

    /// Installed bundles matching the filters, sorted by namespace, name and version.
    /// A damaged install is logged and left out rather than failing the whole listing.
    pub fn scan(
        &self,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> Result<Vec<Arc<InstalledBundle>>, BundleError> {
        let mut out = Vec::new();
        for ns in subdirs(&self.root)? {
            if name_problem(&ns).is_some() || namespace.is_some_and(|want| want != ns) {
                continue;
            }
            for bundle_name in subdirs(&self.root.join(&ns))? {
                if name.is_some_and(|want| want != bundle_name) {
                    continue;
                }
                for version in self.versions(&ns, &bundle_name)? {
                    match self.load(&self.bundle_dir(&ns, &bundle_name, &version)) {
                        Ok(bundle) => out.push(bundle),
                        Err(e @ BundleError::Corrupt { .. }) => {
                            tracing::warn!(error = %e, "skipping a damaged bundle")
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        out.sort_by(|a, b| {
            (&a.id.namespace, &a.id.name, &a.id.version).cmp(&(
                &b.id.namespace,
                &b.id.name,
                &b.id.version,
            ))
        });
        Ok(out)
    }

    /// The bundle installed in `dir`, parsed at most once while it stays installed.
    pub fn load(&self, dir: &Path) -> Result<Arc<InstalledBundle>, BundleError> {
        let epoch = {
            let cache = crate::sync::read(&self.cache);
            if let Some(bundle) = cache.bundles.get(dir) {
                return Ok(Arc::clone(bundle));
            }
            cache.epoch
        };
        let bundle = Arc::new(InstalledBundle::load(dir.to_path_buf())?);
        let mut cache = crate::sync::write(&self.cache);
        if cache.epoch == epoch {
            cache.bundles.insert(dir.to_path_buf(), Arc::clone(&bundle));
        }
        Ok(bundle)
    }

    /// Records a bundle just installed (or replaced) in its directory.
    pub fn remember(&self, bundle: &Arc<InstalledBundle>) {
        let mut cache = crate::sync::write(&self.cache);
        cache.epoch += 1;
        cache
            .bundles
            .insert(bundle.root.clone(), Arc::clone(bundle));
    }

    /// Drops a bundle just deleted.
    pub fn forget(&self, dir: &Path) {
        let mut cache = crate::sync::write(&self.cache);
        cache.epoch += 1;
        cache.bundles.remove(dir);
    }
}

/// Names of the visible subdirectories of `dir`; none when it does not exist.
fn subdirs(dir: &Path) -> Result<Vec<String>, BundleError> {
    let ctx = |e| BundleError::io(format!("listing {}", dir.display()), e);
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ctx(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(ctx)?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.starts_with('.') && entry.file_type().is_ok_and(|t| t.is_dir()) {
            names.push(name);
        }
    }
    Ok(names)
}
