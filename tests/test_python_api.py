"""The Python API of ``rntuple`` against independent sources: uproot's reading of the same
files, the C++ types of ``examples/make_example.py``, and hand computation."""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import awkward as ak
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import uproot
from pysamples import EXAMPLE, REPO_ROOT, SUBDIRS, write_events

import rntuple
from rntuple.libraries import to_awkward

#: ROOT's streamer fields (``crates/rntuple/tests/data/make_streamer_fields.C``).
STREAMER_FIELDS = REPO_ROOT / "crates" / "rntuple" / "tests" / "data" / "streamer_fields.root"

#: The fields of ``examples/events.root`` and their C++ types, as make_example.py declares them.
EXAMPLE_TYPES = {
    "run": "std::uint32_t",
    "event": "std::uint64_t",
    "Jet_pt": "std::vector<float>",
    "Jet_eta": "std::vector<float>",
    "Muon_pt_charge": "std::vector<std::pair<float,std::int32_t>>",
    "MET_pt": "double",
    "HLT_IsoMu24": "bool",
    "dataset": "std::string",
}


@pytest.fixture(scope="module")
def nt() -> rntuple.RNTuple:
    """The example RNTuple."""
    return rntuple.open(f"{EXAMPLE}:Events")


@pytest.fixture(scope="module")
def up() -> ak.Array:
    """uproot's reading of every field of the example."""
    return uproot.open(EXAMPLE)["Events"].arrays()


