"""``write``: writing the whole dataset as an RNTuple with zstd level 5 (ROOT's 505).

The input is read into memory first (not timed); only the write is timed, up to a
complete file on disk. Tools: ``ours`` (``rntuple.recreate(..., compression="zstd:5")``
of the pyarrow Table our reader produced), ``ours-parallel`` (``rntuple.recreate_parallel``
of the same Table, split into one chunk of consecutive entries per thread, each thread
extending a fill context of its own), ``ours-cli`` (``rntuple copy --compression
zstd:5`` as a whole process: reading, decoding and writing), ``root`` (``RNTupleWriter``
filled entry by entry from columnar C++ buffers; ``threads > 1`` enables implicit MT,
which compresses pages in parallel). The checksum is the number of entries and fields of
the written file (read back with ``rntuple``). The result line also reports the file size
and the memory the write itself needed (``write_memory_mb``): the process's high-water mark
of resident memory is reset (``/proc/self/clear_refs``) just before the write, after
freed memory the allocator kept is handed back (``malloc_trim``), and the measure is the
high-water mark after it minus the resident memory before it. (The whole
process's peak would hide the write behind transient peaks of reading the input.)
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from pathlib import Path

from common import REPO, Timer, emit, parse_args, root_file

TOOLS = ["ours", "ours-parallel", "ours-cli", "root"]


def _status_mb(key: str) -> float:
    """A ``/proc/self/status`` memory figure (``VmRSS``, ``VmHWM``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {key} in /proc/self/status")


def _release_freed_memory() -> None:
    """Hands memory the process freed but the allocator kept back to the system
    (glibc's ``malloc_trim``), so that the write's high-water mark counts what the write
    touches. Without it, a tool whose earlier work (reading the input) left freed heap
    resident fills its write pages there unseen: ROOT's 1-thread write of 500k events
    measured 117 MB without the trim and 265 MB with it."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc: nothing kept back to release this way
    libc.malloc_trim(0)


def _start_memory_watch() -> float:
    """Releases freed memory, resets the resident high-water mark; returns the resident
    MB now."""
    _release_freed_memory()
    Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


def main() -> None:
    """Runs one measurement."""
    from schema import field_names

    args = parse_args(TOOLS, lambda p: p.add_argument("--tmp", type=Path, default=None))
    src = str(root_file(args.data))
    out = (args.tmp or args.data) / f"bench_write_{args.tool}_{os.getpid()}.root"
    names = field_names()
    rss_before = 0.0
    write_memory = 0.0
    try:
        if args.tool == "ours":
            import rntuple

            table = rntuple.open(src)["Events"].arrays(library="arrow")
            rss_before = _start_memory_watch()
            with Timer() as t, rntuple.recreate(str(out), compression="zstd:5") as f:
                f["Events"] = table
            seconds = t.seconds
            write_memory = _status_mb("VmHWM") - rss_before
        elif args.tool == "ours-parallel":
            import itertools
            from concurrent.futures import ThreadPoolExecutor

            import rntuple

            table = rntuple.open(src)["Events"].arrays(library="arrow")
            bounds = [len(table) * k // args.threads for k in range(args.threads + 1)]
            chunks = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
            rss_before = _start_memory_watch()
            with (
                Timer() as t,
                rntuple.recreate_parallel(str(out), "Events", table.schema, compression="zstd:5") as w,
            ):

                def fill(chunk: object) -> None:
                    with w.fill_context() as ctx:
                        ctx.extend(chunk)

                with ThreadPoolExecutor(args.threads) as pool:
                    list(pool.map(fill, chunks))
            seconds = t.seconds
            write_memory = _status_mb("VmHWM") - rss_before
        elif args.tool == "ours-cli":
            cli = REPO / "target" / "release" / "rntuple"
            t0 = time.perf_counter()
            subprocess.run(
                [str(cli), "copy", src, str(out), "--compression", "zstd:5", "--force"], check=True
            )
            seconds = time.perf_counter() - t0
        else:
            from rootcode import declare, write_source

            ROOT = declare(names)
            if not ROOT.gInterpreter.Declare(write_source(names)):
                raise RuntimeError("C++ write code did not compile")
            sinks = ROOT.std.vector["BenchSink"]()
            ROOT.bench_read_rdf(src, ROOT.std.vector["std::string"](names), 1, sinks)
            if args.threads > 1:
                ROOT.EnableImplicitMT(args.threads)
            rss_before = _start_memory_watch()
            seconds = ROOT.bench_write(sinks[0], str(out), 505)
            write_memory = _status_mb("VmHWM") - rss_before
        import rntuple

        written = rntuple.open(str(out))["Events"]
        checksum = {"entries": written.num_entries, "fields": len(written.fields)}
        size = out.stat().st_size
    finally:
        out.unlink(missing_ok=True)
    emit(
        "write", args.tool, seconds, checksum, threads=args.threads, file_bytes=size,
        rss_before_mb=round(rss_before, 1), write_memory_mb=round(write_memory, 1),
    )  # fmt: skip


if __name__ == "__main__":
    main()
