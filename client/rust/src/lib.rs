//! Rust SDK for Odyssey, the agent runtime served over gRPC (`package odyssey.v1`). The
//! `odyssey` command line (crate `odyssey-cli`) is built on it.
//!
//! [`OdysseyClient`] dials a server and hands out the generated clients of every service;
//! its typed helpers cover what needs more than one call or more than one message:
//! streaming archives ([`OdysseyClient::build_bundle`]), following a session's events across
//! disconnects ([`OdysseyClient::subscribe`]), watching one turn from its first event to
//! its last ([`OdysseyClient::run_turn`]), answering approval requests
//! ([`OdysseyClient::list_approvals`], [`OdysseyClient::watch_approvals`],
//! [`OdysseyClient::resolve_approval`]) and running
//! operator commands in a session's sandbox ([`OdysseyClient::stream_session_command`]).
//!
//! ```no_run
//! # async fn tour() -> Result<(), odyssey_client::ClientError> {
//! use odyssey_client::{OdysseyClient, SessionOptions, pack_project};
//!
//! let client = OdysseyClient::connect("http://127.0.0.1:8472", None).await?;
//! let bundle = client.build_bundle(pack_project("my-agent".as_ref())?, "", false).await?;
//! let name = bundle.r#ref.map(|r| r.name).unwrap_or_default();
//! let session = client.create_session(&name, SessionOptions::default()).await?;
//! let mut turn = client.run_turn(&session.id, "hello", Default::default()).await?;
//! while let Some(event) = turn.next().await? {
//!     println!("{} {:?}", event.sequence, event.payload);
//! }
//! # Ok(()) }
//! ```

pub mod a2a;
mod approvals;
mod archive;
mod auth;
mod bundles;
mod client;
mod commands;
mod error;
mod events;
mod executions;
mod model;
mod retry;
mod server;
mod sessions;
mod turn;
mod watch;

pub use archive::{is_excluded_component, pack_files, pack_project, unpack_archive};
pub use auth::BearerAuth;
pub use bundles::CHUNK_BYTES;
pub use client::{AuthChannel, ConnectOptions, OdysseyClient};
pub use commands::{CommandStream, OperatorCommand};
pub use error::{ClientError, ErrorDetails, FieldViolation, code_name};
pub use events::{EventStream, ReconnectPolicy};
pub use model::{ModelParseError, format_model, parse_model};
pub use sessions::{SessionFilter, SessionOptions};
pub use turn::TurnStream;
pub use watch::{ApprovalWatcher, ApprovalsChange};

/// The generated API, re-exported so SDK users need no direct `odyssey-api` dependency.
pub use odyssey_api::v1 as proto;

/// The generated Agent2Agent protocol (`lf.a2a.v1`), which the server offers beside the
/// Odyssey API; [`a2a`] has the helpers.
pub use odyssey_api::a2a::v1 as a2a_proto;

/// The Rust client guide, `docs/clients/rust.md`: its examples compile as doc tests, so
/// the guide cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/clients/rust.md")]
pub struct ClientGuide;
