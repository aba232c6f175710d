"""Helpers shared by the task scripts: command line, timing, result line, checksums.

Every task script is one measurement in its own process: it prints one JSON line
``{"task", "tool", "seconds", "checksum", ...}`` on stdout. ``seconds`` is the wall time
of the measured work only (after imports and C++ JIT compilation; opening the file is
included). The harness (``bench/run.py``) records the process's peak RSS itself.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "python"))


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or ``?``."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def memory_bytes() -> int:
    """The machine's memory (``/proc/meminfo`` MemTotal), 0 if unknown."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return 0


def write_text_atomically(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file beside it, renamed over it
    once complete: an interrupted run leaves the earlier results as they were."""
    temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def show_row(rows: list[str], row: str) -> None:
    """Adds ``row`` to a report's table ``rows`` and prints it, so that a long run shows
    its results as they come."""
    rows.append(row)
    print(row, flush=True)


def write_report(path: Path, lines: list[str]) -> None:
    """Writes a benchmark's Markdown report (``lines``) to ``path`` as
    ``write_text_atomically`` does, and says where."""
    write_text_atomically(path, "\n".join(lines))
    print(f"wrote {path}")


# Checksum of values summed over one field (float sums compared with a tolerance).
SUM_FIELDS = ("Jet_pt", "Muon_pt")


def _exit_on_terminate(signum: int, frame: object) -> None:
    """SIGTERM raises ``SystemExit``: a measurement stopped from outside still runs its
    ``finally`` blocks, which remove its temporary outputs."""
    raise SystemExit(128 + signum)


def parse_args(tools: list[str], extra: Callable[[argparse.ArgumentParser], None] | None = None) -> Any:
    """Parses ``--tool TOOL --data DIR [--threads N]`` (and whatever ``extra`` adds), and
    makes SIGTERM unwind the measurement (see ``_exit_on_terminate``)."""
    signal.signal(signal.SIGTERM, _exit_on_terminate)
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", choices=tools, required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    if extra is not None:
        extra(parser)
    return parser.parse_args()


def parse_checked_output_args(
    tools: list[str],
    verify: Callable[[Path, Path], None],
    out_default: str,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
) -> Any | None:
    """Parses the arguments of a task whose output ``SCRIPT --verify OUT`` checks in a process
    of its own (see ``bench/run.py``): ``--tool TOOL --data DIR [--threads N] [--out OUT]
    [--keep]`` (and whatever ``extra`` adds), or ``--verify OUT --data DIR``, which runs
    ``verify(OUT, DIR)`` and returns None. ``out_default`` says where the output goes
    without ``--out``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", choices=tools)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=2)
    if extra is not None:
        extra(parser)
    parser.add_argument("--out", type=Path, default=None, help=f"the output's path (default: {out_default})")
    parser.add_argument("--keep", action="store_true", help="leave the output for --verify")
    parser.add_argument("--verify", type=Path, default=None, metavar="OUT", help="check OUT with ROOT")
    args = parser.parse_args()
    if args.verify is not None:
        verify(args.verify, args.data)
        return None
    if args.tool is None:
        parser.error("--tool is required")
    return args


def emit(task: str, tool: str, seconds: float, checksum: dict[str, Any], **extra: Any) -> None:
    """Prints the result line."""
    line = {"task": task, "tool": tool, "seconds": seconds, "checksum": checksum, **extra}
    print(json.dumps(line), flush=True)


class Timer:
    """``with Timer() as t: ...`` then ``t.seconds``."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def root_file(data: Path) -> Path:
    """The RNTuple written by ROOT."""
    return data / "nanoaod_root.root"


def checksum_ak(array: Any, fields: list[str]) -> dict[str, Any]:
    """Entries, number of values of every jagged field and float sums of an Awkward record array."""
    import awkward as ak
    import numpy as np

    items = 0
    for f in fields:
        col = array[f]
        if col.ndim > 1:
            items += int(ak.sum(ak.num(col, axis=1)))
    out: dict[str, Any] = {"entries": len(array), "fields": len(fields), "items": items}
    for f in SUM_FIELDS:
        if f in fields:
            out[f"sum_{f}"] = float(ak.sum(ak.values_astype(array[f], np.float64)))
    return out


def checksum_arrow(table: Any) -> dict[str, Any]:
    """The same checksum as :func:`checksum_ak` for a ``pyarrow.Table``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    items = 0
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type):
            items += int(pc.sum(pc.list_value_length(col)).as_py() or 0)
    out: dict[str, Any] = {"entries": table.num_rows, "fields": table.num_columns, "items": items}
    for f in SUM_FIELDS:
        if f in table.column_names:
            flat = pc.list_flatten(table.column(f))
            out[f"sum_{f}"] = float(pc.sum(pc.cast(flat, pa.float64())).as_py())
    return out


def checksums_agree(a: dict[str, Any], b: dict[str, Any], rel: float = 1e-9) -> bool:
    """Whether two checksums agree: integers and lists exactly, floats to ``rel``."""
    if a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if isinstance(x, float) or isinstance(y, float):
            if not math.isclose(float(x), float(y), rel_tol=rel, abs_tol=1e-9):
                return False
        elif x != y:
            return False
    return True
