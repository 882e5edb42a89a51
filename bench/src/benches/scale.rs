//! Scale-out: the PostgreSQL store beside the file store, in one run.
//!
//! - **Turn overhead** on each store (the `overhead` method: Run's wall time less the model
//!   server's time on the turn's one call), one `odysseyd` on the file store, one replica on
//!   PostgreSQL.
//! - **Turns per second** on the file store, with one replica and with three (sessions
//!   spread over the replicas, each session's turns run through the replica it was created
//!   on, back to back), and what each turn costs the database: statements
//!   (`pg_stat_statements`, when the server loads it), transactions, rows written and WAL
//!   bytes, over the whole load less what the idle replicas cost over as long.
//! - **Cross-replica delivery**: the events of a turn running on one replica, received by a
//!   subscriber on another, timed against the events' `created_at`.
//! - **Failover**: the replica running a long turn is killed (SIGKILL); the time until the
//!   first event of the session's next turn, submitted on another replica, reaches a
//!   subscriber there, with a 2 s lease and the default 10 s one.
//!
//! Each cluster of replicas gets a fresh database (CREATE DATABASE) on the server the
//! harness is given, dropped afterwards; without a server the PostgreSQL figures are not
//! measured, and the report says so.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use odyssey_client::proto::session_event::Payload;
use odyssey_client::{OdysseyClient, proto as pb};
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script, StreamBuilder};
use serde_json::Value;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::daemon::{Daemon, MODEL_KEY};
use crate::database::{self, Cost, Database};
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::follow;
use crate::replies;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Turn overhead on PostgreSQL, p50, in milliseconds.
const OVERHEAD_P50_LIMIT_MS: f64 = 2.0;
/// Events of a turn on one replica reaching a subscriber on another, p99, milliseconds.
const DELIVERY_P99_LIMIT_MS: f64 = 10.0;
/// Failover may take the lease plus this.
const FAILOVER_SLACK_SECONDS: f64 = 1.0;
/// The short lease the failover is measured with (and the default one).
const SHORT_LEASE_SECONDS: u64 = 2;
const DEFAULT_LEASE_SECONDS: u64 = 10;
/// Client connections per replica the sessions' calls are spread over.
const CONNECTIONS_PER_REPLICA: usize = 2;
/// Time for every backend to report its counters (PostgreSQL's statistics of an idle
/// backend reach the shared counters at most 10 s late).
const STATS_FLUSH: Duration = Duration::from_secs(11);
/// The idle window the replicas' background cost is measured over.
const IDLE_WINDOW: Duration = Duration::from_secs(6);
/// The pace of the deltas of a delivery turn.
const DELTA_PACE: Duration = Duration::from_millis(5);
/// Delivery turns measured (after one not measured).
const DELIVERY_TURNS: usize = 3;
/// How long any awaited event may take (a bound of the harness, not a measurement).
const PATIENCE: Duration = Duration::from_secs(60);
/// Pings of the database measured from the harness.
const PINGS: usize = 200;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let fast = env::model(Script::repeat(MODEL_KEY, replies::short())).await?;
    let mut outcome = Outcome::default();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    // The file store: overhead and turns/s of one server.
    let home = env.home("scale-file")?;
    let daemon = env.daemon(&home, Some(&fast), &[]).await?;
    let file_overhead = overhead(&daemon, &fast, s.scale_turns, s.overhead_warmup).await?;
    daemon.stop().await?;
    let home = env.home("scale-file-load")?;
    let sessions = s.scale_sessions.max(1);
    let daemon = env
        .daemon(&home, Some(&fast), &worker_args(sessions))
        .await?;
    let file_load = load(env, &[&daemon], sessions).await?;
    daemon.stop().await?;

    outcome.figures.push(
        Figure::new(
            "turn overhead, file store",
            "ms",
            format!(
                "one odysseyd on the file store (home on the temporary folder's disk): Run's \
                 wall time at the client less the model server's time on the turn's one call; \
                 {} turns after {} not measured, {} per session",
                s.scale_turns, s.overhead_warmup, s.overhead_turns_per_session
            ),
        )
        .samples(Summary::of_millis(&file_overhead)),
    );

    let Some((admin_url, source)) = database::given_url(s.database_url.as_deref()) else {
        push_load(&mut outcome, "file store", &file_load, None, cores, s);
        outcome.notes.push(format!(
            "PostgreSQL figures not measured: no database server was given (--database-url, \
             or {} / {}). `scripts/test-postgres odyssey-bench scale ...` starts a throw-away \
             one.",
            database::URL_VARIABLES[0],
            database::URL_VARIABLES[1]
        ));
        return Ok(outcome);
    };

    // `pg_stat_statements` counts statements when the server loads it; a throw-away
    // cluster of `scripts/test-postgres` is made to load it (a restart).
    let mut statements_note = String::new();
    if let Some(ctl) = std::env::var_os("ODYSSEY_TEST_DATABASE_CTL")
        && source == "ODYSSEY_TEST_DATABASE_URL"
    {
        match database::load_statements(&admin_url, std::path::Path::new(&ctl)).await {
            Ok(true) => {}
            Ok(false) => {
                statements_note = "the server has no pg_stat_statements; ".to_owned();
            }
            Err(e) => statements_note = format!("pg_stat_statements could not be loaded: {e}; "),
        }
    }

    // One replica: overhead, then turns/s and its database cost.
    let one = Cluster::start(env, &admin_url, "scale-1", 1, None, &fast, sessions).await?;
    let measured = async {
        let before = one.db.reading().await?;
        let overhead = overhead(&one.replicas[0], &fast, s.scale_turns, s.overhead_warmup).await?;
        let after = one.db.reading().await?;
        // Statements are counted at once (unlike transactions and rows): this is the
        // sequential turns' own, with the warm-up and the sessions' creation.
        let sequential = Cost::between(&before, &after, one.db.statements).per_turn(
            &Cost::default(),
            (s.scale_turns + s.overhead_warmup).max(1) as f64,
        );
        let pings = one.db.round_trips(PINGS).await?;
        let load = load_with_cost(env, &one, sessions).await?;
        Ok::<_, BenchError>((overhead, sequential, pings, load))
    }
    .await;
    let statements = one.db.statements;
    one.close().await?;
    let (pg_overhead, sequential, pings, one_load) = measured?;

    // Three replicas: turns/s and its database cost.
    let three = Cluster::start(env, &admin_url, "scale-3", 3, None, &fast, sessions).await?;
    let measured = load_with_cost(env, &three, sessions).await;
    three.close().await?;
    let three_load = measured?;

    // Three replicas on a model paced for delivery, with the default lease: delivery, then
    // failover.
    let scripted = env::model(Script::respond(MODEL_KEY, respond(s.scale_deltas))).await?;
    let mut paced =
        Cluster::start(env, &admin_url, "scale-delivery", 3, None, &scripted, 4).await?;
    let measured = async {
        let delivery = delivery(&paced).await?;
        let failover = failover(&mut paced).await?;
        Ok::<_, BenchError>((delivery, failover))
    }
    .await;
    paced.close().await?;
    let (delivery, failover_default) = measured?;

    // Two replicas with a short lease: failover.
    let mut short = Cluster::start(
        env,
        &admin_url,
        "scale-failover",
        2,
        Some(SHORT_LEASE_SECONDS),
        &scripted,
        4,
    )
    .await?;
    let measured = failover(&mut short).await;
    short.close().await?;
    let failover_short = measured?;

    // The figures.
    outcome.figures.push(
        Figure::new(
            "turn overhead, PostgreSQL",
            "ms",
            "as `turn overhead, file store`, on one replica serving from PostgreSQL (its \
             home on the same disk, the database on loopback)",
        )
        .samples(Summary::of_millis(&pg_overhead))
        .target(Statistic::P50, Bound::AtMost, OVERHEAD_P50_LIMIT_MS),
    );
    outcome.figures.push(
        Figure::new(
            "database round trip",
            "ms",
            format!(
                "a prepared `SELECT 1` from the harness to the same PostgreSQL, {PINGS} times: \
                 the floor of any statement a replica makes"
            ),
        )
        .samples(Summary::of_millis(&pings)),
    );
    push_load(&mut outcome, "file store", &file_load, None, cores, s);
    push_load(
        &mut outcome,
        "1 replica",
        &one_load.load,
        Some(&one_load),
        cores,
        s,
    );
    push_load(
        &mut outcome,
        "3 replicas",
        &three_load.load,
        Some(&three_load),
        cores,
        s,
    );
    outcome.figures.push(
        Figure::new(
            "turns/s, 3 replicas ÷ 1 replica",
            "ratio",
            format!("the two rates above, on the same {cores} cores"),
        )
        .value(three_load.load.rate / one_load.load.rate),
    );
    outcome.figures.push(
        Figure::new(
            "cross-replica delivery",
            "ms",
            format!(
                "per event of a turn running on replica r1 (a model streaming {} text deltas \
                 5 ms apart), received by a SubscribeSession stream on replica r2: the \
                 harness's clock when the event arrived less the event's `created_at` (set by \
                 r1 when it made the event; one machine, one clock); every event of {} turns \
                 after one not measured",
                s.scale_deltas, DELIVERY_TURNS
            ),
        )
        .samples(Summary::of(&delivery.cross))
        .target(Statistic::P99, Bound::AtMost, DELIVERY_P99_LIMIT_MS),
    );
    outcome.figures.push(
        Figure::new(
            "same-replica delivery",
            "ms",
            "the same events received by a subscriber on r1 itself, timed the same way",
        )
        .samples(Summary::of(&delivery.local)),
    );
    outcome.figures.push(
        Figure::new(
            "cross-replica delivery − same-replica delivery",
            "ms",
            "per event: when r2's subscriber got it less when r1's got it (the database's \
             part: the push, the notification, r2 reading the rows)",
        )
        .samples(Summary::of(&delivery.difference)),
    );
    for (lease, seconds) in [
        (SHORT_LEASE_SECONDS, failover_short),
        (DEFAULT_LEASE_SECONDS, failover_default),
    ] {
        outcome.figures.push(
            Figure::new(
                &format!("failover, lease {lease} s"),
                "s",
                format!(
                    "`[database] lease_seconds = {lease}`: SIGKILL of the replica running a \
                     long turn (streaming for 30 s) → the first event of the session's next \
                     turn, submitted on another replica right after the kill, received by a \
                     subscriber on that replica"
                ),
            )
            .value(seconds)
            .target(
                Statistic::Value,
                Bound::AtMost,
                lease as f64 + FAILOVER_SLACK_SECONDS,
            ),
        );
    }

    outcome.notes.push(format!(
        "Conditions: the harness (client and model servers), every odysseyd and PostgreSQL \
         share this machine's {cores} cores. A throw-away cluster of scripts/test-postgres runs \
         with fsync, synchronous_commit and full_page_writes off: the WAL bytes are what the \
         statements write, without the full-page images a production server (full_page_writes \
         on) adds after each checkpoint, and commits cost no disk flush, so latencies and \
         rates are optimistic against a durable server. The database's cost per turn is taken \
         over the whole load (warm-up included: every turn the replicas ran between the two \
         readings, each read once every backend had reported), less what the same replicas \
         cost while idle (heartbeats, the look for stopped replicas) over as long."
    ));
    push_costs(&mut outcome, "1 replica", &one_load, statements);
    push_costs(&mut outcome, "3 replicas", &three_load, statements);
    if !statements {
        outcome.notes.push(format!(
            "{statements_note}statements per turn are not counted (pg_stat_statements is \
             not loaded by the server); transactions per turn are a floor of its round trips"
        ));
    }
    outcome.notes.push(overhead_note(
        &file_overhead,
        &pg_overhead,
        &pings,
        &one_load,
        statements,
    ));
    if statements {
        let mut note = format!(
            "Statements of the overhead's turns (one at a time on one replica; per turn, \
             sessions' creation included, one every 32 turns): {:.1} statements, {:.3} ms \
             of the server's execution time. ",
            sequential.statements.unwrap_or_default(),
            sequential.statement_millis.unwrap_or_default()
        );
        note.push_str(&top_statements(&sequential, 12, false));
        outcome.notes.push(note);
    }
    Ok(outcome)
}

