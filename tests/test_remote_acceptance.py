"""Remote reading over every protocol, against real servers on loopback (nginx for
http://, xrootd for root://, moto's S3 server for s3://):

- the values read remotely equal the local file's, for all fields and for a selection;
- reading 5 of 40 fields of a multi-cluster NanoAOD-like file moves at most 1.1x the
  compressed size of those fields' pages, opening included (bytes needed, bytes moved,
  requests and vectored requests are printed);
- with 20 ms of added round-trip time, reading every field of a 500 MB file over
  root:// and http:// takes at most 1.3x the local read of the same run;
- killing the server mid-read, then restarting it, ends in the right values (after the
  source's retries) or, without a restart, in a clear RemoteError: never wrong values.

Latency: this machine's kernel has no ``tc netem`` (CONFIG_NET_SCH_NETEM is not set), so
the delay comes from ``delay_proxy`` (``crates/rntuple-cli/examples/delay_proxy.rs``), a
loopback TCP proxy holding every byte 10 ms in each direction. When ``tc`` can add netem
to a network namespace's loopback, that is not used yet: the proxy is (a known gap).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import REPO_ROOT, require_rntuple_bin

import rntuple

PROTOCOLS = ["http", "xrootd", "s3"]
ONE_WAY_DELAY_MS = 10


def _example(name: str, env: str) -> Path:
    path = Path(os.environ.get(env, REPO_ROOT / "target" / "release" / "examples" / name))
    if not path.is_file():
        pytest.fail(f"{path} is missing: cargo build --release -p rntuple-cli --example {name}")
    return path


def _nanoaod_like(n: int, seed: int) -> pa.Table:
    """40 NanoAOD-like fields: 8 event scalars and 4 collections of 8 float members
    (``Jet_pt``, ...), with per-event multiplicities as in physics data."""
    rng = np.random.default_rng(seed)
    columns: dict[str, pa.Array] = {
        "run": pa.array(np.full(n, 1, dtype=np.uint32)),
        "event": pa.array(np.arange(n, dtype=np.uint64)),
        "MET_pt": pa.array(rng.exponential(30, n).astype(np.float32)),
        "MET_phi": pa.array(rng.uniform(-3.14, 3.14, n).astype(np.float32)),
        "PV_npvs": pa.array(rng.poisson(30, n).astype(np.int32)),
        "PV_z": pa.array(rng.normal(0, 5, n).astype(np.float32)),
        "genWeight": pa.array(rng.normal(1, 0.1, n).astype(np.float32)),
        "HLT_IsoMu24": pa.array(rng.random(n) < 0.3),
    }
    for coll, mean in [("Jet", 5), ("Electron", 1), ("Muon", 1.5), ("Photon", 2)]:
        counts = rng.poisson(mean, n).astype(np.int64)
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        total = int(counts.sum())
        for member in ["pt", "eta", "phi", "mass", "charge", "dxy", "dz", "iso"]:
            values = pa.array(rng.normal(20, 10, total).astype(np.float32))
            columns[f"{coll}_{member}"] = pa.ListArray.from_arrays(offsets, values)
    assert len(columns) == 40
    return pa.table(columns)


@pytest.fixture(scope="module")
def served_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory served by every server: a multi-cluster 40-field file (about 60 MB)."""
    root = tmp_path_factory.mktemp("served")
    # 4 MiB clusters: a dozen clusters, several bunches per read.
    with rntuple.recreate(root / "nano.root", cluster_size="4 MiB") as f:
        f["Events"] = _nanoaod_like(400_000, seed=7)
    return root


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a file of about 500 MB (random-valued, so zstd cannot shrink it)."""
    root = tmp_path_factory.mktemp("big")
    with rntuple.recreate(root / "big.root", compression="zstd:1") as f:
        first = True
        for seed in range(4):
            table = _nanoaod_like(500_000, seed=100 + seed)
            if first:
                f["Events"] = table
                first = False
            else:
                f["Events"].extend(table)
    size = (root / "big.root").stat().st_size
    assert size > 450e6, f"the latency test wants a ~500 MB file, got {size / 1e6:.0f} MB"
    return root


def _start(protocol: str, root: Path) -> Any:
    if protocol == "http":
        import server_http as module
    elif protocol == "xrootd":
        import server_xrootd as module
    else:
        import server_s3 as module
    return module.start(root)


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Sets a server's client environment (S3 credentials and endpoint)."""

    def apply(server: Any) -> dict[str, str]:
        env = dict(server.env()) if hasattr(server, "env") else {}
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        return env

    yield apply


