"""Replacing a dataset of objects (ROOT's S3 layout) is as atomic as renaming a file,
URLs are parsed strictly, and special files never block a reader (issue 45).

- **Killed replacements.** ``rntuple copy --force SRC URL`` over an existing dataset is
  killed (SIGKILL) at 30 random moments spread over the whole run, from the process's
  start to its exit, on ``ntpl+file://`` and on SeaweedFS (a real S3 server). After
  each kill the dataset reads whole, with the values of the old source (read by
  uproot from the source file) or of the new one, never neither; it is the new one
  exactly when its anchor was switched. Objects the killed writer left are reported by
  ``rntuple info`` and ``rntuple verify`` (with their count and the command that
  removes them) and removed by ``rntuple verify --repair``, after which the store holds
  exactly the objects the anchor references: the ids from its header's to its
  footer's, as many as a fresh copy of that source stores. A server still carries out
  the requests a killed client had sent whole (late, on a loaded machine), so each
  check waits until the store has stayed unchanged for a moment; how many kills were
  followed by such a late change is printed.
- **URLs.** The command and Python accept and refuse the same URLs (a host in
  ``ntpl+file://``, relative paths, ``.``/``..``, empty and trailing segments), and a
  refused URL creates nothing on disk, under the working directory included.
  ``TARGET:NAME`` names the RNTuple after every URL kind, in Python as on the command
  line (``rntuple.open("ntpl+s3+http://host/bkt/nano:Events")``).
- **Special files.** A FIFO, a socket or a symbolic link in place of an object is
  refused within a bounded time (a FIFO never blocks), with a message naming it.
- **Messages.** A refused S3 request without credentials says none were found and
  names the URL as typed; a damaged footer is placed at its object, not at a byte
  offset.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import conformance_data  # noqa: E402
from object_store_cli import COMMAND_TIMEOUT, clean_env, printed, rntuple_command, run_cli  # noqa: E402

#: Kills per store.
KILLS = 30
#: How long a server's store must stay unchanged after a kill before it is checked.
QUIET_SECONDS = 0.5
#: How long a store may go on changing after a kill before the test fails.
SETTLE_LIMIT = 60.0


# ----------------------------------------------------------------------------- stores


@dataclass
class Place:
    """Where datasets go: a directory (``ntpl+file://``) or a SeaweedFS bucket."""

    kind: str
    root: Path
    server: Any = None

    def url(self, prefix: str) -> str:
        """The layout URL of dataset ``prefix``."""
        if self.server is None:
            return f"ntpl+file://{self.root}/{prefix}"
        return f"ntpl+s3+http://127.0.0.1:{self.server.port}/{self.server.bucket}/{prefix}"

    def env(self) -> dict[str, str]:
        """A command's environment (the server's credentials)."""
        return clean_env(None if self.server is None else self.server.env())

    def keys(self, prefix: str) -> list[str]:
        """The keys under ``prefix/`` (a directory's ``PREFIX.d/N.obj`` as ``N``)."""
        if self.server is None:
            folder = self.root / f"{prefix}.d"
            return sorted(p.name[: -len(".obj")] for p in folder.glob("*.obj")) if folder.is_dir() else []
        client = self.server.client()
        keys: list[str] = []
        token: dict[str, str] = {}
        while True:
            page = client.list_objects_v2(Bucket=self.server.bucket, Prefix=f"{prefix}/", **token)
            keys.extend(o["Key"][len(prefix) + 1 :] for o in page.get("Contents", []))
            if not page.get("IsTruncated"):
                return sorted(keys)
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def anchor(self, prefix: str) -> dict[str, Any] | None:
        """The dataset's JSON anchor, parsed (``None`` if there is none)."""
        if self.server is None:
            path = self.root / f"{prefix}.obj"
            return json.loads(path.read_text()) if path.is_file() else None
        try:
            body = self.server.client().get_object(Bucket=self.server.bucket, Key=prefix)["Body"].read()
        except Exception as e:  # botocore's NoSuchKey
            if "NoSuchKey" in type(e).__name__ or "NoSuchKey" in str(e):
                return None
            raise
        return dict(json.loads(body))


@pytest.fixture(scope="module")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A SeaweedFS server with an empty bucket (FAILS the tests that use it if it does
    not start)."""
    import server_seaweedfs

    try:
        server = server_seaweedfs.start(tmp_path_factory.mktemp("seaweedfs_empty"))
    except Exception as e:
        pytest.fail(f"SeaweedFS did not start: {type(e).__name__}: {e}", pytrace=False)
    try:
        yield server
    finally:
        server.close()


def _place(kind: str, tmp_path: Path, seaweedfs_server: Any) -> Place:
    return Place(kind, tmp_path, seaweedfs_server if kind == "seaweedfs" else None)


# ----------------------------------------------------------------------------- sources


@dataclass
class Source:
    """A source file, its values as uproot reads them, and the objects a copy stores."""

    path: Path
    values: dict[str, list[Any]]
    objects: int = 0


def _write_source(path: Path, seed: int, n: int) -> Source:
    """An RNTuple of ``n`` entries in small pages (a copy stores a few hundred objects)."""
    import numpy as np
    import uproot

    import rntuple

    rng = np.random.default_rng(seed)
    with rntuple.recreate(path, page_size="4 KiB", cluster_size="64 KiB") as f:
        f["Events"] = {"a": rng.integers(0, 1 << 40, n), "b": rng.random(n)}
    with uproot.open(path) as f:
        arrays = f["Events"].arrays(["a", "b"], library="np")
    return Source(path, {k: arrays[k].tolist() for k in ("a", "b")})


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> tuple[Source, Source]:
    """Two different sources (an old and a new dataset)."""
    root = tmp_path_factory.mktemp("sources")
    return _write_source(root / "old.root", 1, 60_000), _write_source(root / "new.root", 2, 50_000)


def _read_values(url: str) -> dict[str, list[Any]] | None:
    """The dataset's values as the Python package reads them, or ``None`` if it does not
    open and read whole."""
    import rntuple

    try:
        arrays = rntuple.open(url)["Events"].arrays(["a", "b"])
    except Exception:
        return None
    return {"a": arrays.a.to_list(), "b": arrays.b.to_list()}


def _ids(keys: list[str]) -> set[int]:
    """The object ids among ``keys`` (decimal numbers as written)."""
    return {int(k) for k in keys if k.isdigit() and (k == "0" or not k.startswith("0"))}


# ----------------------------------------------------------------------------- kills


def _settled(place: Place, prefix: str) -> tuple[dict[str, Any] | None, bool]:
    """The dataset's anchor once its store has stayed unchanged (anchor and listing) for
    ``QUIET_SECONDS``, and whether it changed after the first look. A server carries out
    the requests a killed client had sent whole, possibly after the client is gone; a
    directory store changes only while its writer lives, so it is settled at once."""
    state = (place.anchor(prefix), place.keys(prefix))
    if place.server is None:
        return state[0], False
    deadline = time.monotonic() + SETTLE_LIMIT
    quiet_since = time.monotonic()
    changed = False
    while time.monotonic() - quiet_since < QUIET_SECONDS:
        assert time.monotonic() < deadline, f"the store still changes {SETTLE_LIMIT} s after the kill"
        time.sleep(0.1)
        now = (place.anchor(prefix), place.keys(prefix))
        if now != state:
            state, changed, quiet_since = now, True, time.monotonic()
    return state[0], changed


def _timed_copy(source: Path, url: str, env: dict[str, str]) -> float:
    """Seconds a whole ``copy --force`` takes, from starting the process to its exit."""
    start = time.monotonic()
    command = [str(rntuple_command()), "copy", "--force", str(source), url]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, printed(proc)
    return time.monotonic() - start


@pytest.mark.parametrize("kind", ["directory", "seaweedfs"])
def test_killed_replacements_leave_one_whole_dataset(
    kind: str, sources: tuple[Source, Source], seaweedfs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30 SIGKILLs at random moments of ``copy --force`` over an existing dataset: after
    each, the dataset reads whole as the old source or the new one (the new one exactly
    when its anchor was switched), leftovers are reported by ``info`` and ``verify`` and
    removed by ``verify --repair``, and the store then holds exactly the anchor's
    objects."""
    place = _place(kind, tmp_path, seaweedfs)
    env = place.env()
    for key in [k for k in os.environ if k.startswith(("AWS_", "S3_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("AWS_"):
            monkeypatch.setenv(key, value)
    prefix = f"kills-{kind}-{tmp_path.name}"
    url = place.url(prefix)
    # How many objects a copy of each source stores, and how long a replacement takes.
    durations = []
    for source in sources:
        fresh = place.url(f"{prefix}-fresh-{source.path.stem}")
        proc = run_cli(["copy", str(source.path), fresh], env)
        assert proc.returncode == 0, printed(proc)
        source.objects = len(place.keys(f"{prefix}-fresh-{source.path.stem}"))
        assert source.objects > 100, source.objects
    proc = run_cli(["copy", str(sources[0].path), url], env)
    assert proc.returncode == 0, printed(proc)
    current = sources[0]
    for _ in range(2):
        durations.append(_timed_copy(sources[1].path, url, env))
        durations.append(_timed_copy(sources[0].path, url, env))
    span = max(durations) * 1.1
    rng = random.Random(45)
    outcomes = {"old": 0, "new": 0}
    leftovers_seen = 0
    late_changes = 0
    for trial in range(KILLS):
        new = sources[1] if current is sources[0] else sources[0]
        delay = rng.uniform(0.0, span)
        writer = subprocess.Popen(
            [str(rntuple_command()), "copy", "--force", str(new.path), url],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=COMMAND_TIMEOUT)
        anchor, changed = _settled(place, prefix)
        late_changes += changed
        assert anchor is not None, f"trial {trial} ({delay:.3f} s): no anchor at all"
        values = _read_values(url)
        assert place.anchor(prefix) == anchor, f"trial {trial}: the anchor changed after the store settled"
        assert values is not None, f"trial {trial} ({delay:.3f} s): neither dataset reads whole"
        if values == new.values:
            outcomes["new"] += 1
            current = new
        else:
            assert values == current.values, f"trial {trial} ({delay:.3f} s): values of neither source"
            outcomes["old"] += 1
        # The leftovers: every id outside the anchor's [header, footer] (one write's ids
        # are consecutive).
        referenced = set(range(anchor["headerObjId"], anchor["footerObjId"] + 1))
        stored = _ids(place.keys(prefix))
        assert referenced <= stored, f"trial {trial}: referenced objects missing"
        assert len(referenced) == current.objects, (trial, len(referenced), current.objects)
        left = stored - referenced
        info = run_cli(["info", url], env)
        if left:
            # (verify reads every page: only where it has leftovers to report.)
            leftovers_seen += 1
            plural = "s" if len(left) > 1 else ""
            note = f"{len(left)} object{plural} under the prefix that the anchor does not reference"
            assert info.returncode == 0 and note in info.stdout, printed(info)
            assert f"rntuple verify --repair {url}" in info.stdout, printed(info)
            verify = run_cli(["verify", url], env)
            assert verify.returncode == 1 and note in verify.stdout, printed(verify)
        else:
            assert info.returncode == 0 and "leftover" not in info.stdout, printed(info)
        repair = run_cli(["verify", "--repair", url], env)
        assert repair.returncode == 0, printed(repair)
        removed = f"REPAIRED {url}: {len(left)} leftover object{'' if len(left) == 1 else 's'} removed"
        assert removed in repair.stdout, printed(repair)
        assert _ids(place.keys(prefix)) == referenced, f"trial {trial}: the store is not the anchor's"
        assert set(place.keys(prefix)) == {str(n) for n in referenced}
        if place.server is None:
            left_files = [*(place.root / f"{prefix}.d").glob(".*"), *place.root.glob(f".{prefix}.obj.*")]
            assert not left_files, f"temporary files left: {left_files}"
    # The last state, repaired, still reads whole.
    assert _read_values(url) == current.values
    verify = run_cli(["verify", url], env)
    assert verify.returncode == 0 and "OK" in verify.stdout, printed(verify)
    # The anchor is the one switch: both outcomes happen over the whole run.
    print(
        f"{kind}: {KILLS} kills over {span:.2f} s: {outcomes}, {leftovers_seen} left objects over, "
        f"{late_changes} followed by a late change of the store"
    )
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes
    assert leftovers_seen > 0, "no kill left objects over"


#: A Python writer replacing a dataset: ``rntuple.recreate(URL)`` with the values of a
#: source file (argv: URL, source path).
PYTHON_WRITER = """
import sys, uproot, rntuple
with uproot.open(sys.argv[2]) as f:
    data = f["Events"].arrays(["a", "b"], library="np")
with rntuple.recreate(sys.argv[1], page_size="4 KiB", cluster_size="64 KiB") as out:
    out["Events"] = {"a": data["a"], "b": data["b"]}
"""


def test_python_recreate_replaces_as_atomically(sources: tuple[Source, Source], tmp_path: Path) -> None:
    """``rntuple.recreate(URL)`` over an existing dataset: an exception in the ``with``
    block leaves the old dataset whole (it is no longer removed when the RNTuple is
    created), and a Python writer killed at 10 random moments leaves the old dataset or
    the new one, never neither."""
    import numpy as np

    import rntuple

    old, new = sources
    url = f"ntpl+file://{tmp_path}/py"
    proc = run_cli(["copy", str(old.path), url], clean_env())
    assert proc.returncode == 0, printed(proc)
    with pytest.raises(RuntimeError, match="in the block"), rntuple.recreate(url) as f:
        f["Events"] = {"a": np.arange(10), "b": np.zeros(10)}
        raise RuntimeError("in the block")
    assert _read_values(url) == old.values
    command = [sys.executable, "-c", PYTHON_WRITER, url, str(new.path)]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=COMMAND_TIMEOUT)
    span = (time.monotonic() - start) * 1.1
    assert done.returncode == 0, done.stderr
    assert _read_values(url) == new.values
    current, other = new, old
    rng = random.Random(7)
    seen = {"old": 0, "new": 0}
    for trial in range(10):
        command = [sys.executable, "-c", PYTHON_WRITER, url, str(other.path)]
        writer = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, span))
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=COMMAND_TIMEOUT)
        values = _read_values(url)
        assert values is not None, f"trial {trial}: neither dataset reads whole"
        if values == other.values:
            seen["new"] += 1
            current, other = other, current
        else:
            assert values == current.values, f"trial {trial}: values of neither"
            seen["old"] += 1
        repair = run_cli(["verify", "--repair", url], clean_env())
        assert repair.returncode == 0, printed(repair)
    assert seen["old"] > 0, seen