fn worker_args(workers: usize) -> Vec<String> {
    vec![
        "--worker-count".to_owned(),
        workers.max(1).to_string(),
        "--queue-capacity".to_owned(),
        (workers * 2).max(128).to_string(),
    ]
}

/// Replicas of one database, with a shared workspace root.
struct Cluster {
    db: Database,
    replicas: Vec<Daemon>,
}

impl Cluster {
    /// A fresh database and `count` replicas on it (`r1`, `r2`, ...), each with
    /// `sessions ÷ count` workers (at least one).
    async fn start(
        env: &Env,
        admin_url: &str,
        name: &str,
        count: usize,
        lease: Option<u64>,
        model: &OpenAiWireServer,
        sessions: usize,
    ) -> Result<Self> {
        let db = Database::create(admin_url).await?;
        let started = Self::replicas(env, &db, name, count, lease, model, sessions).await;
        match started {
            Ok(replicas) => Ok(Self { db, replicas }),
            Err(e) => {
                // The database goes; the error says why there are no replicas.
                let _ = db.drop().await;
                Err(e)
            }
        }
    }

    async fn replicas(
        env: &Env,
        db: &Database,
        name: &str,
        count: usize,
        lease: Option<u64>,
        model: &OpenAiWireServer,
        sessions: usize,
    ) -> Result<Vec<Daemon>> {
        let root = env.home(&format!("{name}-workspaces"))?;
        let mut common = vec![
            "--database-url".to_owned(),
            db.url.clone(),
            "--workspace-root".to_owned(),
            root.dir.display().to_string(),
        ];
        if let Some(seconds) = lease {
            let config = root.dir.with_extension("toml");
            std::fs::write(&config, format!("[database]\nlease_seconds = {seconds}\n"))
                .map_err(|e| BenchError::io("write", &config, e))?;
            common.push("--config".to_owned());
            common.push(config.display().to_string());
        }
        common.extend(worker_args(sessions.div_ceil(count)));
        let mut replicas = Vec::with_capacity(count);
        for i in 1..=count {
            let home = env.home(&format!("{name}-r{i}"))?;
            let mut args = common.clone();
            args.push("--replica-id".to_owned());
            args.push(format!("r{i}"));
            let mut spec = env.spec(&home, Some(model), &args);
            spec.env.push((
                "ODYSSEY_DATABASE_PASSWORD".to_owned(),
                PathBuf::from(&db.password),
            ));
            replicas.push(Daemon::start(&spec).await?);
        }
        Ok(replicas)
    }

