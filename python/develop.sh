#!/usr/bin/env bash
# Builds the extension in place for development: `bash python/develop.sh`, then run
# Python with `PYTHONPATH=python` to use this checkout's package without installing it
# (`pip install ./python` is the normal install).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p rntuple-python --features extension-module
cp target/release/lib_core.so python/rntuple/_core.abi3.so
