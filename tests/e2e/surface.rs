//! The transport surface: health, reflection (v1 and v1alpha), auth, message limits,
//! server info, and RPCs that later versions implement.

use futures::StreamExt;
use odyssey_api::v1 as pb;
use tonic::Code;
use tonic::metadata::MetadataValue;

use crate::support::{Project, TestServer};

#[tokio::test]
async fn health_reports_serving_for_every_service() {
    let server = TestServer::start().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel.clone());
    for service in [
        "",
        "odyssey.v1.SessionService",
        "odyssey.v1.ExecutionService",
    ] {
        let response = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health check")
            .into_inner();
        assert_eq!(
            response.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );
    }
}

#[tokio::test]
async fn reflection_lists_the_services_in_v1_and_v1alpha() {
    let server = TestServer::start().await;
    {
        use tonic_reflection::pb::v1::{
            ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
        };
        let mut client = ServerReflectionClient::new(server.channel.clone());
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut responses = client
            .server_reflection_info(futures::stream::iter([request]))
            .await
            .expect("reflection v1")
            .into_inner();
        let response = responses.next().await.expect("one answer").expect("ok");
        let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
            panic!("list services answer");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        for expected in odyssey_server::grpc::SERVICE_NAMES {
            assert!(
                names.iter().any(|n| n == expected),
                "{expected} in {names:?}"
            );
        }
    }
    {
        use tonic_reflection::pb::v1alpha::{
            ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
        };
        let mut client = ServerReflectionClient::new(server.channel.clone());
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::FileContainingSymbol(
                "odyssey.v1.SessionService".into(),
            )),
        };
        let mut responses = client
            .server_reflection_info(futures::stream::iter([request]))
            .await
            .expect("reflection v1alpha")
            .into_inner();
        let response = responses.next().await.expect("one answer").expect("ok");
        let Some(MessageResponse::FileDescriptorResponse(files)) = response.message_response else {
            panic!("file descriptor answer");
        };
        assert!(!files.file_descriptor_proto.is_empty());
    }
}

#[tokio::test]
async fn the_auth_token_is_enforced_on_everything_but_health() {
    let server = TestServer::start_with(|args| args.auth_token = Some("s3cret-token".into())).await;
    let denied = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect_err("no token");
    assert_eq!(denied.code(), Code::Unauthenticated);

    let mut wrong = tonic::Request::new(pb::GetServerInfoRequest {});
    wrong
        .metadata_mut()
        .insert("authorization", MetadataValue::from_static("Bearer nope"));
    let denied = server
        .server()
        .get_server_info(wrong)
        .await
        .expect_err("wrong token");
    assert_eq!(denied.code(), Code::Unauthenticated);

    let mut right = tonic::Request::new(pb::GetServerInfoRequest {});
    right.metadata_mut().insert(
        "authorization",
        MetadataValue::from_static("Bearer s3cret-token"),
    );
    server
        .server()
        .get_server_info(right)
        .await
        .expect("right token");

    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel.clone());
    health
        .check(tonic_health::pb::HealthCheckRequest::default())
        .await
        .expect("health needs no token");
}

#[tokio::test]
async fn a_public_bind_without_a_token_is_refused() {
    let home = tempfile::tempdir().expect("home");
    let args = odyssey_server::config::ServeArgs::new(
        "0.0.0.0:0".parse().expect("addr"),
        home.path().into(),
    );
    let refused = odyssey_server::serve::start(&args)
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("--auth-token"), "{refused}");
}

#[tokio::test]
async fn oversized_messages_get_the_transport_size_error() {
    let server = TestServer::start_with(|args| args.max_message_bytes = Some(64 * 1024)).await;
    server
        .install(&Project::replay("small", &[r#"{"text": "ok"}"#]))
        .await;
    let session = server.create_session("small").await;
    let huge = "x".repeat(200 * 1024);
    let status = server
        .executions()
        .run(pb::RunRequest {
            input: Some(crate::support::turn(&session.id, &huge)),
        })
        .await
        .expect_err("too large");
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert_eq!(
        server.get_session(&session.id).await.last_sequence,
        0,
        "nothing recorded"
    );
}

#[tokio::test]
async fn server_info_reports_version_limits_and_sandbox() {
    let server = TestServer::start_with(|args| {
        args.worker_count = Some(3);
        args.queue_capacity = Some(17);
    })
    .await;
    let info = server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("info")
        .into_inner();
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    let limits = info.limits.expect("limits");
    assert_eq!((limits.worker_count, limits.queue_capacity), (3, 17));
    assert!(info.providers.iter().any(|p| p == "replay"));
    let sandbox = info.sandbox.expect("sandbox capabilities");
    assert_eq!(
        sandbox.bubblewrap,
        which_bwrap(),
        "bubblewrap detection matches PATH"
    );
}

fn which_bwrap() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("bwrap").is_file()))
}

/// Issue 11 (also fix): `GetServerInfo` says how each session's memory and processes are
/// limited: by the session's cgroup, or by the fallback and its numbers.
#[tokio::test]
async fn server_info_says_how_sessions_are_limited() {
    let (server, _dir) = crate::config::configured(
        "[sandbox]\ncgroups = false\nmemory_mb = 1024\nmax_processes = 300\n\
         max_commands_per_session = 3\n",
    )
    .await;
    let sandbox = sandbox_info(&server).await;
    let limits = sandbox.session_limits.expect("session limits");
    assert_eq!(
        (limits.memory_cgroup_version, limits.pids_cgroup_version),
        (0, 0)
    );
    assert_eq!(limits.default_memory_mb, 1024);
    assert_eq!(limits.max_processes, 300);
    assert_eq!(limits.max_concurrent_commands, 3);
    let notes = sandbox.notes.join("\n");
    assert!(
        notes.contains("3 commands at once, each with 100 processes"),
        "{notes}"
    );
    assert!(
        notes.contains("not the session's processes together"),
        "{notes}"
    );

    // By default, as root on a host with cgroups (as here), sessions get theirs.
    let server = TestServer::start().await;
    let limits = sandbox_info(&server)
        .await
        .session_limits
        .expect("session limits");
    assert_eq!(
        limits.max_concurrent_commands == 0,
        limits.pids_cgroup_version > 0,
        "{limits:?}"
    );
    let root =
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("proc")) == 0;
    if root && std::path::Path::new("/sys/fs/cgroup").is_dir() {
        assert!(
            limits.memory_cgroup_version > 0 && limits.pids_cgroup_version > 0,
            "{limits:?}"
        );
    }
}

async fn sandbox_info(server: &TestServer) -> pb::SandboxCapabilities {
    server
        .server()
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .expect("info")
        .into_inner()
        .sandbox
        .expect("sandbox capabilities")
}