    /// Stops the replicas still running, then drops the database.
    async fn close(self) -> Result<()> {
        let mut first = None;
        for replica in self.replicas {
            if let Err(e) = replica.stop().await {
                first.get_or_insert(e);
            }
        }
        let dropped = self.db.drop().await;
        match first {
            Some(e) => Err(e),
            None => dropped,
        }
    }
}

/// The overhead of `turns` turns (after `warmup` not measured) on `daemon`.
async fn overhead(
    daemon: &Daemon,
    model: &OpenAiWireServer,
    turns: usize,
    warmup: usize,
) -> Result<Vec<Duration>> {
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let mut samples = Vec::with_capacity(turns);
    let mut session = String::new();
    for i in 0..warmup + turns {
        if i % 32 == 0 {
            session = bundle::session(&client, &bundle).await?;
        }
        model.take_timings();
        let run = turn::run(&client, &session, "What is the answer?").await?;
        let calls = model.take_timings();
        if calls.len() != 1 {
            return Err(BenchError::check(format!(
                "a turn made {} model calls instead of one",
                calls.len()
            )));
        }
        if i >= warmup {
            samples.push(turn::overhead(run.wall, &calls));
        }
    }
    Ok(samples)
}

/// Turns run back to back in many sessions at once.
struct Load {
    /// Turns per second over the measured window.
    rate: f64,
    /// Run's wall time of the measured window's turns.
    latencies: Vec<Duration>,
    /// Every turn of the load, warm-up included.
    turns: usize,
    replicas: usize,
}

