//! Networked sandboxes: what the egress proxy adds to a connection, and to a Bash call.
//!
//! The daemon allows the network, `localhost` and `127.0.0.0/8` (as an operator would for
//! a local package mirror), and a loopback HTTP server of the harness stands for the
//! outside. Inside a networked sandbox `curl` fetches from it through the proxy, as plain
//! HTTP and through a CONNECT tunnel; beside it, the harness's own `curl` fetches
//! directly, from the host. Each request is timed by curl itself (`time_total`), so
//! starting curl is not part of it. What the proxy adds is the difference of the p50s:
//! the relay in the sandbox, the Unix socket, the request parsed by the proxy, the host
//! checked against the lists, resolved and its address checked, the event recorded, and
//! the bytes copied both ways.
//!
//! Then Bash `true` tool calls run in a networked session, end to end as in the sandbox
//! benchmark: a networked process also gets its relay started by the helper.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Outcome;
use super::sandbox::{BashCalls, bash_true_calls, bash_true_figure, bash_true_script};
use crate::bundle::{self, Tools};
use crate::env::{self, Env};
use crate::error::{BenchError, ClientContext, Result};
use crate::floors::Floor;
use crate::report::{Bound, Figure, Statistic};
use crate::stats::Summary;

/// A request through the proxy ÷ the same request made directly, at the p50.
const PROXY_LIMIT: f64 = 8.0;

