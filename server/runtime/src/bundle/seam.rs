//! The bundle store behind the storage trait ([`crate::store::Bundles`]): bundles found by
//! their content digest (the `@sha256:…` reference form), their files digested again on
//! every read through it. The work is file I/O, so it runs on a blocking thread.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::error::BundleError;
use super::installed::InstalledBundle;
use super::store::{BundleStore, InstallOptions};
use crate::store::{Bundles, StoreError, StoreResult};

impl BundleStore {
    /// The installed bundle with `digest`, after checking its files still have it.
    fn verified(&self, digest: &str) -> StoreResult<(Arc<InstalledBundle>, Vec<u8>)> {
        let reference = format!("@{digest}");
        let mut archive = Vec::new();
        match self.export_exact(&reference, &mut archive) {
            Ok(bundle) => Ok((bundle, archive)),
            Err(BundleError::NotFound { .. }) => Err(StoreError::UnknownDigest {
                digest: digest.to_owned(),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

impl Bundles for Arc<BundleStore> {
    fn install_archive(
        &self,
        archive: Vec<u8>,
        options: InstallOptions,
    ) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        let store = self.clone();
        blocking(move || Ok(store.install_bundle_archive(&archive, &options)?)).boxed()
    }

    fn bundle_by_digest(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        let store = self.clone();
        blocking(move || store.verified(&digest).map(|(bundle, _)| bundle)).boxed()
    }

    fn bundle_archive(&self, digest: String) -> BoxFuture<'_, StoreResult<Vec<u8>>> {
        let store = self.clone();
        blocking(move || store.verified(&digest).map(|(_, archive)| archive)).boxed()
    }

    fn delete_bundle(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        let store = self.clone();
        blocking(move || match store.delete(&format!("@{digest}")) {
            Ok(bundle) => Ok(bundle),
            Err(BundleError::NotFound { .. }) => Err(StoreError::UnknownDigest { digest }),
            Err(e) => Err(e.into()),
        })
        .boxed()
    }
}

/// Runs `work` (file I/O) on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> StoreResult<T> + Send + 'static,
) -> StoreResult<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => Err(BundleError::io("bundle store", std::io::Error::other(e)).into()),
    }
}
