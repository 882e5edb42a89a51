//! The default registry URL and which scheme each registry host is reached with.

use std::collections::HashMap;

use crate::error::ErrorKind;
use crate::hub::settings::{ResolvedSettings, Scheme, is_loopback};
use crate::hub::{DEFAULT_HUB, HubError, HubSettings, RegistryCredentials};

fn resolve(default_registry: &str, insecure: &[&str]) -> Result<ResolvedSettings, HubError> {
    ResolvedSettings::new(&HubSettings {
        default_registry: default_registry.to_owned(),
        credentials: HashMap::new(),
        insecure_hosts: insecure.iter().map(|h| (*h).to_owned()).collect(),
    })
}

#[test]
fn the_default_hub_is_a_loopback_registry_over_http() {
    let settings = resolve(DEFAULT_HUB, &[]).expect("default settings");
    assert_eq!(settings.default_host, "127.0.0.1:8473");
    assert_eq!(settings.scheme_for("127.0.0.1:8473"), Scheme::Http);
}

#[test]
fn plain_http_only_for_loopback_listed_hosts_and_an_http_hub() {
    let settings = resolve("http://hub.internal:8473", &["registry.lan:5000"]).expect("settings");
    let table = [
        ("hub.internal:8473", Scheme::Http),
        ("hub.internal", Scheme::Https),
        ("127.0.0.1:5000", Scheme::Http),
        ("localhost:5000", Scheme::Http),
        ("LOCALHOST", Scheme::Http),
        ("[::1]:5000", Scheme::Http),
        ("registry.lan:5000", Scheme::Http),
        ("registry.lan:5001", Scheme::Https),
        ("registry.lan", Scheme::Https),
        ("ghcr.io", Scheme::Https),
        ("10.0.0.1:5000", Scheme::Https),
        ("127.0.0.1.example.com", Scheme::Https),
    ];
    for (host, scheme) in table {
        assert_eq!(settings.scheme_for(host), scheme, "{host}");
    }
    let tls_hub = resolve("https://localhost:8473", &[]).expect("settings");
    assert_eq!(
        tls_hub.scheme_for("localhost:8473"),
        Scheme::Https,
        "the hub URL's scheme wins"
    );
}

#[test]
fn loopback_hosts() {
    for host in [
        "localhost",
        "localhost:1",
        "127.0.0.1",
        "127.1.2.3:80",
        "[::1]",
        "[::1]:5000",
    ] {
        assert!(is_loopback(host), "{host}");
    }
    for host in [
        "example.com",
        "10.0.0.1:5000",
        "[::2]:5000",
        "localhost.example.com",
    ] {
        assert!(!is_loopback(host), "{host}");
    }
}

#[test]
fn bad_hub_urls_are_refused_with_the_reason() {
    let table = [
        ("127.0.0.1:8473", "scheme"),
        ("ftp://hub.example.com", "http or https"),
        (
            "https://user:pw@hub.example.com",
            "credentials do not go in the URL",
        ),
        ("https://hub.example.com/v2/", "remove the path"),
        ("https://hub.example.com?x=1", "remove the path"),
        ("not a url", "needs a scheme"),
        ("http://", "not a URL"),
    ];
    for (url, needle) in table {
        let error = resolve(url, &[]).expect_err(url);
        assert_eq!(error.kind(), ErrorKind::FailedPrecondition, "{url}");
        assert!(error.to_string().contains(needle), "{url}: {error}");
        assert!(
            !error.to_string().contains("pw@"),
            "no secret echoed: {error}"
        );
    }
}

#[test]
fn credentials_are_found_for_their_host_only() {
    let settings = ResolvedSettings::new(&HubSettings {
        credentials: HashMap::from([
            (
                "https://Registry.Example.com:5000/".to_owned(),
                RegistryCredentials::Bearer { token: "t".into() },
            ),
            (
                "index.docker.io".to_owned(),
                RegistryCredentials::Basic {
                    username: "u".into(),
                    password: "p".into(),
                },
            ),
        ]),
        ..HubSettings::default()
    })
    .expect("settings");
    assert!(
        settings
            .credentials_for("registry.example.com:5000")
            .is_some()
    );
    assert!(settings.credentials_for("registry.example.com").is_none());
    assert!(
        settings
            .credentials_for("registry.example.com:5001")
            .is_none()
    );
    assert!(settings.credentials_for("docker.io").is_some());
    assert!(settings.credentials_for("127.0.0.1:8473").is_none());
}
