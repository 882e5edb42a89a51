//! A database of its own on the throw-away PostgreSQL of the tests
//! (`ODYSSEY_TEST_DATABASE_URL`, which `scripts/test-postgres` starts and exports).
//!
//! Tests that run whole servers give each test a fresh database, so that replicas of one test
//! never see another test's sessions, and hand the server the URL without its password and the
//! password apart, as an operator would. Without the URL these tests are skipped, except
//! under CI (`CI=true`), where a missing database is a failure: the suite must not pass by
//! running nothing.

use std::fmt;

/// The variable naming the test cluster's URL (with its password).
pub const URL_VARIABLE: &str = "ODYSSEY_TEST_DATABASE_URL";

/// What went wrong setting a test database up or removing it.
#[derive(Debug)]
pub struct DatabaseError(String);

impl fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DatabaseError {}

/// The test cluster's URL, or `None` outside CI when it is not set (the caller skips).
///
/// # Panics
/// Under CI without the URL: the PostgreSQL tests must run there.
pub fn cluster_url() -> Option<String> {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{URL_VARIABLE} is not set: under CI the PostgreSQL tests must run")
        }
        _ => {
            eprintln!("skipped: {URL_VARIABLE} is not set (scripts/test-postgres starts one)");
            None
        }
    }
}

/// A fresh database on the test cluster, dropped by [`TestDatabase::drop`].
pub struct TestDatabase {
    admin_url: String,
    /// The database's name (`<prefix>_<uuid>`).
    pub name: String,
    /// Its URL without the password.
    pub url: String,
    /// The password, given to servers apart from the URL.
    pub password: String,
}

impl TestDatabase {
    /// A new database named after `prefix`; `Ok(None)` when there is no test cluster (outside
    /// CI).
    pub async fn new(prefix: &str) -> Result<Option<Self>, DatabaseError> {
        let Some(admin_url) = cluster_url() else {
            return Ok(None);
        };
        let name = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
        let mut url = url::Url::parse(&admin_url)
            .map_err(|e| DatabaseError(format!("{URL_VARIABLE} is not a URL: {e}")))?;
        let password = url.password().unwrap_or_default().to_owned();
        url.set_password(None)
            .map_err(|()| DatabaseError(format!("{URL_VARIABLE} cannot hold a password")))?;
        url.set_path(&name);
        admin(&admin_url, &format!("CREATE DATABASE {name}")).await?;
        Ok(Some(Self {
            admin_url,
            name,
            url: url.to_string(),
            password,
        }))
    }

    /// Drops the database, closing what still uses it.
    pub async fn drop(self) -> Result<(), DatabaseError> {
        admin(
            &self.admin_url,
            &format!("DROP DATABASE {} WITH (FORCE)", self.name),
        )
        .await
    }
}

async fn admin(url: &str, sql: &str) -> Result<(), DatabaseError> {
    let failed =
        |e: tokio_postgres::Error| DatabaseError(format!("`{sql}` on the test cluster: {e}"));
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(failed)?;
    tokio::spawn(connection);
    client.batch_execute(sql).await.map_err(failed)
}
