//! The PostgreSQL database of the `scale` benchmark: a fresh database per cluster of
//! replicas (created and dropped through the URL the harness is given), and readings of
//! what the replicas cost it (statements, transactions, rows, WAL bytes).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

use crate::error::{BenchError, Result};

/// Where the harness finds a database: `--database-url`, else these variables, in order.
pub const URL_VARIABLES: [&str; 2] = ["ODYSSEY_BENCH_DATABASE_URL", "ODYSSEY_TEST_DATABASE_URL"];

/// The database URL the harness was given, if any, and where it came from.
pub fn given_url(flag: Option<&str>) -> Option<(String, &'static str)> {
    if let Some(url) = flag.filter(|u| !u.is_empty()) {
        return Some((url.to_owned(), "--database-url"));
    }
    URL_VARIABLES.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|u| !u.is_empty())
            .map(|u| (u, *name))
    })
}

/// `url` with its password, if any, replaced by `***` (for what is printed or written).
pub fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // A URL with a password has a host, so setting one succeeds.
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

fn query(context: &'static str) -> impl Fn(tokio_postgres::Error) -> BenchError {
    move |e| BenchError::check(format!("PostgreSQL: {context}: {e}"))
}

async fn connect(url: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| BenchError::check(format!("connect to {}: {e}", redact(url))))?;
    tokio::spawn(async move {
        // The connection ends when its client is dropped; an error then is reported by
        // the client's next call.
        let _ = connection.await;
    });
    Ok(client)
}

/// A database of its own on the server the harness was given, dropped by [`Database::drop`].
pub struct Database {
    admin_url: String,
    pub name: String,
    /// Its URL without the password (what replicas are given).
    pub url: String,
    /// The password (given to replicas in `ODYSSEY_DATABASE_PASSWORD`).
    pub password: String,
    /// A connection to it, as the server's administrator, for the readings.
    stats: Client,
    /// Whether `pg_stat_statements` counts this database's statements.
    pub statements: bool,
}

impl Database {
    /// Creates a fresh database named `bench_scale_<uuid>`.
    pub async fn create(admin_url: &str) -> Result<Self> {
        let mut url = reqwest::Url::parse(admin_url)
            .map_err(|e| BenchError::check(format!("database URL {}: {e}", redact(admin_url))))?;
        let password = url.password().unwrap_or_default().to_owned();
        let name = format!("bench_scale_{}", uuid::Uuid::new_v4().simple());
        let admin = connect(admin_url).await?;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .map_err(query("create the benchmark's database"))?;
        url.set_path(&name);
        let with_password = url.to_string();
        url.set_password(None)
            .map_err(|()| BenchError::check("the database URL has no host"))?;
        let stats = connect(&with_password).await?;
        let statements = match preloaded_statements(&stats).await? {
            true => {
                stats
                    .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                    .await
                    .map_err(query("create extension pg_stat_statements"))?;
                true
            }
            false => false,
        };
        Ok(Self {
            admin_url: admin_url.to_owned(),
            name,
            url: url.to_string(),
            password,
            stats,
            statements,
        })
    }

    /// Drops the database (and with it every connection still open to it).
    pub async fn drop(self) -> Result<()> {
        drop(self.stats);
        let admin = connect(&self.admin_url).await?;
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await
            .map_err(query("drop the benchmark's database"))
    }

    /// The database's counters now.
    pub async fn reading(&self) -> Result<Reading> {
        let at = Instant::now();
        let row = self
            .stats
            .query_one(
                "SELECT (xact_commit + xact_rollback)::bigint, pg_current_wal_lsn()::text
                 FROM pg_stat_database WHERE datname = current_database()",
                &[],
            )
            .await
            .map_err(query("read pg_stat_database"))?;
        let transactions: i64 = row.get(0);
        let lsn: String = row.get(1);
        let mut tables = BTreeMap::new();
        for row in self
            .stats
            .query(
                "SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables",
                &[],
            )
            .await
            .map_err(query("read pg_stat_user_tables"))?
        {
            let counts = [row.get::<_, i64>(1), row.get(2), row.get(3)].map(|n| n.max(0) as u64);
            tables.insert(row.get::<_, String>(0), counts);
        }
        let mut statements = BTreeMap::new();
        if self.statements {
            for row in self
                .stats
                .query(
                    "SELECT query, calls, total_exec_time FROM pg_stat_statements
                     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    &[],
                )
                .await
                .map_err(query("read pg_stat_statements"))?
            {
                let text: String = row.get(0);
                let calls: i64 = row.get(1);
                let millis: f64 = row.get(2);
                let entry = statements.entry(text).or_insert((0u64, 0.0f64));
                entry.0 += calls.max(0) as u64;
                entry.1 += millis;
            }
        }
        Ok(Reading {
            at,
            transactions: transactions.max(0) as u64,
            wal: parse_lsn(&lsn)?,
            tables,
            statements,
        })
    }

