//! The bad-input matrix: every RPC of every `odyssey.v1` service called with missing
//! fields, malformed and unknown ids, strings beyond the server's limits and enum numbers
//! the server does not know. One row per case: the code it must answer, the field its
//! `BadRequest` violation must name, and, after every row, the same sessions, bundles and
//! home folder (every file's path and bytes) as before it.

mod approvals;
mod bundles;
mod executions;
mod malformed;
mod sessions;

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::time::Duration;

use futures::future::BoxFuture;
use odyssey_api::v1 as pb;
use odyssey_api::v1::{
    approval_service_client::ApprovalServiceClient, bundle_service_client::BundleServiceClient,
    execution_service_client::ExecutionServiceClient, session_service_client::SessionServiceClient,
};
use prost::Message;
use tonic::transport::Channel;
use tonic::{Code, Status};

use crate::support::{Project, TestServer, bad_fields, error_reason};

/// A string far beyond every limit the server sets on a field, yet well inside the
/// largest message it accepts (4 MiB), so the server itself must refuse it.
pub(super) fn huge() -> String {
    "a".repeat(1 << 20)
}

/// A well-formed UUID no session, execution or approval has.
pub(super) const UNKNOWN_ID: &str = "0190f5c2-7a1b-7c3d-8e4f-5a6b7c8d9e0f";

/// What each row may use: the server's channel, an installed bundle and a session on it.
#[derive(Clone)]
pub(super) struct Ctx {
    channel: Channel,
    /// `name@version` of the installed bundle.
    pub reference: String,
    pub session_id: String,
}

impl Ctx {
    pub fn bundles(&self) -> BundleServiceClient<Channel> {
        BundleServiceClient::new(self.channel.clone())
    }
    pub fn sessions(&self) -> SessionServiceClient<Channel> {
        SessionServiceClient::new(self.channel.clone())
    }
    pub fn executions(&self) -> ExecutionServiceClient<Channel> {
        ExecutionServiceClient::new(self.channel.clone())
    }
    pub fn approvals(&self) -> ApprovalServiceClient<Channel> {
        ApprovalServiceClient::new(self.channel.clone())
    }
}

pub(super) type Call = Box<dyn Fn(Ctx) -> BoxFuture<'static, Result<(), Status>> + Send + Sync>;

/// One row of the matrix.
pub(super) struct Case {
    /// `Service/Method`, as in the descriptor.
    pub rpc: &'static str,
    pub what: &'static str,
    pub code: Code,
    /// The field the `BadRequest` violation must name (INVALID_ARGUMENT rows).
    pub field: Option<&'static str>,
    pub call: Call,
}

/// `case!("SessionService/GetSession", "malformed id", InvalidArgument, Some("session_id"), |c| { ... })`;
/// the field is `None` for rows without a field violation.
macro_rules! case {
    ($rpc:literal, $what:literal, $code:ident, $field:expr, |$ctx:ident| $body:block) => {
        $crate::bad_input::Case {
            rpc: $rpc,
            what: $what,
            code: tonic::Code::$code,
            field: $field,
            call: Box::new(move |$ctx: $crate::bad_input::Ctx| Box::pin(async move { $body })),
        }
    };
}
pub(super) use case;

/// Drops a unary answer.
pub(super) fn done<T>(result: Result<tonic::Response<T>, Status>) -> Result<(), Status> {
    result.map(drop)
}

/// A server stream's status: its refusal, or the error of its first message.
pub(super) async fn first<T>(
    result: Result<tonic::Response<tonic::Streaming<T>>, Status>,
) -> Result<(), Status> {
    result?.into_inner().message().await.map(drop)
}

/// What must not change: the sessions and bundles the API lists, and every file and
/// folder of the home.
#[derive(Debug, PartialEq)]
struct State {
    sessions: Vec<pb::Session>,
    bundles: Vec<pb::Bundle>,
    files: BTreeMap<String, (u64, u64)>,
}

async fn snapshot(server: &TestServer) -> State {
    let sessions = server
        .sessions()
        .list_sessions(pb::ListSessionsRequest {
            page_size: 1000,
            ..Default::default()
        })
        .await
        .expect("list sessions")
        .into_inner()
        .sessions;
    let bundles = server
        .bundles()
        .list_bundles(pb::ListBundlesRequest {
            page_size: 1000,
            ..Default::default()
        })
        .await
        .expect("list bundles")
        .into_inner()
        .bundles;
    let mut files = BTreeMap::new();
    tree(server.home(), server.home(), &mut files);
    State {
        sessions,
        bundles,
        files,
    }
}

