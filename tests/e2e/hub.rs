//! The bundle hub against a real OCI registry (the CNCF distribution registry, started per
//! test on a free loopback port): push → delete → pull → the same digests and a working
//! session; tampered blobs, registry auth failures, credentials kept to their host, a
//! registry that is down, and bad references, each refused with nothing installed.

use std::path::{Path, PathBuf};

use odyssey_api::v1 as pb;
use odyssey_testing::auth_probe::AuthProbe;
use odyssey_testing::registry::TestRegistry;
use tonic::Code;

use crate::support::{self, Project, TestServer, bad_fields, bundle_digest, error_reason};

const HELLO: &str = r#"{"text": "hello from the registry"}"#;

async fn registry() -> TestRegistry {
    TestRegistry::start()
        .await
        .expect("the test registry starts")
}

/// A server whose default registry is `hub`, with the given credentials file.
async fn server_with(hub: &TestRegistry, auth_file: Option<PathBuf>) -> TestServer {
    let hub_url = format!("http://{}", hub.host());
    TestServer::start_with(move |args| {
        args.hub = Some(hub_url);
        args.registry_auth_file = auth_file;
    })
    .await
}

/// A credentials file in `dir`, in the `docker login` format, for `host`.
fn auth_file(dir: &Path, host: &str, username: &str, password: &str) -> PathBuf {
    let path = dir.join(format!("registry-auth-{password}.json"));
    let json = serde_json::json!({
        "auths": { host: { "username": username, "password": password } }
    });
    std::fs::write(&path, json.to_string()).expect("write the credentials file");
    path
}

async fn push(
    server: &TestServer,
    reference: &str,
    target: &str,
) -> Result<pb::PushBundleResponse, tonic::Status> {
    Ok(server
        .bundles()
        .push_bundle(pb::PushBundleRequest {
            reference: reference.into(),
            target: target.into(),
        })
        .await?
        .into_inner())
}

async fn pull(
    server: &TestServer,
    reference: &str,
    force: bool,
) -> Result<pb::PullBundleResponse, tonic::Status> {
    Ok(server
        .bundles()
        .pull_bundle(pb::PullBundleRequest {
            reference: reference.into(),
            force,
            namespace: String::new(),
        })
        .await?
        .into_inner())
}

async fn delete(server: &TestServer, reference: &str) {
    server
        .bundles()
        .delete_bundle(pb::DeleteBundleRequest {
            reference: reference.into(),
        })
        .await
        .expect("delete");
}

async fn installed(server: &TestServer) -> Vec<pb::Bundle> {
    server
        .bundles()
        .list_bundles(pb::ListBundlesRequest::default())
        .await
        .expect("list")
        .into_inner()
        .bundles
}

/// Nothing is left half-installed: no bundle and an empty staging folder.
async fn assert_nothing_installed(server: &TestServer) {
    assert!(installed(server).await.is_empty(), "no bundle installed");
    let staging = server.home().join("bundles/.staging");
    let leftovers: Vec<_> = std::fs::read_dir(&staging)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "staging is empty: {leftovers:?}");
}

fn is_sha256(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64)
}