# ----------------------------------------------------------------------------- URLs

#: URLs both front ends refuse (``{root}``: a scratch directory), with a word of why.
REFUSED_URLS = [
    ("ntpl+file://evil.host{root}/x", "the host"),
    ("ntpl+file://../x", "relative path"),
    ("ntpl+file://./x", "relative path"),
    ("ntpl+file://{root}/a/../x", "'..' segment"),
    ("ntpl+file://{root}/a/./x", "'.' segment"),
    ("ntpl+file://{root}/a//x", "empty segment"),
    ("ntpl+file://{root}/a/x/", "trailing '/'"),
    ("ntpl+file://{root}/", "trailing '/'"),
    ("ntpl+s3+http://127.0.0.1:1/bkt/a/../x", "'..' segment"),
    ("ntpl+s3+http://127.0.0.1:1/bkt//x", "empty segment"),
    ("ntpl+s3+http://127.0.0.1:1/bkt/x/", "trailing '/'"),
    ("ntpl+s3+http://127.0.0.1:http/bkt/x", "not a port"),
]
#: URLs both accept: (URL, the file the anchor is then).
ACCEPTED_URLS = [
    ("ntpl+file://{root}/new/deeper/ds", "new/deeper/ds.obj"),
    ("ntpl+file://localhost{root}/local", "local.obj"),
]


