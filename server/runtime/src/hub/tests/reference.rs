//! Every accepted reference form, and the bad ones with the reason they are refused.

use crate::error::ErrorKind;
use crate::hub::{HubError, RegistryReference};

const HUB: &str = "127.0.0.1:8473";

fn parse(text: &str) -> Result<RegistryReference, HubError> {
    RegistryReference::parse(text, HUB, "reference")
}

fn reference(
    registry: &str,
    repository: &str,
    tag: Option<&str>,
    digest: Option<&str>,
) -> RegistryReference {
    RegistryReference {
        registry: registry.to_owned(),
        repository: repository.to_owned(),
        tag: tag.map(str::to_owned),
        digest: digest.map(str::to_owned),
    }
}

#[test]
fn accepted_forms() {
    let digest = format!("sha256:{}", "ab".repeat(32));
    let table = [
        ("demo", reference(HUB, "demo", None, None)),
        ("demo:1.0.0", reference(HUB, "demo", Some("1.0.0"), None)),
        (
            "team/demo:1.0.0",
            reference(HUB, "team/demo", Some("1.0.0"), None),
        ),
        ("org/team/demo", reference(HUB, "org/team/demo", None, None)),
        (
            "registry.example.com/team/demo:v2",
            reference("registry.example.com", "team/demo", Some("v2"), None),
        ),
        (
            "registry.example.com:5000/team/demo:1.0.0_build.1",
            reference(
                "registry.example.com:5000",
                "team/demo",
                Some("1.0.0_build.1"),
                None,
            ),
        ),
        ("localhost/demo", reference("localhost", "demo", None, None)),
        (
            "localhost:5000/demo",
            reference("localhost:5000", "demo", None, None),
        ),
        (
            "[::1]:5000/team/demo",
            reference("[::1]:5000", "team/demo", None, None),
        ),
        (
            &format!("127.0.0.1:5000/team/demo@{digest}"),
            reference("127.0.0.1:5000", "team/demo", None, Some(&digest)),
        ),
        (
            &format!("team/demo:1.0.0@{digest}"),
            reference(HUB, "team/demo", Some("1.0.0"), Some(&digest)),
        ),
        ("  team/demo  ", reference(HUB, "team/demo", None, None)),
    ];
    for (text, expected) in table {
        assert_eq!(
            parse(text).unwrap_or_else(|e| panic!("{text}: {e}")),
            expected,
            "{text}"
        );
    }
}

#[test]
fn display_round_trips() {
    let digest = format!("sha256:{}", "cd".repeat(32));
    for text in [
        "registry.example.com:5000/team/demo:1.0.0".to_owned(),
        format!("127.0.0.1:5000/team/demo@{digest}"),
        format!("127.0.0.1:5000/team/demo:v1@{digest}"),
    ] {
        assert_eq!(parse(&text).expect("parses").to_string(), text);
    }
    assert_eq!(
        parse("demo").expect("parses").to_string(),
        format!("{HUB}/demo")
    );
}

#[test]
fn bad_references_say_why() {
    let table = [
        ("", "empty"),
        ("   ", "empty"),
        ("https://registry.example.com/team/demo", "no scheme"),
        ("Team/Demo", "lowercase"),
        ("team/demo:bad tag", "invalid reference format"),
        ("team/demo:-x", "invalid reference format"),
        ("registry.example.com:99999/demo", "port"),
        ("registry.example.com:0/demo", "port"),
        ("bad_host.example.com/demo", "host name"),
        ("[::1/demo", "unclosed"),
        ("[zz]:5000/demo", "IPv6"),
        ("team/demo@sha256:1234", "digest"),
        (&format!("team/demo@sha512:{}", "ab".repeat(64)), "sha256"),
        ("team//demo", "invalid reference format"),
    ];
    for (text, needle) in table {
        let error = parse(text).expect_err(text);
        assert!(
            matches!(
                error,
                HubError::InvalidReference {
                    field: "reference",
                    ..
                }
            ),
            "{text}: {error:?}"
        );
        assert_eq!(error.kind(), ErrorKind::InvalidArgument);
        assert_eq!(error.field(), Some("reference"));
        let message = error.to_string();
        assert!(
            message.contains(needle),
            "{text}: `{message}` should mention {needle}"
        );
        assert!(
            message.contains("[registry[:port]/]repository[:tag]"),
            "{message}"
        );
    }
}

#[test]
fn tags_and_digests_are_replaced_or_pinned() {
    let digest = format!("sha256:{}", "ef".repeat(32));
    let base = parse(&format!("team/demo:old@{digest}")).expect("parses");
    assert_eq!(
        base.with_tag("1.0.0".into()),
        reference(HUB, "team/demo", Some("1.0.0"), None)
    );
    let pinned = parse("team/demo:1.0.0")
        .expect("parses")
        .with_digest(digest.clone());
    assert_eq!(
        pinned,
        reference(HUB, "team/demo", Some("1.0.0"), Some(&digest))
    );
    let oci = pinned.to_oci();
    assert_eq!(
        (oci.registry(), oci.repository(), oci.digest()),
        (HUB, "team/demo", Some(digest.as_str()))
    );
    let untagged = parse("demo").expect("parses").to_oci();
    assert_eq!(untagged.tag(), Some("latest"));
}
