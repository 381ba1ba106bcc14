//! Fuzz target `any_task`: see `fuzz/README.md` and `harness.rs`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::any_task(data));
