"""Remote reading over every protocol, against real servers on loopback (nginx for
http://, xrootd for root://, moto's S3 server for s3://):

- the values read remotely equal the local file's, for all fields and for a selection,
  read at once and by ``iterate()`` (one planned stream across batches);
- reading 5 of 40 fields of a multi-cluster NanoAOD-like file moves at most 1.1x the
  compressed size of those fields' pages, opening included (bytes needed, bytes moved,
  requests and vectored requests are printed);
- with 20 ms of added round-trip time, reading every field of a 500 MB file over
  root:// and http:// gives the local values in requests of megabytes (the time against
  the local read is a benchmark: ``bench/remote.py``);
- killing the server mid-read, then restarting it, ends in the right values (after the
  source's retries) or, without a restart, in a clear RemoteError: never wrong values.

Latency: this machine's kernel has no ``tc netem`` (CONFIG_NET_SCH_NETEM is not set), so
the delay comes from ``delay_proxy`` (``crates/rntuple-testkit/src/bin/delay_proxy.rs``), a
loopback TCP proxy holding every byte 10 ms in each direction (and a new connection's
first byte one round trip more, for TCP's handshake). When ``tc`` can add netem to a
network namespace's loopback, that is not used yet: the proxy is (a known gap).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from conftest import require_rntuple_bin, rust_tool
from netutil import free_port
from remote_data import write_big, write_nanoaod_like

import rntuple

PROTOCOLS = ["http", "xrootd", "s3"]
ONE_WAY_DELAY_MS = 10


@pytest.fixture(scope="module")
def served_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory served by every server: a multi-cluster 40-field file (about 60 MB)."""
    # 4 MiB clusters: a dozen clusters, several bunches per read.
    path = tmp_path_factory.mktemp("served") / "nano.root"
    return write_nanoaod_like(path, 400_000, seed=7, cluster_size="4 MiB").parent


@pytest.fixture(scope="module")
def big_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a file of about 500 MB (random-valued, so zstd cannot shrink it)."""
    root = tmp_path_factory.mktemp("big")
    write_big(str(root / "big.root"))
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
            # Iterating: one stream over every batch (pages fetched ahead across
            # batches), batches of the local file's boundaries with its values.
            remote_batches = list(remote.iterate(fields, step_size="8 MB", library="arrow"))
            local_batches = list(local.iterate(fields, step_size="8 MB", library="arrow"))
            assert len(remote_batches) == len(local_batches) > 2
            for r, lo in zip(remote_batches, local_batches, strict=True):
                assert r.equals(lo), f"{protocol} {fields} iterate"
            assert pa.concat_tables(remote_batches).equals(want)
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


@pytest.mark.parametrize("protocol", ["xrootd", "http"])
def test_read_all_through_20ms_rtt(protocol: str, big_dir: Path) -> None:
    """Every field of the 500 MB file through 20 ms of round-trip time: the local values,
    in few round trips (opening reads the file's two ends in one request; the pages come
    in requests of many MB, several in flight). The time against the local read is
    measured by ``bench/remote.py`` (a benchmark, not a test: it depends on the machine)."""
    server = _start(protocol, big_dir)
    proxy = None
    try:
        port = free_port()
        url, target = _proxied(server.url("big.root"), port)
        proxy = subprocess.Popen(
            [str(rust_tool("delay_proxy", "DELAY_PROXY_BIN")), str(port), target, str(ONE_WAY_DELAY_MS)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
        remote = rntuple.open(url)["Events"]
        local = rntuple.open(str(big_dir / "big.root"))["Events"]
        got = remote.arrays(library="arrow")
        assert got.equals(local.arrays(library="arrow"))
        m = remote.metrics()
        size = (big_dir / "big.root").stat().st_size
        print(f"\n{protocol} through {2 * ONE_WAY_DELAY_MS} ms RTT: {m}")
        assert m["bytes_read"] <= 1.01 * size
        # Requests of megabytes: at most one per 4 MB moved, plus opening.
        assert m["requests"] <= 8 + m["bytes_read"] / 4e6, m
    finally:
        if proxy is not None:
            proxy.kill()
        server.stop()


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("restart", [True, False])
def test_server_killed_mid_read(protocol: str, restart: bool, big_dir: Path, server_env: Any) -> None:
    fields = None  # every field: the read lasts long enough to be cut
    # moto's S3 endpoint moves about 10 MB/s: a tenth of the file (50 MB) still lasts
    # seconds after the kill, where the whole file took 48 s once the server was back.
    stop = 200_000 if protocol == "s3" else None
    want = rntuple.open(str(big_dir / "big.root"))["Events"].arrays(fields, entry_stop=stop, library="arrow")
    server = _start(protocol, big_dir)
    try:
        server_env(server)
        # With a restart, nine attempts: their backoff (16 s in all) leaves the restart
        # (a new server process) all the time a loaded machine may need; without, the
        # default four.
        retries = {"retries": 8} if restart else {}
        remote = rntuple.open(server.url("big.root"), **retries)["Events"]
        outcome: dict[str, Any] = {}

        def read() -> None:
            start = time.perf_counter()
            try:
                outcome["table"] = remote.arrays(fields, entry_stop=stop, library="arrow")
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
