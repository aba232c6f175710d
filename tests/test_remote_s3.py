"""Reading ``s3://`` URLs from a real S3-compatible server (moto's, see ``server_s3.py``).

The server holds copies of real RNTuple files: the multi-cluster cases of the RNTuple
Validation Suite, more of its cases, and ROOT-written multi-cluster files (one of about
10 MB, uploaded in several parts). For each, ``rntuple dump --json s3://...`` must print
exactly what it prints for the local file. ``io_probe`` checks the bytes of ranges
(against the local file's) and the request counters: S3 has no multi-range GET, so every
range is one GET. Then the failures: a missing key or bucket, a stopped server (a
``Remote`` error after the retries, with no credential in the message) and a restart.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import conformance_data
import pytest
import server_s3
from conftest import require_rntuple_bin, rust_tool
from netutil import tried

import rootgen

#: Validation Suite cases served: both multi-cluster cases first, then a few others
#: (a compressed block over 64 KiB, nested collections, strings).
CONFORMANCE_CASES = [
    "structure.cluster_groups",
    "structure.clusters",
    "compression.block.big",
    "types.map.nested",
    "types.string",
]
#: A ROOT-written file of about 10 MB: over boto3's 8 MB multipart threshold, so its
#: ETag is a multipart one.
BIG_SPEC = rootgen.FileSpec(
    "big_multicluster.root",
    n_entries=80_000,
    compression=505,
    approx_zipped_cluster_size=512 * 1024,
    max_unzipped_page_size=64 * 1024,
    initial_unzipped_page_size=4096,
    group_every=20_000,
    min_clusters=8,
    min_cluster_groups=4,
)
#: Generated files, served under ``gen/`` (keys with a slash).
GENERATED = [
    BIG_SPEC,
    rootgen.SPECS_BY_NAME["multicluster.root"],
    rootgen.SPECS_BY_NAME["late_extension.root"],
]
SERVED = [f"{case}.root" for case in CONFORMANCE_CASES] + [f"gen/{spec.filename}" for spec in GENERATED]
#: Bytes the reader fetches up front from a remote file's start and end (``io::edges``).
EDGE_HEAD_BYTES = 64 << 10
EDGE_TAIL_BYTES = 128 << 10


def _io_probe() -> Path:
    """The io_probe test tool (``$IO_PROBE_BIN`` overrides it)."""
    return rust_tool("io_probe", "IO_PROBE_BIN")


def _client_env(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment without any AWS_* variable, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(extra)
    return env


def _run(args: list[str | Path], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(a) for a in args], capture_output=True, env=env, timeout=300, check=False)


def _dump(target: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return _run([require_rntuple_bin(), "dump", "--json", target], env)


@pytest.fixture(scope="module")
def served_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Copies of the conformance cases and the generated files, as the bucket will hold them."""
    root = tmp_path_factory.mktemp("s3_served")
    for case in CONFORMANCE_CASES:
        shutil.copy(conformance_data.write_file(case), root / f"{case}.root")
    rootgen.generate(root / "gen", GENERATED)
    return root


@pytest.fixture(scope="module")
def server(served_dir: Path) -> Iterator[server_s3.Server]:
    s = server_s3.start(served_dir)
    try:
        yield s
    finally:
        s.close()


def test_served_files_are_multi_cluster(served_dir: Path) -> None:
    """The files stay what this module claims to test with: several multi-cluster ones."""
    rntuple = require_rntuple_bin()
    multi = []
    for name in SERVED:
        info = _run([rntuple, "info", served_dir / name], dict(os.environ))
        assert info.returncode == 0, info.stderr
        clusters = next(
            int(line.split()[1]) for line in info.stdout.decode().splitlines() if line.startswith("clusters:")
        )
        if clusters > 1:
            multi.append(name)
    assert len(multi) >= 5, multi
    assert (served_dir / "gen" / BIG_SPEC.filename).stat().st_size > 8 << 20


