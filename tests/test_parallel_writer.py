"""One RNTuple filled from several Python threads through ``rntuple.recreate_parallel``
(ROOT's ``RNTupleParallelWriter`` model: a fill context per thread, clusters committed
in the order the contexts fill them, one file), read back by ROOT 6.40 (RDataFrame),
uproot and ``rntuple``.

Every thread writes a distinct, known sequence: its thread id, a per-thread sequence
number, a double, a jagged ``std::vector<float>`` and a ``std::vector<std::int32_t>``, in
batches of several kinds (pyarrow, Awkward, dicts of NumPy arrays). With a small cluster
size every thread commits several clusters. The readers must give back the multiset of
written entries, every thread's entries in the order the thread wrote them, and clusters
that each hold one thread's entries. Also: a batch that does not fit the schema raises
a typed error and leaves the context usable; an aborted or failed write leaves no file.
"""

from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pyarrow as pa
import pytest
import uproot

import rntuple
import rootdump

NAME = "Events"
#: Entries each thread writes, in batches of ``BATCH``.
PER_THREAD = 6000
BATCH = 1000
#: Small clusters: every thread commits several.
CLUSTER_SIZE = "2 kB"


def expected_columns(thread: int, start: int, stop: int) -> dict[str, Any]:
    """The entries ``start..stop`` of ``thread``, as NumPy and lists."""
    seq = np.arange(start, stop, dtype=np.int64)
    values = [
        (thread * 1000 + s % 1000 + 0.25 * np.arange(s % 7)).astype(np.float32) for s in range(start, stop)
    ]
    ids = [np.arange(s % 3, dtype=np.int32) + thread for s in range(start, stop)]
    return {
        "thread": np.full(stop - start, thread, dtype=np.int32),
        "seq": seq,
        "x": thread * 0.5 + seq.astype(np.float64),
        "values": values,
        "ids": ids,
    }