    /// Round trips of a bare `SELECT 1` from the harness, the floor of any statement.
    pub async fn round_trips(&self, count: usize) -> Result<Vec<Duration>> {
        let statement = self
            .stats
            .prepare("SELECT 1")
            .await
            .map_err(query("prepare SELECT 1"))?;
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            let started = Instant::now();
            self.stats
                .query_one(&statement, &[])
                .await
                .map_err(query("SELECT 1"))?;
            times.push(started.elapsed());
        }
        Ok(times)
    }
}

/// Whether the server loads `pg_stat_statements` (it must be preloaded to count).
async fn preloaded_statements(client: &Client) -> Result<bool> {
    let row = client
        .query_one(
            "SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'",
            &[],
        )
        .await
        .map_err(query("read shared_preload_libraries"))?;
    let libraries: String = row.get(0);
    Ok(libraries
        .split(',')
        .any(|l| l.trim().trim_matches('"') == "pg_stat_statements"))
}

/// Loads `pg_stat_statements` in a throw-away cluster that `ctl` (the `stop|start` script
/// of `scripts/test-postgres`) restarts: `ALTER SYSTEM`, then a restart. Returns whether
/// it is loaded afterwards.
pub async fn load_statements(admin_url: &str, ctl: &std::path::Path) -> Result<bool> {
    let admin = connect(admin_url).await?;
    if preloaded_statements(&admin).await? {
        return Ok(true);
    }
    let available = admin
        .query_opt(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_stat_statements'",
            &[],
        )
        .await
        .map_err(query("look for pg_stat_statements"))?
        .is_some();
    if !available {
        return Ok(false);
    }
    admin
        .batch_execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        .await
        .map_err(query("preload pg_stat_statements"))?;
    drop(admin);
    for action in ["stop", "start"] {
        let status = tokio::process::Command::new(ctl)
            .arg(action)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .await
            .map_err(|e| BenchError::io("run", ctl, e))?;
        if !status.success() {
            return Err(BenchError::check(format!(
                "{} {action} ended with {status}",
                ctl.display()
            )));
        }
    }
    let admin = connect(admin_url).await?;
    preloaded_statements(&admin).await
}

/// `X/Y` (hexadecimal halves) as a byte position.
fn parse_lsn(lsn: &str) -> Result<u64> {
    let (high, low) = lsn
        .split_once('/')
        .ok_or_else(|| BenchError::check(format!("WAL position {lsn:?}")))?;
    let part = |s: &str| {
        u64::from_str_radix(s, 16).map_err(|_| BenchError::check(format!("WAL position {lsn:?}")))
    };
    Ok((part(high)? << 32) + part(low)?)
}

/// The database's counters at one moment.
#[derive(Clone, Debug)]
pub struct Reading {
    pub at: Instant,
    /// Committed and rolled-back transactions of the database.
    pub transactions: u64,
    /// The server's WAL position (the whole cluster's).
    pub wal: u64,
    /// Per table: rows inserted, updated, deleted.
    pub tables: BTreeMap<String, [u64; 3]>,
    /// Per statement text: calls, milliseconds executing (with `pg_stat_statements`).
    pub statements: BTreeMap<String, (u64, f64)>,
}

/// What happened between two readings.
#[derive(Clone, Debug, Default)]
pub struct Cost {
    pub seconds: f64,
    pub transactions: f64,
    pub wal_bytes: f64,
    /// Rows inserted + updated + deleted, all tables.
    pub rows: f64,
    pub tables: BTreeMap<String, [f64; 3]>,
    /// Statements executed (with `pg_stat_statements`).
    pub statements: Option<f64>,
    pub statement_millis: Option<f64>,
    pub by_statement: BTreeMap<String, (f64, f64)>,
}

