"""``convert``: the dataset's TTree (``nanoaod_ttree.root``) to an RNTuple, zstd level 5 (505).

Tools: ``ours`` (``rntuple convert IN:Events OUT --compression 505`` of the release build,
timed as a whole process: start-up, reading, decoding and writing, up to a complete file)
and ``root`` (ROOT 6.40's ``ROOT::Experimental::RNTupleImporter``: ``Create(src, "Events",
dst)``, ``SetIsQuiet(true)``, write options with the same compression, ``Import()`` and the
importer's destruction, which closes the file; ``threads > 1`` enables implicit MT). As in the
other tasks' ROOT peers, the ROOT side is a C++ function JIT-compiled into ROOT beforehand and
timed inside itself, so ``import ROOT`` and the JIT are not timed; opening the input is.

Each measurement writes a fresh file (the importer opens its output with ``UPDATE``, so any
old file is removed first) and removes it afterwards unless ``--keep`` is given (``run.py``
keeps the first output of each tool and checks it with ``--verify``, in a separate process,
before the later repetitions). The checksum is the number of entries and of top-level fields
of the output, read with ``rntuple``. The result line also reports the output's size and the
memory the conversion needed (``convert_memory_mb``): for ``ours`` the peak RSS of the
``rntuple convert`` process (all of it), for ``root`` the process's resident high-water mark
over the conversion (reset just before it through ``/proc/self/clear_refs``) minus the
resident memory before it (the libraries loaded by ``import ROOT`` are not counted).

``python3 bench/tasks/convert.py --verify OUT --data DIR`` checks an output with ROOT: the
RNTuple opens, has the TTree's entries, a field for every non-count branch, and
RDataFrame's sums of ``Jet_pt``, ``Muon_pt`` and ``nJet`` over the RNTuple equal those over
the TTree; it prints ``verified ...`` or exits with an error.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import REPO, emit, parse_checked_output_args

TOOLS = ["ours", "root"]
TREE = "Events"

IMPORT_SOURCE = r"""
#pragma cling optimize(3)
#include <ROOT/RNTupleImporter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

static double bench_status_mb(const char *key) {
   std::ifstream in("/proc/self/status");
   std::string line, k(key);
   while (std::getline(in, line)) {
      if (line.compare(0, k.size() + 1, k + ":") == 0) return std::stod(line.substr(k.size() + 1)) / 1024.0;
   }
   return -1.0;
}

// Imports tree `tree` of `src` into a new RNTuple file `dst`; returns {seconds, resident MB
// before, resident high-water mark MB after} (the mark reset just before the import).
std::vector<double> bench_import(const char *src, const char *tree, const char *dst, int compression) {
   { std::ofstream("/proc/self/clear_refs") << "5"; }
   double before = bench_status_mb("VmRSS");
   auto t0 = std::chrono::steady_clock::now();
   {
      auto importer = ROOT::Experimental::RNTupleImporter::Create(src, tree, dst);
      importer->SetIsQuiet(true);
      auto options = importer->GetWriteOptions();
      options.SetCompression(compression);
      importer->SetWriteOptions(options);
      importer->Import();
   }  // the importer's destruction writes the footer and closes dst
   auto t1 = std::chrono::steady_clock::now();
   return {std::chrono::duration<double>(t1 - t0).count(), before, bench_status_mb("VmHWM")};
}
"""


def ttree_file(data: Path) -> Path:
    """The dataset's TTree."""
    return data / "nanoaod_ttree.root"


def output_path(args: Any) -> Path:
    """Where this measurement writes: ``--out``, else a per-process name in ``--tmp`` (default: the
    data directory)."""
    if args.out is not None:
        return Path(args.out)
    return (args.tmp or args.data) / f"bench_convert_{args.tool}_{os.getpid()}.root"


def run_ours(src: Path, out: Path, compression: int) -> tuple[float, float]:
    """``rntuple convert`` as a whole process; returns its wall seconds and peak RSS in MB."""
    cli = REPO / "target" / "release" / "rntuple"
    if not cli.exists():
        raise SystemExit(f"{cli} is missing: cargo build --release -p rntuple-cli")
    cmd = [str(cli), "convert", f"{src}:{TREE}", str(out), "--compression", str(compression)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"rntuple convert failed ({code}): {' '.join(cmd)}")
    return seconds, usage.ru_maxrss / 1024.0


