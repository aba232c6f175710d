#!/usr/bin/env bash
# Minimizes corpora before they are committed: `cargo +nightly fuzz cmin` keeping one
# input per coverage edge (-use_counters=0: hit counts are not features), which keeps
# fuzz/corpus small enough for the repository and for the replay in `cargo test`.
#   fuzz/minimize.sh [TARGET...]      (all targets by default)
set -euo pipefail
cd "$(dirname "$0")"
. ./env.sh
targets=${*:-open_file compression envelopes http_multipart xrootd_response recover}
mkdir -p logs
for t in $targets; do
    nice -n 10 cargo +nightly fuzz cmin -O "$t" "corpus/$t" -- -use_counters=0 \
        -rss_limit_mb=2048 -timeout=10 >"logs/cmin-$t.log" 2>&1
    echo "$t: $(find "corpus/$t" -type f | wc -l) files, $(du -sk --apparent-size "corpus/$t" | cut -f1) KiB;" \
        "$(grep -E '^MERGE-OUTER: [0-9]+ new files' "logs/cmin-$t.log")"
done
