"""How reading scales with the dataset's size: ``bench/tasks/scaling.py`` (streaming
read-all, read-subset, ``iterate()`` in 100 MB steps, and the file's bytes alone) at 0.2M,
2M and 20M events of the NanoAOD-like dataset written by ROOT, warm (the file in the page
cache) and cold (the file's pages dropped from the cache first), one process per
measurement; time per event, peak RSS, the 20M/2M ratio of the time per event and the cold
time against the larger of the disk floor and the warm time.

    python3 bench/scaling.py [--root ../bench-data] [--repeat 3] [--sizes 0.2M 2M 20M]

The files (``ROOT`` defaults to ``../bench-data`` beside the repository), made when
missing:

- 2M: ``ROOT/n2m/nanoaod_root.root``, a copy of the suite's ``ROOT/nanoaod_root.root``
  (``python3 bench/generate.py --events 2000000 --out ROOT --only root``): the cold
  measurements drop the file from the page cache, which should not disturb other runs
  reading the suite's file;
- 0.2M: ``ROOT/n200k/nanoaod_root.root`` (``generate.py --events 200000 --out ROOT/n200k
  --only root``: the same events as the first 200,000 of the 2M file, written by ROOT);
- 20M: ``ROOT/n20m/nanoaod_root.root``, ten copies of the 2M file merged
  (``target/release/rntuple merge ROOT/n20m/nanoaod_root.root ROOT/nanoaod_root.root``
  ten times: pages copied, ~1.5 min; 9.4 GB on disk, ~27 GB decoded, more than this
  machine's memory).

Writes ``bench/RESULTS-scaling.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "tasks"))

from common import write_text_atomically  # noqa: E402
from run import machine_info, run_measured, versions  # noqa: E402

SIZES = {"0.2M": 200_000, "2M": 2_000_000, "20M": 20_000_000}
TOOLS = ["read-all", "read-subset", "iterate", "disk", "disk-direct"]
LABELS = {
    "read-all": "read-all (every field, cluster by cluster)",
    "read-subset": "read-subset (12 analysis fields)",
    "iterate": 'iterate(step_size="100 MB"), every field',
    "disk": "the file's bytes alone",
    "disk-direct": "the file's bytes alone, direct I/O (no page cache, warm or cold)",
}
COPIES = 10


def data_dir(root: Path, size: str) -> Path:
    """The directory holding the ``size`` dataset."""
    return {"0.2M": root / "n200k", "2M": root / "n2m", "20M": root / "n20m"}[size]


def suite_file(root: Path) -> Path:
    """The benchmark suite's 2M-event file, generated if missing."""
    path = root / "nanoaod_root.root"
    if not path.exists():
        generate = [sys.executable, str(BENCH / "generate.py"), "--events", str(SIZES["2M"])]
        subprocess.run([*generate, "--out", str(root), "--only", "root"], check=True)
    return path


def ensure(root: Path, size: str) -> Path:
    """The ``size`` dataset's directory, its file made if missing."""
    folder = data_dir(root, size)
    target = folder / "nanoaod_root.root"
    if target.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    if size == "2M":
        temporary = target.with_suffix(".tmp")
        shutil.copyfile(suite_file(root), temporary)
        temporary.rename(target)
    elif size == "20M":
        source = suite_file(root)
        binary = REPO / "target" / "release" / "rntuple"
        subprocess.run([str(binary), "merge", str(target), *[str(source)] * COPIES], check=True)
    else:
        generate = [sys.executable, str(BENCH / "generate.py"), "--events", str(SIZES[size])]
        subprocess.run([*generate, "--out", str(folder), "--only", "root"], check=True)
    return folder


def resident_fraction(path: Path) -> float | None:
    """The fraction of ``path`` in the page cache (``fincore``), if it can be told."""
    if shutil.which("fincore") is None:
        return None
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)], capture_output=True, text=True
    )
    try:
        return int(out.stdout.split()[0]) / path.stat().st_size
    except (IndexError, ValueError):
        return None