def run_root(src: Path, out: Path, compression: int, threads: int) -> tuple[float, float, float]:
    """ROOT's ``RNTupleImporter`` in this process; returns seconds, resident MB before and the
    resident high-water mark during the import."""
    import ROOT

    ROOT.gROOT.SetBatch(True)
    if not ROOT.gInterpreter.Declare(IMPORT_SOURCE):
        raise RuntimeError("C++ import code did not compile")
    if threads > 1:
        ROOT.EnableImplicitMT(threads)
    seconds, before, hwm = ROOT.bench_import(str(src), TREE, str(out), compression)
    return float(seconds), float(before), float(hwm)


def verify(out: Path, data: Path) -> None:
    """Checks ``out`` against the TTree with ROOT (see the module docstring); exits on a mismatch."""
    import ROOT

    ROOT.gROOT.SetBatch(True)
    src = ttree_file(data)
    tfile = ROOT.TFile.Open(str(src))
    tree = tfile.Get(TREE)
    entries = int(tree.GetEntries())
    counts = {leaf.GetLeafCount().GetName() for leaf in tree.GetListOfLeaves() if leaf.GetLeafCount()}
    branches = [b.GetName() for b in tree.GetListOfBranches()]
    reader = ROOT.RNTupleReader.Open(TREE, str(out))
    fields = {f.GetFieldName() for f in reader.GetDescriptor().GetTopLevelFields()}
    problems: list[str] = []
    if int(reader.GetNEntries()) != entries:
        problems.append(f"{reader.GetNEntries()} entries, the TTree has {entries}")
    missing = [b for b in branches if b not in fields]
    if missing:
        problems.append(f"no field for the branches {missing[:10]}")
    extra = sorted(f for f in fields if f not in branches and not f.startswith("_collection"))
    if extra:
        problems.append(f"fields that are no branch: {extra[:10]}")
    del reader
    sums: dict[str, list[float]] = {}
    for label, frame in (("ttree", ROOT.RDataFrame(tree)), ("rntuple", ROOT.RDataFrame(TREE, str(out)))):
        results = [frame.Sum(col) for col in ("Jet_pt", "Muon_pt", "nJet")]
        sums[label] = [float(r.GetValue()) for r in results]
    if sums["ttree"] != sums["rntuple"]:
        problems.append(f"sums of Jet_pt, Muon_pt, nJet: TTree {sums['ttree']}, RNTuple {sums['rntuple']}")
    if problems:
        raise SystemExit(f"{out}: " + "; ".join(problems))
    print(
        f"verified {out.name}: {entries} entries, {len(fields)} top-level fields for {len(branches)} "
        f"branches ({len(counts)} count leaves), sums of Jet_pt, Muon_pt, nJet {sums['rntuple']}"
    )


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """The compression and directory of the output."""
    parser.add_argument("--compression", type=int, default=505, help="ROOT's compression setting")
    parser.add_argument("--tmp", type=Path, default=None, help="directory of the output (default: --data)")


def main() -> None:
    """Runs one measurement, or ``--verify``."""
    args = parse_checked_output_args(TOOLS, verify, "in --tmp", add_output_options)
    if args is None:
        return
    src = ttree_file(args.data)
    out = output_path(args)
    out.unlink(missing_ok=True)  # the importer would add to an existing file (UPDATE)
    before = 0.0
    try:
        if args.tool == "ours":
            seconds, memory = run_ours(src, out, args.compression)
        else:
            seconds, before, hwm = run_root(src, out, args.compression, args.threads)
            memory = hwm - before
        import rntuple

        written = rntuple.open(str(out))[TREE]
        checksum = {"entries": written.num_entries, "fields": len(written.fields)}
        size = out.stat().st_size
    finally:
        if not args.keep:
            out.unlink(missing_ok=True)
    emit(
        "convert", args.tool, seconds, checksum, threads=args.threads, file_bytes=size,
        input_bytes=src.stat().st_size, rss_before_mb=round(before, 1), convert_memory_mb=round(memory, 1),
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
