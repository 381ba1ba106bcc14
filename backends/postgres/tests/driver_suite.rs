//! The store test kit's driver suite against `PostgresDriver`: each driver is a fresh
//! schema on one private PostgreSQL cluster shared by the tests of this binary (without
//! PostgreSQL installed, the tests say `SKIPPED` and pass).

use mcp_tasks_postgres::{PostgresDriver, PostgresTaskStore};
use mcp_tasks_test_support::postgres::shared_url;
use mcp_tasks_testkit::DriverBackend;

/// Drivers on the binary's server, a fresh schema each.
struct Postgres {
    url: String,
}

impl DriverBackend for Postgres {
    type Driver = PostgresDriver;

    fn driver(&self) -> PostgresDriver {
        self.in_schema(&format!("drivers_{}", uuid::Uuid::new_v4().simple()))
    }

    fn another(&self, driver: &PostgresDriver) -> PostgresDriver {
        self.in_schema(driver.schema())
    }
}

impl Postgres {
    fn start() -> Option<Postgres> {
        shared_url().map(|url| Postgres { url })
    }

    fn in_schema(&self, schema: &str) -> PostgresDriver {
        PostgresTaskStore::builder(&self.url)
            .schema(schema)
            .build_driver()
            .expect("a PostgresDriver on the test server")
    }
}

mcp_tasks_testkit::driver_suite!(postgres, Postgres::start());
