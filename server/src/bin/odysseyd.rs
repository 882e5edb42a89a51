//! `odysseyd`: the Odyssey agent runtime server.

use clap::Parser;

/// Serves Odyssey's gRPC API: bundles, sessions, turns and their event streams.
#[derive(Parser)]
#[command(name = "odysseyd", version, about)]
struct Cli {
    #[command(flatten)]
    serve: odyssey_server::serve::ServeArgs,
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
