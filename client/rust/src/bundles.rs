//! Typed bundle calls. Archives are streamed in fixed-size chunks after an options message,
//! as BuildBundle and ImportBundle expect, so no single gRPC message nears the server's size
//! limit whatever the archive's size.

use futures::{Stream, StreamExt};
use odyssey_api::v1 as pb;
use pb::build_bundle_request::Item as BuildItem;
use pb::import_bundle_request::Item as ImportItem;

use crate::client::OdysseyClient;
use crate::error::ClientError;

/// Archive bytes per streamed message.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// Page size asked for when a helper follows every page.
pub(crate) const PAGE_SIZE: i32 = 100;

impl OdysseyClient {
    /// Asks the server for a ready-to-edit scaffold project named `name` (server default
    /// `hello` when empty) and returns it as a tar + gzip archive; see
    /// [`crate::unpack_archive`].
    pub async fn init_bundle(&self, name: &str) -> Result<Vec<u8>, ClientError> {
        let request = pb::InitBundleRequest {
            name: name.to_owned(),
        };
        Ok(self
            .bundles()
            .init_bundle(request)
            .await?
            .into_inner()
            .archive)
    }

    /// Streams a project archive (see [`crate::pack_project`]) to BuildBundle; the server
    /// validates, builds and installs it into `namespace` (`local` when empty). `force`
    /// replaces an installed bundle of the same version with different content.
    pub async fn build_bundle(
        &self,
        archive: Vec<u8>,
        namespace: &str,
        force: bool,
    ) -> Result<pb::Bundle, ClientError> {
        let options = BuildItem::Options(pb::BuildOptions {
            namespace: namespace.to_owned(),
            force,
        });
        let messages = options_then_chunks(options, archive, BuildItem::Chunk)
            .map(|item| pb::BuildBundleRequest { item: Some(item) });
        let response = self.bundles().build_bundle(messages).await?.into_inner();
        response
            .bundle
            .ok_or_else(|| ClientError::Protocol("BuildBundle answered without a bundle".into()))
    }

    /// Streams a built bundle archive (from [`Self::export_bundle`] or `odyssey bundle build
    /// --output`) to ImportBundle.
    pub async fn import_bundle(
        &self,
        archive: Vec<u8>,
        namespace: &str,
        force: bool,
    ) -> Result<pb::Bundle, ClientError> {
        let options = ImportItem::Options(pb::ImportOptions {
            namespace: namespace.to_owned(),
            force,
        });
        let messages = options_then_chunks(options, archive, ImportItem::Chunk)
            .map(|item| pb::ImportBundleRequest { item: Some(item) });
        let response = self.bundles().import_bundle(messages).await?.into_inner();
        response
            .bundle
            .ok_or_else(|| ClientError::Protocol("ImportBundle answered without a bundle".into()))
    }

    /// Downloads an installed bundle: its description (sent first) and its archive.
    pub async fn export_bundle(
        &self,
        reference: &str,
    ) -> Result<(pb::Bundle, Vec<u8>), ClientError> {
        let request = pb::ExportBundleRequest {
            reference: reference.to_owned(),
        };
        let mut stream = self.bundles().export_bundle(request).await?.into_inner();
        let mut bundle = None;
        let mut archive = Vec::new();
        while let Some(message) = stream.message().await? {
            if let Some(b) = message.bundle {
                if bundle.is_some() {
                    return Err(ClientError::Protocol(
                        "ExportBundle sent the bundle twice".into(),
                    ));
                }
                bundle = Some(b);
            } else if bundle.is_none() {
                return Err(ClientError::Protocol(
                    "ExportBundle sent a chunk before the bundle".into(),
                ));
            }
            archive.extend_from_slice(&message.chunk);
        }
        let bundle = bundle
            .ok_or_else(|| ClientError::Protocol("ExportBundle ended without a bundle".into()))?;
        Ok((bundle, archive))
    }

    /// An installed bundle with its agents, skills, tools, sandbox policy and readme.
    pub async fn inspect_bundle(
        &self,
        reference: &str,
    ) -> Result<pb::InspectBundleResponse, ClientError> {
        let request = pb::InspectBundleRequest {
            reference: reference.to_owned(),
        };
        let response = crate::retry::read(|| async {
            Ok(self.bundles().inspect_bundle(request.clone()).await?)
        })
        .await?;
        Ok(response.into_inner())
    }

