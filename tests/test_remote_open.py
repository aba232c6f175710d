"""Opening a remote file costs a fixed number of requests, whatever its number of cluster
groups, and every reading command reads through the planned, vectored path.

A merged file (30 copies of ``examples/events.root``: a cluster group per input
cluster, 180 in all) and a file our writer made with a checkpoint every cluster (200
cluster groups) are served by nginx and xrootd on loopback. The servers' own logs count
the requests (nginx's access log; xrootd's ``xrootd.trace request``), independently of
the client's counters:

- opening (``rntuple info``): at most 2 requests over HTTP; over XRootD 3 round trips
  (kXR_open, a kXR_readv of the two ends, one of every page list); over S3 (SeaweedFS)
  two round trips and no HEAD: the two ends at once, then every page list outside them
  at once (S3 has no multi-range GET: one GET each);
- ``dump --json --fields MET_pt,Jet_pt``: at most 4 requests over HTTP in all, its output
  equal to the local file's; ``show`` and ``verify`` likewise few.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
import server_http
import server_seaweedfs
import server_xrootd
from conftest import REPO_ROOT, require_rntuple_bin
from netutil import backdate

import rntuple


def _cli(*args: str) -> str:
    out = subprocess.run(
        [str(require_rntuple_bin()), *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _cluster_groups(path: Path) -> int:
    match = re.search(r"^cluster groups: (\d+)$", _cli("info", str(path)), re.MULTILINE)
    assert match, "info prints the cluster groups"
    return int(match.group(1))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A merged file and a checkpointed file with many cluster groups each."""
    root = tmp_path_factory.mktemp("groups")
    inputs = []
    for i in range(30):
        copy = root / f"in{i}.root"
        shutil.copy(REPO_ROOT / "examples" / "events.root", copy)
        inputs.append(str(copy))
    _cli("merge", str(root / "merged.root"), *inputs)
    for name in inputs:
        Path(name).unlink()
    n = 80_000
    table = pa.table(
        {
            "x": pa.array(range(n), pa.int64()),
            "v": pa.array([[float(i)] * (i % 4) for i in range(n)], pa.list_(pa.float32())),
        }
    )
    # Small clusters, a checkpoint (cluster group) after each.
    with rntuple.recreate(root / "checkpointed.root", checkpoint_every=1, cluster_size=800) as f:
        f["Events"] = table
    assert _cluster_groups(root / "merged.root") >= 168
    assert _cluster_groups(root / "checkpointed.root") >= 168
    backdate(root)
    return root


def _requests_during(server: server_http.Server, *args: str) -> tuple[int, str]:
    server.clear_log()
    out = _cli(*args)
    return len(server.requests()), out


@pytest.mark.parametrize("name", ["merged.root", "checkpointed.root"])
def test_opening_over_http_takes_at_most_two_requests(name: str, nginx: server_http.Server) -> None:
    url = nginx.url(name)
    count, out = _requests_during(nginx, "info", "--stats", url)
    print(f"{name}: {count} requests to open; client: {out.splitlines()[-1]}")
    assert count <= 2, nginx.requests()
    # The client counts the same requests.
    assert re.search(rf"^opening: {count} requests", out, re.MULTILINE), out


def test_dump_show_and_verify_use_the_planned_vectored_read(nginx: server_http.Server, served: Path) -> None:
    url = nginx.url("merged.root")
    fields = ["--fields", "MET_pt,Jet_pt"]
    count, remote = _requests_during(nginx, "dump", url, "--json", *fields)
    local = _cli("dump", str(served / "merged.root"), "--json", *fields)
    print(f"dump: {count} requests")
    assert remote == local
    assert count <= 4, nginx.requests()
    count, remote = _requests_during(nginx, "show", url, *fields)
    assert remote == _cli("show", str(served / "merged.root"), *fields)
    print(f"show: {count} requests")
    assert count <= 4
    count, out = _requests_during(nginx, "verify", url)
    assert out.startswith("OK"), out
    print(f"verify: {count} requests")
    # Every page of every field: two opening requests, then pages in few large ones.
    assert count <= 6, nginx.requests()


def test_opening_over_xrootd_takes_three_round_trips(served: Path) -> None:
    server = server_xrootd.start(served, extra_config=["xrootd.trace request"])
    try:
        for name in ["merged.root", "checkpointed.root"]:
            log_before = len(server.log().splitlines())
            out = _cli("info", "--stats", server.url(name))
            lines = server.log().splitlines()[log_before:]
            requests = [
                (m.group(1), m.group(2))
                for m in (re.search(r" (\S+@\S+) Xrootd_Protocol: \d+ req=(\w+)", line) for line in lines)
                if m
            ]
            print(f"{name}: {requests}; {out.splitlines()[-1]}")
            opening = next(session for session, kind in requests if kind == "open")
            # The open (the readv limits' query goes in the same write: no round trip
            # of its own), then the two ends and every page list: one vectored read
            # each, whichever connection of the pool carries it. The pool's other
            # connections open the file in the background, for the reads to come.
            on_session = [kind for session, kind in requests if session == opening]
            assert on_session[:2] == ["open", "query"], on_session
            handshake = ("protocol", "login", "auth", "open", "query", "close")
            reads = [kind for _, kind in requests if kind not in handshake]
            assert reads.count("readv") == len(reads) <= 2, requests
    finally:
        server.stop()


def test_opening_over_s3_takes_two_round_trips_and_no_head(served: Path) -> None:
    server = server_seaweedfs.start(served)
    try:
        env = {**os.environ, **server.env()}
        for name in ["merged.root", "checkpointed.root"]:
            server.clear_log()
            out = subprocess.run(
                [str(require_rntuple_bin()), "info", "--stats", server.url(name)],
                capture_output=True,
                text=True,
                env=env,
                timeout=300,
                check=False,
            )
            assert out.returncode == 0, out.stderr
            logged = [r for r in server.requests() if r["path"].endswith(name)]
            counted = int(re.search(r"^opening: (\d+) requests", out.stdout, re.MULTILINE).group(1))
            print(f"{name}: {len(logged)} requests at the server, {out.stdout.splitlines()[-1]}")
            assert [r for r in logged if r["method"] != "GET"] == [], "no HEAD"
            assert len(logged) == counted
    finally:
        server.close()
