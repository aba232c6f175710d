"""The Analysis Grand Challenge ttbar selection and histograms with coffea, over an
RNTuple file: NanoEvents through rntuple's reader (``rntuple.coffea``) and through uproot
(coffea's ``NanoEventsFactory.from_root``), eagerly and on a local ``dask.distributed``
cluster; it checks that all four give the same histograms and prints the times.

::

    python3 examples/agc/agc.py FILE.root [--workers 2] [--step-size 100000] [--json OUT.json]

The selection follows the AGC reference coffea processor (CMS open data ttbar, NanoAOD),
with the fields the benchmark's NanoAOD-like files have:

- electrons: ``pt > 30``, ``|eta| < 2.1``, ``cutBased == 4``, ``sip3d < 4``; muons:
  ``pt > 30``, ``|eta| < 2.1``, ``tightId``, ``sip3d < 4``, ``pfRelIso04_all < 0.15``;
  jets: ``pt > 30``, ``|eta| < 2.4``, ``isTightLeptonVeto`` (coffea's Jet method);
  b-tagged: ``btagCSVV2 >= 0.5``;
- events: exactly one lepton, at least four jets, at least one b-tagged jet;
- region ``4j1b`` (exactly one b-tagged jet): HT, the jets' summed pt;
- region ``4j2b`` (two or more): the mass of the trijet (coffea's Lorentz-vector sum of
  three jets) of largest pt among those with a b-tagged jet;
- one histogram, 25 bins over 50-550 GeV, axis ``region``; unweighted (counts), so that
  equal means equal bin by bin, whatever the order of the partitions.

On the cluster the observables are computed by the workers (one task per partition,
reading only the fields the selection uses) and filled into the histogram here (a
``hist.dask`` histogram would need ``dask_histogram``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

BINS, LO, HI = 25, 50.0, 550.0
REGIONS = ("4j1b", "4j2b")
B_TAG = 0.5


def observables(events: Any) -> dict[str, Any]:
    """The two regions' observables (an Awkward or dask-awkward array each) of NanoEvents
    ``events`` (eager or dask): HT of the 4j1b events, the trijet mass of the 4j2b events."""
    import awkward as ak
    import numpy as np

    el = events.Electron
    el = el[(el.pt > 30) & (abs(el.eta) < 2.1) & (el.cutBased == 4) & (el.sip3d < 4)]
    mu = events.Muon
    mu = mu[(mu.pt > 30) & (abs(mu.eta) < 2.1) & mu.tightId & (mu.sip3d < 4) & (mu.pfRelIso04_all < 0.15)]
    jets = events.Jet
    jets = jets[(jets.pt > 30) & (abs(jets.eta) < 2.4) & jets.isTightLeptonVeto]
    nb = ak.sum(jets.btagCSVV2 >= B_TAG, axis=1)
    selected = (ak.num(el) + ak.num(mu) == 1) & (ak.num(jets) >= 4) & (nb >= 1)
    jets, nb = jets[selected], nb[selected]

    ht = ak.sum(jets[nb == 1].pt, axis=1)

    trijet = ak.combinations(jets[nb >= 2], 3, fields=["j1", "j2", "j3"])
    p4 = trijet.j1 + trijet.j2 + trijet.j3
    max_btag = np.maximum(np.maximum(trijet.j1.btagCSVV2, trijet.j2.btagCSVV2), trijet.j3.btagCSVV2)
    p4 = p4[max_btag > B_TAG]
    mass = ak.flatten(p4[ak.argmax(p4.pt, axis=1, keepdims=True)].mass)
    return {"4j1b": ht, "4j2b": mass}


def histogram(values: dict[str, Any]) -> Any:
    """The AGC histogram of the observables (``hist.Hist``: observable x region)."""
    import awkward as ak
    import hist

    h = hist.Hist.new.Reg(BINS, LO, HI, name="observable").StrCat(list(REGIONS), name="region").Double()
    for region in REGIONS:
        h.fill(observable=ak.to_numpy(values[region]), region=region)
    return h


def events_ours(path: str, mode: str, step_size: int | None = None) -> Any:
    """NanoEvents through rntuple's reader."""
    import rntuple.coffea

    options = {} if mode != "dask" or step_size is None else {"step_size": step_size}
    return rntuple.coffea.from_rntuple(f"{path}:Events", mode=mode, **options).events()


