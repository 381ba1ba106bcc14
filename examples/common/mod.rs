//! Code shared by the example servers: the tools (handlers) and the request routing.
#![allow(dead_code)]

pub mod server;
pub mod tools;
