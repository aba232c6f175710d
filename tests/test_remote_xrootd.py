"""Reading over ``root://`` from a real XRootD server (Debian's ``xrootd-server``, started
on loopback by :mod:`server_xrootd`), compared with reading the same files locally.

- ``rntuple dump --json`` of a ``root://`` URL prints exactly what it prints for the
  local file: every conformance case, the ROOT-written multi-cluster files of
  ``rootgen.SPECS``, and a bigger ROOT-written file (about 10 MB, 300 clusters, 8 cluster
  groups), whole and with a field and entry selection;
- ``io_probe`` reads the same bytes as locally (xxh3 of every range), with one
  ``kXR_readv`` per ``readv_iov_max`` segments (ranges longer than ``readv_ior_max`` count
  as several segments) and one ``kXR_read`` per single read;
- a missing file is a clear not-found error;
- ``roots://`` (TLS) and ``unix`` authentication against a server that requires it give
  the same dump; a server certificate from an unknown CA is refused;
- the server killed in the middle of a read: a remote error after the retries, or, when
  the server is restarted during the retries, the complete and right output.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pwd
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import conformance_data
import pytest
import server_xrootd
from conftest import require_rntuple_bin, rust_tool
from netutil import tried

import rootgen

#: The conformance files (without the data, one pseudo-case whose test fails saying so).
CASES = [f"{case}.root" for case in conformance_data.cases()]
#: The bigger multi-cluster file: rootgen's all-types schema, 40k entries.
BIG_SPEC = dataclasses.replace(
    rootgen.SPECS_BY_NAME["multicluster.root"],
    filename="big_multicluster.root",
    n_entries=40_000,
    group_every=5_000,
    min_clusters=200,
    min_cluster_groups=8,
)
#: The protocol's vector-read limits (XProtocol.hh: maxRvecsz, maxRVdsz), which
#: xrootd 5 reports for ``kXR_query config readv_iov_max readv_ior_max``.
READV_IOV_MAX = 1024
READV_IOR_MAX = 2 * 1024 * 1024 - 16
#: What a remote source reads when it opens (io/edges.rs): the first 64 KiB and the last
#: 128 KiB, in one vectored request.
EDGE_HEAD = 64 << 10
EDGE_TAIL = 128 << 10


def io_probe_bin() -> Path:
    """The io_probe test tool (``$IO_PROBE_BIN`` overrides it)."""
    return rust_tool("io_probe", "IO_PROBE_BIN")


def run(
    cmd: list[str], timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, check=False)


def dump(target: str, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run([str(require_rntuple_bin()), "dump", "--json", *options, target], env=env)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, generated: dict[str, Path]) -> Path:
    """The directory the server exports: conformance cases, rootgen's files, the big file."""
    root = tmp_path_factory.mktemp("xrootd_served")
    (root / "conformance").mkdir()
    for case in CASES:
        shutil.copy(conformance_data.write_file(case.removesuffix(".root")), root / "conformance" / case)
    (root / "generated").mkdir()
    for name, path in generated.items():
        shutil.copy(path, root / "generated" / name)
    big = rootgen.write(BIG_SPEC, root)
    structure = rootgen.describe(big)
    assert structure["n_clusters"] >= BIG_SPEC.min_clusters, structure["n_clusters"]
    assert structure["n_cluster_groups"] >= BIG_SPEC.min_cluster_groups, structure["n_cluster_groups"]
    return root


@pytest.fixture(scope="module")
def server(served: Path) -> Iterator[server_xrootd.Server]:
    srv = server_xrootd.start(served)
    try:
        yield srv
    finally:
        srv.stop()


def test_conformance_suite_is_there() -> None:
    assert len(CASES) == 51, f"expected the 51 validation cases in {conformance_data.require()}"


