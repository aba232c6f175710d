"""coffea's NanoEvents over RNTuple through our reader (``rntuple.coffea``) equal coffea
on uproot over the same file: collections (``events.Jet.pt``), a cross reference
(``GenPart.parent``, from ``GenPart_genPartIdxMother``; the dataset has no
``*_jetIdx``), vector methods (``(j0 + j1).mass``, ``delta_r``) and the types, on the
benchmark's NanoAOD-like file written by ROOT (flat layout: ``std::vector<float>``,
``nJet`` int32) and on the importer layout (``_collectionN`` with projected ``Jet_pt``
RVecs and ``nJet`` cardinalities) written by ``rntuple convert`` and by ROOT's
``RNTupleImporter``; eagerly, lazily, and as Dask graphs on a 2-process LocalCluster that
read only the fields they use. The AGC example runs end to end.

coffea on uproot is the independent reference, eager over the whole file (its eager
mode fails on an entry range of an RNTuple; its dask mode needs one partition per
RNTuple file, see examples/agc/README.md), lazy over an entry range.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import dask
import pytest
import ttree_oracle
from coffea.nanoevents import NanoAODSchema, NanoEventsFactory
from conftest import REPO_ROOT, require_rntuple_bin

import rntuple
import rntuple.coffea

LAYOUTS = ["flat", "convert", "importer"]
# the fields the graph of :func:`physics` reads
GRAPH_FIELDS = {
    "nJet",
    "Jet_pt",
    "Jet_eta",
    "Jet_phi",
    "Jet_mass",
    "nGenPart",
    "GenPart_pdgId",
    "GenPart_genPartIdxMother",
    "nMuon",
    "Muon_eta",
}


@pytest.fixture(autouse=True)
def _quiet_coffea() -> Iterator[None]:
    # coffea warns of every NanoAOD cross reference the dataset lacks (Jet_genJetIdx ...)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="coffea")
        yield


@pytest.fixture(scope="module")
def files(nanoaod_like: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The NanoAD-like RNTuple in the three layouts: ``flat`` (ROOT's RNTupleWriter),
    ``convert`` (``rntuple convert`` of the TTree) and ``importer`` (ROOT's importer)."""
    out = tmp_path_factory.mktemp("coffea")
    converted, imported = out / "convert.root", out / "importer.root"
    subprocess.run(
        [str(require_rntuple_bin()), "convert", f"{nanoaod_like['ttree']}:Events", str(converted)],
        check=True,
        capture_output=True,
    )
    result = ttree_oracle.root_import(nanoaod_like["ttree"], "Events", imported)
    assert result.ok, result.error
    return {"flat": nanoaod_like["rntuple"], "convert": converted, "importer": imported}


def physics(events: Any) -> dict[str, Any]:
    """What the tests compare: a collection, a cross reference, vector methods."""
    jets = events.Jet[ak.num(events.Jet) >= 2]
    j0, j1 = jets[:, 0], jets[:, 1]
    return {
        "jet_pt": events.Jet.pt,
        "parent_pdgId": events.GenPart.parent.pdgId,
        "mjj": (j0 + j1).mass,
        "delta_r": j0.delta_r(j1),
        "muon_eta": events.Muon.eta,
    }


def assert_same(ours: dict[str, Any], reference: dict[str, Any]) -> None:
    """Equal values, and equal types (parameters included: typename, __doc__)."""
    for key, value in reference.items():
        assert ours[key].type == value.type, key
        assert ak.array_equal(ours[key], value), key


def uproot_events(path: Path, mode: str = "eager", **kwargs: Any) -> Any:
    return NanoEventsFactory.from_root(
        {str(path): "Events"}, mode=mode, schemaclass=NanoAODSchema, **kwargs
    ).events()


def test_projected_fields_are_what_nanoevents_are_built_from(files: dict[str, Path]) -> None:
    """The importer layout's NanoEvents fields are its projected fields, named and typed as
    the flat file's (but nJet: a uint32 cardinality), without ``_collectionN``."""
    flat = rntuple.open(files["flat"])["Events"]
    for layout in ("convert", "importer"):
        nt = rntuple.open(files[layout])["Events"]
        fields = rntuple.coffea.nanoevents_fields(nt)
        assert sorted(fields) == sorted(flat.fields)
        assert any(f.startswith("_collection") for f in nt.fields)
        assert nt.typenames()["Jet_pt"] == "ROOT::VecOps::RVec<float>"
        assert nt.typenames()["nJet"] == "ROOT::RNTupleCardinality<std::uint32_t>"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_eager_equals_coffea_on_uproot(files: dict[str, Path], layout: str) -> None:
    path = files[layout]
    reference = uproot_events(path)
    ours = rntuple.coffea.from_rntuple(f"{path}:Events", mode="eager").events()
    assert ours.fields == reference.fields
    assert len(ours) == len(reference) == 20_000
    assert_same(physics(ours), physics(reference))
    assert ak.sum(ak.num(ours.Jet)) > 0 and ak.sum(~ak.is_none(ours.GenPart.parent, axis=1)) > 0


