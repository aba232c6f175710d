//! Writes the fuzz seed corpus (`rntuple::fuzz::seeds`) into `OUT/<target>/`:
//! `cargo run -p rntuple --features fuzzing --example fuzz_seeds -- OUT [REPO]`
//! (`fuzz/seed.sh` runs it, then minimizes the seeds into `fuzz/corpus/`).

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let out = PathBuf::from(args.next().unwrap_or_else(|| "fuzz/seeds".into()));
    let repo = PathBuf::from(
        args.next()
            .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../..").into()),
    );
    let seeds = rntuple::fuzz::seeds(&repo)?;
    for (target, name, bytes) in &seeds {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join(name), bytes)?;
    }
    println!("{} seeds written to {}", seeds.len(), out.display());
    Ok(())
}
