//! The pieces of the on-the-wire peer benchmark (`bench/wire/`) that are worth testing
//! on their own: latency quantiles, reading JSON-RPC messages out of a JSON or
//! `text/event-stream` answer, the two wires' request framing, and the server process
//! readings from `/proc`.
//!
//! The binaries are `wire_load` (the load generator) and `rmcp_own_tm` (the rmcp 3.11 peer
//! with rmcp's own task manager); see `bench/wire/README.md`.

pub mod procfs;
pub mod sse;
pub mod stats;
pub mod wire;