def batch(thread: int, start: int, stop: int) -> Any:
    """Entries ``start..stop`` of ``thread`` as one of the input kinds the writer takes
    (pyarrow, Awkward or a dict of NumPy/Awkward arrays), by batch number."""
    cols = expected_columns(thread, start, stop)
    kind = (start // BATCH) % 3
    jagged = {k: ak.Array([v.tolist() for v in cols[k]]) for k in ("values", "ids")}
    jagged["values"] = ak.values_astype(jagged["values"], np.float32)
    jagged["ids"] = ak.values_astype(jagged["ids"], np.int32)
    if kind == 0:
        return pa.table(
            {
                "thread": cols["thread"],
                "seq": cols["seq"],
                "x": cols["x"],
                "values": pa.array(cols["values"], type=pa.large_list(pa.float32())),
                "ids": pa.array(cols["ids"], type=pa.large_list(pa.int32())),
            }
        )
    if kind == 1:
        return ak.zip({"thread": cols["thread"], "seq": cols["seq"], "x": cols["x"], **jagged}, depth_limit=1)
    return {"thread": cols["thread"], "seq": cols["seq"], "x": cols["x"], **jagged}


def fill(path: Path, threads: int, *, flush_every: int | None = None) -> None:
    """Fills ``path`` with ``threads`` threads, each its own sequence in batches; all
    threads pass a barrier after each batch so that their clusters interleave."""
    barrier = threading.Barrier(threads)
    with rntuple.recreate_parallel(path, NAME, batch(0, 0, 1), cluster_size=CLUSTER_SIZE) as w:

        def work(thread: int) -> int:
            with w.fill_context() as ctx:
                for n, start in enumerate(range(0, PER_THREAD, BATCH)):
                    ctx.extend(batch(thread, start, start + BATCH))
                    if flush_every and n % flush_every == 0:
                        ctx.flush_cluster()
                    barrier.wait()
                return ctx.num_entries

        with ThreadPoolExecutor(threads) as pool:
            written = list(pool.map(work, range(threads)))
        assert written == [PER_THREAD] * threads
        assert not path.exists(), "the file appeared before it was complete"
    assert path.exists()


def check_entries(columns: dict[str, Any], threads: int, reader: str) -> None:
    """``columns`` (per field, a sequence over the entries in file order) hold every
    thread's entries once, each thread's in its order, with their values."""
    thread = np.asarray(columns["thread"], dtype=np.int64)
    seq = np.asarray(columns["seq"], dtype=np.int64)
    assert len(thread) == threads * PER_THREAD, reader
    for t in range(threads):
        mine = np.flatnonzero(thread == t)
        # Every entry of the thread, in the order the thread wrote them.
        assert np.array_equal(seq[mine], np.arange(PER_THREAD)), f"{reader}: thread {t}"
        expected = expected_columns(t, 0, PER_THREAD)
        assert np.array_equal(np.asarray(columns["x"], dtype=np.float64)[mine], expected["x"]), reader
        for field in ("values", "ids"):
            for s, i in enumerate(mine):
                e = expected[field][s]
                # Values as the field's type (lists of Python numbers from uproot):
                # every value is exact in it.
                g = np.asarray(columns[field][i], dtype=e.dtype)
                assert np.array_equal(g, e), f"{reader}: thread {t} seq {s} {field}"


def check_clusters(path: Path, threads: int) -> None:
    """Each cluster holds the entries of one thread; every thread made several, and the
    threads' clusters interleave."""
    nt = rntuple.open(str(path))[NAME]
    owner_of_entry = nt.arrays(["thread"], library="np")["thread"]
    owners = []
    for first, n in nt._reader.clusters():
        part = owner_of_entry[first : first + n]
        assert (part == part[0]).all(), f"cluster at {first} mixes threads"
        owners.append(int(part[0]))
    for t in range(threads):
        assert owners.count(t) >= 3, owners
    switches = sum(a != b for a, b in itertools.pairwise(owners))
    assert switches >= threads, f"clusters not interleaved: {owners}"


def root_columns(path: Path) -> dict[str, Any]:
    """ROOT's reading (RDataFrame, entries in file order) of every field."""
    ROOT = rootdump.load_root()
    df = ROOT.RDataFrame(NAME, str(path))
    got = df.AsNumpy(["thread", "seq", "x", "values", "ids"])
    return {k: list(v) if k in ("values", "ids") else np.asarray(v) for k, v in got.items()}


@pytest.mark.parametrize("threads", [2, 4])
def test_threads_fill_one_rntuple_root_reads_every_entry(tmp_path: Path, threads: int) -> None:
    """2 and 4 threads fill one RNTuple; ROOT, uproot and rntuple read every entry back,
    each thread's in its order; clusters hold one thread's entries and interleave."""
    path = tmp_path / f"parallel{threads}.root"
    fill(path, threads)
    check_clusters(path, threads)
    ROOT = rootdump.load_root()
    desc = ROOT.RNTupleReader.Open(NAME, str(path)).GetDescriptor()
    types = {f: desc.GetFieldDescriptor(desc.FindFieldId(f)).GetTypeName() for f in ("values", "ids")}
    assert types == {"values": "std::vector<float>", "ids": "std::vector<std::int32_t>"}
    check_entries(root_columns(path), threads, "ROOT")
    with uproot.open(path) as f:
        arrays = f[NAME].arrays()
        check_entries({k: arrays[k].to_list() for k in arrays.fields}, threads, "uproot")
    ours = rntuple.open(str(path))[NAME].arrays()
    check_entries({k: ours[k].to_list() for k in ours.fields}, threads, "rntuple")


def test_flush_cluster_cuts_clusters(tmp_path: Path) -> None:
    """``flush_cluster`` commits a context's open cluster at once: a cluster ends at each
    call; ROOT reads the file."""
    path = tmp_path / "flushed.root"
    with rntuple.recreate_parallel(path, NAME, batch(0, 0, 1)) as w:
        ctx = w.fill_context()
        for start in range(0, 3 * BATCH, BATCH):
            ctx.extend(batch(0, start, start + BATCH))
            ctx.flush_cluster()
            assert w.num_entries == start + BATCH
        # A context left open is closed (its cluster committed) with the writer.
        w.fill_context().extend(batch(1, 0, 10))
    nt = rntuple.open(str(path))[NAME]
    assert [n for _, n in nt._reader.clusters()] == [BATCH, BATCH, BATCH, 10]
    assert len(root_columns(path)["seq"]) == 3 * BATCH + 10


def test_schema_from_a_pyarrow_schema_and_types(tmp_path: Path) -> None:
    """A ``pyarrow.Schema`` gives the fields as declared (nullable → ``std::optional``);
    ``types`` overrides a field's C++ type."""
    path = tmp_path / "schema.root"
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), nullable=False),
            pa.field("b", pa.float64(), nullable=True),
            pa.field("c", pa.float64(), nullable=False),
        ]
    )
    with rntuple.recreate_parallel(path, NAME, schema, types={"c": "float"}) as w:
        with w.fill_context() as ctx:
            ctx.extend({"a": np.arange(5), "b": [1.0, None, 3.0, None, 5.0], "c": np.arange(5) / 2})
    ROOT = rootdump.load_root()
    desc = ROOT.RNTupleReader.Open(NAME, str(path)).GetDescriptor()
    types = {f: desc.GetFieldDescriptor(desc.FindFieldId(f)).GetTypeName() for f in "abc"}
    assert types == {"a": "std::int64_t", "b": "std::optional<double>", "c": "float"}
    got = rntuple.open(str(path))[NAME].arrays()
    assert got["b"].to_list() == [1.0, None, 3.0, None, 5.0]
    assert got["c"].to_list() == [0.0, 0.5, 1.0, 1.5, 2.0]


