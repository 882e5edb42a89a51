//! Where the database is and how to reach it: the URL, the password (from the URL, the
//! environment or a file, never logged), TLS and the connection pool.

use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::config::{Host, SslMode};

use crate::StoreError;

/// Connections the pool keeps at most unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;

/// How long a call waits for a connection (a new one, or one of the pool's) before it
/// answers that the database is unavailable: a dead database never hangs a call.
pub const CONNECT_PATIENCE: Duration = Duration::from_secs(5);

/// How long sent data may stay unacknowledged before a connection is taken as lost (a
/// database gone without closing its connections), unless the URL says otherwise.
const UNACKNOWLEDGED_PATIENCE: Duration = Duration::from_secs(15);

/// A database to connect to. Its `Debug` and [`DatabaseConfig::target`] never show the
/// password.
#[derive(Clone)]
pub struct DatabaseConfig {
    pg: tokio_postgres::Config,
    max_connections: usize,
}

/// How the connections are made: in the clear (loopback only) or through rustls.
#[derive(Clone)]
pub(crate) enum Tls {
    Plain,
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl DatabaseConfig {
    /// Reads a `postgres://user[:password]@host[:port]/database?options` URL (or the
    /// `key=value` form libpq also reads).
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        let pg = tokio_postgres::Config::from_str(url)
            .map_err(|e| StoreError::InvalidUrl(e.to_string()))?;
        if pg.get_hosts().is_empty() {
            return Err(StoreError::InvalidUrl("it names no host".to_owned()));
        }
        if pg.get_user().is_none() {
            return Err(StoreError::InvalidUrl("it names no user".to_owned()));
        }
        let mut pg = pg;
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(CONNECT_PATIENCE);
        }
        if pg.get_tcp_user_timeout().is_none() {
            pg.tcp_user_timeout(UNACKNOWLEDGED_PATIENCE);
        }
        Ok(Self {
            pg,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        })
    }

    /// Whether the URL itself carries a password.
    pub fn has_password(&self) -> bool {
        self.pg.get_password().is_some()
    }

    /// Uses this password (from the environment or a secret store), over the URL's.
    pub fn with_password(mut self, password: &str) -> Self {
        self.pg.password(password);
        self
    }

    /// Reads the password from a file (its first line; a trailing newline is not part of
    /// it), over the URL's.
    pub fn with_password_file(self, path: &Path) -> Result<Self, StoreError> {
        let text = std::fs::read_to_string(path).map_err(|source| StoreError::PasswordFile {
            path: path.to_owned(),
            source,
        })?;
        let password = text.lines().next().unwrap_or_default();
        if password.is_empty() {
            return Err(StoreError::EmptyPasswordFile {
                path: path.to_owned(),
            });
        }
        Ok(self.with_password(password))
    }

    /// The most connections the pool opens.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Keeps at most this many connections open (at least 1).
    pub fn with_max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Runs every connection's statements in this schema (one schema per test, for
    /// instance): letters, digits and `_` only, starting with a letter or `_`.
    pub fn with_search_path(mut self, schema: &str) -> Result<Self, StoreError> {
        let mut chars = schema.chars();
        let starts_well = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !starts_well || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(StoreError::InvalidArgument(format!(
                "`{schema}` is not a schema name: letters, digits and `_` only, starting with a letter or `_`"
            )));
        }
        self.pg.options(format!("-c search_path={schema}"));
        Ok(self)
    }

    /// `postgres://user@host:port/database`, without the password: for logs and messages.
    pub fn target(&self) -> String {
        let user = self.pg.get_user().unwrap_or_default();
        let hosts: Vec<String> = self
            .pg
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let port = self
                    .pg
                    .get_ports()
                    .get(i)
                    .or_else(|| self.pg.get_ports().first())
                    .copied()
                    .unwrap_or(5432);
                match host {
                    Host::Tcp(name) if name.contains(':') => format!("[{name}]:{port}"),
                    Host::Tcp(name) => format!("{name}:{port}"),
                    Host::Unix(path) => path.display().to_string(),
                }
            })
            .collect();
        let database = self.pg.get_dbname().unwrap_or(user);
        format!("postgres://{user}@{}/{database}", hosts.join(","))
    }

    /// The pool of connections to this database (none is opened before the first use).
    pub(crate) fn pool(&self) -> Result<(Pool, Tls), StoreError> {
        let tls = self.tls()?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            Tls::Plain => {
                Manager::from_config(self.pg.clone(), tokio_postgres::NoTls, manager_config)
            }
            Tls::Rustls(connector) => {
                Manager::from_config(self.pg.clone(), connector.clone(), manager_config)
            }
        };
        let pool = Pool::builder(manager)
            .max_size(self.max_connections)
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(CONNECT_PATIENCE))
            .wait_timeout(Some(CONNECT_PATIENCE))
            .recycle_timeout(Some(CONNECT_PATIENCE))
            .build()
            .map_err(|e| StoreError::Pool(e.to_string()))?;
        Ok((pool, tls))
    }

    pub(crate) fn pg(&self) -> &tokio_postgres::Config {
        &self.pg
    }

    /// In the clear only when every host is on this machine and the URL does not ask for
    /// TLS; through rustls (verifying the server against the system's roots) otherwise.
    fn tls(&self) -> Result<Tls, StoreError> {
        let asks_for_tls = !matches!(self.pg.get_ssl_mode(), SslMode::Disable | SslMode::Prefer);
        if !asks_for_tls {
            let remote = self.pg.get_hosts().iter().find_map(|host| match host {
                Host::Tcp(name) if !is_local(host) => Some(name.clone()),
                _ => None,
            });
            if let Some(host) = remote {
                return Err(StoreError::TlsRequired { host });
            }
            return Ok(Tls::Plain);
        }
        let loaded = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
        if added == 0 {
            return Err(StoreError::Tls(
                "no trusted root certificate was found on this machine".to_owned(),
            ));
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Tls::Rustls(tokio_postgres_rustls::MakeRustlsConnect::new(
            config,
        )))
    }
}

