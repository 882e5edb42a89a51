//! The credentials file: every entry form, the refusals, and secrets kept out of errors and
//! debug output.

use crate::hub::credentials::parse_auth_file;
use crate::hub::{HubError, HubSettings, RegistryCredentials, load_auth_file, registry_host_key};

fn basic(username: &str, password: &str) -> RegistryCredentials {
    RegistryCredentials::Basic {
        username: username.to_owned(),
        password: password.to_owned(),
    }
}

#[test]
fn every_entry_form_is_read() {
    let file = r#"{
        "auths": {
            "https://index.docker.io/v1/": {"auth": "aHViLXVzZXI6aHViOnBhc3M="},
            "Registry.Example.com:5000": {"username": "ci", "password": "s3cret"},
            "ghcr.io": {"registrytoken": "tok-123"},
            "empty.example.com": {}
        },
        "credsStore": "desktop"
    }"#;
    let credentials = parse_auth_file(file).expect("parses");
    assert_eq!(credentials.len(), 3);
    assert_eq!(
        credentials["docker.io"],
        basic("hub-user", "hub:pass"),
        "a `:` in the password survives"
    );
    assert_eq!(
        credentials["registry.example.com:5000"],
        basic("ci", "s3cret")
    );
    assert_eq!(
        credentials["ghcr.io"],
        RegistryCredentials::Bearer {
            token: "tok-123".into()
        }
    );
}

#[test]
fn bad_files_are_refused_without_quoting_secrets() {
    let table = [
        (
            r#"{"auths": {"r.example.com": {"auth": "not base64!"}}}"#,
            "not base64",
        ),
        (
            r#"{"auths": {"r.example.com": {"auth": "bm9jb2xvbg=="}}}"#,
            "username:password",
        ),
        (
            r#"{"auths": {"r.example.com": {"username": "ci"}}}"#,
            "go together",
        ),
        (
            r#"{"auths": {"r.example.com": {"identitytoken": "refresh-secret"}}}"#,
            "identitytoken",
        ),
        (
            r#"{"auths": {"r.example.com": {"registrytoken": "a"}, "https://r.example.com/v2/": {"registrytoken": "b"}}}"#,
            "two entries",
        ),
        (
            r#"{"auths": {"": {"registrytoken": "a"}}}"#,
            "no registry host",
        ),
        (
            r#"{"auths": {"r.example.com": {"password": "leaked-secret""#,
            "line 1",
        ),
        ("password=hunter2", "not a credentials file"),
    ];
    for (text, needle) in table {
        let message = parse_auth_file(text).expect_err(text);
        assert!(message.contains(needle), "{text}: {message}");
        for secret in ["refresh-secret", "leaked-secret", "hunter2"] {
            assert!(!message.contains(secret), "no secret in `{message}`");
        }
    }
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().expect("dir");
    let missing = dir.path().join("missing.json");
    let error = load_auth_file(&missing).expect_err("missing file");
    assert!(
        matches!(error, HubError::CredentialsFile { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("missing.json"), "{error}");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"auths": {"r.example.com": {"username": "ci"}}}"#).expect("write");
    let error = load_auth_file(&bad).expect_err("bad entry");
    assert!(error.to_string().contains("bad.json"), "{error}");
    assert!(error.to_string().contains("auths.r.example.com"), "{error}");

    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        r#"{"auths": {"r.example.com": {"registrytoken": "t"}}}"#,
    )
    .expect("write");
    assert_eq!(load_auth_file(&good).expect("loads").len(), 1);
}

#[test]
fn debug_output_never_shows_a_secret() {
    let settings = HubSettings {
        credentials: [
            ("a.example.com".to_owned(), basic("ci", "basic-secret")),
            (
                "b.example.com".to_owned(),
                RegistryCredentials::Bearer {
                    token: "bearer-secret".into(),
                },
            ),
        ]
        .into(),
        ..HubSettings::default()
    };
    let debug = format!("{settings:?}");
    assert!(
        debug.contains("ci") && debug.contains("<redacted>"),
        "{debug}"
    );
    assert!(
        !debug.contains("basic-secret") && !debug.contains("bearer-secret"),
        "{debug}"
    );
}

#[test]
fn host_keys_are_what_references_write() {
    let table = [
        ("registry.example.com", "registry.example.com"),
        ("https://registry.example.com/v2/", "registry.example.com"),
        ("http://127.0.0.1:5000", "127.0.0.1:5000"),
        ("GHCR.io", "ghcr.io"),
        ("https://index.docker.io/v1/", "docker.io"),
        ("registry-1.docker.io", "docker.io"),
    ];
    for (key, host) in table {
        assert_eq!(registry_host_key(key), host, "{key}");
    }
}
