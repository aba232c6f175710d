"""The cache of remote reads never mixes versions of a file replaced at its origin
while it is read (issue 45, item 1).

Swap stress: 8 readers x 20 rounds share one cache directory while the origin swaps
between two files of the same size every 50 ms, on nginx (validators of one-second
resolution: its ETag is the modification second and the size) and on a server whose
ETag hashes the content. Every read must equal one version whole or fail saying the
file changed at its origin; afterwards ``cache verify`` is clean, every stored extent
holds the bytes of the version its directory names (checked against both files), and
the file as it then is reads right with ``RNTUPLE_CACHE_VALIDATE=open``.

nginx is run two ways: each swap writes a new file (its modification time is the
current second: a version never identifies itself, nothing may be cached) and each
swap puts back a file whose modification time is its own (old, and different for the
two files: the validators tell the versions apart, and the cache is used).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import server_http
import server_seaweedfs
import server_strong
from conftest import run_rntuple
from netutil import backdate
from remote_data import same_size_pair

READERS = 8
ROUNDS = 20
SWAP_EVERY = 0.05
#: Extent files: 64-byte header, an 8-byte checksum per 64 KiB block, the payload.
EXTENT_HEADER = 64
EXTENT_BLOCK = 64 << 10


def _pair(directory: Path) -> tuple[Path, Path]:
    """Two RNTuples of the same size and layout, other values (small clusters: a read
    is many requests)."""
    pair = same_size_pair(directory, entries=20_000, list_length=2, cluster_size="64 kB")
    assert pair[0].read_bytes() != pair[1].read_bytes()
    return pair


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _pair(tmp_path_factory.mktemp("versions"))


@pytest.fixture(scope="module")
def dumps(versions: tuple[Path, Path]) -> tuple[str, str]:
    out = tuple(run_rntuple("dump", str(p), "--jsonl").stdout for p in versions)
    assert out[0] and out[1] and out[0] != out[1]
    return out[0], out[1]


class Swapper:
    """Replaces ``target`` by one version, then the other, every ``SWAP_EVERY`` seconds
    (a new file renamed over it, as writers replace files). ``keep_mtime``: each copy
    gets its version's own (old) modification time instead of the current second."""

    def __init__(self, target: Path, versions: tuple[Path, Path], keep_mtime: bool) -> None:
        self.target, self.versions, self.keep_mtime = target, versions, keep_mtime
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def put(self, which: int) -> None:
        """Puts version ``which`` in place."""
        incoming = self.target.with_name(self.target.name + ".incoming")
        shutil.copyfile(self.versions[which], incoming)
        if self.keep_mtime:
            stat = self.versions[which].stat()
            os.utime(incoming, (stat.st_atime, stat.st_mtime))
        os.replace(incoming, self.target)

    def _run(self) -> None:
        which = 0
        while not self.stop.is_set():
            which = 1 - which
            self.put(which)
            self.swaps += 1
            time.sleep(SWAP_EVERY)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def _stress(url: str, cache: Path, dumps: tuple[str, str]) -> dict[str, int]:
    """READERS x ROUNDS reads of ``url`` through ``cache``: how many read each version
    and how many failed as changed. Any other outcome fails the test."""
    env = {"RNTUPLE_CACHE_DIR": str(cache), "RNTUPLE_CACHE_VALIDATE": "open"}

    def reader(_: int) -> list[str]:
        outcomes = []
        for _ in range(ROUNDS):
            out = run_rntuple("dump", url, "--jsonl", env=env)
            if out.returncode == 0:
                assert out.stdout in dumps, "a read that is neither version whole"
                outcomes.append("first" if out.stdout == dumps[0] else "second")
            else:
                assert out.returncode == 1, out.stderr
                assert "changed at its origin" in out.stderr, out.stderr
                outcomes.append("changed")
        return outcomes

    with ThreadPoolExecutor(READERS) as pool:
        results = [o for outcomes in pool.map(reader, range(READERS)) for o in outcomes]
    counts = {k: results.count(k) for k in ("first", "second", "changed")}
    assert sum(counts.values()) == READERS * ROUNDS
    return counts