#[tokio::test]
async fn push_delete_pull_gives_back_the_same_bundle_and_a_working_session() {
    let hub = registry().await;
    let server = server_with(&hub, None).await;
    let installed_bundle = server.install(&Project::replay("hubdemo", &[HELLO])).await;
    let content_digest = bundle_digest(&installed_bundle);

    // No registry in the target: the hub; no tag: the bundle's version.
    let pushed = push(&server, "hubdemo@0.1.0", "team/hubdemo")
        .await
        .expect("push");
    assert_eq!(pushed.target, format!("{}/team/hubdemo:0.1.0", hub.host()));
    assert_eq!(pushed.content_digest, content_digest);
    assert!(
        is_sha256(&pushed.manifest_digest),
        "{}",
        pushed.manifest_digest
    );
    assert_ne!(
        pushed.manifest_digest, pushed.content_digest,
        "two different digests"
    );
    assert_eq!(
        pushed.bundle.as_ref().map(bundle_digest),
        Some(content_digest.clone())
    );

    // What the registry stores is an Odyssey bundle artifact.
    let manifest = hub
        .stored_manifest("team/hubdemo", "0.1.0")
        .expect("stored manifest");
    assert_eq!(
        hub.tag_digest("team/hubdemo", "0.1.0").expect("tag"),
        pushed.manifest_digest
    );
    assert_eq!(
        manifest["artifactType"],
        "application/vnd.odyssey.bundle.v1"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.odyssey.bundle.config.v1+json"
    );
    assert_eq!(
        manifest["layers"][0]["mediaType"],
        "application/vnd.odyssey.bundle.v1.tar+gzip"
    );
    assert_eq!(
        manifest["annotations"]["ai.odyssey.bundle.digest"],
        content_digest.as_str()
    );
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.title"],
        "hubdemo"
    );
    assert_eq!(
        manifest["annotations"]["org.opencontainers.image.version"],
        "0.1.0"
    );

    // Pushing the same bundle again yields the same manifest.
    let again = push(
        &server,
        "local/hubdemo@0.1.0",
        &format!("{}/team/hubdemo:stable", hub.host()),
    )
    .await
    .expect("push again");
    assert_eq!(again.manifest_digest, pushed.manifest_digest);

    delete(&server, "hubdemo@0.1.0").await;
    assert!(installed(&server).await.is_empty());

    let pulled = pull(&server, "team/hubdemo:0.1.0", false)
        .await
        .expect("pull");
    assert_eq!(pulled.manifest_digest, pushed.manifest_digest);
    assert_eq!(pulled.content_digest, content_digest);
    assert_eq!(pulled.source, format!("{}/team/hubdemo:0.1.0", hub.host()));
    let bundle = pulled.bundle.expect("bundle");
    assert_eq!(bundle_digest(&bundle), content_digest);
    assert_eq!(support::bundle_name(&bundle), "hubdemo");

    // The pulled bundle runs.
    let session = server.create_session("hubdemo@0.1.0").await;
    let status = server.run(&session.id, "hi").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert_eq!(status.response, "hello from the registry");

    // By manifest digest, into another namespace.
    let by_digest = format!("{}/team/hubdemo@{}", hub.host(), pushed.manifest_digest);
    let pinned = server
        .bundles()
        .pull_bundle(pb::PullBundleRequest {
            reference: by_digest,
            force: false,
            namespace: "mirror".into(),
        })
        .await
        .expect("pull by digest")
        .into_inner();
    let pinned_bundle = pinned.bundle.expect("bundle");
    assert_eq!(bundle_digest(&pinned_bundle), content_digest);
    assert_eq!(
        pinned_bundle.r#ref.map(|r| r.namespace),
        Some("mirror".to_owned())
    );
}

