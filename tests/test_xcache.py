"""Reading ``root://`` through XCache (XRootD's proxy file cache, ``server_xcache.py``) in
front of an origin xrootd (``server_xrootd.py``), both on loopback.

- the values read through the proxy equal the local file's (``rntuple.open`` with
  ``arrays()`` and ``iterate()``; ``rntuple dump --json --fields`` equal to the local
  dump);
- the first read fills the cache: the cache directory holds the file's bytes and its
  ``.cinfo`` (blocks present, one access record per open), and the origin's log shows
  the proxy opening and reading the file;
- the second read is served by the proxy alone: no open or read of the file at the
  origin, and its access record in the ``.cinfo`` counts every byte as a hit, none
  fetched from the origin.

A multi-cluster file of about 20 MB keeps it to a few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import server_xcache
import server_xrootd
from conftest import require_rntuple_bin
from remote_data import write_nanoaod_like

import rntuple

VALUES = "values.root"
CACHED = "cached.root"
FIELDS = ["Jet_pt", "Muon_eta", "MET_pt", "event"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The origin's directory: two copies of a 40-field, 80,000-entry file (about 21 MB,
    2 MiB clusters), one per test, so that each test sees a cold cache for its file."""
    root = tmp_path_factory.mktemp("xcache_origin")
    write_nanoaod_like(root / VALUES, 80_000, seed=5, cluster_size="2 MiB")
    (root / CACHED).write_bytes((root / VALUES).read_bytes())
    return root


@pytest.fixture(scope="module")
def servers(
    served: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[server_xrootd.Server, server_xcache.Cache]]:
    """The origin (tracing opens and reads) and the cache in front of it."""
    origin = server_xrootd.start(served, extra_config=server_xcache.ORIGIN_TRACE)
    try:
        cache = server_xcache.start(origin, tmp_path_factory.mktemp("xcache_cache"))
        try:
            yield origin, cache
        finally:
            cache.stop()
    finally:
        origin.stop()


def _cli(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    out = subprocess.run(
        [str(require_rntuple_bin()), *map(str, args)],
        capture_output=True,
        env=dict(os.environ),
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr.decode()
    return out


def _read_bench(location: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_cli("read-bench", location, "--json").stdout)
    return result


def _accesses(cache: server_xcache.Cache, name: str, count: int) -> list[dict[str, int]]:
    """The ``.cinfo``'s access records once there are ``count`` (the proxy writes one when
    a client's open is released, shortly after the client closes; waited for up to 60 s)."""
    deadline = time.monotonic() + 60
    while True:
        info = cache.cinfo(name) if (cache.cache_dir / f"{name}.cinfo").exists() else {"accesses": []}
        accesses: list[dict[str, int]] = info["accesses"]  # type: ignore[assignment]
        if len(accesses) >= count or time.monotonic() > deadline:
            return accesses
        time.sleep(0.1)


def test_values_through_the_cache_equal_local(
    served: Path, servers: tuple[server_xrootd.Server, server_xcache.Cache]
) -> None:
    _, cache = servers
    local = rntuple.open(str(served / VALUES))["Events"]
    remote = rntuple.open(cache.url(VALUES))["Events"]
    assert len(local.clusters) > 4
    for fields in [None, FIELDS]:
        want = local.arrays(fields, library="arrow")
        assert remote.arrays(fields, library="arrow").equals(want), fields
        batches = list(remote.iterate(fields, step_size="2 MB", library="arrow"))
        assert len(batches) > 2
        assert pa.concat_tables(batches).equals(want), fields
    selection = ",".join(FIELDS[:3])
    want_dump = _cli("dump", "--json", "--fields", selection, served / VALUES).stdout
    assert len(want_dump) > 1000
    assert _cli("dump", "--json", "--fields", selection, cache.url(VALUES)).stdout == want_dump


def test_second_read_is_served_by_the_cache(
    served: Path, servers: tuple[server_xrootd.Server, server_xcache.Cache]
) -> None:
    origin, cache = servers
    size = (served / CACHED).stat().st_size
    assert server_xcache.origin_touches(origin.log(), CACHED)["opens"] == 0

    cold = _read_bench(cache.url(CACHED))
    first = server_xcache.origin_touches(origin.log(), CACHED)
    assert first["opens"] >= 1 and first["reads"] >= 1, first
    # The cache holds the file: its bytes and the record of which blocks it has.
    assert CACHED in cache.cached_files()
    assert (cache.cache_dir / CACHED).stat().st_size == size
    accesses = _accesses(cache, CACHED, 1)
    assert len(accesses) == 1, accesses
    info = cache.cinfo(CACHED)
    assert info["file_kb"] == size // 1024 and info["downloaded"] >= 1, info

    warm = _read_bench(cache.url(CACHED))
    assert warm["bytes_read"] == cold["bytes_read"]
    assert server_xcache.origin_touches(origin.log(), CACHED) == first, "the origin served the second read"
    accesses = _accesses(cache, CACHED, 2)
    assert len(accesses) == 2, accesses
    assert accesses[1]["miss_kb"] == 0 and accesses[1]["hit_kb"] >= cold["bytes_read"] // 1024 - 1, accesses
    print(
        f"\nxcache: cold read {cold['read_seconds']:.3f} s, warm {warm['read_seconds']:.3f} s; "
        f"origin: {first}; cinfo {info['downloaded']}/{info['blocks']} blocks, accesses {accesses}"
    )