/// Turns/s over `replicas`: `sessions` sessions, session i created on and run through
/// replica i mod n, each running turns back to back.
async fn load(env: &Env, replicas: &[&Daemon], sessions: usize) -> Result<Load> {
    let s = &env.settings;
    let mut clients: Vec<Vec<OdysseyClient>> = Vec::with_capacity(replicas.len());
    for replica in replicas {
        let mut own = Vec::with_capacity(CONNECTIONS_PER_REPLICA);
        for _ in 0..CONNECTIONS_PER_REPLICA {
            own.push(replica.client().await?);
        }
        clients.push(own);
    }
    let bundle = bundle::install(&clients[0][0], Tools::None).await?;
    let mut ids = Vec::with_capacity(sessions);
    for i in 0..sessions {
        let client = &clients[i % replicas.len()][(i / replicas.len()) % CONNECTIONS_PER_REPLICA];
        ids.push((client.clone(), bundle::session(client, &bundle).await?));
    }
    let warmup = Duration::from_secs_f64(s.throughput_warmup_seconds);
    let measured = Duration::from_secs_f64(s.scale_seconds.max(0.5));
    let start = Instant::now();
    let (from, until) = (start + warmup, start + warmup + measured);
    let mut tasks = Vec::with_capacity(sessions);
    for (client, id) in ids {
        tasks.push(tokio::spawn(async move {
            let mut done: Vec<(Instant, Duration)> = Vec::new();
            while Instant::now() < until {
                let run = turn::run(&client, &id, "What is the answer?").await?;
                done.push((Instant::now(), run.wall));
            }
            Ok::<_, BenchError>(done)
        }));
    }
    let mut ended = Vec::new();
    for task in tasks {
        let done = task
            .await
            .map_err(|e| BenchError::check(format!("a session's task failed: {e}")))??;
        ended.extend(done);
    }
    let in_window: Vec<&(Instant, Duration)> = ended
        .iter()
        .filter(|(at, _)| *at >= from && *at < until)
        .collect();
    Ok(Load {
        rate: in_window.len() as f64 / measured.as_secs_f64(),
        latencies: in_window.iter().map(|(_, wall)| *wall).collect(),
        turns: ended.len(),
        replicas: replicas.len(),
    })
}