@pytest.mark.parametrize("case", CASES)
def test_conformance_dump_equals_local(case: str, served: Path, server: server_xrootd.Server) -> None:
    local = dump(str(served / "conformance" / case))
    remote = dump(server.url(f"conformance/{case}"))
    assert remote.stdout == local.stdout
    assert remote.returncode == local.returncode, remote.stderr
    if local.returncode != 0:
        # The same error (structure.feature_flag), naming the URL instead of the path.
        message = local.stderr.replace(str(served / "conformance" / case), server.url(f"conformance/{case}"))
        assert remote.stderr == message


@pytest.mark.parametrize("name", [s.filename for s in rootgen.SPECS] + [BIG_SPEC.filename])
def test_multicluster_dump_equals_local(name: str, served: Path, server: server_xrootd.Server) -> None:
    relative = name if name == BIG_SPEC.filename else f"generated/{name}"
    local = dump(str(served / relative))
    assert local.returncode == 0, local.stderr
    remote = dump(server.url(relative))
    assert remote.returncode == 0, remote.stderr
    assert len(json.loads(local.stdout)) > 1000
    assert remote.stdout == local.stdout


def test_selection_dump_equals_local(served: Path, server: server_xrootd.Server) -> None:
    options = ["--fields", "vf,str,map,var", "--entries", "1234:33333"]
    local = dump(str(served / BIG_SPEC.filename), *options)
    assert local.returncode == 0, local.stderr
    entries = json.loads(local.stdout)
    assert len(entries) == 33333 - 1234 and set(entries[0]) == {"vf", "str", "map", "var"}
    remote = dump(server.url(BIG_SPEC.filename), *options)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout


