"""C++ for the ROOT side of the tasks, generated from ``bench/schema.py`` and JIT-compiled
(optimised: ``#pragma cling optimize(3)``) into ROOT via ``ROOT.gInterpreter.Declare``.

``bench_read_rdf(path, fields, threads)`` materialises the selected fields of the RNTuple
into columnar in-memory buffers (values plus per-entry offsets for collections, one
buffer set per RDataFrame slot) with ``RDataFrame::ForeachSlot``; ``bench_write(...)``
writes those buffers back with ``RNTupleWriter``.
"""

from __future__ import annotations

from typing import Any

from schema import all_fields

# RDataFrame's view of each C++ type (bools stored as bytes to avoid std::vector<bool>).
STORE = {"bool": "std::uint8_t"}

_declared: set[str] = set()


def _root() -> Any:
    import ROOT

    ROOT.gROOT.SetBatch(True)
    return ROOT


def sink_source(fields: list[str]) -> str:
    """C++ of the sink struct, the RDF functor and the reader/writer for ``fields``."""
    info = {n: (t, c) for n, t, c in all_fields()}
    members, params, body, sums, clears = [], [], [], [], []
    for i, name in enumerate(fields):
        typ, coll = info[name]
        st = STORE.get(typ, typ)
        members.append(f"   std::vector<{st}> v_{name};")
        if coll is not None:
            members.append(f"   std::vector<std::uint64_t> o_{name};")
            params.append(f"const ROOT::RVec<{typ}> &a{i}")
            body.append(
                f"      s.v_{name}.insert(s.v_{name}.end(), a{i}.begin(), a{i}.end()); "
                f"s.o_{name}.push_back(s.v_{name}.size());"
            )
            sums.append(f"      items += s.v_{name}.size();")
        else:
            params.append(f"const {typ} &a{i}")
            body.append(f"      s.v_{name}.push_back(a{i});")
        if name in ("Jet_pt", "Muon_pt"):
            sums.append(f"      for (auto x : s.v_{name}) sum_{name} += x;")
        clears.append(f"   v_{name}.clear();" + (f" o_{name}.clear();" if coll else ""))
    nl = "\n"
    first = f"o_{fields[0]}" if info[fields[0]][1] else f"v_{fields[0]}"
    return f"""
struct BenchSink {{
{nl.join(members)}
}};

struct BenchFill {{
   std::vector<BenchSink> *sinks;
   void operator()(unsigned slot, {", ".join(params)}) {{
      BenchSink &s = (*sinks)[slot];
{nl.join(body)}
   }}
}};

// Reads `columns` of the RNTuple into memory; returns [seconds, entries, items, sum_Jet_pt, sum_Muon_pt].
std::vector<double> bench_read_rdf(const char *path, std::vector<std::string> columns, int threads,
                                   std::vector<BenchSink> *keep) {{
   auto t0 = std::chrono::steady_clock::now();
   if (threads > 1) ROOT::EnableImplicitMT(threads);
   std::vector<BenchSink> local;
   std::vector<BenchSink> &sinks = keep ? *keep : local;
   ROOT::RDataFrame df("Events", path);
   sinks.resize(df.GetNSlots());
   BenchFill fill{{&sinks}};
   df.ForeachSlot(fill, columns);
   double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
   double entries = 0, items = 0, sum_Jet_pt = 0, sum_Muon_pt = 0;
   for (auto &s : sinks) {{
      entries += s.{first}.size();
{nl.join(sums)}
   }}
   return {{secs, entries, items, sum_Jet_pt, sum_Muon_pt}};
}}
"""


def declare(fields: list[str]) -> Any:
    """JIT-compiles the read code for ``fields`` (once per process) and returns ``ROOT``."""
    ROOT = _root()
    if "sink" not in _declared:
        code = (
            "#pragma cling optimize(3)\n#include <ROOT/RDataFrame.hxx>\n#include <ROOT/RVec.hxx>\n"
            "#include <chrono>\n#include <cstdint>\n#include <string>\n#include <vector>\n"
            + sink_source(fields)
        )
        if not ROOT.gInterpreter.Declare(code):
            raise RuntimeError("C++ read code did not compile")
        _declared.add("sink")
    return ROOT


def write_source(fields: list[str]) -> str:
    """C++ writing the in-memory buffers of one sink with ``RNTupleWriter``."""
    info = {n: (t, c) for n, t, c in all_fields()}
    makes, sets = [], []
    for name in fields:
        typ, coll = info[name]
        if coll is not None:
            makes.append(f'   auto f_{name} = model->MakeField<std::vector<{typ}>>("{name}");')
            sets.append(
                f"      {{ std::uint64_t b = i ? s.o_{name}[i - 1] : 0, e = s.o_{name}[i]; "
                f"f_{name}->assign(s.v_{name}.begin() + b, s.v_{name}.begin() + e); }}"
            )
        else:
            makes.append(f'   auto f_{name} = model->MakeField<{typ}>("{name}");')
            sets.append(f"      *f_{name} = s.v_{name}[i];")
    nl = "\n"
    first = f"o_{fields[0]}" if info[fields[0]][1] else f"v_{fields[0]}"
    return f"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
// Writes the entries of sink `s` to `path`; returns the wall seconds.
double bench_write(const BenchSink &s, const char *path, int compression) {{
   auto t0 = std::chrono::steady_clock::now();
   auto model = ROOT::RNTupleModel::Create();
{nl.join(makes)}
   ROOT::RNTupleWriteOptions options;
   options.SetCompression(compression);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "Events", path, options);
   std::size_t n = s.{first}.size();
   for (std::size_t i = 0; i < n; ++i) {{
{nl.join(sets)}
      writer->Fill();
   }}
   writer.reset();
   return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}}
"""
