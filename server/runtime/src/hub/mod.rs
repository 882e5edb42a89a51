//! The bundle hub: installed bundles published to, and installed from, OCI registries
//! (Docker Hub, GHCR, Harbor, zot, the CNCF distribution registry, ...), the way container
//! images and other artifacts travel.
//!
//! - [`artifact`](ARTIFACT_TYPE): how a bundle is laid out as an OCI artifact, and what a
//!   pulled manifest must look like to be taken;
//! - [`RegistryReference`]: `registry[:port]/repository[:tag][@sha256:…]`, the registry
//!   defaulting to the configured hub;
//! - [`HubSettings`]: the default registry, credentials per registry host (from the
//!   server's configuration only, see [`load_auth_file`]) and the hosts allowed plain HTTP;
//! - the client that talks to registries (through `oci-client`) and turns their failures
//!   into [`HubError`]s.
//!
//! Installing what was fetched is the bundle store's job, with the same validation as an
//! import, plus a check that the installed content has the digest the artifact announced.

mod artifact;
mod client;
mod credentials;
mod error;
mod reference;
mod settings;

#[cfg(test)]
mod tests;

pub use artifact::{ARTIFACT_TYPE, CONFIG_MEDIA_TYPE, CONTENT_DIGEST_ANNOTATION};
pub use credentials::{RegistryCredentials, load_auth_file, registry_host_key};
pub use error::HubError;
pub use reference::RegistryReference;
pub use settings::{DEFAULT_HUB, HubSettings, check_registry_url};

pub(crate) use artifact::Artifact;
pub(crate) use client::Hub;
