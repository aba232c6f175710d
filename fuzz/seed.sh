#!/usr/bin/env bash
# Rebuilds the seed corpus: writes the seeds (rntuple::fuzz::seeds: the conformance files
# from ../shared/ next to the repository, examples/*.root, crates/rntuple/tests/data/*.root,
# and blocks/replies made by the crate) into fuzz/seeds/TARGET/, adds them to
# fuzz/corpus/TARGET/ and minimizes each corpus with `cargo +nightly fuzz cmin` (one input
# per coverage edge, as minimize.sh).
#   fuzz/seed.sh [TARGET...]      (all targets by default)
set -euo pipefail
cd "$(dirname "$0")"
. ./env.sh
targets=${*:-open_file compression envelopes http_multipart xrootd_response recover}
rm -rf seeds
cargo run -q --manifest-path ../Cargo.toml -p rntuple --features fuzzing --example fuzz_seeds -- \
    "$PWD/seeds" "$PWD/.."
for t in $targets; do
    mkdir -p "corpus/$t"
    cp seeds/"$t"/* "corpus/$t/"
    nice -n 10 cargo +nightly fuzz cmin -O "$t" "corpus/$t" -- -use_counters=0 -rss_limit_mb=2048 -timeout=10 \
        >"seeds/cmin-$t.log" 2>&1
    echo "$t: $(find "corpus/$t" -type f | wc -l) files, $(du -sk "corpus/$t" | cut -f1) KiB"
done
