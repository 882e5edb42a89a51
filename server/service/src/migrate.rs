//! `odysseyd migrate`: brings the PostgreSQL database's schema to the version this
//! odysseyd carries and says which version it is at. Replicas starting together may all
//! run it: the migrations run once, under an advisory lock.
//! `odysseyd` itself also migrates at start when it serves from the database; this
//! command prepares one before any replica starts, or says where it stands.

use std::path::PathBuf;

use odyssey_store_postgres::{MigrationReport, Store, StoreError};

use crate::config::{self, ConfigError, ServeArgs, Sources};

/// The flags of `odysseyd migrate`.
#[derive(Clone, Debug, clap::Args)]
pub struct MigrateArgs {
    /// The database: `postgres://USER@HOST[:PORT]/DATABASE`, with `?sslmode=require` for
    /// a database on another machine; never the password, which comes from
    /// $ODYSSEY_DATABASE_PASSWORD or `database.password_file` [default: `database.url` of
    /// the configuration].
    #[arg(
        long,
        value_name = "URL",
        env = "ODYSSEY_DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,
    /// A TOML configuration file, read over /etc/odyssey/config.toml and
    /// <home>/config.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The home folder whose config.toml is read [default: ~/.odyssey].
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(
        "no database is configured: give --database-url (or ODYSSEY_DATABASE_URL), or set \
         database.url in the configuration"
    )]
    NoDatabase,
    #[error("--database-url: {0}")]
    Url(String),
    #[error("{target}: {source}")]
    Store {
        target: String,
        #[source]
        source: StoreError,
    },
}

/// Migrates the database the flags and the configuration name, and says what it did.
pub async fn run(args: MigrateArgs, sources: &Sources) -> Result<String, MigrateError> {
    let mut serve = ServeArgs::unset();
    serve.config = args.config;
    serve.home = args.home;
    let mut database = config::load(&serve, sources)?.config.database;
    if let Some(url) = args.database_url {
        database.url = Some(config::check_url(&url).map_err(MigrateError::Url)?);
    }
    let store_error = |target: String| move |source| MigrateError::Store { target, source };
    let config = database
        .connect_config(&sources.env)
        .map_err(store_error("the database".to_owned()))?
        .ok_or(MigrateError::NoDatabase)?;
    let target = config.target();
    let store = Store::new(config.with_max_connections(1)).map_err(store_error(target.clone()))?;
    let report = store.migrate().await.map_err(store_error(target.clone()))?;
    Ok(describe(&target, &report))
}

fn describe(target: &str, report: &MigrationReport) -> String {
    if report.applied.is_empty() {
        return format!(
            "{target} is at schema version {}, the latest this odysseyd knows",
            report.to
        );
    }
    let applied: Vec<String> = report
        .applied
        .iter()
        .map(|(version, name)| format!("  {version}: {name}"))
        .collect();
    format!(
        "{target} migrated from schema version {} to {}:\n{}",
        report.from,
        report.to,
        applied.join("\n")
    )
}

#[cfg(test)]
mod tests;