@pytest.mark.parametrize("name", SERVED)
def test_dump_over_s3_equals_local(name: str, served_dir: Path, server: server_s3.Server) -> None:
    local = _dump(served_dir / name, _client_env({}))
    assert local.returncode == 0, local.stderr.decode()
    remote = _dump(server.url(name), _client_env(server.env()))
    assert remote.returncode == 0, remote.stderr.decode()
    assert len(json.loads(local.stdout)) > 0
    assert remote.stdout == local.stdout


def _probe(location: str | Path, ranges: list[tuple[int, int]], env: dict[str, str]) -> dict[str, Any]:
    args = [_io_probe(), location, "--vectored", *[f"{o}:{n}" for o, n in ranges]]
    out = _run(args, env)
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


# The client's rule for merging GETs (crates/rntuple/src/io/s3.rs): ranges within 64 KiB
# of each other are fetched in one GET while the span stays within 8 MiB.
COALESCE_GAP = 64 << 10
COALESCE_MAX = 8 << 20


def _spans(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The GETs the rule above makes of `ranges`: (offset, length) of each merged span."""
    spans: list[list[int]] = []
    for offset, length in sorted(ranges):
        end = offset + length
        if (
            spans
            and offset <= spans[-1][1] + COALESCE_GAP
            and max(end, spans[-1][1]) - spans[-1][0] <= COALESCE_MAX
        ):
            spans[-1][1] = max(end, spans[-1][1])
        else:
            spans.append([offset, end])
    return [(a, b - a) for a, b in spans]


def _probe_reads_in_these_gets(
    served_dir: Path,
    server: server_s3.Server,
    name: str,
    ranges: list[tuple[int, int]],
    spans: list[tuple[int, int]],
) -> None:
    """io_probe reads ``ranges`` of ``name`` over S3 as it reads them locally, in the two
    edge reads of opening and one GET per span of ``spans``; never a multi-range request."""
    local = _probe(served_dir / name, ranges, _client_env({}))
    remote = _probe(server.url(name), ranges, _client_env(server.env()))
    assert remote["size"] == local["size"] == (served_dir / name).stat().st_size
    assert remote["ranges"] == local["ranges"]
    assert all(r["read"] == r["len"] for r in remote["ranges"])
    m = remote["metrics"]
    print(f"\ns3 io_probe: {len(ranges)} ranges, {len(spans)} spans -> {m}")
    assert m["vector_requests"] == 0
    assert m["requests"] == m["ranges"] == len(spans) + 2
    assert m["bytes_read"] == sum(n for _, n in spans) + EDGE_HEAD_BYTES + EDGE_TAIL_BYTES


def test_io_probe_one_get_per_distant_range(served_dir: Path, server: server_s3.Server) -> None:
    name = f"gen/{BIG_SPEC.filename}"
    size = (served_dir / name).stat().st_size
    # Ranges clear of the bytes read up front at opening, of many sizes, out of order,
    # each more than COALESCE_GAP away from the others.
    ranges = [(EDGE_HEAD_BYTES + (k * 7 % 24) * 260_000, 1 + k * 7_001) for k in range(1, 25)]
    ranges.append((size - EDGE_TAIL_BYTES - 3_000_000, 2_999_999))
    assert all(EDGE_HEAD_BYTES <= o and o + n <= size - EDGE_TAIL_BYTES for o, n in ranges)
    spans = _spans(ranges)
    assert len(spans) == len(ranges)
    # One GET per range.
    _probe_reads_in_these_gets(served_dir, server, name, ranges, spans)


def test_io_probe_merges_near_ranges_into_one_get(served_dir: Path, server: server_s3.Server) -> None:
    name = f"gen/{BIG_SPEC.filename}"
    size = (served_dir / name).stat().st_size
    # Overlapping, touching and nearby ranges, out of order, then a run of ranges 50 kB
    # apart up to the end: together longer than COALESCE_MAX, so more than one GET.
    ranges = [(EDGE_HEAD_BYTES + k * 611_011 % (size // 2), 1 + k * 37_003) for k in range(1, 25)]
    run_start = max(o + n for o, n in ranges) + 10_000
    ranges += [(o, 50_000) for o in range(run_start, size - EDGE_TAIL_BYTES - 50_000, 100_000)]
    assert all(EDGE_HEAD_BYTES <= o and o + n <= size - EDGE_TAIL_BYTES for o, n in ranges)
    spans = _spans(ranges)
    assert 2 <= len(spans) < len(ranges) // 10
    assert all(n <= COALESCE_MAX for _, n in spans) and sum(n for _, n in spans) > COALESCE_MAX
    _probe_reads_in_these_gets(served_dir, server, name, ranges, spans)


def test_missing_key_or_bucket_is_not_found(server: server_s3.Server) -> None:
    for url in [server.url("no/such/file.root"), "s3://no-such-bucket/structure.clusters.root"]:
        out = _dump(url, _client_env(server.env()))
        err = out.stderr.decode()
        assert out.returncode != 0
        assert f"remote read of {url} failed: opening: GET bytes=0-65535: no such bucket or key" in err, err
        assert "attempt" not in err, "not retried"


@pytest.fixture
def small_server(tmp_path: Path) -> Iterator[server_s3.Server]:
    """A server of its own (the tests stop and restart it), holding two small files."""
    for case in CONFORMANCE_CASES[:2]:
        shutil.copy(conformance_data.write_file(case), tmp_path / f"{case}.root")
    s = server_s3.start(tmp_path)
    try:
        yield s
    finally:
        s.close()


def test_stopped_server_is_a_remote_error_without_secrets(small_server: server_s3.Server) -> None:
    secret, token = "Sup3rSecretKeyValue-0123456789abcdef", "SessionTokenValue-fedcba9876543210"
    env = _client_env({**small_server.env(), "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token})
    url = small_server.url("structure.clusters.root")
    assert _dump(url, env).returncode == 0, "moto takes any credentials"

    small_server.stop()
    start = time.monotonic()
    out = _dump(url, env)
    seconds = time.monotonic() - start
    err = out.stderr.decode()
    print(f"\nstopped server: failed after {seconds:.2f} s: {err.strip()}")
    assert out.returncode != 0
    assert f"remote read of {url} failed" in err, err
    assert "Connection refused" in err and tried(err) == (4, 3), err
    assert secret not in err and token not in err and "Signature=" not in err
    assert out.stdout == b""


def test_kill_and_restart_keep_the_contents(small_server: server_s3.Server, tmp_path: Path) -> None:
    name = "structure.cluster_groups.root"
    want = _dump(tmp_path / name, _client_env({}))
    assert want.returncode == 0
    env = _client_env(small_server.env())
    etag = small_server.client().head_object(Bucket=small_server.bucket, Key=name)["ETag"]

    small_server.kill()
    killed = _dump(small_server.url(name), env)
    assert killed.returncode != 0 and b"Connection refused" in killed.stderr, killed.stderr

    small_server.restart()  # endpoint only: the objects never left
    assert _dump(small_server.url(name), env).stdout == want.stdout

    # Down when the read starts, back 0.5 s later: within the retries (nine attempts,
    # 16 s of backoff: the endpoint's restart, a new process, may take what a loaded
    # machine needs).
    small_server.kill()
    cmd = [str(require_rntuple_bin()), "dump", "--json", small_server.url(name), "--retries", "8"]
    reader = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        time.sleep(0.5)
        small_server.restart()
        out, err = reader.communicate(timeout=300)
    finally:
        reader.kill()
        reader.wait()
    assert reader.returncode == 0, err.decode()
    assert out == want.stdout

    small_server.stop()
    small_server.restart()  # everything: uploaded again before the endpoint listens
    assert _dump(small_server.url(name), env).stdout == want.stdout
    assert small_server.client().head_object(Bucket=small_server.bucket, Key=name)["ETag"] == etag
