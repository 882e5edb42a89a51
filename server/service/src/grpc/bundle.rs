//! `odyssey.v1.BundleService`: archives in and out as byte streams.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use odyssey_api::v1 as pb;
use odyssey_api::v1::bundle_service_server::BundleService;
use tonic::{Request, Response, Status, Streaming};

use super::convert;
use super::status::{invalid, to_status, to_status_at};
use odyssey_runtime::{InstallOptions, OdysseyRuntime, PageRequest};

/// Upload options arrive in the stream's first message, `options`.
const UPLOAD_FIELDS: &[(&str, &str)] = &[("namespace", "options.namespace")];

/// Requests naming a bundle in `bundle_reference` rather than `reference`.
pub(super) const BUNDLE_REFERENCE: &[(&str, &str)] = &[("reference", "bundle_reference")];

/// Size of the archive chunks ExportBundle sends.
const EXPORT_CHUNK: usize = 256 * 1024;

pub struct Bundles {
    runtime: OdysseyRuntime,
}

impl Bundles {
    pub fn new(runtime: OdysseyRuntime) -> Self {
        Self { runtime }
    }
}

/// One message of an upload stream: options first, then chunks.
enum Upload {
    Options(String, bool),
    Chunk(Vec<u8>),
    Empty,
}

/// Reads an upload stream into memory, refusing more than `limit` bytes as they arrive.
async fn receive<T>(
    mut stream: Streaming<T>,
    limit: u64,
    split: impl Fn(T) -> Upload,
) -> Result<(InstallOptions, Vec<u8>), Status> {
    let mut options = InstallOptions::default();
    let mut archive = Vec::new();
    let mut first = true;
    while let Some(message) = stream.next().await {
        match split(message?) {
            Upload::Options(namespace, force) if first => {
                if !namespace.is_empty() {
                    options.namespace = namespace;
                }
                options.force = force;
            }
            Upload::Options(..) => {
                return Err(invalid(
                    "options",
                    "must be the first message of the stream, and only once",
                ));
            }
            Upload::Chunk(chunk) => {
                if archive.len() as u64 + chunk.len() as u64 > limit {
                    return Err(invalid(
                        "chunk",
                        format!("the archive is larger than the server's limit of {limit} bytes"),
                    ));
                }
                archive.extend_from_slice(&chunk);
            }
            Upload::Empty => {}
        }
        first = false;
    }
    if archive.is_empty() {
        return Err(invalid("chunk", "no archive bytes were sent"));
    }
    Ok((options, archive))
}

fn required<'a>(field: &str, value: &'a str) -> Result<&'a str, Status> {
    if value.trim().is_empty() {
        return Err(invalid(field, "is required"));
    }
    Ok(value)
}

type ExportStream = Pin<Box<dyn Stream<Item = Result<pb::ExportBundleResponse, Status>> + Send>>;

#[tonic::async_trait]
impl BundleService for Bundles {
    async fn init_bundle(
        &self,
        request: Request<pb::InitBundleRequest>,
    ) -> Result<Response<pb::InitBundleResponse>, Status> {
        let name = request.into_inner().name;
        let name = if name.is_empty() {
            "hello".to_string()
        } else {
            name
        };
        let archive = self
            .runtime
            .init_archive(&name)
            .map_err(|e| to_status_at(e, &[("bundle name", "name")]))?;
        Ok(Response::new(pb::InitBundleResponse { archive }))
    }

    async fn build_bundle(
        &self,
        request: Request<Streaming<pb::BuildBundleRequest>>,
    ) -> Result<Response<pb::BuildBundleResponse>, Status> {
        use pb::build_bundle_request::Item;
        let limit = self.runtime.config().archive_limits.max_total_bytes;
        let (options, archive) = receive(request.into_inner(), limit, |m| match m.item {
            Some(Item::Options(o)) => Upload::Options(o.namespace, o.force),
            Some(Item::Chunk(c)) => Upload::Chunk(c),
            None => Upload::Empty,
        })
        .await?;
        let bundle = self
            .runtime
            .install_project_archive(archive, options)
            .await
            .map_err(|e| to_status_at(e, UPLOAD_FIELDS))?;
        Ok(Response::new(pb::BuildBundleResponse {
            bundle: Some(convert::bundle(&bundle)),
        }))
    }

    async fn inspect_bundle(
        &self,
        request: Request<pb::InspectBundleRequest>,
    ) -> Result<Response<pb::InspectBundleResponse>, Status> {
        let reference = request.into_inner().reference;
        let bundle = self
            .runtime
            .inspect_bundle(required("reference", &reference)?)
            .await
            .map_err(to_status)?;
        let agents = self.runtime.served_agents(&bundle);
        Ok(Response::new(convert::inspect(&bundle, &agents)))
    }

