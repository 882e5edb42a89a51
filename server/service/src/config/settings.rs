//! Every key of the configuration file, in the order `odyssey config show` prints them.
//! One entry per setting: the key, its flag (which also names its `ODYSSEY_*` variable),
//! and where its value lands. A new setting is one more entry here (plus its flag in
//! `ServeArgs`, when it has one).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::event_hooks::{self, HookEntry};
use super::names::{parse_allowed_host, parse_origin};
use super::requirements::{narrow_mode, narrow_providers, narrow_urls};
use super::setting::{Setting, ValueError};
use super::{Secret, ServerConfig, TlsFiles};
use odyssey_runtime::hub::{check_registry_url, load_auth_file};
use odyssey_runtime::model::ModelSpec;
use odyssey_runtime::model_override::ModelOverride;
use odyssey_runtime::permissions::HookConfig;
use odyssey_runtime::provider::{
    CredentialSettings, ProviderSettings, UrlPattern, known_provider_names, read_key_file,
};
use odyssey_runtime::sandbox::DomainList;
use odyssey_runtime::sandbox::egress::IpNet;
use odyssey_runtime::secrets;
use odyssey_runtime::snapshot::MechanismChoice;
use odyssey_runtime::tools::a2a::OperatorA2aAgent;
use odyssey_runtime::tools::mcp::OperatorMcpServer;
use odyssey_runtime::{RuntimeConfig, SandboxMode};

/// The configuration while layers are applied: the server's, plus values that only
/// become part of it together (the hook programs and their timeout; TLS files).
pub struct Draft {
    pub server: ServerConfig,
    pub hook_programs: Vec<PathBuf>,
    pub hook_timeout: Duration,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// The registry credentials file the hub's credentials were read from.
    pub registry_auth_file: Option<PathBuf>,
}

impl Draft {
    /// Built-in defaults, with `home` as the home folder.
    pub fn defaults(home: PathBuf) -> Self {
        Self {
            server: ServerConfig::defaults(RuntimeConfig::with_home(home)),
            hook_programs: Vec::new(),
            hook_timeout: Duration::from_millis(5000),
            tls_cert: None,
            tls_key: None,
            registry_auth_file: None,
        }
    }

    /// The finished configuration; fails when TLS is half configured or a credential is.
    pub fn finish(mut self) -> Result<ServerConfig, String> {
        check_credentials(&self.server.runtime.credentials)?;
        if self.server.database.url.is_some() {
            super::database::shared_store_snapshots(&mut self.server.runtime.snapshots)?;
        }
        self.server.runtime.hooks = self
            .hook_programs
            .iter()
            .map(|program| HookConfig::new(vec![program.display().to_string()], self.hook_timeout))
            .collect();
        self.server.tls = match (self.tls_cert, self.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
            (None, None) => None,
            (Some(_), None) => {
                return Err(
                    "server.tls_cert is set but server.tls_key is not: TLS needs both".into(),
                );
            }
            (None, Some(_)) => {
                return Err(
                    "server.tls_key is set but server.tls_cert is not: TLS needs both".into(),
                );
            }
        };
        Ok(self.server)
    }
}

/// A server setting (the helper fixes the configuration type for closure inference).
fn server<T>(
    key: &'static str,
    get: impl Fn(&Draft) -> Option<T> + 'static,
    set: impl Fn(&mut Draft, T) -> Result<(), ValueError> + 'static,
) -> Setting<Draft>
where
    T: Serialize + for<'de> Deserialize<'de> + 'static,
{
    Setting::new(key, get, set)
}

/// A key of `[providers.<name>]`.
fn provider<T>(
    key: &'static str,
    get: impl Fn(&ProviderSettings) -> Option<T> + 'static,
    set: impl Fn(&mut ProviderSettings, T) -> Result<(), ValueError> + 'static,
) -> Setting<ProviderSettings>
where
    T: Serialize + for<'de> Deserialize<'de> + 'static,
{
    Setting::new(key, get, set)
}

fn at_least<T: PartialOrd + std::fmt::Display>(value: T, min: T) -> Result<T, ValueError> {
    if value < min {
        return Err(format!("must be at least {min}, not {value}").into());
    }
    Ok(value)
}

fn patterns(texts: Vec<String>) -> Result<Vec<UrlPattern>, ValueError> {
    texts
        .iter()
        .map(|text| text.parse().map_err(ValueError::from))
        .collect()
}

/// An address range (`127.0.0.0/8`, `fd00::/8`), or one address (`10.0.0.5`).
fn cidr(text: &str) -> Result<IpNet, ValueError> {
    let net = match text.parse::<IpNet>() {
        Ok(net) => net,
        Err(_) => match text.parse::<std::net::IpAddr>() {
            Ok(ip) => IpNet::from(ip),
            Err(_) => {
                return Err(format!(
                    "`{text}` is not an address range: write it as 127.0.0.0/8 or fd00::/8"
                )
                .into());
            }
        },
    };
    Ok(net.trunc())
}

fn texts(patterns: &[UrlPattern]) -> Vec<String> {
    patterns.iter().map(ToString::to_string).collect()
}

