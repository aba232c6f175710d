"""``rntuple.dask`` with dask-awkward's column projection: a graph reads only the
top-level fields it uses.

- ``dask_awkward.report_necessary_columns`` of a two-field histogram over
  ``rntuple.dask(files)`` of four copies of the benchmark's 105-field NanoAOD-like file
  (written by ROOT, ``bench/generate.py``) names those two fields;
  a subfield of a collection of records names its top-level field; an event selection
  reads the fields it cuts on and uses, and equals the eager result;
- on a ``distributed.LocalCluster`` of 2 worker processes (one thread each) the
  histograms (jet pt, muons per event) equal the eager ones, and the bytes the workers
  read (the partitions' reports, opening included) are at most 1.1x the stored page
  bytes of those two fields, against all pages without projection;
- the same over HTTP (nginx on loopback): the partitions carry the URLs to the
  workers, nginx served exactly the bytes the workers counted, and those less the
  file openings (one per worker process and file) are at most 1.1x the pages of the
  two fields; with 4 threads in one process each file is opened once and the
  partitions' counts sum to what nginx served;
- a partition's reader pickles (to worker processes) without an open file;
- a partition has the next file opened in the background (over HTTP: nginx serves that
  file's opening, not the one after), and that file's partition then reads pages only.

Nothing is skipped: without ``distributed`` or the package, the tests fail.
"""

from __future__ import annotations

import importlib
import os
import pickle
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import dask
import dask_awkward as dak
import numpy as np
import pytest
import server_http
from pysamples import EXAMPLE

import rntuple
from rntuple.dask import PartitionReader

N_FILES = 4
ENTRIES = 20_000  # the events of conftest.py's nanoaod_like files
PT_BINS = np.linspace(0, 100, 41)
MAX_MUONS = 12
NO_PROJECTION = {"awkward.optimization.which": ["layer-chains"]}
#: the Range header of the request that opens a file over HTTP (its two ends)
OPENING_RANGES = "bytes=0-65535,-131072"


