#![no_main]
//! Fuzz target `envelopes`: see `rntuple::fuzz::envelopes`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple::fuzz::envelopes(data));
