"""``scaling``: one measurement of a streaming read of ``DATA/nanoaod_root.root``, defined the
same way at every dataset size so that the time per event compares (``bench/scaling.py``
runs it at 0.2M, 2M and 20M events, warm and cold):

- ``read-all``: every page of every field decoded into Arrow, cluster by cluster (one
  record batch per cluster, dropped once counted: at 20M events the decoded data, ~27 GB,
  does not fit in memory), each batch decoded when asked (``decode_ahead=False``);
- ``read-subset``: the same for the 12 analysis fields (``schema.ANALYSIS_FIELDS``);
- ``iterate``: ``nt.iterate(step_size="100 MB")`` over every field into Awkward Arrays
  (decoding ahead, the default) with a trivial reduction per batch (``MET_pt`` summed);
- ``disk``: the file's bytes read front to back in 16 MiB chunks on ``threads`` threads
  (each into its own reused buffer): what reading the file costs with nothing decoded
  (cold: the disk floor);
- ``disk-direct``: the same with direct I/O (``O_DIRECT``, page-aligned buffers): the disk
  without the page cache, as the reader's large cold reads use it (it reads from the disk
  warm or cold).

``--cold`` drops the file's pages from the page cache first
(``posix_fadvise(POSIX_FADV_DONTNEED)`` on the file: only this file, not the machine's
whole cache), so the read comes from the disk. The result line has the wall time, the
entries, the CPU time of the process (all threads), the time the decoder's threads
waited in reads of the file (summed over threads) and the bytes of the file.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from common import emit, parse_args, root_file

TOOLS = ["read-all", "read-subset", "iterate", "disk", "disk-direct"]


def drop_from_page_cache(path: Path) -> None:
    """Evicts the (clean) pages of ``path`` from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_bytes(path: Path, threads: int, direct: bool = False) -> int:
    """Reads the file front to back in 16 MiB chunks, chunk ``k`` by thread ``k % threads``
    into its own reused buffer; returns the bytes read. On these virtual machines filling
    the page cache costs kernel CPU (the host faults the pages in), so one thread alone can
    be slower than the disk; the reader's threads fill it in parallel too. ``direct``:
    with ``O_DIRECT`` into page-aligned buffers (anonymous maps), past the page cache."""
    import mmap
    from concurrent.futures import ThreadPoolExecutor

    chunk = 16 << 20
    size = path.stat().st_size
    try:
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    except OSError as e:
        raise RuntimeError(f"{path}: its file system refuses direct I/O ({e})") from e

    def read_every(first: int) -> int:
        buffer = memoryview(mmap.mmap(-1, chunk) if direct else bytearray(chunk))
        total = 0
        for offset in range(first * chunk, size, threads * chunk):
            total += os.preadv(fd, [buffer], offset)
        return total

    try:
        with ThreadPoolExecutor(threads) as pool:
            return sum(pool.map(read_every, range(threads)))
    finally:
        os.close(fd)


def main() -> None:
    """One measurement."""

    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--cold", action="store_true", help="drop the file from the page cache first")

    args = parse_args(TOOLS, extra)
    path = root_file(args.data)
    if args.cold:
        drop_from_page_cache(path)
    entries = 0
    checksum: dict[str, object] = {}
    # Imports before the clock starts; opening the file is timed.
    import numpy as np
    from schema import ANALYSIS_FIELDS

    import rntuple

    t0, c0 = time.perf_counter(), time.process_time()
    if args.tool in ("disk", "disk-direct"):
        checksum["bytes"] = read_bytes(path, args.threads, direct=args.tool == "disk-direct")
    else:
        nt = rntuple.open(str(path))["Events"]
        if args.tool == "iterate":
            met = 0.0
            for batch in nt.iterate(step_size="100 MB"):
                entries += len(batch)
                met += float(np.sum(batch.MET_pt))
            checksum["sum_MET_pt"] = met
        else:
            fields = None if args.tool == "read-all" else nt._qualified(list(ANALYSIS_FIELDS))
            ranges = [(c.start, c.stop) for c in nt.clusters]
            for batch in nt._reader.batches(fields, ranges, False):
                entries += batch.num_rows
        checksum["entries"] = entries
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    io_wait = 0.0 if args.tool.startswith("disk") else nt.metrics()["io_wait_seconds"]
    emit(
        "scaling",
        args.tool,
        seconds,
        checksum,
        cpu_seconds=cpu,
        io_wait_seconds=io_wait,
        entries=entries,
        cold=args.cold,
        file_bytes=path.stat().st_size,
        threads=args.threads,
    )


if __name__ == "__main__":
    main()
