//! Events per second one subscriber receives: the SDK's `EventStream` beside the bare
//! generated stub, replaying the same stored events from one real odysseyd, as the
//! Python, Go and TypeScript SDKs' own benchmarks do (`scripts/bench-sdks` runs them all).
//!
//! ```text
//! ODYSSEYD=target/release/odysseyd cargo run --release -p odyssey-client --example bench_events [TURNS]
//! ```

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use odyssey_client::proto::{ApprovalPolicy, SubscribeSessionRequest, subscribe_session_response};
use odyssey_client::{ClientError, OdysseyClient, SessionOptions, pack_project};

/// The server, killed when the benchmark ends however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let turns: usize = std::env::args().nth(1).map_or(Ok(200), |t| t.parse())?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let binary = std::env::var("ODYSSEYD")
        .unwrap_or_else(|_| repo.join("target/debug/odysseyd").display().to_string());
    let home = tempfile::tempdir()?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let _server = Server(
        Command::new(&binary)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--home"])
            .arg(home.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?,
    );
    let url = format!("http://127.0.0.1:{port}");
    let client = connect(&url).await?;
    client
        .build_bundle(pack_project(&repo.join("bundles/demo"))?, "", false)
        .await?;
    let options = SessionOptions {
        approval_policy: Some(ApprovalPolicy::Never),
        ..SessionOptions::default()
    };
    let session = client.create_session("demo", options).await?;
    for _ in 0..turns {
        client
            .run(&session.id, "Give me a tour", Default::default())
            .await?;
    }
    let last = client.get_session(&session.id).await?.last_sequence;

    for name in ["bare stub", "EventStream"] {
        let mut best = 0.0f64;
        for _ in 0..3 {
            let started = Instant::now();
            let count = match name {
                "bare stub" => bare(&client, &session.id, last).await?,
                _ => helper(&client, &session.id, last).await?,
            };
            best = best.max(count as f64 / started.elapsed().as_secs_f64());
        }
        println!("rust   {name:<17} {last} events  {best:>10.0} events/s");
    }
    Ok(())
}

/// Connects once the server listens (it starts in the background).
async fn connect(url: &str) -> Result<OdysseyClient, ClientError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match OdysseyClient::connect(url, None).await {
            Ok(client) if client.server_info().await.is_ok() => return Ok(client),
            Err(e) if Instant::now() >= deadline => return Err(e),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn helper(client: &OdysseyClient, session: &str, last: u64) -> Result<u64, ClientError> {
    let mut events = client.subscribe(session, 0).await?;
    let mut count = 0;
    while let Some(event) = events.next().await? {
        count += 1;
        if event.sequence == last {
            break;
        }
    }
    Ok(count)
}

async fn bare(client: &OdysseyClient, session: &str, last: u64) -> Result<u64, ClientError> {
    let request = SubscribeSessionRequest {
        session_id: session.to_owned(),
        after_sequence: 0,
    };
    let mut stream = client
        .sessions()
        .subscribe_session(request)
        .await?
        .into_inner();
    let mut count = 0;
    while let Some(item) = stream.next().await {
        if let Some(subscribe_session_response::Item::Event(event)) = item?.item {
            count += 1;
            if event.sequence == last {
                break;
            }
        }
    }
    Ok(count)
}
