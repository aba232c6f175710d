"""``open_latency``: opening the file and reading the RNTuple's schema, repeated in one process.

Each process opens the ROOT RNTuple ``--repeat`` times (default 20) and reports the median
time (``seconds``) and the minimum (``min_seconds``). Tools: ``ours``
(``rntuple.open(path)["Events"].schema``), ``uproot`` (``uproot.open(path)["Events"]``
and its field names), ``root`` (``RNTupleReader::Open`` + ``GetDescriptor()``, timed in C++).
The checksum is the number of top-level fields.
"""

from __future__ import annotations

import statistics

from common import Timer, emit, parse_args, root_file

TOOLS = ["ours", "uproot", "root"]

ROOT_CXX = r"""
#pragma cling optimize(3)
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <chrono>
// Returns [seconds per repetition..., number of top-level fields].
std::vector<double> bench_open(const char *path, int repeat) {
   std::vector<double> out;
   std::size_t nfields = 0;
   for (int i = 0; i < repeat; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto reader = ROOT::RNTupleReader::Open("Events", path);
      const auto &desc = reader->GetDescriptor();
      nfields = 0;
      for (const auto &f : desc.GetTopLevelFields()) { (void)f; ++nfields; }
      reader.reset();
      out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
   }
   out.push_back(static_cast<double>(nfields));
   return out;
}
"""


def main() -> None:
    """Runs one measurement."""
    args = parse_args(TOOLS, lambda p: p.add_argument("--repeat", type=int, default=20))
    path = str(root_file(args.data))
    times: list[float] = []
    nfields = 0
    if args.tool == "ours":
        import rntuple

        for _ in range(args.repeat):
            with Timer() as t:
                f = rntuple.open(path)
                nfields = len(f["Events"].schema)
                f.close()
            times.append(t.seconds)
    elif args.tool == "uproot":
        import uproot

        for _ in range(args.repeat):
            with Timer() as t, uproot.open(path) as f:
                nfields = len(f["Events"].keys(recursive=False))
            times.append(t.seconds)
    else:
        import ROOT

        ROOT.gROOT.SetBatch(True)
        if not ROOT.gInterpreter.Declare(ROOT_CXX):
            raise RuntimeError("open-latency C++ did not compile")
        out = list(ROOT.bench_open(path, args.repeat))
        times, nfields = out[:-1], int(out[-1])
    emit(
        "open_latency", args.tool, statistics.median(times), {"fields": nfields}, min_seconds=min(times),
        repeat=args.repeat,
    )  # fmt: skip


if __name__ == "__main__":
    main()
