"""The settings of ``rntuple_io::SourceOptions`` that Python once left to the environment,
as keywords (issue 47, item 2): ``direct_io=``, ``huge_pages=``, ``daos_dir=`` and
``daos_mapping=`` on :func:`rntuple.open` and every function of its group
(:class:`~rntuple.options.RemoteOptions`: ``ReadOnlyFile``, ``iterate``, ``concatenate``,
``dask``, ``join``) and on :func:`rntuple.merge`, which also writes ROOT's DAOS layout
now. Each is tested by what it does, not by being accepted:

- ``direct_io``: an uncached file read with ``"never"`` goes page by page through the
  page cache (a request a page), with ``"always"`` in a few planned direct reads; the
  values are those written either way;
- ``huge_pages``: the decoded column's memory is advised for huge pages (``hg`` in the
  mapping's ``VmFlags``) with ``True`` only, the values the same;
- ``daos_dir`` and ``daos_mapping``: :func:`rntuple.merge` stores an RNTuple in a DAOS
  container of that directory store, an object per page or per cluster as the mapping
  says (counted in the store); Python reads it back with ``daos_dir=`` (over
  ``RNTUPLE_DAOS_DIR``), and the command, told the store by its environment, copies it
  into a file that uproot reads to the same values;
- the network's, on the writers that read inputs (``convert``, ``convert_files``,
  ``merge``): a server that never answers is given up after the ``timeout`` given, not
  the default's 30 s.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import uproot
from conftest import run_rntuple
from test_python_options import _InlineClient

import rntuple


def _drop_from_page_cache(path: Path) -> None:
    """Evicts the file's (written back, clean) pages from the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _random_columns(entries: int, fields: int, seed: int) -> dict[str, np.ndarray]:
    """``fields`` int64 columns of random values (they do not compress)."""
    rng = np.random.default_rng(seed)
    return {f"s{i}": rng.integers(0, 2**62, entries, dtype=np.int64) for i in range(fields)}


def _assert_same(read: dict[str, np.ndarray], written: dict[str, np.ndarray]) -> None:
    assert sorted(read) == sorted(written)
    for name, values in written.items():
        np.testing.assert_array_equal(np.asarray(read[name]), values, err_msg=name)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="needs posix_fadvise (Linux)")
def test_direct_io_keyword_reads_an_uncached_file_past_the_page_cache_or_through_it(tmp_path: Path) -> None:
    # 20 fields of 50k entries in 16 KiB pages: 500 pages, on the temporary directory's
    # file system (tmpfs has no direct I/O: checked below by the requests' count).
    written = _random_columns(50_000, 20, seed=47)
    path = tmp_path / "pages.root"
    with rntuple.recreate(path, compression="none", cluster_size=256 << 10, page_size=16 << 10) as f:
        f["t"] = written

    def read(direct_io: str | bool) -> int:
        _drop_from_page_cache(path)
        nt = rntuple.open(f"{path}:t", direct_io=direct_io)
        _assert_same(nt.arrays(library="np"), written)
        return int(nt.metrics()["requests"])

    page_reads = read("never")
    assert page_reads > 100, f"{page_reads} requests through the page cache: expected one a page"
    assert read("off") > 100
    for on in ("always", "on", True):
        direct = read(on)
        assert direct * 10 < page_reads, (
            f"direct_io={on!r}: {direct} requests against {page_reads} page reads"
        )
    # "auto" (the default): a read of 8 MB is far below a quarter of the memory.
    assert read("auto") > 100


def _huge_page_flags(path: Path, huge: bool) -> bool:
    """Whether the memory of the column ``s0`` of ``path``, decoded in a fresh process
    with ``huge_pages=huge``, is advised for huge pages (``hg`` in its ``VmFlags``)."""
    script = r"""
import re, sys
import numpy as np
import rntuple
path, huge = sys.argv[1], sys.argv[2] == "1"
nt = rntuple.open(path + ":t", huge_pages=huge)
column = nt.arrays(["s0"], library="arrow").column("s0")
assert column.num_chunks == 1
values = column.chunk(0)
np.testing.assert_array_equal(values.to_numpy(), np.load(sys.argv[3]))
address = values.buffers()[1].address + values.nbytes // 2
flags = None
with open("/proc/self/smaps") as smaps:
    inside = False
    for line in smaps:
        span = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if span:
            inside = int(span.group(1), 16) <= address < int(span.group(2), 16)
        elif inside and line.startswith("VmFlags:"):
            flags = line.split()[1:]
print("hg" in flags)
"""
    expected = path.with_suffix(".npy")
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), "1" if huge else "0", str(expected)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "True"


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs /proc/self/smaps (Linux)")
def test_huge_pages_keyword_advises_decoded_columns_for_huge_pages(tmp_path: Path) -> None:
    # 600k entries: a 4.8 MB column, mapped at once (large enough for the advice).
    written = _random_columns(600_000, 1, seed=48)
    path = tmp_path / "large.root"
    with rntuple.recreate(path) as f:
        f["t"] = written
    np.save(path.with_suffix(".npy"), written["s0"])
    kernel_has_them = Path("/sys/kernel/mm/transparent_hugepage").exists()
    assert _huge_page_flags(path, huge=False) is False
    assert _huge_page_flags(path, huge=True) is kernel_has_them


