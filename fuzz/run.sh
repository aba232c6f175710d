#!/usr/bin/env bash
# Runs fuzz targets for a given time, one at a time, one process each, niced:
#   fuzz/run.sh TARGET SECONDS     (TARGET: open_file, compression, envelopes,
#   fuzz/run.sh all SECONDS         http_multipart, xrootd_response, recover)
# New inputs go into fuzz/corpus/TARGET/, crashes into fuzz/artifacts/TARGET/, the full
# libFuzzer output into fuzz/logs/TARGET.log. Prints the final stats of each run.
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -uo pipefail
cd "$(dirname "$0")"
. ./env.sh

TARGETS="open_file compression envelopes http_multipart xrootd_response recover"

max_len() {
    case "$1" in
        open_file) echo 131072 ;;     # the largest seeds (examples/events.root) are ~90 KB
        compression) echo 65536 ;;
        envelopes) echo 32768 ;;
        http_multipart) echo 16384 ;;
        xrootd_response) echo 8192 ;;
        recover) echo 131072 ;;       # checkpointed copies of the example cut short
        *) echo "unknown target $1" >&2; exit 2 ;;
    esac
}

run_one() {
    local target=$1 seconds=$2 log="logs/$1.log" status=0
    mkdir -p "corpus/$target" logs
    echo "== $target: ${seconds}s, max_len $(max_len "$target"), $(date -u +%FT%TZ)"
    # One in-process job (no -jobs/-fork: libFuzzer's -jobs=1 would run the job in a
    # child process whose output goes to fuzz-0.log).
    nice -n 10 cargo +nightly fuzz run -O "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -max_len="$(max_len "$target")" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E '^#[0-9]+' "$log" | tail -n 1
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)' "$log"
    echo "corpus: $(find "corpus/$target" -type f | wc -l) files, $(du -sk "corpus/$target" | cut -f1) KiB"
    if [ "$status" -ne 0 ]; then
        echo "!! $target stopped with status $status (a crash, hang or OOM?): see $log and artifacts/$target/"
        grep -E 'ERROR: libFuzzer|SUMMARY|panicked at|Test unit written' "$log" | head -n 5
    fi
    return "$status"
}

if [ $# -ne 2 ]; then
    echo "usage: $0 TARGET|all SECONDS" >&2
    exit 2
fi
if [ "$1" = all ]; then
    failed=0
    for t in $TARGETS; do run_one "$t" "$2" || failed=1; done
    exit "$failed"
fi
run_one "$1" "$2"