def _expected_version(meta: dict[str, object], known: dict[str, Path]) -> Path:
    """The file a version's meta names, by its validators (``known``: validator text ->
    file)."""
    for key in ("etag", "last_modified"):
        value = meta.get(key)
        if isinstance(value, str) and value in known:
            return known[value]
    raise AssertionError(f"a cached version of no known file: {meta}")


def _check_extents(cache: Path, known: dict[str, Path]) -> int:
    """Every extent of every version holds the bytes of the file its validators name;
    the number of extents checked."""
    checked = 0
    for meta_path in cache.glob("rntuple-cache-v1/e/*/*/*/meta"):
        meta = json.loads(meta_path.read_text())
        expected = _expected_version(meta, known).read_bytes()
        for extent in (meta_path.parent / "x").iterdir():
            offset, length = (int(v) for v in extent.name.split("-"))
            blocks = -(-length // EXTENT_BLOCK)
            payload = extent.read_bytes()[EXTENT_HEADER + 8 * blocks :]
            assert len(payload) == length, extent
            assert payload == expected[offset : offset + length], (
                f"{extent} holds bytes of another version than its own ({meta_path})"
            )
            checked += 1
    return checked


def _verify_clean(cache: Path) -> None:
    out = run_rntuple("cache", "verify", "--json", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stdout + out.stderr


def _counters(cache: Path) -> dict[str, int]:
    out = run_rntuple("cache", "stats", "--json", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["counters"]


def _reads_right_now(url: str, cache: Path, expected: str, known: dict[str, Path]) -> None:
    """Once the swapping stopped, ``url`` reads as ``expected`` twice through ``cache``
    (validated at open), and the cache is sound with every extent of its known versions."""
    env = {"RNTUPLE_CACHE_DIR": str(cache), "RNTUPLE_CACHE_VALIDATE": "open"}
    for _ in range(2):
        now = run_rntuple("dump", url, "--jsonl", env=env)
        assert now.returncode == 0, now.stderr
        assert now.stdout == expected
    _verify_clean(cache)
    _check_extents(cache, known)


def _http_date(seconds: float) -> str:
    return time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(int(seconds)))


@pytest.fixture
def origin(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "origin"
    root.mkdir()
    yield root


@pytest.mark.parametrize("keep_mtime", [False, True], ids=["rewritten-now", "own-mtimes"])
def test_nginx_swapped_every_50ms_never_mixes_versions(
    origin: Path,
    tmp_path: Path,
    versions: tuple[Path, Path],
    dumps: tuple[str, str],
    keep_mtime: bool,
) -> None:
    first, second = versions
    if keep_mtime:
        # Two old modification times, different seconds.
        old = time.time() - 3600
        os.utime(first, (old, old))
        os.utime(second, (old + 60, old + 60))
    cache = tmp_path / "cache"
    target = origin / "swapped.root"
    with server_http.serving(origin) as nginx:
        url = nginx.url("swapped.root")
        swapper = Swapper(target, versions, keep_mtime)
        swapper.put(0)
        with swapper:
            counts = _stress(url, cache, dumps)
        print(f"nginx ({'own mtimes' if keep_mtime else 'rewritten now'}): {counts}, {swapper.swaps} swaps")
        _verify_clean(cache)
        known = {_http_date(p.stat().st_mtime): p for p in versions}
        checked = _check_extents(cache, known)
        counters = _counters(cache)
        if keep_mtime:
            # The validators tell the versions apart: the cache served reads.
            assert checked > 0
            assert counters["bytes_from_cache"] > 0, counters
        else:
            # A version modified within the last second never identifies itself.
            assert checked == 0
            assert counters["stored_extents"] == 0, counters
        # The file as it is now reads right, with validation.
        swapper.put(0)
        known[_http_date(target.stat().st_mtime)] = first
        _reads_right_now(url, cache, dumps[0], known)


def test_a_content_etag_server_swapped_every_50ms_never_mixes_versions(
    origin: Path, tmp_path: Path, versions: tuple[Path, Path], dumps: tuple[str, str]
) -> None:
    cache = tmp_path / "cache"
    target = origin / "swapped.root"
    with server_strong.serving(origin) as server:
        url = server.url("swapped.root")
        swapper = Swapper(target, versions, keep_mtime=False)
        swapper.put(0)
        with swapper:
            counts = _stress(url, cache, dumps)
        print(f"content ETags: {counts}, {swapper.swaps} swaps")
        _verify_clean(cache)
        known = {server_strong.content_etag(p.read_bytes()): p for p in versions}
        checked = _check_extents(cache, known)
        assert checked > 0, "the cache kept versions identified by their ETag"
        swapper.put(1)
        _reads_right_now(url, cache, dumps[1], known)


def test_a_file_written_within_the_second_is_read_whole_and_not_cached(
    origin: Path, tmp_path: Path, versions: tuple[Path, Path], dumps: tuple[str, str]
) -> None:
    """nginx, one version written just now: it reads right (opened again once its second
    passed, when its modification time identifies it), and is cached."""
    cache = tmp_path / "cache"
    shutil.copyfile(versions[1], origin / "new.root")
    with server_http.serving(origin) as nginx:
        url = nginx.url("new.root")
        env = {"RNTUPLE_CACHE_DIR": str(cache)}
        out = run_rntuple("dump", url, "--jsonl", env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout == dumps[1]
        nginx.clear_log()
        # Now more than a second old: identified, cached, served from the cache.
        assert run_rntuple("dump", url, "--jsonl", env=env).stdout == dumps[1]
        assert (
            run_rntuple("dump", url, "--jsonl", env={**env, "RNTUPLE_CACHE_VALIDATE": "never"}).stdout
            == dumps[1]
        )
        counters = _counters(cache)
        assert counters["stored_extents"] > 0, counters
        assert counters["bytes_from_cache"] > 0, counters
        known = {_http_date((origin / "new.root").stat().st_mtime): versions[1]}
        assert _check_extents(cache, known) > 0


def test_a_server_without_validators_is_read_but_never_cached(
    origin: Path, tmp_path: Path, versions: tuple[Path, Path], dumps: tuple[str, str]
) -> None:
    """No ETag, no Last-Modified: nothing tells a rewrite apart. Reads are right, nothing
    is stored, and the stats say why."""
    cache = tmp_path / "cache"
    shutil.copyfile(versions[0], origin / "plain.root")
    with server_strong.serving(origin, validators=False) as server:
        url = server.url("plain.root")
        env = {"RNTUPLE_CACHE_DIR": str(cache)}
        for _ in range(2):
            out = run_rntuple("dump", url, "--jsonl", env=env)
            assert out.returncode == 0, out.stderr
            assert out.stdout == dumps[0]
        counters = _counters(cache)
        assert counters["uncacheable_opens"] == 2, counters
        assert counters["stored_extents"] == 0, counters
        assert not list(cache.glob("rntuple-cache-v1/e/*/*/*/x/*"))
        stats = run_rntuple("cache", "stats", "--cache-dir", str(cache)).stdout
        print(stats)
        assert "could not be told apart" in stats, stats


def _layout_url(server: server_seaweedfs.Server, prefix: str) -> str:
    return f"ntpl+s3+http://127.0.0.1:{server.port}/{server.bucket}/{prefix}"


def test_object_layouts_are_cached_per_object_and_version(
    tmp_path: Path, versions: tuple[Path, Path], dumps: tuple[str, str]
) -> None:
    """ROOT's S3 layout on SeaweedFS: a warm read takes the anchor and one listing, no
    object; objects rewritten in place (as ROOT's writer rewrites a dataset: the same
    ids, the same sizes, other bytes) are read anew, and every object the cache holds is
    the bytes of the ETag it is cached under."""
    empty = tmp_path / "empty"
    empty.mkdir()
    cache = tmp_path / "cache"
    with server_seaweedfs.start(empty) as server:
        env = {**server.env(), "RNTUPLE_CACHE_DIR": str(cache)}
        first, second = _layout_url(server, "first"), _layout_url(server, "second")
        for source, url in [(versions[0], first), (versions[1], second)]:
            out = run_rntuple("copy", str(source), url, env=server.env())
            assert out.returncode == 0, out.stderr
        cold = run_rntuple("dump", first, "--jsonl", env=env)
        assert cold.returncode == 0, cold.stderr
        assert cold.stdout == dumps[0]
        stored = _counters(cache)["stored_extents"]
        assert stored > 0
        server.clear_log()
        warm = run_rntuple("dump", first, "--jsonl", env=env)
        assert warm.stdout == dumps[0]
        gets = [r for r in server.requests() if r["method"] == "GET"]
        print(f"warm read: {len(gets)} GETs: {gets}")
        # The anchor and the listing (a GET of the bucket with a prefix).
        assert len(gets) == 2, gets
        counters = _counters(cache)
        assert counters["bytes_from_cache"] > 0 and counters["stored_extents"] == stored
        # The second dataset's objects over the first's keys: the same ids and sizes.
        client = server.client()
        listing = client.list_objects_v2(Bucket=server.bucket, Prefix="second/")["Contents"]
        assert len(listing) > 5
        for item in listing:
            key = item["Key"]
            target = "first/" + key.removeprefix("second/")
            client.copy_object(
                Bucket=server.bucket, Key=target, CopySource={"Bucket": server.bucket, "Key": key}
            )
        client.copy_object(
            Bucket=server.bucket, Key="first", CopySource={"Bucket": server.bucket, "Key": "second"}
        )
        rewritten = run_rntuple("dump", first, "--jsonl", env=env)
        assert rewritten.returncode == 0, rewritten.stderr
        assert rewritten.stdout == dumps[1]
        assert _counters(cache)["stale_versions"] > 0
        # Every cached object holds the bytes of the version it is cached under.
        etags = {}
        for item in client.list_objects_v2(Bucket=server.bucket, Prefix="first/")["Contents"]:
            etags[item["ETag"]] = client.get_object(Bucket=server.bucket, Key=item["Key"])["Body"].read()
        for item in listing:
            etags[item["ETag"]] = client.get_object(Bucket=server.bucket, Key=item["Key"])["Body"].read()
        checked = 0
        for meta_path in cache.glob("rntuple-cache-v1/e/*/*/*/meta"):
            meta = json.loads(meta_path.read_text())
            assert meta["etag"] in etags, meta
            expected = etags[meta["etag"]]
            for extent in (meta_path.parent / "x").iterdir():
                offset, length = (int(v) for v in extent.name.split("-"))
                blocks = -(-length // EXTENT_BLOCK)
                payload = extent.read_bytes()[EXTENT_HEADER + 8 * blocks :]
                assert payload == expected[offset : offset + length], extent
                checked += 1
        assert checked >= stored
        _verify_clean(cache)


def test_a_first_read_through_an_empty_cache_is_counted_as_the_origins(
    origin: Path, tmp_path: Path, versions: tuple[Path, Path], dumps: tuple[str, str]
) -> None:
    """``cache stats`` after one cold read: every byte came from the origin, none from
    the cache (it said 100% from the cache, counting the opening's bytes as hits); the
    second read's come from the cache."""
    cache = tmp_path / "cache"
    shutil.copyfile(versions[0], origin / "cold.root")
    backdate(origin)
    with server_http.serving(origin) as nginx:
        url = nginx.url("cold.root")
        env = {"RNTUPLE_CACHE_DIR": str(cache)}
        assert run_rntuple("dump", url, "--jsonl", env=env).stdout == dumps[0]
        counters = _counters(cache)
        # Every byte came from the origin once and was stored once; the only bytes from
        # the cache are those this read asked for twice (a range that reaches into the
        # opening's tail, stored moments before: 7,268 of 727,608 bytes here).
        assert counters["bytes_from_origin"] == counters["stored_bytes"], json.dumps(counters)
        assert counters["bytes_from_origin"] >= versions[0].stat().st_size // 2, json.dumps(counters)
        assert counters["hits"] == 0 and counters["partial_hits"] <= 1, json.dumps(counters)
        share = counters["bytes_from_cache"] / (counters["bytes_from_cache"] + counters["bytes_from_origin"])
        assert share < 0.02, json.dumps(counters)
        text = run_rntuple("cache", "stats", "--cache-dir", str(cache)).stdout
        assert f"({100 * share:.1f}% from the cache)" in text, text
        assert run_rntuple("dump", url, "--jsonl", env=env).stdout == dumps[0]
        warm = _counters(cache)
        assert warm["bytes_from_origin"] == counters["bytes_from_origin"], warm
        assert warm["bytes_from_cache"] >= counters["bytes_from_origin"] // 2, warm
