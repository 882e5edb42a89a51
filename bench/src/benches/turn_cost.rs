//! A turn's own cost against model servers that behave like the ones users run
//! (`model_server.rs`: keep-alive SSE, a connection closed after every answer, TLS with
//! HTTP/2), with the first token after 0, 50 and 500 ms.
//!
//! Each measured turn is paired with a direct call to the same server just before it,
//! made by a client like the daemon's (one connection pool, the same settings). The
//! server times its own part of both (request read → last event handed over), so the
//! figure for a pair is
//!
//! ```text
//! (turn's wall time − server's time on the turn's call) − (direct call − server's time on it)
//! ```
//!
//! what a turn costs beyond calling the model directly, with the model's delay and the
//! timer's jitter taken out exactly. A new connection, a TLS handshake or a DNS lookup the
//! direct client also pays cancels out; one only the daemon pays shows.
//!
//! Its floor is a bare unary RPC (the floors' echo server, the same client) made after
//! the same idle time as the model's first token: a machine whose cores sleep while a
//! model thinks wakes slower than one kept busy (on the machine of the report a bare RPC
//! takes about 0.1 ms back to back, 0.4 ms after 50 ms idle and 0.9 ms after 500 ms), and
//! a turn wakes the daemon, its threads and the client where a direct call wakes only the
//! client.

use std::path::Path;
use std::time::Duration;

use super::Outcome;
use crate::bundle::{self, Tools};
use crate::echo::EchoServer;
use crate::env::{Env, Home};
use crate::error::{BenchError, Result};
use crate::floors::Floor;
use crate::machine::filesystem_of;
use crate::model_server::{self, ModelServer, Tls, Transport};
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;
use crate::turn;

/// Where the homes go when the machine has it: the runtime's own cost, without the disk.
const MEMORY_FS: &str = "/dev/shm";

/// The first-token delays of the variants, ms.
pub const DELAYS_MS: [u64; 3] = [0, 50, 500];

/// The target with the first token at once: a turn costs at most 0.5 ms beyond a direct
/// call (on a home whose syncs cost nothing), on this machine about 8 bare unary calls
/// back to back (0.06 ms each when quiet).
const LIMIT: f64 = 8.0;
/// The same cost ÷ a bare unary RPC after the variant's idle time (2.9 at most in the
/// runs that set it, with a margin of 1.4).
const IDLE_LIMIT: f64 = 4.0;
/// Where the server keeps connections open, the daemon's model calls reuse them: new
/// connections per model call after each client's first.
const REUSE_LIMIT: f64 = 0.05;

/// Direct calls and turns made first on each daemon and not measured.
const WARMUP: usize = 3;

/// What the pairs of one variant measured.
struct Pairs {
    /// Per pair, ms: the turn's cost beyond the direct call.
    beyond: Vec<f64>,
    /// The direct calls' wall times, ms.
    direct: Vec<f64>,
    /// The direct calls' cost beyond the server's time, ms.
    direct_network: Vec<f64>,
    /// The turns' wall times, ms.
    turn: Vec<f64>,
    /// Bare unary RPCs after the variant's idle time, ms.
    idle_unary: Vec<f64>,
    /// Connections that carried model calls, beyond each client's first, ÷ model calls.
    connections_per_call: f64,
}

