//! `[database]`: where the PostgreSQL database is. The URL names the server, the user and
//! the database, never the password: that comes from `ODYSSEY_DATABASE_PASSWORD` or
//! `database.password_file`, so it stays out of process lists, shell history and
//! `odyssey config show`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use odyssey_store_postgres::{DatabaseConfig, StoreError};

/// The environment variable holding the database password.
pub const PASSWORD_VARIABLE: &str = "ODYSSEY_DATABASE_PASSWORD";

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseSettings {
    /// `postgres://USER@HOST[:PORT]/DATABASE[?sslmode=require]`, without a password.
    pub url: Option<String>,
    /// A file whose first line is the password (used when the variable is unset).
    pub password_file: Option<PathBuf>,
}

/// A database URL as the configuration accepts it: readable, and without a password.
pub fn check_url(url: &str) -> Result<String, String> {
    let config = DatabaseConfig::parse(url).map_err(|e| e.to_string())?;
    if config.has_password() {
        return Err(format!(
            "the database URL must not hold the password; give it in {PASSWORD_VARIABLE} or \
             database.password_file (a file only odysseyd's user can read)"
        ));
    }
    Ok(url.to_owned())
}

impl DatabaseSettings {
    /// The database to connect to, with its password from `env` (the variable) or the
    /// password file; `None` when no URL is configured.
    pub fn connect_config(
        &self,
        env: &BTreeMap<String, String>,
    ) -> Result<Option<DatabaseConfig>, StoreError> {
        let Some(url) = &self.url else {
            return Ok(None);
        };
        let config = DatabaseConfig::parse(url)?;
        let config = match (
            env.get(PASSWORD_VARIABLE).filter(|p| !p.is_empty()),
            &self.password_file,
        ) {
            (Some(password), _) => config.with_password(password),
            (None, Some(file)) => config.with_password_file(file)?,
            (None, None) => config,
        };
        Ok(Some(config))
    }
}
