#![no_main]
//! Fuzz target `xrootd_response`: see `rntuple_io::fuzz::xrootd_response`.

libfuzzer_sys::fuzz_target!(|data: &[u8]| rntuple_io::fuzz::xrootd_response(data));
