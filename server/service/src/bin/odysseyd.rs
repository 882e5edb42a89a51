//! `odysseyd`: the Odyssey agent runtime server.

use clap::Parser;

/// Serves Odyssey's gRPC API: bundles, sessions, turns and their event streams.
#[derive(Parser)]
#[command(
    name = "odysseyd",
    version,
    about,
    after_help = "Settings are read from /etc/odyssey/config.toml, <home>/config.toml, the --config \
                  file, ODYSSEY_<FLAG> environment variables (--worker-count: ODYSSEY_WORKER_COUNT) \
                  and these flags, a later one winning. `odyssey config show --sources` prints the \
                  result and where each value came from."
)]
struct Cli {
    #[command(flatten)]
    serve: odyssey_server::config::ServeArgs,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match odyssey_server::serve::run(cli.serve).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("odysseyd: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