def _probe(location: str, ranges: list[tuple[int, int]], vectored: bool) -> dict[str, Any]:
    cmd = [str(io_probe_bin()), location, *(["--vectored"] if vectored else [])]
    cmd += [f"{o}:{n}" for o, n in ranges]
    out = run(cmd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_io_probe_digests_and_request_counts(served: Path, server: server_xrootd.Server) -> None:
    path = served / BIG_SPEC.filename
    size = path.stat().st_size
    # Ranges outside the edges a remote source reads when it opens, so that each one is
    # read over the network: 2500 small ranges and two longer than one readv segment.
    lo, hi = EDGE_HEAD, size - EDGE_TAIL
    small = [(lo + (i * 3989) % (hi - lo - 4096), 1 + (i * 37) % 4000) for i in range(2500)]
    long = [(lo + 1000, READV_IOR_MAX + 5000), (hi - 2 * READV_IOR_MAX - 10, 2 * READV_IOR_MAX + 1)]
    ranges = small + long
    assert hi - lo > 3 * READV_IOR_MAX

    local = _probe(str(path), ranges, vectored=True)
    remote = _probe(server.url(BIG_SPEC.filename), ranges, vectored=True)
    assert remote["size"] == local["size"] == size
    assert remote["ranges"] == local["ranges"], "same bytes (xxh3) for every range"
    segments = len(small) + sum(math.ceil(n / READV_IOR_MAX) for _, n in long)
    m = remote["metrics"]
    print(f"\nvectored: {len(ranges)} ranges, {segments} segments: {m}")
    # One vectored request at opening (the file's edges), then ceil(segments / limit).
    assert m["vector_requests"] == 1 + math.ceil(segments / READV_IOV_MAX)
    assert m["requests"] == m["vector_requests"]
    assert m["ranges"] == 2 + segments
    assert m["bytes_read"] == EDGE_HEAD + EDGE_TAIL + sum(n for _, n in ranges)

    singles = ranges[:40] + long
    local = _probe(str(path), singles, vectored=False)
    remote = _probe(server.url(BIG_SPEC.filename), singles, vectored=False)
    assert remote["ranges"] == local["ranges"]
    m = remote["metrics"]
    assert (m["requests"], m["vector_requests"]) == (1 + len(singles), 1)
    assert m["bytes_read"] == EDGE_HEAD + EDGE_TAIL + sum(n for _, n in singles)


def test_missing_file_is_not_found(server: server_xrootd.Server) -> None:
    url = server.url("conformance/no_such_file.root")
    out = dump(url)
    assert out.returncode != 0
    assert url in out.stderr and "no such file" in out.stderr.lower(), out.stderr
    assert "attempts" not in out.stderr, "not-found is not retried"


def test_tls_and_unix_authentication(served: Path, tmp_path: Path) -> None:
    local = dump(str(served / BIG_SPEC.filename))
    assert local.returncode == 0, local.stderr
    srv = server_xrootd.start(served, tls=True, auth=["unix"])
    try:
        for tls in (False, True):
            remote = dump(srv.url(BIG_SPEC.filename, tls=tls), env=srv.env())
            assert remote.returncode == 0, remote.stderr
            assert remote.stdout == local.stdout
        # Trusting another CA only, the server's certificate is refused (and not retried).
        server_xrootd.make_certificates(tmp_path)
        url = srv.url(BIG_SPEC.filename, tls=True)
        refused = dump(url, env={"SSL_CERT_FILE": str(tmp_path / "ca.pem")})
        assert refused.returncode != 0
        assert url in refused.stderr and "invalid peer certificate" in refused.stderr, refused.stderr
        assert "attempts" not in refused.stderr, refused.stderr
        # The server authenticated both sessions as this user (its log: "login as NAME"),
        # one of them over TLS.
        user = pwd.getpwuid(os.geteuid()).pw_name
        logins = [line for line in srv.log().splitlines() if f"login as {user}" in line]
        assert len(logins) >= 2 and any("TLSv1." in line for line in logins), srv.log()[-2000:]
    finally:
        srv.stop()


@pytest.mark.parametrize("restart", [False, True])
def test_server_killed_mid_read(restart: bool, served: Path) -> None:
    """The dump streams its JSON: with its stdout pipe left full, the reader is stopped in
    the middle of the file while the server is killed; then the rest is read."""
    local = dump(str(served / BIG_SPEC.filename))
    assert local.returncode == 0, local.stderr
    srv = server_xrootd.start(served)
    proc = None
    try:
        url = srv.url(BIG_SPEC.filename)
        # Without a restart, five attempts (not the default four): their backoff, 1.5 s,
        # is a lower bound of the time to give up. With one, nine: the backoff (16 s in
        # all) leaves the restart all the time a loaded machine may need.
        retries = 8 if restart else 4
        proc = subprocess.Popen(
            [str(require_rntuple_bin()), "dump", "--json", url, "--retries", str(retries)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Small bunches: the read fetches a few clusters ahead, not the whole file,
            # so pages are still to come when the server dies.
            env={**os.environ, "RNTUPLE_BUNCH_BYTES": "16 KiB", "RNTUPLE_READ_AHEAD_BYTES": "64 KiB"},
        )
        assert proc.stdout is not None and proc.stderr is not None
        head = proc.stdout.read(100_000)
        time.sleep(0.5)
        assert proc.poll() is None, "the dump must still be running (blocked on its output)"
        start = time.monotonic()
        srv.kill()
        restarter = None
        if restart:
            # Back while the client retries (its backoff: 0.1 + 0.2 + 0.4 + 0.8 + ... s).
            restarter = threading.Thread(target=lambda: (time.sleep(0.3), srv.restart()))
            restarter.start()
        rest = proc.stdout.read()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
        seconds = time.monotonic() - start
        if restarter is not None:
            restarter.join()
        output = (head + rest).decode()
        if restart:
            assert code == 0, err
            assert output == local.stdout, "a read that succeeds gives the right values"
        else:
            assert code != 0, "without the server, the read cannot finish"
            assert len(output) < len(local.stdout) and local.stdout.startswith(output), "no wrong values"
            assert f"remote read of {url} failed" in err, err
            assert tried(err) == (5, 4), err
            assert seconds >= 1.5, f"the retries' backoff: {seconds:.2f} s"
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        srv.stop()
