//! The store test kit's driver suite against `SqliteDriver`: each driver is a fresh file
//! in a temporary directory the test's backend owns.

use mcp_tasks_sqlite::{SqliteDriver, SqliteTaskStore};
use mcp_tasks_testkit::DriverBackend;

/// Drivers on fresh files in one temporary directory (removed with the backend).
struct Sqlite {
    dir: tempfile::TempDir,
}

impl DriverBackend for Sqlite {
    type Driver = SqliteDriver;

    fn driver(&self) -> SqliteDriver {
        let path = self
            .dir
            .path()
            .join(format!("drivers-{}.db", uuid::Uuid::new_v4().simple()));
        on(&path)
    }

    fn another(&self, driver: &SqliteDriver) -> SqliteDriver {
        on(driver.path())
    }
}

fn on(path: &std::path::Path) -> SqliteDriver {
    SqliteTaskStore::builder(path)
        .build_driver()
        .expect("a SqliteDriver on a temporary file")
}

fn start() -> Option<Sqlite> {
    Some(Sqlite {
        dir: tempfile::tempdir().expect("a temporary directory"),
    })
}

mcp_tasks_testkit::driver_suite!(sqlite, start());
