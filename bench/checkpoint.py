"""What checkpoints cost: ``rntuple copy`` of the benchmark's NanoAOD-like RNTuple with a
cluster group committed after every cluster (``--checkpoint-every 1``, the default)
against one group at the end (``--checkpoint-every 0``, as ROOT), at ROOT's cluster size
and at a small one (many clusters), alternating the two, one process per measurement.

    python3 bench/checkpoint.py --data ../bench-data/n500k --repeat 5

Writes a Markdown table (median wall time, file size, cluster groups, the ratios) to
``bench/RESULTS-checkpoint.md`` and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH / "tasks"))

from common import write_text_atomically  # noqa: E402

BINARY = REPO / "target" / "release" / "rntuple"


def copy_once(source: Path, out: Path, checkpoint_every: int, cluster_size: int | None) -> float:
    """One copy; returns its wall time in seconds."""
    command = [
        str(BINARY),
        "copy",
        str(source),
        str(out),
        "--force",
        "--checkpoint-every",
        str(checkpoint_every),
    ]
    if cluster_size is not None:
        command += ["--cluster-size", str(cluster_size)]
    t0 = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - t0


def cluster_groups(path: Path) -> tuple[int, int]:
    """(cluster groups, clusters) of the file, from ``rntuple info``."""
    text = subprocess.run([str(BINARY), "info", str(path)], check=True, capture_output=True, text=True).stdout
    groups = clusters = 0
    for line in text.splitlines():
        if line.startswith("cluster groups:"):
            groups = int(line.split(":")[1])
        elif line.startswith("clusters:"):
            clusters = int(line.split(":")[1])
    return groups, clusters


def main() -> None:
    """Runs the comparison and writes the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="a directory of bench/generate.py")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=BENCH / "RESULTS-checkpoint.md")
    args = parser.parse_args()
    source = args.data / "nanoaod_root.root"
    rows = []
    with tempfile.TemporaryDirectory(dir=args.data) as tmp:
        for label, cluster_size in (
            ("ROOT's 128 MiB clusters", None),
            ("8 MiB clusters", 8 << 20),
            ("256 KiB clusters", 256 << 10),
        ):
            times: dict[int, list[float]] = {0: [], 1: []}
            sizes: dict[int, int] = {}
            layout: dict[int, tuple[int, int]] = {}
            for _ in range(args.repeat):
                for every in (1, 0):
                    out = Path(tmp) / f"copy{every}.root"
                    times[every].append(copy_once(source, out, every, cluster_size))
                    sizes[every] = out.stat().st_size
                    layout[every] = cluster_groups(out)
            t1, t0 = statistics.median(times[1]), statistics.median(times[0])
            rows.append(
                f"| {label} | {layout[1][1]} | {layout[0][0]} / {layout[1][0]} | {t0:.3f} / {t1:.3f} s "
                f"| {t1 / t0:.3f}x | {sizes[0]:,} / {sizes[1]:,} B | +{sizes[1] - sizes[0]:,} B "
                f"({100 * (sizes[1] - sizes[0]) / sizes[0]:.4f}%) |"
            )
    table = "\n".join(
        [
            "# Checkpoints: what committing a cluster group after every cluster costs",
            "",
            f"`python3 bench/checkpoint.py --data {args.data} --repeat {args.repeat}`: `rntuple copy` of "
            f"`{source.name}` ({source.stat().st_size:,} bytes), `--checkpoint-every 0` (one cluster group, "
            "as ROOT) against `--checkpoint-every 1` (the default), alternating, medians. "
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.system()} {platform.release()}.",
            "",
            "| cluster size | clusters | groups (0 / 1) | time (0 / 1) | time ratio | size (0 / 1) "
            "| size cost |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    write_text_atomically(args.out, table)
    print(table)


if __name__ == "__main__":
    main()