/// A load and what it cost the database.
struct LoadCost {
    load: Load,
    /// Per turn, less the idle replicas' cost.
    per_turn: Cost,
    /// What the idle replicas cost, per second.
    idle_per_second: Cost,
}

async fn load_with_cost(env: &Env, cluster: &Cluster, sessions: usize) -> Result<LoadCost> {
    let statements = cluster.db.statements;
    // Everything before (starts, migrations, the overhead's turns) reported, then the
    // replicas idle for a while: their background cost.
    tokio::time::sleep(STATS_FLUSH).await;
    let idle_from = cluster.db.reading().await?;
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_to = cluster.db.reading().await?;
    let idle = Cost::between(&idle_from, &idle_to, statements);
    let replicas: Vec<&Daemon> = cluster.replicas.iter().collect();
    let load = load(env, &replicas, sessions).await?;
    tokio::time::sleep(STATS_FLUSH).await;
    let after = cluster.db.reading().await?;
    let whole = Cost::between(&idle_to, &after, statements);
    let per_turn = whole.per_turn(&idle, load.turns.max(1) as f64);
    let idle_per_second = idle.per_turn(&Cost::default(), idle.seconds.max(1e-9));
    Ok(LoadCost {
        load,
        per_turn,
        idle_per_second,
    })
}

fn push_load(
    outcome: &mut Outcome,
    label: &str,
    load: &Load,
    cost: Option<&LoadCost>,
    cores: usize,
    s: &crate::settings::Settings,
) {
    let sessions = s.scale_sessions.max(1);
    let spread = if load.replicas > 1 {
        format!(
            ", spread over {} replicas (each session created on and run through one, \
             {CONNECTIONS_PER_REPLICA} connections per replica)",
            load.replicas
        )
    } else {
        format!(" over {CONNECTIONS_PER_REPLICA} connections")
    };
    outcome.figures.push(
        Figure::new(
            &format!("turns/s, {label}"),
            "turns/s",
            format!(
                "turns completed in the measured {:.0} s (after {:.0} s of warm-up) ÷ its \
                 length; {sessions} sessions each running turns back to back through Run{spread}; \
                 an instant model; {cores} cores shared by everything",
                s.scale_seconds, s.throughput_warmup_seconds
            ),
        )
        .value(load.rate),
    );
    outcome.figures.push(
        Figure::new(
            &format!("turn latency under load, {label}"),
            "ms",
            "Run's wall time of the measured turns",
        )
        .samples(Summary::of_millis(&load.latencies)),
    );
    let Some(cost) = cost else {
        return;
    };
    let c = &cost.per_turn;
    if let Some(statements) = c.statements {
        outcome.figures.push(
            Figure::new(
                &format!("statements per turn, {label}"),
                "statements",
                "statements the replicas executed (pg_stat_statements calls in the \
                 benchmark's database) ÷ turns: the turn's round trips to the database",
            )
            .value(statements),
        );
    }
    if let Some(millis) = c.statement_millis {
        outcome.figures.push(
            Figure::new(
                &format!("database execution time per turn, {label}"),
                "ms",
                "pg_stat_statements total_exec_time of those statements ÷ turns: the \
                 server's own time, without the round trips",
            )
            .value(millis),
        );
    }
    outcome.figures.push(
        Figure::new(
            &format!("transactions per turn, {label}"),
            "transactions",
            "xact_commit + xact_rollback of pg_stat_database ÷ turns (a statement outside \
             a transaction is one)",
        )
        .value(c.transactions),
    );
    outcome.figures.push(
        Figure::new(
            &format!("rows written per turn, {label}"),
            "rows",
            "n_tup_ins + n_tup_upd + n_tup_del of pg_stat_user_tables, all tables, ÷ turns",
        )
        .value(c.rows),
    );
    outcome.figures.push(
        Figure::new(
            &format!("WAL bytes per turn, {label}"),
            "bytes",
            "pg_wal_lsn_diff of pg_current_wal_lsn() after and before ÷ turns \
             (full_page_writes off: no full-page images)",
        )
        .value(c.wal_bytes),
    );
}

