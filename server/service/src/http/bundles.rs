//! Installing a bundle archive over HTTP: `POST /bundles?namespace=&force=` with the
//! archive (tar + gzip, as `odyssey bundle build --output` or `bundle export` writes it)
//! as the body, answered as `ImportBundleResponse` (`{"bundle": {...}}`). What ImportBundle
//! does, for a browser, which cannot stream a gRPC-Web request.
//!
//! The body must say it is an archive (`content-type: application/gzip`, or
//! `application/octet-stream`): neither is a type a page of another site may send without
//! asking first (CORS preflight, refused unless the operator lists its origin), so no page
//! can post a bundle to a server without a token by a plain cross-site form or `fetch`.

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

/// The content types `POST /bundles` accepts.
const ARCHIVE_TYPES: &[&str] = &[
    "application/gzip",
    "application/x-gzip",
    "application/octet-stream",
];

pub async fn import(
    State(gateway): State<Gateway>,
    Query(query): Query<ImportQuery>,
    headers: http::HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<ProtoJson<pb::ImportBundleResponse>, HttpError> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if !content_type
        .as_deref()
        .is_some_and(|t| ARCHIVE_TYPES.contains(&t))
    {
        return Err(HttpError::bad_request(
            http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "the body must be a bundle archive sent as `content-type: application/gzip` (or {})",
                ARCHIVE_TYPES[1..].join(", ")
            ),
        ));
    }
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
