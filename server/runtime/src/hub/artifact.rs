//! The shape of a bundle as an OCI artifact, and the checks a pulled manifest must pass.
//!
//! An OCI image manifest (`application/vnd.oci.image.manifest.v1+json`) with
//! - `artifactType` [`ARTIFACT_TYPE`] and a config blob of [`CONFIG_MEDIA_TYPE`] (JSON:
//!   name, version, description, content digest), so tools that list artifacts by type,
//!   and registries that only look at the config, both see a bundle;
//! - exactly one layer: the bundle archive, [`ARCHIVE_MEDIA_TYPE`];
//! - annotations: `org.opencontainers.image.{title,version,description}` and
//!   [`CONTENT_DIGEST_ANNOTATION`], the bundle's own content digest.
//!
//! The manifest digest names these bytes in the registry; the content digest names the
//! bundle's files whatever the archive's compression. A pull verifies both. No timestamps
//! go in, so pushing the same bundle twice yields the same manifest digest.

use std::collections::BTreeMap;

use bytes::Bytes;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::HubError;
use super::reference::is_sha256;
use crate::bundle::{ARCHIVE_MEDIA_TYPE, InstalledBundle};

/// The `artifactType` of an Odyssey bundle.
pub const ARTIFACT_TYPE: &str = "application/vnd.odyssey.bundle.v1";
/// The media type of a bundle artifact's config blob.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.odyssey.bundle.config.v1+json";
/// The manifest annotation holding the bundle's content digest.
pub const CONTENT_DIGEST_ANNOTATION: &str = "ai.odyssey.bundle.digest";

const TITLE: &str = "org.opencontainers.image.title";
const VERSION: &str = "org.opencontainers.image.version";
const DESCRIPTION: &str = "org.opencontainers.image.description";

/// A config blob is a few hundred bytes; anything much larger is not one of ours.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// The config blob of a bundle artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BundleConfig {
    pub name: String,
    pub version: String,
    pub description: String,
    pub content_digest: String,
}

/// Everything pushed for one bundle: two blobs and the manifest naming them.
pub(crate) struct Artifact {
    pub archive: Bytes,
    pub archive_digest: String,
    pub config: Bytes,
    pub config_digest: String,
    /// The manifest exactly as pushed; its digest is [`Artifact::manifest_digest`].
    pub manifest: Bytes,
    pub manifest_digest: String,
}

impl Artifact {
    /// Lays out `bundle`, whose archive is `archive`, as an artifact. Serializing plain
    /// strings cannot fail; the error is kept rather than unwrapped.
    pub fn new(bundle: &InstalledBundle, archive: Vec<u8>) -> Result<Self, serde_json::Error> {
        let id = &bundle.id;
        let config = serde_json::to_vec(&BundleConfig {
            name: id.name.clone(),
            version: id.version.to_string(),
            description: bundle.manifest.description.clone(),
            content_digest: id.digest.clone(),
        })?;
        let archive_digest = sha256(&archive);
        let config_digest = sha256(&config);
        let layer_title = format!("{}-{}.tar.gz", id.name, id.version);
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            artifact_type: Some(ARTIFACT_TYPE.to_owned()),
            config: descriptor(CONFIG_MEDIA_TYPE, &config_digest, config.len(), None),
            layers: vec![descriptor(
                ARCHIVE_MEDIA_TYPE,
                &archive_digest,
                archive.len(),
                Some(BTreeMap::from([(TITLE.to_owned(), layer_title)])),
            )],
            subject: None,
            annotations: Some(BTreeMap::from([
                (TITLE.to_owned(), id.name.clone()),
                (VERSION.to_owned(), id.version.to_string()),
                (DESCRIPTION.to_owned(), bundle.manifest.description.clone()),
                (CONTENT_DIGEST_ANNOTATION.to_owned(), id.digest.clone()),
            ])),
        };
        let manifest = serde_json::to_vec(&manifest)?;
        Ok(Self {
            manifest_digest: sha256(&manifest),
            archive: archive.into(),
            archive_digest,
            config: config.into(),
            config_digest,
            manifest: manifest.into(),
        })
    }
}

