//! Bundles over the wire: build, inspect, list, export, import, delete; bad input refused
//! without leaving anything behind.

use odyssey_api::v1 as pb;
use tonic::Code;

use crate::support::{self, Project, TestServer, bundle_digest, error_reason};

const HELLO: &str = r#"{"text": "hello"}"#;

#[tokio::test]
async fn build_inspect_list_export_import_delete_round_trip() {
    let server = TestServer::start().await;
    let mut bundles = server.bundles();
    let project = Project::replay("roundtrip", &[HELLO]);
    project.write(
        "skills/greet/SKILL.md",
        "---\nname: greet\ndescription: Says hello.\n---\nBody\n",
    );
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: roundtrip\n  version: 1.2.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  skills:\n    - name: greet\n      path: skills/greet\n  tools:\n    - { name: Read, source: builtin }\n",
    );
    let built = support::build(&mut bundles, project.archive(), "", false)
        .await
        .expect("build");
    let digest = bundle_digest(&built);
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "digest {digest}"
    );
    assert_eq!(
        built.r#ref.as_ref().map(|r| r.namespace.as_str()),
        Some("local")
    );

    let inspected = bundles
        .inspect_bundle(pb::InspectBundleRequest {
            reference: "roundtrip@1.2.0".into(),
        })
        .await
        .expect("inspect")
        .into_inner();
    assert_eq!(inspected.agents.len(), 1);
    assert_eq!(inspected.agents[0].id, "main");
    assert!(inspected.agents[0].is_default);
    assert_eq!(inspected.skills[0].name, "greet");
    assert_eq!(inspected.skills[0].description, "Says hello.");
    assert_eq!(inspected.tools[0].name, "Read");

    let listed = bundles
        .list_bundles(pb::ListBundlesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.bundles.len(), 1);

    let (exported, archive) = support::export(&mut bundles, "local/roundtrip@1.2.0").await;
    assert_eq!(bundle_digest(&exported), digest);

    let deleted = bundles
        .delete_bundle(pb::DeleteBundleRequest {
            reference: "roundtrip".into(),
        })
        .await
        .expect("delete")
        .into_inner();
    assert_eq!(
        deleted.bundle.map(|b| bundle_digest(&b)),
        Some(digest.clone())
    );
    let gone = bundles
        .inspect_bundle(pb::InspectBundleRequest {
            reference: "roundtrip".into(),
        })
        .await
        .expect_err("deleted bundle is gone");
    assert_eq!(gone.code(), Code::NotFound);

    let imported = support::import(&mut bundles, archive, "", false)
        .await
        .expect("import");
    assert_eq!(
        bundle_digest(&imported),
        digest,
        "export → import preserves the digest"
    );

    // By digest, too.
    let by_digest = bundles
        .inspect_bundle(pb::InspectBundleRequest {
            reference: format!("@{digest}"),
        })
        .await
        .expect("inspect by digest")
        .into_inner();
    assert_eq!(by_digest.bundle.map(|b| bundle_digest(&b)), Some(digest));
}

