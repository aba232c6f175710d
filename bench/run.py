"""The benchmark suite's one command: ``python3 bench/run.py [--events N] [--repeat R] [--tasks ...]``.

Generates the dataset if missing (``bench/generate.py``), then runs every task's tools
``R`` times each, alternating the tools (ours, peer, ours, peer, ...; forwards and backwards
in turn, see ``repetition_order``), one process per
measurement, and records each process's wall time of the measured work (reported by the
task), its peak RSS (``os.wait4`` rusage) and its checksum. The checksums of all tools of
a task must agree or the run fails. Writes ``bench/RESULTS.md``: per task a table of
tool, median and min seconds, ratio of the tool's median to ours, uncompressed MB/s and
peak RSS, plus the machine, the versions and the command.

Only the files the selected tasks read are generated (``convert`` reads only the TTree:
``generate.py --only ttree``). The first output of every tool of a task in ``VERIFIED``
is kept and checked by the task script's ``--verify`` in a separate process (not measured)
before the next measurement, so that a broken output is never timed again.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH / "tasks"))
sys.path.insert(0, str(BENCH))

from common import checksums_agree, cpu_model, memory_bytes, write_report  # noqa: E402
from generate import KINDS  # noqa: E402
from schema import ANALYSIS_FIELDS  # noqa: E402

# The tools of read_all and read_subset, which read the same files (all fields or the analysis ones).
READ_TOOLS: list[tuple[str, str, int]] = [
    ("ours (awkward)", "ours-ak", 2),
    ("ours (arrow)", "ours-arrow", 2),
    ("ROOT RDataFrame, 2 threads", "root-rdf", 2),
    ("uproot (RNTuple)", "uproot", 2),
    ("uproot (TTree)", "uproot-ttree", 2),
    ("pyarrow (Parquet), 2 threads", "pyarrow", 2),
]

# task -> (script, [(label, tool, threads)]); the first entry is "ours", the reference of ratios.
TASKS: dict[str, tuple[str, list[tuple[str, str, int]]]] = {
    "floor": (
        "floor.py",
        [
            ("decompress every page of every column (reused buffers), 2 threads", "decompress-all", 2),
            ("decompress the analysis fields' pages (reused buffers), 2 threads", "decompress-subset", 2),
            ("compress every page again with the file's setting (505), 2 threads", "compress-all", 2),
            ("read the file's bytes, page cache dropped, 2 threads", "disk", 2),
            ("fresh memory of read_all's size, written once, 2 threads", "fresh-memory", 2),
            ("the same in transparent huge pages (MADV_HUGEPAGE), 2 threads", "fresh-memory-huge", 2),
        ],
    ),
    "read_all": ("read_all.py", READ_TOOLS),
    "read_subset": ("read_subset.py", READ_TOOLS),
    "agc": (
        "agc.py",
        [
            ("ours (iterate 100 MB batches, 2 analysis threads, awkward + hist)", "ours-threads", 2),
            ("ours (iterate 100 MB batches, awkward + hist)", "ours-iterate", 2),
            ("ours (one read, awkward + hist)", "ours", 2),
            ("ROOT RDataFrame, 1 thread", "root-rdf", 1),
            ("ROOT RDataFrame, 2 threads", "root-rdf", 2),
            ("uproot (awkward + hist)", "uproot", 2),
            ("uproot (iterate 100 MB batches, 2 analysis threads)", "uproot-threads", 2),
            ("pyarrow + numpy, 2 threads", "pyarrow", 2),
        ],
    ),
    "coffea_agc": (
        "coffea_agc.py",
        [
            ("coffea on ours, eager", "ours-eager", 2),
            ("coffea on uproot, eager", "uproot-eager", 2),
            ("coffea on ours, LocalCluster 2 workers, whole clusters", "ours-dask", 2),
            ("coffea on ours, LocalCluster 2 workers, 1 partition", "ours-dask-1", 2),
            ("coffea on uproot, LocalCluster 2 workers, 1 partition", "uproot-dask", 2),
        ],
    ),
    "write": (
        "write.py",
        [
            ("ours (Python, from Arrow)", "ours", 2),
            ("ours, parallel writer, 2 threads", "ours-parallel", 2),
            ("ours (rntuple copy, whole process)", "ours-cli", 2),
            ("ROOT RNTupleWriter, 1 thread", "root", 1),
            ("ROOT RNTupleWriter, 2 threads (IMT)", "root", 2),
        ],
    ),
    "open_latency": (
        "open_latency.py",
        [
            ("ours", "ours", 1),
            ("ROOT RNTupleReader::Open", "root", 1),
            ("uproot", "uproot", 1),
        ],
    ),
    "convert": (
        "convert.py",
        [
            ("ours (rntuple convert, whole process)", "ours", 2),
            ("ROOT RNTupleImporter, 1 thread", "root", 1),
            ("ROOT RNTupleImporter, 2 threads (IMT)", "root", 2),
        ],
    ),
    "iterate_compute": (
        "iterate_compute.py",
        [
            ("12 analysis fields, 20 MB steps: read only", "read-subset", 2),
            ("12 analysis fields: compute only", "compute-subset", 2),
            ("12 analysis fields: loop, decoding ahead", "loop-subset", 2),
            ("12 analysis fields: loop, decode_ahead=False", "loop-subset-plain", 2),
            ("all fields, 100 MB steps: read only", "read-all", 2),
            ("all fields: compute only", "compute-all", 2),
            ("all fields: loop, decoding ahead", "loop-all", 2),
            ("all fields: loop, decode_ahead=False", "loop-all-plain", 2),
        ],
    ),
    "merge": (
        "merge.py",
        [
            ("ours (rntuple merge, whole process, synced to disk)", "ours", 2),
            ("ROOT hadd -f505 (not synced)", "hadd", 1),
            ("cp of the inputs (not synced)", "cp", 1),
            ("cp of the inputs, then sync", "cp-sync", 1),
        ],
    ),
}

# The floor (a ``floor`` tool) each task's "x floor" column divides by; tasks not listed have
# none. Running any of these tasks runs ``floor`` first.
FLOOR_OF: dict[str, str] = {
    "read_all": "decompress-all",
    "read_subset": "decompress-subset",
    "agc": "decompress-subset",
    "write": "compress-all",
    "convert": "compress-all",
}

FLOOR_NOTE = (
    "What no tool can beat on this machine, measured in this run on `nanoaod_root.root` by "
    "`target/release/floor` (`crates/rntuple-testkit/src/bin/floor.rs`): the codec alone on every "
    "page (pages in memory before the clock starts; each thread decompresses into its own reused "
    "buffer with a reused zstd context, or compresses as ROOT does, a fresh context per page; no "
    "checksum, no decoding, no fresh memory), "
    "and the disk alone (the file dropped from the page cache, then read front to back in 16 MiB "
    "chunks on 2 threads). Every other "
    "table's *x floor* is the tool's median / the median of its task's floor: read_all: decompress "
    "every column; read_subset and agc: decompress the analysis fields; write and convert: compress "
    "every page. *fresh memory* is not a floor: it is what obtaining read_all's output memory "
    "costs here, which any reader that hands all of its data to the caller pays on top of the codec; "
    "the row after it is the same in transparent huge pages, as the reader's columns with "
    "`RNTUPLE_HUGE_PAGES=always`."
)

# The dataset files (kinds of ``generate.py --only``) each task reads; default: all of them.
NEEDS: dict[str, list[str]] = {
    "floor": ["root"],
    "convert": ["ttree"],
    "merge": ["root"],
    "coffea_agc": ["root"],
    "iterate_compute": ["root"],
}

# Tasks whose first output of each tool is kept and checked with ``SCRIPT --verify OUT``.
VERIFIED = {"convert", "merge"}


def tool_environment(repo: Path = REPO) -> dict[str, str]:
    """The environment of every measurement process: the checkout's Python package, and
    OpenBLAS (NumPy's BLAS) on one thread. No task multiplies matrices, but OpenBLAS's
    worker threads spin for about 0.1 s of CPU after ``import numpy``, inside the timed
    region of every Python tool; on a 2-core machine that takes one core from whatever
    the tool runs in parallel. Every tool gets the same setting."""
    return dict(os.environ, PYTHONPATH=str(repo / "python"), OPENBLAS_NUM_THREADS="1")


def repetition_order(n: int, rep: int) -> list[int]:
    """The order of ``n`` tools in repetition ``rep``: forwards in even repetitions and
    backwards in odd ones, rotated by one every two, so that a tool does not always run
    right after the same one. A process that follows a large one can pay for the memory
    that one freed: the Python write took 9.74-10.24 s right after ROOT's 3.7 GB write and
    9.49-9.65 s otherwise (this VM, by hand)."""
    order = list(range(n))[:: -1 if rep % 2 else 1]
    shift = rep // 2 % n if n else 0
    return order[shift:] + order[:shift]


def run_measured(
    script: str, tool: str, threads: int, data: Path, extra: list[str] | None = None, repo: Path = REPO
) -> dict[str, Any]:
    """Runs one measurement process (with ``extra`` arguments) of the task script of
    checkout ``repo`` (its Python package and release build); returns its result line plus
    ``wall`` and ``rss_mb`` (its peak RSS from ``os.wait4``)."""
    cmd = [sys.executable, str(repo / "bench" / "tasks" / script), "--tool", tool, "--data", str(data)]
    cmd += ["--threads", str(threads), *(extra or [])]
    env = tool_environment(repo)
    out_path = Path(f"/tmp/bench_run_{os.getpid()}.out")
    err_path = Path(f"/tmp/bench_run_{os.getpid()}.err")
    t0 = time.perf_counter()
    with out_path.open("w") as out, err_path.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    stdout, stderr = out_path.read_text(), err_path.read_text()
    out_path.unlink(missing_ok=True)
    err_path.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise SystemExit(f"FAILED ({proc.returncode}): {shlex.join(cmd)}\n{stderr[-4000:]}")
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise SystemExit(f"no result line from {shlex.join(cmd)}\n{stdout[-2000:]}\n{stderr[-2000:]}")
    result = json.loads(lines[-1])
    result["wall"] = wall
    result["rss_mb"] = usage.ru_maxrss / 1024.0  # Linux: kilobytes
    result["cpu_s"] = usage.ru_utime + usage.ru_stime  # the whole process's, imports included
    return result


def measure_verified(
    script: str, tool: str, threads: int, data: Path, index: int, repo: Path = REPO
) -> dict[str, Any]:
    """One measurement (by checkout ``repo``) whose output is kept, checked with this
    checkout's ``SCRIPT --verify OUT`` in a process of its own (which fails the run if the
    output is wrong), then removed."""
    out = data / f"bench_verify_{Path(script).stem}_{index}_{os.getpid()}.root"
    try:
        result = run_measured(script, tool, threads, data, ["--out", str(out), "--keep"], repo)
        cmd = [sys.executable, str(BENCH / "tasks" / script), "--verify", str(out), "--data", str(data)]
        env = tool_environment()
        check = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if check.returncode != 0:
            tail = check.stdout[-2000:] + check.stderr[-4000:]
            raise SystemExit(f"OUTPUT CHECK FAILED: {shlex.join(cmd)}\n{tail}")
        print("  " + (check.stdout.strip().splitlines() or ["verified"])[-1], flush=True)
    finally:
        # A tool's output may be a directory (merge's cp).
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink(missing_ok=True)
    return result


def needed_kinds(tasks: list[str]) -> set[str]:
    """The dataset files (``generate.py`` kinds) the tasks read."""
    return {kind for task in tasks for kind in NEEDS.get(task, list(KINDS))}


def default_data(events: int) -> Path:
    """The shared data directory holding ``events`` events if there is one, else ``bench/data/n<events>``."""
    # Beside the repository, so that the large files stay out of the checkout.
    shared = REPO.parent / "bench-data"
    for d in (shared, shared / "small"):
        meta = d / "generate.json"
        if meta.exists() and json.loads(meta.read_text()).get("events") == events:
            return d
    return BENCH / "data" / f"n{events}"


def uncompressed_mb(data: Path, fields: list[str] | None) -> float:
    """Uncompressed size in MB (10^6 bytes) of ``fields`` (all if None) of the ROOT RNTuple."""
    sys.path.insert(0, str(REPO / "python"))
    import rntuple

    events = rntuple.open(str(data / "nanoaod_root.root"))["Events"]
    if fields is None:
        return events.uncompressed_bytes / 1e6
    names = events._qualified(events.resolve_fields(fields))
    return sum(events._reader.cluster_bytes(names)) / 1e6


def machine_info() -> list[str]:
    """Lines describing the machine."""
    load = os.getloadavg()
    return [
        f"- CPU: {cpu_model()}, {os.cpu_count()} logical CPUs (nproc {len(os.sched_getaffinity(0))})",
        f"- memory: {memory_bytes() / 2**30:.1f} GiB",
        f"- OS: {platform.platform()}",
        f"- load average at the end of the run: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}",
    ]


def versions() -> list[str]:
    """Lines with the versions of the tools."""
    code = (
        "import json, awkward, numpy, pyarrow, uproot, hist, sys\n"
        "import ROOT\n"
        "print(json.dumps({'python': sys.version.split()[0], 'ROOT': ROOT.gROOT.GetVersion(),"
        " 'uproot': uproot.__version__, 'awkward': awkward.__version__, 'numpy': numpy.__version__,"
        " 'pyarrow': pyarrow.__version__, 'hist': hist.__version__}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    info = json.loads(out.strip().splitlines()[-1])
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain"], capture_output=True, text=True)
    info["rntuple (git)"] = commit + (" (with local changes)" if dirty.stdout.strip() else "")
    return [f"- {k}: {v}" for k, v in info.items()]


def summarize_convert(rows: list[tuple[str, list[dict[str, Any]]]], floor: float | None) -> list[str]:
    """The Markdown table of ``convert``: times, speed-ups by median and by minimum, s/MB and MB/s
    of the input file, memory, output size."""
    ours_med = statistics.median(r["seconds"] for r in rows[0][1])
    ours_min = min(r["seconds"] for r in rows[0][1])
    ours_size = rows[0][1][0]["file_bytes"]
    lines = [
        "| tool | median s | min s | ours/tool speed-up (median) | speed-up (min) | x floor | s/MB input | "
        "MB/s input | peak RSS MB | memory the conversion needed MB | file MB | size vs ours |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, results in rows:
        secs = [r["seconds"] for r in results]
        med, lo = statistics.median(secs), min(secs)
        mb_in = results[0]["input_bytes"] / 1e6
        rss = statistics.median(r["rss_mb"] for r in results)
        needed = statistics.median(r["convert_memory_mb"] for r in results)
        size = results[0]["file_bytes"]
        cells = [
            label, f"{med:.4g}", f"{lo:.4g}", f"{med / ours_med:.2f}x", f"{lo / ours_min:.2f}x",
            floor_cell(med, floor), f"{med / mb_in:.4f}", f"{mb_in / med:.1f}", f"{rss:.0f}", f"{needed:.0f}",
            f"{size / 1e6:.1f}", f"{size / ours_size:.4f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


CONVERT_NOTE = (
    "Input: the dataset's TTree `nanoaod_ttree.root` ({mb:.0f} MB); output: RNTuple `Events`, "
    "compression 505 for both. s/MB and MB/s are of the input file's size. Ours is timed as a whole "
    "`rntuple convert` process; ROOT's `RNTupleImporter` (Create, SetIsQuiet, write options, Import, "
    "closing the file) is timed in JIT-compiled C++ after `import ROOT`, as the other tasks' ROOT "
    "peers. Peak RSS is the whole measurement process (os.wait4); *memory the conversion needed* is for "
    "ours the `rntuple convert` process's peak RSS (all of it), for ROOT the resident high-water "
    "mark over the import (reset just before it) minus the resident memory before it (ROOT's "
    "libraries not counted). The first output of each tool was checked with ROOT (entries, fields, "
    "RDataFrame sums of Jet_pt, Muon_pt, nJet equal to the TTree's) before the other repetitions."
)


MERGE_NOTE = (
    "Inputs: {copies} copies of the dataset's ROOT-written RNTuple (`nanoaod_root.root`, zstd 505), "
    "{mb:.0f} MB in all; output: one RNTuple of their entries, compression 505 (every page copied). "
    "Each tool is timed as a whole process; MB/s are of the inputs' bytes. Ours writes a temporary "
    "file, syncs it to disk and renames it (an output appears only when complete); hadd and cp leave "
    "their bytes in the page cache, so `cp, then sync` is the copy that does what ours does. The "
    "first output of each tool was checked with ROOT (entries and RDataFrame sums of Jet_pt and nJet "
    "four times the input's) before the other repetitions."
)


def summarize_merge(rows: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The Markdown table of ``merge``: times, ratios by median and by minimum, MB/s, memory."""
    ours_med = statistics.median(r["seconds"] for r in rows[0][1])
    ours_min = min(r["seconds"] for r in rows[0][1])
    # Merging copies pages: its floor is copying the inputs' bytes to disk (the cp-sync row).
    floor = statistics.median(r["seconds"] for label, rs in rows if "then sync" in label for r in rs)
    lines = [
        "| tool | median s | min s | tool/ours (median) | tool/ours (min) | x floor | MB/s of the inputs | "
        "peak RSS MB | output MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, results in rows:
        secs = [r["seconds"] for r in results]
        med, lo = statistics.median(secs), min(secs)
        mb_in = results[0]["input_bytes"] / 1e6
        memory = statistics.median(r["merge_memory_mb"] for r in results)
        cells = [
            label, f"{med:.4g}", f"{lo:.4g}", f"{med / ours_med:.2f}x", f"{lo / ours_min:.2f}x",
            floor_cell(med, floor), f"{mb_in / med:.0f}", f"{memory:.0f}",
            f"{results[0]['file_bytes'] / 1e6:.1f}",
        ]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return lines


COFFEA_NOTE = (
    "The AGC ttbar selection and histograms of `examples/agc/agc.py` with coffea's NanoAODSchema "
    "over `nanoaod_root.root`. Timed: building the events, reading, selecting, filling (on the "
    "cluster: computing the observables on the workers); not timed: imports, the cluster's start "
    "and a warm-up on 2,000 entries in the process and on every worker (numba compilation). The "
    "LocalCluster has 2 worker processes of 1 thread. uproot's dask run is one partition per file: "
    "with more, coffea on uproot gives wrong histograms on an RNTuple (see examples/agc/README.md); "
    "ours is also timed with one partition. Ratio = uproot's median / ours' median in the same "
    "configuration (>1: ours is faster)."
)


def summarize_coffea(rows: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The Markdown table of ``coffea_agc``: each uproot row's ratio to ours in the same
    mode (eager; one partition on the cluster)."""
    medians = {label: statistics.median(r["seconds"] for r in rs) for label, rs in rows}
    ours_of = {
        "coffea on uproot, eager": "coffea on ours, eager",
        "coffea on uproot, LocalCluster 2 workers, 1 partition": (
            "coffea on ours, LocalCluster 2 workers, 1 partition"
        ),
    }
    # coffea reads more than the analysis fields: no codec floor measured for it.
    lines = [
        "| tool | median s | min s | uproot/ours | x floor | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, results in rows:
        med, lo = medians[label], min(r["seconds"] for r in results)
        ratio = f"{med / medians[ours_of[label]]:.2f}x" if label in ours_of else "-"
        rss = statistics.median(r["rss_mb"] for r in results)
        lines.append(f"| {label} | {med:.4g} | {lo:.4g} | {ratio} | - | {rss:.0f} |")
    return [COFFEA_NOTE, "", *lines]


def floor_cell(seconds: float, floor: float | None) -> str:
    """The "x floor" cell: ``seconds`` over the task's floor, "-" without one."""
    return f"{seconds / floor:.2f}x" if floor else "-"


ITERATE_COMPUTE_NOTE = (
    "`for batch in nt.iterate(fields, step_size=...): compute(batch)` over `nanoaod_root.root`: "
    "*read only* is the loop without the computation, *compute only* the computation over the same "
    "batches read beforehand (not timed), *loop* the two together, decoding the next batch while "
    "the computation runs (the default) or each batch when asked (`decode_ahead=False`). The "
    "computation is NumPy on the jets (four-momenta and a histogram of their energies, "
    "`bench/tasks/iterate_compute.py`), single-threaded; decoding uses both cores. *CPU floor* = "
    "(CPU seconds of reading + of computing) / 2 cores: no schedule on this machine can beat it, so "
    "the loop's best is max(read, compute, CPU floor). Times are medians; CPU seconds are the "
    "process's (all threads)."
)


def summarize_iterate_compute(rows: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The tables of ``iterate_compute``: every tool's times, then per field set the loop
    against its parts (read, compute, their sum and max, the 2-core CPU floor), from the
    medians and from the minima (the machine is shared: the minima are the runs least
    disturbed)."""
    by_tool = {r[0]["tool"]: r for _, r in rows}
    lines = [
        ITERATE_COMPUTE_NOTE,
        "",
        "| tool | median s | min s | CPU s (median) | peak RSS MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, results in rows:
        med = statistics.median(r["seconds"] for r in results)
        cpu = statistics.median(r["cpu_seconds"] for r in results)
        rss = statistics.median(r["rss_mb"] for r in results)
        low = min(r["seconds"] for r in results)
        lines.append(f"| {label} | {med:.3f} | {low:.3f} | {cpu:.2f} | {rss:.0f} |")
    lines += [
        "",
        "| fields | statistic | read s | compute s | sum s | max s | CPU floor s | loop, decoding ahead s | "
        "loop, when asked s | ahead / max(read, compute, floor) | ahead / sum | when asked / sum |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for fields in ("subset", "all"):
        tools = {
            "read": f"read-{fields}",
            "compute": f"compute-{fields}",
            "loop": f"loop-{fields}",
            "plain": f"loop-{fields}-plain",
        }
        for name, stat in (("median", statistics.median), ("min", min)):
            t = {k: stat([r["seconds"] for r in by_tool[tool]]) for k, tool in tools.items()}
            cpu = {k: stat([r["cpu_seconds"] for r in by_tool[tools[k]]]) for k in ("read", "compute")}
            floor = (cpu["read"] + cpu["compute"]) / 2
            total, best = t["read"] + t["compute"], max(t["read"], t["compute"])
            bound = max(best, floor)
            cells = [
                fields, name, f"{t['read']:.3f}", f"{t['compute']:.3f}", f"{total:.3f}", f"{best:.3f}",
                f"{floor:.3f}", f"{t['loop']:.3f}", f"{t['plain']:.3f}", f"{t['loop'] / bound:.2f}",
                f"{t['loop'] / total:.2f}", f"{t['plain'] / total:.2f}",
            ]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def summarize(
    task: str, rows: list[tuple[str, list[dict[str, Any]]]], mb: float | None, floor: float | None
) -> list[str]:
    """The Markdown table of one task (``floor``: the median seconds of its floor, if any)."""
    if task == "iterate_compute":
        return summarize_iterate_compute(rows)
    if task == "convert":
        return summarize_convert(rows, floor)
    if task == "merge":
        return summarize_merge(rows)
    if task == "coffea_agc":
        return summarize_coffea(rows)
    ours = statistics.median(r["seconds"] for r in rows[0][1])
    head = "| tool | median s | min s | ours/tool speed-up | x floor | MB/s uncompressed | peak RSS MB |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|"]
    extra_cols = task == "write"
    if extra_cols:
        lines[0] = head[:-1] + "| memory the write needed MB | file MB | size vs ours |"
        lines[1] += "---:|---:|---:|"
    ours_size = rows[0][1][0].get("file_bytes")
    for label, results in rows:
        secs = [r["seconds"] for r in results]
        med, lo = statistics.median(secs), min(secs)
        if task == "open_latency":
            lo = min(r["min_seconds"] for r in results)
        if task == "floor":
            rate = f"{results[0]['checksum']['uncompressed_bytes'] / 1e6 / med:.0f}"
            ratio = "-"
        else:
            rate = f"{mb / med:.0f}" if mb else "-"
            ratio = f"{med / ours:.2f}x"
        rss = statistics.median(r["rss_mb"] for r in results)
        cells = [label, f"{med:.4g}", f"{lo:.4g}", ratio, floor_cell(med, floor), rate, f"{rss:.0f}"]
        if extra_cols:
            size = results[0]["file_bytes"]
            needed = statistics.median(r.get("write_memory_mb", 0.0) for r in results)
            cells += [f"{needed:.0f}" if needed else "-", f"{size / 1e6:.1f}", f"{size / ours_size:.4f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def with_baseline(
    tools: list[tuple[str, str, int]], baseline: Path, name: str
) -> tuple[list[tuple[str, str, int]], list[Path]]:
    """Our tools of a task (the peers left out: their code is the same in both builds),
    each followed by the same tool of the checkout ``baseline`` (labelled ``name``), and
    the checkout each runs from."""
    paired: list[tuple[str, str, int]] = []
    repos: list[Path] = []
    for label, tool, threads in tools:
        if label.startswith("ours"):
            paired += [(label, tool, threads), (f"{label} [{name}]", tool, threads)]
            repos += [REPO, baseline]
    return paired, repos


def compare_baseline(rows: list[tuple[str, list[dict[str, Any]]]]) -> list[str]:
    """The table of a task's tools as :func:`with_baseline` pairs them, this checkout's
    against the baseline's: the medians and minima of the measured work's seconds, the
    change of the median (negative: this checkout is faster), the median of the
    repetitions' ratios (the two ran next to each other, so what drifts over the run
    cancels out), then the medians of the whole process's CPU seconds (user and system),
    which a disk's write-back or another process moves less than wall time."""

    def median(results: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in results)

    def change(ratio: float) -> str:
        return f"{(ratio - 1) * 100:+.1f}%"

    lines = [
        "| tool | this checkout: median s | min s | baseline: median s | min s | change | "
        "paired change | CPU s, this: median | CPU s, baseline: median | change of CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (label, mine), (_, theirs) in zip(rows[::2], rows[1::2], strict=True):
        new, old = median(mine, "seconds"), median(theirs, "seconds")
        paired = statistics.median(a["seconds"] / b["seconds"] for a, b in zip(mine, theirs, strict=True))
        cpu_new, cpu_old = median(mine, "cpu_s"), median(theirs, "cpu_s")
        cells = [label, f"{new:.4g}", f"{min(r['seconds'] for r in mine):.4g}"]
        cells += [f"{old:.4g}", f"{min(r['seconds'] for r in theirs):.4g}", change(new / old), change(paired)]
        cells += [f"{cpu_new:.4g}", f"{cpu_old:.4g}", change(cpu_new / cpu_old)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def build_release(repo: Path) -> None:
    """The command and the test tools of checkout ``repo``, as the benchmark measures them:
    a release build, which does nothing when they are up to date."""
    cargo = ["cargo", "build", "--release", "-p", "rntuple-cli", "-p", "rntuple-testkit"]
    print("building:", shlex.join(cargo), "in", repo, file=sys.stderr)
    subprocess.run(cargo, check=True, cwd=repo)


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="default: ../bench-data[/small] beside the repository, by --events",
    )
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS.md")
    parser.add_argument("--note", default="", help="a line to put under the title")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="DIR",
        help="another checkout of this repository, its Python extension built (python/develop.sh): "
        "each of our tools runs from both checkouts in turn, the peers are left out, and each task "
        "gets a table of this checkout against DIR",
    )
    args = parser.parse_args()
    if args.baseline is None and "floor" not in args.tasks and any(t in FLOOR_OF for t in args.tasks):
        args.tasks.insert(0, "floor")
    build_release(REPO)
    baseline_name = ""
    if args.baseline is not None:
        args.baseline = args.baseline.resolve()
        if not list((args.baseline / "python" / "rntuple").glob("_core*.so")):
            raise SystemExit(f"{args.baseline}: no Python extension; run bash python/develop.sh there")
        build_release(args.baseline)
        head = ["git", "rev-parse", "--short", "HEAD"]
        rev = subprocess.run(head, capture_output=True, text=True, check=True, cwd=args.baseline)
        baseline_name = rev.stdout.strip()
    data: Path = args.data or default_data(args.events)
    command = shlex.join(["python3", *sys.argv])
    kinds = needed_kinds(args.tasks)
    if any(not (data / KINDS[k]).exists() for k in kinds):
        only = [] if kinds == set(KINDS) else ["--only", *sorted(kinds)]
        generate = [sys.executable, str(BENCH / "generate.py"), "--events", str(args.events)]
        subprocess.run([*generate, "--out", str(data), *only], check=True)
    gen = json.loads((data / "generate.json").read_text())
    if gen["events"] != args.events:
        raise SystemExit(f"{data} holds {gen['events']} events, not {args.events}")

    # Uncompressed sizes come from the ROOT RNTuple, which a convert-only run does not generate.
    has_rntuple = (data / KINDS["root"]).exists()
    total_mb = uncompressed_mb(data, None) if has_rntuple else None
    subset_mb = uncompressed_mb(data, list(ANALYSIS_FIELDS)) if has_rntuple else None
    rate_mb = {"read_all": total_mb, "read_subset": subset_mb, "agc": subset_mb, "write": total_mb}
    sections: list[str] = []
    failures: list[str] = []
    floors: dict[str, float] = {}
    for task in args.tasks:
        script, tools = TASKS[task]
        repos = [REPO] * len(tools)
        if args.baseline is not None:
            tools, repos = with_baseline(tools, args.baseline, baseline_name)
        results: list[list[dict[str, Any]]] = [[] for _ in tools]
        for rep in range(args.repeat):
            for i in repetition_order(len(tools), rep):
                label, tool, threads = tools[i]
                if rep == 0 and task in VERIFIED:
                    r = measure_verified(script, tool, threads, data, i, repos[i])
                else:
                    r = run_measured(script, tool, threads, data, repo=repos[i])
                results[i].append(r)
                print(f"[{task} {rep + 1}/{args.repeat}] {label}: {r['seconds']:.4g} s, "
                      f"{r['rss_mb']:.0f} MB", flush=True)  # fmt: skip
        reference = results[0][0]["checksum"]
        for (label, _, _), rs in zip(tools, results, strict=True):
            for r in rs:
                # The floors do different work: each agrees with its own repetitions.
                expected = rs[0]["checksum"] if task == "floor" else reference
                if not checksums_agree(expected, r["checksum"]):
                    failures.append(f"{task}: {label}: checksum {r['checksum']} != ours {reference}")
        rows = [(label, rs) for (label, _, _), rs in zip(tools, results, strict=True)]
        sections += [f"## {task}", ""]
        if task == "convert":
            sections += [CONVERT_NOTE.format(mb=rows[0][1][0]["input_bytes"] / 1e6), ""]
        if task == "merge":
            sections += [MERGE_NOTE.format(copies=4, mb=rows[0][1][0]["input_bytes"] / 1e6), ""]
        if task == "floor":
            floors = {
                tool: statistics.median(r["seconds"] for r in rs)
                for (_, tool, _), rs in zip(tools, results, strict=True)
            }
            sections += [FLOOR_NOTE, ""]
        floor = floors.get(FLOOR_OF.get(task, ""))
        if args.baseline is not None:
            sections += [f"This checkout against {args.baseline} ({baseline_name}):", ""]
            sections += [*compare_baseline(rows), ""]
        sections += [*summarize(task, rows, rate_mb.get(task), floor), ""]
        if task != "floor":
            sections += ["checksum (all tools agree): `" + json.dumps(reference) + "`", ""]
    if failures:
        print("\n".join(failures), file=sys.stderr)
        raise SystemExit("CHECKSUM MISMATCH: the tools did not do the same work")

    sizes = gen.get("bytes", {})
    if total_mb is not None and subset_mb is not None:
        volume = (
            f"{total_mb:.0f} MB uncompressed ({total_mb * 1e6 / gen['events']:.0f} B/event); analysis "
            f"fields {subset_mb:.0f} MB"
        )
    else:
        volume = "only the files the tasks read were generated"
    text = [
        "# rntuple benchmark results",
        "",
        *([args.note, ""] if args.note else []),
        f"Command: `{command}`",
        "",
        f"Dataset: {gen['events']:,} events, {len(__import__('schema').field_names())} fields, "
        f"{volume}. Files: "
        + ", ".join(f"{k} {v / 1e6:.0f} MB" for k, v in sizes.items())
        + f". Generated by `{gen['command']}`.",
        "",
        "Times are medians and minima over the repetitions of the measured work only (after imports "
        "and JIT compilation, including opening the file), one process per measurement, tools "
        "alternating, forwards and backwards in turn. Speed-up = tool's median / "
        "ours' median (>1: ours is faster). MB/s = uncompressed "
        "bytes of the fields involved / median. Peak RSS is the whole process's (`os.wait4`).",
        "",
        "## Machine",
        "",
        *machine_info(),
        "",
        "## Versions",
        "",
        *versions(),
        "",
        *sections,
    ]
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
