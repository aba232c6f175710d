#![no_main]
//! Fuzz target `open_file`: see `rntuple::fuzz::open_file`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple::fuzz::open_file(data));