def _tree(root: Path) -> list[str]:
    """Every path under ``root``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_urls_are_accepted_and_refused_alike_and_refusals_create_nothing(tmp_path: Path) -> None:
    """The command (``copy``) and Python (``recreate``) refuse the same malformed URLs,
    exit status 2 / ``InvalidArgumentError``, each naming the URL and the reason, and
    leave the disk as it was (the working directory too); both accept the same good
    ones."""
    import numpy as np

    import rntuple

    source = conformance_data.write_file("types.string")
    store = tmp_path / "store"
    store.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    before = _tree(tmp_path)
    env = clean_env()
    for template, why in REFUSED_URLS:
        url = template.format(root=store)
        proc = run_cli(["copy", str(source), url], env, cwd=work)
        assert proc.returncode == 2, f"{url}: {printed(proc)}"
        assert why in proc.stderr and url in proc.stderr, f"{url}: {printed(proc)}"
        cwd = Path.cwd()
        os.chdir(work)
        try:
            with pytest.raises(rntuple.InvalidArgumentError) as refused:
                with rntuple.recreate(url) as f:
                    f["ntpl"] = {"x": np.arange(3)}
        finally:
            os.chdir(cwd)
        assert why in str(refused.value) and url in str(refused.value), f"{url}: {refused.value}"
        assert _tree(tmp_path) == before, f"{url} created {set(_tree(tmp_path)) - set(before)}"
    for template, anchor in ACCEPTED_URLS:
        url = template.format(root=store)
        proc = run_cli(["copy", str(source), url], env, cwd=work)
        assert proc.returncode == 0, f"{url}: {printed(proc)}"
        assert (store / anchor).is_file()
        python_url = template.format(root=tmp_path / "py")
        with rntuple.recreate(python_url) as f:
            f["ntpl"] = {"x": np.arange(3)}
        assert rntuple.open(python_url)["ntpl"].arrays().x.to_list() == [0, 1, 2]
    assert list(work.iterdir()) == []


def test_a_name_follows_every_url_kind_in_python_as_on_the_command_line(
    sources: tuple[Source, Source], seaweedfs: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``URL:NAME`` opens the dataset and checks its RNTuple's name, on ``ntpl+s3+http``
    (the issue's reproducer) and ``ntpl+file``, in Python and the command alike; the
    rule is the core's (``_core.split_target``) for ``http``, ``root`` and ``s3`` URLs
    too."""
    import rntuple
    from rntuple import _core

    for key, value in seaweedfs.env().items():
        monkeypatch.setenv(key, value)
    old = sources[0]
    for place in (Place("seaweedfs", tmp_path, seaweedfs), Place("directory", tmp_path)):
        url = place.url(f"nano-{tmp_path.name}")
        proc = run_cli(["copy", str(old.path), url], place.env())
        assert proc.returncode == 0, printed(proc)
        nt = rntuple.open(f"{url}:Events")
        assert nt.num_entries == len(old.values["a"])
        assert nt.arrays(["a"]).a.to_list()[:5] == old.values["a"][:5]
        info = run_cli(["info", f"{url}:Events"], place.env())
        assert info.returncode == 0 and "entries: 60000" in info.stdout, printed(info)
        wrong = run_cli(["info", f"{url}:Jets"], place.env())
        assert wrong.returncode == 1 and '"Events", not "Jets"' in wrong.stderr, printed(wrong)
        with pytest.raises(rntuple.NotFoundError, match='no RNTuple "Jets": the dataset holds one, "Events"'):
            rntuple.open(f"{url}:Jets")
    for target, split in [
        ("http://host:8080/f.root:Events", ("http://host:8080/f.root", "Events")),
        ("http://host:8080/f.root", ("http://host:8080/f.root", None)),
        ("root://host:1094//eos/f.root:dir/Events", ("root://host:1094//eos/f.root", "dir/Events")),
        ("s3://bkt/k.root:Events", ("s3://bkt/k.root", "Events")),
        ("ntpl+s3+http://host/bkt/nano:Events", ("ntpl+s3+http://host/bkt/nano", "Events")),
        ("ntpl+file:///tmp/s/nano:Events", ("ntpl+file:///tmp/s/nano", "Events")),
    ]:
        assert _core.split_target(target) == split, target
        assert rntuple.reading.split_object_path(target) == split, target


