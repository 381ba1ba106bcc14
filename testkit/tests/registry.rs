//! The kit held against its reference: the in-process registry passes every test.

use mcp_tasks::TaskRegistry;
use mcp_tasks_testkit::{Backend, Config};

/// The in-process registry, a new one per store.
struct Registry;

impl Backend for Registry {
    type Store = TaskRegistry;

    fn store(&self, config: Config) -> TaskRegistry {
        TaskRegistry::builder()
            .ttl_policy(config.ttl)
            .limits(config.limits)
            .poll_interval(config.poll_interval)
            .build()
            .expect("a valid registry configuration")
    }
}

mcp_tasks_testkit::store_suite!(registry, Some(Registry));
mcp_tasks_testkit::admin_suite!(registry_admin, Some(Registry));
