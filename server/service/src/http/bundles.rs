//! Installing a bundle archive over HTTP: `POST /bundles?namespace=&force=` with the
//! archive (tar + gzip, as `odyssey bundle build --output` or `bundle export` writes it)
//! as the body, answered as `ImportBundleResponse` (`{"bundle": {...}}`). What ImportBundle
//! does, for a browser, which cannot stream a gRPC-Web request.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use odyssey_api::v1 as pb;
use serde::Deserialize;

use super::Gateway;
use super::error::HttpError;
use super::json::ProtoJson;
use crate::grpc::convert;
use odyssey_runtime::{InstallOptions, RuntimeError};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportQuery {
    /// Defaults to `local`.
    namespace: Option<String>,
    #[serde(default)]
    force: bool,
}

pub async fn import(
    State(gateway): State<Gateway>,
    Query(query): Query<ImportQuery>,
    body: Result<Bytes, BytesRejection>,
) -> Result<ProtoJson<pb::ImportBundleResponse>, HttpError> {
    let archive = body.map_err(|rejection| {
        HttpError::bad_request(
            rejection.status(),
            format!(
                "{}; the body is the bundle archive, at most {} bytes",
                rejection.body_text(),
                gateway.runtime.config().archive_limits.max_total_bytes
            ),
        )
    })?;
    if archive.is_empty() {
        return Err(RuntimeError::invalid("body", "no archive bytes were sent").into());
    }
    let mut options = InstallOptions::default();
    if let Some(namespace) = query.namespace.filter(|n| !n.is_empty()) {
        options.namespace = namespace;
    }
    options.force = query.force;
    let bundle = gateway
        .runtime
        .import_bundle(archive.to_vec(), options)
        .await?;
    tracing::info!(bundle = %bundle.id, "bundle imported over HTTP");
    Ok(ProtoJson(pb::ImportBundleResponse {
        bundle: Some(convert::bundle(&bundle)),
    }))
}

/// The largest body `POST /bundles` reads: the server's archive limit.
pub fn body_limit(gateway: &Gateway) -> usize {
    usize::try_from(gateway.runtime.config().archive_limits.max_total_bytes).unwrap_or(usize::MAX)
}
