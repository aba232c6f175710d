"""Reading ``s3://`` URLs from SeaweedFS (``server_seaweedfs.py``), a real S3 implementation
with its objects on disk, beside moto's (``test_remote_s3.py``).

A small multi-cluster RNTuple written by ``rntuple.recreate`` is uploaded; over s3:// the
Python package reads it to the local file's values (``arrays()`` for all fields and for
a selection, ``iterate()`` batch by batch), and ``rntuple dump --json`` prints what it
prints for the local file. SeaweedFS's access lines show the reads as ranged GETs
(206) with the test's credentials. An object replaced after opening is an error saying
so (SeaweedFS refuses the ``If-Match`` of the old ETag with 412), never a mix of both.

Nothing here skips: a ``weed`` that cannot start fails every test with its output.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import server_seaweedfs
from conftest import require_rntuple_bin
from remote_data import same_size_pair, write_nanoaod_like

import rntuple

NAME = "nano.root"
FIELDS = ["Jet_pt", "Muon_eta", "MET_pt", "event"]


@pytest.fixture(scope="module")
def served_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-field NanoAOD-like RNTuple of 20,000 entries (about 3 MB) in small clusters."""
    root = tmp_path_factory.mktemp("seaweedfs_served")
    write_nanoaod_like(root / NAME, 20_000, seed=11, cluster_size="256 kB")
    return root


@pytest.fixture(scope="module")
def started(served_dir: Path) -> Iterator[server_seaweedfs.Server | str]:
    """The server, or why it could not start (each test then fails with it)."""
    try:
        server = server_seaweedfs.start(served_dir)
    except Exception as e:
        yield f"SeaweedFS did not start: {e}"
        return
    try:
        yield server
    finally:
        server.close()


def _use(started: server_seaweedfs.Server | str, monkeypatch: pytest.MonkeyPatch) -> server_seaweedfs.Server:
    """The running server, its client variables set in this process's environment; FAILS
    the calling test (in its body: a failure, not a setup error) if weed did not start."""
    if isinstance(started, str):
        pytest.fail(started, pytrace=False)
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    for key, value in started.env().items():
        monkeypatch.setenv(key, value)
    return started


def _dump(target: str | Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(require_rntuple_bin()), "dump", "--json", str(target)],
        capture_output=True,
        env=dict(os.environ),
        timeout=300,
        check=False,
    )


def test_python_reads_the_local_values(
    served_dir: Path, started: server_seaweedfs.Server | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _use(started, monkeypatch)
    local = rntuple.open(str(served_dir / NAME))["Events"]
    remote = rntuple.open(server.url(NAME))["Events"]
    assert len(local.clusters) > 4, "the file should have several clusters"
    assert len(remote.clusters) == len(local.clusters)
    for fields in [None, FIELDS]:
        want = local.arrays(fields, library="arrow")
        assert remote.arrays(fields, library="arrow").equals(want), fields
        remote_batches = list(remote.iterate(fields, step_size="200 kB", library="arrow"))
        local_batches = list(local.iterate(fields, step_size="200 kB", library="arrow"))
        assert len(remote_batches) == len(local_batches) > 2
        for got, expected in zip(remote_batches, local_batches, strict=True):
            assert got.equals(expected), fields
        assert pa.concat_tables(remote_batches).equals(want)


def test_dump_over_s3_equals_local(
    served_dir: Path, started: server_seaweedfs.Server | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _use(started, monkeypatch)
    local = _dump(served_dir / NAME)
    assert local.returncode == 0, local.stderr.decode()
    server.clear_log()
    before = server.metrics()
    remote = _dump(server.url(NAME))
    assert remote.returncode == 0, remote.stderr.decode()
    assert len(local.stdout) > 1000
    assert remote.stdout == local.stdout

    # What the server says it served: ranged GETs of this object, with our identity.
    requests = server.requests()
    gets = [r for r in requests if r["method"] == "GET"]
    assert gets and all(r["path"] == f"/{server.bucket}/{NAME}" for r in requests), requests
    assert all(r["status"] == "206" and r["identity"] == "rntuple" for r in gets), gets
    after = server.metrics()
    ranged = after["requests"].get("GET 206", 0) - before["requests"].get("GET 206", 0)
    assert ranged == len(gets)
    sent = after["bytes_sent"] - before["bytes_sent"]
    size = (served_dir / NAME).stat().st_size
    print(f"\nseaweedfs: dump in {len(gets)} ranged GETs, {sent} B sent for a {size} B file")
    assert 0.9 * size <= sent <= 1.2 * size


def test_object_replaced_after_opening_is_an_error(
    served_dir: Path, started: server_seaweedfs.Server | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _use(started, monkeypatch)
    key = "replaced.root"
    server.upload(served_dir / NAME, key)
    remote = rntuple.open(server.url(key))["Events"]
    other = served_dir.parent / "other.root"
    write_nanoaod_like(other, 20_000, seed=12, cluster_size="256 kB")
    server.upload(other, key)
    server.clear_log()
    with pytest.raises(rntuple.RemoteError, match="changed at its origin since it was opened"):
        remote.arrays(FIELDS, library="arrow")
    assert any(r["status"] == "412" for r in server.requests())


def _dump_jsonl(
    target: str | Path, env: dict[str, str], fields: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    args = [str(require_rntuple_bin()), "dump", "--jsonl", str(target)]
    args += ["--fields", ",".join(fields)] if fields else []
    return subprocess.run(
        args, capture_output=True, text=True, env={**os.environ, **env}, timeout=300, check=False
    )


def test_an_overwritten_object_is_read_anew_through_the_cache(
    tmp_path: Path, started: server_seaweedfs.Server | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object overwritten in place (same key, same size, a new ETag): a cache that
    validates at opening serves the new values, one that never validates the old ones
    (whole), and one lacking bytes of the old version refuses rather than mix them."""
    server = _use(started, monkeypatch)
    first, second = same_size_pair(tmp_path)
    old, new = (_dump_jsonl(p, {}) for p in (first, second))
    assert old.returncode == new.returncode == 0 and old.stdout != new.stdout
    key = "overwritten.root"
    etag_before = server.put(key, first.read_bytes())
    url = server.url(key)
    full, partial = tmp_path / "full", tmp_path / "partial"

    def cached(
        cache: Path, validate: str, fields: list[str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return _dump_jsonl(url, {"RNTUPLE_CACHE_DIR": str(cache), "RNTUPLE_CACHE_VALIDATE": validate}, fields)

    assert cached(full, "open").stdout == old.stdout
    assert cached(partial, "open", ["x"]).stdout == _dump_jsonl(first, {}, ["x"]).stdout
    etag_after = server.put(key, second.read_bytes())
    assert etag_after != etag_before

    server.clear_log()
    assert cached(full, "never").stdout == old.stdout
    assert server.requests() == [], "never: no request at all"
    mixed = cached(partial, "never")
    assert mixed.returncode == 1, mixed.stdout[:300]
    assert "changed at its origin" in mixed.stderr, mixed.stderr
    for cache in (full, partial):
        got = cached(cache, "open")
        assert got.returncode == 0, got.stderr
        assert got.stdout == new.stdout
    assert cached(full, "never").stdout == new.stdout
    stats = subprocess.run(
        [str(require_rntuple_bin()), "cache", "stats", "--json", "--cache-dir", str(full)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(stats.stdout)["counters"]["stale_versions"] >= 1
