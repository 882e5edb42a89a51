//! Publishing installed bundles to OCI registries and installing bundles from them.

use std::sync::Arc;

use super::OdysseyRuntime;
use crate::InstallOptions;
use crate::bundle::{self, InstalledBundle};
use crate::error::{Result, RuntimeError};
use crate::hub::{Artifact, RegistryReference};

/// A bundle published to a registry.
#[derive(Clone, Debug)]
pub struct PushedBundle {
    pub bundle: Arc<InstalledBundle>,
    /// Where it went, tag included (`registry/repository:tag`).
    pub target: RegistryReference,
    /// The digest of the OCI manifest in the registry.
    pub manifest_digest: String,
    /// The bundle's own content digest.
    pub content_digest: String,
}

/// A bundle fetched from a registry, verified and installed.
#[derive(Clone, Debug)]
pub struct PulledBundle {
    pub bundle: Arc<InstalledBundle>,
    /// What was pulled, registry filled in.
    pub source: RegistryReference,
    /// The digest of the OCI manifest it was pulled by.
    pub manifest_digest: String,
}

impl OdysseyRuntime {
    /// Publishes the installed bundle `reference` names to `target`
    /// (`[registry[:port]/]repository[:tag]`; the tag defaults to the bundle's version).
    pub async fn push_bundle(&self, reference: &str, target: &str) -> Result<PushedBundle> {
        let target = self.inner.hub.parse(target, "target")?;
        if target.digest.is_some() {
            return Err(RuntimeError::invalid(
                "target",
                "a push target names a tag, not a digest (the registry computes the digest)",
            ));
        }
        let reference = reference.to_owned();
        let (bundle, archive) = self
            .with_store(move |store| {
                let mut archive = Vec::new();
                let bundle = store.export_exact(&reference, &mut archive)?;
                Ok((bundle, archive))
            })
            .await?;
        // Hashing a large archive is CPU work: off the async threads.
        let artifact = {
            let bundle = bundle.clone();
            let internal =
                |e: String| RuntimeError::storage("bundle artifact", std::io::Error::other(e));
            tokio::task::spawn_blocking(move || Artifact::new(&bundle, archive))
                .await
                .map_err(|e| internal(e.to_string()))?
                .map_err(|e| internal(e.to_string()))?
        };
        let target = match target.tag {
            Some(_) => target,
            None => target.with_tag(version_tag(&bundle.id.version)),
        };
        self.inner.hub.push(&target, &artifact).await?;
        tracing::info!(
            bundle = %bundle.id,
            target = %target,
            manifest_digest = %artifact.manifest_digest,
            content_digest = %bundle.id.digest,
            "bundle pushed"
        );
        Ok(PushedBundle {
            content_digest: bundle.id.digest.clone(),
            manifest_digest: artifact.manifest_digest,
            bundle,
            target,
        })
    }

    /// Fetches the bundle `reference` names (`[registry[:port]/]repository[:tag]` or
    /// `…@sha256:<hex>`), verifies every digest, and installs it like an import. A
    /// different bundle of the same name and version stays unless `options.force`.
    pub async fn pull_bundle(
        &self,
        reference: &str,
        options: InstallOptions,
    ) -> Result<PulledBundle> {
        let source = self.inner.hub.parse(reference, "reference")?;
        bundle::check_name("namespace", &options.namespace)?;
        let limit = self.inner.config.archive_limits.max_total_bytes;
        let fetched = self.inner.hub.fetch(&source, limit).await?;
        let content_digest = fetched.content_digest.clone();
        let archive = fetched.archive;
        let bundle = self
            .with_store(move |store| {
                store.install_verified_archive(archive.as_slice(), &options, &content_digest)
            })
            .await?;
        tracing::info!(
            bundle = %bundle.id,
            source = %source,
            manifest_digest = %fetched.manifest_digest,
            content_digest = %bundle.id.digest,
            "bundle pulled"
        );
        Ok(PulledBundle {
            bundle,
            source,
            manifest_digest: fetched.manifest_digest,
        })
    }
}

/// A version as a tag: tags cannot hold `+`, so build metadata joins with `_`, as Helm
/// charts in OCI registries do.
fn version_tag(version: &semver::Version) -> String {
    version.to_string().replace('+', "_")
}

#[cfg(test)]
mod tests {
    use super::version_tag;

    #[test]
    fn versions_become_valid_tags() {
        let tag = |v: &str| version_tag(&semver::Version::parse(v).expect("version"));
        assert_eq!(tag("1.2.3"), "1.2.3");
        assert_eq!(tag("1.0.0-rc.1"), "1.0.0-rc.1");
        assert_eq!(tag("1.0.0+build.7"), "1.0.0_build.7");
    }
}
