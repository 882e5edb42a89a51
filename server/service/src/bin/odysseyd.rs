//! `odysseyd`: the Odyssey agent runtime server.

use clap::Parser;

/// Serves Odyssey's gRPC API: bundles, sessions, turns and their event streams.
#[derive(Parser)]
#[command(
    name = "odysseyd",
    version,
    about,
    args_conflicts_with_subcommands = true,
    after_help = "Settings are read from /etc/odyssey/config.toml, <home>/config.toml, the --config \
                  file, ODYSSEY_<FLAG> environment variables (--worker-count: ODYSSEY_WORKER_COUNT) \
                  and these flags, a later one winning. `odyssey config show --sources` prints the \
                  result and where each value came from."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: odyssey_server::config::ServeArgs,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Brings the PostgreSQL database's schema to this odysseyd's version and says which
    /// version it is at (odysseyd serving from the database also does it at start).
    Migrate(odyssey_server::migrate::MigrateArgs),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if cli.command.is_none() {
        // Before any thread starts (see `enter_own_mount_namespace`): the overlay
        // workspaces the server mounts then live and die with it. Without the right to
        // (not root), the server mounts nothing and has no need of it.
        use odyssey_runtime::sandbox::helper::host::enter_own_mount_namespace;
        if let Err(e) = enter_own_mount_namespace()
            && e.kind() != std::io::ErrorKind::PermissionDenied
        {
            eprintln!(
                "odysseyd: cannot enter a mount namespace of its own ({e}); overlay workspaces stay in the host's"
            );
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("odysseyd: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> std::process::ExitCode {
    match cli.command {
        Some(Command::Migrate(args)) => {
            let sources = odyssey_server::config::Sources::process();
            match odyssey_server::migrate::run(args, &sources).await {
                Ok(said) => {
                    println!("{said}");
                    std::process::ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("odysseyd migrate: {e}");
                    std::process::ExitCode::FAILURE
                }
            }
        }
        None => match odyssey_server::serve::run(cli.serve).await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("odysseyd: {e}");
                std::process::ExitCode::FAILURE
            }
        },
    }
}
