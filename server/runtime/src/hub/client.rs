//! Talking to registries, through `oci-client` (the ORAS project's distribution client).
//!
//! Every operation gets a client of its own, configured for the one registry it talks to:
//! its scheme (TLS unless the host is loopback or listed insecure) and the credentials
//! configured for exactly that host, or none. `oci-client` keeps them to that host: a
//! request it is told to send elsewhere (an upload location, a redirect) goes without them.
//! Registry failures are translated into [`HubError`]s that name the registry.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{DigestError, OciDistributionError, OciEnvelope, OciErrorCode};
use oci_client::manifest::{
    IMAGE_MANIFEST_MEDIA_TYPE, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor,
};
use oci_client::secrets::RegistryAuth;

use super::artifact::{Artifact, check_config, check_manifest};
use super::error::HubError;
use super::reference::RegistryReference;
use super::settings::{HubSettings, ResolvedSettings, Scheme};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the next bytes of a response.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Registry messages quoted in errors are cut to this many characters.
const MAX_QUOTED: usize = 300;

/// The registries this server pushes to and pulls from.
#[derive(Debug)]
pub(crate) struct Hub {
    settings: ResolvedSettings,
}

/// A bundle artifact fetched and verified, ready to install.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub archive: Vec<u8>,
    pub manifest_digest: String,
    pub content_digest: String,
}

impl Hub {
    /// Checks the settings; a wrong default registry URL stops the server from starting.
    pub fn new(settings: &HubSettings) -> Result<Self, HubError> {
        Ok(Self {
            settings: ResolvedSettings::new(settings)?,
        })
    }

    /// Parses a reference the caller wrote in request field `field`.
    pub fn parse(&self, text: &str, field: &'static str) -> Result<RegistryReference, HubError> {
        RegistryReference::parse(text, &self.settings.default_host, field)
    }

    /// Uploads the artifact's blobs (those the registry lacks) and then its manifest under
    /// `target`'s tag.
    pub async fn push(
        &self,
        target: &RegistryReference,
        artifact: &Artifact,
    ) -> Result<(), HubError> {
        let remote = self.connect(target)?;
        let image = &remote.image;
        remote
            .client
            .store_auth_if_needed(image.resolve_registry(), &remote.auth)
            .await;
        for (data, digest) in [
            (&artifact.archive, &artifact.archive_digest),
            (&artifact.config, &artifact.config_digest),
        ] {
            let present = remote
                .client
                .blob_exists(image, digest)
                .await
                .map_err(|e| remote.error(e))?;
            if !present {
                remote
                    .client
                    .push_blob(image, Bytes::clone(data), digest)
                    .await
                    .map_err(|e| remote.error(e))?;
            }
        }
        remote
            .client
            .push_manifest_raw(
                image,
                Bytes::clone(&artifact.manifest),
                http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
            )
            .await
            .map_err(|e| remote.error(e))?;
        Ok(())
    }

    /// Fetches the bundle artifact `source` names, verifying the manifest against the
    /// reference's digest (when it has one) and every blob against the manifest. The
    /// archive may be at most `max_archive` bytes.
    pub async fn fetch(
        &self,
        source: &RegistryReference,
        max_archive: u64,
    ) -> Result<Fetched, HubError> {
        let remote = self.connect(source)?;
        let (manifest, manifest_digest) = remote
            .client
            .pull_manifest_raw(
                &remote.image,
                &remote.auth,
                &[
                    OCI_IMAGE_MEDIA_TYPE,
                    OCI_IMAGE_INDEX_MEDIA_TYPE,
                    IMAGE_MANIFEST_MEDIA_TYPE,
                ],
            )
            .await
            .map_err(|e| remote.error(e))?;
        let expected = check_manifest(&remote.display, &manifest, max_archive)?;
        let config = remote.blob(&expected.config, "the config blob").await?;
        check_config(&remote.display, &config, &expected)?;
        let archive = remote.blob(&expected.layer, "the archive blob").await?;
        Ok(Fetched {
            archive,
            manifest_digest,
            content_digest: expected.content_digest,
        })
    }

    fn connect(&self, reference: &RegistryReference) -> Result<Remote, HubError> {
        crate::provider::install_crypto_provider();
        let registry = reference.registry.clone();
        let protocol = match self.settings.scheme_for(&registry) {
            Scheme::Http => ClientProtocol::HttpsExcept(vec![registry.clone()]),
            Scheme::Https => ClientProtocol::Https,
        };
        let config = ClientConfig {
            protocol,
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            // An image index is not a bundle: refuse it rather than pick an entry.
            platform_resolver: None,
            user_agent: concat!("odysseyd/", env!("CARGO_PKG_VERSION")),
            ..ClientConfig::default()
        };
        let client = oci_client::Client::try_from(config).map_err(|e| HubError::Unavailable {
            registry: registry.clone(),
            message: format!("cannot set up an HTTP client: {}", crate::error::chain(&e)),
        })?;
        let credentials = self.settings.credentials_for(&registry);
        Ok(Remote {
            client,
            auth: credentials.map_or(RegistryAuth::Anonymous, |c| c.to_oci()),
            has_credentials: credentials.is_some(),
            image: reference.to_oci(),
            display: reference.to_string(),
            repository: reference.repository.clone(),
            registry,
        })
    }
}