/// The per-table and per-statement breakdown of a load's cost, as a note.
fn push_costs(outcome: &mut Outcome, label: &str, cost: &LoadCost, statements: bool) {
    let c = &cost.per_turn;
    let idle = &cost.idle_per_second;
    let mut note = format!(
        "Database cost per turn, {label} ({} turns in all, {:.0} s between the readings): \
         {:.1} transactions, {:.1} rows, {:.0} WAL bytes{}. Rows per turn by table \
         (inserted/updated/deleted): ",
        cost.load.turns,
        c.seconds,
        c.transactions,
        c.rows,
        c.wal_bytes,
        c.statements
            .map(|n| format!(", {n:.1} statements"))
            .unwrap_or_default()
    );
    let tables: Vec<String> = c
        .tables
        .iter()
        .filter(|(_, n)| n.iter().sum::<f64>() >= 0.05)
        .map(|(name, n)| format!("{name} {:.1}/{:.1}/{:.1}", n[0], n[1], n[2]))
        .collect();
    note.push_str(&tables.join(", "));
    note.push_str(&format!(
        ". The idle replicas cost {:.1} transactions/s{}, {:.1} rows/s and {:.0} WAL bytes/s \
         (subtracted).",
        idle.transactions,
        idle.statements
            .map(|n| format!(", {n:.1} statements/s"))
            .unwrap_or_default(),
        idle.rows,
        idle.wal_bytes
    ));
    if statements {
        note.push(' ');
        note.push_str(&top_statements(c, 8, false));
        note.push(' ');
        note.push_str(&top_statements(c, 5, true));
    }
    outcome.notes.push(note);
}

/// The `count` statements of `cost` made most often (or, `by_time`, taking the most of
/// the server's execution time), per turn.
fn top_statements(cost: &Cost, count: usize, by_time: bool) -> String {
    let mut top: Vec<(&String, &(f64, f64))> = cost.by_statement.iter().collect();
    if by_time {
        top.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    } else {
        top.sort_by(|a, b| b.1.0.total_cmp(&a.1.0));
    }
    let lines: Vec<String> = top
        .iter()
        .filter(|(_, (calls, _))| *calls >= 0.01)
        .take(count)
        .map(|(text, (calls, millis))| {
            format!(
                "{calls:.2}×/turn, {millis:.3} ms/turn: `{}`",
                one_line(text, 150)
            )
        })
        .collect();
    format!(
        "Statements per turn, {}: {}.",
        if by_time {
            "most execution time first"
        } else {
            "most frequent first"
        },
        lines.join("; ")
    )
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat.replace('`', "'");
    }
    let cut: String = flat.chars().take(max).collect();
    format!("{}…", cut.replace('`', "'"))
}

