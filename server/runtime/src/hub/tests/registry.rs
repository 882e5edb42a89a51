//! Transfers against a real registry: what is pushed comes back byte for byte, and what is
//! not a bundle, or not what it claims, is refused before anything is installed.

use std::collections::BTreeMap;

use bytes::Bytes;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{
    IMAGE_CONFIG_MEDIA_TYPE, IMAGE_LAYER_GZIP_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE,
    OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageIndex, OciImageManifest,
};
use oci_client::secrets::RegistryAuth;

use super::fixtures::Installed;
use crate::bundle::{ARCHIVE_MEDIA_TYPE, InstallOptions};
use crate::hub::artifact::{Artifact, sha256};
use crate::hub::{
    ARTIFACT_TYPE, CONFIG_MEDIA_TYPE, CONTENT_DIGEST_ANNOTATION, Hub, HubError, HubSettings,
    RegistryReference,
};
use crate::{OdysseyRuntime, RuntimeConfig, RuntimeError};
use odyssey_testing::registry::TestRegistry;

const LIMIT: u64 = 1 << 20;

async fn registry() -> TestRegistry {
    TestRegistry::start()
        .await
        .expect("the test registry starts")
}

fn hub_for(registry: &TestRegistry) -> Hub {
    Hub::new(&HubSettings {
        default_registry: format!("http://{}", registry.host()),
        ..HubSettings::default()
    })
    .expect("hub")
}

fn at(hub: &Hub, text: &str) -> RegistryReference {
    hub.parse(text, "reference").expect("reference")
}

/// A plain oci-client, for putting things in the registry that Odyssey would not push.
fn raw_client(registry: &TestRegistry) -> oci_client::Client {
    crate::provider::install_crypto_provider();
    oci_client::Client::try_from(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.host()]),
        ..ClientConfig::default()
    })
    .expect("client")
}

async fn push_raw(
    registry: &TestRegistry,
    repository_and_tag: &str,
    blobs: &[&[u8]],
    manifest: &[u8],
    media_type: &'static str,
) {
    let client = raw_client(registry);
    let reference: oci_client::Reference = format!("{}/{repository_and_tag}", registry.host())
        .parse()
        .expect("reference");
    client
        .store_auth_if_needed(reference.resolve_registry(), &RegistryAuth::Anonymous)
        .await;
    for blob in blobs {
        client
            .push_blob(&reference, Bytes::copy_from_slice(blob), &sha256(blob))
            .await
            .expect("push blob");
    }
    client
        .push_manifest_raw(
            &reference,
            manifest.to_vec(),
            http::HeaderValue::from_static(media_type),
        )
        .await
        .expect("push manifest");
}

fn descriptor(media_type: &str, blob: &[u8]) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: sha256(blob),
        size: blob.len() as i64,
        ..OciDescriptor::default()
    }
}

#[tokio::test]
async fn what_is_pushed_is_fetched_byte_for_byte() {
    let registry = registry().await;
    let hub = hub_for(&registry);
    let installed = Installed::new("roundtrip", "Goes and comes back.");
    let artifact = Artifact::new(&installed.bundle, installed.archive()).expect("artifact");
    let target = at(&hub, "team/roundtrip:1.0.0");

    hub.push(&target, &artifact).await.expect("push");
    assert_eq!(
        registry.tag_digest("team/roundtrip", "1.0.0").expect("tag"),
        artifact.manifest_digest
    );
    // A second push finds the blobs there and only puts the manifest.
    hub.push(&at(&hub, "team/roundtrip:again"), &artifact)
        .await
        .expect("push again");

    for source in [
        target.clone(),
        target.with_digest(artifact.manifest_digest.clone()),
        at(
            &hub,
            &format!("team/roundtrip@{}", artifact.manifest_digest),
        ),
    ] {
        let fetched = hub.fetch(&source, LIMIT).await.expect("fetch");
        assert_eq!(fetched.archive, artifact.archive.to_vec(), "{source}");
        assert_eq!(fetched.manifest_digest, artifact.manifest_digest);
        assert_eq!(fetched.content_digest, installed.bundle.id.digest);
    }

    let wrong_digest = target.with_digest(format!("sha256:{}", "0".repeat(64)));
    let error = hub
        .fetch(&wrong_digest, LIMIT)
        .await
        .expect_err("no such manifest");
    assert!(matches!(error, HubError::NotFound { .. }), "{error:?}");

    let small = hub.fetch(&target, 16).await.expect_err("over the limit");
    assert!(matches!(small, HubError::TooLarge { .. }), "{small:?}");
}

