"""Reading over HTTP from a real server (nginx on loopback) gives exactly the local bytes.

- ``rntuple dump --json http://...`` prints the same JSON as for the local file, for
  every conformance case and for ROOT-written multi-cluster, late-extension, multi-key
  and sub-directory files;
- ``io_probe --vectored`` (``crates/rntuple-testkit/src/bin/io_probe.rs``) reads 1024 ranges in
  ONE request (checked in the source's counters and in nginx's access log) with the same
  digests as locally; a server refusing multi-range requests (``max_ranges 1``) or
  refusing long Range headers (nginx's default header buffers) still gives the same
  digests, through single-range requests or smaller multi-range requests;
- faults: a missing file is a clear not-found error, a stopped server a remote error
  naming the URL after retries, and neither a bearer token nor a URL password ever
  appears in the output.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import conformance_data
import pytest
import server_http
from conftest import rust_tool
from netutil import backdate, tried

#: The conformance cases (all but the one whose expected outcome is an error); without
#: the conformance data, one pseudo-case whose test fails saying so.
CASES = [case for case in conformance_data.cases() if case != "structure.feature_flag"]
#: ROOT-written files from ``rootgen`` (session fixtures ``generated``/``generated_extra``).
GENERATED = ["multicluster.root", "late_extension.root", "compression_lzma.root"]
GENERATED_EXTRA = {"multikey_zstd.root": "ntpl", "multikey_none.root": "ntpl", "subdir.root": "a/b/nt"}
#: A file of random bytes for the raw range reads.
RANDOM_FILE = "random.bin"
RANDOM_SIZE = 4 << 20
#: Bytes every remote open reads up front from the file's start and end, in one vectored
#: request (``io::EdgeCached``); the probed ranges stay clear of them.
EDGE_HEAD = 64 << 10
EDGE_TAIL = 128 << 10
TIMEOUT = 300


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a command, capturing its output as text."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, env=full_env, check=False)


def io_probe_path() -> Path:
    """The io_probe test tool (``$RNTUPLE_IO_PROBE`` overrides it)."""
    return rust_tool("io_probe", "RNTUPLE_IO_PROBE")


@pytest.fixture(scope="module")
def io_probe() -> Path:
    path = io_probe_path()
    assert path.is_file(), f"io_probe not found at {path}"
    return path


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    generated: dict[str, Path],
    generated_extra: dict[str, Path],
) -> Path:
    """The directory nginx serves: copies of the conformance and generated files."""
    root = tmp_path_factory.mktemp("served")
    for case in CASES:
        shutil.copy(conformance_data.write_file(case), root / f"{case}.root")
    for name in GENERATED:
        shutil.copy(generated[name], root / name)
    for name in GENERATED_EXTRA:
        shutil.copy(generated_extra[name], root / name)
    (root / RANDOM_FILE).write_bytes(random.Random(7).randbytes(RANDOM_SIZE))
    backdate(root)
    return root


def nginx_fixture(name: str, **options: Any) -> Callable[..., Iterator[server_http.Server]]:
    """A module-scoped fixture called ``name`` running nginx on ``served`` with ``options``."""

    @pytest.fixture(scope="module", name=name)
    def fixture(served: Path) -> Iterator[server_http.Server]:
        with server_http.serving(served, **options) as server:
            yield server

    return fixture


nginx = nginx_fixture("nginx")
#: Refuses multi-range requests: answers them with the whole file (HTTP 200).
nginx_one_range = nginx_fixture("nginx_one_range", max_ranges=1)
#: nginx's default header buffers: a Range header of 1024 ranges is too long (HTTP 400).
nginx_small_headers = nginx_fixture("nginx_small_headers", header_buffers="4 8k")


def dump(rntuple_bin: Path, target: str, *options: str, env: dict[str, str] | None = None) -> str:
    """``rntuple dump --json TARGET`` (its stdout); fails the test with stderr if it fails."""
    result = run([str(rntuple_bin), "dump", "--json", target, *options], env=env)
    assert result.returncode == 0, f"rntuple dump {target} failed:\n{result.stderr}"
    return result.stdout


def assert_remote_dump_equals_local(
    rntuple_bin: Path, server: server_http.Server, name: str, *options: str
) -> None:
    """The dump over HTTP equals the dump of the local file, and came by range requests."""
    local = dump(rntuple_bin, str(server.root / name), *options)
    server.clear_log()
    remote = dump(rntuple_bin, server.url(name), *options)
    assert remote == local
    assert json.loads(remote) is not None
    requests = server.requests()
    assert requests, "nothing reached the server"
    # Opening asks for both ends in one request; a file smaller than those two ends
    # comes whole (nginx answers overlapping ranges with the file, HTTP 200).
    size = (server.root / name.split(":")[0]).stat().st_size
    first = requests[0]
    assert first["range"] == f"bytes=0-{EDGE_HEAD - 1},-{EDGE_TAIL}", first
    assert first["status"] == "206" or (first["status"] == "200" and size <= EDGE_HEAD + EDGE_TAIL)
    assert all(r["status"] == "206" and r["range"].startswith("bytes=") for r in requests[1:]), requests


@pytest.mark.parametrize("case", CASES)
def test_dump_of_conformance_case_over_http_equals_local(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server, case: str
) -> None:
    assert_remote_dump_equals_local(rntuple_bin(), nginx, f"{case}.root")


@pytest.mark.parametrize("name", GENERATED)
def test_dump_of_multi_cluster_file_over_http_equals_local(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server, name: str
) -> None:
    assert_remote_dump_equals_local(rntuple_bin(), nginx, name)


def test_dump_of_an_entry_and_field_subset_over_http_equals_local(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server
) -> None:
    options = ("--entries", "1234:3777", "--fields", "vf,str,map,late_vvi")
    assert_remote_dump_equals_local(rntuple_bin(), nginx, "late_extension.root:ntpl", *options)


@pytest.mark.parametrize("name", sorted(GENERATED_EXTRA))
def test_dump_of_multi_key_and_subdirectory_files_over_http_equals_local(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server, name: str
) -> None:
    # Multi-key blobs are read with one vectored call of their chunks.
    assert_remote_dump_equals_local(rntuple_bin(), nginx, f"{name}:{GENERATED_EXTRA[name]}")


def test_multi_key_dump_with_multi_range_refused_equals_local(
    rntuple_bin: Callable[[], Path], nginx_one_range: server_http.Server
) -> None:
    name = "multikey_zstd.root:ntpl"
    local = dump(rntuple_bin(), str(nginx_one_range.root / name))
    assert dump(rntuple_bin(), nginx_one_range.url(name)) == local


# ----------------------------------------------------------------------------- raw ranges


def spread_ranges(count: int, seed: int) -> list[tuple[int, int]]:
    """``count`` disjoint, non-touching ranges ``(offset, length)`` over the random file,
    outside the bytes an open reads up front."""
    rng = random.Random(seed)
    slot = (RANDOM_SIZE - EDGE_HEAD - EDGE_TAIL) // count
    ranges = []
    for i in range(count):
        length = rng.randint(1, slot // 2)
        offset = EDGE_HEAD + i * slot + rng.randint(1, slot - length - 1)
        ranges.append((offset, length))
    rng.shuffle(ranges)
    return ranges


def probe(io_probe: Path, location: str, ranges: list[tuple[int, int]]) -> dict[str, Any]:
    """io_probe's JSON for a vectored read of ``ranges`` at ``location``."""
    args = [str(io_probe), location, "--vectored", *(f"{o}:{n}" for o, n in ranges)]
    result = run(args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def probe_local_and_remote(
    io_probe: Path, server: server_http.Server, ranges: list[tuple[int, int]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """:func:`probe` of ``ranges`` of :data:`RANDOM_FILE` read from the disk, then through
    ``server`` (whose log then holds the remote read's requests only); the two read the
    same bytes."""
    local = probe(io_probe, str(server.root / RANDOM_FILE), ranges)
    server.clear_log()
    remote = probe(io_probe, server.url(RANDOM_FILE), ranges)
    assert remote["ranges"] == local["ranges"]
    return local, remote


def range_count(range_header: str) -> int:
    """The number of ranges in a logged Range header."""
    return range_header.removeprefix("bytes=").count(",") + 1


@pytest.mark.parametrize("count", [2, 100, 1024])
def test_vectored_read_is_one_request_with_local_digests(
    io_probe: Path, nginx: server_http.Server, count: int
) -> None:
    ranges = spread_ranges(count, seed=count)
    local, remote = probe_local_and_remote(io_probe, nginx, ranges)
    assert remote["size"] == local["size"] == RANDOM_SIZE
    assert [r["read"] for r in remote["ranges"]] == [n for _, n in ranges]
    metrics = remote["metrics"]
    # Opening: the head and the tail in one two-range request whose parts' Content-Range
    # tell the size; then the ranges.
    assert metrics["vector_requests"] == 2
    assert metrics["requests"] == 1 + 1, "ONE request for all the ranges"
    requested = sum(n for _, n in ranges)
    edges = EDGE_HEAD + EDGE_TAIL
    # Multipart overhead: about 100 bytes of headers per part.
    assert requested + edges < metrics["bytes_read"] < requested + edges + 200 * (count + 2)
    logged = nginx.requests()
    assert logged[0]["range"] == f"bytes=0-{EDGE_HEAD - 1},-{EDGE_TAIL}"
    assert [(r["status"], range_count(r["range"])) for r in logged] == [
        ("206", 2),
        ("206", count),
    ]
    print(f"\n{count} ranges: {requested} bytes asked, {metrics['bytes_read']} bytes in bodies")


def test_server_refusing_multi_range_gets_parallel_single_ranges(
    io_probe: Path, nginx_one_range: server_http.Server
) -> None:
    ranges = spread_ranges(64, seed=3)
    remote = probe_local_and_remote(io_probe, nginx_one_range, ranges)[1]
    metrics = remote["metrics"]
    # Opening asks for head and tail in one request, refused (the whole file, HTTP 200,
    # dropped unread): then the two as single ranges at once, and from then on single
    # ranges only (the 64 ranges too).
    assert metrics["vector_requests"] == 1, "the one refused multi-range request"
    assert metrics["requests"] == 1 + 2 + 64
    logged = nginx_one_range.requests()
    statuses = sorted((r["status"], range_count(r["range"])) for r in logged)
    assert statuses == [("200", 2)] + [("206", 1)] * (2 + 64)


def test_range_header_too_long_for_the_server_is_split(
    io_probe: Path, nginx_small_headers: server_http.Server
) -> None:
    ranges = spread_ranges(1024, seed=11)
    probe_local_and_remote(io_probe, nginx_small_headers, ranges)
    logged = nginx_small_headers.requests()
    served = [range_count(r["range"]) for r in logged if r["status"] == "206"]
    refused = [r for r in logged if r["status"] == "400"]
    assert refused, "nginx's default 8 KiB header buffer refuses 1024 ranges"
    # Every range was served by a multi-range request (none fell back to single ranges):
    # head and tail, then the 1024 in smaller requests.
    assert sum(served) == 2 + 1024 and max(served) < 1024
    assert all(n > 1 for n in served[2:])


# ----------------------------------------------------------------------------- faults

TOKEN = "tok-9c41e7-never-printed"
PASSWORD = "pw-5d2b80-never-printed"


def test_missing_file_is_a_clear_not_found_error(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server
) -> None:
    url = nginx.url("no/such/file.root")
    result = run([str(rntuple_bin()), "dump", "--json", url], env={"BEARER_TOKEN": TOKEN})
    assert result.returncode != 0
    assert url in result.stderr and "404" in result.stderr, result.stderr
    assert TOKEN not in result.stderr + result.stdout
    assert len(nginx.requests()) >= 1


def test_empty_file_is_the_same_clear_error_as_locally(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server
) -> None:
    (nginx.root / "empty.root").write_bytes(b"")
    local = run([str(rntuple_bin()), "info", str(nginx.root / "empty.root")])
    remote = run([str(rntuple_bin()), "info", nginx.url("empty.root")])
    assert local.returncode == remote.returncode == 1
    # nginx answers a range of an empty file with HTTP 200 and no bytes: still an
    # empty file, not a server that ignores ranges.
    assert "is not a ROOT file: it has only 0 bytes" in local.stderr
    assert remote.stderr == local.stderr.replace(str(nginx.root / "empty.root"), nginx.url("empty.root"))


def test_stopped_server_is_a_remote_error_naming_the_url_after_retries(
    rntuple_bin: Callable[[], Path], served: Path
) -> None:
    server = server_http.start(served)
    try:
        url = server.url("structure.clusters.root")
        local = dump(rntuple_bin(), str(served / "structure.clusters.root"))
        assert dump(rntuple_bin(), url) == local
        server.stop()
        start = time.monotonic()
        result = run([str(rntuple_bin()), "dump", "--json", url], env={"BEARER_TOKEN": TOKEN})
        elapsed = time.monotonic() - start
        assert result.returncode != 0
        assert url in result.stderr and tried(result.stderr) == (4, 3), result.stderr
        assert "remote" in result.stderr.lower() or "refused" in result.stderr.lower(), result.stderr
        assert TOKEN not in result.stderr + result.stdout
        assert elapsed < 60, f"gave up after {elapsed:.1f} s"
        # Killed, then restarted on the same port: readable again.
        server.restart()
        server.kill()
        assert run([str(rntuple_bin()), "dump", "--json", url]).returncode != 0
        server.restart()
        assert dump(rntuple_bin(), url) == local
    finally:
        server.kill()
        shutil.rmtree(server.workdir, ignore_errors=True)


def test_token_and_password_never_appear_in_output(
    rntuple_bin: Callable[[], Path], nginx: server_http.Server, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    name = "structure.clusters.root"
    local = dump(rntuple_bin(), str(nginx.root / name))
    # nginx ignores credentials for static files: the read succeeds, the secrets stay hidden.
    for env in ({"BEARER_TOKEN": TOKEN}, {"BEARER_TOKEN_FILE": str(token_file)}):
        result = run([str(rntuple_bin()), "dump", "--json", nginx.url(name)], env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == local
        assert TOKEN not in result.stderr
    with_password = nginx.url(name).replace("http://", f"http://reader:{PASSWORD}@")
    for target in (with_password, with_password.replace(name, "missing.root"), with_password + ":nope"):
        result = run([str(rntuple_bin()), "dump", "--json", target], env={"BEARER_TOKEN": TOKEN})
        output = result.stdout + result.stderr
        assert PASSWORD not in output and TOKEN not in output, output
    missing = run(
        [str(rntuple_bin()), "dump", "--json", with_password.replace(name, "missing.root")],
        env={"BEARER_TOKEN": TOKEN},
    )
    assert missing.returncode != 0 and "***@" in missing.stderr, missing.stderr
    # A token file that cannot be read: an error naming the file, not the token.
    result = run(
        [str(rntuple_bin()), "dump", "--json", nginx.url(name)],
        env={"BEARER_TOKEN_FILE": str(tmp_path / "absent")},
    )
    assert result.returncode != 0 and "BEARER_TOKEN_FILE" in result.stderr, result.stderr


# ----------------------------------------------------------------------------- HTTPS


def test_https_with_a_trusted_ca_equals_local_and_an_unknown_ca_fails_at_once(
    rntuple_bin: Callable[[], Path], served: Path, tmp_path: Path
) -> None:
    certificates = server_http.make_test_certificates(tmp_path / "tls")
    server = server_http.start(served, tls=certificates)
    try:
        name = "multicluster.root"
        url = server.url(name)
        assert url.startswith("https://")
        local = dump(rntuple_bin(), str(served / name))
        # SSL_CERT_FILE replaces the system roots; X509_CERT_DIR (the grid's CA directory)
        # adds its *.pem files to them.
        assert dump(rntuple_bin(), url, env={"SSL_CERT_FILE": str(certificates.ca)}) == local
        grid_dir = tmp_path / "grid-certificates"
        grid_dir.mkdir()
        shutil.copy(certificates.ca, grid_dir / "rntuple-test-ca.pem")
        assert dump(rntuple_bin(), url, env={"X509_CERT_DIR": str(grid_dir)}) == local
        # Not trusted: a certificate error, not retried.
        server.clear_log()
        start = time.monotonic()
        result = run([str(rntuple_bin()), "dump", "--json", url])
        assert result.returncode != 0
        assert "certificate" in result.stderr and url in result.stderr, result.stderr
        assert "attempts" not in result.stderr, "a certificate that does not verify is not retried"
        # At once: not after the retries' backoff, nor a timeout (30 s by default).
        assert time.monotonic() - start < 20
    finally:
        server.kill()
        shutil.rmtree(server.workdir, ignore_errors=True)
