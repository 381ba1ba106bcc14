//! The schema's migrations: applied once when several instances start at once, checked
//! (not applied) when an instance is built without migrating, refused when newer than the
//! build; and a database that cannot be reached is a clear error at build time.

use std::sync::{Arc, Barrier};

use mcp_tasks::{Error, Owner, TaskRequest, TaskStore};
use mcp_tasks_postgres::PostgresTaskStore;
use mcp_tasks_test_support::postgres::{shared_psql, shared_url};

fn fresh_schema() -> String {
    format!("schema_{}", uuid::Uuid::new_v4().simple())
}

#[test]
fn instances_starting_at_once_migrate_once_and_share_the_tasks() {
    let Some(url) = shared_url() else { return };
    let schema = fresh_schema();
    let instances = 6;
    let barrier = Arc::new(Barrier::new(instances));
    let stores: Vec<PostgresTaskStore> = (0..instances)
        .map(|_| {
            let (url, schema, barrier) = (url.clone(), schema.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                PostgresTaskStore::builder(&url)
                    .schema(schema)
                    .build()
                    .expect("every instance starts, whichever migrates")
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|thread| thread.join().expect("no instance panics"))
        .collect();
    assert_eq!(
        shared_psql(&format!(
            "SELECT count(*) = count(DISTINCT version) AND count(*) = max(version) \
             FROM {schema}.migrations"
        ))
        .as_deref(),
        Some("t"),
        "each migration is applied exactly once"
    );
    let alice = Owner::new("alice");
    let task = stores[0]
        .insert(&alice, TaskRequest::new(1, "tools/call"))
        .expect("a task");
    for store in &stores[1..] {
        assert_eq!(
            store
                .get(&alice, &task.id().to_string())
                .expect("seen")
                .status(),
            task.status()
        );
    }
}

#[test]
fn without_migrating_the_version_is_checked_and_migrate_applies_it() {
    let Some(url) = shared_url() else { return };
    let schema = fresh_schema();
    let refused = PostgresTaskStore::builder(&url)
        .schema(&schema)
        .migrate(false)
        .build()
        .expect_err("no schema yet");
    assert!(matches!(refused, Error::Store { .. }), "{refused:?}");
    assert!(refused.to_string().contains("migrate"), "{refused}");
    let version = PostgresTaskStore::migrate(&url, &schema).expect("migrated");
    assert!(version >= 1);
    // Applying again changes nothing.
    assert_eq!(
        PostgresTaskStore::migrate(&url, &schema).expect("again"),
        version
    );
    let store = PostgresTaskStore::builder(&url)
        .schema(&schema)
        .migrate(false)
        .build()
        .expect("the schema is at this build's version");
    let task = store
        .insert(&Owner::new("bob"), TaskRequest::new(1, "tools/call"))
        .expect("a task");
    assert_eq!(task.attempts(), None);
}

#[test]
fn a_schema_newer_than_the_build_is_refused() {
    let Some(url) = shared_url() else { return };
    let schema = fresh_schema();
    PostgresTaskStore::migrate(&url, &schema).expect("migrated");
    let _ = shared_psql(&format!(
        "INSERT INTO {schema}.migrations (version) VALUES (999)"
    ));
    for migrate in [true, false] {
        let refused = PostgresTaskStore::builder(&url)
            .schema(&schema)
            .migrate(migrate)
            .build()
            .expect_err("a newer schema");
        assert!(refused.to_string().contains("999"), "{refused}");
    }
}

#[test]
fn a_database_that_cannot_be_reached_is_a_store_error_at_build() {
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let started = std::time::Instant::now();
    let error = PostgresTaskStore::builder(&format!("postgres://postgres@127.0.0.1:{port}/x"))
        .io_timeout(std::time::Duration::from_secs(2))
        .build()
        .expect_err("nothing listens there");
    assert!(matches!(error, Error::Store { .. }), "{error:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let bad = PostgresTaskStore::builder("postgres://[::1").build();
    assert!(matches!(bad, Err(Error::InvalidConfig(_))), "{bad:?}");
    let bad = PostgresTaskStore::builder("postgres://127.0.0.1/x")
        .schema("Bad-Name")
        .build();
    assert!(matches!(bad, Err(Error::InvalidConfig(_))), "{bad:?}");
}

#[test]
fn schemas_keep_instances_apart() {
    let Some(url) = shared_url() else { return };
    let one = PostgresTaskStore::builder(&url)
        .schema(fresh_schema())
        .build()
        .expect("one");
    let other = PostgresTaskStore::builder(&url)
        .schema(fresh_schema())
        .build()
        .expect("other");
    let alice = Owner::new("alice");
    let task = one
        .insert(&alice, TaskRequest::new(1, "tools/call"))
        .expect("a task");
    assert!(matches!(
        other.get(&alice, &task.id().to_string()),
        Err(Error::TaskNotFound { .. })
    ));
}
