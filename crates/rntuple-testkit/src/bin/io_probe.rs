//! Reads byte ranges from any source (path or URL) and prints, as one JSON object, the
//! source's size, an xxh3 digest of every range and the source's I/O counters, so that
//! tests can compare a remote read with the same ranges of the local file and check how
//! many requests it took.
//!
//! `cargo run --release -p rntuple-testkit --bin io_probe -- LOCATION [--vectored] OFFSET:LEN...`
//!
//! Without `--vectored` every range is one `read_at` call; with it, all ranges go in one
//! `read_ranges` call.

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use rntuple_io::{open_source, ByteRange, ReadRanges};
use xxhash_rust::xxh3::xxh3_64;

fn main() {
    if let Err(e) = run() {
        eprintln!("io_probe: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let location = args
        .first()
        .ok_or("usage: io_probe LOCATION [--vectored] OFFSET:LEN...")?;
    let vectored = args.iter().any(|a| a == "--vectored");
    let ranges = args[1..]
        .iter()
        .filter(|a| *a != "--vectored")
        .map(|a| {
            let (o, l) = a
                .split_once(':')
                .ok_or_else(|| format!("range \"{a}\" is not OFFSET:LEN"))?;
            Ok(ByteRange {
                offset: o.parse().map_err(|_| format!("bad offset in \"{a}\""))?,
                len: l.parse().map_err(|_| format!("bad length in \"{a}\""))?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let source = open_source(location).map_err(|e| e.to_string())?;
    let chunks = if vectored {
        source.read_ranges(&ranges).map_err(|e| e.to_string())?
    } else {
        ranges
            .iter()
            .map(|r| source.read_at(r.offset, r.len))
            .collect::<rntuple_io::Result<Vec<_>>>()
            .map_err(|e| e.to_string())?
    };
    let digests: Vec<String> = ranges
        .iter()
        .zip(&chunks)
        .map(|(r, c)| {
            format!(
                "{{\"offset\": {}, \"len\": {}, \"read\": {}, \"xxh3\": \"{:016x}\"}}",
                r.offset,
                r.len,
                c.len(),
                xxh3_64(c)
            )
        })
        .collect();
    let m = source.metrics();
    println!(
        "{{\"size\": {}, \"ranges\": [{}], \"metrics\": {{\"requests\": {}, \"vector_requests\": {}, \"ranges\": {}, \"bytes_read\": {}}}}}",
        source.size(),
        digests.join(", "),
        m.requests,
        m.vector_requests,
        m.ranges,
        m.bytes_read
    );
    Ok(())
}
