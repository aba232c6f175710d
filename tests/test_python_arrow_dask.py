"""An RNTuple consumed through the Arrow PyCapsule stream by pyarrow, Polars and DuckDB,
and a dask_awkward computation over four files against eager Awkward and uproot."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import dask
import dask_awkward as dak
import duckdb
import hist
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import uproot
from pysamples import EXAMPLE, write_events

import rntuple
from rntuple.libraries import to_awkward, to_numpy


@pytest.fixture(scope="module")
def nt() -> rntuple.RNTuple:
    """The example RNTuple (6 clusters)."""
    return rntuple.open(f"{EXAMPLE}:Events")


def test_pyarrow_stream(nt: rntuple.RNTuple) -> None:
    eager = nt.arrays(library="arrow")
    assert pa.table(nt).equals(eager)
    reader = pa.RecordBatchReader.from_stream(nt)
    assert reader.schema.equals(nt.schema)
    batches = list(reader)
    assert len(batches) == len(nt.clusters) == 6
    assert [b.num_rows for b in batches] == [len(r) for r in nt.clusters]
    assert pa.Table.from_batches(batches).equals(eager)


def test_polars_stream(nt: rntuple.RNTuple) -> None:
    # Polars 2 takes the stream as a DataFrame (pl.from_arrow gives a Series of structs).
    df = pl.DataFrame(nt)
    assert df.columns == nt.fields and df.height == 2000
    up = uproot.open(EXAMPLE)["Events"].arrays()
    np.testing.assert_array_equal(df["MET_pt"].to_numpy(), ak.to_numpy(up.MET_pt))
    assert df["Jet_pt"].to_list() == ak.to_list(up.Jet_pt)
    assert df["dataset"].to_list() == ak.to_list(up.dataset)
    pairs = df["Muon_pt_charge"].to_list()
    assert [[(m["_0"], m["_1"]) for m in e] for e in pairs] == [
        [tuple(m) for m in e] for e in ak.to_list(up.Muon_pt_charge)
    ]


def test_duckdb_replacement_scan(nt: rntuple.RNTuple) -> None:
    events = nt  # noqa: F841 (DuckDB finds this local variable by name, reads its stream)
    row = duckdb.sql(
        "select count(*), sum(MET_pt), max(event), sum(len(Jet_pt)), "
        "sum(case when HLT_IsoMu24 then 1 else 0 end), count(distinct dataset) from events"
    ).fetchall()[0]
    ref = nt.arrays(library="np")
    assert row[0] == 2000
    assert row[1] == pytest.approx(float(np.sum(ref["MET_pt"])), rel=1e-12)
    assert row[2] == int(ref["event"].max())
    assert row[3] == sum(len(jets) for jets in ref["Jet_pt"])
    assert row[4] == int(np.count_nonzero(ref["HLT_IsoMu24"]))
    assert row[5] == 2
    # A list column unnested: jets above 50 GeV per dataset.
    got = dict(
        duckdb.sql(
            "select dataset, count(*) from (select dataset, unnest(Jet_pt) as pt from events) "
            "where pt > 50 group by dataset"
        ).fetchall()
    )
    jets = ref["Jet_pt"]
    counts = np.array([np.count_nonzero(pts > 50) for pts in jets])
    expected = {d: int(counts[ref["dataset"] == d].sum()) for d in ("DYJets", "TTbar")}
    assert got == expected


def test_conversions_do_not_copy(nt: rntuple.RNTuple) -> None:
    table = nt.arrays(["MET_pt", "event", "Jet_pt"], library="arrow")
    met = table.column("MET_pt").chunk(0)
    jets = table.column("Jet_pt").chunk(0)
    met_buffer = np.frombuffer(met.buffers()[1], dtype=np.float64)
    jet_values = np.frombuffer(jets.values.buffers()[1], dtype=np.float32)
    jet_offsets = np.frombuffer(jets.buffers()[1], dtype=np.int64)
    as_np = to_numpy(table)
    assert np.shares_memory(as_np["MET_pt"], met_buffer)
    # Jagged fields are object arrays of per-entry views of the values (as uproot's form).
    assert all(np.shares_memory(pts, jet_values) for pts in as_np["Jet_pt"] if len(pts))
    layout = to_awkward(table).layout
    assert np.shares_memory(np.asarray(layout.content("MET_pt").data), met_buffer)
    jet_layout = layout.content("Jet_pt")
    assert np.shares_memory(np.asarray(jet_layout.offsets.data), jet_offsets)
    assert np.shares_memory(np.asarray(jet_layout.content.data), jet_values)
    # And what library="np" returns are views (read-only, not owning their memory).
    met_np = nt.arrays(["MET_pt"], library="np")["MET_pt"]
    assert not met_np.flags.owndata and not met_np.flags.writeable


# -- dask -----------------------------------------------------------------------------

SIZES = (1500, 2200, 900, 3100)
FIELDS = ["Jet_pt", "Jet_eta", "MET_pt"]


@pytest.fixture(scope="module")
def four_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Four files of different seeds and sizes, several clusters each."""
    out = tmp_path_factory.mktemp("four")
    paths = [out / f"f{i}.root" for i in range(4)]
    for i, (path, n) in enumerate(zip(paths, SIZES, strict=True)):
        write_events(path, seed=100 + i, n=n, cluster_size="12 kB")
    return paths