    async fn list_bundles(
        &self,
        request: Request<pb::ListBundlesRequest>,
    ) -> Result<Response<pb::ListBundlesResponse>, Status> {
        let request = request.into_inner();
        let page = PageRequest {
            size: usize::try_from(request.page_size)
                .map_err(|_| invalid("page_size", "must not be negative"))?,
            token: Some(request.page_token),
        };
        let namespace = Some(request.namespace).filter(|n| !n.is_empty());
        let page = self
            .runtime
            .list_bundles(namespace, page)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::ListBundlesResponse {
            bundles: page.items.iter().map(|b| convert::bundle(b)).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn delete_bundle(
        &self,
        request: Request<pb::DeleteBundleRequest>,
    ) -> Result<Response<pb::DeleteBundleResponse>, Status> {
        let reference = request.into_inner().reference;
        let bundle = self
            .runtime
            .delete_bundle(required("reference", &reference)?)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::DeleteBundleResponse {
            bundle: Some(convert::bundle(&bundle)),
        }))
    }

    type ExportBundleStream = ExportStream;

    async fn export_bundle(
        &self,
        request: Request<pb::ExportBundleRequest>,
    ) -> Result<Response<Self::ExportBundleStream>, Status> {
        let reference = request.into_inner().reference;
        let (bundle, archive) = self
            .runtime
            .export_bundle(required("reference", &reference)?)
            .await
            .map_err(to_status)?;
        let mut first = Some(convert::bundle(&bundle));
        let chunks: Vec<Vec<u8>> = archive.chunks(EXPORT_CHUNK).map(<[u8]>::to_vec).collect();
        let messages = chunks.into_iter().map(move |chunk| {
            Ok(pb::ExportBundleResponse {
                bundle: first.take(),
                chunk,
            })
        });
        Ok(Response::new(Box::pin(futures::stream::iter(messages))))
    }

    async fn import_bundle(
        &self,
        request: Request<Streaming<pb::ImportBundleRequest>>,
    ) -> Result<Response<pb::ImportBundleResponse>, Status> {
        use pb::import_bundle_request::Item;
        let limit = self.runtime.config().archive_limits.max_total_bytes;
        let (options, archive) = receive(request.into_inner(), limit, |m| match m.item {
            Some(Item::Options(o)) => Upload::Options(o.namespace, o.force),
            Some(Item::Chunk(c)) => Upload::Chunk(c),
            None => Upload::Empty,
        })
        .await?;
        let bundle = self
            .runtime
            .import_bundle(archive, options)
            .await
            .map_err(|e| to_status_at(e, UPLOAD_FIELDS))?;
        Ok(Response::new(pb::ImportBundleResponse {
            bundle: Some(convert::bundle(&bundle)),
        }))
    }

    async fn push_bundle(
        &self,
        request: Request<pb::PushBundleRequest>,
    ) -> Result<Response<pb::PushBundleResponse>, Status> {
        let request = request.into_inner();
        let pushed = self
            .runtime
            .push_bundle(
                required("reference", &request.reference)?,
                required("target", &request.target)?,
            )
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::PushBundleResponse {
            target: pushed.target.to_string(),
            manifest_digest: pushed.manifest_digest,
            content_digest: pushed.content_digest,
            bundle: Some(convert::bundle(&pushed.bundle)),
        }))
    }

    async fn pull_bundle(
        &self,
        request: Request<pb::PullBundleRequest>,
    ) -> Result<Response<pb::PullBundleResponse>, Status> {
        let request = request.into_inner();
        let mut options = InstallOptions {
            force: request.force,
            ..InstallOptions::default()
        };
        if !request.namespace.is_empty() {
            options.namespace = request.namespace;
        }
        let pulled = self
            .runtime
            .pull_bundle(required("reference", &request.reference)?, options)
            .await
            .map_err(to_status)?;
        Ok(Response::new(pb::PullBundleResponse {
            content_digest: pulled.bundle.id.digest.clone(),
            bundle: Some(convert::bundle(&pulled.bundle)),
            manifest_digest: pulled.manifest_digest,
            source: pulled.source.to_string(),
        }))
    }

    async fn list_agents(
        &self,
        request: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        let reference = request.into_inner().bundle_reference;
        let agents = self
            .runtime
            .list_agents(required("bundle_reference", &reference)?)
            .await
            .map_err(|e| to_status_at(e, BUNDLE_REFERENCE))?;
        Ok(Response::new(pb::ListAgentsResponse {
            agents: agents.iter().map(convert::agent).collect(),
        }))
    }

    async fn list_models(
        &self,
        request: Request<pb::ListModelsRequest>,
    ) -> Result<Response<pb::ListModelsResponse>, Status> {
        let reference = request.into_inner().bundle_reference;
        let models = self
            .runtime
            .list_models(required("bundle_reference", &reference)?)
            .await
            .map_err(|e| to_status_at(e, BUNDLE_REFERENCE))?;
        Ok(Response::new(pb::ListModelsResponse {
            models: models.iter().map(convert::model_info).collect(),
        }))
    }

    async fn list_skills(
        &self,
        request: Request<pb::ListSkillsRequest>,
    ) -> Result<Response<pb::ListSkillsResponse>, Status> {
        let reference = request.into_inner().bundle_reference;
        let skills = self
            .runtime
            .list_skills(required("bundle_reference", &reference)?)
            .await
            .map_err(|e| to_status_at(e, BUNDLE_REFERENCE))?;
        Ok(Response::new(pb::ListSkillsResponse {
            skills: skills.iter().map(convert::skill_listing).collect(),
        }))
    }
}
