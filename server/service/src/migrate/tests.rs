//! `odysseyd migrate` against the test database (`ODYSSEY_TEST_DATABASE_URL`, started by
//! `scripts/test-postgres`), each test in a database of its own. Skipped without the URL,
//! except under CI.

use std::collections::BTreeMap;

use odyssey_testing::database::TestDatabase;

use super::*;

/// The password given apart from the URL, in the environment.
fn env(password: &str) -> Sources {
    Sources {
        env: BTreeMap::from([(config::PASSWORD_VARIABLE.to_owned(), password.to_owned())]),
        ..Sources::default()
    }
}

fn args(db: &TestDatabase) -> MigrateArgs {
    MigrateArgs {
        database_url: Some(db.url.clone()),
        config: None,
        home: None,
    }
}

#[tokio::test]
async fn migrate_brings_a_new_database_to_the_latest_version_then_says_it_is_there() {
    let Some(db) = TestDatabase::new("migrate").await.unwrap() else {
        return;
    };
    let latest = odyssey_store_postgres::latest_version();
    let said = run(args(&db), &env(&db.password)).await.unwrap();
    assert!(
        said.contains(&format!("migrated from schema version 0 to {latest}")),
        "{said}"
    );
    assert!(said.contains(&format!("/{}", db.name)), "{said}");
    assert!(!said.contains(&db.password), "{said}");
    let said = run(args(&db), &env(&db.password)).await.unwrap();
    assert!(
        said.contains(&format!("is at schema version {latest}, the latest")),
        "{said}"
    );
    db.drop().await.unwrap();
}

#[tokio::test]
async fn migrate_reads_the_url_and_the_password_file_from_the_configuration() {
    let Some(db) = TestDatabase::new("migrate").await.unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let password_file = dir.path().join("database-password");
    std::fs::write(&password_file, format!("{}\n", db.password)).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[database]\nurl = \"{}\"\npassword_file = \"{}\"\n",
            db.url,
            password_file.display()
        ),
    )
    .unwrap();
    let args = MigrateArgs {
        database_url: None,
        config: Some(config),
        home: Some(dir.path().to_owned()),
    };
    let said = run(args, &Sources::default()).await.unwrap();
    assert!(said.contains("migrated from schema version 0"), "{said}");
    db.drop().await.unwrap();
}

#[tokio::test]
async fn a_wrong_password_fails_without_showing_it() {
    let Some(db) = TestDatabase::new("migrate").await.unwrap() else {
        return;
    };
    let wrong = "not-the-password-4f1c";
    let error = run(args(&db), &env(wrong)).await.unwrap_err().to_string();
    assert!(error.contains("password authentication failed"), "{error}");
    assert!(!error.contains(wrong), "{error}");
    assert!(!error.contains(&db.password), "{error}");
    db.drop().await.unwrap();
}

#[tokio::test]
async fn a_url_holding_a_password_or_no_url_is_refused() {
    let mut args = MigrateArgs {
        database_url: Some("postgres://odyssey:hunter2@127.0.0.1/odyssey".to_owned()),
        config: None,
        home: Some(tempfile::tempdir().unwrap().path().to_owned()),
    };
    let error = run(args.clone(), &Sources::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("must not hold the password"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");

    args.database_url = None;
    let error = run(args, &Sources::default()).await.unwrap_err();
    assert!(matches!(error, MigrateError::NoDatabase), "{error}");
}

#[test]
fn a_remote_database_must_ask_for_tls() {
    let error = config::check_url("postgres://odyssey@db.example.com/odyssey")
        .and_then(|url| {
            odyssey_store_postgres::Store::new(
                odyssey_store_postgres::DatabaseConfig::parse(&url).map_err(|e| e.to_string())?,
            )
            .map(|_| url)
            .map_err(|e| e.to_string())
        })
        .unwrap_err();
    assert!(error.contains("sslmode=require"), "{error}");
}