pub async fn run(env: &Env) -> Result<Outcome> {
    let tls = Tls::new(env.tmp())?;
    let echo = EchoServer::start(0).await?;
    let echo_client = echo.client().await?;
    let memory = filesystem_of(Path::new(MEMORY_FS)).starts_with("tmpfs");
    let parent = if memory {
        Some(
            tempfile::Builder::new()
                .prefix("odyssey-bench-")
                .tempdir_in(MEMORY_FS)
                .map_err(|e| BenchError::io("create a folder in", MEMORY_FS, e))?,
        )
    } else {
        None
    };
    let mut outcome = Outcome::default();
    for transport in Transport::EACH {
        for delay_ms in DELAYS_MS {
            let delay = Duration::from_millis(delay_ms);
            let home = env.home_in(
                parent.as_ref().map(tempfile::TempDir::path),
                &format!("turn-cost-{}-{delay_ms}", transport.name()),
            )?;
            let pairs = pairs(env, &tls, transport, delay, &home, &echo_client).await?;
            let variant = format!("{}, first token {delay_ms} ms", transport.name());
            let beyond = Summary::of(&pairs.beyond);
            let idle_unary = Summary::of(&pairs.idle_unary);
            if let (Some(beyond), Some(floor)) = (beyond, idle_unary) {
                outcome.figures.push(
                    Figure::new(
                        &format!("turn beyond a direct call ÷ idle unary RPC, {variant}"),
                        "ratio",
                        "p50 of `turn beyond a direct call` ÷ p50 of `bare unary RPC after \
                         the same idle`, of the same variant and round",
                    )
                    .value(beyond.p50 / floor.p50)
                    .target(Statistic::Value, Bound::AtMost, IDLE_LIMIT),
                );
            }
            let per_call = Figure::new(
                &format!("model connections per call, {variant}"),
                "ratio",
                "connections that carried model calls, beyond the first of each client (the \
                 daemon and the direct one), ÷ model calls: 1 where the server closes each, \
                 0 where calls reuse them",
            )
            .value(pairs.connections_per_call);
            outcome.figures.push(if transport == Transport::Close {
                per_call
            } else {
                per_call.target(Statistic::Value, Bound::AtMost, REUSE_LIMIT)
            });
            let cost = Figure::new(
                &format!("turn beyond a direct call, {variant}"),
                "ms",
                format!(
                    "{}: per pair, (Run's wall time − the server's time on the turn's call) \
                     − (a direct call's wall time − the server's time on it)",
                    transport.describe()
                ),
            )
            .samples(beyond)
            .against(Floor::Unary);
            // Back to back, the floor kit's bare unary call is this cost's floor too.
            outcome.figures.push(if delay_ms == 0 {
                cost.ratio_target(Statistic::P50, Bound::AtMost, LIMIT)
            } else {
                cost
            });
            outcome.figures.push(
                Figure::new(
                    &format!("bare unary RPC after the same idle, {variant}"),
                    "ms",
                    format!(
                        "`Run` of the floors' echo server after {delay_ms} ms without a \
                         call (back to back for 0 ms): this variant's floor"
                    ),
                )
                .samples(idle_unary),
            );
            outcome.figures.push(
                Figure::new(
                    &format!("direct model call, {variant}"),
                    "ms",
                    "the direct calls' wall time: the variant's floor",
                )
                .samples(Summary::of(&pairs.direct)),
            );
            outcome.figures.push(
                Figure::new(
                    &format!("direct call beyond the server, {variant}"),
                    "ms",
                    "the direct calls' wall time less the server's time on them: what \
                     the connection and the client cost",
                )
                .samples(Summary::of(&pairs.direct_network)),
            );
            outcome.figures.push(
                Figure::new(
                    &format!("Run wall time, {variant}"),
                    "ms",
                    "the paired turns' wall time at the client",
                )
                .samples(Summary::of(&pairs.turn)),
            );
        }
    }
    outcome.notes.push(format!(
        "Homes on {}. A variant's target is on the ratio of its turns' cost beyond a direct \
         call to a bare unary RPC made after the same idle time; the same cost in ms is read \
         against the back-to-back floor beside it. The daemon trusts the TLS server's CA through `SSL_CERT_FILE`, as an \
         operator with a private CA does; the direct client trusts the same CA. Pairs per \
         variant: up to {} (fewer for long first tokens, about {} s of calls each).",
        if memory {
            "tmpfs (the runtime's own cost; a turn on disk adds its fdatasync, see \
             `overhead`)"
        } else {
            "the temporary folder's disk (no tmpfs here), so the figures include the \
             turns' syncs"
        },
        env.settings.turn_cost_pairs,
        env.settings.turn_cost_seconds
    ));
    Ok(outcome)
}

/// Runs the pairs of one variant on a daemon of its own.
async fn pairs(
    env: &Env,
    tls: &Tls,
    transport: Transport,
    delay: Duration,
    home: &Home,
    echo: &odyssey_client::OdysseyClient,
) -> Result<Pairs> {
    let server = ModelServer::start(transport, delay, tls).await?;
    let mut spec = env.spec(home, None, &[]);
    spec.model_url = Some(server.base_url.clone());
    spec.env
        .push(("SSL_CERT_FILE".to_owned(), tls.ca_file.clone()));
    let daemon = crate::daemon::Daemon::start(&spec).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install(&client, Tools::None).await?;
    let direct = model_server::client(tls)?;

    // Each pair takes two model calls of at least the delay, and its floor an idle as
    // long.
    let s = &env.settings;
    let affordable = (s.turn_cost_seconds / (3.0 * delay.as_secs_f64().max(0.001))) as usize;
    let count = affordable.clamp(10, s.turn_cost_pairs.max(10));
    let per_session = s.overhead_turns_per_session.max(1);
    let mut walls = Vec::with_capacity(count);
    let mut idle_unary = Vec::with_capacity(count);
    let mut session = String::new();
    for i in 0..WARMUP + count {
        if i % per_session == 0 {
            session = bundle::session(&client, &bundle).await?;
        }
        let direct_wall = server.direct_call(&direct).await?;
        let turn_wall = turn::run(&client, &session, "What is the answer?")
            .await?
            .wall;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let floor = turn::run(echo, "echo", "floor").await?.wall;
        if i >= WARMUP {
            walls.push((direct_wall, turn_wall));
            idle_unary.push(floor.as_secs_f64() * 1000.0);
        }
    }
    let timings = server.take_timings().await?;
    let connections = server.connections().await?;
    daemon.stop().await?;
    // In order: the warm-up's calls, then a direct call and a turn's call per pair.
    let measured = timings.get(2 * WARMUP..).unwrap_or_default();
    if measured.len() != 2 * walls.len() {
        return Err(BenchError::check(format!(
            "{} pairs made {} model calls instead of {} (a turn made more than one call?)",
            walls.len(),
            measured.len(),
            2 * walls.len()
        )));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut pairs = Pairs {
        beyond: Vec::with_capacity(walls.len()),
        direct: Vec::with_capacity(walls.len()),
        direct_network: Vec::with_capacity(walls.len()),
        turn: Vec::with_capacity(walls.len()),
        idle_unary,
        connections_per_call: connections.saturating_sub(2) as f64 / timings.len().max(1) as f64,
    };
    for ((direct_wall, turn_wall), served) in walls.iter().zip(measured.chunks_exact(2)) {
        let direct_beyond = ms(*direct_wall) - ms(served[0]);
        let turn_beyond = ms(*turn_wall) - ms(served[1]);
        pairs.beyond.push(turn_beyond - direct_beyond);
        pairs.direct.push(ms(*direct_wall));
        pairs.direct_network.push(direct_beyond);
        pairs.turn.push(ms(*turn_wall));
    }
    Ok(pairs)
}
