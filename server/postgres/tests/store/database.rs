//! The throw-away database of these tests: `ODYSSEY_TEST_DATABASE_URL`
//! (`scripts/test-postgres` starts one). Each test works in a schema of its own, migrated
//! fresh, and drops it at the end. Without the URL the tests are skipped, except under CI
//! (`CI=true`), where a missing database is a failure.

use odyssey_store_postgres::{DatabaseConfig, Store};

pub const URL_VARIABLE: &str = "ODYSSEY_TEST_DATABASE_URL";

/// The test database's URL, or `None` (the caller returns: skipped) outside CI.
pub fn url() -> Option<String> {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "{URL_VARIABLE} is not set: under CI the PostgreSQL tests must run (scripts/test-postgres)"
            )
        }
        _ => {
            eprintln!(
                "skipped: {URL_VARIABLE} is not set (scripts/test-postgres starts a database)"
            );
            None
        }
    }
}

/// A migrated store in a fresh schema.
pub struct TestDatabase {
    pub store: Store,
    pub config: DatabaseConfig,
    url: String,
    pub schema: String,
}

impl TestDatabase {
    /// `None` when there is no test database (outside CI).
    pub async fn new() -> Option<Self> {
        let db = Self::unmigrated().await?;
        db.store.migrate().await.unwrap();
        Some(db)
    }

    /// A fresh, empty schema.
    pub async fn unmigrated() -> Option<Self> {
        let url = url()?;
        let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
        admin(&url, &format!("CREATE SCHEMA {schema}")).await;
        let config = DatabaseConfig::parse(&url)
            .unwrap()
            .with_search_path(&schema)
            .unwrap()
            .with_max_connections(8);
        let store = Store::new(config.clone()).unwrap();
        Some(Self {
            store,
            config,
            url,
            schema,
        })
    }

    /// Another store on the same schema: what a second replica would have.
    pub fn replica(&self) -> Store {
        Store::new(self.config.clone()).unwrap()
    }

    pub async fn drop(self) {
        admin(&self.url, &format!("DROP SCHEMA {} CASCADE", self.schema)).await;
    }

    /// Runs SQL in this test's schema, outside the store (to set up what a test needs).
    pub async fn sql(&self, sql: &str) {
        admin(
            &self.url,
            &format!("SET search_path = {}; {sql}", self.schema),
        )
        .await;
    }

    /// One value read outside the store, in this test's schema.
    pub async fn count(&self, sql: &str) -> i64 {
        self.client()
            .await
            .query_one(sql, &[])
            .await
            .unwrap()
            .get(0)
    }

    /// A connection of its own, outside the store, in this test's schema.
    pub async fn client(&self) -> tokio_postgres::Client {
        let client = connect(&self.url).await;
        client
            .batch_execute(&format!("SET search_path = {}", self.schema))
            .await
            .unwrap();
        client
    }
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Runs SQL over a connection of its own.
pub async fn admin(url: &str, sql: &str) {
    connect(url).await.batch_execute(sql).await.unwrap();
}