    /// Every installed bundle (of `namespace`, when given), following all pages.
    pub async fn list_bundles(
        &self,
        namespace: Option<&str>,
    ) -> Result<Vec<pb::Bundle>, ClientError> {
        let mut bundles = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = pb::ListBundlesRequest {
                page_size: PAGE_SIZE,
                page_token: std::mem::take(&mut page_token),
                namespace: namespace.unwrap_or_default().to_owned(),
            };
            let page = crate::retry::read(|| async {
                Ok(self.bundles().list_bundles(request.clone()).await?)
            })
            .await?
            .into_inner();
            bundles.extend(page.bundles);
            if page.next_page_token.is_empty() {
                return Ok(bundles);
            }
            page_token = page.next_page_token;
        }
    }

    /// Uninstalls a bundle and returns what was removed.
    pub async fn delete_bundle(&self, reference: &str) -> Result<pb::Bundle, ClientError> {
        let request = pb::DeleteBundleRequest {
            reference: reference.to_owned(),
        };
        let response = self.bundles().delete_bundle(request).await?.into_inner();
        response
            .bundle
            .ok_or_else(|| ClientError::Protocol("DeleteBundle answered without a bundle".into()))
    }

    /// Publishes an installed bundle to an OCI registry. `target` is
    /// `[registry[:port]/]repository[:tag]`: without a registry, the server's default one;
    /// without a tag, the bundle's version. The server uses its own credentials for that
    /// registry; the response carries both the manifest digest and the content digest.
    pub async fn push_bundle(
        &self,
        reference: &str,
        target: &str,
    ) -> Result<pb::PushBundleResponse, ClientError> {
        let request = pb::PushBundleRequest {
            reference: reference.to_owned(),
            target: target.to_owned(),
        };
        Ok(self.bundles().push_bundle(request).await?.into_inner())
    }

    /// Fetches a bundle from an OCI registry (`[registry[:port]/]repository[:tag]` or
    /// `…@sha256:<hex>`); the server verifies every digest and installs it into `namespace`
    /// (`local` when empty). `force` replaces an installed bundle of the same version with
    /// different content.
    pub async fn pull_bundle(
        &self,
        reference: &str,
        namespace: &str,
        force: bool,
    ) -> Result<pb::PullBundleResponse, ClientError> {
        let request = pb::PullBundleRequest {
            reference: reference.to_owned(),
            force,
            namespace: namespace.to_owned(),
        };
        Ok(self.bundles().pull_bundle(request).await?.into_inner())
    }

    /// The agents of an installed bundle.
    pub async fn list_agents(
        &self,
        bundle_reference: &str,
    ) -> Result<Vec<pb::AgentInfo>, ClientError> {
        let request = pb::ListAgentsRequest {
            bundle_reference: bundle_reference.to_owned(),
        };
        let response =
            crate::retry::read(|| async { Ok(self.bundles().list_agents(request.clone()).await?) })
                .await?;
        Ok(response.into_inner().agents)
    }

    /// The models of an installed bundle's agents, and whether this server can run them.
    pub async fn list_models(
        &self,
        bundle_reference: &str,
    ) -> Result<Vec<pb::ModelInfo>, ClientError> {
        let request = pb::ListModelsRequest {
            bundle_reference: bundle_reference.to_owned(),
        };
        let response =
            crate::retry::read(|| async { Ok(self.bundles().list_models(request.clone()).await?) })
                .await?;
        Ok(response.into_inner().models)
    }

    /// The skills of an installed bundle.
    pub async fn list_skills(
        &self,
        bundle_reference: &str,
    ) -> Result<Vec<pb::SkillInfo>, ClientError> {
        let request = pb::ListSkillsRequest {
            bundle_reference: bundle_reference.to_owned(),
        };
        let response =
            crate::retry::read(|| async { Ok(self.bundles().list_skills(request.clone()).await?) })
                .await?;
        Ok(response.into_inner().skills)
    }
}

/// The options message, then the archive in [`CHUNK_BYTES`] pieces. Chunks are cut lazily
/// as the transport asks for them, so at most one extra chunk is in memory.
fn options_then_chunks<T: Send + 'static>(
    options: T,
    archive: Vec<u8>,
    chunk: fn(Vec<u8>) -> T,
) -> impl Stream<Item = T> + Send + 'static {
    let count = archive.len().div_ceil(CHUNK_BYTES);
    let chunks = (0..count).map(move |i| {
        let end = ((i + 1) * CHUNK_BYTES).min(archive.len());
        chunk(archive[i * CHUNK_BYTES..end].to_vec())
    });
    futures::stream::iter(std::iter::once(options).chain(chunks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn options_come_first_then_every_byte_in_order() {
        let archive: Vec<u8> = (0..(2 * CHUNK_BYTES + 10))
            .map(|i| (i % 251) as u8)
            .collect();
        let items: Vec<BuildItem> = options_then_chunks(
            BuildItem::Options(pb::BuildOptions::default()),
            archive.clone(),
            BuildItem::Chunk,
        )
        .collect()
        .await;
        assert!(matches!(items[0], BuildItem::Options(_)));
        let mut joined = Vec::new();
        for item in &items[1..] {
            let BuildItem::Chunk(bytes) = item else {
                panic!("options twice")
            };
            assert!(bytes.len() <= CHUNK_BYTES);
            joined.extend_from_slice(bytes);
        }
        assert_eq!(items.len(), 4);
        assert_eq!(joined, archive);
    }
}
