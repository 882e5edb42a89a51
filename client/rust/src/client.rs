//! The connection to one `odysseyd`: a tonic channel plus the bearer interceptor, handing
//! out the generated clients. The typed helpers live in `bundles`, `sessions` and
//! `executions`; this file only dials, over TLS for `https://` URLs (rustls, verifying the
//! server's certificate against a given CA or the system's roots).

use std::time::Duration;

use odyssey_api::v1::approval_service_client::ApprovalServiceClient;
use odyssey_api::v1::bundle_service_client::BundleServiceClient;
use odyssey_api::v1::execution_service_client::ExecutionServiceClient;
use odyssey_api::v1::server_service_client::ServerServiceClient;
use odyssey_api::v1::session_service_client::SessionServiceClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use crate::auth::BearerAuth;
use crate::error::ClientError;

/// The channel every generated client of an [`OdysseyClient`] runs on.
pub type AuthChannel = InterceptedService<Channel, BearerAuth>;

/// How long dialing may take before `connect` gives up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Keepalive pings find a dead connection under a long-lived event stream, which would
/// otherwise wait forever on a peer that vanished without a FIN.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// The largest message accepted from the server. The server caps what it sends (4 MiB by
/// default, configurable), so this only has to be at least as large.
pub(crate) const MAX_DECODING_BYTES: usize = 64 * 1024 * 1024;

/// How to reach a server, beyond its URL.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    token: Option<String>,
    ca_pem: Option<Vec<u8>>,
}

impl ConnectOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sent as `authorization: Bearer <token>` on every call.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Trust only this CA (PEM) for an `https://` server, instead of the system's roots:
    /// for servers whose certificate a private CA signed.
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }
}

/// The token stays out of debug output.
impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("token", &self.token.as_ref().map(|_| "********"))
            .field("ca_pem", &self.ca_pem.as_ref().map(Vec::len))
            .finish()
    }
}

/// A connected client. Cheap to clone: clones share the HTTP/2 connection.
#[derive(Clone, Debug)]
pub struct OdysseyClient {
    channel: Channel,
    auth: BearerAuth,
}

impl OdysseyClient {
    /// Dials `url` (`http://host:port`, or `https://host:port` verified against the
    /// system's roots) and checks that something answers. The token, when given, is sent
    /// as `authorization: Bearer <token>` on every call.
    pub async fn connect(
        url: impl Into<String>,
        token: Option<String>,
    ) -> Result<Self, ClientError> {
        let options = ConnectOptions {
            token,
            ca_pem: None,
        };
        Self::connect_with(url, options).await
    }

    /// [`OdysseyClient::connect`] with options: a token, a CA for `https://` servers.
    pub async fn connect_with(
        url: impl Into<String>,
        options: ConnectOptions,
    ) -> Result<Self, ClientError> {
        let url = url.into();
        let auth = BearerAuth::new(options.token.as_deref())?;
        let mut endpoint =
            Endpoint::from_shared(url.clone()).map_err(|source| ClientError::InvalidUrl {
                url: url.clone(),
                source,
            })?;
        let https = endpoint.uri().scheme_str() == Some("https");
        match (https, options.ca_pem) {
            (true, ca) => {
                let tls = match ca {
                    Some(pem) => ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)),
                    None => ClientTlsConfig::new().with_native_roots(),
                };
                endpoint = endpoint
                    .tls_config(tls)
                    .map_err(|source| ClientError::Tls {
                        url: url.clone(),
                        source,
                    })?;
            }
            (false, Some(_)) => return Err(ClientError::CaWithoutTls { url }),
            (false, None) => {}
        }
        let endpoint = endpoint
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        let channel = endpoint
            .connect()
            .await
            .map_err(|source| ClientError::Connect { url, source })?;
        Ok(Self::from_channel(channel, auth))
    }

    /// Wraps an existing channel (custom TLS, a proxy, an in-process transport).
    pub fn from_channel(channel: Channel, auth: BearerAuth) -> Self {
        Self { channel, auth }
    }

    /// The same client (same connection, same token) with a deadline on each call made
    /// through it: a call that has not finished after `deadline` fails with
    /// DEADLINE_EXCEEDED, a stream still open then ends with it.
    ///
    /// ```no_run
    /// # async fn f(client: odyssey_client::OdysseyClient) -> Result<(), odyssey_client::ClientError> {
    /// use std::time::Duration;
    /// let session = client.with_deadline(Duration::from_secs(5)).get_session("…").await?;
    /// # Ok(()) }
    /// ```
    pub fn with_deadline(&self, deadline: Duration) -> Self {
        Self {
            channel: self.channel.clone(),
            auth: self.auth.clone().with_deadline(deadline),
        }
    }

    pub(crate) fn intercepted(&self) -> AuthChannel {
        InterceptedService::new(self.channel.clone(), self.auth.clone())
    }

    /// The generated `BundleService` client.
    pub fn bundles(&self) -> BundleServiceClient<AuthChannel> {
        BundleServiceClient::new(self.intercepted()).max_decoding_message_size(MAX_DECODING_BYTES)
    }

    /// The generated `SessionService` client.
    pub fn sessions(&self) -> SessionServiceClient<AuthChannel> {
        SessionServiceClient::new(self.intercepted()).max_decoding_message_size(MAX_DECODING_BYTES)
    }

    /// The generated `ExecutionService` client.
    pub fn executions(&self) -> ExecutionServiceClient<AuthChannel> {
        ExecutionServiceClient::new(self.intercepted())
            .max_decoding_message_size(MAX_DECODING_BYTES)
    }

    /// The generated `ApprovalService` client.
    pub fn approvals(&self) -> ApprovalServiceClient<AuthChannel> {
        ApprovalServiceClient::new(self.intercepted()).max_decoding_message_size(MAX_DECODING_BYTES)
    }

    /// The generated `ServerService` client.
    pub fn server(&self) -> ServerServiceClient<AuthChannel> {
        ServerServiceClient::new(self.intercepted()).max_decoding_message_size(MAX_DECODING_BYTES)
    }
}
