//! [`Bundles`]: the archive in the database by digest, for every replica; unpacked into
//! this replica's bundle folder when installed here or first read here. Each read checks
//! the database first, so a bundle deleted through any replica is gone on all of them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use odyssey_runtime::InstallOptions;
use odyssey_runtime::bundle::{BundleError, InstalledBundle};
use odyssey_runtime::store::{Bundles, StoreError as SeamError, StoreResult};
use sha2::{Digest, Sha256};

use super::{ReplicaStore, query, seam_error};

impl ReplicaStore {
    /// The bundle unpacked here, unpacking the archive the database holds when this
    /// replica has not yet; its files are checked against the digest as the file store
    /// checks them.
    async fn local_bundle(&self, digest: &str) -> StoreResult<Arc<InstalledBundle>> {
        // Whether the database still holds it (a light read: the archive itself is read
        // only when this replica unpacks it).
        let client = self.client().await?;
        let namespace: Option<String> = client
            .query_opt(
                "SELECT namespace FROM bundles WHERE digest = $1",
                &[&digest],
            )
            .await
            .map_err(query("look a bundle up"))?
            .map(|row| row.get(0));
        drop(client);
        let Some(namespace) = namespace else {
            return Err(SeamError::UnknownDigest {
                digest: digest.to_owned(),
            });
        };
        match Bundles::bundle_by_digest(&self.bundles, digest.to_owned()).await {
            Err(SeamError::UnknownDigest { .. }) => {}
            found => return found,
        }
        self.unpack(digest, namespace).await
    }

    /// Unpacks the archive the database holds for `digest` into this replica's folder,
    /// checked on the way against the SHA-256 recorded at install, then against the
    /// digest by what it unpacks to.
    async fn unpack(&self, digest: &str, namespace: String) -> StoreResult<Arc<InstalledBundle>> {
        let Some(stored) = self.db.bundle(digest).await.map_err(seam_error)? else {
            return Err(SeamError::UnknownDigest {
                digest: digest.to_owned(),
            });
        };
        let options = InstallOptions {
            namespace,
            ..InstallOptions::default()
        };
        let catalog = self.bundles.clone();
        let installed = blocking(move || {
            catalog
                .install_bundle_archive(&stored.archive, &options)
                .map_err(SeamError::from)
        })
        .await?;
        if installed.id.digest != digest {
            // What it unpacked to is not in the database: the next refresh of the catalog
            // removes it.
            return Err(SeamError::Bundle(BundleError::Corrupt {
                path: installed.root.clone(),
                message: format!(
                    "the archive stored for {digest} unpacks to {}",
                    installed.id.digest
                ),
            }));
        }
        Ok(installed)
    }
}

/// Runs `work` (file I/O) on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> StoreResult<T> + Send + 'static,
) -> StoreResult<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => Err(odyssey_runtime::RuntimeError::storage(
            "the bundle folder",
            std::io::Error::other(e.to_string()),
        )
        .into()),
    }
}

impl Bundles for ReplicaStore {
    fn install_archive(
        &self,
        archive: Vec<u8>,
        options: InstallOptions,
    ) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        async move {
            // A refresh of the catalog would take the bundle unpacked here for one the
            // database no longer holds, until the row below is written.
            let _catalog = self.catalog.lock().await;
            // Unpacked and checked here first: what reaches the database is a bundle.
            let installed = self.bundles.install_bundle_archive(&archive, &options)?;
            let id = &installed.id;
            // A digest already stored keeps its first archive and namespace: a digest
            // names one bundle.
            let client = self.client().await?;
            client
                .execute(
                    "INSERT INTO bundles (digest, namespace, name, version, archive, archive_sha256)
                     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (digest) DO NOTHING",
                    &[
                        &id.digest,
                        &id.namespace,
                        &id.name,
                        &id.version.to_string(),
                        &archive,
                        &hex::encode(Sha256::digest(&archive)),
                    ],
                )
                .await
                .map_err(query("store a bundle"))?;
            Ok(installed)
        }
        .boxed()
    }

    fn bundle_by_digest(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        async move { self.local_bundle(&digest).await }.boxed()
    }

    /// The archive as installed, checked against the SHA-256 recorded then.
    fn bundle_archive(&self, digest: String) -> BoxFuture<'_, StoreResult<Vec<u8>>> {
        async move {
            match self.db.bundle(&digest).await.map_err(seam_error)? {
                Some(stored) => Ok(stored.archive),
                None => Err(SeamError::UnknownDigest { digest }),
            }
        }
        .boxed()
    }

    /// Gone from the database (for every replica) and from this replica's folder; other
    /// replicas' unpacked copies are no longer served, since every read asks the
    /// database first.
    fn delete_bundle(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        async move {
            let _catalog = self.catalog.lock().await;
            let installed = self.local_bundle(&digest).await?;
            if !self.db.delete_bundle(&digest).await.map_err(seam_error)? {
                return Err(SeamError::UnknownDigest { digest });
            }
            match Bundles::delete_bundle(&self.bundles, digest).await {
                Ok(_) | Err(SeamError::UnknownDigest { .. }) => Ok(installed),
                Err(e) => Err(e),
            }
        }
        .boxed()
    }

    /// One query lists the digests the database holds; this replica's folder is listed
    /// (its install records, read once and cached); bundles missing here are unpacked
    /// (checked as on first use), those the database no longer holds are removed. A
    /// bundle that cannot be unpacked is logged and left out: reading it by digest then
    /// says why.
    fn refresh_catalog(&self) -> BoxFuture<'_, StoreResult<()>> {
        async move {
            let _catalog = self.catalog.lock().await;
            let client = self.client().await?;
            let rows = client
                .query("SELECT digest, namespace FROM bundles", &[])
                .await
                .map_err(query("list bundles"))?;
            drop(client);
            let stored: HashMap<String, String> =
                rows.iter().map(|row| (row.get(0), row.get(1))).collect();
            let catalog = self.bundles.clone();
            let local = blocking(move || catalog.list(None).map_err(SeamError::from)).await?;
            let here: HashSet<&str> = local.iter().map(|b| b.id.digest.as_str()).collect();
            for (digest, namespace) in &stored {
                if here.contains(digest.as_str()) {
                    continue;
                }
                match self.unpack(digest, namespace.clone()).await {
                    Ok(_) => tracing::debug!(%digest, "bundle unpacked from the database"),
                    Err(e @ SeamError::Unavailable(_)) => return Err(e),
                    // Deleted since the listing: nothing to unpack.
                    Err(SeamError::UnknownDigest { .. }) => {}
                    Err(e) => {
                        tracing::warn!(%digest, error = %e, "a bundle of the database cannot be unpacked here")
                    }
                }
            }
            for bundle in &local {
                let digest = &bundle.id.digest;
                if stored.contains_key(digest) {
                    continue;
                }
                match Bundles::delete_bundle(&self.bundles, digest.clone()).await {
                    Ok(_) | Err(SeamError::UnknownDigest { .. }) => {
                        tracing::debug!(%digest, "bundle removed: the database no longer holds it")
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
        .boxed()
    }
}
