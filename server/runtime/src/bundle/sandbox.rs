//! Turning the manifest's `spec.sandbox` section into a [`SandboxSpec`].
//!
//! Only the shape is checked here (known mode, well-formed variable names). Whether the
//! operator allows what the bundle asks for is decided when a session starts.

use super::error::BundleError;
use super::manifest::{MANIFEST_FILE, Sandbox};
use super::types::SandboxSpec;
use crate::policy::SandboxMode;
use crate::sandbox::DomainPattern;

/// Converts the section; `None` (no section) gives the defaults.
pub(crate) fn sandbox_spec(raw: Option<Sandbox>) -> Result<SandboxSpec, BundleError> {
    let raw = raw.unwrap_or_default();
    let err = |field: String, message: String| BundleError::manifest(MANIFEST_FILE, field, message);

    let mode = match raw.mode.as_deref() {
        None => SandboxMode::WorkspaceWrite,
        Some(text) => SandboxMode::parse(text).ok_or_else(|| {
            err(
                "spec.sandbox.mode".to_owned(),
                format!(
                    "unknown sandbox mode `{text}`; expected read_only, workspace_write or danger_full_access"
                ),
            )
        })?,
    };
    for (inner, host) in &raw.env {
        let field = format!("spec.sandbox.env.{inner}");
        if !is_env_name(inner) {
            return Err(err(
                field,
                format!("`{inner}` is not a valid environment variable name"),
            ));
        }
        if !is_env_name(host) {
            return Err(err(
                field,
                format!("`{host}` is not a valid host variable name"),
            ));
        }
    }
    for (index, pattern) in raw.permissions.network.iter().enumerate() {
        if let Err(e) = pattern.parse::<DomainPattern>() {
            return Err(err(
                format!("spec.sandbox.permissions.network[{index}]"),
                e.to_string(),
            ));
        }
    }
    let filesystem = raw.permissions.filesystem;
    Ok(SandboxSpec {
        mode,
        env: raw.env,
        network: raw.permissions.network,
        mounts_read: filesystem.mounts.read,
        mounts_write: filesystem.mounts.write,
        exec: filesystem.exec,
        cpu: raw.resources.cpu,
        memory_mb: raw.resources.memory_mb,
        system_tools_mode: raw.system_tools_mode,
        system_tools: raw.system_tools,
    })
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what shells and `env` accept without quoting.
pub(crate) fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