#[tokio::test]
async fn a_local_version_with_other_content_is_kept_unless_forced() {
    let hub = registry().await;
    let server = server_with(&hub, None).await;
    let published = server.install(&Project::replay("clash", &[HELLO])).await;
    push(&server, "clash@0.1.0", "team/clash")
        .await
        .expect("push");

    let local = Project::replay("clash", &[r#"{"text": "a local edit"}"#]);
    let local_bundle = support::build(&mut server.bundles(), local.archive(), "", true)
        .await
        .expect("replace locally");
    assert_ne!(bundle_digest(&local_bundle), bundle_digest(&published));

    let refused = pull(&server, "team/clash:0.1.0", false)
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::AlreadyExists, "{refused:?}");
    assert_eq!(
        error_reason(&refused).as_deref(),
        Some("BUNDLE_VERSION_EXISTS")
    );
    assert!(refused.message().contains("force"), "{}", refused.message());
    let still = installed(&server).await;
    assert_eq!(
        still.iter().map(bundle_digest).collect::<Vec<_>>(),
        vec![bundle_digest(&local_bundle)]
    );

    let forced = pull(&server, "team/clash:0.1.0", true)
        .await
        .expect("forced pull");
    assert_eq!(forced.content_digest, bundle_digest(&published));
    let now = installed(&server).await;
    assert_eq!(
        now.iter().map(bundle_digest).collect::<Vec<_>>(),
        vec![bundle_digest(&published)]
    );
}

#[tokio::test]
async fn a_tampered_blob_is_refused_and_nothing_is_installed() {
    let hub = registry().await;
    let server = server_with(&hub, None).await;
    server.install(&Project::replay("tampered", &[HELLO])).await;
    push(&server, "tampered@0.1.0", "team/tampered")
        .await
        .expect("push");
    delete(&server, "tampered").await;

    let manifest = hub
        .stored_manifest("team/tampered", "0.1.0")
        .expect("manifest");
    let layer = manifest["layers"][0]["digest"]
        .as_str()
        .expect("layer digest")
        .to_owned();
    hub.tamper_blob(&layer).expect("tamper");

    let refused = pull(&server, "team/tampered:0.1.0", false)
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert_eq!(error_reason(&refused).as_deref(), Some("DIGEST_MISMATCH"));
    assert!(refused.message().contains(&layer), "{}", refused.message());
    assert!(
        refused.message().contains("nothing was installed"),
        "{}",
        refused.message()
    );
    assert_nothing_installed(&server).await;
}

#[tokio::test]
async fn a_registry_refusing_the_credentials_is_reported_as_such() {
    let hub = TestRegistry::start_with_basic_auth("ci", "right-password")
        .await
        .expect("registry");
    let dir = tempfile::tempdir().expect("dir");

    // No credentials for the host: the registry's refusal, not the caller's.
    let anonymous = server_with(&hub, None).await;
    anonymous
        .install(&Project::replay("private", &[HELLO]))
        .await;
    let refused = push(&anonymous, "private", "team/private")
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert_eq!(
        error_reason(&refused).as_deref(),
        Some("REGISTRY_CREDENTIALS_REQUIRED")
    );
    assert!(
        refused.message().contains(&hub.host()),
        "{}",
        refused.message()
    );
    assert!(
        refused.message().contains("refused"),
        "{}",
        refused.message()
    );

    // Wrong credentials: refused, and the message holds no secret.
    let wrong = server_with(
        &hub,
        Some(auth_file(dir.path(), &hub.host(), "ci", "wrong-password")),
    )
    .await;
    wrong.install(&Project::replay("private", &[HELLO])).await;
    for status in [
        push(&wrong, "private", "team/private")
            .await
            .expect_err("push refused"),
        pull(&wrong, "team/private:0.1.0", false)
            .await
            .expect_err("pull refused"),
    ] {
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert_eq!(
            error_reason(&status).as_deref(),
            Some("REGISTRY_CREDENTIALS_REFUSED")
        );
        assert!(
            status.message().contains(&format!(
                "the registry {} refused the credentials",
                hub.host()
            )),
            "{}",
            status.message()
        );
        assert!(
            !status.message().contains("wrong-password"),
            "{}",
            status.message()
        );
    }
    assert_nothing_installed_besides(&wrong, "private").await;

    // The right ones: push, delete, pull.
    let right = server_with(
        &hub,
        Some(auth_file(dir.path(), &hub.host(), "ci", "right-password")),
    )
    .await;
    let bundle = right.install(&Project::replay("private", &[HELLO])).await;
    push(&right, "private", "team/private")
        .await
        .expect("push with credentials");
    delete(&right, "private").await;
    let pulled = pull(&right, "team/private:0.1.0", false)
        .await
        .expect("pull with credentials");
    assert_eq!(pulled.content_digest, bundle_digest(&bundle));
}

/// Only the bundle `name` the test installed itself is there.
async fn assert_nothing_installed_besides(server: &TestServer, name: &str) {
    let names: Vec<String> = installed(server)
        .await
        .iter()
        .map(support::bundle_name)
        .collect();
    assert_eq!(names, vec![name.to_owned()]);
}

#[tokio::test]
async fn credentials_for_one_registry_are_never_sent_to_another() {
    let hub = TestRegistry::start_with_basic_auth("ci", "host-a-secret")
        .await
        .expect("registry");
    let probe = AuthProbe::start().await.expect("probe");
    let dir = tempfile::tempdir().expect("dir");
    let server = server_with(
        &hub,
        Some(auth_file(dir.path(), &hub.host(), "ci", "host-a-secret")),
    )
    .await;
    server
        .install(&Project::replay("secretive", &[HELLO]))
        .await;

    // The credentials work where they belong...
    push(&server, "secretive", "team/secretive")
        .await
        .expect("push to host A");

    // ...and a caller naming another host (same address, other port) cannot collect them.
    let target = format!("{}/team/secretive:0.1.0", probe.host());
    let refused = push(&server, "secretive", &target)
        .await
        .expect_err("push to host B");
    assert_eq!(
        error_reason(&refused).as_deref(),
        Some("REGISTRY_CREDENTIALS_REQUIRED")
    );
    let refused = pull(&server, &target, false)
        .await
        .expect_err("pull from host B");
    assert_eq!(
        error_reason(&refused).as_deref(),
        Some("REGISTRY_CREDENTIALS_REQUIRED")
    );

    let requests = probe.requests();
    assert!(requests.len() >= 2, "host B was asked: {requests:?}");
    for request in &requests {
        assert_eq!(
            request.authorization, None,
            "no Authorization header to host B: {request:?}"
        );
    }
}

#[tokio::test]
async fn a_registry_that_is_down_is_unavailable_and_nothing_is_installed() {
    let mut hub = registry().await;
    let server = server_with(&hub, None).await;
    server.install(&Project::replay("offline", &[HELLO])).await;
    push(&server, "offline", "team/offline")
        .await
        .expect("push");
    delete(&server, "offline").await;
    hub.stop().await;

    let refused = pull(&server, "team/offline:0.1.0", false)
        .await
        .expect_err("pull");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert_eq!(
        error_reason(&refused).as_deref(),
        Some("REGISTRY_UNAVAILABLE")
    );
    assert!(
        refused.message().contains(&hub.host()),
        "{}",
        refused.message()
    );
    assert_nothing_installed(&server).await;

    server.install(&Project::replay("offline", &[HELLO])).await;
    let refused = push(&server, "offline", "team/offline")
        .await
        .expect_err("push");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
}

#[tokio::test]
async fn unknown_artifacts_and_bad_references_are_refused_clearly() {
    let hub = registry().await;
    let server = server_with(&hub, None).await;
    server.install(&Project::replay("refs", &[HELLO])).await;

    let missing = pull(&server, "team/absent:1.0.0", false)
        .await
        .expect_err("absent");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    for (reference, target, field) in [
        ("refs", "http://example.com/team/refs", "target"),
        ("refs", "Team/Refs:1.0.0", "target"),
        ("refs", "example.com:99999/team/refs", "target"),
        (
            "refs",
            "team/refs@sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "target",
        ),
        ("refs", "", "target"),
        ("", "team/refs", "reference"),
    ] {
        let status = push(&server, reference, target).await.expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{target}: {status:?}");
        assert_eq!(
            bad_fields(&status),
            vec![field.to_owned()],
            "{target}: {status:?}"
        );
    }
    let status = pull(&server, "team/refs:bad tag", false)
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert_eq!(bad_fields(&status), vec!["reference".to_owned()]);

    let unknown_bundle = push(&server, "nothere", "team/nothere")
        .await
        .expect_err("no bundle");
    assert_eq!(unknown_bundle.code(), Code::NotFound, "{unknown_bundle:?}");
}

#[tokio::test]
async fn push_and_pull_from_the_command_line() {
    let hub = registry().await;
    let server = server_with(&hub, None).await;
    let url = server.handle.url();
    let bundle = server.install(&Project::replay("clihub", &[HELLO])).await;
    let target = format!("{}/team/clihub:0.1.0", hub.host());

    let (code, out, err) = odyssey(&["--server", &url, "bundle", "push", "clihub", &target]).await;
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains(&format!("Pushed local/clihub@0.1.0 to {target}")),
        "{out}"
    );
    assert!(
        out.contains(&bundle_digest(&bundle)),
        "content digest shown: {out}"
    );
    let manifest_digest = hub.tag_digest("team/clihub", "0.1.0").expect("tag");
    assert!(
        out.contains(&manifest_digest),
        "manifest digest shown: {out}"
    );

    let (code, out, err) = odyssey(&["--server", &url, "bundle", "pull", &target]).await;
    assert_eq!(code, 0, "same content again is fine: {out}{err}");
    assert!(
        out.contains(&format!("Pulled local/clihub@0.1.0 from {target}")),
        "{out}"
    );

    let changed = Project::replay("clihub", &[r#"{"text": "changed"}"#]);
    support::build(&mut server.bundles(), changed.archive(), "", true)
        .await
        .expect("change");
    let (code, _, err) = odyssey(&["--server", &url, "bundle", "pull", &target]).await;
    assert_ne!(code, 0);
    assert!(err.contains("force"), "{err}");
    let (code, out, err) = odyssey(&[
        "--server", &url, "bundle", "pull", &target, "--force", "--json",
    ])
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let line: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    // PullBundleResponse, in the proto3 JSON form.
    assert_eq!(line["manifestDigest"], manifest_digest.as_str());
    assert_eq!(line["contentDigest"], bundle_digest(&bundle).as_str());
}

/// Runs a CLI command in-process; returns (exit code, stdout, stderr).
async fn odyssey(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let args = args.iter().map(|a| a.to_string()).collect();
    let code = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        odyssey_cli::run_cli(args, &mut out, &mut err),
    )
    .await
    .expect("the command finishes");
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[tokio::test]
async fn bad_registry_settings_stop_the_server_from_starting() {
    let home = tempfile::tempdir().expect("home");
    let mut args = odyssey_server::config::ServeArgs::new(support::loopback(), home.path().into());

    args.hub = Some("https://user:hunter2@hub.example.com/v2".into());
    let message = args
        .runtime_config()
        .expect_err("a hub URL with credentials and a path is refused")
        .to_string();
    assert!(message.contains("--hub"), "names the flag: {message}");
    assert!(
        message.contains("invalid registry setting hub"),
        "{message}"
    );
    assert!(!message.contains("hunter2"), "no secret echoed: {message}");

    args.hub = Some("http://127.0.0.1:8473".into());
    let file = home.path().join("auth.json");
    std::fs::write(
        &file,
        r#"{"auths": {"r.example.com": {"identitytoken": "refresh-me"}}}"#,
    )
    .expect("write");
    args.registry_auth_file = Some(file);
    let message = args.runtime_config().expect_err("refused").to_string();
    assert!(
        message.contains("auth.json") && message.contains("identitytoken"),
        "{message}"
    );
    assert!(!message.contains("refresh-me"), "{message}");
}
