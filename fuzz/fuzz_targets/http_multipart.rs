#![no_main]
//! Fuzz target `http_multipart`: see `rntuple::fuzz::http_multipart`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple::fuzz::http_multipart(data));
