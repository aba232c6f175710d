"""Writes the NanoAOD-like example RNTuple (as examples/make_example.py) with ROOT 6.40
and the given write options, for the writer-layout test.

usage: root_write_events.py PATH N_EVENTS COMPRESSION CLUSTER_BYTES MAX_PAGE_BYTES INITIAL_PAGE_BYTES
(0 for CLUSTER/MAX_PAGE/INITIAL_PAGE keeps ROOT's default)
"""

import sys

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

void rntuple_layout_events(const char *path, long n_events, int compression, long cluster,
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

if __name__ == "__main__":
    path, n, comp, cluster, max_page, initial = sys.argv[1:7]
    ROOT.gInterpreter.Declare(CXX)
    ROOT.rntuple_layout_events(path, int(n), int(comp), int(cluster), int(max_page), int(initial))
