"""Generates the NanoAOD-like benchmark dataset (``python3 bench/generate.py --events N --out DIR``).

One C++ loop, JIT-compiled into ROOT (PyPI ``root``), fills every event once from a fixed
seed and writes it with ROOT's default settings (zstd level 5, compression 505) both as
an RNTuple and as a TTree:

- ``DIR/nanoaod_root.root``: RNTuple ``Events`` written by ROOT's ``RNTupleWriter``;
- ``DIR/nanoaod_ttree.root``: TTree ``Events``, same data, NanoAOD style branches
  (``Jet_pt[nJet]/F``);
- ``DIR/nanoaod_ours.root``: ``rntuple copy --compression zstd:5`` of the ROOT RNTuple
  (our writer; needs ``target/release/rntuple``);
- ``DIR/nanoaod.parquet``: the same data as Parquet (zstd), read with our Arrow reader
  in batches of 100,000 entries, one row group per batch.

``--only KIND ...`` (``root``, ``ttree``, ``ours``, ``parquet``) writes just those files
(``ours`` and ``parquet`` are made from the ROOT RNTuple, which they bring along): the
``convert`` task needs only the TTree, ``--only ttree``. The event loop is the same, so a
file is identical whichever others are written with it. ``DIR/generate.json`` records the
command, the wall time of each step and the file sizes.
Schema: ``bench/schema.py``. Distributions: exponential transverse momenta (jets sorted
by pt as in NanoAOD), gaussian pseudorapidities, uniform azimuths, b-tag discriminants
in [0, 1] correlated with the jet's hadron flavour, integer IDs and Poisson
multiplicities (jets 0-12, mean ~6; generator particles mean ~10).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from schema import COLLECTIONS, LEAF_CODE, SCALARS, TRIGGERS

REPO = Path(__file__).resolve().parent.parent
CLI = REPO / "target" / "release" / "rntuple"

FILL = r"""
static float clampf(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

static void fill_event(NanoEvent &e, std::mt19937_64 &rng, long i) {
   std::uniform_real_distribution<float> uni(0.0f, 1.0f);
   std::uniform_real_distribution<float> phi(-3.14159265f, 3.14159265f);
   std::normal_distribution<float> gaus(0.0f, 1.0f);
   std::exponential_distribution<float> expo(1.0f);
   // One distribution object per mean: constructing std::poisson_distribution is costly.
   static std::map<double, std::poisson_distribution<int>> poissons;
   auto poisson = [&](double mean, int max) {
      auto it = poissons.find(mean);
      if (it == poissons.end()) it = poissons.emplace(mean, std::poisson_distribution<int>(mean)).first;
      int n = it->second(rng);
      return n > max ? max : n;
   };
   e.run = 1;
   e.luminosityBlock = 1 + static_cast<std::uint32_t>(i / 1000);
   e.event = 1000000ULL + static_cast<std::uint64_t>(i);
   e.genWeight = (uni(rng) < 0.02f ? -1.0f : 1.0f) * (0.9f + 0.2f * uni(rng));
   e.PV_npvs = 1 + poisson(30.0, 100);
   e.PV_npvsGood = std::max(1, e.PV_npvs - poisson(2.0, 10));
   e.PV_z = 3.5f * gaus(rng);
   e.PV_chi2 = 1.0f + 0.2f * gaus(rng);

   // Jets: pt-ordered, exponential spectrum above 15 GeV.
   e.nJet = poisson(6.0, 12);
   float pts[64];
   for (int j = 0; j < e.nJet; ++j) pts[j] = 15.0f + 40.0f * expo(rng);
   std::sort(pts, pts + e.nJet, std::greater<float>());
   float ht = 0.0f;
   for (int j = 0; j < e.nJet; ++j) {
      float u = uni(rng);
      int flavour = u < 0.25f ? 5 : (u < 0.35f ? 4 : 0);
      float b = flavour == 5 ? 1.0f - std::pow(uni(rng), 3.0f)
                             : (flavour == 4 ? uni(rng) : std::pow(uni(rng), 4.0f));
      e.Jet_pt[j] = pts[j];
      e.Jet_eta[j] = clampf(1.6f * gaus(rng), -4.7f, 4.7f);
      e.Jet_phi[j] = phi(rng);
      e.Jet_mass[j] = pts[j] * (0.08f + 0.1f * uni(rng));
      e.Jet_btagCSVV2[j] = b;
      e.Jet_btagDeepB[j] = clampf(b + 0.1f * gaus(rng), 0.0f, 1.0f);
      e.Jet_btagDeepFlavB[j] = clampf(b + 0.05f * gaus(rng), 0.0f, 1.0f);
      e.Jet_qgl[j] = uni(rng);
      e.Jet_area[j] = 0.5f + 0.03f * gaus(rng);
      e.Jet_chEmEF[j] = 0.3f * uni(rng);
      e.Jet_neEmEF[j] = 0.3f * uni(rng);
      e.Jet_rawFactor[j] = 0.2f * uni(rng);
      e.Jet_jetId[j] = uni(rng) < 0.9f ? 6 : 2;
      e.Jet_puId[j] = uni(rng) < 0.8f ? 7 : static_cast<std::int32_t>(rng() % 7);
      e.Jet_hadronFlavour[j] = flavour;
      e.Jet_nConstituents[j] = static_cast<std::uint8_t>(2 + poisson(15.0, 200));
      ht += pts[j];
   }

   e.nElectron = poisson(0.8, 8);
   for (int k = 0; k < e.nElectron; ++k) {
      e.Electron_pt[k] = 7.0f + 25.0f * expo(rng);
      e.Electron_eta[k] = clampf(1.2f * gaus(rng), -2.5f, 2.5f);
      e.Electron_phi[k] = phi(rng);
      e.Electron_mass[k] = 0.000511f;
      e.Electron_charge[k] = (rng() & 1) ? 1 : -1;
      e.Electron_cutBased[k] = static_cast<std::int32_t>(rng() % 5);
      e.Electron_dxy[k] = 0.01f * gaus(rng);
      e.Electron_dz[k] = 0.02f * gaus(rng);
      e.Electron_pfRelIso03_all[k] = 0.1f * expo(rng);
      e.Electron_sip3d[k] = 2.0f * expo(rng);
      e.Electron_mvaFall17V2Iso_WP80[k] = uni(rng) < 0.7f;
      e.Electron_tightCharge[k] = static_cast<std::int32_t>(rng() % 3);
   }
   e.nMuon = poisson(0.8, 8);
   for (int k = 0; k < e.nMuon; ++k) {
      e.Muon_pt[k] = 5.0f + 25.0f * expo(rng);
      e.Muon_eta[k] = clampf(1.2f * gaus(rng), -2.4f, 2.4f);
      e.Muon_phi[k] = phi(rng);
      e.Muon_mass[k] = 0.10566f;
      e.Muon_charge[k] = (rng() & 1) ? 1 : -1;
      e.Muon_tightId[k] = uni(rng) < 0.75f;
      e.Muon_looseId[k] = e.Muon_tightId[k] || uni(rng) < 0.8f;
      e.Muon_pfRelIso04_all[k] = 0.12f * expo(rng);
      e.Muon_dxy[k] = 0.005f * gaus(rng);
      e.Muon_dz[k] = 0.01f * gaus(rng);
      e.Muon_sip3d[k] = 1.5f * expo(rng);
      e.Muon_nStations[k] = 1 + static_cast<std::int32_t>(rng() % 4);
   }
   e.nPhoton = poisson(0.6, 8);
   for (int k = 0; k < e.nPhoton; ++k) {
      e.Photon_pt[k] = 10.0f + 20.0f * expo(rng);
      e.Photon_eta[k] = clampf(1.2f * gaus(rng), -2.5f, 2.5f);
      e.Photon_phi[k] = phi(rng);
      e.Photon_mass[k] = 0.0f;
      e.Photon_cutBased[k] = static_cast<std::int32_t>(rng() % 4);
      e.Photon_pfRelIso03_all[k] = 0.1f * expo(rng);
      e.Photon_r9[k] = clampf(0.9f + 0.08f * gaus(rng), 0.0f, 1.0f);
      e.Photon_mvaID_WP80[k] = uni(rng) < 0.6f;
   }
   e.nTau = poisson(0.5, 8);
   for (int k = 0; k < e.nTau; ++k) {
      e.Tau_pt[k] = 20.0f + 20.0f * expo(rng);
      e.Tau_eta[k] = clampf(1.3f * gaus(rng), -2.3f, 2.3f);
      e.Tau_phi[k] = phi(rng);
      e.Tau_mass[k] = 0.3f + 1.2f * uni(rng);
      e.Tau_charge[k] = (rng() & 1) ? 1 : -1;
      static const int modes[6] = {0, 1, 2, 10, 11, 1};
      e.Tau_decayMode[k] = modes[rng() % 6];
      e.Tau_idDeepTau2017v2p1VSjet[k] = static_cast<std::uint8_t>(rng() % 256);
      e.Tau_dz[k] = 0.02f * gaus(rng);
   }
   e.nGenPart = poisson(10.0, 40);
   for (int k = 0; k < e.nGenPart; ++k) {
      static const int ids[8] = {1, 2, 5, 21, 11, 13, 6, 24};
      int id = ids[rng() % 8];
      e.GenPart_pt[k] = 30.0f * expo(rng);
      e.GenPart_eta[k] = 2.5f * gaus(rng);
      e.GenPart_phi[k] = phi(rng);
      e.GenPart_mass[k] = id == 6 ? 172.5f : (id == 24 ? 80.4f : (id == 5 ? 4.8f : 0.0f));
      e.GenPart_pdgId[k] = (rng() & 1) ? id : -id;
      e.GenPart_status[k] = (rng() & 1) ? 1 : 62;
      e.GenPart_statusFlags[k] = static_cast<std::int32_t>(rng() % 32768);
      e.GenPart_genPartIdxMother[k] = k == 0 ? -1 : static_cast<std::int32_t>(rng() % k);
   }

   float mx = 0.0f, my = 0.0f;
   for (int j = 0; j < e.nJet; ++j) {
      mx -= e.Jet_pt[j] * std::cos(e.Jet_phi[j]);
      my -= e.Jet_pt[j] * std::sin(e.Jet_phi[j]);
   }
   mx += 20.0f * gaus(rng);
   my += 20.0f * gaus(rng);
   e.MET_pt = std::sqrt(mx * mx + my * my);
   e.MET_phi = std::atan2(my, mx);
   e.MET_sumEt = ht + 300.0f + 100.0f * expo(rng);
   e.MET_significance = e.MET_pt / std::sqrt(e.MET_sumEt);
   e.PuppiMET_pt = e.MET_pt * (0.9f + 0.2f * uni(rng));
   e.PuppiMET_phi = e.MET_phi + 0.1f * gaus(rng);
   e.PuppiMET_sumEt = e.MET_sumEt * 0.8f;

   bool mu24 = false, ele32 = false;
   for (int k = 0; k < e.nMuon; ++k) mu24 |= e.Muon_pt[k] > 24.0f && e.Muon_tightId[k];
   for (int k = 0; k < e.nElectron; ++k) ele32 |= e.Electron_pt[k] > 32.0f && e.Electron_cutBased[k] >= 3;
   std::uint64_t bits = rng();
   e.HLT_IsoMu24 = mu24;
   e.HLT_IsoMu27 = mu24 && (bits & 1);
   e.HLT_Mu50 = mu24 && (bits & 2) && (bits & 4);
   e.HLT_Ele32_WPTight_Gsf = ele32;
   e.HLT_Ele35_WPTight_Gsf = ele32 && (bits & 8);
   e.HLT_Ele23_Ele12_CaloIdL_TrackIdL_IsoVL = e.nElectron >= 2 && (bits & 16);
   e.HLT_Mu17_TrkIsoVVL_Mu8_TrkIsoVVL_DZ_Mass8 = e.nMuon >= 2 && (bits & 32);
   e.HLT_PFHT1050 = ht > 1050.0f;
   e.HLT_PFJet500 = e.nJet > 0 && e.Jet_pt[0] > 500.0f;
   e.HLT_AK8PFJet400 = e.nJet > 0 && e.Jet_pt[0] > 400.0f && (bits & 64);
   e.HLT_PFMET120_PFMHT120_IDTight = e.MET_pt > 120.0f;
   e.HLT_Photon200 = e.nPhoton > 0 && e.Photon_pt[0] > 200.0f;
   e.HLT_DoubleEle25_CaloIdL_MW = e.nElectron >= 2 && (bits & 128) && (bits & 256);
   e.Flag_goodVertices = (bits >> 10) % 1000 != 0;
   e.Flag_globalSuperTightHalo2016Filter = (bits >> 20) % 500 != 0;
   e.Flag_HBHENoiseFilter = (bits >> 30) % 300 != 0;
   e.Flag_HBHENoiseIsoFilter = (bits >> 40) % 400 != 0;
   e.Flag_EcalDeadCellTriggerPrimitiveFilter = (bits >> 50) % 700 != 0;
   e.Flag_BadPFMuonFilter = (bits >> 9) % 800 != 0;
   e.Flag_eeBadScFilter = (bits >> 19) % 900 != 0;
}
"""


def cxx_source() -> str:
    """The generator's C++: the event struct, the filling code and the writer loop, built from
    ``schema.py`` so that the RNTuple fields and the TTree branches cannot diverge."""
    struct = ["struct NanoEvent {"]
    for name, typ in SCALARS:
        struct.append(f"   {typ} {name};")
    for c in COLLECTIONS:
        struct.append(f"   std::int32_t {c.counter};")
    for t in TRIGGERS:
        struct.append(f"   bool {t};")
    for c in COLLECTIONS:
        for name, typ in c.fields():
            struct.append(f"   {typ} {name}[{c.max}];")
    struct.append("};")

    fields, branches, copies = [], [], []
    for name, typ in SCALARS:
        fields.append(f'   auto f_{name} = model->MakeField<{typ}>("{name}");')
        branches.append(f'   tree->Branch("{name}", &e.{name}, "{name}/{LEAF_CODE[typ]}");')
        copies.append(f"      *f_{name} = e.{name};")
    for c in COLLECTIONS:
        n = c.counter
        fields.append(f'   auto f_{n} = model->MakeField<std::int32_t>("{n}");')
        branches.append(f'   tree->Branch("{n}", &e.{n}, "{n}/I");')
        copies.append(f"      *f_{n} = e.{n};")
    for t in TRIGGERS:
        fields.append(f'   auto f_{t} = model->MakeField<bool>("{t}");')
        branches.append(f'   tree->Branch("{t}", &e.{t}, "{t}/O");')
        copies.append(f"      *f_{t} = e.{t};")
    for c in COLLECTIONS:
        for name, typ in c.fields():
            fields.append(f'   auto f_{name} = model->MakeField<std::vector<{typ}>>("{name}");')
            branches.append(f'   tree->Branch("{name}", e.{name}, "{name}[{c.counter}]/{LEAF_CODE[typ]}");')
            copies.append(f"      f_{name}->assign(e.{name}, e.{name} + e.{c.counter});")
    nl = "\n"
    return rf"""
#pragma cling optimize(3)
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <TFile.h>
#include <TTree.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

{nl.join(struct)}
{FILL}

// Writes n events to the RNTuple file and/or the TTree file (empty path: skipped);
// returns the wall seconds spent in [filling, RNTuple writing, TTree writing].
std::vector<double> nanoaod_generate(const char *rntuple_path, const char *ttree_path, long n,
                                     int compression, unsigned long seed) {{
   using clock = std::chrono::steady_clock;
   auto secs = [](clock::time_point a, clock::time_point b) {{
      return std::chrono::duration<double>(b - a).count();
   }};
   std::vector<double> times(3, 0.0);
   std::unique_ptr<NanoEvent> ep(new NanoEvent());
   NanoEvent &e = *ep;
   std::mt19937_64 rng(seed);
   bool do_rntuple = rntuple_path[0] != 0, do_ttree = ttree_path[0] != 0;

   auto model = ROOT::RNTupleModel::Create();
{nl.join(fields)}
   std::unique_ptr<ROOT::RNTupleWriter> writer;
   if (do_rntuple) {{
      ROOT::RNTupleWriteOptions options;
      options.SetCompression(compression);
      writer = ROOT::RNTupleWriter::Recreate(std::move(model), "Events", rntuple_path, options);
   }}
   std::unique_ptr<TFile> tfile;
   TTree *tree = nullptr;
   if (do_ttree) {{
      tfile.reset(TFile::Open(ttree_path, "RECREATE", "", compression));
      tree = new TTree("Events", "Events");
{nl.join(branches)}
   }}
   for (long i = 0; i < n; ++i) {{
      auto t0 = clock::now();
      fill_event(e, rng, i);
      auto t1 = clock::now();
      times[0] += secs(t0, t1);
      if (do_rntuple) {{
{nl.join(copies)}
         writer->Fill();
      }}
      auto t2 = clock::now();
      times[1] += secs(t1, t2);
      if (do_ttree) tree->Fill();
      times[2] += secs(t2, clock::now());
   }}
   auto t3 = clock::now();
   writer.reset();
   auto t4 = clock::now();
   times[1] += secs(t3, t4);
   if (do_ttree) {{
      tfile->cd();
      tree->Write();
      tfile->Close();
   }}
   times[2] += secs(t4, clock::now());
   return times;
}}
"""


def _run_root(rntuple_path: str, ttree_path: str, events: int, compression: int, seed: int) -> list[float]:
    import ROOT

    ROOT.gROOT.SetBatch(True)
    if not ROOT.gInterpreter.Declare(cxx_source()):
        raise RuntimeError("the generator's C++ did not compile")
    return list(ROOT.nanoaod_generate(rntuple_path, ttree_path, events, compression, seed))


def write_parquet(source: Path, out: Path, batch: int = 100_000) -> None:
    """Writes ``source``'s RNTuple ``Events`` as Parquet (zstd), one row group per ``batch`` entries,
    reading it with our Arrow reader."""
    import pyarrow.parquet as pq

    sys.path.insert(0, str(REPO / "python"))
    import rntuple

    events = rntuple.open(str(source))["Events"]
    tmp = out.with_suffix(".parquet.tmp")
    writer = None
    for table in events.iterate(step_size=batch, library="arrow"):
        if writer is None:
            writer = pq.ParquetWriter(str(tmp), table.schema, compression="zstd")
        for start in range(0, table.num_rows, batch):
            writer.write_table(table.slice(start, batch), row_group_size=batch)
    if writer is not None:
        writer.close()
    tmp.rename(out)


# --only KIND -> the file it names; ``ours`` and ``parquet`` are derived from ``root``.
KINDS = {
    "root": "nanoaod_root.root",
    "ttree": "nanoaod_ttree.root",
    "ours": "nanoaod_ours.root",
    "parquet": "nanoaod.parquet",
}


def kinds_needed(only: list[str] | None) -> set[str]:
    """The kinds of file to have in the end for ``--only`` (all when None), with the ROOT
    RNTuple that ``ours`` and ``parquet`` are made from."""
    kinds = set(only) if only else set(KINDS)
    if kinds & {"ours", "parquet"}:
        kinds.add("root")
    return kinds


def _portable(arg: str, repo: Path) -> str:
    """A command-line argument with an absolute path made relative to ``repo``."""
    if not arg.startswith("/"):
        return arg
    return os.path.relpath(arg, repo)


def main(argv: list[str] | None = None) -> int:
    """Command line: generates the files missing in ``--out`` (all of them with ``--force``),
    or only those of ``--only``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=20240605)
    parser.add_argument("--compression", type=int, default=505, help="ROOT compression setting")
    parser.add_argument("--force", action="store_true", help="regenerate existing files")
    parser.add_argument("--marker", action="store_true", help="create OUT/READY when all files exist")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(KINDS),
        default=None,
        help="write only these files (ours and parquet also need root); default: all",
    )
    args = parser.parse_args(argv)
    kinds = kinds_needed(args.only)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    # Recorded without this machine's paths: the interpreter by name, paths relative to
    # the repository.
    repo = Path(__file__).resolve().parent.parent
    command = shlex.join(["python3", *(_portable(a, repo) for a in sys.argv)])
    meta_path = out / "generate.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() and not args.force else {}
    if meta and meta.get("events") != args.events:
        raise SystemExit(f"{out} holds {meta.get('events')} events, not {args.events}; use --force")
    meta.update(events=args.events, seed=args.seed, compression=args.compression, command=command)
    meta.setdefault("seconds", {})

    root_file, ttree_file = out / "nanoaod_root.root", out / "nanoaod_ttree.root"
    ours_file, parquet_file = out / "nanoaod_ours.root", out / "nanoaod.parquet"

    def save() -> None:
        meta["bytes"] = {p.name: p.stat().st_size for p in sorted(out.glob("nanoaod*")) if p.is_file()}
        meta_path.write_text(json.dumps(meta, indent=1) + "\n")

    need_root = "root" in kinds and (args.force or not root_file.exists())
    need_ttree = "ttree" in kinds and (args.force or not ttree_file.exists())
    if need_root or need_ttree:
        print(f"generating {args.events} events with ROOT ...", flush=True)
        tmp_r, tmp_t = out / "nanoaod_root.root.tmp", out / "nanoaod_ttree.root.tmp"
        t0 = time.perf_counter()
        fill, t_rntuple, t_ttree = _run_root(
            str(tmp_r) if need_root else "", str(tmp_t) if need_ttree else "", args.events,
            args.compression, args.seed,
        )  # fmt: skip
        total = time.perf_counter() - t0
        if need_root:
            tmp_r.rename(root_file)
            meta["seconds"]["nanoaod_root.root"] = round(t_rntuple, 2)
        if need_ttree:
            tmp_t.rename(ttree_file)
            meta["seconds"]["nanoaod_ttree.root"] = round(t_ttree, 2)
        meta["seconds"]["event_filling"] = round(fill, 2)
        meta["seconds"]["root_total_incl_jit"] = round(total, 2)
        save()
        print(f"  ROOT: {total:.1f} s (filling {fill:.1f}, RNTuple {t_rntuple:.1f}, TTree {t_ttree:.1f})")
    if "ours" in kinds and (args.force or not ours_file.exists()):
        if not CLI.exists():
            raise SystemExit(f"{CLI} is missing: cargo build --release -p rntuple-cli")
        t0 = time.perf_counter()
        # The copy appears at its path only when complete (and replaces an older one).
        subprocess.run(
            [str(CLI), "copy", str(root_file), str(ours_file), "--compression", "zstd:5", "--force"],
            check=True,
        )
        meta["seconds"]["nanoaod_ours.root"] = round(time.perf_counter() - t0, 2)
        save()
        print(f"  rntuple copy: {meta['seconds']['nanoaod_ours.root']:.1f} s")
    if "parquet" in kinds and (args.force or not parquet_file.exists()):
        t0 = time.perf_counter()
        write_parquet(root_file, parquet_file)
        meta["seconds"]["nanoaod.parquet"] = round(time.perf_counter() - t0, 2)
        save()
        print(f"  parquet: {meta['seconds']['nanoaod.parquet']:.1f} s")
    save()
    if args.marker and all((out / KINDS[k]).exists() for k in KINDS):
        (out / "READY").write_text(command + "\n")
    print(json.dumps(meta, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
