//! What a session's processes may reach beyond its cell: network, host folders, host
//! environment variables, memory. A bundle comes from a client, so what it declares can
//! only narrow what the operator allows, never widen it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::bundle::SandboxSpec;
use crate::error::{Result, RuntimeError};
use crate::sandbox::{DomainList, DomainPolicy};

/// The operator's ceilings.
#[derive(Clone, Debug)]
pub struct AccessLimits {
    /// Whether any session may open network connections (through its egress proxy).
    pub allow_network: bool,
    /// The host names networked sessions may reach at most (`sandbox.network_domains`);
    /// empty: whatever the bundle lists.
    pub network_domains: DomainList,
    /// Host folders (and what lies below them) that bundles may mount.
    pub mount_roots: Vec<PathBuf>,
    /// Host environment variables bundles may map into the sandbox. Provider keys are
    /// never mappable unless listed here explicitly.
    pub env_allowlist: Vec<String>,
    /// The largest `resources.memory_mb` a bundle may ask for.
    pub max_memory_mb: u64,
    /// The largest `resources.cpu` a bundle may ask for.
    pub max_cpu: u32,
}

impl Default for AccessLimits {
    fn default() -> Self {
        Self {
            allow_network: false,
            network_domains: DomainList::default(),
            mount_roots: Vec::new(),
            env_allowlist: Vec::new(),
            max_memory_mb: 8 * 1024,
            max_cpu: 8,
        }
    }
}

/// What one session's processes get, after the checks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionAccess {
    /// The hosts its processes may reach through the egress proxy; `None`: no network.
    pub network: Option<DomainPolicy>,
    pub mounts_read: Vec<PathBuf>,
    pub mounts_write: Vec<PathBuf>,
    /// Variables inside the sandbox with their values from the server's environment.
    pub env: BTreeMap<String, String>,
    pub memory_mb: Option<u64>,
}

impl AccessLimits {
    /// Checks a manifest's sandbox section against the ceilings; the error names the
    /// operator setting (its configuration key) that would have to change.
    pub fn grant(&self, spec: &SandboxSpec) -> Result<SessionAccess> {
        let network = self.network(&spec.network)?;
        let mounts_read = self.mounts(&spec.mounts_read)?;
        let mounts_write = self.mounts(&spec.mounts_write)?;
        let mut env = BTreeMap::new();
        for (inside, host) in &spec.env {
            if !self.env_allowlist.iter().any(|allowed| allowed == host) {
                return Err(denied(
                    "sandbox.env_allow",
                    &format!(
                        "the bundle maps host variable `{host}` into `{inside}`, which this server does not allow"
                    ),
                ));
            }
            if let Ok(value) = std::env::var(host) {
                env.insert(inside.clone(), value);
            }
        }
        if let Some(memory) = spec.memory_mb.filter(|m| *m > self.max_memory_mb) {
            return Err(denied(
                "sandbox.max_memory_mb",
                &format!(
                    "the bundle asks for {memory} MB of memory; this server allows at most {}",
                    self.max_memory_mb
                ),
            ));
        }
        if let Some(cpu) = spec.cpu.filter(|c| *c > self.max_cpu) {
            return Err(denied(
                "sandbox.max_cpu",
                &format!(
                    "the bundle asks for {cpu} CPUs; this server allows at most {}",
                    self.max_cpu
                ),
            ));
        }
        Ok(SessionAccess {
            network,
            mounts_read,
            mounts_write,
            env,
            memory_mb: spec.memory_mb,
        })
    }

    /// The bundle's host list narrowed by the operator's; `None` when it asks for none.
    fn network(&self, requested: &[String]) -> Result<Option<DomainPolicy>> {
        if requested.is_empty() {
            return Ok(None);
        }
        if !self.allow_network {
            return Err(denied(
                "sandbox.allow_network",
                &format!(
                    "the bundle asks for network access (to {}), which this server does not allow",
                    requested.join(", ")
                ),
            ));
        }
        // Checked when the bundle was built; a bundle installed before then is told here.
        let bundle = DomainList::parse(requested).map_err(|e| {
            RuntimeError::invalid("spec.sandbox.permissions.network", e.to_string())
        })?;
        Ok(Some(DomainPolicy {
            bundle,
            operator: self.network_domains.clone(),
        }))
    }

    fn mounts(&self, requested: &[String]) -> Result<Vec<PathBuf>> {
        requested
            .iter()
            .map(|mount| {
                let path = Path::new(mount);
                let allowed = path.is_absolute()
                    && path.canonicalize().is_ok_and(|real| {
                        self.mount_roots
                            .iter()
                            .any(|root| root.canonicalize().is_ok_and(|root| real.starts_with(root)))
                    });
                if allowed {
                    Ok(path.to_path_buf())
                } else {
                    Err(denied(
                        "sandbox.mount_roots",
                        &format!("the bundle asks to mount `{mount}`, which is not under a folder this server allows"),
                    ))
                }
            })
            .collect()
    }
}

fn denied(setting: &str, message: &str) -> RuntimeError {
    RuntimeError::PermissionDenied {
        setting: setting.into(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SandboxSpec {
        SandboxSpec::default()
    }

    #[test]
    fn a_bundle_can_only_narrow_what_the_operator_allows() {
        let limits = AccessLimits::default();
        assert_eq!(limits.grant(&spec()).ok(), Some(SessionAccess::default()));

        let mut network = spec();
        network.network = vec!["*".into()];
        let err = limits
            .grant(&network)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("allow_network"), "{err}");
        let open = AccessLimits {
            allow_network: true,
            network_domains: DomainList::parse(&["*.pypi.org"]).unwrap_or_default(),
            ..AccessLimits::default()
        };
        let granted = open.grant(&network).ok().and_then(|a| a.network);
        let granted = granted.unwrap_or_else(|| panic!("network granted"));
        assert!(granted.bundle.matching("example.com").is_some());
        assert_eq!(granted.operator, open.network_domains);

        let mut hosts = spec();
        hosts.network = vec!["api.github.com".into(), "*.pypi.org".into()];
        let granted = open.grant(&hosts).ok().and_then(|a| a.network);
        assert!(granted.is_some_and(
            |p| p.check("api.github.com").is_err() && p.check("files.pypi.org").is_ok()
        ));
        hosts.network = vec!["a*b.com".into()];
        assert!(
            open.grant(&hosts)
                .is_err_and(|e| e.to_string().contains("is not a host pattern"))
        );

        let mut env = spec();
        env.env.insert("KEY".into(), "OPENAI_API_KEY".into());
        let err = limits
            .grant(&env)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("sandbox.env_allow") && err.contains("OPENAI_API_KEY"),
            "{err}"
        );

        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let inside = dir.path().join("shared");
        std::fs::create_dir(&inside).unwrap_or_else(|e| panic!("{e}"));
        let mut mount = spec();
        mount.mounts_read = vec![inside.display().to_string()];
        assert!(
            limits
                .grant(&mount)
                .is_err_and(|e| e.to_string().contains("sandbox.mount_roots"))
        );
        let rooted = AccessLimits {
            mount_roots: vec![dir.path().to_path_buf()],
            ..AccessLimits::default()
        };
        assert!(
            rooted
                .grant(&mount)
                .is_ok_and(|a| a.mounts_read == vec![inside.clone()])
        );

        let mut memory = spec();
        memory.memory_mb = Some(1 << 20);
        assert!(
            limits
                .grant(&memory)
                .is_err_and(|e| e.to_string().contains("max_memory_mb"))
        );
    }
}
