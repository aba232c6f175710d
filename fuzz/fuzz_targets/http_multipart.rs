#![no_main]
//! Fuzz target `http_multipart`: see `rntuple_io::fuzz::http_multipart`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple_io::fuzz::http_multipart(data));
