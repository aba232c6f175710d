#!/usr/bin/env bash
# The whole test suite: lint, Rust unit and integration tests (conformance suite),
# and the cross-tool tests against ROOT 6.40 from PyPI. Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's start, in seconds since this script began: where CI's time goes.
# With the disk's free space: a machine that runs out shows where.
step() { echo "== [${SECONDS}s] $* ($(df -h --output=avail . 2>/dev/null | tail -1 | tr -d ' ') free)" >&2; }

step "system packages"
# Servers for the remote-read tests (nginx for http://; openssl makes its test CA).
if ! { command -v nginx || command -v /usr/sbin/nginx; } >/dev/null || ! command -v openssl >/dev/null; then
    apt-get install -y nginx openssl || { apt-get update && apt-get install -y nginx openssl; }
fi
# The XRootD server of tests/test_remote_xrootd.py (and the cross-protocol tests), and
# openssl for its TLS certificates.
command -v xrootd >/dev/null || { apt-get update && apt-get install -y xrootd-server; }
# XCache (tests/server_xcache.py): the proxy (libXrdPss) and proxy file cache (libXrdPfc)
# plugins, and xrdpfc_print (in xrootd-server) to read the cache's .cinfo files.
dpkg -s xrootd-server-plugins >/dev/null 2>&1 || { apt-get update && apt-get install -y xrootd-server-plugins; }
command -v openssl >/dev/null || { apt-get update && apt-get install -y openssl; }

step "pip install -r tests/requirements.txt"
python3 -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt
step "the Python package"
# The Python package, built from this checkout by maturin (the README's install command,
# quiet: the README's -v shows cargo's progress). tests/test_install.py builds it again in
# a fresh venv from the same target/ (no recompiling: pyproject's PYO3_NO_PYTHON).
python3 -m pip install --quiet --disable-pip-version-check ./python

step "lint"
ruff check .
ruff format --check .

cargo fmt --all -- --check
step "clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "cargo doc"
# Public items documented, doc links resolve.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
step "release build"
# The command and the test tools (crates/rntuple-testkit: propgen, delay_proxy, io_probe,
# concurrent_read) in one release build, sharing the library built for the Python module.
cargo build --release -p rntuple-cli -p rntuple-testkit
step "cargo test"
# Allowed skips of the Rust tests (crates/rntuple/src/test_skips.rs) are listed here, and
# cargo's counts kept, for the summary after it.
export RNTUPLE_SKIP_LOG="$PWD/target/skips.log"
rm -f "$RNTUPLE_SKIP_LOG"
mkdir -p target
cargo test --workspace 2>&1 | tee target/cargo-test.log
# The Rust tests all test this project; pytest's last line counts the product tests apart
# from the oracle and harness checks (tests/report_kinds.py).
rust=$(awk '/^test result:/ {p += $4; f += $6; i += $8} END {print p " passed, " f " failed, " i " ignored"}' target/cargo-test.log)
echo "== Rust tests: $rust; allowed skips: $(cat "$RNTUPLE_SKIP_LOG" 2>/dev/null | wc -l)" >&2
cat "$RNTUPLE_SKIP_LOG" 2>/dev/null >&2 || true
step "without remote sources"
# The library without its remote sources (no tokio, reqwest, object_store, rustls): it
# builds, lints clean, and a URL of a left-out source is a clear error.
cargo clippy -p rntuple --no-default-features --all-targets -- -D warnings
cargo test -p rntuple --no-default-features --lib

# CI's machines may have little disk: the debug build (about 4 GB) is not needed past
# here (pytest runs the release binaries and the installed package).
if [ "${RNTUPLE_FREE_DISK:-}" = 1 ]; then
    rm -rf target/debug
fi

export RNTUPLE_BIN="$PWD/target/release/rntuple"
step "pytest"
# On every core (up to 4), each test file on one worker: its module fixtures (servers,
# generated files) are built once.
python3 -m pytest -q --durations=30 -n auto --maxprocesses 4 --dist loadfile tests
step "done"