# ----------------------------------------------------------------------------- special files


@pytest.mark.parametrize("special", ["fifo", "socket", "symlink"])
def test_special_files_in_place_of_objects_are_refused_at_once(special: str, tmp_path: Path) -> None:
    """A FIFO, a socket or a symbolic link (to a file outside the store) in place of an
    object: ``info``, ``verify`` and Python's ``open`` fail within a bounded time (a
    FIFO must not block), naming the object and what it is; the file outside is not
    read."""
    import socket

    import rntuple

    source = conformance_data.write_file("types.vector.nested")
    url = f"ntpl+file://{tmp_path}/store/ds"
    proc = run_cli(["copy", str(source), url], clean_env())
    assert proc.returncode == 0, printed(proc)
    anchor = json.loads((tmp_path / "store/ds.obj").read_text())
    header = tmp_path / f"store/ds.d/{anchor['headerObjId']}.obj"
    header.unlink()
    holder = None
    if special == "fifo":
        os.mkfifo(header)
        said = "a FIFO (named pipe) where a regular file belongs"
    elif special == "socket":
        holder = socket.socket(socket.AF_UNIX)
        holder.bind(str(header))
        said = "a socket where a regular file belongs"
    else:
        outside = tmp_path / "outside.obj"
        outside.write_bytes(Path(source).read_bytes())
        header.symlink_to(outside)
        said = "a symbolic link where a regular file belongs"
    try:
        for command in (["info", url], ["verify", url]):
            proc = run_cli(command, clean_env())  # bounded by COMMAND_TIMEOUT: a hang fails
            assert proc.returncode == 1, printed(proc)
            assert said in printed(proc) and str(header) in printed(proc), printed(proc)
        with pytest.raises(OSError, match=re.escape(said)):
            rntuple.open(url)
    finally:
        if holder is not None:
            holder.close()