pub async fn run(env: &Env) -> Result<Outcome> {
    let s = &env.settings;
    let requests = s.egress_requests.max(1);
    let per_turn = s.sandbox_calls_per_turn.max(1);
    let upstream = upstream().await?;
    let port = upstream.port();
    let model = env::model(bash_true_script(per_turn)).await?;
    let home = env.home("egress")?;
    let args: Vec<String> = [
        "--allow-network",
        "--allow-network-domain",
        "localhost",
        "--allow-network-cidr",
        "127.0.0.0/8",
        "--max-turn-steps",
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .chain(std::iter::once((per_turn + 1).to_string()))
    .collect();
    let daemon = env.daemon(&home, Some(&model), &args).await?;
    let client = daemon.client().await?;
    let bundle = bundle::install_networked(&client, &["localhost"]).await?;
    let session = bundle::session(&client, &bundle).await?;

    // Warm up (the session's proxy starts with its first networked process), then measure.
    let url = format!("http://localhost:{port}/");
    let loop_of = |flags: &str, n: usize| {
        format!(
            "for i in $(seq {n}); do curl -sSf -o /dev/null -w '%{{time_total}}\\n' {flags} {url} \
             || exit 1; done"
        )
    };
    let script = format!(
        "{} >/dev/null && {} && echo tunnel && {}",
        loop_of("", 10),
        loop_of("", requests),
        loop_of("-p", requests)
    );
    let ran = client
        .run_session_command(
            &session,
            vec!["bash".into(), "-c".into(), script].into(),
            None,
            None,
        )
        .await
        .context("run curl in the sandbox")?;
    if ran.exit_code != 0 {
        return Err(BenchError::check(format!(
            "curl through the proxy failed ({}): {}",
            ran.exit_code, ran.stderr
        )));
    }
    let (plain, tunnel) = ran
        .stdout
        .split_once("tunnel\n")
        .ok_or_else(|| BenchError::check("the sandboxed curl loop printed no marker"))?;
    let (plain, tunnel) = (seconds_as_ms(plain)?, seconds_as_ms(tunnel)?);
    let direct = direct_curl(&url, requests).await?;

    // Bash `true` without and with the network, one after the other on the same daemon, so
    // that the difference is the network's and not the machine's load.
    let plain_bundle = bundle::install(&client, Tools::Bash).await?;
    let without =
        bash_true_calls(&client, &model, &plain_bundle, per_turn, s.sandbox_calls).await?;
    let per_turn_calls =
        bash_true_calls(&client, &model, &bundle, per_turn, s.sandbox_calls).await?;
    daemon.stop().await?;

    let mut outcome = Outcome::default();
    let figure = |name: &str, definition: &str, samples: &[f64]| {
        Figure::new(name, "ms", definition).samples(Summary::of(samples))
    };
    let p50 = |samples: &[f64]| Summary::of(samples).map_or(f64::NAN, |s| s.p50);
    outcome.figures.push(figure(
        "curl, direct",
        "the harness's curl on the host fetching a small response from the loopback server \
         (time_total: connect, request, response)",
        &direct,
    ));
    outcome.figures.push(figure(
        "curl through the proxy, plain HTTP",
        "curl in a networked sandbox fetching the same response with HTTP_PROXY (an \
         absolute-URI request the proxy forwards)",
        &plain,
    ));
    outcome.figures.push(figure(
        "curl through the proxy, CONNECT",
        "the same with `curl -p`: a CONNECT tunnel, then the request through it",
        &tunnel,
    ));
    for (how, samples) in [("plain HTTP", &plain), ("CONNECT", &tunnel)] {
        outcome.figures.push(
            Figure::new(
                &format!("through the proxy ÷ direct, {how}"),
                "ratio",
                "p50 through the proxy ÷ p50 direct, measured one after the other in the \
                 same round: the direct request is this figure's floor",
            )
            .value(p50(samples) / p50(&direct))
            .target(Statistic::Value, Bound::AtMost, PROXY_LIMIT),
        );
        outcome.figures.push(
            Figure::new(
                &format!("egress proxy overhead, {how}"),
                "ms",
                "p50 through the proxy minus p50 direct: what the relay, the Unix socket and \
                 the proxy's decision add to one connection",
            )
            .value(p50(samples) - p50(&direct)),
        );
    }
    let BashCalls {
        calls,
        process,
        skipped,
    } = per_turn_calls;
    outcome.figures.push(
        Figure::new(
            "Bash `true` tool call, end to end, without network",
            "ms",
            "as below, in a session whose bundle asks for no network, just before (the \
             sandbox benchmark's figure, for comparison)",
        )
        .samples(Summary::of_millis(&without.calls))
        .against(Floor::Bwrap),
    );
    outcome.figures.push(bash_true_figure(
        "Bash `true` tool call, end to end, networked",
        &calls,
        per_turn,
        "`workspace_write` with the network (to `localhost`)",
    ));
    outcome.notes.push(format!(
        "A networked Bash call differs from one without network by the relay the helper \
         starts (a bound port and two forks) and the proxy's socket bound into the \
         sandbox; its sandboxed process took {:.0} ms at the p50, against {:.0} ms \
         without network.",
        p50(&process),
        p50(&without.process)
    ));
    let skipped = skipped + without.skipped;
    if skipped > 0 {
        outcome.notes.push(format!(
            "{skipped} turns made more model calls than their tool calls need and were not \
             measured."
        ));
    }
    Ok(outcome)
}

/// One `time_total` (seconds) a line, as milliseconds.
fn seconds_as_ms(text: &str) -> Result<Vec<f64>> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.trim()
                .parse::<f64>()
                .map(|seconds| seconds * 1e3)
                .map_err(|_| BenchError::check(format!("curl printed `{line}`, not a time")))
        })
        .collect()
}

/// The same requests from the host, by the harness's own curl, with no proxy.
async fn direct_curl(url: &str, requests: usize) -> Result<Vec<f64>> {
    let script = format!(
        "for i in $(seq 10); do curl -sSf --noproxy '*' -o /dev/null {url} || exit 1; done; \
         for i in $(seq {requests}); do \
         curl -sSf --noproxy '*' -o /dev/null -w '%{{time_total}}\\n' {url} || exit 1; done"
    );
    let output = tokio::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .await
        .map_err(|e| BenchError::check(format!("cannot run curl on the host: {e}")))?;
    if !output.status.success() {
        return Err(BenchError::check(format!(
            "curl on the host failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    seconds_as_ms(&String::from_utf8_lossy(&output.stdout))
}

/// A loopback HTTP server answering `ok` to every request, one per connection.
struct Upstream {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Upstream {
    fn port(&self) -> u16 {
        self.addr.port()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn upstream() -> Result<Upstream> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| BenchError::check(format!("cannot bind the loopback server: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::check(format!("the loopback server has no address: {e}")))?;
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let _ = stream.set_nodelay(true);
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n",
                    )
                    .await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok(Upstream { addr, task })
}
