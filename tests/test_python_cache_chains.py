"""Python's ``cache=`` and chains of remote files, against nginx on loopback:

- ``cache=`` takes a directory, an ``rntuple.Cache`` (``validate``, ``max_bytes``),
  ``False`` or ``None`` (the environment's); a warm read with ``validate="never"`` makes
  no request (nginx's log), values equal the local file's;
- a chain of files (``iterate``, ``concatenate``): the next file is opened and its first
  batch read while the current one is used (nginx's log shows the next file's requests
  before the current file's last batch is taken), values and batch boundaries as
  local, and the process's open file descriptors back to where they were afterwards;
- 8 processes and a 4-worker ``dask.distributed`` cluster on one empty cache directory
  at once, 20 rounds: no wrong value, ``cache verify`` clean, no temporary file left.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import awkward as ak
import pyarrow as pa
import pytest
import server_http
from conftest import require_rntuple_bin
from netutil import backdate
from remote_data import write_nanoaod_like

import rntuple

FIELDS = ["Jet_pt", "MET_pt", "Muon_eta", "event"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six small multi-cluster files."""
    root = tmp_path_factory.mktemp("chain")
    for k in range(6):
        write_nanoaod_like(root / f"part{k}.root", 12_000, seed=100 + k, cluster_size="300 kB")
    backdate(root)
    return root


def _urls(nginx: server_http.Server, n: int = 6) -> list[str]:
    return [nginx.url(f"part{k}.root") + ":Events" for k in range(n)]


def _local(served: Path, n: int = 6) -> list[str]:
    return [str(served / f"part{k}.root") + ":Events" for k in range(n)]


def test_cache_argument_forms(nginx: server_http.Server, served: Path, tmp_path: Path) -> None:
    url = _urls(nginx, 1)[0]
    want = rntuple.open(_local(served, 1)[0]).arrays(FIELDS, library="arrow")
    cache = tmp_path / "c"
    nginx.clear_log()
    assert rntuple.open(url, cache=str(cache)).arrays(FIELDS, library="arrow").equals(want)
    assert nginx.requests(), "a cold read goes to the origin"
    nginx.clear_log()
    never = rntuple.Cache(cache, validate="never")
    nt = rntuple.open(url, cache=never)
    assert nt.arrays(FIELDS, library="arrow").equals(want)
    assert nginx.requests() == [], "never: no request"
    assert nt.metrics()["requests"] == 0
    nginx.clear_log()
    assert rntuple.open(url, cache=rntuple.Cache(cache)).arrays(FIELDS, library="arrow").equals(want)
    assert len(nginx.requests()) == 1, "open: one validation request"
    # False: no cache, even when the environment names one.
    os.environ["RNTUPLE_CACHE_DIR"] = str(cache)
    try:
        nginx.clear_log()
        assert rntuple.open(url, cache=False).arrays(FIELDS, library="arrow").equals(want)
        assert len(nginx.requests()) >= 2, "without the cache, the origin again"
        nginx.clear_log()
        assert rntuple.open(url).arrays(FIELDS, library="arrow").equals(want)
        assert len(nginx.requests()) == 1, "None: the environment's cache (validated)"
    finally:
        del os.environ["RNTUPLE_CACHE_DIR"]
    stats = rntuple.Cache(cache).stats()
    assert stats["extents"] > 0 and stats["bytes_on_disk"] > 0
    for bad in [3, "", rntuple.InvalidArgumentError]:
        with pytest.raises(rntuple.InvalidArgumentError):
            rntuple.open(url, cache=bad)
    with pytest.raises(rntuple.InvalidArgumentError):
        rntuple.Cache(cache, validate="sometimes")
    with pytest.raises(rntuple.InvalidArgumentError):
        rntuple.Cache(cache, max_bytes=-1)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _descriptors_back_to(count: int) -> bool:
    """Whether the open descriptors come back to ``count`` within 30 s (a remote source's
    network threads stop in the background once it is dropped)."""
    deadline = time.monotonic() + 30
    while _open_descriptors() > count and time.monotonic() < deadline:
        time.sleep(0.02)
    return _open_descriptors() <= count


def test_a_chain_opens_the_next_file_while_the_current_one_is_used(
    nginx: server_http.Server, served: Path
) -> None:
    local = list(rntuple.iterate(_local(served), FIELDS, step_size=4000, library="arrow"))
    before = _open_descriptors()
    nginx.clear_log()
    seen_next_early = 0
    got = []
    batches_per_file = len(local) // 6
    for i, batch in enumerate(rntuple.iterate(_urls(nginx), FIELDS, step_size=4000, library="arrow")):
        got.append(batch)
        time.sleep(0.05)  # the analysis' work on the batch
        k = i // batches_per_file
        if i % batches_per_file == batches_per_file - 1 and k + 1 < 6:
            # The last batch of file k is in hand: file k + 1 is opened meanwhile, while
            # nothing is asked of the chain (waited for: it comes only from a chain that
            # opens ahead).
            deadline = time.monotonic() + 30
            while f"/part{k + 1}.root" not in {r["path"] for r in nginx.requests()}:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            else:
                seen_next_early += 1
    assert len(got) == len(local)
    for g, w in zip(got, local, strict=True):
        assert g.equals(w)
    assert seen_next_early == 5
    del got
    assert _descriptors_back_to(before), "every file closed after the loop"
    # concatenate: the same values, files read one ahead.
    want = pa.concat_tables(local)
    assert rntuple.concatenate(_urls(nginx), FIELDS, library="arrow").equals(want)
    assert _descriptors_back_to(before)


WORKER = """
import sys
import rntuple
url, local, cache, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
want = rntuple.open(local).arrays(library="arrow")
wrong = 0
for r in range(rounds):
    fields = [["Jet_pt", "Muon_eta"], ["MET_pt", "event", "Photon_phi"], None][r % 3]
    got = rntuple.open(url, cache=cache).arrays(fields, library="arrow")
    wrong += not got.equals(want.select(got.column_names))
print(wrong)
"""


def test_eight_processes_and_a_dask_cluster_share_an_empty_cache(
    nginx: server_http.Server, served: Path, tmp_path: Path
) -> None:
    import dask
    import distributed

    cache = tmp_path / "shared"
    rounds = 20
    url, local = _urls(nginx, 1)[0], _local(served, 1)[0]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, url, local, str(cache), str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(8)
    ]
    wrong = 0
    want = rntuple.concatenate(_local(served), ["Jet_pt"]).Jet_pt
    with (
        dask.config.set({"temporary-directory": str(tmp_path / "dask")}),
        distributed.LocalCluster(
            n_workers=4, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        for _ in range(rounds):
            array = rntuple.dask(_urls(nginx), ["Jet_pt"], cache=rntuple.Cache(cache))
            got: Any = client.compute(array.Jet_pt).result()
            wrong += not ak.array_equal(got, want)
    for p in processes:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        wrong += int(out.strip())
    assert wrong == 0
    verify = subprocess.run(
        [str(require_rntuple_bin()), "cache", "verify", "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert list((cache / "rntuple-cache-v1" / "tmp").glob("*")) == []
    stats = rntuple.Cache(cache).stats()
    print({k: v for k, v in stats.items() if v})
    assert stats["hits"] > 0
