//! Fuzz target `dispatch`: see `fuzz/README.md` and `harness.rs`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::dispatch(data));