def leading_pt(events: ak.Array) -> tuple[ak.Array, ak.Array]:
    """Events with at least two jets above 30 GeV: their leading jet pt, and MET."""
    good = events.Jet_pt[events.Jet_pt > 30]
    selected = ak.num(good, axis=1) >= 2
    return ak.max(good[selected], axis=1), events.MET_pt[selected]


def histogram(pt: np.ndarray, met: np.ndarray) -> hist.Hist:
    """The analysis histogram: leading jet pt against MET."""
    h = hist.Hist(hist.axis.Regular(40, 0, 400, name="pt"), hist.axis.Regular(10, 0, 200, name="met"))
    h.fill(pt=pt, met=met)
    return h


def test_dask_partitions(four_files: list[Path]) -> None:
    arr = rntuple.dask([str(p) for p in four_files], FIELDS, step_size=1000)
    ranges = [
        rntuple.open(f"{p}:Events").batch_ranges(FIELDS, 0, n, 1000)
        for p, n in zip(four_files, SIZES, strict=True)
    ]
    flat = [r for per_file in ranges for r in per_file]
    clusters = [
        [(c.num_first_entry, c.num_entries) for c in uproot.open(p)["Events"].cluster_summaries]
        for p in four_files
    ]
    for per_file, cl in zip(ranges, clusters, strict=True):
        assert len(cl) >= 3
        bounds = {a for a, _ in cl} | {a + n for a, n in cl}
        assert {x for r in per_file for x in r} <= bounds
        assert per_file[0][0] == 0 and per_file[-1][1] == cl[-1][0] + cl[-1][1]
    assert arr.npartitions == len(flat) > 4
    assert arr.divisions == tuple(np.concatenate([[0], np.cumsum([b - a for a, b in flat])]))
    assert arr.divisions[-1] == sum(SIZES)
    assert arr.fields == FIELDS


def test_dask_default_partitions_are_whole_clusters(four_files: list[Path]) -> None:
    """By default no partition begins or ends inside a cluster (uproot's cluster
    summaries): these small files are one partition each (well under 100 MB)."""
    arr = rntuple.dask([str(p) for p in four_files], FIELDS)
    assert arr.npartitions == 4
    assert arr.divisions == tuple(np.concatenate([[0], np.cumsum(SIZES)]))
    assert ak.to_list(arr.compute().MET_pt) == ak.to_list(
        ak.concatenate([uproot.open(p)["Events"].arrays(["MET_pt"]).MET_pt for p in four_files])
    )


def test_whole_clusters_merges_cuts_inside_clusters() -> None:
    """Batches of 40 entries over clusters starting at 0, 100 and 130: the cuts at 40
    and 80 fall inside the first cluster, the one at 120 inside the second."""
    from rntuple.dask import _whole_clusters

    batches = [(0, 40), (40, 80), (80, 100), (100, 120), (120, 130), (130, 150)]
    assert _whole_clusters(batches, {0, 100, 130}) == [(0, 100), (100, 130), (130, 150)]
    grouped = [(0, 130), (130, 150)]  # whole clusters grouped: kept as they are
    assert _whole_clusters(grouped, {0, 100, 130}) == grouped


def test_dask_histogram_equals_eager_and_uproot(four_files: list[Path]) -> None:
    specs = [f"{p}:Events" for p in four_files]
    lazy = rntuple.dask(specs, FIELDS, step_size="40 kB")
    assert isinstance(lazy, dak.Array) and lazy.npartitions > 4
    pt_lazy, met_lazy = leading_pt(lazy)
    results = {}
    for scheduler in ("sync", "threads"):
        with dask.config.set(scheduler=scheduler):
            pt, met = dask.compute(pt_lazy, met_lazy)
        results[scheduler] = histogram(ak.to_numpy(pt), ak.to_numpy(met))
    eager = rntuple.concatenate(specs, FIELDS)
    reference = histogram(*(ak.to_numpy(x) for x in leading_pt(eager)))
    theirs = ak.concatenate([uproot.open(p)["Events"].arrays(FIELDS) for p in four_files])
    independent = histogram(*(ak.to_numpy(x) for x in leading_pt(theirs)))
    counts = independent.values(flow=True)
    assert counts.sum() > 1000
    for h in (*results.values(), reference):
        np.testing.assert_array_equal(h.values(flow=True), counts)