#[tokio::test]
async fn same_version_with_other_content_is_refused_unless_forced() {
    let server = TestServer::start().await;
    let mut bundles = server.bundles();
    let first = Project::replay("versioned", &[HELLO]);
    support::build(&mut bundles, first.archive(), "", false)
        .await
        .expect("first build");
    // Same content again: fine (idempotent).
    support::build(&mut bundles, first.archive(), "", false)
        .await
        .expect("same content again");

    let changed = Project::replay("versioned", &[r#"{"text": "changed"}"#]);
    let refused = support::build(&mut bundles, changed.archive(), "", false)
        .await
        .expect_err("different content, same version");
    assert_eq!(refused.code(), Code::AlreadyExists, "{refused:?}");
    let forced = support::build(&mut bundles, changed.archive(), "", true)
        .await
        .expect("forced replace");
    let inspected = bundles
        .inspect_bundle(pb::InspectBundleRequest {
            reference: "versioned@0.1.0".into(),
        })
        .await
        .expect("inspect")
        .into_inner();
    assert_eq!(
        inspected.bundle.map(|b| bundle_digest(&b)),
        Some(bundle_digest(&forced))
    );
}

#[tokio::test]
async fn bad_manifests_and_archives_are_refused_and_leave_nothing() {
    let server = TestServer::start().await;
    let mut bundles = server.bundles();

    let unknown_field = Project::replay("bad", &[HELLO]);
    unknown_field.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: bad\n  version: 0.1.0\n  colour: blue\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n",
    );
    let status = support::build(&mut bundles, unknown_field.archive(), "", false)
        .await
        .expect_err("unknown field");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("odyssey.bundle.yaml"),
        "{}",
        status.message()
    );
    assert!(status.message().contains("colour"), "{}", status.message());

    let wasm = Project::replay("wasmy", &[HELLO]);
    wasm.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\nspec:\n  kind: wasm\n  prompt: x\n  model: { provider: replay, name: main }\n",
    );
    let status = support::build(&mut bundles, wasm.archive(), "", false)
        .await
        .expect_err("wasm agent");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("main") && status.message().contains("wasm"),
        "{}",
        status.message()
    );

    // Not a gzip stream at all.
    let status = support::build(
        &mut bundles,
        b"definitely not an archive".to_vec(),
        "",
        false,
    )
    .await
    .expect_err("garbage archive");
    assert_eq!(status.code(), Code::InvalidArgument);

    // An entry escaping the root.
    let status = support::import(&mut bundles, archive_with_entry("../escape.txt"), "", false)
        .await
        .expect_err("path traversal");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        error_reason(&status).is_some(),
        "errors carry google.rpc.ErrorInfo"
    );

    let listed = bundles
        .list_bundles(pb::ListBundlesRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(
        listed.bundles.is_empty(),
        "nothing installed: {:?}",
        listed.bundles
    );
    let staging = server.home().join("bundles").join(".staging");
    let leftovers = std::fs::read_dir(&staging).map(|d| d.count()).unwrap_or(0);
    assert_eq!(
        leftovers,
        0,
        "no staging leftovers in {}",
        staging.display()
    );
}

#[tokio::test]
async fn list_bundles_pages_and_latest_picks_the_highest_version() {
    let server = TestServer::start().await;
    let mut bundles = server.bundles();
    for version in ["0.9.0", "0.10.0", "0.2.0"] {
        let project = Project::replay("paged", &[HELLO]);
        project.write(
            "odyssey.bundle.yaml",
            &format!("apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: paged\n  version: {version}\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n"),
        );
        support::build(&mut bundles, project.archive(), "", false)
            .await
            .expect("build");
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = bundles
            .list_bundles(pb::ListBundlesRequest {
                page_size: 2,
                page_token: token.clone(),
                namespace: String::new(),
            })
            .await
            .expect("page")
            .into_inner();
        assert!(page.bundles.len() <= 2);
        seen.extend(page.bundles.iter().map(crate::support::bundle_version));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen, vec!["0.2.0", "0.9.0", "0.10.0"]);
    let latest = bundles
        .inspect_bundle(pb::InspectBundleRequest {
            reference: "paged@latest".into(),
        })
        .await
        .expect("latest")
        .into_inner();
    assert_eq!(
        latest.bundle.map(|b| crate::support::bundle_version(&b)),
        Some("0.10.0".to_string())
    );
}

#[tokio::test]
async fn init_bundle_returns_a_scaffold_that_builds() {
    let server = TestServer::start().await;
    let mut bundles = server.bundles();
    let scaffold = bundles
        .init_bundle(pb::InitBundleRequest {
            name: "fresh".into(),
        })
        .await
        .expect("init")
        .into_inner()
        .archive;
    let built = support::build(&mut bundles, scaffold, "", false)
        .await
        .expect("scaffold builds");
    assert_eq!(crate::support::bundle_name(&built), "fresh");
    let session = server.create_session("fresh").await;
    let status = server.run(&session.id, "hello?").await;
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );
    assert!(!status.response.is_empty());
}

/// A gzip'd tar holding one regular file at exactly `path` (bypassing tar's own checks).
fn archive_with_entry(path: &str) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    let body = b"escape";
    header.set_size(body.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    {
        let name = &mut header.as_old_mut().name;
        name[..path.len()].copy_from_slice(path.as_bytes());
    }
    header.set_cksum();
    let mut raw = Vec::new();
    raw.extend_from_slice(header.as_bytes());
    raw.extend_from_slice(body);
    raw.resize(raw.len().div_ceil(512) * 512, 0);
    raw.extend_from_slice(&[0u8; 1024]);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut encoder, &raw).expect("gzip");
    encoder.finish().expect("gzip finish")
}