impl Cost {
    pub fn between(before: &Reading, after: &Reading, statements: bool) -> Self {
        let sub = |a: u64, b: u64| a.saturating_sub(b) as f64;
        let mut tables = BTreeMap::new();
        for (name, counts) in &after.tables {
            let earlier = before.tables.get(name).copied().unwrap_or_default();
            tables.insert(name.clone(), [0, 1, 2].map(|i| sub(counts[i], earlier[i])));
        }
        let mut by_statement = BTreeMap::new();
        for (text, (calls, millis)) in &after.statements {
            let (c0, m0) = before.statements.get(text).copied().unwrap_or_default();
            if *calls > c0 {
                by_statement.insert(text.clone(), (sub(*calls, c0), millis - m0));
            }
        }
        Self {
            seconds: after.at.duration_since(before.at).as_secs_f64(),
            transactions: sub(after.transactions, before.transactions),
            wal_bytes: sub(after.wal, before.wal),
            rows: tables.values().map(|c| c.iter().sum::<f64>()).sum(),
            statements: statements.then(|| by_statement.values().map(|(c, _)| c).sum()),
            statement_millis: statements.then(|| by_statement.values().map(|(_, m)| m).sum()),
            tables,
            by_statement,
        }
    }

    /// This cost less `background` (a cost measured while idle) for as long as this one
    /// lasted, then ÷ `turns`.
    pub fn per_turn(&self, background: &Cost, turns: f64) -> Cost {
        let scale = if background.seconds > 0.0 {
            self.seconds / background.seconds
        } else {
            0.0
        };
        let net = |a: f64, b: f64| (a - b * scale).max(0.0) / turns;
        let mut tables = BTreeMap::new();
        for (name, counts) in &self.tables {
            let idle = background.tables.get(name).copied().unwrap_or_default();
            tables.insert(name.clone(), [0, 1, 2].map(|i| net(counts[i], idle[i])));
        }
        let mut by_statement = BTreeMap::new();
        for (text, (calls, millis)) in &self.by_statement {
            let (c0, m0) = background
                .by_statement
                .get(text)
                .copied()
                .unwrap_or_default();
            by_statement.insert(text.clone(), (net(*calls, c0), net(*millis, m0)));
        }
        Cost {
            seconds: self.seconds,
            transactions: net(self.transactions, background.transactions),
            wal_bytes: net(self.wal_bytes, background.wal_bytes),
            rows: net(self.rows, background.rows),
            tables,
            statements: self
                .statements
                .map(|s| net(s, background.statements.unwrap_or_default())),
            statement_millis: self
                .statement_millis
                .map(|s| net(s, background.statement_millis.unwrap_or_default())),
            by_statement,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_shows() {
        assert_eq!(
            redact("postgres://odyssey:s3cret@127.0.0.1:5432/postgres"),
            "postgres://odyssey:***@127.0.0.1:5432/postgres"
        );
        assert_eq!(
            redact("postgres://odyssey@db.internal/odyssey"),
            "postgres://odyssey@db.internal/odyssey"
        );
        assert_eq!(redact("--rounds"), "--rounds");
    }

    #[test]
    fn wal_positions_are_bytes() {
        assert_eq!(parse_lsn("0/16B3748").ok(), Some(0x16B_3748));
        assert_eq!(parse_lsn("1/0").ok(), Some(1 << 32));
        assert!(parse_lsn("16B3748").is_err());
    }

    fn reading(at: Instant, transactions: u64, wal: u64, events: u64) -> Reading {
        Reading {
            at,
            transactions,
            wal,
            tables: BTreeMap::from([("events".to_owned(), [events, 0, 0])]),
            statements: BTreeMap::from([("COMMIT".to_owned(), (transactions, 1.0))]),
        }
    }

    #[test]
    fn per_turn_cost_leaves_out_the_idle_replicas() {
        let t0 = Instant::now();
        // Idle for 2 s: 10 transactions, 200 WAL bytes, no event.
        let idle = Cost::between(
            &reading(t0, 0, 0, 0),
            &reading(t0 + Duration::from_secs(2), 10, 200, 0),
            true,
        );
        // Loaded for 4 s with 100 turns: 20 of the 520 transactions are the idle ones'.
        let load = Cost::between(
            &reading(t0 + Duration::from_secs(2), 10, 200, 0),
            &reading(t0 + Duration::from_secs(6), 530, 10_600, 700),
            true,
        );
        let turn = load.per_turn(&idle, 100.0);
        assert!((turn.transactions - 5.0).abs() < 1e-9, "{turn:?}");
        assert!((turn.wal_bytes - 100.0).abs() < 1e-9, "{turn:?}");
        assert!((turn.rows - 7.0).abs() < 1e-9, "{turn:?}");
        assert_eq!(turn.statements.map(|s| (s * 1e6).round() / 1e6), Some(5.0));
    }
}