impl fmt::Debug for DatabaseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseConfig")
            .field("target", &self.target())
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

/// A Unix socket, `localhost` or a loopback address.
fn is_local(host: &Host) -> bool {
    match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name == "localhost"
                || name
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_never_shows_the_password() {
        let config = DatabaseConfig::parse("postgres://odyssey:s3cret@127.0.0.1:5433/odyssey")
            .unwrap()
            .with_password("other-s3cret");
        assert_eq!(config.target(), "postgres://odyssey@127.0.0.1:5433/odyssey");
        let debug = format!("{config:?}");
        assert!(!debug.contains("s3cret"), "{debug}");
    }

    #[test]
    fn a_remote_database_without_tls_is_refused_by_name() {
        let config = DatabaseConfig::parse("postgres://odyssey@db.example.com/odyssey").unwrap();
        let error = config.pool().err().unwrap().to_string();
        assert!(error.contains("db.example.com"), "{error}");
        assert!(error.contains("sslmode=require"), "{error}");
        for local in [
            "postgres://odyssey@127.0.0.1/odyssey",
            "postgres://odyssey@localhost/odyssey",
            "postgres://odyssey@[::1]/odyssey",
            "host=/run/postgresql user=odyssey",
        ] {
            let config = DatabaseConfig::parse(local).unwrap();
            assert!(matches!(config.tls(), Ok(Tls::Plain)), "{local}");
        }
    }

    #[test]
    fn a_schema_name_is_an_identifier_or_refused() {
        let config = DatabaseConfig::parse("postgres://odyssey@127.0.0.1/odyssey").unwrap();
        assert!(config.clone().with_search_path("t_1a").is_ok());
        for bad in ["", "1t", "a b", "a -c x=y", "a;b"] {
            assert!(config.clone().with_search_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_url_without_host_or_user_is_refused() {
        assert!(DatabaseConfig::parse("not a url at all").is_err());
        let error = DatabaseConfig::parse("postgres://127.0.0.1/odyssey")
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("no user"), "{error}");
    }

    #[test]
    fn the_password_file_gives_its_first_line() {
        let dir = std::env::temp_dir().join(format!("odyssey-pg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password");
        std::fs::write(&file, "from-file\n").unwrap();
        let config = DatabaseConfig::parse("postgres://odyssey@127.0.0.1/odyssey")
            .unwrap()
            .with_password_file(&file)
            .unwrap();
        assert_eq!(config.pg.get_password(), Some(&b"from-file"[..]));
        std::fs::write(&file, "\n").unwrap();
        let error = DatabaseConfig::parse("postgres://odyssey@127.0.0.1/odyssey")
            .unwrap()
            .with_password_file(&file)
            .err()
            .unwrap();
        assert!(matches!(error, StoreError::EmptyPasswordFile { .. }));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
