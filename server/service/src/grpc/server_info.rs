//! `odyssey.v1.ServerService`.

use odyssey_api::v1 as pb;
use odyssey_api::v1::server_service_server::ServerService;
use tonic::{Request, Response, Status};

use super::convert;
use odyssey_runtime::OdysseyRuntime;
use odyssey_runtime::sandbox::SessionLimitsInfo;
use odyssey_runtime::snapshot::{SnapshotMechanism, SnapshotSettings};

pub struct ServerInfo {
    runtime: OdysseyRuntime,
    max_message_bytes: usize,
}

impl ServerInfo {
    pub fn new(runtime: OdysseyRuntime, max_message_bytes: usize) -> Self {
        Self {
            runtime,
            max_message_bytes,
        }
    }
}

#[tonic::async_trait]
impl ServerService for ServerInfo {
    async fn get_server_info(
        &self,
        _: Request<pb::GetServerInfoRequest>,
    ) -> Result<Response<pb::GetServerInfoResponse>, Status> {
        let info = self.runtime.server_info();
        let store = self.store_info(&info).await;
        let sandbox = &info.sandbox;
        Ok(Response::new(pb::GetServerInfoResponse {
            version: info.version.to_string(),
            started_at: Some(convert::timestamp(info.started_at)),
            limits: Some(pb::ServerLimits {
                worker_count: info.worker_count as u32,
                queue_capacity: info.queue_capacity as u32,
                max_request_bytes: self.max_message_bytes as u64,
                max_archive_bytes: info.max_archive_bytes,
                max_turn_steps: info.max_turn_steps,
                max_turn_duration_ms: info.max_turn_duration_ms,
                queued: info.queued as u32,
                running: info.running as u32,
                max_subagent_depth: info.max_subagent_depth,
                max_concurrent_subagents: info.max_concurrent_subagents,
            }),
            sandbox: Some(pb::SandboxCapabilities {
                bubblewrap: sandbox.bubblewrap,
                landlock: sandbox.landlock,
                seccomp: sandbox.seccomp,
                forced_mode: sandbox.forced_mode.map_or(0, convert::sandbox_mode),
                danger_full_access_allowed: sandbox.danger_full_access_allowed,
                notes: sandbox.notes.clone(),
                session_limits: Some(session_limits(&sandbox.session_limits)),
            }),
            quarantined_sessions: info
                .quarantined
                .iter()
                .map(|q| pb::QuarantinedSession {
                    session_id: q.session_id.clone(),
                    reason: q.reason.clone(),
                    quarantined_at: Some(convert::timestamp_ms(q.quarantined_at_ms)),
                })
                .collect(),
            providers: info.providers.clone(),
            activity: Some(pb::ServerActivity {
                tasks: info.activity.tasks as u64,
                open_sessions: info.activity.open_sessions as u32,
                subscriptions: info.activity.subscriptions as u32,
            }),
            workspace_snapshots: Some(workspace_snapshots(
                &info.snapshots,
                info.snapshot_mechanism,
            )),
            store: Some(store),
        }))
    }
}

impl ServerInfo {
    /// The store and the replicas it sees. The list is read from the store; when the store
    /// cannot answer, the rest of the server's information is still worth having, so the
    /// error is logged and the list left empty.
    async fn store_info(&self, info: &odyssey_runtime::ServerInfo) -> pb::StoreInfo {
        let replicas = match self.runtime.replicas().await {
            Ok(replicas) => replicas,
            Err(error) => {
                tracing::warn!(%error, "cannot list the replicas sharing the store");
                Vec::new()
            }
        };
        pb::StoreInfo {
            kind: info.store.to_owned(),
            replica_id: info.replica_id.clone().unwrap_or_default(),
            replicas: replicas
                .into_iter()
                .map(|replica| pb::ReplicaInfo {
                    id: replica.id,
                    last_seen: Some(convert::timestamp_ms(replica.last_seen_ms)),
                    alive: replica.alive,
                })
                .collect(),
        }
    }
}

fn session_limits(limits: &SessionLimitsInfo) -> pb::SessionLimits {
    pb::SessionLimits {
        memory_cgroup_version: limits.memory_cgroup.map_or(0, |v| v.number()),
        pids_cgroup_version: limits.pids_cgroup.map_or(0, |v| v.number()),
        default_memory_mb: limits.default_memory_mb.unwrap_or(0),
        max_processes: limits.max_processes,
        max_concurrent_commands: limits.max_concurrent_commands.unwrap_or(0),
        processes_counted_per_command: limits.processes_counted_per_command,
    }
}

fn workspace_snapshots(
    settings: &SnapshotSettings,
    mechanism: SnapshotMechanism,
) -> pb::WorkspaceSnapshots {
    let mechanism = if !settings.enabled {
        pb::SnapshotMechanism::Disabled
    } else {
        match mechanism {
            SnapshotMechanism::Copies => pb::SnapshotMechanism::Copies,
            SnapshotMechanism::Overlay => pb::SnapshotMechanism::Overlay,
        }
    };
    pb::WorkspaceSnapshots {
        mechanism: mechanism as i32,
        max_turns: settings.max_turns as u64,
        max_bytes: settings.max_bytes,
        max_workspace_files: settings.max_workspace_files as u64,
        max_workspace_bytes: settings.max_workspace_bytes,
    }
}