fn descriptor(
    media_type: &str,
    digest: &str,
    size: usize,
    annotations: Option<BTreeMap<String, String>>,
) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest.to_owned(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        urls: None,
        annotations,
        artifact_type: None,
    }
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// What a pulled manifest promises: the blobs to fetch and the content digest the
/// installed bundle must have.
#[derive(Debug)]
pub(crate) struct Expected {
    pub config: OciDescriptor,
    pub layer: OciDescriptor,
    pub content_digest: String,
}

/// Checks that `manifest` (bytes already verified against their digest) describes a
/// bundle this server can take: the right types, one archive layer within `max_archive`
/// bytes, and a well-formed content digest.
pub(crate) fn check_manifest(
    reference: &str,
    manifest: &[u8],
    max_archive: u64,
) -> Result<Expected, HubError> {
    let not_a_bundle = |message: String| HubError::NotABundle {
        reference: reference.to_owned(),
        message,
    };
    let parsed: serde_json::Value = serde_json::from_slice(manifest)
        .map_err(|_| not_a_bundle("its manifest is not JSON".to_owned()))?;
    let media_type = parsed
        .get("mediaType")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    if media_type != OCI_IMAGE_MEDIA_TYPE {
        let what = if media_type.is_empty() {
            "a manifest without a media type".to_owned()
        } else {
            format!("a `{media_type}` manifest")
        };
        return Err(not_a_bundle(format!(
            "it is {what}, not an OCI image manifest"
        )));
    }
    let manifest: OciImageManifest = serde_json::from_value(parsed)
        .map_err(|e| not_a_bundle(format!("its manifest does not parse: {e}")))?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(not_a_bundle(format!(
            "its config is `{}`, not `{CONFIG_MEDIA_TYPE}`",
            manifest.config.media_type
        )));
    }
    if let Some(artifact_type) = &manifest.artifact_type
        && artifact_type != ARTIFACT_TYPE
    {
        return Err(not_a_bundle(format!(
            "its artifact type is `{artifact_type}`, not `{ARTIFACT_TYPE}`"
        )));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(not_a_bundle(format!(
            "it has {} layers; a bundle has exactly one, the archive",
            manifest.layers.len()
        )));
    };
    if layer.media_type != ARCHIVE_MEDIA_TYPE {
        return Err(not_a_bundle(format!(
            "its layer is `{}`, not `{ARCHIVE_MEDIA_TYPE}`",
            layer.media_type
        )));
    }
    let content_digest = manifest
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONTENT_DIGEST_ANNOTATION))
        .filter(|d| is_sha256(d))
        .ok_or_else(|| {
            not_a_bundle(format!(
                "its manifest has no valid `{CONTENT_DIGEST_ANNOTATION}` annotation"
            ))
        })?
        .clone();
    for (what, descriptor, limit) in [
        ("config", &manifest.config, MAX_CONFIG_BYTES),
        ("archive", layer, max_archive),
    ] {
        if !is_sha256(&descriptor.digest) {
            return Err(not_a_bundle(format!(
                "its {what} digest `{}` is not sha256:<64 hex>",
                descriptor.digest
            )));
        }
        let size = u64::try_from(descriptor.size).unwrap_or(0);
        if size == 0 {
            return Err(not_a_bundle(format!("its {what} is empty")));
        }
        if size > limit {
            return Err(HubError::TooLarge {
                reference: reference.to_owned(),
                message: format!("its {what} is {size} bytes; this server takes at most {limit}"),
            });
        }
    }
    Ok(Expected {
        config: manifest.config.clone(),
        layer: layer.clone(),
        content_digest,
    })
}

/// Checks a fetched (and digest-verified) config blob against the manifest's promise.
pub(crate) fn check_config(
    reference: &str,
    config: &[u8],
    expected: &Expected,
) -> Result<BundleConfig, HubError> {
    let config: BundleConfig =
        serde_json::from_slice(config).map_err(|e| HubError::NotABundle {
            reference: reference.to_owned(),
            message: format!("its config does not parse: {e}"),
        })?;
    if config.content_digest != expected.content_digest {
        return Err(HubError::DigestMismatch {
            reference: reference.to_owned(),
            what: "the content digest in the config".to_owned(),
            expected: expected.content_digest.clone(),
            actual: config.content_digest,
        });
    }
    Ok(config)
}