/// Every entry below `dir`: `(length, content hash)` for files, `(0, 0)` for folders.
fn tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, (u64, u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = path
            .strip_prefix(root)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        if path.is_dir() {
            out.insert(format!("{name}/"), (0, 0));
            tree(root, &path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            let mut hasher = DefaultHasher::new();
            bytes.hash(&mut hasher);
            out.insert(name, (bytes.len() as u64, hasher.finish()));
        }
    }
}

fn describe_change(before: &State, after: &State) -> String {
    if before.sessions != after.sessions {
        return "the listed sessions changed".into();
    }
    if before.bundles != after.bundles {
        return "the listed bundles changed".into();
    }
    let keys: BTreeSet<&String> = before.files.keys().chain(after.files.keys()).collect();
    let changed: Vec<&str> = keys
        .into_iter()
        .filter(|k| before.files.get(*k) != after.files.get(*k))
        .map(String::as_str)
        .collect();
    format!("home files changed: {changed:?}")
}

/// Why `status` is not the answer `case` expects, if it is not.
fn mismatch(case: &Case, status: &Status) -> Option<String> {
    if status.code() != case.code {
        return Some(format!(
            "answered {:?} ({}), expected {:?}",
            status.code(),
            crate::bad_input::short(status.message()),
            case.code
        ));
    }
    if status.message().len() > 2048 {
        return Some(format!(
            "its message is {} bytes long; echoed input must be shortened",
            status.message().len()
        ));
    }
    // OUT_OF_RANGE for an oversized message comes from the transport, before any service.
    if error_reason(status).is_none() && status.code() != Code::OutOfRange {
        return Some(format!(
            "{:?} without a google.rpc.ErrorInfo: {}",
            status.code(),
            short(status.message())
        ));
    }
    let fields = bad_fields(status);
    match case.field {
        Some(field) if fields != [field] => Some(format!(
            "field violations {fields:?}, expected [{field:?}] ({})",
            short(status.message())
        )),
        None if !fields.is_empty() => Some(format!("unexpected field violations {fields:?}")),
        _ => None,
    }
}

pub(super) fn short(text: &str) -> String {
    text.chars().take(160).collect()
}

/// The methods whose request has at least one field: each must have rows.
fn methods_with_input() -> BTreeSet<String> {
    let set = prost_types::FileDescriptorSet::decode(odyssey_api::FILE_DESCRIPTOR_SET)
        .expect("descriptor set");
    let files = || set.file.iter().filter(|f| f.package() == "odyssey.v1");
    let fields: BTreeMap<String, usize> = files()
        .flat_map(|f| f.message_type.iter())
        .map(|m| (format!(".odyssey.v1.{}", m.name()), m.field.len()))
        .collect();
    files()
        .flat_map(|f| f.service.iter())
        .flat_map(|s| {
            s.method
                .iter()
                .filter(|m| fields.get(m.input_type()).copied().unwrap_or(0) > 0)
                .map(move |m| format!("{}/{}", s.name(), m.name()))
        })
        .collect()
}

#[tokio::test]
async fn every_rpc_refuses_bad_input_with_the_right_code_and_changes_nothing() {
    let server = TestServer::start().await;
    let session = server
        .session_on(&Project::replay("matrix", &[r#"{"text": "hello"}"#]))
        .await;
    let ctx = Ctx {
        channel: server.channel.clone(),
        reference: "matrix@0.1.0".into(),
        session_id: session.id.clone(),
    };
    let cases: Vec<Case> = [
        bundles::cases(),
        sessions::cases(),
        executions::cases(),
        approvals::cases(),
    ]
    .into_iter()
    .flatten()
    .collect();

    let covered: BTreeSet<String> = cases.iter().map(|c| c.rpc.to_owned()).collect();
    let wanted = methods_with_input();
    let missing: Vec<&String> = wanted.difference(&covered).collect();
    assert!(missing.is_empty(), "RPCs without rows: {missing:?}");

    let mut failures = Vec::new();
    let mut before = snapshot(&server).await;
    for case in &cases {
        let answer = tokio::time::timeout(Duration::from_secs(10), (case.call)(ctx.clone())).await;
        let problem = match answer {
            Err(_) => Some("no answer within 10 s".to_owned()),
            Ok(Ok(())) => Some("succeeded".to_owned()),
            Ok(Err(status)) => mismatch(case, &status),
        };
        if let Some(problem) = problem {
            failures.push(format!("{} — {}: {problem}", case.rpc, case.what));
        }
        let after = snapshot(&server).await;
        if after != before {
            failures.push(format!(
                "{} — {}: {}",
                case.rpc,
                case.what,
                describe_change(&before, &after)
            ));
            before = after;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
