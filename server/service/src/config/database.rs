//! `[database]`: where the PostgreSQL database is, and who this server is among the
//! replicas sharing it. The URL names the server, the user and the database, never the
//! password: that comes from `ODYSSEY_DATABASE_PASSWORD` or `database.password_file`, so it
//! stays out of process lists, shell history, logs and `odyssey config show`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use odyssey_runtime::snapshot::{MechanismChoice, SnapshotSettings};
use odyssey_store_postgres::{
    DEFAULT_CLUSTER_QUEUE_LIMIT, DEFAULT_LEASE_TTL, DatabaseConfig, StoreError,
};

/// The environment variable holding the database password.
pub const PASSWORD_VARIABLE: &str = "ODYSSEY_DATABASE_PASSWORD";

/// Longest replica id the store accepts.
const MAX_REPLICA_ID_LEN: usize = 128;

/// Where the host name is read for the default replica id.
const HOSTNAME_FILE: &str = "/proc/sys/kernel/hostname";

/// The replica id when the host name gives none.
const FALLBACK_REPLICA_ID: &str = "odysseyd";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatabaseSettings {
    /// `postgres://USER@HOST[:PORT]/DATABASE[?sslmode=require]`, without a password.
    /// When set, `odysseyd` serves from this database.
    pub url: Option<String>,
    /// A file whose first line is the password (used when the variable is unset).
    pub password_file: Option<PathBuf>,
    /// This server's name among the replicas sharing the database (default: the host
    /// name); two replicas must never share one.
    pub replica_id: String,
    /// How long a session's lease lasts unless its holder renews it: how long a replica
    /// that died keeps its sessions before another takes them over.
    pub lease: Duration,
    /// Turns that may wait at once across every replica.
    pub cluster_queue_limit: usize,
    /// How long a running turn's writes wait for a database that cannot be reached
    /// before the turn fails.
    pub outage: Duration,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: None,
            password_file: None,
            replica_id: default_replica_id(),
            lease: DEFAULT_LEASE_TTL,
            cluster_queue_limit: DEFAULT_CLUSTER_QUEUE_LIMIT,
            outage: Duration::from_secs(30),
        }
    }
}

/// A database URL as the configuration accepts it: readable, and without a password.
pub fn check_url(url: &str) -> Result<String, String> {
    let config = DatabaseConfig::parse(url).map_err(|e| e.to_string())?;
    if config.has_password() {
        return Err(format!(
            "the database URL must not hold the password; give it in {PASSWORD_VARIABLE} or \
             database.password_file (a file only odysseyd's user can read)"
        ));
    }
    Ok(url.to_owned())
}

/// A replica id as the store accepts it: 1 to 128 letters, digits, `-`, `_` or `.`.
pub fn check_replica_id(id: &str) -> Result<String, String> {
    let fine =
        !id.is_empty() && id.len() <= MAX_REPLICA_ID_LEN && id.chars().all(allowed_in_replica_id);
    if fine {
        Ok(id.to_owned())
    } else {
        Err(format!(
            "`{id}` is not a replica id: 1 to {MAX_REPLICA_ID_LEN} letters, digits, `-`, `_` \
             or `.`"
        ))
    }
}

fn allowed_in_replica_id(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// The host name as a replica id: every character the id does not allow becomes `-`.
pub fn replica_id_of_host(host: &str) -> String {
    let id: String = host
        .trim()
        .chars()
        .map(|c| if allowed_in_replica_id(c) { c } else { '-' })
        .take(MAX_REPLICA_ID_LEN)
        .collect();
    if id.is_empty() {
        FALLBACK_REPLICA_ID.to_owned()
    } else {
        id
    }
}

fn default_replica_id() -> String {
    let host = std::fs::read_to_string(HOSTNAME_FILE).unwrap_or_default();
    replica_id_of_host(&host)
}

impl DatabaseSettings {
    /// The database to connect to, with its password from `env` (the variable) or the
    /// password file; `None` when no URL is configured.
    pub fn connect_config(
        &self,
        env: &BTreeMap<String, String>,
    ) -> Result<Option<DatabaseConfig>, StoreError> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let config = DatabaseConfig::parse(url)?;
        let config = match (
            env.get(PASSWORD_VARIABLE).filter(|p| !p.is_empty()),
            &self.password_file,
        ) {
            (Some(password), _) => config.with_password(password),
            (None, Some(file)) => config.with_password_file(file)?,
            (None, None) => config,
        };
        Ok(Some(config))
    }
}

/// How workspaces are snapshotted when sessions live in a database: by copies. Overlay
/// layers live under one replica's home and are mounted in that replica's own mount
/// namespace, so no other replica could see a session's workspace or its forks: `auto`
/// resolves to copies, and `overlay` is refused.
pub fn shared_store_snapshots(snapshots: &mut SnapshotSettings) -> Result<(), String> {
    match snapshots.mechanism {
        MechanismChoice::Auto => {
            snapshots.mechanism = MechanismChoice::Copies;
            Ok(())
        }
        MechanismChoice::Copies => Ok(()),
        MechanismChoice::Overlay => Err(
            "snapshots.mechanism is \"overlay\", but database.url is set: overlay layers live \
             under one replica's home and are mounted in its own mount namespace, so the other \
             replicas could not see a session's workspace; use \"copies\" or \"auto\" (which \
             picks copies with a database)"
                .to_owned(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_name_becomes_a_replica_id_the_store_accepts() {
        assert_eq!(
            replica_id_of_host("web-1.example.com\n"),
            "web-1.example.com"
        );
        assert_eq!(replica_id_of_host("my host/ü"), "my-host--");
        assert_eq!(replica_id_of_host("  \n"), FALLBACK_REPLICA_ID);
        let long = replica_id_of_host(&"a".repeat(300));
        assert_eq!(long.len(), MAX_REPLICA_ID_LEN);
        for host in ["web-1.example.com", "my host/ü", "", &"a".repeat(300)] {
            let id = replica_id_of_host(host);
            assert_eq!(check_replica_id(&id), Ok(id.clone()));
        }
    }

    #[test]
    fn a_replica_id_with_other_characters_is_refused_naming_what_is_allowed() {
        for bad in ["", "r 1", "r/1", "ré", &"r".repeat(129)] {
            let error = check_replica_id(bad).unwrap_err();
            assert!(error.contains("is not a replica id"), "{error}");
            assert!(error.contains("letters, digits"), "{error}");
        }
        assert_eq!(check_replica_id("r1.a_b-c"), Ok("r1.a_b-c".to_owned()));
    }
}
