"""Decoding ahead in ``iterate()`` and the Arrow stream (``decode_ahead=True``, the
default): the same batches and errors as reading each batch when asked, the next batch
decoded in the background while the caller holds the current one (and only that one),
and a loop left early stops the decoding thread: the file closes and the process exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot
from pysamples import write_events

import rntuple

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def many_clusters(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file of 6,000 events in many small clusters."""
    path = tmp_path_factory.mktemp("ahead") / "events.root"
    write_events(path, seed=3, n=6000, cluster_size="32 kB")
    return path


def threads() -> int:
    """The threads of this process."""
    return len(os.listdir("/proc/self/task"))


def wait_for(what: str, done: object) -> float:
    """Polls ``done()`` for up to 60 s; the seconds until it held."""
    start = time.perf_counter()
    while not done():  # type: ignore[operator]
        assert time.perf_counter() - start < 60, f"timed out waiting for {what}"
        time.sleep(0.002)
    return time.perf_counter() - start


def watch_window(took: float, floor: float = 0.3) -> float:
    """Seconds to watch for a step that must not come, after a step of the same work took
    ``took``: three times that, at least ``floor``. A thread that wrongly went on would
    take about as long again to show it, and the window grows with the machine's load as
    the step does (a correct reader passes however long the window)."""
    return max(3 * took, floor)


def test_the_same_batches_with_and_without_decoding_ahead(many_clusters: Path) -> None:
    nt = rntuple.open(f"{many_clusters}:Events")
    assert len(nt.clusters) >= 6
    cases = [
        dict(step_size=700),
        dict(step_size="20 kB", library="arrow"),
        dict(expressions=["Jet_pt", "MET_pt"], step_size=1000, library="np"),
        # Expressions and a cut: the selection and the inputs come from two streams.
        dict(expressions=["Jet_pt * 2", "MET_pt", "event"], cut="MET_pt > 20", step_size=900, library="ak"),
        dict(expressions=["sqrt(MET_pt)"], aliases={"m": "MET_pt"}, cut="m > 10", step_size=1500),
    ]
    for kwargs in cases:
        ahead = list(nt.iterate(**kwargs))  # the default: decode_ahead=True
        plain = list(nt.iterate(**kwargs, decode_ahead=False))
        assert len(ahead) == len(plain) > 1, kwargs
        for a, p in zip(ahead, plain, strict=True):
            if kwargs.get("library") == "arrow":
                assert a.equals(p)
            elif kwargs.get("library") == "np":
                assert a.keys() == p.keys()
                for k in a:
                    if a[k].dtype == object:
                        assert [list(x) for x in a[k]] == [list(x) for x in p[k]]
                    else:
                        np.testing.assert_array_equal(a[k], p[k])
            else:
                assert ak.to_list(a) == ak.to_list(p), kwargs
    # Over files, and the stream of the whole RNTuple (pyarrow.table(nt)).
    spec = f"{many_clusters}:Events"
    got = ak.concatenate(list(rntuple.iterate([spec, spec], ["Jet_pt"], step_size=2500)))
    expected = uproot.open(many_clusters)["Events"].arrays(["Jet_pt"])
    assert ak.to_list(got.Jet_pt) == 2 * ak.to_list(expected.Jet_pt)
    import pyarrow as pa

    assert pa.table(nt).equals(nt.arrays(library="arrow"))


def test_an_error_is_raised_at_its_batch(many_clusters: Path, tmp_path: Path) -> None:
    """A page of cluster 3 broken: batches 0-2 come, then the checksum error."""
    broken = tmp_path / "broken.root"
    data = bytearray(many_clusters.read_bytes())
    pages = uproot.open(many_clusters)["Events"].page_link_list[3]
    offset = min(p.locator.offset for column in pages for p in column.pages)
    data[offset + 1] ^= 0x5A
    broken.write_bytes(bytes(data))
    nt = rntuple.open(f"{broken}:Events")
    clusters = nt.clusters
    # Steps of the largest cluster: no two clusters fit in one, a batch per cluster.
    step = max(len(c) for c in clusters)
    assert nt.batch_ranges(None, 0, len(nt), step)[:4] == [(c.start, c.stop) for c in clusters[:4]]
    for decode_ahead in (True, False):
        got = []
        with pytest.raises(rntuple.ChecksumError, match="cluster 3"):
            for batch in nt.iterate(step_size=step, decode_ahead=decode_ahead):
                got.append(len(batch))
        assert got == [len(c) for c in clusters[:3]], decode_ahead


def test_the_next_batch_is_decoded_while_the_caller_holds_one(many_clusters: Path) -> None:
    nt = rntuple.open(f"{many_clusters}:Events")
    ranges = [(c.start, c.stop) for c in nt.clusters]
    reader = nt._reader
    # The stored bytes (checksums included) of each cluster's pages: what the reader's
    # bytes_used counter adds when it has read and decoded the cluster.
    page_lists = uproot.open(many_clusters)["Events"].page_link_list
    sizes = [
        sum(p.locator.num_bytes + 8 * p.has_checksum for column in cluster for p in column.pages)
        for cluster in page_lists
    ]

    def used() -> int:
        return int(reader.metrics()["bytes_used"])

    for decode_ahead in (False, True):
        base = used()
        batches = reader.batches(None, ranges, decode_ahead)
        for k in range(3):
            next(batches)
            # While the caller holds batch k (and asks for nothing), batch k + 1 is read
            # and decoded when decoding ahead, and nothing more.
            ahead = 1 if decode_ahead else 0
            expected = base + sum(sizes[: k + 1 + ahead])
            took = wait_for(f"batch {k + ahead}", lambda expected=expected: used() >= expected)
            time.sleep(watch_window(took))
            assert used() == expected, (decode_ahead, k)
        batches.close()
        assert list(batches) == []


def test_leaving_a_loop_early_stops_the_thread_and_frees_the_file(many_clusters: Path) -> None:
    nt_file = rntuple.open(many_clusters)
    nt = nt_file["Events"]
    list(nt.iterate(["MET_pt"], step_size=1000))  # the decoder's thread pool exists now
    baseline = threads()
    loop = nt.iterate(step_size=500)
    next(loop)
    # One thread decodes ahead; from a local file another asks the kernel for the next
    # clusters.
    assert threads() in (baseline + 1, baseline + 2), "a thread decodes ahead"
    loop.close()  # what leaving a for loop early does to the generator
    assert threads() == baseline, "the thread is gone once the loop is left"
    for batch in nt.iterate(step_size=500):
        assert len(batch) > 0
        break
    assert threads() == baseline
    nt_file.close()


def test_the_process_exits_after_leaving_a_loop_early(tmp_path: Path) -> None:
    """A loop left early over a file large enough that the thread is busy decoding: the
    interpreter exits promptly (no hang in a thread nobody waits for)."""
    path = tmp_path / "big.root"
    rng = np.random.default_rng(1)
    n = 1_000_000
    with rntuple.recreate(path, cluster_size="4 MB") as f:
        f["Events"] = {f"x{i}": rng.normal(size=n) for i in range(8)}
    script = textwrap.dedent(
        f"""
        import rntuple
        nt = rntuple.open({str(path)!r} + ":Events")
        for batch in nt.iterate(step_size=100_000):
            break
        loop = nt.iterate(step_size=100_000)
        next(loop)
        print("left", flush=True)
        """
    )
    # The rntuple this test imports (the installed package in CI, python/ when developing).
    env = dict(os.environ, PYTHONPATH=str(Path(rntuple.__file__).resolve().parent.parent))
    start = time.perf_counter()
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "left"
    assert time.perf_counter() - start < 60