def measure(tool: str, data: Path, cold: bool) -> dict[str, Any]:
    """One measurement process."""
    result = run_measured("scaling.py", tool, 2, data, ["--cold"] if cold else [])
    state = "cold" if cold else "warm"
    print(f"  {tool} {state}: {result['seconds']:.3f} s, {result['rss_mb']:.0f} MB", flush=True)
    return result


def main() -> int:
    """Runs the measurements and writes the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=REPO.parent / "bench-data")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS-scaling.md")
    args = parser.parse_args()
    command = shlex.join(["python3", *sys.argv])
    loads = [os.getloadavg()]
    results: dict[tuple[str, str, bool], list[dict[str, Any]]] = {}
    resident: dict[str, float | None] = {}
    for size in args.sizes:
        data = ensure(args.root, size)
        path = data / "nanoaod_root.root"
        print(f"{size}: {path} ({path.stat().st_size / 1e9:.2f} GB)", flush=True)
        # Warm: the file read once into the page cache, then every tool in turns.
        run_measured("scaling.py", "disk", 2, data)
        resident[size] = resident_fraction(path)
        for _ in range(args.repeat):
            for tool in TOOLS:
                results.setdefault((size, tool, False), []).append(measure(tool, data, False))
        # Cold: each measurement drops the file's pages first.
        for _ in range(args.repeat):
            for tool in TOOLS:
                results.setdefault((size, tool, True), []).append(measure(tool, data, True))
        loads.append(os.getloadavg())
    for (size, tool, cold), rs in results.items():
        if not tool.startswith("disk"):
            expected = SIZES[size]
            assert all(r["entries"] == expected for r in rs), (size, tool, cold)
        else:
            assert all(r["checksum"]["bytes"] == r["file_bytes"] for r in rs), (size, tool, cold)
    text = report(args, results, resident, loads, command)
    write_text_atomically(args.out, text)
    print(f"wrote {args.out}")
    return 0


def report(
    args: argparse.Namespace,
    results: dict[tuple[str, str, bool], list[dict[str, Any]]],
    resident: dict[str, float | None],
    loads: list[tuple[float, float, float]],
    command: str,
) -> str:
    """The Markdown page."""

    def med(size: str, tool: str, cold: bool, key: str = "seconds") -> float:
        return statistics.median(r[key] for r in results[(size, tool, cold)])

    lines = [
        "# Scaling: reading 0.2M, 2M and 20M events",
        "",
        f"Command: `{command}`",
        "",
        "Data: the NanoAOD-like dataset written by ROOT (`bench/generate.py`, 105 fields, ~1,400 B/event "
        "uncompressed, zstd 505, clusters of ~285,000 entries); 0.2M is generated with the same seed "
        "(the first 200,000 events), 2M is a copy of the suite's file, 20M is ten copies of it merged with "
        "`rntuple merge`. "
        "Files: "
        + ", ".join(
            f"{size} {(data_dir(args.root, size) / 'nanoaod_root.root').stat().st_size / 1e9:.2f} GB"
            for size in args.sizes
        )
        + ".",
        "",
        "Measurements (`bench/tasks/scaling.py`, one process each, medians of "
        f"{args.repeat}): *read-all* decodes every page of every field into Arrow cluster by cluster "
        "and drops each batch (the 20M file decoded, ~27 GB, does not fit in memory, so read-all is "
        "a streaming read at every size); *read-subset* the same for the 12 analysis fields; "
        '*iterate* is `nt.iterate(step_size="100 MB")` over every field into Awkward Arrays, decoding '
        "ahead, summing `MET_pt` per batch; *disk* reads the file's bytes into a reused buffer, "
        "*disk-direct* the same with direct I/O (`O_DIRECT`), as the reader's large cold reads do. "
        "*Warm*: the file was read once before (page cache hot); *cold*: each measurement first drops "
        "the file's pages from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)`). Peak RSS is the "
        "whole process's (`os.wait4`), imports included (~100 MB for Python, NumPy, Awkward, pyarrow).",
        "",
        "## Time per event and memory",
        "",
        "| size | tool | warm s | warm ns/event | cold s | cold ns/event | peak RSS MB (warm / cold) "
        "| CPU s (warm / cold) | waited in reads s (warm / cold) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size in args.sizes:
        n = SIZES[size]
        for tool in TOOLS:
            warm, cold = med(size, tool, False), med(size, tool, True)
            rss = f"{med(size, tool, False, 'rss_mb'):.0f} / {med(size, tool, True, 'rss_mb'):.0f}"
            cpu = f"{med(size, tool, False, 'cpu_seconds'):.2f} / {med(size, tool, True, 'cpu_seconds'):.2f}"
            wait = "-"
            if not tool.startswith("disk"):
                wait = (
                    f"{med(size, tool, False, 'io_wait_seconds'):.2f} / "
                    f"{med(size, tool, True, 'io_wait_seconds'):.2f}"
                )
            cells = [
                size, LABELS[tool], f"{warm:.3f}", f"{warm / n * 1e9:.0f}", f"{cold:.3f}",
                f"{cold / n * 1e9:.0f}", rss, cpu, wait,
            ]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
    if "2M" in args.sizes and "20M" in args.sizes:
        lines += [
            "",
            "## 20M against 2M: time per event",
            "",
            "Target: within 1.1x.",
            "",
            "| tool | warm 20M/2M | cold 20M/2M |",
            "|---|---:|---:|",
        ]
        for tool in TOOLS:
            ratios = [
                med("20M", tool, cold) / SIZES["20M"] / (med("2M", tool, cold) / SIZES["2M"])
                for cold in (False, True)
            ]
            lines.append(f"| {LABELS[tool]} | {ratios[0]:.3f}x | {ratios[1]:.3f}x |")
    lines += [
        "",
        "## Cold against the disk floor and the warm time",
        "",
        "Target for read-all: cold within 1.2x of max(disk floor, warm), i.e. reading overlaps "
        "decoding. The disk floor is the *disk* tool cold (the whole file; read-subset reads only its "
        "fields' pages, a fraction of the file, scattered). The last two columns are for reference: "
        "the *disk-direct* tool cold, and the cold time against the larger of it and the warm time.",
        "",
        "| size | tool | disk floor s | warm s | cold s | cold / max(floor, warm) | direct disk s "
        "| cold / max(direct disk, warm) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for size in args.sizes:
        floor, direct = med(size, "disk", True), med(size, "disk-direct", True)
        for tool in ("read-all", "read-subset", "iterate"):
            warm, cold = med(size, tool, False), med(size, tool, True)
            lines.append(
                f"| {size} | {LABELS[tool]} | {floor:.3f} | {warm:.3f} | {cold:.3f} | "
                f"{cold / max(floor, warm):.3f}x | {direct:.3f} | {cold / max(direct, warm):.3f}x |"
            )
    lines += [
        "",
        "## Machine",
        "",
        *machine_info(),
        "- load average (1, 5, 15 min) at the start and after each size: "
        + "; ".join(f"{a:.2f}, {b:.2f}, {c:.2f}" for a, b, c in loads),
        "- fraction of each file in the page cache after the warm-up read (`fincore`): "
        + ", ".join(f"{s} {'?' if f is None else f'{f:.0%}'}" for s, f in resident.items()),
        "",
        "## Versions",
        "",
        *versions(),
        "",
        "Raw results (one line per measurement):",
        "",
        "```",
        *(
            json.dumps({"size": size, "cold": cold, **r})
            for (size, _, cold), rs in results.items()
            for r in rs
        ),
        "```",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
