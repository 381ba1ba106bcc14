//! The store test kit against `RedisTaskStore`: each store is a fresh key prefix on one
//! private `redis-server` per test (without `redis-server` on `PATH`, the tests say
//! `SKIPPED` and pass).

use mcp_tasks::TaskStore;
use mcp_tasks_redis::RedisTaskStore;
use mcp_tasks_test_support::redis::RedisServer;
use mcp_tasks_testkit::{Backend, Config};

/// `RedisTaskStore` on a private server; each store is a fresh key prefix on it.
struct Redis {
    server: RedisServer,
}

impl Redis {
    fn start() -> Option<Redis> {
        RedisServer::start().map(|server| Redis { server })
    }
}

impl Backend for Redis {
    type Store = RedisTaskStore;

    fn store(&self, config: Config) -> RedisTaskStore {
        RedisTaskStore::builder(&self.server.url())
            .prefix(format!("suite-{}", uuid::Uuid::new_v4().simple()))
            .ttl_policy(config.ttl)
            .limits(config.limits)
            .poll_interval(config.poll_interval)
            .build()
            .expect("a RedisTaskStore on the test server")
    }

    fn another_instance(&self, store: &RedisTaskStore) -> Option<RedisTaskStore> {
        let built = RedisTaskStore::builder(&self.server.url())
            .prefix(store.prefix())
            .ttl_policy(store.ttl_policy())
            .build()
            .expect("another instance on the test server");
        Some(built)
    }
}

mcp_tasks_testkit::store_suite!(redis, Redis::start());
mcp_tasks_testkit::admin_suite!(redis_admin, Redis::start());
