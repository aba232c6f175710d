#![no_main]
//! Fuzz target `recover`: see `rntuple::fuzz::recover`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple::fuzz::recover(data));
