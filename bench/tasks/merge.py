"""``merge``: four copies of the dataset's ROOT-written RNTuple (``nanoaod_root.root``, zstd 505)
merged into one file.

Tools, each timed as a whole process:

- ``ours``: ``rntuple merge OUT IN1 IN2 IN3 IN4`` (compression as the inputs': every page is
  copied with its checksum verified). The output is written under a temporary name, synced to
  disk and renamed over ``OUT`` (it appears only when complete).
- ``hadd``: ROOT 6.40's ``hadd -f505 OUT IN1 IN2 IN3 IN4`` (the same output compression, so
  that ROOT's merger copies the pages too). hadd does not sync the file to disk.
- ``cp``: ``cp IN1 IN2 IN3 IN4 DIR/``: the bytes of the inputs copied, nothing checked, not
  synced to disk.
- ``cp-sync``: the same, then ``sync`` of the copies: what copying costs when the copies must be
  on disk, as ours must be before its rename.

The inputs are copies of ``nanoaod_root.root`` in ``DATA/merge4/`` (made once, not timed). The
checksum is the number of entries of the output (of the four copies for ``cp``). The result
line also reports the bytes written and the output's size.

``python3 bench/tasks/merge.py --verify OUT --data DIR`` checks a merged output with ROOT: it
opens, has four times the input's entries, and RDataFrame's sums of ``Jet_pt`` and ``nJet``
are four times the input's; for ``cp`` (a directory) each copy is compared with the input.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import REPO, emit, parse_checked_output_args, root_file

TOOLS = ["ours", "hadd", "cp", "cp-sync"]
COPIES = 4
NAME = "Events"


def inputs(data: Path) -> list[Path]:
    """The four copies of the dataset's RNTuple (made if missing)."""
    src = root_file(data)
    folder = data / "merge4"
    folder.mkdir(exist_ok=True)
    paths = [folder / f"in{i + 1}.root" for i in range(COPIES)]
    for p in paths:
        if not p.exists() or p.stat().st_size != src.stat().st_size:
            tmp = p.with_suffix(".tmp")
            shutil.copyfile(src, tmp)
            tmp.rename(p)
    return paths


def hadd_bin() -> str:
    """ROOT's hadd (the PyPI package's)."""
    import ROOT

    return str(Path(ROOT.__file__).parent / "bin" / "hadd")


def command(tool: str, out: Path, ins: list[Path]) -> list[str]:
    """The measured command of ``tool``."""
    names = [str(p) for p in ins]
    if tool == "ours":
        cli = REPO / "target" / "release" / "rntuple"
        if not cli.exists():
            raise SystemExit(f"{cli} is missing: cargo build --release -p rntuple-cli")
        return [str(cli), "merge", str(out), *names]
    if tool == "hadd":
        return [hadd_bin(), "-f505", str(out), *names]
    copies = " ".join(str(out / p.name) for p in ins)
    sync = f" && sync {copies}" if tool == "cp-sync" else ""
    return ["sh", "-c", f"cp {' '.join(names)} {out}/{sync}"]


def run(cmd: list[str]) -> tuple[float, float]:
    """Runs ``cmd`` as a whole process; returns its wall seconds and peak RSS in MB."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"failed ({code}): {' '.join(cmd)}\n{stderr[-3000:]}")
    return seconds, usage.ru_maxrss / 1024.0


def entries_of(path: Path) -> int:
    """Entries of the output (the copies' sum for a directory), read with ``rntuple``."""
    import rntuple

    files = sorted(path.glob("*.root")) if path.is_dir() else [path]
    return sum(rntuple.open(str(f))[NAME].num_entries for f in files)


def remove(path: Path) -> None:
    """Removes an output file or directory."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def verify(out: Path, data: Path) -> None:
    """Checks ``out`` with ROOT (see the module docstring); exits on a mismatch."""
    import ROOT

    ROOT.gROOT.SetBatch(True)
    src = root_file(data)

    def figures(path: Path) -> list[float]:
        frame = ROOT.RDataFrame(NAME, str(path))
        results = [frame.Count(), frame.Sum("Jet_pt"), frame.Sum("nJet")]
        return [float(r.GetValue()) for r in results]

    one = figures(src)
    if out.is_dir():
        copies = sorted(out.glob("*.root"))
        got = [figures(c) for c in copies]
        if len(copies) != COPIES or any(g != one for g in got):
            raise SystemExit(f"{out}: copies read {got}, the input {one}")
        print(f"verified {out.name}: {COPIES} copies of {int(one[0])} entries")
        return
    merged = figures(out)
    want = [COPIES * x for x in one]
    if merged[0] != want[0] or any(abs(a - b) > 1e-9 * abs(b) for a, b in zip(merged, want, strict=True)):
        raise SystemExit(f"{out}: entries, sum Jet_pt, sum nJet {merged}; expected {want}")
    print(f"verified {out.name}: {int(merged[0])} entries, sums of Jet_pt and nJet {COPIES}x the input's")


def main() -> None:
    """Runs one measurement, or ``--verify``."""
    args = parse_checked_output_args(TOOLS, verify, "in --data")
    if args is None:
        return
    ins = inputs(args.data)
    out = args.out or args.data / f"bench_merge_{args.tool}_{os.getpid()}.root"
    remove(out)
    if args.tool.startswith("cp"):
        out.mkdir()
    cmd = command(args.tool, out, ins)
    # Start from a clean page cache state for writes: earlier outputs flushed.
    os.sync()
    try:
        seconds, memory = run(cmd)
        checksum = {"entries": entries_of(out)}
        size = sum(f.stat().st_size for f in out.glob("*")) if out.is_dir() else out.stat().st_size
    finally:
        if not args.keep:
            remove(out)
    emit(
        "merge", args.tool, seconds, checksum, threads=args.threads, file_bytes=size,
        input_bytes=sum(p.stat().st_size for p in ins), merge_memory_mb=round(memory, 1),
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
