"""The cache of remote reads (``RNTUPLE_CACHE_DIR`` / ``--cache-dir``), against nginx on
loopback; every value checked against the local file's, every request and byte against
nginx's access log:

- a warm read with ``RNTUPLE_CACHE_VALIDATE=never`` makes no request; with ``open``, one
  request of at most 16 KiB per file opened;
- a second read that adds 5 fields to 5 cached ones fetches at most 1.1x the pages of
  the 5 new fields;
- the origin replaced by another file of the same size and the same modification second
  (nginx's ETag and Last-Modified unchanged): ``open`` serves the new file, ``never``
  the old one, and never a mix (a read ``never`` cannot serve from the cache is an
  error);
- extents truncated, corrupted or deleted: the right values, each fault counted, the
  cache repaired; a full cache directory (a 3 MiB tmpfs): the right values, the write
  errors counted, no partial extent; readers killed with SIGKILL at 50 points: the right
  values afterwards and a clean ``cache verify``;
- eviction keeps the directory under ``RNTUPLE_CACHE_MAX_BYTES``;
- 8 processes reading through one empty cache directory, 20 rounds: no wrong value,
  ``cache verify`` clean, no temporary file left.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import server_http
from conftest import require_rntuple_bin, run_rntuple
from netutil import backdate
from remote_data import same_size_pair, write_nanoaod_like

FIVE = ["Jet_pt", "Jet_eta", "Muon_pt", "MET_pt", "PV_npvs"]
FIVE_MORE = ["Electron_pt", "Photon_eta", "Jet_mass", "MET_phi", "genWeight"]


def _run(
    *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    out = run_rntuple(*args, env=env)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def _cache_env(cache: Path, validate: str = "open", **more: str) -> dict[str, str]:
    return {"RNTUPLE_CACHE_DIR": str(cache), "RNTUPLE_CACHE_VALIDATE": validate, **more}


def _stats(cache: Path) -> dict[str, int]:
    report = json.loads(_run("cache", "stats", "--json", "--cache-dir", str(cache)).stdout)
    return report["counters"]


def _no_temporary_files(cache: Path) -> list[Path]:
    return list((cache / "rntuple-cache-v1" / "tmp").glob("*"))


def _verify_clean(cache: Path) -> None:
    out = _run("cache", "verify", "--json", "--cache-dir", str(cache), check=False)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 40-field NanoAOD-like file of a dozen clusters (about 9 MB)."""
    root = tmp_path_factory.mktemp("cached")
    write_nanoaod_like(root / "nano.root", 60_000, seed=11, cluster_size="700 kB")
    backdate(root)
    return root


def _dump(location: str, fields: list[str] | None = None, env: dict[str, str] | None = None) -> str:
    args = ["dump", location, "--jsonl"] + (["--fields", ",".join(fields)] if fields else [])
    return _run(*args, env=env).stdout


