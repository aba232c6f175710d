#![no_main]
//! Fuzz target `compression`: see `rntuple::fuzz::compression`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple::fuzz::compression(data));
