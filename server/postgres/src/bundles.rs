//! Installed bundles, visible to every replica: the archive by the bundle's digest, with
//! the archive's own SHA-256 recorded at install and checked on every read, so a row
//! changed behind the store's back is refused rather than run.

use sha2::{Digest, Sha256};

use crate::{Store, StoreError};

/// A bundle as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredBundle {
    pub digest: String,
    pub name: String,
    pub version: String,
    pub archive: Vec<u8>,
}

impl Store {
    /// Stores a bundle's archive under its digest. Installing a digest already stored
    /// keeps the first archive and is not an error (a digest names one bundle).
    /// Returns whether this call stored it.
    pub async fn put_bundle(
        &self,
        digest: &str,
        name: &str,
        version: &str,
        archive: &[u8],
    ) -> Result<bool, StoreError> {
        let sha = hex::encode(Sha256::digest(archive));
        let client = self.client().await?;
        let stored = client
            .execute(
                "INSERT INTO bundles (digest, name, version, archive, archive_sha256)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (digest) DO NOTHING",
                &[&digest, &name, &version, &archive, &sha],
            )
            .await
            .map_err(StoreError::query("store a bundle"))?;
        Ok(stored == 1)
    }

    /// The bundle with this digest, its archive checked against the SHA-256 recorded at
    /// install ([`StoreError::BundleCorrupted`] when they differ).
    pub async fn bundle(&self, digest: &str) -> Result<Option<StoredBundle>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT name, version, archive, archive_sha256 FROM bundles WHERE digest = $1",
                &[&digest],
            )
            .await
            .map_err(StoreError::query("read a bundle"))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let archive: Vec<u8> = row.get(2);
        let recorded: String = row.get(3);
        if hex::encode(Sha256::digest(&archive)) != recorded {
            return Err(StoreError::BundleCorrupted(digest.to_owned()));
        }
        Ok(Some(StoredBundle {
            digest: digest.to_owned(),
            name: row.get(0),
            version: row.get(1),
            archive,
        }))
    }

    /// Removes a bundle; whether there was one.
    pub async fn delete_bundle(&self, digest: &str) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let deleted = client
            .execute("DELETE FROM bundles WHERE digest = $1", &[&digest])
            .await
            .map_err(StoreError::query("delete a bundle"))?;
        Ok(deleted == 1)
    }
}