fn overhead_note(
    file: &[Duration],
    pg: &[Duration],
    pings: &[Duration],
    one: &LoadCost,
    statements: bool,
) -> String {
    let p50 = |d: &[Duration]| Summary::of_millis(d).map_or(f64::NAN, |s| s.p50);
    let (file, pg, ping) = (p50(file), p50(pg), p50(pings));
    let c = &one.per_turn;
    let trips = c.statements.unwrap_or(c.transactions);
    let what = if statements {
        "statements"
    } else {
        "transactions (a floor of the statements)"
    };
    format!(
        "Where PostgreSQL's overhead goes: p50 {pg:.3} ms against {file:.3} ms on the file \
         store (+{:.3} ms). A turn makes {trips:.1} {what} under load; at the harness's \
         `SELECT 1` round trip of {ping:.3} ms that is {:.3} ms if they were made one after \
         the other{}. Statements made in the turn's path one after another add their round \
         trips to its wall time; those batched or made off the path do not.",
        pg - file,
        trips * ping,
        c.statement_millis
            .map(|m| format!(", plus {m:.3} ms of the server's execution time"))
            .unwrap_or_default()
    )
}

/// The scripted model: "slow" streams for 30 s; "paced" streams `deltas` deltas 5 ms
/// apart; anything else answers at once.
fn respond(deltas: usize) -> impl Fn(&Value) -> Reply + Send + Sync + 'static {
    move |request: &Value| {
        let prompt = last_prompt(request);
        if prompt.contains("slow") {
            let mut reply = StreamBuilder::new();
            for _ in 0..600 {
                reply = reply.text("slow ", 1).pause(Duration::from_millis(50));
            }
            reply.finish("stop").done().build()
        } else if prompt.contains("paced") {
            let mut reply = StreamBuilder::new();
            for _ in 0..deltas.max(1) {
                reply = reply.text("abc ", 1).pause(DELTA_PACE);
            }
            reply.finish("stop").done().build()
        } else {
            replies::short()
        }
    }
}

