//! `odyssey info`: what the server is: its version, capacity, sandbox, how workspaces are
//! snapshotted, and where it keeps sessions (the store, and the replicas sharing it).

use std::time::SystemTime;

use super::error::CliError;
use super::output::Output;
use super::{Global, json, time};
use odyssey_client::proto as pb;

pub(crate) async fn run(global: &Global, output: &mut Output<'_>) -> Result<(), CliError> {
    let info = global.connect().await?.server_info().await?;
    if output.json {
        output.json_line(&json::message(&info)?)?;
        return Ok(());
    }
    for line in lines(&info, SystemTime::now()) {
        output.line(line)?;
    }
    Ok(())
}

/// The server's information as `name: value` lines.
fn lines(info: &pb::GetServerInfoResponse, now: SystemTime) -> Vec<String> {
    let mut lines = vec![
        format!("version: {}", info.version),
        format!("started: {}", time::rfc3339(info.started_at.as_ref())),
    ];
    if let Some(limits) = &info.limits {
        lines.push(format!(
            "turns: {} running, {} queued (workers {}, queue capacity {})",
            limits.running, limits.queued, limits.worker_count, limits.queue_capacity
        ));
    }
    if let Some(sandbox) = &info.sandbox {
        let yes_no = |on: bool| if on { "yes" } else { "no" };
        lines.push(format!(
            "sandbox: bubblewrap {}, landlock {}, seccomp {}",
            yes_no(sandbox.bubblewrap),
            yes_no(sandbox.landlock),
            yes_no(sandbox.seccomp)
        ));
    }
    if let Some(snapshots) = &info.workspace_snapshots {
        let mechanism = match pb::SnapshotMechanism::try_from(snapshots.mechanism) {
            Ok(pb::SnapshotMechanism::Disabled) => "off",
            Ok(pb::SnapshotMechanism::Copies) => "copies",
            Ok(pb::SnapshotMechanism::Overlay) => "overlay",
            _ => "unknown",
        };
        lines.push(format!("workspace snapshots: {mechanism}"));
    }
    if !info.providers.is_empty() {
        lines.push(format!("providers: {}", info.providers.join(", ")));
    }
    if let Some(store) = &info.store {
        lines.push(format!("store: {}", store_line(store, now)));
    }
    if !info.quarantined_sessions.is_empty() {
        lines.push(format!(
            "quarantined sessions: {}",
            info.quarantined_sessions.len()
        ));
    }
    lines
}

/// `files`, or `postgres (replica r1; replicas: r1 alive, r2 dead (last seen 3m ago))`.
fn store_line(store: &pb::StoreInfo, now: SystemTime) -> String {
    if store.replica_id.is_empty() && store.replicas.is_empty() {
        return store.kind.clone();
    }
    let replicas = if store.replicas.is_empty() {
        "none seen".to_owned()
    } else {
        store
            .replicas
            .iter()
            .map(|r| {
                if r.alive {
                    format!("{} alive", r.id)
                } else {
                    format!(
                        "{} dead (last seen {} ago)",
                        r.id,
                        time::age(r.last_seen.as_ref(), now)
                    )
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "{} (replica {}; replicas: {replicas})",
        store.kind, store.replica_id
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn replica(id: &str, alive: bool, seen_secs: i64) -> pb::ReplicaInfo {
        pb::ReplicaInfo {
            id: id.to_owned(),
            last_seen: Some(prost_types::Timestamp {
                seconds: seen_secs,
                nanos: 0,
            }),
            alive,
        }
    }

    #[test]
    fn the_store_line_names_the_replica_and_each_one_it_sees() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let files = pb::StoreInfo {
            kind: "files".to_owned(),
            ..pb::StoreInfo::default()
        };
        assert_eq!(store_line(&files, now), "files");
        let shared = pb::StoreInfo {
            kind: "postgres".to_owned(),
            replica_id: "r1".to_owned(),
            replicas: vec![
                replica("r1", true, 999),
                replica("r2", true, 998),
                replica("r3", false, 820),
            ],
        };
        assert_eq!(
            store_line(&shared, now),
            "postgres (replica r1; replicas: r1 alive, r2 alive, r3 dead (last seen 3m ago))"
        );
        let unanswered = pb::StoreInfo {
            replicas: Vec::new(),
            ..shared
        };
        assert_eq!(
            store_line(&unanswered, now),
            "postgres (replica r1; replicas: none seen)"
        );
    }
}
