//! The reference table: every accepted form and the bad ones.

use crate::bundle::{BundleError, BundleReference, VersionSelector};
use crate::error::ErrorKind;

fn named(ns: &str, name: &str, version: VersionSelector) -> BundleReference {
    BundleReference::Named {
        namespace: ns.to_owned(),
        name: name.to_owned(),
        version,
    }
}

#[test]
fn accepted_forms() {
    let hex = "ab".repeat(32);
    let v = |s: &str| VersionSelector::Exact(semver::Version::parse(s).unwrap());
    let digest = format!("sha256:{hex}");
    let table = [
        (
            "hello".to_owned(),
            named("local", "hello", VersionSelector::Latest),
        ),
        (
            "hello@latest".to_owned(),
            named("local", "hello", VersionSelector::Latest),
        ),
        (
            "hello@1.2.3".to_owned(),
            named("local", "hello", v("1.2.3")),
        ),
        (
            "hello@1.0.0-rc.1+build.5".to_owned(),
            named("local", "hello", v("1.0.0-rc.1+build.5")),
        ),
        (
            "team/hello".to_owned(),
            named("team", "hello", VersionSelector::Latest),
        ),
        (
            "team/hello@0.10.0".to_owned(),
            named("team", "hello", v("0.10.0")),
        ),
        (
            "team/hello@latest".to_owned(),
            named("team", "hello", VersionSelector::Latest),
        ),
        (
            format!("@{digest}"),
            BundleReference::Digest {
                name: None,
                digest: digest.clone(),
            },
        ),
        (
            format!("@sha256:{}", hex.to_uppercase()),
            BundleReference::Digest {
                name: None,
                digest: digest.clone(),
            },
        ),
        (
            format!("hello@{digest}"),
            BundleReference::Digest {
                name: Some(("local".into(), "hello".into())),
                digest: digest.clone(),
            },
        ),
        (
            format!("team/hello@{digest}"),
            BundleReference::Digest {
                name: Some(("team".into(), "hello".into())),
                digest: digest.clone(),
            },
        ),
    ];
    for (text, expected) in table {
        assert_eq!(BundleReference::parse(&text).unwrap(), expected, "{text}");
    }
    assert_eq!(
        named("team", "hello", v("0.1.0")).to_string(),
        "team/hello@0.1.0"
    );
}

#[test]
fn refused_forms_list_the_accepted_ones() {
    let bad = [
        "",
        "Hello",
        "a/b/c",
        "team/",
        "/hello",
        "hello@1.0",
        "hello@",
        "hello@v1.0.0",
        "@sha256:abc",
        "@sha256:",
        "@md5:0123",
        "hello@1.0.0@2.0.0",
        "he llo",
    ];
    for text in bad {
        let err = BundleReference::parse(text).unwrap_err();
        assert!(
            matches!(err, BundleError::InvalidReference { .. }),
            "{text}: {err}"
        );
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert_eq!(err.reason(), "INVALID_REFERENCE");
        assert!(
            err.to_string()
                .contains("accepted forms: name, name@version"),
            "{err}"
        );
    }
}