def _read_bench(location: str, env: dict[str, str], fields: list[str] | None = None) -> dict[str, Any]:
    cmd = [str(require_rntuple_bin()), "read-bench", location, "--json"]
    if fields:
        cmd += ["--fields", ",".join(fields)]
    out = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_remote_values_equal_local(protocol: str, served_dir: Path, server_env: Any) -> None:
    server = _start(protocol, served_dir)
    try:
        server_env(server)
        local = rntuple.open(str(served_dir / "nano.root"))["Events"]
        remote = rntuple.open(server.url("nano.root"))["Events"]
        assert len(local.clusters) > 4
        for fields in [None, ["Jet_pt", "Muon_eta", "MET_pt"]]:
            want = local.arrays(fields, library="arrow")
            got = remote.arrays(fields, library="arrow")
            assert got.equals(want), f"{protocol} {fields}"
        m = remote.metrics()
        assert m["unplanned_pages"] == 0
        assert m["vector_requests"] >= 1 or protocol == "s3", m
    finally:
        server.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_five_of_forty_fields_move_at_most_1_1x_their_pages(
    protocol: str, served_dir: Path, server_env: Any
) -> None:
    fields = ["Jet_pt", "Jet_eta", "Muon_pt", "MET_pt", "PV_npvs"]
    server = _start(protocol, served_dir)
    try:
        env = server_env(server)
        r = _read_bench(server.url("nano.root"), env, fields)
    finally:
        server.stop()
    moved = r["open_bytes_read"] + r["bytes_read"]
    needed = r["bytes_used"]
    print(
        f"\n{protocol}: needed {needed} B, moved {moved} B ({moved / needed:.3f}x; opening "
        f"{r['open_bytes_read']} B in {r['open_requests']} requests), {r['requests']} requests, "
        f"{r['vector_requests']} vectored, {r['ranges']} ranges"
    )
    assert r["fields"] == 5
    assert moved <= 1.1 * needed, f"{protocol}: moved {moved} for {needed} needed"


def _proxied(url: str, proxy_port: int) -> tuple[str, str]:
    """The URL through the proxy, and the server's host:port."""
    parts = urllib.parse.urlsplit(url)
    target = f"{parts.hostname}:{parts.port}"
    return parts._replace(netloc=f"127.0.0.1:{proxy_port}").geturl(), target


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("protocol", ["xrootd", "http"])
def test_read_all_with_20ms_rtt_within_1_3x_local(protocol: str, big_dir: Path) -> None:
    server = _start(protocol, big_dir)
    proxy = None
    try:
        port = _free_port()
        url, target = _proxied(server.url("big.root"), port)
        proxy = subprocess.Popen(
            [str(_example("delay_proxy", "DELAY_PROXY_BIN")), str(port), target, str(ONE_WAY_DELAY_MS)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
        local_path = str(big_dir / "big.root")
        _read_bench(local_path, {})  # warm the page cache
        local, remote = [], []
        for _ in range(3):
            local.append(_read_bench(local_path, {})["read_seconds"])
            r = _read_bench(url, {})
            remote.append(r["open_seconds"] + r["read_seconds"])
    finally:
        if proxy is not None:
            proxy.kill()
        server.stop()
    ratio = statistics.median(remote) / statistics.median(local)
    print(
        f"\n{protocol} with {2 * ONE_WAY_DELAY_MS} ms RTT: remote {statistics.median(remote):.3f} s "
        f"(open + read) vs local {statistics.median(local):.3f} s: {ratio:.2f}x; last remote read: "
        f"{r['requests']} requests, {r['vector_requests']} vectored, {r['bytes_read'] / 1e6:.0f} MB"
    )
    assert ratio <= 1.3


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("restart", [True, False])
def test_server_killed_mid_read(protocol: str, restart: bool, big_dir: Path, server_env: Any) -> None:
    fields = None  # every field: the read lasts long enough to be cut
    want = rntuple.open(str(big_dir / "big.root"))["Events"].arrays(fields, library="arrow")
    server = _start(protocol, big_dir)
    try:
        server_env(server)
        remote = rntuple.open(server.url("big.root"))["Events"]
        outcome: dict[str, Any] = {}

        def read() -> None:
            start = time.perf_counter()
            try:
                outcome["table"] = remote.arrays(fields, library="arrow")
            except Exception as e:
                outcome["error"] = e
            outcome["seconds"] = time.perf_counter() - start

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.1)
        server.kill()
        if restart:
            time.sleep(0.3)
            server.restart()
        reader.join(timeout=300)
        assert not reader.is_alive(), "the read hung"
        assert outcome["seconds"] > 0.1, (
            f"the read took {outcome['seconds']:.3f} s: over before the server was killed"
        )
        if "table" in outcome:
            assert outcome["table"].equals(want), "a read that succeeds gives the right values"
            assert restart, "without the server, the read cannot have finished"
        else:
            error = outcome["error"]
            assert isinstance(error, rntuple.RemoteError | OSError), repr(error)
            assert "127.0.0.1" in str(error) or "s3://" in str(error), str(error)
            assert not restart, f"with the server back, the retries should succeed: {error}"
    finally:
        server.stop()
