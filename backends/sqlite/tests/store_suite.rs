//! The store test kit against `SqliteTaskStore`: each store is a fresh file in a
//! temporary directory the test's backend owns; another instance opens the same file.

use mcp_tasks::TaskStore;
use mcp_tasks_sqlite::SqliteTaskStore;
use mcp_tasks_testkit::{Backend, Config};

/// `SqliteTaskStore` on fresh files in one temporary directory (removed with it).
struct Sqlite {
    dir: tempfile::TempDir,
}

impl Backend for Sqlite {
    type Store = SqliteTaskStore;

    fn store(&self, config: Config) -> SqliteTaskStore {
        let path = self
            .dir
            .path()
            .join(format!("suite-{}.db", uuid::Uuid::new_v4().simple()));
        SqliteTaskStore::builder(path)
            .ttl_policy(config.ttl)
            .limits(config.limits)
            .poll_interval(config.poll_interval)
            .build()
            .expect("a SqliteTaskStore on a temporary file")
    }

    fn another_instance(&self, store: &SqliteTaskStore) -> Option<SqliteTaskStore> {
        let built = SqliteTaskStore::builder(store.path())
            .ttl_policy(store.ttl_policy())
            .build()
            .expect("another instance on the same file");
        Some(built)
    }
}

fn start() -> Option<Sqlite> {
    Some(Sqlite {
        dir: tempfile::tempdir().expect("a temporary directory"),
    })
}

mcp_tasks_testkit::store_suite!(sqlite, start());
mcp_tasks_testkit::admin_suite!(sqlite_admin, start());
