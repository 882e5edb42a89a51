//! The layered configuration through a real server and the real CLI: requirements refuse
//! what exceeds them with PERMISSION_DENIED naming the requirement, a model config's
//! `base_url` goes only where the operator allows, model overrides choose the model of
//! sessions created without one, TLS on the gRPC port, and `odyssey config show`.

mod overrides;
mod requirements;
mod show;
pub(crate) mod tls;

use std::path::PathBuf;

use odyssey_api::v1 as pb;
use prost_types::value::Kind;

use crate::support::TestServer;

/// A server started with `--config FILE` holding `toml` (and the harness's own flags).
pub async fn configured(toml: &str) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("config dir");
    let path: PathBuf = dir.path().join("odysseyd.toml");
    std::fs::write(&path, toml).expect("write config");
    let server = TestServer::start_with(move |args| args.config = Some(path)).await;
    (server, dir)
}

/// `provider/name` with a string-valued config.
pub fn model(provider: &str, name: &str, config: &[(&str, &str)]) -> pb::ModelSpec {
    let fields = config
        .iter()
        .map(|(key, value)| {
            let value = prost_types::Value {
                kind: Some(Kind::StringValue((*value).to_owned())),
            };
            ((*key).to_owned(), value)
        })
        .collect();
    pb::ModelSpec {
        provider: provider.into(),
        name: name.into(),
        config: (!config.is_empty()).then_some(prost_types::Struct { fields }),
    }
}

/// Creates a session, returning the status on refusal.
pub async fn create(
    server: &TestServer,
    request: pb::CreateSessionRequest,
) -> Result<pb::Session, tonic::Status> {
    let response = server.sessions().create_session(request).await?;
    Ok(response.into_inner().session.expect("session in response"))
}

/// `provider/name` of a session's model.
pub fn model_of(session: &pb::Session) -> String {
    session
        .model
        .as_ref()
        .map(|m| format!("{}/{}", m.provider, m.name))
        .unwrap_or_default()
}
