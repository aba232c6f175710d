"""HTTP servers as they are: every kind reads equal to the local file, with and without
the cache of remote reads, twice.

- ``python3 -m http.server`` (the README's one-line local server) ignores byte ranges:
  the whole file is downloaded once per open and every read is served from it, with
  one warning (``rntuple: warning:`` on the command line, ``rntuple.SlowReadWarning``
  in Python) that says why and what server would do better;
- a server of single ranges only (``server_ranges.py``: several ranges in one request
  and suffix ranges refused with 400, 416 or 501, or answered with the whole file):
  opening falls back to single ranges, the size from ``Content-Range``, and no read
  asks it for what it refused twice in a process;
- nginx (multi-range, suffix ranges, strong validators) stays the efficient path;
- a server that compresses what was asked for as it is (``Content-Encoding: gzip``)
  is refused with a message naming the URL as typed, the encoding and the fix.

Values are compared as ``rntuple dump --json`` prints them, against the local file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import awkward as ak
import conformance_data
import netutil
import pytest
import server_http
import server_ranges
from conftest import REPO_ROOT

import rntuple

#: The conformance cases (all but the one whose expected outcome is an error).
CASES = [case for case in conformance_data.cases() if case != "structure.feature_flag"]
#: A file larger than what opening reads up front (its two ends), of many clusters.
MERGED = "merged.root"
#: The most bytes of a file that comes whole in the answer to opening's first request:
#: the two ends it asks for (64 KiB and 128 KiB) and 64 KiB more; a cached file's
#: validation asks for 256 and 4096 bytes.
WHOLE_AT_OPEN = (64 << 10) + (128 << 10) + (64 << 10)
WHOLE_AT_VALIDATION = 256 + 4096 + (64 << 10)
TIMEOUT = 300


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs a command over an environment without ``RNTUPLE_*`` variables."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RNTUPLE_") or k == "RNTUPLE_BIN"}
    return subprocess.run(
        args, capture_output=True, text=True, timeout=TIMEOUT, env={**base, **(env or {})}, check=False
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, rntuple_bin: Callable[[], Path]) -> Path:
    """The served directory: the conformance files and a merged file of 12 copies of
    ``examples/events.root`` (about 1 MB, 72 clusters)."""
    root = tmp_path_factory.mktemp("servers")
    for case in CASES:
        shutil.copy(conformance_data.write_file(case), root / f"{case}.root")
    inputs = []
    for i in range(12):
        inputs.append(root / f"part{i}.root")
        shutil.copy(REPO_ROOT / "examples" / "events.root", inputs[-1])
    binary = rntuple_bin()
    merged = run([str(binary), "merge", str(root / MERGED), *map(str, inputs)])
    assert merged.returncode == 0, merged.stderr
    for path in inputs:
        path.unlink()
    assert (root / MERGED).stat().st_size > (64 << 10) + (128 << 10) + (64 << 10)
    return root


@pytest.fixture(scope="module")
def python_http_server(served: Path) -> Iterator[str]:
    """``python3 -m http.server`` serving ``served``: its base URL."""
    with netutil.python_http_server(served) as url:
        yield url


def dump(binary: Path, target: str, *options: str) -> tuple[str, str]:
    """``rntuple dump --json TARGET``: its stdout and stderr; fails the test if it fails."""
    result = run([str(binary), "dump", "--json", target, *options])
    assert result.returncode == 0, f"rntuple dump {target} failed:\n{result.stderr}"
    return result.stdout, result.stderr


def names() -> list[str]:
    """Every served file."""
    return [MERGED, *(f"{case}.root" for case in CASES)]


def assert_reads_equal(binary: Path, served: Path, base: str, tmp_path: Path) -> list[tuple[str, int, str]]:
    """Every served file dumps over ``base`` as locally, without the cache and with it,
    twice each: for each remote dump, the file, the most bytes of it that came whole in
    the first answer of the open (see :data:`WHOLE_AT_OPEN`), and its standard error."""
    errors = []
    for name in names():
        local, _ = dump(binary, str(served / name))
        for cache in ([], ["--cache-dir", str(tmp_path / "cache")]):
            for run_index in range(2):
                remote, stderr = dump(binary, f"{base}/{name}", *cache)
                assert remote == local, (name, cache)
                validated = bool(cache) and run_index == 1
                errors.append((name, WHOLE_AT_VALIDATION if validated else WHOLE_AT_OPEN, stderr))
    return errors


def test_python_http_server_reads_equal_with_one_warning_each_time(
    rntuple_bin: Callable[[], Path], served: Path, python_http_server: str, tmp_path: Path
) -> None:
    binary = rntuple_bin()
    errors = assert_reads_equal(binary, served, python_http_server, tmp_path)
    copied = 0
    for name, whole_at_open, stderr in errors:
        # A file that comes whole in the first answer costs nothing more; a larger one
        # is copied, and the process says so once.
        if (served / name).stat().st_size <= whole_at_open:
            assert "warning" not in stderr, (name, stderr)
            continue
        copied += 1
        assert stderr.count("warning:") == 1, stderr
        assert (
            f"rntuple: warning: {python_http_server}/{name}: the server ignores byte ranges (it "
            "answers a Range request with the whole file, HTTP 200)" in stderr
        ), stderr
        assert "HTTP 206, with several ranges and suffix ranges in one request" in stderr, stderr
    assert copied >= 4, "the merged file is copied on every open"


def test_python_http_server_in_python_warns_once_and_reads_equal(
    served: Path, python_http_server: str
) -> None:
    local = rntuple.open(f"{served / MERGED}:Events").arrays()
    with pytest.warns(rntuple.SlowReadWarning, match="ignores byte ranges") as caught:
        remote = rntuple.open(f"{python_http_server}/{MERGED}:Events", cache=False).arrays()
    assert len([w for w in caught if issubclass(w.category, rntuple.SlowReadWarning)]) == 1
    assert len(remote) == len(local) == 24000
    assert ak.to_list(remote) == ak.to_list(local)


@pytest.mark.parametrize("refusal", [400, 416, 501, 200])
def test_a_server_of_single_ranges_reads_equal_and_is_not_asked_twice_what_it_refuses(
    rntuple_bin: Callable[[], Path], served: Path, tmp_path: Path, refusal: int
) -> None:
    binary = rntuple_bin()
    with server_ranges.serving(served, refusal=refusal) as server:
        errors = assert_reads_equal(binary, served, f"http://127.0.0.1:{server.port}", tmp_path)
        assert not any("warning" in e for _, _, e in errors), errors
        # One process reading the merged file: the two ends at once (refused), the first
        # bytes and the suffix at once (the suffix refused), the tail by its offsets;
        # then single ranges only.
        server.clear_log()
        dump(binary, server.url(MERGED))
        log = server.requests()
        refused = [r for r in log if r["status"] == str(refusal)]
        assert [r["range"] for r in refused] == ["bytes=0-65535,-131072", "bytes=-131072"], log
        served_ranges = [r for r in log if r["status"] == "206"]
        assert len(served_ranges) == len(log) - 2, log
        assert all("," not in r["range"] and not r["range"].startswith("bytes=-") for r in served_ranges), log


def test_nginx_reads_equal_in_few_requests(
    rntuple_bin: Callable[[], Path], served: Path, tmp_path: Path
) -> None:
    binary = rntuple_bin()
    with server_http.serving(served) as nginx:
        errors = assert_reads_equal(binary, served, f"http://127.0.0.1:{nginx.port}", tmp_path)
        assert not any("warning" in e for _, _, e in errors), errors
        nginx.clear_log()
        dump(binary, nginx.url(MERGED))
        log = nginx.requests()
        assert log[0]["range"] == "bytes=0-65535,-131072" and log[0]["status"] == "206", log
        assert all(r["status"] == "206" for r in log), log


def test_an_unasked_for_compressed_answer_names_the_url_the_encoding_and_the_fix(
    rntuple_bin: Callable[[], Path], served: Path
) -> None:
    binary = rntuple_bin()
    with server_ranges.serving(served, compress=True) as server:
        for name in (MERGED, f"{CASES[0]}.root"):
            url = server.url(name)
            result = run([str(binary), "info", url])
            assert result.returncode == 1, result.stderr
            assert result.stderr.startswith(f"rntuple: remote read of {url} failed: "), result.stderr
            assert "the server sent the file compressed (Content-Encoding: gzip)" in result.stderr
            assert (
                "Accept-Encoding: identity" in result.stderr and "turn the compression off" in result.stderr
            )
            assert "line longer" not in result.stderr and "attempts" not in result.stderr, result.stderr