@pytest.mark.parametrize("layout", ["flat", "importer"])
def test_virtual_entry_range_equals_coffea_on_uproot(files: dict[str, Path], layout: str) -> None:
    """Lazily over an entry range; only the touched fields are read (coffea's access log)."""
    path = files[layout]
    reference = uproot_events(path, mode="virtual", entry_start=1234, entry_stop=7777)
    log: list[Any] = []
    factory = rntuple.coffea.from_rntuple(
        {str(path): "Events"}, mode="virtual", entry_start=1234, entry_stop=7777, access_log=log
    )
    ours = factory.events()
    assert len(ours) == len(reference) == 7777 - 1234
    jets = ours.Jet[ak.num(ours.Jet) >= 2]
    ak.materialize((jets[:, 0] + jets[:, 1]).mass)
    assert {a.branch for a in log} == {"nJet", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass"}
    assert_same(physics(ours), physics(reference))


@pytest.mark.parametrize("layout", ["flat", "importer"])
def test_dask_on_cluster_equals_coffea_on_uproot_and_reads_only_used_fields(
    files: dict[str, Path], layout: str, client: Any
) -> None:
    path = files[layout]
    reference = physics(uproot_events(path))
    events, report = rntuple.coffea.from_rntuple(
        f"{path}:Events", mode="dask", step_size=6000, report=True
    ).events()
    assert events.npartitions == 4
    lazy = physics(events)
    (ours, partitions) = dask.compute(lazy, report, scheduler=client.get)
    assert_same(ours, reference)
    # every partition read the graph's fields, no other, on the workers
    assert {tuple(sorted(f)) for f in partitions["fields"].tolist()} == {tuple(sorted(GRAPH_FIELDS))}
    assert len(set(partitions.pid.tolist())) >= 1
    # each partition decoded the pages of those fields in its range, and no other
    nt = rntuple.open(path)["Events"]
    for start, stop, used in zip(
        partitions.entry_start.tolist(),
        partitions.entry_stop.tolist(),
        partitions.bytes_used.tolist(),
        strict=True,
    ):
        before = nt.metrics()["bytes_used"]
        nt.arrays(sorted(GRAPH_FIELDS), entry_start=start, entry_stop=stop, library="ak")
        assert used == nt.metrics()["bytes_used"] - before


def test_dask_form_mapping_projects_to_one_collection(files: dict[str, Path], client: Any) -> None:
    """``rntuple.dask(form_mapping=...)`` directly: necessary columns come from the
    mapping's keys (a NanoEvents ``Muon.pt`` needs ``nMuon`` and ``Muon_pt``)."""
    import dask_awkward as dak

    events = rntuple.coffea.from_rntuple(str(files["convert"]), mode="dask", step_size=10_000).events()
    (columns,) = dak.report_necessary_columns(events.Muon.pt).values()
    assert columns == frozenset({"nMuon", "Muon_pt"})
    pt = events.Muon.pt.compute(scheduler=client.get)
    assert ak.array_equal(pt, uproot_events(files["convert"]).Muon.pt)


def test_bad_arguments_are_typed_errors(files: dict[str, Path]) -> None:
    path = str(files["flat"])
    with pytest.raises(rntuple.InvalidArgumentError, match="mode"):
        rntuple.coffea.from_rntuple(path, mode="lazy")
    with pytest.raises(rntuple.InvalidArgumentError, match="entry_start"):
        rntuple.coffea.from_rntuple(path, mode="dask", entry_stop=10)
    with pytest.raises(rntuple.InvalidArgumentError, match=r"^report must be True or False, not 1$"):
        rntuple.coffea.from_rntuple(path, mode="dask", report=1)
    with pytest.raises(rntuple.InvalidArgumentError, match=r"^step_size must be positive, not 0$"):
        rntuple.coffea.from_rntuple(path, mode="dask", step_size=0)
    with pytest.raises(rntuple.InvalidArgumentError, match="one RNTuple"):
        rntuple.coffea.from_rntuple([path, path], mode="eager")
    with pytest.raises(rntuple.NotFoundError, match="Jet_nope"):
        rntuple.coffea.from_rntuple(path, mode="eager", fields=["run", "Jet_nope"])
    with pytest.raises(rntuple.InvalidArgumentError, match="entry range"):
        rntuple.coffea.from_rntuple(path, mode="virtual", entry_start=50, entry_stop=10)
    with pytest.raises(
        rntuple.InvalidArgumentError, match=r"^entry_start must be an integer or None, not 1.5 \(float\)$"
    ):
        rntuple.coffea.from_rntuple(path, mode="eager", entry_start=1.5)
    with pytest.raises(rntuple.InvalidArgumentError, match="form_mapping must be callable"):
        rntuple.dask(path, ["run"], form_mapping=42)
    with pytest.raises(rntuple.InvalidArgumentError, match="top-level fields"):
        rntuple.dask(str(files["importer"]), ["_collection2.Jet_pt"], form_mapping=lambda form: (form, None))


def test_agc_example_end_to_end(files: dict[str, Path]) -> None:
    """examples/agc/agc.py on the small file: coffea on our reader and on uproot, eager and
    on a 2-worker LocalCluster (4 partitions through ours), give equal histograms."""
    script = REPO_ROOT / "examples" / "agc" / "agc.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(files["flat"]), "--workers", "2", "--step-size", "5000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "histograms equal: True"
    runs = [line for line in lines if line.startswith("coffea on")]
    assert len(runs) == 4
    # the selection is not empty: both regions have events
    assert all("'4j1b': 0," not in line and "'4j2b': 0}" not in line for line in runs)
