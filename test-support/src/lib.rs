//! Real servers for the tests of mcp-tasks, started by the tests themselves and torn down
//! with them: a private `redis-server` ([`redis::RedisServer`]), a private PostgreSQL
//! server that can be crashed and recovered ([`postgres::PostgresServer`]) and a loopback
//! TCP proxy that pauses, drops and resets connections ([`proxy::TcpProxy`]); a child
//! process of the test binary that plays an instance to be killed ([`child::TestChild`]);
//! and a test store, the registry claiming what is handed over to it
//! ([`handing::HandingRegistry`]), for the servers' claim paths without Redis.
//!
//! Not published: the crates of this workspace use it as a dev-dependency.

pub mod child;
pub mod handing;
mod orphans;
pub mod postgres;
pub mod proxy;
pub mod redis;