@pytest.fixture(scope="module")
def files(nanoaod_like: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Four copies of the benchmark's NanoAOD-like RNTuple (105 fields, ``ENTRIES``
    entries each, written by ROOT's ``RNTupleWriter`` with its default settings)."""
    out = tmp_path_factory.mktemp("dask_projection")
    paths = []
    for i in range(N_FILES):
        path = out / f"nano{i}.root"
        shutil.copyfile(nanoaod_like["rntuple"], path)
        paths.append(f"{path}:Events")
    return paths


@pytest.fixture(scope="module")
def nginx(files: list[str]) -> Iterator[server_http.Server]:
    """nginx on loopback serving the four files' directory over HTTP."""
    with server_http.serving(Path(files[0].rsplit(":", 1)[0]).parent) as server:
        yield server


def _histograms(pt: Any, muons: Any) -> Any:
    """One partition's histograms, as a 1-entry array: jet pt, and muons per event.
    On dask-awkward's data-less trace it only marks the inputs' data as needed."""
    if ak.backend(pt) == "typetracer":
        ak.typetracer.touch_data(pt)
        ak.typetracer.touch_data(muons)
        empty = ak.Array({"pt": np.zeros((1, len(PT_BINS) - 1)), "muons": np.zeros((1, MAX_MUONS + 1))})
        return ak.Array(empty.layout.to_typetracer(forget_length=True))
    counts, _ = np.histogram(ak.to_numpy(pt), bins=PT_BINS)
    per_event = np.bincount(np.minimum(ak.to_numpy(muons), MAX_MUONS), minlength=MAX_MUONS + 1)
    return ak.Array(
        {"pt": counts[np.newaxis].astype(np.float64), "muons": per_event[np.newaxis].astype(np.float64)}
    )


def histogram_graph(events: Any) -> Any:
    """The two-field analysis: per-partition histograms of jet pt and of the number of
    muons per event (``Muon_pt``'s counts), computed on the workers."""
    pt = ak.flatten(events.Jet_pt)
    muons = ak.num(events.Muon_pt, axis=1)
    return dak.map_partitions(_histograms, pt, muons, label="histograms")


def eager_histograms(files: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The same histograms from every file read at once."""
    events = ak.concatenate([rntuple.open(f).arrays(["Jet_pt", "Muon_pt"]) for f in files])
    pt, _ = np.histogram(ak.to_numpy(ak.flatten(events.Jet_pt)), bins=PT_BINS)
    muons = np.bincount(
        np.minimum(ak.to_numpy(ak.num(events.Muon_pt, axis=1)), MAX_MUONS), minlength=MAX_MUONS + 1
    )
    return pt, muons


def page_bytes(files: list[str], fields: list[str] | None) -> int:
    """The stored page bytes of ``fields`` (all pages for ``None``) over ``files``, from
    ``RNTuple.inspect()``."""
    total = 0
    for f in files:
        inspection = rntuple.open(f).inspect()
        if fields is None:
            total += inspection.stored_page_bytes
        else:
            table = inspection.to_pandas().set_index("name")
            total += int(table.loc[fields, "compressed"].sum())
    return total


def test_necessary_columns_are_the_two_fields(files: list[str]) -> None:
    events = rntuple.dask(files, step_size="4 MB")
    assert len(events.fields) == 105 and events.npartitions > N_FILES
    columns = dak.report_necessary_columns(histogram_graph(events))
    assert list(columns.values()) == [frozenset({"Jet_pt", "Muon_pt"})]
    # A count alone still reads its field (its offsets); one scalar field, that one.
    assert list(dak.report_necessary_columns(ak.num(events.Muon_pt, axis=1)).values()) == [
        frozenset({"Muon_pt"})
    ]
    assert list(dak.report_necessary_columns(events.MET_pt * 2).values()) == [frozenset({"MET_pt"})]
    # Selected at construction: only those fields are in the array at all.
    narrowed = rntuple.dask(files, ["Jet_*", "MET_pt"])
    assert len(narrowed.fields) == 17  # the 16 Jet_ members of bench/schema.py, and MET_pt
    assert list(dak.report_necessary_columns(narrowed.Jet_eta + 1).values()) == [frozenset({"Jet_eta"})]


def test_event_selection_reads_the_fields_it_uses(files: list[str]) -> None:
    events = rntuple.dask(files[:2], step_size="4 MB")
    selected = events[events.MET_pt > 30]
    jets = ak.zip({"pt": selected.Jet_pt, "eta": selected.Jet_eta})
    result = ak.sum(jets.pt[abs(jets.eta) < 20], axis=1)
    assert list(dak.report_necessary_columns(result).values()) == [frozenset({"MET_pt", "Jet_pt", "Jet_eta"})]
    with dask.config.set(scheduler="sync"):
        got = result.compute()
        count = dak.num(events[events.MET_pt > 50], axis=0).compute()
    eager = rntuple.concatenate(files[:2], ["MET_pt", "Jet_pt", "Jet_eta"])
    kept = eager[eager.MET_pt > 30]
    assert ak.array_equal(got, ak.sum(kept.Jet_pt[abs(kept.Jet_eta) < 20], axis=1))
    assert len(got) > 10_000 and count == int(ak.sum(eager.MET_pt > 50)) > 5000


def test_subfields_project_to_their_top_level_field() -> None:
    spec = f"{EXAMPLE}:Events"
    events = rntuple.dask([spec, spec], step_size=500)
    charges = events.Muon_pt_charge["1"]
    assert list(dak.report_necessary_columns(charges).values()) == [frozenset({"Muon_pt_charge"})]
    eager = rntuple.open(spec).arrays(["Muon_pt_charge"]).Muon_pt_charge["1"]
    with dask.config.set(scheduler="sync"):
        got = charges.compute()
    assert ak.array_equal(got, ak.concatenate([eager, eager]))
    assert ak.sum(ak.num(got, axis=1)) > 1000
    # A nested path selected at construction: projection keeps that selection.
    narrowed = rntuple.dask([spec], ["Muon_pt_charge._0", "MET_pt"], step_size=500)
    assert narrowed.fields == ["Muon_pt_charge", "MET_pt"] and narrowed.Muon_pt_charge.fields == ["_0"]
    pt = narrowed.Muon_pt_charge["_0"]
    assert list(dak.report_necessary_columns(pt).values()) == [frozenset({"Muon_pt_charge"})]
    with dask.config.set(scheduler="sync"):
        got_pt = pt.compute()
    eager_pt = rntuple.open(spec).arrays(["Muon_pt_charge._0"]).Muon_pt_charge["_0"]
    assert ak.array_equal(got_pt, eager_pt) and ak.sum(ak.num(got_pt, axis=1)) > 500


def test_threads_share_each_open_file_and_count_exactly(files: list[str], nginx: server_http.Server) -> None:
    """4 threads of this process (no cluster yet): each file is opened once, and each
    partition's counts are its own (they sum to what nginx served)."""
    urls = [f"{nginx.url(Path(f.rsplit(':', 1)[0]).name)}:Events" for f in files]
    events, report = rntuple.dask(urls, report=True)
    nginx.clear_log()
    with dask.config.set(scheduler="threads", num_workers=4):
        histograms, partitions = dask.compute(histogram_graph(events), report)
    eager_pt, eager_muons = eager_histograms(files)
    np.testing.assert_array_equal(ak.to_numpy(histograms.pt).sum(axis=0), eager_pt)
    np.testing.assert_array_equal(ak.to_numpy(histograms.muons).sum(axis=0), eager_muons)
    served = sum(int(r["body_bytes"]) for r in nginx.requests() if r["status"] in ("200", "206"))
    assert set(ak.to_list(partitions.pid)) == {os.getpid()}
    assert int(ak.sum(partitions.bytes_read)) == served
    opening = rntuple.open(urls[0]).metrics()["bytes_read"]
    two_fields = page_bytes(files, ["Jet_pt", "Muon_pt"])
    assert two_fields <= served and served - N_FILES * opening <= 1.1 * two_fields


def test_histogram_on_two_worker_processes_reads_only_its_fields(files: list[str], client: Any) -> None:
    eager_pt, eager_muons = eager_histograms(files)
    assert eager_pt.sum() > 100_000 and eager_muons.sum() == N_FILES * ENTRIES
    two_fields = page_bytes(files, ["Jet_pt", "Muon_pt"])
    all_fields = page_bytes(files, None)
    read: dict[str, int] = {}
    for mode in ("projection", "no projection"):
        events, report = rntuple.dask(files, report=True)
        with dask.config.set(NO_PROJECTION if mode == "no projection" else {}):
            histograms, partitions = dask.compute(histogram_graph(events), report, scheduler=client)
        np.testing.assert_array_equal(ak.to_numpy(histograms.pt).sum(axis=0), eager_pt)
        np.testing.assert_array_equal(ak.to_numpy(histograms.muons).sum(axis=0), eager_muons)
        # Every partition was read once, by the 2 worker processes (not this one).
        assert len(partitions) == events.npartitions
        assert sum(ak.to_numpy(partitions.entry_stop - partitions.entry_start)) == N_FILES * ENTRIES
        pids = set(ak.to_list(partitions.pid))
        assert pids == set(client.run(os.getpid).values()) and os.getpid() not in pids
        fields_read = {tuple(f) for f in ak.to_list(partitions["fields"])}
        read[mode] = int(ak.sum(partitions.bytes_read))
        if mode == "projection":
            assert fields_read == {("Jet_pt", "Muon_pt")}
        else:
            assert fields_read == {tuple(events.fields)}
        print(
            f"\n[dask projection] {mode}: {events.npartitions} partitions, workers read "
            f"{read[mode]:,} bytes ({int(ak.sum(partitions.bytes_used)):,} page bytes decoded); "
            f"pages of Jet_pt and Muon_pt {two_fields:,} bytes, of all 105 fields {all_fields:,}"
        )
    assert read["projection"] <= 1.1 * two_fields
    assert read["projection"] >= two_fields
    assert read["no projection"] >= all_fields
    assert read["no projection"] > 8 * read["projection"]


def test_partition_reader_pickles_without_an_open_file(files: list[str]) -> None:
    events = rntuple.dask(files, step_size="4 MB")
    layer = events.dask.layers[events.name]
    reader = layer.io_func
    assert isinstance(reader, PartitionReader)
    # An open RNTuple cannot be pickled: a reader holding one would fail here.
    with pytest.raises(TypeError):
        pickle.dumps(rntuple.open(files[0]))
    restored = pickle.loads(pickle.dumps(reader))
    assert set(vars(restored)) == {
        "selection",
        "form",
        "fields",
        "report",
        "token",
        "network",
        "following",
        "behavior",
        "attrs",
        "chain",
    }
    # The files' one schema travels without their metadata (no reader, nothing open):
    # files of one schema are read as they are, with no types.
    assert restored.chain.members is None and restored.chain.types == [None] * len(files)
    assert restored.network == {}, "no network option given: the workers' environment decides"
    absolute = [(str(Path(f.rsplit(":", 1)[0]).resolve()), "Events") for f in files]
    assert restored.following == {absolute[i]: absolute[i + 1] for i in range(len(absolute) - 1)}
    partition = layer.inputs[1]
    path, name, start, stop = partition
    assert Path(path).is_absolute() and name == "Events" and 0 < start < stop
    projected = restored.project_columns(frozenset({"MET_pt"}))
    assert projected.fields == ["MET_pt"] and pickle.loads(pickle.dumps(projected)).fields == ["MET_pt"]
    got = projected(partition)
    expected = rntuple.open(f"{path}:{name}").arrays(["MET_pt"], entry_start=start, entry_stop=stop)
    assert got.fields == events.fields and len(got) == stop - start
    np.testing.assert_array_equal(ak.to_numpy(got.MET_pt), ak.to_numpy(expected.MET_pt))


def test_workers_read_urls_over_http(files: list[str], client: Any, nginx: server_http.Server) -> None:
    urls = [f"{nginx.url(Path(f.rsplit(':', 1)[0]).name)}:Events" for f in files]
    events, report = rntuple.dask(urls, report=True)
    nginx.clear_log()  # what the graph's computation reads, not its construction
    histograms, partitions = dask.compute(histogram_graph(events), report, scheduler=client)
    eager_pt, eager_muons = eager_histograms(files)
    np.testing.assert_array_equal(ak.to_numpy(histograms.pt).sum(axis=0), eager_pt)
    np.testing.assert_array_equal(ak.to_numpy(histograms.muons).sum(axis=0), eager_muons)
    assert set(ak.to_list(partitions.file)) == {u.rsplit(":", 1)[0] for u in urls}
    assert set(ak.to_list(partitions.pid)) == set(client.run(os.getpid).values())
    two_fields = page_bytes(files, ["Jet_pt", "Muon_pt"])
    served = sum(int(r["body_bytes"]) for r in nginx.requests() if r["status"] in ("200", "206"))
    workers = int(ak.sum(partitions.bytes_read))
    # A remote open reads the file's head and tail at once (about 200 kB here), once per
    # worker process and file: with small files that is most of what is not pages.
    opens = len(set(zip(ak.to_list(partitions.pid), ak.to_list(partitions.file), strict=True)))
    assert N_FILES <= opens <= 2 * N_FILES
    opening = rntuple.open(urls[0]).metrics()["bytes_read"]
    assert 1000 < opening < 10 * 1024 * 1024
    print(
        f"\n[dask projection] over HTTP: nginx served {served:,} bytes, the workers counted "
        f"{workers:,} ({opens} opens of {opening:,} bytes each); pages of Jet_pt and Muon_pt "
        f"{two_fields:,} bytes"
    )
    assert served == workers
    # (an open's head and tail reads may hold pages too, so this bounds from above only)
    assert two_fields <= served and served - opens * opening <= 1.1 * two_fields


def test_a_partition_has_the_next_file_opened_ahead(files: list[str], nginx: server_http.Server) -> None:
    """Computing the first partition alone (one thread): its values are the first file's,
    and meanwhile the next file, and only that one, is opened (its two ends and page
    lists read), so that the partition of the next file reads its pages only."""
    names = [Path(f.rsplit(":", 1)[0]).name for f in files]
    urls = [f"{nginx.url(name)}:Events" for name in names]
    events = rntuple.dask(urls, ["Jet_pt"])
    assert events.npartitions == N_FILES, "one partition per file"

    def served() -> dict[str, list[str]]:
        """The ranges asked of each file."""
        out: dict[str, list[str]] = {}
        for r in nginx.requests():
            out.setdefault(r["path"].rsplit("/", 1)[-1], []).append(r["range"])
        return out

    # The files being opened ahead: a partition adds the next file before it reads its
    # own pages, and the opening thread removes it once the file is open. When the
    # partition's computation returns, the next file's opening is done or in the set:
    # once the set is empty, nothing more is asked of nginx.
    ahead = importlib.import_module("rntuple.dask")._ahead

    def openings_done() -> None:
        deadline = time.monotonic() + 60
        while ahead:
            assert time.monotonic() < deadline, f"still opening ahead: {ahead}"
            time.sleep(0.01)

    nginx.clear_log()
    first = events.partitions[0].compute(scheduler="sync")
    assert len(first) == ENTRIES
    assert ak.all(first.Jet_pt == rntuple.open(files[0]).arrays(["Jet_pt"]).Jet_pt)
    openings_done()
    ranges = served()
    assert set(ranges) == {names[0], names[1]}, ranges
    assert OPENING_RANGES in ranges[names[1]], ranges

    nginx.clear_log()
    second = events.partitions[1].compute(scheduler="sync")
    assert ak.all(second.Jet_pt == rntuple.open(files[1]).arrays(["Jet_pt"]).Jet_pt)
    # (and it has the file after opened ahead in turn)
    openings_done()
    ranges = served()
    assert ranges.get(names[1]) and OPENING_RANGES not in ranges[names[1]], ranges
    assert OPENING_RANGES in ranges[names[2]] and names[3] not in ranges, ranges