def test_warm_reads_cost_no_request_or_one_small_one(
    nginx: server_http.Server, served: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    url = nginx.url("nano.root")
    local = _dump(str(served / "nano.root"))
    nginx.clear_log()
    assert _dump(url, env=_cache_env(cache)) == local
    cold = nginx.requests()
    nginx.clear_log()
    assert _dump(url, env=_cache_env(cache, "never")) == local
    assert nginx.requests() == [], "never: no request at all"
    nginx.clear_log()
    assert _dump(url, env=_cache_env(cache, "open")) == local
    warm = nginx.requests()
    print(f"cold: {len(cold)} requests; warm (open): {warm}")
    assert len(warm) == 1, warm
    assert int(warm[0]["body_bytes"]) <= 16 << 10
    counters = _stats(cache)
    assert counters["validation_requests"] == 1
    assert counters["stale_versions"] == 0
    _verify_clean(cache)


def test_a_second_read_fetches_only_the_new_fields_pages(
    nginx: server_http.Server, served: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    url = nginx.url("nano.root")
    bench = json.loads(
        _run("read-bench", str(served / "nano.root"), "--json", "--fields", ",".join(FIVE_MORE)).stdout
    )
    new_pages = bench["bytes_used"]
    _dump(url, FIVE, env=_cache_env(cache))
    nginx.clear_log()
    both = FIVE + FIVE_MORE
    assert _dump(url, both, env=_cache_env(cache)) == _dump(str(served / "nano.root"), both)
    log = nginx.requests()
    # The first request is the validation (its ranges: the two probe ranges).
    fetched = sum(int(r["body_bytes"]) for r in log[1:])
    print(f"second read: {len(log)} requests, {fetched} bytes for {new_pages} bytes of new pages")
    assert fetched <= 1.1 * new_pages


def test_an_origin_replaced_within_the_same_second_is_seen_by_open_never_mixed(
    nginx: server_http.Server, served: Path, tmp_path: Path
) -> None:
    first, second = same_size_pair(tmp_path)
    served_file = served / "replaced.root"
    shutil.copy(first, served_file)
    mtime = int(served_file.stat().st_mtime)
    os.utime(served_file, (mtime, mtime))
    url = nginx.url("replaced.root")
    old, new = _dump(str(first)), _dump(str(second))
    assert old != new
    full, partial = tmp_path / "full", tmp_path / "partial"
    assert _dump(url, env=_cache_env(full)) == old
    assert _dump(url, ["x"], env=_cache_env(partial)) == _dump(str(first), ["x"])
    etag_before = nginx.requests()[-1]
    # The new file, same size, same second: nginx's validators do not change.
    shutil.copy(second, served / "incoming.root")
    os.utime(served / "incoming.root", (mtime, mtime))
    os.replace(served / "incoming.root", served_file)
    assert served_file.stat().st_size == first.stat().st_size
    del etag_before
    # never: the old file, whole and consistent.
    assert _dump(url, env=_cache_env(full, "never")) == old
    # never, with bytes the cache lacks: an error, not a mix of the two files.
    mixed = _run("dump", url, "--jsonl", env=_cache_env(partial, "never"), check=False)
    assert mixed.returncode == 1, mixed.stdout[:300]
    assert "changed at its origin" in mixed.stderr, mixed.stderr
    # open: the new file, in both caches.
    assert _dump(url, env=_cache_env(full, "open")) == new
    assert _dump(url, env=_cache_env(partial, "open")) == new
    assert _stats(full)["stale_versions"] >= 1
    # And never now serves the new version.
    assert _dump(url, env=_cache_env(full, "never")) == new
    _verify_clean(full)


@pytest.fixture(scope="module")
def local_five(served: Path) -> str:
    """The served file's ``FIVE`` fields dumped from the local file: what every read of
    them through the cache must print."""
    return _dump(str(served / "nano.root"), FIVE)


def _extents(cache: Path) -> list[Path]:
    return sorted(cache.glob("rntuple-cache-v1/e/*/*/*/x/*"))


def test_damaged_extents_are_found_counted_and_fetched_again(
    nginx: server_http.Server, local_five: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    url = nginx.url("nano.root")
    assert _dump(url, FIVE, env=_cache_env(cache)) == local_five
    extents = _extents(cache)
    assert len(extents) >= 6
    rng = random.Random(5)
    damaged = rng.sample(extents, 6)
    # Truncated, a flipped payload byte, a flipped header byte, deleted.
    with damaged[0].open("r+b") as f:
        f.truncate(damaged[0].stat().st_size // 2)
    for path, at in [(damaged[1], -1), (damaged[2], 100), (damaged[3], 10)]:
        data = bytearray(path.read_bytes())
        data[at] ^= 0x40
        path.write_bytes(bytes(data))
    damaged[4].unlink()
    damaged[5].write_bytes(b"")
    before = _stats(cache)
    assert _dump(url, FIVE, env=_cache_env(cache, "never")) == local_five
    after = _stats(cache)
    corrupt = after["corrupt_extents"] - before["corrupt_extents"]
    missing = after["missing_extents"] - before["missing_extents"]
    fetched = after["bytes_from_origin"] - before["bytes_from_origin"]
    print(f"corrupt {corrupt}, missing {missing}, fetched again {fetched} bytes")
    # The deleted extent is not listed when the cache is opened: a plain miss.
    assert corrupt == 5 and missing == 0
    assert fetched >= sum(len(p.name) > 0 for p in damaged)
    # Fetched again and stored: the next read needs nothing from the origin.
    nginx.clear_log()
    assert _dump(url, FIVE, env=_cache_env(cache, "never")) == local_five
    assert nginx.requests() == []
    _verify_clean(cache)


def test_a_full_cache_directory_never_fails_a_read(
    nginx: server_http.Server, local_five: str, tmp_path: Path
) -> None:
    cache = tmp_path / "tmpfs"
    cache.mkdir()
    mounted = subprocess.run(
        # mode=0700: a tmpfs's root is 1777 (writable by all), which the cache refuses.
        ["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(cache)],
        capture_output=True,
        text=True,
    )
    assert mounted.returncode == 0, f"mounting a small tmpfs needs root: {mounted.stderr}"
    try:
        url = nginx.url("nano.root")
        for _ in range(2):
            assert _dump(url, FIVE, env=_cache_env(cache)) == local_five
        counters = _stats(cache)
        print({k: v for k, v in counters.items() if v})
        assert counters["write_errors"] >= 1
        assert counters["bypass_bytes"] > 0
        assert _no_temporary_files(cache) == []
        _verify_clean(cache)
    finally:
        subprocess.run(["umount", str(cache)], check=False)


def test_readers_killed_at_50_points_leave_a_cache_that_serves_right_values(
    nginx: server_http.Server, local_five: str, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    url = nginx.url("nano.root")
    rng = random.Random(17)
    bin_ = str(require_rntuple_bin())
    killed = 0
    for point in range(50):
        if point % 10 == 0:
            shutil.rmtree(cache, ignore_errors=True)
        proc = subprocess.Popen(
            [bin_, "dump", url, "--jsonl", "--fields", ",".join(FIVE)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **_cache_env(cache)},
        )
        time.sleep(rng.uniform(0.0, 0.25))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait()
        assert _dump(url, FIVE, env=_cache_env(cache)) == local_five, f"after a kill at point {point}"
    print(f"{killed} of 50 readers killed mid-read")
    assert killed >= 25
    # What killed writers left (their temporary files) is found, and repaired.
    _run("cache", "verify", "--repair", "--cache-dir", str(cache), check=False)
    _verify_clean(cache)
    assert _no_temporary_files(cache) == []


def _disk_bytes(cache: Path) -> int:
    return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())


def test_eviction_keeps_the_directory_under_its_limit(
    nginx: server_http.Server, served: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    url = nginx.url("nano.root")
    limit = 2 << 20
    size = (served / "nano.root").stat().st_size
    assert size > 3 * limit
    local = _dump(str(served / "nano.root"))
    for _ in range(2):
        assert _dump(url, env=_cache_env(cache, RNTUPLE_CACHE_MAX_BYTES=str(limit))) == local
        # The purge runs in the background of the process that stored: it is done when
        # the process exits.
        used = _disk_bytes(cache)
        print(f"cache on disk: {used} bytes (limit {limit})")
        assert used <= limit
    assert _stats(cache)["evicted_extents"] > 0


def test_eight_processes_share_one_empty_cache_for_20_rounds(
    nginx: server_http.Server, served: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    url = nginx.url("nano.root")
    selections = [FIVE, FIVE_MORE, FIVE + FIVE_MORE, ["Photon_pt", "HLT_IsoMu24", "event"]]
    expected = {tuple(s): _dump(str(served / "nano.root"), s) for s in selections}

    def one(k: int) -> bool:
        fields = selections[k % len(selections)]
        return _dump(url, fields, env=_cache_env(cache)) == expected[tuple(fields)]

    wrong = 0
    with ThreadPoolExecutor(8) as pool:
        for _ in range(20):
            wrong += sum(not ok for ok in pool.map(one, range(8)))
    assert wrong == 0
    _verify_clean(cache)
    assert _no_temporary_files(cache) == []
    counters = _stats(cache)
    print({k: v for k, v in counters.items() if v})
    assert counters["hits"] > counters["misses"]
