//! The artifact layout, and what a pulled manifest must be to be taken.

use serde_json::{Value, json};

use super::fixtures::Installed;
use crate::bundle::ARCHIVE_MEDIA_TYPE;
use crate::error::ErrorKind;
use crate::hub::artifact::{Artifact, check_config, check_manifest, sha256};
use crate::hub::{ARTIFACT_TYPE, CONFIG_MEDIA_TYPE, CONTENT_DIGEST_ANNOTATION, HubError};

const LIMIT: u64 = 1 << 20;

fn artifact() -> (Installed, Artifact) {
    let installed = Installed::new("layout", "Lays things out.");
    let artifact = Artifact::new(&installed.bundle, installed.archive()).expect("artifact");
    (installed, artifact)
}

fn manifest_json(artifact: &Artifact) -> Value {
    serde_json::from_slice(&artifact.manifest).expect("manifest is JSON")
}

#[test]
fn a_bundle_is_one_archive_layer_with_a_typed_config_and_both_digests() {
    let (installed, artifact) = artifact();
    let manifest = manifest_json(&artifact);
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(manifest["artifactType"], ARTIFACT_TYPE);
    assert_eq!(manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE);
    assert_eq!(
        manifest["config"]["digest"],
        artifact.config_digest.as_str()
    );
    let layers = manifest["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0]["mediaType"], ARCHIVE_MEDIA_TYPE);
    assert_eq!(layers[0]["digest"], sha256(&artifact.archive).as_str());
    assert_eq!(layers[0]["size"], artifact.archive.len());
    assert_eq!(
        layers[0]["annotations"]["org.opencontainers.image.title"],
        "layout-1.0.0.tar.gz"
    );
    let annotations = &manifest["annotations"];
    assert_eq!(
        annotations[CONTENT_DIGEST_ANNOTATION],
        installed.bundle.id.digest.as_str()
    );
    assert_eq!(annotations["org.opencontainers.image.title"], "layout");
    assert_eq!(annotations["org.opencontainers.image.version"], "1.0.0");
    assert_eq!(
        annotations["org.opencontainers.image.description"],
        "Lays things out."
    );
    assert_eq!(artifact.manifest_digest, sha256(&artifact.manifest));
    assert_ne!(artifact.manifest_digest, installed.bundle.id.digest);

    let config: Value = serde_json::from_slice(&artifact.config).expect("config is JSON");
    assert_eq!(
        config,
        json!({
            "name": "layout",
            "version": "1.0.0",
            "description": "Lays things out.",
            "contentDigest": installed.bundle.id.digest,
        })
    );
}

#[test]
fn the_same_bundle_always_makes_the_same_manifest() {
    let (installed, first) = artifact();
    let second = Artifact::new(&installed.bundle, installed.archive()).expect("artifact");
    assert_eq!(first.manifest, second.manifest);
    assert_eq!(first.manifest_digest, second.manifest_digest);
}

#[test]
fn a_pushed_manifest_passes_the_pull_checks() {
    let (installed, artifact) = artifact();
    let expected = check_manifest("r/layout:1.0.0", &artifact.manifest, LIMIT).expect("accepted");
    assert_eq!(expected.content_digest, installed.bundle.id.digest);
    assert_eq!(expected.layer.digest, artifact.archive_digest);
    assert_eq!(expected.config.digest, artifact.config_digest);
    let config = check_config("r/layout:1.0.0", &artifact.config, &expected).expect("config");
    assert_eq!(config.name, "layout");
}

/// The artifact's manifest with one change, checked.
fn check_edited(edit: impl FnOnce(&mut Value)) -> HubError {
    let (_installed, artifact) = artifact();
    let mut manifest = manifest_json(&artifact);
    edit(&mut manifest);
    let bytes = serde_json::to_vec(&manifest).expect("json");
    check_manifest("r/layout:1.0.0", &bytes, LIMIT).expect_err("refused")
}

/// A change to a manifest, for tables of bad manifests.
type Edit = Box<dyn FnOnce(&mut Value)>;

#[test]
fn manifests_of_other_things_are_refused() {
    let table: Vec<(&str, Edit)> = vec![
        (
            "OCI image manifest",
            Box::new(|m| m["mediaType"] = json!("application/vnd.oci.image.index.v1+json")),
        ),
        (
            "without a media type",
            Box::new(|m| {
                m.as_object_mut().expect("object").remove("mediaType");
            }),
        ),
        (
            "config is",
            Box::new(|m| {
                m["config"]["mediaType"] = json!("application/vnd.oci.image.config.v1+json")
            }),
        ),
        (
            "artifact type",
            Box::new(|m| m["artifactType"] = json!("application/vnd.cncf.helm.chart.v1")),
        ),
        (
            "2 layers",
            Box::new(|m| {
                let layer = m["layers"][0].clone();
                m["layers"].as_array_mut().expect("layers").push(layer);
            }),
        ),
        ("0 layers", Box::new(|m| m["layers"] = json!([]))),
        (
            "its layer is",
            Box::new(|m| {
                m["layers"][0]["mediaType"] = json!("application/vnd.oci.image.layer.v1.tar+gzip")
            }),
        ),
        (
            "annotation",
            Box::new(|m| {
                m["annotations"]
                    .as_object_mut()
                    .expect("annotations")
                    .remove(CONTENT_DIGEST_ANNOTATION);
            }),
        ),
        (
            "annotation",
            Box::new(|m| m["annotations"][CONTENT_DIGEST_ANNOTATION] = json!("sha256:nothex")),
        ),
        (
            "digest",
            Box::new(|m| m["layers"][0]["digest"] = json!("md5:abc")),
        ),
        ("empty", Box::new(|m| m["layers"][0]["size"] = json!(0))),
    ];
    for (needle, edit) in table {
        let error = check_edited(edit);
        assert!(
            matches!(error, HubError::NotABundle { .. }),
            "{needle}: {error:?}"
        );
        assert_eq!(error.kind(), ErrorKind::FailedPrecondition);
        assert_eq!(error.reason(), "NOT_A_BUNDLE_ARTIFACT");
        assert!(
            error.to_string().contains(needle),
            "`{error}` should mention {needle}"
        );
    }
    let error = check_manifest("r/x", b"<html>", LIMIT).expect_err("not json");
    assert!(error.to_string().contains("not JSON"), "{error}");
}

#[test]
fn archives_beyond_the_limit_are_refused_before_download() {
    let error = check_edited(|m| m["layers"][0]["size"] = json!(LIMIT + 1));
    assert!(matches!(error, HubError::TooLarge { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&format!("at most {LIMIT}")),
        "{error}"
    );
    let error = check_edited(|m| m["config"]["size"] = json!(1 << 30));
    assert!(matches!(error, HubError::TooLarge { .. }), "{error:?}");
}

#[test]
fn a_config_announcing_another_digest_is_refused() {
    let (_installed, artifact) = artifact();
    let expected = check_manifest("r/layout", &artifact.manifest, LIMIT).expect("accepted");
    let mut config: Value = serde_json::from_slice(&artifact.config).expect("json");
    config["contentDigest"] = json!(format!("sha256:{}", "0".repeat(64)));
    let error = check_config(
        "r/layout",
        &serde_json::to_vec(&config).expect("json"),
        &expected,
    )
    .expect_err("refused");
    assert_eq!(error.reason(), "DIGEST_MISMATCH", "{error}");
}
