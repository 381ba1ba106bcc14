//! The store test kit against `PostgresTaskStore`: each store is a fresh schema on one
//! private PostgreSQL cluster shared by the tests of this binary (without PostgreSQL
//! installed, the tests say `SKIPPED` and pass).

use mcp_tasks::TaskStore;
use mcp_tasks_postgres::PostgresTaskStore;
use mcp_tasks_test_support::postgres::shared_url;
use mcp_tasks_testkit::{Backend, Config};

/// `PostgresTaskStore` on the binary's server; each store is a fresh schema on it.
struct Postgres {
    url: String,
}

impl Postgres {
    fn start() -> Option<Postgres> {
        shared_url().map(|url| Postgres { url })
    }
}

impl Backend for Postgres {
    type Store = PostgresTaskStore;

    fn store(&self, config: Config) -> PostgresTaskStore {
        PostgresTaskStore::builder(&self.url)
            .schema(format!("suite_{}", uuid::Uuid::new_v4().simple()))
            .ttl_policy(config.ttl)
            .limits(config.limits)
            .poll_interval(config.poll_interval)
            .build()
            .expect("a PostgresTaskStore on the test server")
    }

    fn another_instance(&self, store: &PostgresTaskStore) -> Option<PostgresTaskStore> {
        let built = PostgresTaskStore::builder(&self.url)
            .schema(store.schema())
            .ttl_policy(store.ttl_policy())
            .build()
            .expect("another instance on the test server");
        Some(built)
    }
}

mcp_tasks_testkit::store_suite!(postgres, Postgres::start());
mcp_tasks_testkit::admin_suite!(postgres_admin, Postgres::start());