/// The settings of the server, section by section.
pub fn server_settings() -> Vec<Setting<Draft>> {
    vec![
        // [server]: where and how the gRPC port listens.
        server(
            "server.listen",
            |d| Some(d.server.listen),
            |d, v| {
                d.server.listen = v;
                Ok(())
            },
        )
        .flag("--listen", |a| a.listen),
        server(
            "server.home",
            |d| Some(d.server.runtime.home.clone()),
            |d, v| {
                d.server.runtime.home = v;
                Ok(())
            },
        )
        .flag("--home", |a| a.home.clone()),
        server(
            "server.workspace_root",
            |d| d.server.runtime.workspace_root.clone(),
            |d, v: PathBuf| {
                if !v.is_absolute() {
                    return Err(format!(
                        "`{}` is not an absolute path: replicas sharing a database must all \
                         name the same folder",
                        v.display()
                    )
                    .into());
                }
                d.server.runtime.workspace_root = Some(v);
                Ok(())
            },
        )
        .flag("--workspace-root", |a| a.workspace_root.clone()),
        server(
            "server.auth_token",
            |d| d.server.grpc.auth_token.clone(),
            |d, v: String| {
                d.server.grpc.auth_token = Some(v).filter(|t| !t.is_empty());
                Ok(())
            },
        )
        .flag("--auth-token", |a| {
            a.auth_token.as_ref().map(|t| t.expose().to_owned())
        })
        .secret(),
        server(
            "server.insecure",
            |d| Some(d.server.insecure),
            |d, v| {
                d.server.insecure = v;
                Ok(())
            },
        )
        .flag("--insecure", |a| a.insecure.then_some(true)),
        server(
            "server.tls_cert",
            |d| d.tls_cert.clone(),
            |d, v| {
                d.tls_cert = Some(v);
                Ok(())
            },
        )
        .flag("--tls-cert", |a| a.tls_cert.clone()),
        server(
            "server.tls_key",
            |d| d.tls_key.clone(),
            |d, v| {
                d.tls_key = Some(v);
                Ok(())
            },
        )
        .flag("--tls-key", |a| a.tls_key.clone()),
        server(
            "server.cors_origins",
            |d| {
                let origins = &d.server.grpc.cors_origins;
                Some(
                    origins
                        .iter()
                        .filter_map(|o| o.to_str().ok())
                        .map(str::to_owned)
                        .collect::<Vec<_>>(),
                )
            },
            |d, v: Vec<String>| {
                d.server.grpc.cors_origins = v
                    .iter()
                    .map(|origin| parse_origin(origin))
                    .collect::<Result<_, _>>()?;
                Ok(())
            },
        )
        .flag("--cors-origin", |a| {
            (!a.cors_origins.is_empty()).then(|| a.cors_origins.clone())
        }),
        server(
            "server.allowed_hosts",
            |d| Some(d.server.grpc.allowed_hosts.clone()),
            |d, v: Vec<String>| {
                d.server.grpc.allowed_hosts = v
                    .iter()
                    .map(|host| parse_allowed_host(host))
                    .collect::<Result<_, _>>()?;
                Ok(())
            },
        )
        .flag("--allowed-host", |a| {
            (!a.allowed_hosts.is_empty()).then(|| a.allowed_hosts.clone())
        }),
        server(
            "server.http_listen",
            |d| d.server.http_listen,
            |d, v| {
                d.server.http_listen = Some(v);
                Ok(())
            },
        )
        .flag("--http-listen", |a| a.http_listen),
        server(
            "server.console",
            |d| Some(d.server.console),
            |d, v| {
                d.server.console = v;
                Ok(())
            },
        )
        .flag("--console", |a| a.console.then_some(true)),
        server(
            "server.worker_count",
            |d| Some(d.server.runtime.worker_count),
            |d, v| {
                d.server.runtime.worker_count = at_least(v, 1)?;
                Ok(())
            },
        )
        .flag("--worker-count", |a| a.worker_count),
        server(
            "server.queue_capacity",
            |d| Some(d.server.runtime.queue_capacity),
            |d, v| {
                d.server.runtime.queue_capacity = v;
                Ok(())
            },
        )
        .flag("--queue-capacity", |a| a.queue_capacity),
        server(
            "server.open_session_cache",
            |d| Some(d.server.runtime.open_session_cache),
            |d, v| {
                d.server.runtime.open_session_cache = v;
                Ok(())
            },
        )
        .flag("--open-session-cache", |a| a.open_session_cache),
        server(
            "server.max_message_bytes",
            |d| Some(d.server.grpc.max_message_bytes),
            |d, v| {
                d.server.grpc.max_message_bytes = at_least(v, 1024)?;
                Ok(())
            },
        )
        .flag("--max-message-bytes", |a| a.max_message_bytes),
        server(
            "server.heartbeat_seconds",
            |d| Some(d.server.grpc.heartbeat.as_secs()),
            |d, v| {
                d.server.grpc.heartbeat = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        )
        .flag("--heartbeat-seconds", |a| a.heartbeat_seconds),
        server(
            "server.shutdown_grace_seconds",
            |d| Some(d.server.shutdown_grace.as_secs()),
            |d, v| {
                d.server.shutdown_grace = Duration::from_secs(v);
                Ok(())
            },
        )
        .flag("--shutdown-grace-seconds", |a| a.shutdown_grace_seconds),
        server(
            "server.log_format",
            |d| Some(d.server.log_format),
            |d, v| {
                d.server.log_format = v;
                Ok(())
            },
        )
        .flag("--log-format", |a| a.log_format),
        // [turns]: budgets of one turn.
        server(
            "turns.max_steps",
            |d| Some(d.server.runtime.max_turn_steps),
            |d, v| {
                d.server.runtime.max_turn_steps = at_least(v, 1)?;
                Ok(())
            },
        )
        .flag("--max-turn-steps", |a| a.max_turn_steps),
        server(
            "turns.max_seconds",
            |d| Some(d.server.runtime.max_turn_duration.as_secs()),
            |d, v| {
                d.server.runtime.max_turn_duration = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        )
        .flag("--max-turn-seconds", |a| a.max_turn_seconds),
        server(
            "turns.max_subagent_depth",
            |d| Some(d.server.runtime.max_subagent_depth),
            |d, v| {
                d.server.runtime.max_subagent_depth = v;
                Ok(())
            },
        )
        .flag("--max-subagent-depth", |a| a.max_subagent_depth),
        server(
            "turns.max_concurrent_subagents",
            |d| Some(d.server.runtime.max_concurrent_subagents),
            |d, v| {
                d.server.runtime.max_concurrent_subagents = at_least(v, 1)?;
                Ok(())
            },
        )
        .flag("--max-concurrent-subagents", |a| a.max_concurrent_subagents),
        server(
            "turns.max_output_tokens",
            |d| d.server.runtime.max_turn_output_tokens,
            |d, v| {
                d.server.runtime.max_turn_output_tokens = Some(at_least(v, 1)?);
                Ok(())
            },
        )
        .flag("--max-turn-output-tokens", |a| a.max_turn_output_tokens),
        // [sessions]: what every session gets.
        server(
            "sessions.token_budget",
            |d| d.server.runtime.session_token_budget,
            |d, v| {
                d.server.runtime.session_token_budget = Some(at_least(v, 1)?);
                Ok(())
            },
        )
        .flag("--session-token-budget", |a| a.session_token_budget),
        server(
            "sessions.record_cassettes",
            |d| Some(d.server.runtime.record_cassettes),
            |d, v| {
                d.server.runtime.record_cassettes = v;
                Ok(())
            },
        )
        .flag("--record-cassettes", |a| a.record_cassettes.then_some(true)),
        // [snapshots]: the workspace snapshots of turn ends (fork, rewind, turn changes).
        server(
            "snapshots.enabled",
            |d| Some(d.server.runtime.snapshots.enabled),
            |d, v| {
                d.server.runtime.snapshots.enabled = v;
                Ok(())
            },
        )
        .flag("--snapshots", |a| a.snapshots),
        server(
            "snapshots.mechanism",
            |d| Some(d.server.runtime.snapshots.mechanism),
            |d, v| {
                d.server.runtime.snapshots.mechanism = v;
                Ok(())
            },
        )
        .flag("--snapshot-mechanism", |a| {
            a.snapshot_mechanism.map(MechanismChoice::from)
        }),
        server(
            "snapshots.max_turns",
            |d| Some(d.server.runtime.snapshots.max_turns),
            |d, v| {
                d.server.runtime.snapshots.max_turns = at_least(v, 1)?;
                Ok(())
            },
        )
        .flag("--snapshot-max-turns", |a| a.snapshot_max_turns),
        server(
            "snapshots.max_bytes",
            |d| Some(d.server.runtime.snapshots.max_bytes),
            |d, v| {
                d.server.runtime.snapshots.max_bytes = v;
                Ok(())
            },
        )
        .flag("--snapshot-max-bytes", |a| a.snapshot_max_bytes),
        server(
            "snapshots.max_workspace_files",
            |d| Some(d.server.runtime.snapshots.max_workspace_files),
            |d, v| {
                d.server.runtime.snapshots.max_workspace_files = v;
                Ok(())
            },
        )
        .flag("--snapshot-max-workspace-files", |a| {
            a.snapshot_max_workspace_files
        }),
        server(
            "snapshots.max_workspace_bytes",
            |d| Some(d.server.runtime.snapshots.max_workspace_bytes),
            |d, v| {
                d.server.runtime.snapshots.max_workspace_bytes = v;
                Ok(())
            },
        )
        .flag("--snapshot-max-workspace-bytes", |a| {
            a.snapshot_max_workspace_bytes
        }),
        // [memory]: long-term memory across an agent's sessions.
        server(
            "memory.long_term",
            |d| Some(d.server.runtime.memory.enabled),
            |d, v| {
                d.server.runtime.memory.enabled = v;
                Ok(())
            },
        )
        .flag("--long-term-memory", |a| a.long_term_memory),
        server(
            "memory.max_records",
            |d| Some(d.server.runtime.memory.max_records),
            |d, v| {
                d.server.runtime.memory.max_records = at_least(v, 1)?;
                Ok(())
            },
        ),
        server(
            "memory.max_bytes",
            |d| Some(d.server.runtime.memory.max_bytes),
            |d, v| {
                d.server.runtime.memory.max_bytes = at_least(v, 1024)?;
                Ok(())
            },
        ),
        server(
            "memory.max_text_bytes",
            |d| Some(d.server.runtime.memory.max_text_bytes),
            |d, v| {
                d.server.runtime.memory.max_text_bytes = at_least(v, 16)?;
                Ok(())
            },
        ),
        server(
            "memory.recall_records",
            |d| Some(d.server.runtime.memory.recall_records),
            |d, v| {
                d.server.runtime.memory.recall_records = v;
                Ok(())
            },
        ),
        // [prompt]: the system prompt's parts.
        server(
            "prompt.skill_roots",
            |d| Some(d.server.runtime.skill_roots.clone()),
            |d, v| {
                d.server.runtime.skill_roots = v;
                Ok(())
            },
        )
        .flag("--skill-root", |a| {
            (!a.skill_roots.is_empty()).then(|| a.skill_roots.clone())
        }),
        server(
            "prompt.skill_rescan_seconds",
            |d| Some(d.server.runtime.skill_rescan_interval.as_secs()),
            |d, v| {
                d.server.runtime.skill_rescan_interval = Duration::from_secs(v);
                Ok(())
            },
        ),
        server(
            "prompt.bootstrap_file_bytes",
            |d| Some(d.server.runtime.prompt_limits.bootstrap_file_bytes),
            |d, v| {
                d.server.runtime.prompt_limits.bootstrap_file_bytes = v;
                Ok(())
            },
        ),
        server(
            "prompt.bootstrap_total_bytes",
            |d| Some(d.server.runtime.prompt_limits.bootstrap_total_bytes),
            |d, v| {
                d.server.runtime.prompt_limits.bootstrap_total_bytes = v;
                Ok(())
            },
        ),
        server(
            "prompt.skill_list_bytes",
            |d| Some(d.server.runtime.prompt_limits.skill_list_bytes),
            |d, v| {
                d.server.runtime.prompt_limits.skill_list_bytes = v;
                Ok(())
            },
        ),
        server(
            "prompt.skill_bodies_bytes",
            |d| Some(d.server.runtime.prompt_limits.skill_bodies_bytes),
            |d, v| {
                d.server.runtime.prompt_limits.skill_bodies_bytes = v;
                Ok(())
            },
        ),
        // [sandbox]: how far sessions' processes reach.
        server(
            "sandbox.force_mode",
            |d| d.server.runtime.sandbox_mode_override,
            |d, v| {
                d.server.runtime.sandbox_mode_override = Some(v);
                Ok(())
            },
        )
        .flag("--sandbox-mode", |a| a.sandbox_mode.map(SandboxMode::from)),
        server(
            "sandbox.allow_danger_full_access",
            |d| Some(d.server.runtime.allow_danger_full_access),
            |d, v| {
                d.server.runtime.allow_danger_full_access = v;
                Ok(())
            },
        )
        .flag("--allow-danger-full-access", |a| {
            a.allow_danger_full_access.then_some(true)
        }),
        server(
            "sandbox.allow_network",
            |d| Some(d.server.runtime.access.allow_network),
            |d, v| {
                d.server.runtime.access.allow_network = v;
                Ok(())
            },
        )
        .flag("--allow-network", |a| a.allow_network.then_some(true)),
        server(
            "sandbox.network_domains",
            |d| {
                let patterns = d.server.runtime.access.network_domains.patterns();
                Some(patterns.iter().map(ToString::to_string).collect::<Vec<_>>())
            },
            |d, v: Vec<String>| {
                d.server.runtime.access.network_domains =
                    DomainList::parse(&v).map_err(|e| e.to_string())?;
                Ok(())
            },
        )
        .flag("--allow-network-domain", |a| {
            (!a.network_domains.is_empty()).then(|| a.network_domains.clone())
        }),
        server(
            "sandbox.network_cidrs",
            |d| {
                let cidrs = &d.server.runtime.sandbox.egress.allowed_cidrs;
                Some(cidrs.iter().map(ToString::to_string).collect::<Vec<_>>())
            },
            |d, v: Vec<String>| {
                d.server.runtime.sandbox.egress.allowed_cidrs =
                    v.iter().map(|text| cidr(text)).collect::<Result<_, _>>()?;
                Ok(())
            },
        )
        .flag("--allow-network-cidr", |a| {
            (!a.network_cidrs.is_empty()).then(|| a.network_cidrs.clone())
        }),
        server(
            "sandbox.mount_roots",
            |d| Some(d.server.runtime.access.mount_roots.clone()),
            |d, v| {
                d.server.runtime.access.mount_roots = v;
                Ok(())
            },
        )
        .flag("--mount-root", |a| {
            (!a.mount_roots.is_empty()).then(|| a.mount_roots.clone())
        }),
        server(
            "sandbox.env_allow",
            |d| Some(d.server.runtime.access.env_allowlist.clone()),
            |d, v| {
                d.server.runtime.access.env_allowlist = v;
                Ok(())
            },
        )
        .flag("--env-allow", |a| {
            (!a.env_allowlist.is_empty()).then(|| a.env_allowlist.clone())
        }),
        server(
            "sandbox.max_memory_mb",
            |d| Some(d.server.runtime.access.max_memory_mb),
            |d, v| {
                d.server.runtime.access.max_memory_mb = at_least(v, 1)?;
                Ok(())
            },
        ),
        server(
            "sandbox.max_cpu",
            |d| Some(d.server.runtime.access.max_cpu),
            |d, v| {
                d.server.runtime.access.max_cpu = at_least(v, 1)?;
                Ok(())
            },
        ),
        server(
            "sandbox.memory_mb",
            |d| {
                let bytes = d.server.runtime.sandbox.limits.session_memory_bytes;
                Some(bytes.map_or(0, |b| b / (1024 * 1024)))
            },
            |d, v: u64| {
                d.server.runtime.sandbox.limits.session_memory_bytes =
                    (v > 0).then(|| v.saturating_mul(1024 * 1024));
                Ok(())
            },
        ),
        server(
            "sandbox.max_processes",
            |d| Some(d.server.runtime.sandbox.limits.processes),
            |d, v| {
                d.server.runtime.sandbox.limits.processes = at_least(v, 8)?;
                Ok(())
            },
        ),
        server(
            "sandbox.max_commands_per_session",
            |d| Some(d.server.runtime.sandbox.limits.commands_per_session),
            |d, v| {
                d.server.runtime.sandbox.limits.commands_per_session = at_least(v, 1)?;
                Ok(())
            },
        ),
        server(
            "sandbox.cgroups",
            |d| Some(d.server.runtime.sandbox.cgroups),
            |d, v| {
                d.server.runtime.sandbox.cgroups = v;
                Ok(())
            },
        ),
        server(
            "sandbox.helper",
            |d| d.server.runtime.sandbox.helper.clone(),
            |d, v| {
                d.server.runtime.sandbox.helper = Some(v);
                Ok(())
            },
        )
        .flag("--sandbox-helper", |a| a.sandbox_helper.clone()),
        server(
            "sandbox.uid",
            |d| Some(d.server.runtime.sandbox.sandbox_uid),
            |d, v| {
                d.server.runtime.sandbox.sandbox_uid = v;
                Ok(())
            },
        )
        .flag("--sandbox-uid", |a| a.sandbox_uid),
        server(
            "sandbox.gid",
            |d| Some(d.server.runtime.sandbox.sandbox_gid),
            |d, v| {
                d.server.runtime.sandbox.sandbox_gid = v;
                Ok(())
            },
        )
        .flag("--sandbox-gid", |a| a.sandbox_gid),
        // [approvals]: waiting for humans and asking hooks.
        server(
            "approvals.timeout_seconds",
            |d| Some(d.server.runtime.approval_timeout.as_secs()),
            |d, v| {
                d.server.runtime.approval_timeout = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        )
        .flag("--approval-timeout-seconds", |a| a.approval_timeout_seconds),
        server(
            "approvals.pre_tool_hooks",
            |d| Some(d.hook_programs.clone()),
            |d, v| {
                d.hook_programs = v;
                Ok(())
            },
        )
        .flag("--pre-tool-hook", |a| {
            (!a.pre_tool_hooks.is_empty()).then(|| a.pre_tool_hooks.clone())
        }),
        server(
            "approvals.pre_tool_hook_timeout_ms",
            |d| u64::try_from(d.hook_timeout.as_millis()).ok(),
            |d, v| {
                d.hook_timeout = Duration::from_millis(at_least(v, 1)?);
                Ok(())
            },
        )
        .flag("--pre-tool-hook-timeout-ms", |a| a.pre_tool_hook_timeout_ms),
        // [hub]: the OCI registries bundles are pushed to and pulled from.
        server(
            "hub.url",
            |d| Some(d.server.runtime.hub.default_registry.clone()),
            |d, v: String| {
                check_registry_url(&v).map_err(|e| e.to_string())?;
                d.server.runtime.hub.default_registry = v;
                Ok(())
            },
        )
        .flag("--hub", |a| a.hub.clone()),
        server(
            "hub.auth_file",
            |d| d.registry_auth_file.clone(),
            |d, v: PathBuf| {
                d.server.runtime.hub.credentials = load_auth_file(&v).map_err(|e| e.to_string())?;
                d.registry_auth_file = Some(v);
                Ok(())
            },
        )
        .flag("--registry-auth-file", |a| a.registry_auth_file.clone()),
        server(
            "hub.insecure_hosts",
            |d| Some(d.server.runtime.hub.insecure_hosts.clone()),
            |d, v| {
                d.server.runtime.hub.insecure_hosts = v;
                Ok(())
            },
        )
        .flag("--registry-insecure", |a| {
            (!a.registry_insecure.is_empty()).then(|| a.registry_insecure.clone())
        }),
        // [metrics]: the Prometheus endpoint.
        server(
            "metrics.listen",
            |d| d.server.metrics_listen,
            |d, v| {
                d.server.metrics_listen = Some(v);
                Ok(())
            },
        )
        .flag("--metrics-listen", |a| a.metrics_listen),
        server(
            "metrics.auth_token",
            |d| {
                let token = d.server.metrics_auth_token.as_ref();
                token.map(|t| t.expose().to_owned())
            },
            |d, v: String| {
                d.server.metrics_auth_token = Some(v).filter(|t| !t.is_empty()).map(Secret::new);
                Ok(())
            },
        )
        .flag("--metrics-auth-token", |a| {
            a.metrics_auth_token.as_ref().map(|t| t.expose().to_owned())
        })
        .secret(),
        // [[hooks.event]]: programs and webhooks that receive session events.
        server(
            "hooks.event",
            |d| {
                let hooks = &d.server.runtime.event_hooks;
                if hooks.is_empty() {
                    return None;
                }
                hooks
                    .iter()
                    .map(|hook| toml::Value::try_from(HookEntry::from(hook)).ok())
                    .collect()
            },
            |d, entries: Vec<toml::Value>| {
                d.server.runtime.event_hooks = event_hooks::parse(entries)?;
                Ok(())
            },
        )
        .flag("--event-hook", |a| {
            (!a.event_hooks.is_empty()).then(|| {
                let entries = a.event_hooks.iter().map(|h| HookEntry::from_flag(h));
                entries.collect::<Vec<_>>()
            })
        }),
        // [requirements]: caps nothing after them may exceed.
        server(
            "requirements.max_sandbox_mode",
            |d| d.server.runtime.requirements.max_sandbox_mode,
            |d, v| {
                d.server.runtime.requirements.max_sandbox_mode = Some(v);
                Ok(())
            },
        )
        .requirement(narrow_mode),
        server(
            "requirements.allowed_providers",
            |d| d.server.runtime.requirements.allowed_providers.clone(),
            |d, v: Vec<String>| {
                let known = known_provider_names();
                if let Some(bad) = v.iter().find(|name| !known.contains(&name.as_str())) {
                    return Err(format!(
                        "unknown provider `{bad}`; known providers: {}",
                        known.join(", ")
                    )
                    .into());
                }
                d.server.runtime.requirements.allowed_providers = Some(v);
                Ok(())
            },
        )
        .requirement(narrow_providers),
        server(
            "requirements.allowed_base_urls",
            |d| {
                d.server
                    .runtime
                    .requirements
                    .allowed_base_urls
                    .as_deref()
                    .map(texts)
            },
            |d, v| {
                d.server.runtime.requirements.allowed_base_urls = Some(patterns(v)?);
                Ok(())
            },
        )
        .requirement(narrow_urls),
        // [[models.override]]: this server's models for some bundles' agents.
        server(
            "models.override",
            |d| {
                let overrides = &d.server.runtime.model_overrides;
                if overrides.is_empty() {
                    return None;
                }
                overrides
                    .iter()
                    .map(|rule| toml::Value::try_from(OverrideEntry::from(rule)).ok())
                    .collect()
            },
            |d, entries: Vec<toml::Value>| {
                d.server.runtime.model_overrides = entries
                    .into_iter()
                    .enumerate()
                    .map(|(index, entry)| {
                        OverrideEntry::parse(entry).map_err(|message| ValueError {
                            message,
                            index: Some(index),
                        })
                    })
                    .collect::<Result<_, _>>()?;
                Ok(())
            },
        ),
        // [mcp]: MCP servers agents may use.
        server(
            "mcp.servers",
            |d| {
                let servers = &d.server.runtime.mcp.servers;
                if servers.is_empty() {
                    return None;
                }
                let table: toml::Table = servers
                    .iter()
                    .filter_map(|(name, server)| {
                        Some((
                            name.clone(),
                            toml::Value::try_from(McpServerEntry::from(server)).ok()?,
                        ))
                    })
                    .collect();
                Some(table)
            },
            |d, v: toml::Table| {
                d.server.runtime.mcp.servers = v
                    .into_iter()
                    .map(|(name, entry)| {
                        McpServerEntry::parse(&name, entry)
                            .map(|server| (name.clone(), server))
                            .map_err(|message| {
                                ValueError::from(format!("mcp.servers.{name}: {message}"))
                            })
                    })
                    .collect::<Result<_, _>>()?;
                Ok(())
            },
        ),
        server(
            "mcp.allowed_urls",
            |d| Some(texts(&d.server.runtime.mcp.allowed_urls)),
            |d, v| {
                d.server.runtime.mcp.allowed_urls = patterns(v)?;
                Ok(())
            },
        ),
        server(
            "mcp.idle_timeout_seconds",
            |d| Some(d.server.runtime.mcp.idle_timeout.as_secs()),
            |d, v| {
                d.server.runtime.mcp.idle_timeout = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
        server(
            "mcp.call_timeout_seconds",
            |d| Some(d.server.runtime.mcp.call_timeout.as_secs()),
            |d, v| {
                d.server.runtime.mcp.call_timeout = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
        // [a2a]: the Agent2Agent protocol.
        server(
            "a2a.default_agent",
            |d| d.server.grpc.a2a_default_agent.clone(),
            |d, v: String| {
                let v = v.trim().to_owned();
                if v.is_empty() {
                    d.server.grpc.a2a_default_agent = None;
                    return Ok(());
                }
                match v.rsplit_once('.') {
                    Some((bundle, agent)) if !bundle.is_empty() && !agent.is_empty() => {
                        d.server.grpc.a2a_default_agent = Some(v);
                        Ok(())
                    }
                    _ => Err(format!(
                        "`{v}` is not an agent: write `<bundle>.<agent>`, e.g. `demo.assistant`"
                    )
                    .into()),
                }
            },
        ),
        server(
            "a2a.push_allowed_urls",
            |d| Some(texts(&d.server.grpc.a2a_push_allowed_urls)),
            |d, v| {
                d.server.grpc.a2a_push_allowed_urls = patterns(v)?;
                Ok(())
            },
        ),
        // Delegation: the remote A2A agents bundles' agents call.
        server(
            "a2a.agents",
            |d| {
                let agents = &d.server.runtime.a2a.agents;
                if agents.is_empty() {
                    return None;
                }
                let table: toml::Table = agents
                    .iter()
                    .filter_map(|(name, agent)| {
                        Some((
                            name.clone(),
                            toml::Value::try_from(A2aAgentEntry::from(agent)).ok()?,
                        ))
                    })
                    .collect();
                Some(table)
            },
            |d, v: toml::Table| {
                d.server.runtime.a2a.agents = v
                    .into_iter()
                    .map(|(name, entry)| {
                        A2aAgentEntry::parse(&name, entry)
                            .map(|agent| (name.clone(), agent))
                            .map_err(|message| {
                                ValueError::from(format!("a2a.agents.{name}: {message}"))
                            })
                    })
                    .collect::<Result<_, _>>()?;
                Ok(())
            },
        ),
        server(
            "a2a.allowed_urls",
            |d| Some(texts(&d.server.runtime.a2a.allowed_urls)),
            |d, v| {
                d.server.runtime.a2a.allowed_urls = patterns(v)?;
                Ok(())
            },
        ),
        server(
            "a2a.call_timeout_seconds",
            |d| Some(d.server.runtime.a2a.call_timeout.as_secs()),
            |d, v| {
                d.server.runtime.a2a.call_timeout = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
        // [database]: the PostgreSQL database replicas share; served from when `url` is set.
        server(
            "database.url",
            |d| d.server.database.url.clone(),
            |d, v: String| {
                d.server.database.url = Some(super::database::check_url(&v)?);
                Ok(())
            },
        )
        .flag("--database-url", |a| a.database_url.clone()),
        server(
            "database.password_file",
            |d| d.server.database.password_file.clone(),
            |d, v: PathBuf| {
                d.server.database.password_file = Some(v);
                Ok(())
            },
        ),
        server(
            "database.replica_id",
            |d| Some(d.server.database.replica_id.clone()),
            |d, v: String| {
                d.server.database.replica_id = super::database::check_replica_id(&v)?;
                Ok(())
            },
        )
        .flag("--replica-id", |a| a.replica_id.clone()),
        server(
            "database.lease_seconds",
            |d| Some(d.server.database.lease.as_secs()),
            |d, v| {
                d.server.database.lease = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
        server(
            "database.cluster_queue_limit",
            |d| Some(d.server.database.cluster_queue_limit),
            |d, v| {
                d.server.database.cluster_queue_limit = at_least(v, 1)?;
                Ok(())
            },
        ),
        server(
            "database.outage_seconds",
            |d| Some(d.server.database.outage.as_secs()),
            |d, v| {
                d.server.database.outage = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
    ]
}

/// The keys of `[providers.<name>]`. Only `base_url` has a flag
/// (`--provider-base-url NAME=URL`), handled with the flags.
pub fn provider_settings() -> Vec<Setting<ProviderSettings>> {
    vec![
        provider(
            "base_url",
            |p| p.base_url.clone(),
            |p, v: String| {
                reqwest::Url::parse(&v).map_err(|e| format!("`{v}` is not a URL: {e}"))?;
                p.base_url = Some(v);
                Ok(())
            },
        ),
        provider(
            "api_key",
            |p| p.api_key.clone(),
            |p, v| {
                p.api_key = Some(v);
                Ok(())
            },
        )
        .secret(),
        provider(
            "api_key_env",
            |p| p.api_key_env.clone(),
            |p, v| {
                p.api_key_env = Some(v);
                Ok(())
            },
        ),
        provider(
            "request_timeout_seconds",
            |p| Some(p.request_timeout.as_secs()),
            |p, v| {
                p.request_timeout = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
        provider(
            "idle_timeout_seconds",
            |p| Some(p.idle_timeout.as_secs()),
            |p, v| {
                p.idle_timeout = Duration::from_secs(at_least(v, 1)?);
                Ok(())
            },
        ),
        provider(
            "max_retries",
            |p| Some(p.max_retries),
            |p, v| {
                p.max_retries = v;
                Ok(())
            },
        ),
        provider(
            "max_retry_delay_seconds",
            |p| Some(p.max_retry_delay.as_secs()),
            |p, v| {
                p.max_retry_delay = Duration::from_secs(v);
                Ok(())
            },
        ),
        provider(
            "allowed_base_urls",
            |p| Some(texts(&p.allowed_base_urls)),
            |p, v| {
                p.allowed_base_urls = patterns(v)?;
                Ok(())
            },
        ),
    ]
}

/// A key of `[credentials.<name>]`.
fn credential<T>(
    key: &'static str,
    get: impl Fn(&CredentialSettings) -> Option<T> + 'static,
    set: impl Fn(&mut CredentialSettings, T) -> Result<(), ValueError> + 'static,
) -> Setting<CredentialSettings>
where
    T: Serialize + for<'de> Deserialize<'de> + 'static,
{
    Setting::new(key, get, set)
}

/// The keys of `[credentials.<name>]`: a key a model config may pick by name
/// (`config.credential = "NAME"`) for one provider. None has a flag.
pub fn credential_settings() -> Vec<Setting<CredentialSettings>> {
    vec![
        credential(
            "provider",
            |c| Some(c.provider.clone()).filter(|p| !p.is_empty()),
            |c, v: String| {
                let known = known_provider_names();
                if !known.contains(&v.as_str()) || v == "replay" {
                    return Err(format!(
                        "unknown provider `{v}`; providers called with a key: {}",
                        known
                            .iter()
                            .filter(|name| **name != "replay")
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                    .into());
                }
                c.provider = v;
                Ok(())
            },
        ),
        credential(
            "api_key",
            |c| c.api_key.clone(),
            |c, v: String| {
                c.api_key = Some(v).filter(|k| !k.is_empty());
                Ok(())
            },
        )
        .secret(),
        credential(
            "api_key_file",
            |c| c.api_key_file.clone(),
            |c, v: PathBuf| {
                c.file_key = Some(read_key_file(&v)?);
                c.api_key_file = Some(v);
                Ok(())
            },
        ),
        credential(
            "allowed_base_urls",
            |c| Some(texts(&c.allowed_base_urls)),
            |c, v| {
                c.allowed_base_urls = patterns(v)?;
                Ok(())
            },
        ),
    ]
}

/// Every credential is for a provider and has exactly one source for its key.
fn check_credentials(credentials: &HashMap<String, CredentialSettings>) -> Result<(), String> {
    let mut names: Vec<&String> = credentials.keys().collect();
    names.sort();
    for name in names {
        let credential = &credentials[name];
        if credential.provider.is_empty() {
            return Err(format!(
                "credentials.{name}: `provider` is missing (the provider the key is for)"
            ));
        }
        match (&credential.api_key, &credential.api_key_file) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "credentials.{name}: give `api_key` or `api_key_file`, not both"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "credentials.{name}: the key is missing: set `api_key_file` (a file only the \
                     server's user can read) or `api_key`"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// One `[[models.override]]` table.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideEntry {
    /// `name` or `namespace/name`.
    bundle: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// `provider/name`.
    model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config: Option<toml::Table>,
}

impl OverrideEntry {
    fn parse(value: toml::Value) -> Result<ModelOverride, String> {
        let entry = Self::deserialize(value).map_err(|e| e.message().to_owned())?;
        if entry.bundle.trim().is_empty() {
            return Err("`bundle` must not be empty".into());
        }
        let mut model = ModelSpec::parse(&entry.model)
            .ok_or_else(|| format!("model `{}` is not PROVIDER/NAME", entry.model))?;
        let known = known_provider_names();
        if !known.contains(&model.provider.as_str()) {
            return Err(format!(
                "unknown provider `{}`; known providers: {}",
                model.provider,
                known.join(", ")
            ));
        }
        if let Some(config) = entry.config {
            let json = serde_json::to_value(config).map_err(|e| format!("`config`: {e}"))?;
            model.config = json.as_object().cloned();
        }
        if let Some(found) = model.config.as_ref().and_then(secrets::find_secret) {
            return Err(format!(
                "`config.{}` {}: a model config is recorded with every turn, so keys go in \
                 [providers.<name>] (`api_key`, `api_key_env`) or [credentials.<name>] \
                 (picked with `credential = \"NAME\"`)",
                found.path,
                found.why()
            ));
        }
        Ok(ModelOverride {
            bundle: entry.bundle,
            agent: entry.agent.filter(|a| !a.is_empty()),
            model,
        })
    }
}

impl From<&ModelOverride> for OverrideEntry {
    fn from(rule: &ModelOverride) -> Self {
        let config = rule
            .model
            .config
            .as_ref()
            .and_then(|c| toml::Table::try_from(c).ok());
        Self {
            bundle: rule.bundle.clone(),
            agent: rule.agent.clone(),
            model: format!("{}/{}", rule.model.provider, rule.model.name),
            config,
        }
    }
}

/// One `[a2a.agents.NAME]` table: `url` with optional `headers`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct A2aAgentEntry {
    url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
}

impl A2aAgentEntry {
    fn parse(name: &str, value: toml::Value) -> Result<OperatorA2aAgent, String> {
        if let Some(problem) = odyssey_runtime::bundle::a2a_agent_name_problem(name) {
            return Err(format!("invalid agent name: {problem}"));
        }
        let entry = Self::deserialize(value).map_err(|e| e.message().to_owned())?;
        let parsed = reqwest::Url::parse(&entry.url).map_err(|e| {
            format!(
                "`url`: `{}` is not a URL: {e}",
                odyssey_runtime::secrets::mask_url(&entry.url)
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err("`url` must be an http or https URL".into());
        }
        Ok(OperatorA2aAgent {
            url: entry.url,
            headers: entry.headers,
        })
    }
}

impl From<&OperatorA2aAgent> for A2aAgentEntry {
    fn from(agent: &OperatorA2aAgent) -> Self {
        Self {
            url: agent.url.clone(),
            headers: agent.headers.clone(),
        }
    }
}

/// One `[mcp.servers.NAME]` table: `command` (with `env`) or `url` (with `headers`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpServerEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
}

impl McpServerEntry {
    fn parse(name: &str, value: toml::Value) -> Result<OperatorMcpServer, String> {
        if let Some(problem) = odyssey_runtime::bundle::mcp_server_name_problem(name) {
            return Err(format!("invalid server name: {problem}"));
        }
        let entry = Self::deserialize(value).map_err(|e| e.message().to_owned())?;
        match (entry.command, entry.url) {
            (Some(_), Some(_)) => Err("give `command` or `url`, not both".into()),
            (None, None) => Err("give `command` (a stdio server) or `url` (a remote one)".into()),
            (Some(command), None) => {
                if command.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err("`command` names no program".into());
                }
                if !entry.headers.is_empty() {
                    return Err("`headers` go with `url`, not `command`".into());
                }
                Ok(OperatorMcpServer {
                    command,
                    env: entry.env,
                    ..OperatorMcpServer::default()
                })
            }
            (None, Some(url)) => {
                let parsed = reqwest::Url::parse(&url)
                    .map_err(|e| format!("`url`: `{url}` is not a URL: {e}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!("`url`: `{url}` must be an http or https URL"));
                }
                if !entry.env.is_empty() {
                    return Err("`env` goes with `command`, not `url`".into());
                }
                Ok(OperatorMcpServer {
                    url: Some(url),
                    headers: entry.headers,
                    ..OperatorMcpServer::default()
                })
            }
        }
    }
}

impl From<&OperatorMcpServer> for McpServerEntry {
    fn from(server: &OperatorMcpServer) -> Self {
        Self {
            command: (!server.command.is_empty()).then(|| server.command.clone()),
            env: server.env.clone(),
            url: server.url.clone(),
            headers: server.headers.clone(),
        }
    }
}
