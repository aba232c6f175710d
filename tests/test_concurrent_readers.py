"""Concurrent readers: ONE reader shared by 8 threads reading different fields and entry
ranges at once gives what serial reads give, 100 rounds, no deadlock; from a local file,
over http:// (nginx) and over root:// (xrootd), on loopback.

- Rust: the ``concurrent_read`` test tool (``crates/rntuple-testkit/src/bin/concurrent_read.rs``)
  opens one ``RNTupleReader`` and runs 8 threads x 100 rounds of tasks mixing ``read``,
  ``read_entries`` (rows) and ``read_ranges`` (the stream) over field subsets (nested
  paths included) and entry ranges (inside a cluster, across cluster boundaries, ...),
  compared with the serial results; it exits 3 naming the tasks in flight when a round
  hangs (deadlock) and 1 on any mismatch. Run on a ROOT-written file with every field
  kind (``rootgen``'s ``multicluster.root``: 5000 entries, 20+ clusters, 4+ cluster
  groups) and on an rntuple-written NanoAOD-like file (``remote_data.nanoaod_like``).
- Python: ONE ``rntuple.open(...)`` RNTuple shared by a ``ThreadPoolExecutor`` of 8
  threads, each round 8 different ``arrays(fields, entry_start=, entry_stop=)`` or
  ``iterate(...)`` reads started together (a barrier), compared with serial reads by
  ``ak.array_equal``; and the GIL is released during a read (another Python thread keeps
  running).

``RNTUPLE_CONCURRENT_READ=PATH`` uses a prebuilt example instead of building it.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import awkward as ak
import pytest
import server_xrootd
from conftest import rust_tool
from remote_data import write_nanoaod_like

import rntuple
import rootgen

THREADS = 8
REPETITIONS = 100
#: A round still running after this long is a deadlock.
ROUND_TIMEOUT = 120
PROTOCOLS = ["local", "http", "root"]
#: ROOT-written: every field kind of rootgen's schema, many clusters and cluster groups.
ROOT_FILE = "multicluster.root"
#: rntuple-written: 40 NanoAOD-like fields (scalars and jagged collections).
NANO_FILE = "nano.root"
NANO_ENTRIES = 20_000
FILES = {ROOT_FILE: rootgen.NTUPLE, NANO_FILE: "Events"}


def concurrent_read_path() -> Path:
    """The concurrent_read test tool (``$RNTUPLE_CONCURRENT_READ`` overrides it)."""
    return rust_tool("concurrent_read", "RNTUPLE_CONCURRENT_READ")


@pytest.fixture(scope="module")
def concurrent_read() -> Path:
    path = concurrent_read_path()
    if not path.is_file():
        pytest.fail(f"concurrent_read not found at {path}", pytrace=False)
    return path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory every server serves: the ROOT-written and the rntuple-written file."""
    root = tmp_path_factory.mktemp("concurrent")
    rootgen.generate(root, [rootgen.SPECS_BY_NAME[ROOT_FILE]])
    write_nanoaod_like(root / NANO_FILE, NANO_ENTRIES, seed=12, cluster_size="256 kB")
    return root


@pytest.fixture(scope="module")
def xrootd(served: Path) -> Iterator[server_xrootd.Server]:
    server = server_xrootd.start(served)
    try:
        yield server
    finally:
        server.stop()


def location(protocol: str, served: Path, request: pytest.FixtureRequest, name: str) -> str:
    """The file ``name`` as the reader sees it: a path or a URL (starting that server)."""
    if protocol == "local":
        return str(served / name)
    if protocol == "http":
        return request.getfixturevalue("nginx").url(name)
    return request.getfixturevalue("xrootd").url(name)


# ----------------------------------------------------------------------------- Rust


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_rust_threads_sharing_one_reader_read_what_serial_reads_read(
    concurrent_read: Path, served: Path, request: pytest.FixtureRequest, protocol: str, name: str
) -> None:
    target = f"{location(protocol, served, request, name)}:{FILES[name]}"
    args = [str(concurrent_read), target, "--threads", str(THREADS), "--repetitions", str(REPETITIONS)]
    args += ["--seed", "7", "--timeout", str(ROUND_TIMEOUT)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode != 3, f"deadlock:\n{result.stderr}"
    assert result.returncode == 0, f"exit {result.returncode}:\n{result.stderr[-5000:]}"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"\n{protocol} {name}: {summary}")
    assert summary["rounds"] == REPETITIONS and summary["threads"] == THREADS
    assert summary["reads"] == THREADS * REPETITIONS
    assert summary["mismatches"] == 0 and summary["errors"] == 0
    assert summary["clusters"] >= 10, summary
    # Every API, nested selections, and more tasks than threads (rounds mix them).
    assert summary["tasks"] >= 2 * THREADS
    assert min(summary["read_tasks"], summary["row_tasks"], summary["stream_tasks"]) > 0
    assert summary["nested_tasks"] > 0
    # Every nested path the reader accepts also reads (see crates/rntuple/tests/map_projection.rs).
    assert summary["refused_paths"] == [], result.stderr


# ----------------------------------------------------------------------------- Python

