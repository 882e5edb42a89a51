//! `odyssey config show`: the configuration `odysseyd` would run with on this machine,
//! computed here from the same files (`/etc/odyssey/config.toml`, `<home>/config.toml`,
//! `--config`), `ODYSSEY_*` variables and flags, by the server's own layering code.

use odyssey_server::config::ServeArgs;
use odyssey_server::config::{self, Sources};

use super::error::CliError;
use super::output::Output;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the effective server configuration as TOML, secrets masked. Takes the same
    /// flags as `odysseyd` (--config, --home, ...), which count as the top layer.
    Show(ShowArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// Say where each value comes from: `default`, `FILE:LINE`, `env VAR` or `flag --NAME`.
    #[arg(long)]
    sources: bool,
    #[command(flatten)]
    serve: ServeArgs,
}

pub(crate) fn run(command: ConfigCommand, output: &mut Output<'_>) -> Result<(), CliError> {
    let ConfigCommand::Show(args) = command;
    let loaded = config::load(&args.serve, &Sources::process())?;
    if output.json {
        for line in config::to_json(&loaded, args.sources) {
            output.json_line(&line)?;
        }
    } else {
        write!(output.out, "{}", config::to_toml(&loaded, args.sources))?;
    }
    for warning in &loaded.warnings {
        output.note(format!("odyssey: warning: {warning}"))?;
    }
    Ok(())
}
