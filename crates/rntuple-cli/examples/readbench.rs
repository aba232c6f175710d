//! Reads fields of an RNTuple into memory and reports the throughput in uncompressed
//! bytes: `readbench FILE [REPEATS] [FIELD,FIELD,...]`.

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: readbench FILE [REPEATS] [FIELDS]")?;
    let repeats: usize = args.get(2).map_or(Ok(3), |s| s.parse())?;
    let names: Option<Vec<String>> = args
        .get(3)
        .map(|s| s.split(',').map(str::to_string).collect());
    let reader = rntuple::read::RNTupleReader::open_path(path, None)?;
    let n = reader.num_entries();
    let bytes: u64 = reader
        .selection_bytes_per_cluster(names.as_deref())?
        .iter()
        .sum();
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let batch = reader.read(names.as_deref(), 0..n)?;
        let dt = t.elapsed().as_secs_f64();
        best = best.min(dt);
        eprintln!(
            "{} rows x {} columns in {dt:.3} s",
            batch.num_rows(),
            batch.num_columns()
        );
    }
    println!(
        "{:.1} MB uncompressed, best {best:.3} s, {:.0} MB/s",
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / best
    );
    Ok(())
}