#: (fields, entry_start, entry_stop, step) per task of the NanoAOD-like file: ``step``
#: None reads with ``arrays``, a number iterates in batches of that many entries.
NANO_TASKS: list[tuple[Any, int | None, int | None, int | None]] = [
    (None, None, None, None),
    (["Jet_pt"], 0, 5000, None),
    (["Jet_*"], 3210, 9876, None),
    (["MET_pt", "event", "Muon_pt"], 12_345, None, None),
    (["Electron_eta", "Photon_mass", "HLT_IsoMu24"], 777, 778, None),
    (["PV_npvs", "PV_z"], None, 100, None),
    (["Muon_*", "run"], 4000, 16_000, 3000),
    (["Jet_pt", "Jet_eta", "Jet_phi"], None, None, 7000),
    (["genWeight"], -500, None, None),
    (["Photon_*"], 9999, 10_001, None),
    (["Electron_*", "MET_phi"], 1, 19_999, None),
    (["event", "Jet_mass"], 6000, 6000, None),
]
#: The same for the ROOT-written file (5000 entries): records, nested collections,
#: strings, optionals, maps, arrays, projections into records.
ROOT_TASKS: list[tuple[Any, int | None, int | None, int | None]] = [
    (["vf", "vvi", "str"], None, None, None),
    (["pair", "tup"], 123, 4567, None),
    (["vs", "opt", "i64"], 2000, 2600, None),
    (["arr", "rvec", "u8"], 4900, None, None),
    (["map", "f32"], 17, 3333, 700),
    (["vvi"], 1000, 1001, None),
    (["str", "b", "c", "i16"], None, 2500, None),
    (["pair._0", "tup._1", "vf"], 250, 4750, None),
    (["set", "u64"], 3000, None, 999),
    (["f64", "vs"], 0, 5000, None),
    (["opt", "arr"], 4321, 4999, None),
    (["vf"], 2500, 2501, None),
]


def read_task(nt: rntuple.RNTuple, task: tuple[Any, int | None, int | None, int | None]) -> ak.Array:
    fields, start, stop, step = task
    if step is None:
        return nt.arrays(fields, entry_start=start, entry_stop=stop)
    batches = list(nt.iterate(fields, step_size=step, entry_start=start, entry_stop=stop))
    return ak.concatenate(batches) if batches else nt.arrays(fields, entry_start=0, entry_stop=0)


def open_ntuple(target: str, name: str) -> rntuple.RNTuple:
    f = rntuple.open(target)
    assert isinstance(f, rntuple.ReadOnlyFile)
    return f[name]


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_python_threads_sharing_one_rntuple_read_what_serial_reads_read(
    served: Path, request: pytest.FixtureRequest, protocol: str, name: str
) -> None:
    nt = open_ntuple(location(protocol, served, request, name), FILES[name])
    tasks = NANO_TASKS if name == NANO_FILE else ROOT_TASKS
    t0 = time.perf_counter()
    expected = [read_task(nt, t) for t in tasks]
    serial = time.perf_counter() - t0
    assert sum(len(e) for e in expected) > 0
    barrier = threading.Barrier(THREADS)
    mismatches: list[str] = []

    def work(i: int) -> tuple[int, bool]:
        barrier.wait(timeout=ROUND_TIMEOUT)
        got = read_task(nt, tasks[i])
        return i, bool(got.type == expected[i].type and ak.array_equal(got, expected[i]))

    step = 5  # coprime with the 12 tasks: every round groups other tasks together
    t0 = time.perf_counter()
    reads = 0
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for round_ in range(REPETITIONS):
            chosen = [(round_ * step + k) % len(tasks) for k in range(THREADS)]
            futures = [pool.submit(work, i) for i in chosen]
            for future, i in zip(futures, chosen, strict=True):
                try:
                    _, same = future.result(timeout=ROUND_TIMEOUT)
                except FutureTimeout:
                    in_flight = [tasks[j] for f, j in zip(futures, chosen, strict=True) if not f.done()]
                    pytest.fail(f"deadlock? round {round_}: tasks in flight {in_flight}", pytrace=False)
                reads += 1
                if not same:
                    mismatches.append(f"round {round_} task {i} {tasks[i]}")
    seconds = time.perf_counter() - t0
    summary = {
        "rounds": REPETITIONS,
        "threads": THREADS,
        "tasks": len(tasks),
        "reads": reads,
        "mismatches": len(mismatches),
        "seconds": round(seconds, 3),
        "serial_seconds": round(serial, 3),
    }
    print(f"\n{protocol} {name}: {json.dumps(summary)}")
    assert reads == THREADS * REPETITIONS
    assert not mismatches, mismatches[:20]


def longest_pause_during_a_read(nt: rntuple.RNTuple) -> tuple[float, float]:
    """(seconds of a read of every field, longest pause of another Python thread meanwhile)."""
    gaps: list[float] = []
    done = threading.Event()
    seconds: list[float] = []

    def read() -> None:
        t = time.perf_counter()
        nt.arrays(library="arrow")
        seconds.append(time.perf_counter() - t)
        done.set()

    reader = threading.Thread(target=read)
    last = time.perf_counter()
    reader.start()
    while not done.is_set():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    reader.join()
    return seconds[0], max(gaps)


def test_a_read_releases_the_gil(served: Path) -> None:
    """While one thread reads (every field of the NanoAOD-like file, as Arrow), another
    Python thread keeps running: its longest pause is far shorter than the read. If the
    GIL were held while pages are read and decoded, it would stand still for most of the
    read, in every attempt; a busy machine may pause it too, hence a few attempts."""
    nt = open_ntuple(str(served / NANO_FILE), "Events")
    nt.arrays(library="arrow")  # warm the page cache
    attempts = []
    for _ in range(5):
        read_seconds, longest = longest_pause_during_a_read(nt)
        attempts.append(f"read {read_seconds * 1e3:.1f} ms, longest pause {longest * 1e3:.1f} ms")
        if longest < read_seconds / 2:
            break
    print("\n" + "; ".join(attempts))
    assert longest < read_seconds / 2, f"the other thread stood still: {attempts}"
