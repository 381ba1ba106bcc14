//! The store test kit's driver suite against `RedisDriver`: each driver is a fresh key
//! prefix on one private `redis-server` per test (without `redis-server` on `PATH`, the
//! tests say `SKIPPED` and pass).

use mcp_tasks_redis::{RedisDriver, RedisTaskStore};
use mcp_tasks_test_support::redis::RedisServer;
use mcp_tasks_testkit::DriverBackend;

/// Drivers on a private server, a fresh key prefix each.
struct Redis {
    server: RedisServer,
}

impl DriverBackend for Redis {
    type Driver = RedisDriver;

    fn driver(&self) -> RedisDriver {
        let prefix = format!("drivers-{}", uuid::Uuid::new_v4().simple());
        self.another_on(&prefix)
    }

    fn another(&self, driver: &RedisDriver) -> RedisDriver {
        self.another_on(driver.prefix())
    }
}

impl Redis {
    fn start() -> Option<Redis> {
        RedisServer::start().map(|server| Redis { server })
    }

    fn another_on(&self, prefix: &str) -> RedisDriver {
        RedisTaskStore::builder(&self.server.url())
            .prefix(prefix)
            .build_driver()
            .expect("a RedisDriver on the test server")
    }
}

mcp_tasks_testkit::driver_suite!(redis, Redis::start());
