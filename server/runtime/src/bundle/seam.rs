//! The bundle store behind the storage trait ([`crate::store::Bundles`]): bundles found by
//! their content digest (the `@sha256:…` reference form), their files digested again on
//! every read through it.

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

impl Bundles for BundleStore {
    fn install_archive(
        &self,
        archive: Vec<u8>,
        options: InstallOptions,
    ) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        async move { Ok(self.install_bundle_archive(&archive, &options)?) }.boxed()
    }

    fn bundle_by_digest(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        async move { self.verified(&digest).map(|(bundle, _)| bundle) }.boxed()
    }

    fn bundle_archive(&self, digest: String) -> BoxFuture<'_, StoreResult<Vec<u8>>> {
        async move { self.verified(&digest).map(|(_, archive)| archive) }.boxed()
    }

    fn delete_bundle(&self, digest: String) -> BoxFuture<'_, StoreResult<Arc<InstalledBundle>>> {
        async move {
            match self.delete(&format!("@{digest}")) {
                Ok(bundle) => Ok(bundle),
                Err(BundleError::NotFound { .. }) => Err(StoreError::UnknownDigest { digest }),
                Err(e) => Err(e.into()),
            }
        }
        .boxed()
    }
}