def test_a_batch_that_does_not_fit_raises_and_the_context_goes_on(tmp_path: Path) -> None:
    """A batch without a field or of another type raises ``InvalidArgumentError``; the
    entries of the context before and after it are written."""
    path = tmp_path / "bad.root"
    with rntuple.recreate_parallel(path, NAME, batch(0, 0, 1)) as w:
        with w.fill_context() as ctx:
            ctx.extend(batch(0, 0, 10))
            missing = {k: v for k, v in expected_columns(0, 10, 20).items() if k != "ids"}
            with pytest.raises(rntuple.InvalidArgumentError, match='no column "ids"'):
                ctx.extend(missing)
            wrong = dict(batch(0, 10, 20).to_pydict())
            wrong["seq"] = [str(s) for s in wrong["seq"]]
            with pytest.raises(rntuple.RNTupleError):
                ctx.extend(pa.table(wrong))
            ctx.extend(batch(0, 10, 20))
            assert ctx.num_entries == 20
        with pytest.raises(rntuple.InvalidArgumentError, match="closed"):
            ctx.extend(batch(0, 20, 30))
    seq = rntuple.open(str(path))[NAME].arrays(["seq"], library="np")["seq"]
    assert seq.tolist() == list(range(20))


def test_an_aborted_write_leaves_no_file(tmp_path: Path) -> None:
    """An exception in the ``with`` block (here, raised by a filling thread) abandons the
    file: nothing at the path, no temporary file, and an existing file stays as it was."""
    path = tmp_path / "aborted.root"
    path.write_bytes(b"old")

    def work(w: rntuple.ParallelWriter, thread: int) -> None:
        with w.fill_context() as ctx:
            ctx.extend(batch(thread, 0, BATCH))
            if thread == 1:
                raise RuntimeError("the filling thread fails")

    with pytest.raises(RuntimeError, match="filling thread fails"):
        with rntuple.recreate_parallel(path, NAME, batch(0, 0, 1)) as w:
            with ThreadPoolExecutor(2) as pool:
                for future in [pool.submit(work, w, t) for t in range(2)]:
                    future.result()
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aborted.root"]


def test_an_aborted_writer_leaves_no_file_and_makes_no_contexts(tmp_path: Path) -> None:
    """``abort()`` abandons the file (no file, no temporary file); the writer then makes
    no contexts, and closing it does nothing."""
    path = tmp_path / "failed.root"
    w = rntuple.recreate_parallel(path, NAME, batch(0, 0, 1))
    ctx = w.fill_context()
    ctx.extend(batch(0, 0, 10))
    w.abort()
    with pytest.raises(rntuple.InvalidArgumentError, match="closed"):
        w.fill_context()
    assert list(tmp_path.iterdir()) == []
    w.close()  # closing an aborted writer does nothing
    assert list(tmp_path.iterdir()) == []
