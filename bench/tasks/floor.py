"""``floor``: what each task cannot beat on this machine, measured on the dataset's ROOT-written
RNTuple (``nanoaod_root.root``) by ``target/release/floor`` (``crates/rntuple-testkit``).

Tools:

- ``decompress-all``: every page of every column decompressed on ``--threads`` threads, each
  into its own reused buffer with a reused zstd context (the pages are loaded into memory
  first, untimed): the floor of ``read_all``.
- ``decompress-subset``: the same for the columns of the analysis fields: the floor of
  ``read_subset`` and ``agc``.
- ``compress-all``: every page of every column (decompressed first, untimed) compressed again
  with its column's setting in the file (505: zstd level 10) on ``--threads`` threads, a fresh
  zstd context per page as ROOT (a reused context gives other bytes than ROOT's): the floor of
  ``write``.
- ``disk``: the file dropped from the page cache, then read front to back in 16 MiB chunks on
  ``--threads`` threads: the floor of a cold read of the whole file.
- ``fresh-memory``: as many bytes as ``read_all`` returns, in fresh pages of the process,
  written once on ``--threads`` threads: what obtaining the output's memory costs here (not a
  floor of any task by itself; it shows what bounds a read that returns all of its data).
- ``fresh-memory-huge``: the same in transparent huge pages (``MADV_HUGEPAGE`` before the first
  write), as the reader's columns with ``RNTUPLE_HUGE_PAGES=always``.

The checksum is the number of pages and bytes involved, equal in every repetition.
"""

from __future__ import annotations

import json
import subprocess

from common import REPO, Timer, emit, parse_args, root_file
from schema import ANALYSIS_FIELDS

TOOLS = ["decompress-all", "decompress-subset", "compress-all", "disk", "fresh-memory", "fresh-memory-huge"]


def floor_binary() -> str:
    """The release build of the floor tool."""
    exe = REPO / "target" / "release" / "floor"
    if not exe.exists():
        raise SystemExit(f"{exe} is missing: cargo build --release -p rntuple-testkit")
    return str(exe)


def main() -> None:
    """One measurement."""
    args = parse_args(TOOLS)
    path = str(root_file(args.data))
    threads = ["--threads", str(args.threads)]
    cmd = {
        "decompress-all": ["decompress", path, *threads],
        "decompress-subset": ["decompress", path, "--fields", ",".join(ANALYSIS_FIELDS), *threads],
        "compress-all": ["compress", path, *threads],
        "disk": ["disk", path, *threads],
        "fresh-memory": ["fresh-memory", path, *threads],
        "fresh-memory-huge": ["fresh-memory-huge", path, *threads],
    }[args.tool]
    with Timer() as t:
        out = subprocess.run([floor_binary(), *cmd], capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    checksum = {k: report[k] for k in ("pages", "uncompressed_bytes")}
    if args.tool != "compress-all":
        checksum["compressed_bytes"] = report["compressed_bytes"]
    emit("floor", args.tool, report["seconds"], checksum, process_seconds=t.seconds)


if __name__ == "__main__":
    main()
