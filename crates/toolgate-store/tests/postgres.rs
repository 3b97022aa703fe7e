//! The PostgreSQL store keeps the same contract as the SQLite one: every case of the store's
//! suite, each on a new database of one real PostgreSQL server started for the test.

#![cfg(feature = "postgres")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use common::postgres::Cluster;
use common::suite::{self, Engine, event};
use toolgate_store::{PostgresStore, Store, StoreError};

/// A PostgreSQL store on one database.
struct Postgres(String);

#[async_trait::async_trait]
impl Engine for Postgres {
    async fn try_open(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(Arc::new(PostgresStore::open(&self.0).await?))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_contract_holds_on_postgresql() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    for (index, (name, case)) in suite::CASES.iter().enumerate() {
        let url = cluster.create(&format!("case{index}")).await;
        eprintln!("case: {name}");
        // A case that hangs fails, and names itself.
        tokio::time::timeout(std::time::Duration::from_secs(60), case(&Postgres(url)))
            .await
            .unwrap_or_else(|_| panic!("{name} did not finish in 60 s"));
    }

    // What is particular to PostgreSQL.
    let url = cluster.create("newer").await;
    let store = PostgresStore::open(&url).await.unwrap();
    store.close().await;
    drop(store);
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    client
        .batch_execute("INSERT INTO schema_migrations (version, applied) VALUES (99, 'x')")
        .await
        .unwrap();
    let error = PostgresStore::open(&url).await.unwrap_err();
    assert!(
        error.to_string().contains("newer than this toolgate knows"),
        "{error}"
    );
    drop(client);
    let _ = connection.await;

    // Text PostgreSQL cannot hold (a NUL) is refused with a reason, per commit; the store
    // goes on.
    let url = cluster.create("nul").await;
    let store = PostgresStore::open(&url).await.unwrap();
    let mut odd = event("odd", "s");
    odd.session = Some("a\0b".into());
    let error = store.append(&[odd]).await.unwrap_err();
    assert!(error.to_string().contains("the commit failed"), "{error}");
    assert_eq!(store.append(&[event("fine", "s")]).await.unwrap(), [1]);

    // Nothing to connect to: a clear error, at once.
    let error = PostgresStore::open(&cluster.url("missing"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("cannot connect"), "{error}");
    let error = PostgresStore::open("postgres://[bad").await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not a PostgreSQL connection string"),
        "{error}"
    );
}