def test_bad_values_of_the_settings_are_refused_naming_the_keyword(tmp_path: Path) -> None:
    path = tmp_path / "small.root"
    with rntuple.recreate(path) as f:
        f["t"] = {"x": np.arange(3)}
    for keyword, value in [("direct_io", "sometimes"), ("huge_pages", "maybe"), ("daos_dir", 3)]:
        with pytest.raises(rntuple.InvalidArgumentError, match=keyword):
            rntuple.open(f"{path}:t", **{keyword: value})
        with pytest.raises(rntuple.InvalidArgumentError, match=keyword):
            rntuple.concatenate(f"{path}:t", **{keyword: value})
    with pytest.raises(rntuple.InvalidArgumentError, match="daos_mapping"):
        rntuple.open(f"{path}:t", daos_mapping="diagonal")
    store = tmp_path / "store"
    with pytest.raises(rntuple.InvalidArgumentError, match="daos_mapping"):
        rntuple.merge(f"{path}:t", "daos://pool/cont:t", daos_dir=store, daos_mapping="diagonal")
    assert not store.exists()


def test_merge_writes_a_daos_container_with_the_mapping_given_and_open_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 4 fields of 40k entries in 4 KiB pages and clusters of about 256 kB: a few
    # clusters, hundreds of pages.
    written = _random_columns(40_000, 4, seed=49)
    source = tmp_path / "source.root"
    with rntuple.recreate(source, compression="none", cluster_size=64_000 * 4, page_size=4096) as f:
        f["t"] = written
    stored = rntuple.open(f"{source}:t")
    clusters = len(stored.clusters)
    pages = len(stored.inspect().page_sizes)
    assert clusters >= 3 and pages > 10 * clusters, (clusters, pages)
    # The environment names another store: the keyword wins.
    monkeypatch.setenv("RNTUPLE_DAOS_DIR", str(tmp_path / "elsewhere"))
    objects = {}
    for mapping in ("per-page", "per-cluster"):
        store = tmp_path / f"store-{mapping}"
        url = f"daos://pool/{mapping}:events"
        result = rntuple.merge(
            f"{source}:t", url, keep_compression=True, daos_dir=store, daos_mapping=mapping
        )
        assert (result.entries, result.clusters, result.pages_copied) == (40_000, clusters, pages)
        assert result.output_bytes > 40_000 * 4 * 8
        # The directory store: a directory per object of the container.
        objects[mapping] = sum(1 for p in (store / "pool" / mapping).iterdir() if p.is_dir())
        with pytest.raises(rntuple.NotFoundError):
            rntuple.open(url).arrays()
        nt = rntuple.open(url, daos_dir=store)
        assert nt.num_entries == 40_000
        _assert_same(nt.arrays(library="np"), written)
        batches = list(rntuple.iterate(url, step_size=10_000, library="np", daos_dir=store))
        assert sum(len(b["s0"]) for b in batches) == 40_000
        # The command reads the container from the store its environment names, into a
        # file that uproot reads.
        back = tmp_path / f"back-{mapping}.root"
        done = run_rntuple("copy", url, back, env={"RNTUPLE_DAOS_DIR": str(store)})
        assert done.returncode == 0, done.stderr
        _assert_same(uproot.open(back)["events"].arrays(library="np"), written)
        # A merge's inputs are read with its settings too: this container into a file.
        again = rntuple.merge(url, tmp_path / f"again-{mapping}.root", daos_dir=store)
        assert again.entries == 40_000
    # An object per page, or one per cluster; and the same few for the anchor, header,
    # footer and page lists under either mapping.
    assert objects["per-page"] - pages == objects["per-cluster"] - clusters >= 1, (objects, pages, clusters)


def test_merge_refuses_a_daos_output_that_is_an_input_or_named_twice(tmp_path: Path) -> None:
    source = tmp_path / "small.root"
    with rntuple.recreate(source) as f:
        f["t"] = {"x": np.arange(5)}
    store = tmp_path / "store"
    rntuple.merge(f"{source}:t", "daos://pool/cont:t", daos_dir=store)
    with pytest.raises(rntuple.InvalidArgumentError, match="both an input and the output"):
        rntuple.merge("daos://pool/cont:t", "daos://pool/cont:t", daos_dir=store, overwrite=True)
    with pytest.raises(rntuple.InvalidArgumentError, match=re.escape('name="u": give one')):
        rntuple.merge(f"{source}:t", "daos://pool/cont:t", name="u", daos_dir=store)
    with pytest.raises(FileExistsError):
        rntuple.merge(f"{source}:t", "daos://pool/cont:t", daos_dir=store)
    rntuple.merge(f"{source}:t", "daos://pool/cont:t", daos_dir=store, overwrite=True)
    assert rntuple.open("daos://pool/cont:t", daos_dir=store).arrays(library="np")["x"].tolist() == list(
        range(5)
    )


@pytest.fixture
def silent_url() -> Iterator[str]:
    """The URL of a loopback HTTP server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/tree.root"
    listener.close()
    for conn in held:
        conn.close()


def test_writers_read_their_inputs_with_the_network_keywords(silent_url: str, tmp_path: Path) -> None:
    writes = {
        "convert": lambda: rntuple.convert(silent_url, tmp_path / "c.root", timeout=0.3, retries=0),
        "merge": lambda: rntuple.merge(silent_url, tmp_path / "m.root", timeout=0.3, retries=0),
    }
    for what, write in writes.items():
        start = time.monotonic()
        # The first-byte timeout given, not the default's 30 s (a bound far from both).
        with pytest.raises(rntuple.RemoteTimeoutError, match=r"within 0\.3 s \(first-byte timeout"):
            write()
        assert time.monotonic() - start < 15, what
        assert not (tmp_path / f"{what[0]}.root").exists()
    pytest.importorskip("distributed")
    client = _InlineClient()
    with pytest.raises(rntuple.ConversionError, match=r"within 0\.3 s \(first-byte timeout"):
        rntuple.convert_files(silent_url, tmp_path / "out", client=client, timeout=0.3, retries=0)
    assert client.submitted == 1