# ----------------------------------------------------------------------------- messages


def test_a_refusal_without_credentials_says_so_and_names_the_url(seaweedfs: Any, tmp_path: Path) -> None:
    """SeaweedFS refuses requests without credentials (HTTP 403): the message names the
    URL as typed (``ntpl+s3+http://...``, not the ``http://`` endpoint), says no
    credentials were found and which variables were looked for; with credentials the
    same dataset reads."""
    source = conformance_data.write_file("types.vector.nested")
    url = f"ntpl+s3+http://127.0.0.1:{seaweedfs.port}/{seaweedfs.bucket}/creds-{tmp_path.name}"
    proc = run_cli(["copy", str(source), url], clean_env(seaweedfs.env()))
    assert proc.returncode == 0, printed(proc)
    for command in (["info", url], ["copy", "--force", str(source), url]):
        proc = run_cli(command, clean_env())
        said = printed(proc)
        assert proc.returncode == 1, said
        assert f"{url} failed" in said and "403" in said, said
        assert "no S3 credentials were found in the environment" in said, said
        assert "AWS_ACCESS_KEY_ID" in said and "S3_ACCESS_KEY" in said, said
    proc = run_cli(["info", url], clean_env(seaweedfs.env()))
    assert proc.returncode == 0, printed(proc)


def test_a_damaged_footer_is_placed_at_its_object(tmp_path: Path) -> None:
    """A footer object with a flipped byte: the error names the footer envelope and its
    object (``object N``), not a byte offset of an object address."""
    source = conformance_data.write_file("types.vector.nested")
    url = f"ntpl+file://{tmp_path}/ds"
    proc = run_cli(["copy", str(source), url], clean_env())
    assert proc.returncode == 0, printed(proc)
    footer_id = json.loads((tmp_path / "ds.obj").read_text())["footerObjId"]
    footer = tmp_path / f"ds.d/{footer_id}.obj"
    data = bytearray(footer.read_bytes())
    data[len(data) // 2] ^= 0xFF
    footer.write_bytes(bytes(data))
    proc = run_cli(["info", url], clean_env())
    said = printed(proc)
    assert proc.returncode == 1, said
    assert f"footer envelope, object {footer_id}:" in said and "byte offset" not in said, said