/// One operation's client and what its errors need to name.
struct Remote {
    client: oci_client::Client,
    auth: RegistryAuth,
    has_credentials: bool,
    image: oci_client::Reference,
    display: String,
    registry: String,
    repository: String,
}

impl Remote {
    /// Downloads a blob, refusing more bytes than its descriptor declares; the stream
    /// itself fails at its end when the bytes do not match the digest.
    async fn blob(&self, descriptor: &OciDescriptor, what: &str) -> Result<Vec<u8>, HubError> {
        let declared = usize::try_from(descriptor.size).unwrap_or(0);
        let size_mismatch = |received: String| HubError::SizeMismatch {
            reference: self.display.clone(),
            what: what.to_owned(),
            declared: declared as u64,
            received,
        };
        let mut stream = self
            .client
            .pull_blob_stream(&self.image, descriptor)
            .await
            .map_err(|e| self.error(e))?;
        let mut data = Vec::with_capacity(declared);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.stream_error(e, what))?;
            if data.len() + chunk.len() > declared {
                return Err(size_mismatch("more".to_owned()));
            }
            data.extend_from_slice(&chunk);
        }
        if data.len() != declared {
            return Err(size_mismatch(data.len().to_string()));
        }
        Ok(data)
    }

    fn stream_error(&self, e: std::io::Error, what: &str) -> HubError {
        match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<DigestError>())
        {
            Some(DigestError::VerificationError { expected, actual }) => HubError::DigestMismatch {
                reference: self.display.clone(),
                what: what.to_owned(),
                expected: expected.clone(),
                actual: actual.clone(),
            },
            _ => HubError::Unavailable {
                registry: self.registry.clone(),
                message: format!(
                    "the download of {what} broke off: {}",
                    crate::error::chain(&e)
                ),
            },
        }
    }

    fn error(&self, e: OciDistributionError) -> HubError {
        use OciDistributionError as E;
        match e {
            E::UnauthorizedError { .. } | E::AuthenticationFailure(_) => self.unauthorized(),
            E::RegistryError { envelope, .. } => self.envelope_error(&envelope),
            E::ServerError { code, message, .. } => self.status_error(code, &message),
            E::RequestError(e) => match e.status() {
                Some(status) => self.status_error(status.as_u16(), ""),
                None => HubError::Unavailable {
                    registry: self.registry.clone(),
                    message: crate::error::chain(&e),
                },
            },
            E::DigestError(DigestError::VerificationError { expected, actual }) => {
                HubError::DigestMismatch {
                    reference: self.display.clone(),
                    what: "the manifest".to_owned(),
                    expected,
                    actual,
                }
            }
            E::IoError(e) => self.stream_error(e, "a blob"),
            E::UnsupportedMediaTypeError(media_type) => HubError::NotABundle {
                reference: self.display.clone(),
                message: format!("it is a `{media_type}` manifest, not an OCI image manifest"),
            },
            e @ (E::VersionedParsingError(_)
            | E::ManifestParsingError(_)
            | E::UnsupportedSchemaVersionError(_)) => HubError::NotABundle {
                reference: self.display.clone(),
                message: crate::text::shorten(&e.to_string(), MAX_QUOTED),
            },
            other => HubError::Refused {
                registry: self.registry.clone(),
                message: crate::text::shorten(&crate::error::chain(&other), MAX_QUOTED),
            },
        }
    }

    fn unauthorized(&self) -> HubError {
        let registry = self.registry.clone();
        if self.has_credentials {
            HubError::CredentialsRefused { registry }
        } else {
            HubError::CredentialsRequired { registry }
        }
    }

    fn envelope_error(&self, envelope: &OciEnvelope) -> HubError {
        let message = crate::text::shorten(
            &envelope
                .errors
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
            MAX_QUOTED,
        );
        let code = envelope.errors.first().map(|e| &e.code);
        match code {
            Some(OciErrorCode::Unauthorized) => self.unauthorized(),
            Some(OciErrorCode::Denied) => HubError::AccessDenied {
                registry: self.registry.clone(),
                repository: self.repository.clone(),
                message,
            },
            Some(
                OciErrorCode::ManifestUnknown
                | OciErrorCode::NameUnknown
                | OciErrorCode::NotFound
                | OciErrorCode::BlobUnknown,
            ) => self.not_found(),
            Some(OciErrorCode::Toomanyrequests) => HubError::Unavailable {
                registry: self.registry.clone(),
                message: format!("too many requests: {message}"),
            },
            _ => HubError::Refused {
                registry: self.registry.clone(),
                message,
            },
        }
    }

    fn status_error(&self, code: u16, body: &str) -> HubError {
        let detail = if body.trim().is_empty() {
            format!("HTTP {code}")
        } else {
            format!(
                "HTTP {code}: {}",
                crate::text::shorten(body.trim(), MAX_QUOTED)
            )
        };
        match code {
            401 => self.unauthorized(),
            403 => HubError::AccessDenied {
                registry: self.registry.clone(),
                repository: self.repository.clone(),
                message: detail,
            },
            404 => self.not_found(),
            408 | 429 | 500..=599 => HubError::Unavailable {
                registry: self.registry.clone(),
                message: format!("it answered {detail}"),
            },
            _ => HubError::Refused {
                registry: self.registry.clone(),
                message: format!("it answered {detail}"),
            },
        }
    }

    fn not_found(&self) -> HubError {
        HubError::NotFound {
            registry: self.registry.clone(),
            reference: self.display.clone(),
        }
    }
}