#[tokio::test]
async fn a_container_image_or_an_index_is_not_a_bundle() {
    let registry = registry().await;
    let hub = hub_for(&registry);

    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let layer = b"not really a layer";
    let image = OciImageManifest {
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
        config: descriptor(IMAGE_CONFIG_MEDIA_TYPE, config),
        layers: vec![descriptor(IMAGE_LAYER_GZIP_MEDIA_TYPE, layer)],
        ..OciImageManifest::default()
    };
    let image_bytes = serde_json::to_vec(&image).expect("json");
    push_raw(
        &registry,
        "team/image:1",
        &[config, layer],
        &image_bytes,
        OCI_IMAGE_MEDIA_TYPE,
    )
    .await;
    let error = hub
        .fetch(&at(&hub, "team/image:1"), LIMIT)
        .await
        .expect_err("an image is refused");
    assert!(matches!(error, HubError::NotABundle { .. }), "{error:?}");
    assert!(
        error.to_string().contains(IMAGE_CONFIG_MEDIA_TYPE),
        "{error}"
    );

    let index = OciImageIndex {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_INDEX_MEDIA_TYPE.to_owned()),
        manifests: vec![oci_client::manifest::ImageIndexEntry {
            media_type: OCI_IMAGE_MEDIA_TYPE.to_owned(),
            digest: sha256(&image_bytes),
            size: image_bytes.len() as i64,
            platform: None,
            annotations: None,
            artifact_type: None,
        }],
        artifact_type: None,
        annotations: None,
    };
    let index_bytes = serde_json::to_vec(&index).expect("json");
    push_raw(
        &registry,
        "team/image:index",
        &[],
        &index_bytes,
        OCI_IMAGE_INDEX_MEDIA_TYPE,
    )
    .await;
    let error = hub
        .fetch(&at(&hub, "team/image:index"), LIMIT)
        .await
        .expect_err("an index is refused");
    assert!(matches!(error, HubError::NotABundle { .. }), "{error:?}");
    assert!(error.to_string().contains("index"), "{error}");
}

#[tokio::test]
async fn a_tampered_config_blob_is_refused() {
    let registry = registry().await;
    let hub = hub_for(&registry);
    let installed = Installed::new("configured", "Has a config.");
    let artifact = Artifact::new(&installed.bundle, installed.archive()).expect("artifact");
    hub.push(&at(&hub, "team/configured:1.0.0"), &artifact)
        .await
        .expect("push");
    registry
        .tamper_blob(&artifact.config_digest)
        .expect("tamper");

    let error = hub
        .fetch(&at(&hub, "team/configured:1.0.0"), LIMIT)
        .await
        .expect_err("refused");
    assert!(
        matches!(error, HubError::DigestMismatch { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("config blob"), "{error}");
}

/// An artifact of the right shape whose annotation (and config) claim a content digest
/// the archive does not have: the fetch cannot tell, the install must.
#[tokio::test]
async fn an_archive_that_is_not_what_its_annotation_says_is_not_installed() {
    let registry = registry().await;
    let installed = Installed::new("liar", "Claims another digest.");
    let archive = installed.archive();
    let claimed = format!("sha256:{}", "1".repeat(64));
    let config = serde_json::to_vec(&serde_json::json!({
        "name": "liar", "version": "1.0.0", "description": "", "contentDigest": claimed,
    }))
    .expect("json");
    let manifest = OciImageManifest {
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
        artifact_type: Some(ARTIFACT_TYPE.to_owned()),
        config: descriptor(CONFIG_MEDIA_TYPE, &config),
        layers: vec![descriptor(ARCHIVE_MEDIA_TYPE, &archive)],
        annotations: Some(BTreeMap::from([(
            CONTENT_DIGEST_ANNOTATION.to_owned(),
            claimed.clone(),
        )])),
        ..OciImageManifest::default()
    };
    let manifest = serde_json::to_vec(&manifest).expect("json");
    push_raw(
        &registry,
        "team/liar:1.0.0",
        &[&archive, &config],
        &manifest,
        OCI_IMAGE_MEDIA_TYPE,
    )
    .await;

    let home = tempfile::tempdir().expect("home");
    let mut config = RuntimeConfig::with_home(home.path());
    config.hub.default_registry = format!("http://{}", registry.host());
    let runtime = OdysseyRuntime::start(config).await.expect("runtime");
    let error = runtime
        .pull_bundle("team/liar:1.0.0", InstallOptions::default())
        .await
        .expect_err("refused");
    assert!(matches!(error, RuntimeError::Bundle(_)), "{error:?}");
    assert_eq!(error.reason(), "DIGEST_MISMATCH");
    assert!(error.to_string().contains(&claimed), "{error}");
    assert!(
        error.to_string().contains("nothing was installed"),
        "{error}"
    );
    let listed = runtime
        .list_bundles(None, Default::default())
        .await
        .expect("list");
    assert!(listed.items.is_empty(), "nothing installed");
}