/// The text of a chat-completions request's last message.
fn last_prompt(request: &Value) -> String {
    let Some(last) = request["messages"].as_array().and_then(|m| m.last()) else {
        return String::new();
    };
    match &last["content"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Per event, in milliseconds.
struct Delivery {
    cross: Vec<f64>,
    local: Vec<f64>,
    difference: Vec<f64>,
}

/// Turns on r1, followed on r2 (another replica) and on r1.
async fn delivery(cluster: &Cluster) -> Result<Delivery> {
    let writer = cluster.replicas[0].client().await?;
    let other = cluster.replicas[1].client().await?;
    let bundle = bundle::install(&writer, Tools::None).await?;
    let mut result = Delivery {
        cross: Vec::new(),
        local: Vec::new(),
        difference: Vec::new(),
    };
    for run in 0..=DELIVERY_TURNS {
        let session = bundle::session(&writer, &bundle).await?;
        let far = tokio::spawn(timed(follow::subscribe(&other, &session, 0).await?));
        let near = tokio::spawn(timed(follow::subscribe(&writer, &session, 0).await?));
        let status = tokio::time::timeout(
            PATIENCE,
            turn::run(&writer, &session, "Write at a steady pace: paced."),
        )
        .await
        .map_err(|_| BenchError::check("a delivery turn did not end"))??;
        let far = joined(far).await?;
        let near = joined(near).await?;
        for (name, got) in [("r2", &far), ("r1", &near)] {
            let sequences: Vec<u64> = got.iter().map(|e| e.0).collect();
            let expected: Vec<u64> = (1..=status.status.last_sequence).collect();
            if sequences != expected {
                return Err(BenchError::check(format!(
                    "the subscriber on {name} got {} events, not the log's {} in order",
                    sequences.len(),
                    expected.len()
                )));
            }
        }
        if run == 0 {
            continue;
        }
        let near: BTreeMap<u64, (f64, Instant)> = near
            .into_iter()
            .map(|(seq, ms, at)| (seq, (ms, at)))
            .collect();
        for (seq, ms, at) in far {
            result.cross.push(ms);
            if let Some((local, local_at)) = near.get(&seq) {
                result.local.push(*local);
                let difference = if at >= *local_at {
                    at.duration_since(*local_at).as_secs_f64() * 1e3
                } else {
                    -(local_at.duration_since(at).as_secs_f64() * 1e3)
                };
                result.difference.push(difference);
            }
        }
    }
    Ok(result)
}

/// Reads a stream to its first `turn_completed`: per event, (sequence, ms from its
/// `created_at` to its arrival, when it arrived).
async fn timed(mut stream: odyssey_client::EventStream) -> Result<Vec<(u64, f64, Instant)>> {
    let mut got = Vec::new();
    loop {
        let event = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .map_err(|_| BenchError::check("no event for a minute"))?
            .context("read the event stream")?
            .ok_or_else(|| BenchError::check("the event stream ended early"))?;
        let (now, at) = (SystemTime::now(), Instant::now());
        let created = created_at(&event)?;
        let ms = match now.duration_since(created) {
            Ok(d) => d.as_secs_f64() * 1e3,
            Err(e) => -(e.duration().as_secs_f64() * 1e3),
        };
        got.push((event.sequence, ms, at));
        if matches!(event.payload, Some(Payload::TurnCompleted(_))) {
            return Ok(got);
        }
    }
}

fn created_at(event: &pb::SessionEvent) -> Result<SystemTime> {
    let stamp = event
        .created_at
        .as_ref()
        .ok_or_else(|| BenchError::check(format!("event {} has no created_at", event.sequence)))?;
    let seconds = u64::try_from(stamp.seconds)
        .map_err(|_| BenchError::check("an event created before 1970"))?;
    let nanos = u64::try_from(stamp.nanos).unwrap_or(0);
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_nanos(nanos))
}

async fn joined<T>(task: tokio::task::JoinHandle<Result<T>>) -> Result<T> {
    task.await
        .map_err(|e| BenchError::check(format!("a subscriber's task failed: {e}")))?
}

/// Kills r1 while it runs a long turn; the seconds until the first event of the session's
/// next turn, submitted on r2, reach r2's subscriber. The killed turn must end interrupted.
async fn failover(cluster: &mut Cluster) -> Result<f64> {
    if cluster.replicas.len() < 2 {
        return Err(BenchError::check("failover needs two replicas"));
    }
    let first = cluster.replicas[0].client().await?;
    let second = cluster.replicas[1].client().await?;
    let bundle = bundle::install(&first, Tools::None).await?;
    let session = bundle::session(&first, &bundle).await?;
    // A turn on each replica first, so that both have the session open.
    turn::run(&first, &session, "Warm up.").await?;
    turn::run(&second, &session, "Warm up again.").await?;
    let mut stream = follow::subscribe(&second, &session, 0).await?;
    let killed = submit(&first, &session, "Take your time: slow.").await?;
    read_until(&mut stream, |e| {
        e.turn_id == killed && matches!(e.payload, Some(Payload::AgentMessageDelta(_)))
    })
    .await?;
    cluster.replicas.remove(0).kill().await?;
    let killed_at = Instant::now();
    let next = submit(&second, &session, "After the kill.").await?;
    let seen = read_until(&mut stream, |e| e.turn_id == next).await?;
    let failover = killed_at.elapsed().as_secs_f64();
    let mut rest = read_until(&mut stream, |e| {
        e.turn_id == next && matches!(e.payload, Some(Payload::TurnCompleted(_)))
    })
    .await?;
    rest.extend(seen);
    let interrupted = rest.iter().any(|e| {
        e.turn_id == killed
            && matches!(&e.payload, Some(Payload::TurnCompleted(done))
                if done.outcome == pb::TurnOutcome::Interrupted as i32)
    });
    if !interrupted {
        return Err(BenchError::check(
            "the killed replica's turn was not recorded as interrupted",
        ));
    }
    Ok(failover)
}

async fn submit(client: &OdysseyClient, session: &str, prompt: &str) -> Result<String> {
    Ok(client
        .submit(session, prompt, pb::TurnOverrides::default())
        .await
        .context("Submit")?
        .execution_id)
}

/// Reads until `until` accepts an event; returns the events read.
async fn read_until(
    stream: &mut odyssey_client::EventStream,
    until: impl Fn(&pb::SessionEvent) -> bool,
) -> Result<Vec<pb::SessionEvent>> {
    let deadline = Instant::now() + PATIENCE;
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout_at(deadline.into(), stream.next())
            .await
            .map_err(|_| BenchError::check("the awaited event did not come within a minute"))?
            .context("read the event stream")?
            .ok_or_else(|| BenchError::check("the event stream ended early"))?;
        let done = until(&event);
        seen.push(event);
        if done {
            return Ok(seen);
        }
    }
}