@pytest.fixture(scope="module")
def three_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three multi-cluster files of different sizes."""
    out = tmp_path_factory.mktemp("three")
    paths = [out / f"part{i}.root" for i in range(3)]
    for i, path in enumerate(paths):
        write_events(path, seed=10 + i, n=1200 + 700 * i)
    return paths


def cluster_starts(path: Path | str) -> list[tuple[int, int]]:
    """(first entry, entries) of each cluster, as uproot reads the page list."""
    return [(c.num_first_entry, c.num_entries) for c in uproot.open(path)["Events"].cluster_summaries]


# -- opening --------------------------------------------------------------------------


def test_open_file_and_rntuple_forms() -> None:
    with rntuple.open(EXAMPLE) as f:
        assert isinstance(f, rntuple.ReadOnlyFile)
        assert f.keys() == ["Events"]
        assert "Events" in f and "Jets" not in f
        assert list(f) == ["Events"] and len(f) == 1
        nt = f["Events"]
        assert isinstance(nt, rntuple.RNTuple)
        assert nt.num_entries == len(nt) == uproot.open(EXAMPLE)["Events"].num_entries == 2000
    # Leaving the block closes the file; the RNTuple opened in it keeps working.
    with pytest.raises(rntuple.InvalidArgumentError, match="closed"):
        f["Events"]
    assert len(nt.arrays(["MET_pt"])) == 2000
    direct = rntuple.open(f"{EXAMPLE}:Events")
    assert isinstance(direct, rntuple.RNTuple)
    assert direct.path == "Events" and direct.num_entries == 2000


def test_sub_directories() -> None:
    u = uproot.open(SUBDIRS)
    expected = sorted(k.split(";")[0] for k, c in u.classnames().items() if c == "ROOT::RNTuple")
    assert expected == ["a/b/nt", "a/b/nt2", "a/nt", "top"]
    with rntuple.open(SUBDIRS) as f:
        assert sorted(f.keys()) == expected
        for key in expected:
            mine = f[key].arrays()
            theirs = u[key].arrays()
            assert mine.fields == theirs.fields
            assert ak.to_list(mine) == ak.to_list(theirs)
    nt = rntuple.open(f"{SUBDIRS}:a/b/nt")
    assert nt.path == "a/b/nt" and nt.name == "nt"
    assert nt.num_entries == u["a/b/nt"].num_entries == 5
    with pytest.raises(rntuple.NotFoundError):
        rntuple.open(SUBDIRS)["a/nope"]


# -- metadata -------------------------------------------------------------------------


def test_fields_schema_and_types(nt: rntuple.RNTuple) -> None:
    assert nt.fields == list(EXAMPLE_TYPES)
    top_uproot = [k for k in uproot.open(EXAMPLE)["Events"].keys() if "." not in k]
    assert nt.fields == top_uproot
    assert nt.keys() == [*nt.fields[:5], "Muon_pt_charge._0", "Muon_pt_charge._1", *nt.fields[5:]]
    schema = nt.schema
    assert schema.names == nt.fields
    assert {f.name: f.metadata[b"rntuple.type"].decode() for f in schema} == EXAMPLE_TYPES
    assert str(schema.field("run").type) == "uint32"
    assert str(schema.field("Jet_pt").type.value_type) == "float"
    assert str(schema.field("MET_pt").type) == "double"
    assert nt.typenames()["Muon_pt_charge._1"] == "std::int32_t"


def test_show_lists_every_field_and_type(nt: rntuple.RNTuple) -> None:
    out = io.StringIO()
    nt.show(out)
    text = out.getvalue()
    assert text.startswith('RNTuple "Events": 2000 entries')
    lines = text.splitlines()
    for name, cxx in EXAMPLE_TYPES.items():
        assert any(line.strip().startswith(f"{name} : {cxx}") for line in lines), name


def test_clusters_match_uproot(nt: rntuple.RNTuple, three_files: list[Path]) -> None:
    assert [(r.start, len(r)) for r in nt.clusters] == cluster_starts(EXAMPLE)
    assert nt.clusters[-1].stop == 2000
    for path in three_files:
        mine = rntuple.open(f"{path}:Events").clusters
        assert len(mine) >= 3
        assert [(r.start, len(r)) for r in mine] == cluster_starts(path)


# -- reading --------------------------------------------------------------------------


def test_arrays_all_fields_equal_uproot(nt: rntuple.RNTuple, up: ak.Array) -> None:
    mine = nt.arrays()
    assert mine.fields == up.fields
    for name in up.fields:
        assert ak.to_list(mine[name]) == ak.to_list(up[name]), name


def test_entry_range(nt: rntuple.RNTuple, up: ak.Array) -> None:
    part = nt.arrays(["Jet_pt", "event"], entry_start=300, entry_stop=-100)
    assert len(part) == 1600
    assert ak.to_list(part.Jet_pt) == ak.to_list(up.Jet_pt[300:-100])
    assert part.event[0] == 1300
    assert len(nt.arrays(["MET_pt"], entry_start=10, entry_stop=5)) == 0


def test_glob_and_nested_selection(nt: rntuple.RNTuple, up: ak.Array) -> None:
    jets = nt.arrays("Jet_*")
    assert jets.fields == ["Jet_pt", "Jet_eta"]
    assert ak.to_list(jets.Jet_eta) == ak.to_list(up.Jet_eta)
    assert nt.resolve_fields(["M*"]) == ["Muon_pt_charge", "MET_pt"]
    assert nt.resolve_fields(["Muon_pt_charge.*"]) == ["Muon_pt_charge._0", "Muon_pt_charge._1"]
    nested = nt.arrays(["Muon_pt_charge._0"])
    assert nested.fields == ["Muon_pt_charge"]
    assert ak.to_list(nested.Muon_pt_charge["_0"]) == ak.to_list(up.Muon_pt_charge["0"])
    assert ak.to_list(nested.Muon_pt_charge["_0"]) != ak.to_list(up.Muon_pt_charge["1"])


def test_numpy_library(nt: rntuple.RNTuple, up: ak.Array) -> None:
    # uproot's form: one array per top-level field; jagged fields are object arrays of
    # per-entry arrays; records are structured arrays; strings are "<U" arrays.
    arrays = nt.arrays(["MET_pt", "Jet_pt", "Muon_pt_charge", "dataset"], library="np")
    assert list(arrays) == ["MET_pt", "Jet_pt", "Muon_pt_charge", "dataset"]
    np.testing.assert_array_equal(arrays["MET_pt"], ak.to_numpy(up.MET_pt))
    jets = arrays["Jet_pt"]
    assert jets.dtype == object and len(jets) == 2000
    assert [list(x) for x in jets] == ak.to_list(up.Jet_pt)
    assert all(x.dtype == np.float32 for x in jets)
    charge = arrays["Muon_pt_charge"]
    assert charge.dtype == object and len(charge) == 2000
    assert [x["1"].tolist() for x in charge] == ak.to_list(up.Muon_pt_charge["1"])
    assert [x["0"].tolist() for x in charge] == ak.to_list(up.Muon_pt_charge["0"])
    assert arrays["dataset"].dtype.kind == "U"
    assert list(arrays["dataset"][:3]) == ["DYJets", "TTbar", "DYJets"]
    tail = nt.arrays(["Jet_pt"], entry_start=1000, library="np")["Jet_pt"]
    assert [list(x) for x in tail] == ak.to_list(up.Jet_pt[1000:])


def test_pandas_and_polars(nt: rntuple.RNTuple, up: ak.Array) -> None:
    df = nt.arrays(["event", "MET_pt", "Jet_pt"], library="pd")
    assert isinstance(df, pd.DataFrame) and list(df.columns) == ["event", "MET_pt", "Jet_pt"]
    np.testing.assert_array_equal(df["MET_pt"].to_numpy(), ak.to_numpy(up.MET_pt))
    assert [list(x) for x in df["Jet_pt"][:50]] == ak.to_list(up.Jet_pt[:50])
    pdf = nt.arrays(["event", "MET_pt", "Jet_pt", "dataset"], library="pl")
    assert isinstance(pdf, pl.DataFrame) and pdf.shape == (2000, 4)
    np.testing.assert_array_equal(pdf["event"].to_numpy(), ak.to_numpy(up.event))
    np.testing.assert_array_equal(pdf["Jet_pt"].list.len().to_numpy(), ak.to_numpy(ak.num(up.Jet_pt)))
    assert pdf["dataset"].to_list() == ak.to_list(up.dataset)


# -- batches --------------------------------------------------------------------------


def test_iterate_by_entries(nt: rntuple.RNTuple, up: ak.Array) -> None:
    # Clusters hold 334, 417, 412, 413, 413, 11 entries: with 500 a batch, no two of the
    # first five fit together, and the last two (424) do.
    batches = list(nt.iterate(["Jet_pt", "MET_pt"], step_size=500))
    assert [len(b) for b in batches] == [334, 417, 412, 413, 424]
    assert ak.to_list(ak.concatenate(batches).Jet_pt) == ak.to_list(up.Jet_pt)
    # A step smaller than a cluster cuts it into equal parts inside the cluster.
    small = nt.batch_ranges(["MET_pt"], 0, 751, 200)
    assert small == [(0, 167), (167, 334), (334, 473), (473, 612), (612, 751)]


def test_iterate_by_bytes(nt: rntuple.RNTuple, up: ak.Array) -> None:
    # A memory size is a number of entries as uproot computes it; batches of at most
    # that many entries group whole clusters or cut one larger than a step.
    clusters = nt.clusters
    fields = ["Jet_pt", "Jet_eta", "MET_pt"]
    for step in ("30 kB", "60kB", "1 MB"):
        ranges = nt.step_ranges(fields, 0, 2000, step)
        theirs = [len(b) for b in uproot.open(f"{EXAMPLE}:Events").iterate(fields, step_size=step)]
        assert max(b - a for a, b in ranges) <= max(theirs), step
        for a, b in ranges:
            inside = any(c.start <= a and b <= c.stop for c in clusters)
            whole = all((c.start >= a and c.stop <= b) or c.stop <= a or c.start >= b for c in clusters)
            assert inside or whole, (step, a, b)
        batches = list(nt.iterate(fields, step_size=step, library="arrow"))
        assert [b.num_rows for b in batches] == [b - a for a, b in ranges]
        merged = ak.concatenate([to_awkward(b) for b in batches])
        assert ak.to_list(merged.Jet_eta) == ak.to_list(up.Jet_eta)
    assert len(nt.step_ranges(["MET_pt"], 0, 2000, "1 MB")) == 1
    assert len(nt.step_ranges(fields, 0, 2000, "30 kB")) >= 4


def test_streamer_fields_read_as_records_by_every_read_path() -> None:
    """ROOT's streamer fields (``make_streamer_fields.C``: a ``TLorentzVector`` and a
    ``std::vector<TLorentzVector>`` stored whole) read as the records the core decodes
    while it reads: the same schema and values from ``arrays``, ``iterate`` with and
    without decoding ahead, and the schema the RNTuple states."""
    nt = rntuple.open(f"{STREAMER_FIELDS}:t")
    whole = nt.arrays(library="arrow")
    assert whole.schema == nt.schema
    for decode_ahead in (True, False):
        batches = list(nt.iterate(step_size=1, library="arrow", decode_ahead=decode_ahead))
        assert [b.num_rows for b in batches] == [1, 1, 1]
        assert all(b.schema == nt.schema for b in batches)
        assert pa.concat_tables(batches).equals(whole)

    def four_vector(record: dict) -> list[float]:
        return [record["fP"]["fX"], record["fP"]["fY"], record["fP"]["fZ"], record["fE"]]

    for i, entry in enumerate(whole.to_pylist()):
        # make_streamer_fields.C: p4 SetPxPyPzE(i, 2i, 3i, 4i + 1); vp4 i vectors (j, j+1, j+2, j+10).
        assert four_vector(entry["p4"]) == [i, 2 * i, 3 * i, 4 * i + 1]
        assert [four_vector(v) for v in entry["vp4"]] == [[j, j + 1, j + 2, j + 10] for j in range(i)]


def test_iterate_and_concatenate_many_files(three_files: list[Path]) -> None:
    expected = ak.concatenate([uproot.open(p)["Events"].arrays(["Jet_pt", "MET_pt"]) for p in three_files])
    specs = [f"{p}:Events" for p in three_files]
    glob_spec = f"{three_files[0].parent}/part*.root:Events"
    as_dict = {p: "Events" for p in three_files}
    for files in (specs, glob_spec, as_dict, [str(p) for p in three_files]):
        got = rntuple.concatenate(files, ["Jet_pt", "MET_pt"])
        assert len(got) == 1200 + 1900 + 2600
        assert ak.to_list(got.Jet_pt) == ak.to_list(expected.Jet_pt)
        np.testing.assert_array_equal(ak.to_numpy(got.MET_pt), ak.to_numpy(expected.MET_pt))
    batches = list(rntuple.iterate(glob_spec, ["MET_pt"], step_size=400, library="np"))
    # Batches never span two files: the 400-entry plan of each file, one after the other.
    plans = [
        rntuple.open(f"{p}:Events").step_ranges(["MET_pt"], 0, n, 400)
        for p, n in zip(three_files, (1200, 1900, 2600), strict=True)
    ]
    assert [len(b["MET_pt"]) for b in batches] == [b - a for plan in plans for a, b in plan]
    assert sum(len(b["MET_pt"]) for b in batches) == 5700
    np.testing.assert_array_equal(
        np.concatenate([b["MET_pt"] for b in batches]), ak.to_numpy(expected.MET_pt)
    )
    with pytest.raises(FileNotFoundError, match="no file matches"):
        rntuple.concatenate(f"{three_files[0].parent}/nothing*.root:Events")


# -- errors ---------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.root"
    with pytest.raises(FileNotFoundError, match=r"missing\.root"):
        rntuple.open(missing)
    with pytest.raises(FileNotFoundError):
        rntuple.open(f"{missing}:Events")


def test_not_root_and_truncated(tmp_path: Path) -> None:
    text = tmp_path / "text.root"
    text.write_text("hello, this is not a ROOT file\n")
    with pytest.raises(rntuple.FormatError, match=r"text\.root") as info:
        rntuple.open(text)
    assert isinstance(info.value, rntuple.RNTupleError)
    assert not isinstance(info.value, KeyError)
    data = EXAMPLE.read_bytes()
    for size in (3000, len(data) // 2, len(data) - 100):
        cut = tmp_path / f"cut{size}.root"
        cut.write_bytes(data[:size])
        with pytest.raises(rntuple.FormatError, match=rf"cut{size}\.root"):
            rntuple.open(f"{cut}:Events").arrays()


def test_argument_errors(nt: rntuple.RNTuple) -> None:
    with pytest.raises(rntuple.NotFoundError, match=r"'Jet_ptt'.*did you mean 'Jet_pt'") as info:
        nt.arrays(["MET_pt", "Jet_ptt"])
    assert isinstance(info.value, KeyError)
    with pytest.raises(rntuple.NotFoundError, match="Electron_"):
        nt.arrays("Electron_*")
    with pytest.raises(rntuple.InvalidArgumentError, match="'xx'") as bad:
        nt.arrays(["MET_pt"], library="xx")
    assert isinstance(bad.value, ValueError)
    for step in ("abc", "10 parsecs", 0, -5, "0 kB"):
        with pytest.raises(rntuple.InvalidArgumentError):
            list(nt.iterate(["MET_pt"], step_size=step))
    with pytest.raises(rntuple.NotFoundError, match="Jets"):
        rntuple.open(f"{EXAMPLE}:Jets")


# -- the GIL --------------------------------------------------------------------------


def test_reading_releases_the_gil(tmp_path: Path) -> None:
    """While the core reads (in a thread), the main thread keeps running Python: its loop
    iterations inside the read's time window have no gap near the read's duration, which
    a read holding the GIL would force (no main-thread iteration at all in the window)."""
    path = tmp_path / "big.root"
    # Large enough that the read lasts well over 50 ms on a fast machine (~200 MB).
    n = 3_000_000
    rng = np.random.default_rng(5)
    with rntuple.recreate(path, compression="zstd:5") as f:
        f["Events"] = {f"x{i}": rng.normal(size=n) for i in range(8)}
    reader = rntuple.open(f"{path}:Events")._reader
    window: list[float] = []

    def read() -> None:
        t0 = time.perf_counter()
        batch = reader.read(None, 0, n)
        t1 = time.perf_counter()
        assert batch.num_rows == n
        window.extend((t0, t1))

    stamps: list[float] = []
    thread = threading.Thread(target=read)
    thread.start()
    while thread.is_alive():
        stamps.append(time.perf_counter())
    thread.join()
    t0, t1 = window
    duration = t1 - t0
    inside = [t for t in stamps if t0 <= t <= t1]
    assert duration > 0.05, f"the read took only {duration * 1e3:.1f} ms: too short to judge"
    assert len(inside) > 1000, f"{len(inside)} main-thread iterations during a {duration:.3f} s read"
    gaps = np.diff([t0, *inside, t1])
    print(
        f"read {duration:.3f} s, {len(inside)} main-thread iterations, largest gap {gaps.max() * 1e3:.2f} ms"
    )
    # Holding the GIL would leave a gap of nearly the whole read (at most one switch
    # interval, 5 ms, of iterations could slip in at its end).
    assert gaps.max() < 0.75 * duration, f"largest gap {gaps.max():.4f} s of {duration:.4f} s"
