"""Writes ``examples/events.root``: a small NanoAOD-like RNTuple, written by ROOT 6.40.

The file is committed so the README's first command needs no ROOT; run this script
(``pip install root``) to regenerate it. The writer-layout test
(``crates/rntuple/tests/root_writer_layout.rs``) calls it with other options. The
robustness test's small uncompressed file
``crates/rntuple/tests/data/events_uncompressed.root`` comes from
``make_example.py crates/rntuple/tests/data/events_uncompressed.root 300 0``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ROOT

CXX = r"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

void rntuple_write_example(const char *path, long n_events, int compression, long cluster,
                           long max_page, long initial_page) {
   auto model = ROOT::RNTupleModel::Create();
   auto run = model->MakeField<std::uint32_t>("run");
   auto event = model->MakeField<std::uint64_t>("event");
   auto jet_pt = model->MakeField<std::vector<float>>("Jet_pt");
   auto jet_eta = model->MakeField<std::vector<float>>("Jet_eta");
   auto muon = model->MakeField<std::vector<std::pair<float, std::int32_t>>>("Muon_pt_charge");
   auto met = model->MakeField<double>("MET_pt");
   auto trigger = model->MakeField<bool>("HLT_IsoMu24");
   auto dataset = model->MakeField<std::string>("dataset");
   ROOT::RNTupleWriteOptions options;
   options.SetCompression(compression);
   if (cluster > 0) options.SetApproxZippedClusterSize(cluster);
   if (initial_page > 0 && max_page > 0 && initial_page > max_page) {
      options.SetInitialUnzippedPageSize(initial_page);
      options.SetMaxUnzippedPageSize(max_page);
   } else {
      if (max_page > 0) options.SetMaxUnzippedPageSize(max_page);
      if (initial_page > 0) options.SetInitialUnzippedPageSize(initial_page);
   }
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "Events", path, options);
   std::mt19937 rng(42);
   std::exponential_distribution<float> pt(1.0f / 30.0f);
   std::normal_distribution<float> eta(0.0f, 1.5f);
   std::poisson_distribution<int> n_jets(4), n_muons(1);
   for (long i = 0; i < n_events; ++i) {
      *run = 1 + i / 100000;
      *event = 1000 + i;
      jet_pt->clear();
      jet_eta->clear();
      for (int j = n_jets(rng); j > 0; --j) {
         jet_pt->push_back(20.0f + pt(rng));
         jet_eta->push_back(eta(rng));
      }
      muon->clear();
      for (int m = n_muons(rng); m > 0; --m)
         muon->emplace_back(3.0f + pt(rng), (rng() & 1) ? 1 : -1);
      *met = std::abs(static_cast<double>(eta(rng)) * 25.0);
      *trigger = !muon->empty() && muon->front().first > 24.0f;
      *dataset = (i % 2) ? "TTbar" : "DYJets";
      writer->Fill();
   }
}
"""


def main(
    path: str = str(Path(__file__).with_name("events.root")),
    n_events: int = 2000,
    compression: int = 505,
    cluster_bytes: int = 16 * 1024,
    max_page_bytes: int = 0,
    initial_page_bytes: int = 0,
) -> None:
    """Writes the example file at ``path``: ``n_events`` entries, ROOT's compression setting
    ``compression`` (505 = zstd level 5, ROOT's default; 0 = uncompressed), approximate
    zipped cluster size, maximum and initial page sizes (0 keeps ROOT's default)."""
    ROOT.gInterpreter.Declare(CXX)
    ROOT.rntuple_write_example(path, n_events, compression, cluster_bytes, max_page_bytes, initial_page_bytes)


if __name__ == "__main__":
    # make_example.py [PATH [N_EVENTS [COMPRESSION [CLUSTER [MAX_PAGE [INITIAL_PAGE]]]]]]
    args = sys.argv[1:]
    main(*args[:1], *(int(a) for a in args[1:6]))