def events_uproot(path: str, mode: str, step_size: int | None = None) -> Any:
    """NanoEvents through uproot: ``NanoEventsFactory.from_root`` eagerly; on the cluster
    the same form mapping and ``uproot.dask`` options as its dask mode but for
    ``ak_add_doc``: from_root asks for each field's ``title``, which RNTuple fields do not
    have (uproot raises ``AttributeError: 'RField' object has no attribute 'title'``), so
    their ``description`` stands in.

    With ``step_size`` (several partitions per file) its results are wrong: a partition
    that does not start at entry 0 gets lists from the file's first entries (uproot's
    RNTuple arrays of an entry range keep their offsets into the cluster's content, and
    the form mapping's ``load_buffers`` does not rebase them as the eager path does), so
    :func:`main` reads each file as one partition through uproot."""
    from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

    if mode != "dask":
        return NanoEventsFactory.from_root({path: "Events"}, mode=mode, schemaclass=NanoAODSchema).events()
    import uproot
    from coffea.nanoevents.factory import _map_schema_uproot
    from coffea.util import _is_interpretable

    form_mapping = _map_schema_uproot(
        schemaclass=NanoAODSchema, behavior=dict(NanoAODSchema.behavior()), version="latest"
    )
    opener = partial(
        uproot.dask,
        {path: "Events"},
        full_paths=True,
        open_files=False,
        ak_add_doc={"__doc__": "description", "typename": "typename"},
        filter_branch=_is_interpretable,
        steps_per_file=1 if step_size is None else -(-uproot.open(path)["Events"].num_entries // step_size),
    )
    return NanoEventsFactory(form_mapping, opener, None, mode="dask").events()


READERS: dict[str, Callable[..., Any]] = {"rntuple": events_ours, "uproot": events_uproot}


def run(
    path: str, reader: str, mode: str, *, client: Any = None, step_size: int | None = None
) -> tuple[Any, float]:
    """The AGC histogram of ``path`` with coffea on ``reader`` (``"rntuple"`` or
    ``"uproot"``), ``mode`` ``"eager"`` or ``"dask"`` (computed on ``client``), and the
    seconds it took (building the events, reading, selecting, filling)."""
    import dask

    began = time.perf_counter()
    events = READERS[reader](path, mode, step_size)
    values = observables(events)
    if mode == "dask":
        if client is None:
            raise ValueError("dask mode needs a distributed client")
        (values,) = dask.compute(values, scheduler=client.get)
    h = histogram(values)
    return h, time.perf_counter() - began


def warm_up(path: str) -> None:
    """Runs the analysis once on a few entries through each reader (eagerly through ours:
    eager NanoEvents build every collection, so it compiles every kernel coffea has;
    lazily through uproot, whose eager mode fails on an entry range, see README), so
    that the timed runs do not pay for imports and for compiling coffea's and Awkward's
    kernels (numba). On a cluster, ``client.run(warm_up, path)`` warms up every worker."""
    import warnings

    from coffea.nanoevents import NanoAODSchema, NanoEventsFactory

    import rntuple.coffea

    warnings.filterwarnings("ignore", module="coffea")
    for events in (
        rntuple.coffea.from_rntuple(f"{path}:Events", mode="eager", entry_stop=2000).events(),
        NanoEventsFactory.from_root(
            {path: "Events"}, mode="virtual", entry_stop=2000, schemaclass=NanoAODSchema
        ).events(),
    ):
        histogram(observables(events))


def same(a: Any, b: Any) -> bool:
    """Whether two histograms have the same axes and bin counts."""
    import numpy as np

    return a.axes == b.axes and bool(np.array_equal(a.values(flow=True), b.values(flow=True)))


def bin_counts(results: dict[tuple[str, str], tuple[Any, float]]) -> dict[str, Any]:
    """Every run's histogram as JSON: ``{"rntuple eager": {"edges": [...], "4j1b": [counts
    of the 25 bins], "4j2b": [...]}, ...}`` (flow bins left out)."""
    return {
        f"{reader} {mode}": {
            "edges": [float(edge) for edge in h.axes[0].edges],
            **{region: [float(count) for count in h[:, region].values()] for region in REGIONS},
        }
        for (reader, mode), (h, _) in results.items()
    }


def main(argv: list[str] | None = None) -> int:
    """Runs the four combinations, checks their histograms are equal, prints the times."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", type=Path, help="an RNTuple file with NanoAOD fields, RNTuple 'Events'")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster")
    parser.add_argument("--step-size", type=int, default=None, help="entries per partition (default 100 MB)")
    parser.add_argument("--json", type=Path, default=None, help="also write every run's bin counts here")
    args = parser.parse_args(argv)
    import distributed

    warnings.filterwarnings("ignore", module="coffea")  # its notes on missing cross-references
    path = str(args.file.resolve())
    results: dict[tuple[str, str], tuple[Any, float]] = {}
    warm_up(path)
    for reader in READERS:
        results[reader, "eager"] = run(path, reader, "eager")
    with (
        distributed.LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(warm_up, path)
        results["rntuple", "dask"] = run(path, "rntuple", "dask", client=client, step_size=args.step_size)
        results["uproot", "dask"] = run(path, "uproot", "dask", client=client)
    reference = results["uproot", "eager"][0]
    for (reader, mode), (h, seconds) in results.items():
        counts = {r: int(h[:, r].sum()) for r in REGIONS}
        print(f"coffea on {reader:7} {mode:5}: {seconds:7.2f} s  events per region {counts}")
    if args.json is not None:
        args.json.write_text(json.dumps(bin_counts(results), indent=1))
    equal = all(same(h, reference) for h, _ in results.values())
    print("histograms equal:", equal)
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
