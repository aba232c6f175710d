"""``agc``: an Analysis-Grand-Challenge-style ttbar selection and trijet-mass histogram.

The same definition in every tool (all kinematics in float64):

- jets: ``Jet_pt > 25`` and ``|Jet_eta| < 2.4``; b-tagged: ``Jet_btagCSVV2 >= 0.5``;
- electrons: ``pt > 25``, ``|eta| < 2.1``, ``cutBased == 4``; muons: ``pt > 25``,
  ``|eta| < 2.1``, ``tightId``, ``pfRelIso04_all < 0.15``;
- events: exactly one such lepton, at least 4 jets, at least one b-tagged jet;
- per event, of all combinations of 3 selected jets with at least one b-tag, the one with
  the largest summed transverse momentum; its invariant mass filled into 25 bins over
  50-550 GeV (flow bins ignored).

Tools: ``ours`` (``rntuple`` → Awkward + hist), ``ours-iterate`` (the same over ``iterate()``
batches of 100 MB, the next batch decoded while the current one is analysed, the histograms
added), ``ours-threads`` (the same batches analysed by ``threads`` Python threads at once,
as a coffea ``FuturesExecutor`` does with chunks: NumPy and Awkward's kernels let go of the
GIL, so the analysis itself runs on several cores, as RDataFrame's does), ``uproot``
(Awkward + hist), ``uproot-threads`` (uproot's ``iterate`` in 100 MB steps, the batches
analysed as by ``ours-threads``),
``root-rdf`` (RDataFrame with compiled C++ functions, ``threads`` implicit-MT threads;
1 = no IMT), ``pyarrow`` (Parquet → NumPy, vectorised over jets padded to 12 and the 220
precomputed index triplets). Checksum: the selected-event count and the bin counts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from itertools import combinations
from typing import Any

from common import Timer, emit, parse_args, root_file
from schema import ANALYSIS_FIELDS

TOOLS = ["ours", "ours-iterate", "ours-threads", "uproot", "uproot-threads", "root-rdf", "pyarrow"]
BINS, LO, HI = 25, 50.0, 550.0
MAX_JETS = 12


def agc_awkward(ev: Any) -> tuple[int, list[int]]:
    """The analysis on an Awkward record array with the analysis fields: cuts with
    Awkward, the trijets as ``ak.argcombinations`` of the selected jets' indices, the
    kinematics on the flat NumPy arrays they index (fewer Awkward carries than
    combinations of jet records; the result is the same)."""
    import awkward as ak
    import hist
    import numpy as np

    ele = (ev.Electron_pt > 25) & (abs(ev.Electron_eta) < 2.1) & (ev.Electron_cutBased == 4)
    mu = (ev.Muon_pt > 25) & (abs(ev.Muon_eta) < 2.1) & ev.Muon_tightId & (ev.Muon_pfRelIso04_all < 0.15)
    nlep = ak.sum(ele, axis=1) + ak.sum(mu, axis=1)
    jsel = (ev.Jet_pt > 25) & (abs(ev.Jet_eta) < 2.4)
    njet = ak.sum(jsel, axis=1)
    nb = ak.sum(jsel & (ev.Jet_btagCSVV2 >= 0.5), axis=1)
    sel = ak.to_numpy((nlep == 1) & (njet >= 4) & (nb >= 1))
    keep = jsel[sel]

    def flat(x: Any) -> Any:
        """The selected jets of the selected events, flat."""
        return ak.to_numpy(ak.flatten(x[sel][keep]))

    kinematics = (ev.Jet_pt, ev.Jet_eta, ev.Jet_phi, ev.Jet_mass)
    pt, eta, phi, mass = (flat(x).astype(np.float64) for x in kinematics)
    btag = flat(ev.Jet_btagCSVV2) >= 0.5
    px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
    e = np.sqrt(px * px + py * py + pz * pz + mass * mass)
    counts = ak.to_numpy(njet[sel])
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    local = ak.unflatten(np.arange(counts.sum()) - np.repeat(starts, counts), counts)
    tri = ak.argcombinations(local, 3)  # lexicographic, as ak.combinations
    ntri = ak.to_numpy(ak.num(tri, axis=1))
    base = np.repeat(starts, ntri)
    a, b, c = (ak.to_numpy(ak.flatten(tri[k])) + base for k in ("0", "1", "2"))
    tpx, tpy, tpz, te = (v[a] + v[b] + v[c] for v in (px, py, pz, e))
    tpt = np.sqrt(tpx * tpx + tpy * tpy)
    score = np.where(btag[a] | btag[b] | btag[c], tpt, -1.0)
    first = np.concatenate(([0], np.cumsum(ntri)[:-1]))
    best = ak.to_numpy(ak.argmax(ak.unflatten(score, ntri), axis=1)) + first
    m2 = te[best] ** 2 - tpx[best] ** 2 - tpy[best] ** 2 - tpz[best] ** 2
    m = np.sqrt(np.maximum(m2, 0.0))
    h = hist.Hist.new.Reg(BINS, LO, HI, name="mjjj").Double()
    h.fill(m)
    return int(sel.sum()), [int(x) for x in h.values()]


def analyse_in_threads(batches: Iterable[Any], threads: int) -> tuple[int, list[int]]:
    """``agc_awkward`` of every batch on ``threads`` threads, the results added; at most
    ``threads`` batches in flight, so memory stays that of a few batches."""
    from concurrent.futures import Future, ThreadPoolExecutor

    nsel, counts = 0, [0] * BINS
    pending: deque[Future[tuple[int, list[int]]]] = deque()

    def collect(future: Future[tuple[int, list[int]]]) -> None:
        nonlocal nsel, counts
        n, c = future.result()
        nsel, counts = nsel + n, [x + y for x, y in zip(counts, c, strict=True)]

    with ThreadPoolExecutor(threads) as pool:
        for batch in batches:
            if len(pending) >= threads:
                collect(pending.popleft())
            pending.append(pool.submit(agc_awkward, batch))
        while pending:
            collect(pending.popleft())
    return nsel, counts


def _flat(table: Any, name: str) -> tuple[Any, Any]:
    """Offsets and values (NumPy) of a list column."""
    import numpy as np

    col = table.column(name).combine_chunks()
    return np.asarray(col.offsets), np.asarray(col.values)


def _collection(table: Any, collection: str, names: list[str]) -> tuple[Any, ...]:
    """The offsets of a collection (those of its first field ``collection_NAME``, which all
    its fields share), then the values (NumPy) of each of its fields ``names``."""
    flats = [_flat(table, f"{collection}_{name}") for name in names]
    return (flats[0][0], *(values for _, values in flats))


def agc_numpy(table: Any) -> tuple[int, list[int]]:
    """The analysis on a pyarrow Table, vectorised with NumPy."""
    import numpy as np

    n = table.num_rows
    jo, pt, eta, phi, mass, btag = _collection(table, "Jet", ["pt", "eta", "phi", "mass", "btagCSVV2"])
    eo, ept, eeta, ecut = _collection(table, "Electron", ["pt", "eta", "cutBased"])
    mo, mpt, meta, mtight, miso = _collection(table, "Muon", ["pt", "eta", "tightId", "pfRelIso04_all"])

    def per_event(offsets: Any, mask: Any) -> Any:
        c = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
        return c[offsets[1:]] - c[offsets[:-1]]

    ele = (ept > 25) & (np.abs(eeta) < 2.1) & (ecut == 4)
    mu = (mpt > 25) & (np.abs(meta) < 2.1) & mtight.astype(bool) & (miso < 0.15)
    nlep = per_event(eo, ele) + per_event(mo, mu)
    jsel = (pt > 25) & (np.abs(eta) < 2.4)
    njet = per_event(jo, jsel)
    nb = per_event(jo, jsel & (btag >= 0.5))
    sel = (nlep == 1) & (njet >= 4) & (nb >= 1)
    # Selected jets of selected events, padded to MAX_JETS per event.
    event_of_jet = np.repeat(np.arange(n), np.diff(jo))
    keep = jsel & sel[event_of_jet]
    ev_idx = event_of_jet[keep]
    rows = np.cumsum(sel) - 1
    slot = np.arange(keep.sum()) - np.repeat(np.concatenate(([0], np.cumsum(njet[sel])[:-1])), njet[sel])
    nsel = int(sel.sum())
    shape = (nsel, MAX_JETS)
    pad = {k: np.zeros(shape) for k in ("px", "py", "pz", "e", "b")}
    ptk, phik, etak, mk = (a[keep].astype(np.float64) for a in (pt, phi, eta, mass))
    px, py, pz = ptk * np.cos(phik), ptk * np.sin(phik), ptk * np.sinh(etak)
    r, s = rows[ev_idx], slot
    pad["px"][r, s], pad["py"][r, s], pad["pz"][r, s] = px, py, pz
    pad["e"][r, s] = np.sqrt(px * px + py * py + pz * pz + mk * mk)
    pad["b"][r, s] = btag[keep]
    counts = njet[sel]
    trip = np.array(list(combinations(range(MAX_JETS), 3)))  # lexicographic, as ak.combinations
    valid = trip[:, 2][None, :] < counts[:, None]
    a, b, c = trip[:, 0], trip[:, 1], trip[:, 2]

    def tsum(k: str) -> Any:
        return pad[k][:, a] + pad[k][:, b] + pad[k][:, c]

    tpx, tpy, tpz, te = tsum("px"), tsum("py"), tsum("pz"), tsum("e")
    tpt = np.sqrt(tpx * tpx + tpy * tpy)
    pb = pad["b"]
    has_b = (pb[:, a] >= 0.5) | (pb[:, b] >= 0.5) | (pb[:, c] >= 0.5)
    best = np.argmax(np.where(valid & has_b, tpt, -1.0), axis=1)
    i = np.arange(nsel)
    m2 = te[i, best] ** 2 - tpx[i, best] ** 2 - tpy[i, best] ** 2 - tpz[i, best] ** 2
    m = np.sqrt(np.maximum(m2, 0.0))
    hcounts, _ = np.histogram(m, bins=BINS, range=(LO, HI))
    return nsel, [int(x) for x in hcounts]


RDF_CXX = r"""
#pragma cling optimize(3)
#include <ROOT/RDataFrame.hxx>
#include <ROOT/RVec.hxx>
#include <TH1D.h>
#include <chrono>
#include <cmath>
using ROOT::RVec;
struct AgcLeptons {
   int operator()(const RVec<float> &ept, const RVec<float> &eeta, const RVec<int> &ecut,
                  const RVec<float> &mpt, const RVec<float> &meta, const RVec<bool> &mtight,
                  const RVec<float> &miso) const {
      int n = 0;
      for (std::size_t i = 0; i < ept.size(); ++i)
         n += ept[i] > 25 && std::abs(eeta[i]) < 2.1f && ecut[i] == 4;
      for (std::size_t i = 0; i < mpt.size(); ++i)
         n += mpt[i] > 25 && std::abs(meta[i]) < 2.1f && mtight[i] && miso[i] < 0.15f;
      return n;
   }
};
struct AgcJetMask {
   RVec<int> operator()(const RVec<float> &pt, const RVec<float> &eta) const {
      return pt > 25.f && abs(eta) < 2.4f;
   }
};
struct AgcSelect {
   bool operator()(int nlep, const RVec<int> &jsel, const RVec<float> &btag) const {
      int nj = 0, nb = 0;
      for (std::size_t i = 0; i < jsel.size(); ++i) { nj += jsel[i]; nb += jsel[i] && btag[i] >= 0.5f; }
      return nlep == 1 && nj >= 4 && nb >= 1;
   }
};
struct AgcTrijet {
   double operator()(const RVec<int> &jsel, const RVec<float> &pt, const RVec<float> &eta,
                     const RVec<float> &phi, const RVec<float> &mass, const RVec<float> &btag) const {
      double px[64], py[64], pz[64], e[64];
      bool b[64];
      int n = 0;
      for (std::size_t i = 0; i < pt.size(); ++i) {
         if (!jsel[i]) continue;
         double p = pt[i], h = eta[i], f = phi[i], m = mass[i];
         px[n] = p * std::cos(f); py[n] = p * std::sin(f); pz[n] = p * std::sinh(h);
         e[n] = std::sqrt(px[n] * px[n] + py[n] * py[n] + pz[n] * pz[n] + m * m);
         b[n] = btag[i] >= 0.5f;
         ++n;
      }
      double best = -1.0, bestm2 = 0.0;
      for (int i = 0; i < n; ++i)
         for (int j = i + 1; j < n; ++j)
            for (int k = j + 1; k < n; ++k) {
               if (!(b[i] || b[j] || b[k])) continue;
               double x = px[i] + px[j] + px[k], y = py[i] + py[j] + py[k];
               double z = pz[i] + pz[j] + pz[k], en = e[i] + e[j] + e[k];
               double t = std::sqrt(x * x + y * y);
               if (t > best) { best = t; bestm2 = en * en - x * x - y * y - z * z; }
            }
      return std::sqrt(std::max(bestm2, 0.0));
   }
};
std::vector<double> bench_agc_rdf(const char *path, int threads) {
   auto t0 = std::chrono::steady_clock::now();
   if (threads > 1) ROOT::EnableImplicitMT(threads);
   ROOT::RDataFrame df("Events", path);
   auto d = df.Define("nlep", AgcLeptons{}, {"Electron_pt", "Electron_eta", "Electron_cutBased", "Muon_pt",
                                             "Muon_eta", "Muon_tightId", "Muon_pfRelIso04_all"})
               .Define("jsel", AgcJetMask{}, {"Jet_pt", "Jet_eta"})
               .Filter(AgcSelect{}, {"nlep", "jsel", "Jet_btagCSVV2"})
               .Define("mjjj", AgcTrijet{},
                       {"jsel", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2"});
   auto count = d.Count();
   auto h = d.Histo1D<double>({"mjjj", "", 25, 50.0, 550.0}, "mjjj");
   std::vector<double> out{0.0, static_cast<double>(*count)};
   for (int i = 1; i <= 25; ++i) out.push_back(h->GetBinContent(i));
   out[0] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
   return out;
}
"""


def main() -> None:
    """Runs one measurement."""
    args = parse_args(TOOLS)
    fields = list(ANALYSIS_FIELDS)
    path = str(root_file(args.data))
    if args.tool not in ("pyarrow", "root-rdf"):
        # The analysis' own imports happen before the clock starts, as ROOT's JIT
        # compilation does (``agc_awkward`` imports them where it runs).
        import awkward  # noqa: F401
        import hist  # noqa: F401
    if args.tool == "ours":
        import rntuple

        with Timer() as t:
            nsel, counts = agc_awkward(rntuple.open(path)["Events"].arrays(fields, library="ak"))
        seconds = t.seconds
    elif args.tool == "ours-iterate":
        import rntuple

        nsel, counts = 0, [0] * BINS
        with Timer() as t:
            events = rntuple.open(path)["Events"]
            for batch in events.iterate(fields, step_size="100 MB", library="ak"):
                n, c = agc_awkward(batch)
                nsel, counts = nsel + n, [x + y for x, y in zip(counts, c, strict=True)]
        seconds = t.seconds
    elif args.tool == "ours-threads":
        import rntuple

        with Timer() as t:
            events = rntuple.open(path)["Events"]
            batches = events.iterate(fields, step_size="100 MB", library="ak")
            nsel, counts = analyse_in_threads(batches, args.threads)
        seconds = t.seconds
    elif args.tool == "uproot":
        import uproot

        with Timer() as t:
            nsel, counts = agc_awkward(uproot.open(path)["Events"].arrays(fields))
        seconds = t.seconds
    elif args.tool == "uproot-threads":
        import uproot

        with Timer() as t:
            batches = uproot.open(path)["Events"].iterate(fields, step_size="100 MB")
            nsel, counts = analyse_in_threads(batches, args.threads)
        seconds = t.seconds
    elif args.tool == "pyarrow":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pa.set_cpu_count(args.threads)
        pa.set_io_thread_count(args.threads)
        with Timer() as t:
            nsel, counts = agc_numpy(pq.read_table(str(args.data / "nanoaod.parquet"), columns=fields))
        seconds = t.seconds
    else:
        import ROOT

        ROOT.gROOT.SetBatch(True)
        if not ROOT.gInterpreter.Declare(RDF_CXX):
            raise RuntimeError("AGC C++ did not compile")
        out = list(ROOT.bench_agc_rdf(path, args.threads))
        seconds, nsel, counts = out[0], int(out[1]), [int(x) for x in out[2:]]
    emit("agc", args.tool, seconds, {"selected": nsel, "bins": counts}, threads=args.threads)


if __name__ == "__main__":
    main()
