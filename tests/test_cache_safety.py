"""The cache of remote reads touches only what it owns and refuses directories others
control (issue 45, items 4 and 6), against nginx on loopback:

- ``trash``, ``stats``, ``tmp``, an extent, ``e/<hh>``, an entry directory and
  ``rntuple-cache-v1`` itself replaced by symbolic links to directories outside the
  cache, full of files that look like what the cache keeps there (old temporary files
  of dead writers, stats files, copies of entries and extents): ``cache purge``,
  ``cache clear``, ``cache verify [--repair]``, ``cache ls``, ``cache stats`` and an
  ordinary read whose ``RNTUPLE_CACHE_MAX_BYTES`` sets off the automatic purge leave
  every file outside exactly as it was (sha256 of each, and the listing with types,
  modes, owners, sizes, times and link targets), and each says what it found;
- a cache directory made by another local user (made with ``useradd`` when missing, the
  directory and its cache made by that user through ``setpriv``), directories of ours
  writable by the group or by others, and ``rntuple-cache-v1`` of another user's in a
  directory of ours: refused, with the reason and what to do, by every command, by a
  read and by Python (``PermissionError``); nothing in them changes. An entry directory
  of another user's inside our cache is never read: removed, reported, read again;
- FIFOs and a socket where an extent, a ``meta``, ``current``, ``url``, ``purge.lock``
  and a stats file belong: every step ends (bounded by a timeout), reports them, and
  the reads are right;
- the per-user default directory (``cache=True``, ``rntuple cache`` without a
  directory) and ``Cache.stats()`` of a live reader.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import server_http
from conftest import require_rntuple_bin
from remote_data import write_nanoaod_like

import rntuple

ROOT = "rntuple-cache-v1"
OTHER_USER = "rntuple-other"
FIELDS = ["Jet_pt", "MET_pt", "PV_npvs", "Muon_eta", "event"]
#: A step that would open a FIFO blocking never ends: this bounds every step.
STEP_TIMEOUT = 120


def _env(**more: str) -> dict[str, str]:
    """The environment without this machine's cache settings, with ``more``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RNTUPLE_CACHE_")}
    return {**base, **more}


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(require_rntuple_bin()), *args],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        env=env or _env(),
        check=False,
    )


def _read(
    url: str, cache: Path, fields: list[str] | None = FIELDS, **more: str
) -> subprocess.CompletedProcess[str]:
    """``rntuple dump`` of ``fields`` (``None``: all) through the cache in ``cache``."""
    selection = ["--fields", ",".join(fields)] if fields else []
    return _run("dump", url, "--jsonl", *selection, env=_env(RNTUPLE_CACHE_DIR=str(cache), **more))


def _counters(cache: Path) -> dict[str, int]:
    out = _run("cache", "stats", "--json", "--cache-dir", str(cache))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["counters"]


def _digest(top: Path, skip: Path | None = None) -> dict[str, tuple[object, ...]]:
    """Every file, directory and link below ``top`` (links not followed; ``skip`` and
    what is below it left out): type, mode, owner, size, modification time, and the
    sha256 of a file's bytes or a link's target. The times of ``skip``'s directory are
    left out (making or removing ``skip`` changes them)."""
    out: dict[str, tuple[object, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if skip is not None and (path == skip or skip in path.parents):
                continue
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                content: object = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            else:
                content = None
            mtime = None if skip is not None and path == skip.parent else st.st_mtime_ns
            out[str(path.relative_to(top))] = (st.st_mode, st.st_uid, st.st_gid, st.st_size, mtime, content)
    return out


def _host() -> str:
    """This host's name as the cache writes it in file names."""
    name = "".join(c if c.isascii() and (c.isalnum() or c == "-") else "_" for c in socket.gethostname()[:64])
    return name or "localhost"


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _bait(at: Path, like: Path | None) -> None:
    """A directory outside the cache that looks like what the cache keeps where a link
    to it goes: a copy of ``like``, temporary and stats files of a dead writer, all two
    hours old (what a purge deletes first)."""
    if like is not None and like.is_dir():
        shutil.copytree(like, at, symlinks=True)
    else:
        at.mkdir(parents=True)
    dead = _dead_pid()
    (at / "precious.txt").write_text("a file of someone else's\n")
    (at / f"{_host()}.{dead}.tok.tmp").write_bytes(b"partial")
    (at / f"{_host()}.{dead}.tok.stats").write_text('{"counters": {"hits": 7}}')
    (at / "total").write_text('{"counters": {"hits": 1}}')
    old = time.time() - 7200
    for dirpath, dirnames, filenames in os.walk(at):
        for name in dirnames + filenames:
            os.utime(Path(dirpath) / name, (old, old), follow_symlinks=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A NanoAOD-like file of several clusters (about 1.5 MB)."""
    path = tmp_path_factory.mktemp("safety_served") / "nano.root"
    return write_nanoaod_like(path, 12_000, seed=45, cluster_size="150 kB").parent


@pytest.fixture(scope="module")
def local(served: Path) -> str:
    out = _run("dump", str(served / "nano.root"), "--jsonl", "--fields", ",".join(FIELDS))
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def local_all(served: Path) -> str:
    out = _run("dump", str(served / "nano.root"), "--jsonl")
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def template(nginx: server_http.Server, local: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache directory holding the file read whole, twice (its extents, stats)."""
    cache = tmp_path_factory.mktemp("safety_template") / "cache"
    for _ in range(2):
        out = _read(nginx.url("nano.root"), cache)
        assert out.returncode == 0, out.stderr
        assert out.stdout == local
    assert len(list(cache.glob(f"{ROOT}/e/*/*/*/x/*"))) >= 4
    return cache


def _entry(cache: Path) -> Path:
    (entry,) = cache.glob(f"{ROOT}/e/*/*")
    return entry


def _places(cache: Path) -> dict[str, str]:
    """The places a link takes, relative to the cache directory."""
    entry = _entry(cache).relative_to(cache)
    extents = sorted(cache.glob(f"{entry}/*/x/*"), key=lambda p: p.stat().st_size)
    return {
        "trash": f"{ROOT}/trash",
        "stats": f"{ROOT}/stats",
        "tmp": f"{ROOT}/tmp",
        "an extent": str(extents[-1].relative_to(cache)),
        "e/<hh>": str(entry.parent),
        "an entry": str(entry),
        "rntuple-cache-v1": ROOT,
    }


def _plant(cache: Path, place: str, outside: Path) -> None:
    """Replaces ``place`` of ``cache`` by a link to a bait in ``outside``."""
    at = cache / place
    bait = outside / ("bait-" + place.replace("/", "_"))
    if at.is_dir():
        _bait(bait, at)
        shutil.rmtree(at)
        at.symlink_to(bait)
    else:
        _bait(bait, None)
        shutil.copy2(at, bait / at.name)
        at.unlink()
        at.symlink_to(bait / at.name)


def _said(text: str, place: str, suffix: str) -> bool:
    return f"{place}: a symbolic link (never followed){suffix}" in text


#: Each step: (name, what it runs given the cache directory and the URL, the exit
#: status it ends with, where it says what it found, what follows the line, whether
#: the link is gone after it).
STEPS: list[tuple[str, list[str], int, str, str, bool]] = [
    ("cache purge", ["cache", "purge", "--target", "0"], 0, "stderr", " (removed)", True),
    ("cache clear", ["cache", "clear"], 0, "stderr", " (removed)", True),
    ("cache verify --repair", ["cache", "verify", "--repair"], 0, "stdout", " (repaired)", True),
    ("cache verify", ["cache", "verify"], 1, "stdout", "", False),
    ("cache ls", ["cache", "ls"], 0, "stderr", "", False),
    ("cache stats", ["cache", "stats"], 0, "stderr", "", False),
]


@pytest.mark.parametrize(
    "place_name", ["trash", "stats", "tmp", "an extent", "e/<hh>", "an entry", "rntuple-cache-v1"]
)
def test_links_in_the_cache_are_never_followed(
    nginx: server_http.Server, local_all: str, template: Path, tmp_path: Path, place_name: str
) -> None:
    url = nginx.url("nano.root")
    for name, args, status, stream, suffix, removed in [*STEPS, ("a read", [], 0, "", "", True)]:
        top = tmp_path / name.replace(" ", "_").replace("-", "")
        cache, outside = top / "cache", top / "outside"
        shutil.copytree(template, cache, symlinks=True)
        (cache / "mine.txt").write_text("the user's own file beside the cache\n")
        place = _places(cache)[place_name]
        _plant(cache, place, outside)
        before = _digest(top, skip=cache / ROOT)
        assert len(before) >= 6
        if name == "a read":
            # Every field: the pages the cache lacks are stored, which sets off the purge.
            size = sum(p.stat().st_size for p in template.rglob("*") if p.is_file())
            out = _read(url, cache, None, RNTUPLE_CACHE_MAX_BYTES=str(size // 4))
            assert out.returncode == 0, out.stderr
            assert out.stdout == local_all, "the read is right"
            counters = _counters(cache)
            assert counters["unsafe_files"] >= 1, counters
            assert counters["evicted_extents"] >= 1, ("the automatic purge ran", counters)
        else:
            out = _run(*args, "--cache-dir", str(cache))
            assert out.returncode == status, (name, out.stdout, out.stderr)
            text = out.stdout if stream == "stdout" else out.stderr
            assert _said(text, place, suffix), (name, place, text)
            if not removed and stream == "stderr":
                assert "verify --repair" in text, text
        assert _digest(top, skip=cache / ROOT) == before, (
            f"{name} with {place} a link changed what is outside"
        )
        assert (cache / place).is_symlink() != removed, (name, place)
        if removed:
            verify = _run("cache", "verify", "--cache-dir", str(cache))
            assert verify.returncode == 0, (name, verify.stdout)
        print(f"{place_name} / {name}: outside unchanged ({len(before)} files), {out.returncode=}")


def _other_user() -> pwd.struct_passwd:
    """The second local user, made with useradd when missing (the test fails without
    useradd: it needs a user other than root to own a directory)."""
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        pass
    useradd = shutil.which("useradd") or shutil.which("useradd", path="/usr/sbin:/sbin")
    assert useradd, "useradd is needed to make a second local user (apt-get install passwd)"
    subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(OTHER_USER)


def _as_other(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs ``command`` as the second user (setpriv: its uid and gid, no groups)."""
    user = _other_user()
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to act as the second user"
    out = subprocess.run(
        [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--", *command],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        env=env or {"PATH": os.environ["PATH"], "HOME": "/nonexistent"},
        check=False,
    )
    assert out.returncode == 0, (command, out.stderr)
    return out


@pytest.fixture
def public() -> Iterator[Path]:
    """A directory the second user can reach (/tmp/...: 0755), with a ``public/`` in it
    that everyone may write (1777, as /tmp)."""
    top = Path(tempfile.mkdtemp(prefix="rntuple-safety-", dir="/tmp"))
    try:
        top.chmod(0o755)
        (top / "public").mkdir()
        (top / "public").chmod(0o1777)
        yield top
    finally:
        shutil.rmtree(top)


REFUSED_WORDS = ["refused", "use a directory of your own", "not secret"]


def _assert_refused(url: str, cache: Path, words: list[str]) -> None:
    """Every step on ``cache`` is refused, saying ``words``; nothing in it changes."""
    before = _digest(cache)
    read = _read(url, cache)
    assert read.returncode == 1 and read.stdout == "", read.stderr
    for word in [*REFUSED_WORDS, *words, str(cache)]:
        assert word in read.stderr, (word, read.stderr)
    for args in (
        ["stats"],
        ["ls"],
        ["verify"],
        ["verify", "--repair"],
        ["purge", "--target", "0"],
        ["clear"],
    ):
        out = _run("cache", *args, "--cache-dir", str(cache))
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        for word in [*REFUSED_WORDS, *words]:
            assert word in out.stderr, (args, word, out.stderr)
    with pytest.raises(PermissionError) as raised:
        rntuple.open(url + ":Events", cache=str(cache))
    for word in [*REFUSED_WORDS, *words]:
        assert word in str(raised.value), (word, str(raised.value))
    with pytest.raises(PermissionError):
        rntuple.Cache(str(cache)).stats()
    assert _digest(cache) == before, f"a step changed the refused {cache}"


def test_directories_others_control_are_refused(nginx: server_http.Server, local: str, public: Path) -> None:
    url = nginx.url("nano.root")
    other = _other_user()
    name = f"user {OTHER_USER} (uid {other.pw_uid})"
    binary = str(require_rntuple_bin())
    neighbour = public / "neighbour"
    _bait(neighbour, None)
    before = _digest(neighbour)
    # Another user's: made by that user, and a cache filled in it by that user.
    theirs = public / "public" / "theirs"
    _as_other("mkdir", "-m", "0755", str(theirs))
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "RNTUPLE_CACHE_DIR": str(theirs)}
    filled = _as_other(binary, "dump", url, "--jsonl", "--fields", ",".join(FIELDS), env=env)
    assert filled.stdout == local
    assert (theirs / ROOT).stat().st_uid == other.pw_uid
    _assert_refused(url, theirs, [f"owned by {name}, not by you (user root, uid 0)"])
    # ... opened to all, as a shared /tmp/cache.
    shared = public / "public" / "shared"
    _as_other("mkdir", "-m", "0777", str(shared))
    _as_other("chmod", "0777", str(shared))
    assert shared.stat().st_mode & 0o777 == 0o777 and shared.stat().st_uid == other.pw_uid
    _assert_refused(url, shared, [f"owned by {name}"])
    # Ours, but writable by the group or by others.
    for mode, words in [
        (0o770, ["writable by its group (mode 0770)", "chmod go-w"]),
        (0o777, ["writable by others (mode 0777)"]),
        (0o1777, ["writable by others (mode 1777)"]),
    ]:
        ours = public / f"ours-{mode:o}"
        ours.mkdir()
        ours.chmod(mode)
        _assert_refused(url, ours, words)
        ours.rmdir()
    # Ours, with rntuple-cache-v1 in it made by the other user.
    mixed = public / "mixed"
    mixed.mkdir(mode=0o777)
    mixed.chmod(0o777)
    _as_other("mkdir", "-m", "0700", str(mixed / ROOT))
    mixed.chmod(0o700)
    _assert_refused(url, mixed, [f"{ROOT} in it is owned by {name}"])
    shutil.rmtree(theirs)
    shutil.rmtree(shared)
    shutil.rmtree(mixed)
    assert _digest(neighbour) == before


def test_an_entry_of_another_user_inside_the_cache_is_never_read(
    nginx: server_http.Server, local: str, template: Path, public: Path
) -> None:
    url = nginx.url("nano.root")
    other = _other_user()
    cache = public / "cache"
    shutil.copytree(template, cache, symlinks=True)
    cache.chmod(0o700)
    entry = _entry(cache)
    # The other user makes the URL's entry (a copy of ours, world-readable for them).
    staged = public / "staged"
    shutil.copytree(entry, staged)
    for p in [staged, *staged.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    shutil.rmtree(entry)
    opened = [cache, cache / ROOT, cache / ROOT / "e", entry.parent]
    for d in opened:
        d.chmod(0o777)
    _as_other("cp", "-r", str(staged), str(entry))
    for d in opened:
        d.chmod(0o700)
    assert entry.stat().st_uid == other.pw_uid
    verify = _run("cache", "verify", "--cache-dir", str(cache))
    assert verify.returncode == 1
    assert f"{entry.relative_to(cache)}: owned by user {OTHER_USER} (uid {other.pw_uid})" in verify.stdout, (
        verify.stdout
    )
    out = _read(url, cache)
    assert out.returncode == 0, out.stderr
    assert out.stdout == local
    assert entry.stat().st_uid == 0, "made anew, ours"
    assert _counters(cache)["unsafe_files"] >= 1
    assert _run("cache", "verify", "--cache-dir", str(cache)).returncode == 0


def test_fifos_and_sockets_never_block_and_are_reported(
    nginx: server_http.Server, local: str, template: Path, tmp_path: Path
) -> None:
    url = nginx.url("nano.root")
    cache = tmp_path / "cache"
    shutil.copytree(template, cache, symlinks=True)
    entry = _entry(cache)
    (version,) = [p for p in entry.iterdir() if p.is_dir()]
    extents = sorted((version / "x").iterdir(), key=lambda p: p.stat().st_size)
    fifos = [
        extents[-1],
        version / "meta",
        entry / "url",
        cache / ROOT / "purge.lock",
        cache / ROOT / "stats" / "total",
    ]
    fifos.append(cache / ROOT / "tmp" / f"{_host()}.{_dead_pid()}.tok.tmp")
    for path in fifos:
        path.unlink(missing_ok=True)
        os.mkfifo(path)
    # A socket (bound where its address is short enough, then moved in).
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s"))
    (tmp_path / "s").rename(extents[-2])
    try:
        listing = _run("cache", "ls", "--cache-dir", str(cache))
        assert listing.returncode == 0
        found = _run("cache", "verify", "--cache-dir", str(cache))
        assert found.returncode == 1
        for path in fifos:
            assert f"{path.relative_to(cache)}: a FIFO (never opened)" in found.stdout, (path, found.stdout)
        assert f"{extents[-2].relative_to(cache)}: a socket (never opened)" in found.stdout, found.stdout
        assert _run("cache", "stats", "--cache-dir", str(cache)).returncode == 0
        out = _read(url, cache)
        assert out.returncode == 0, out.stderr
        assert out.stdout == local
        repaired = _run("cache", "verify", "--repair", "--cache-dir", str(cache))
        assert repaired.returncode == 0, repaired.stdout
        assert _run("cache", "purge", "--target", "0", "--cache-dir", str(cache)).returncode == 0
        clean = _run("cache", "verify", "--cache-dir", str(cache))
        assert clean.returncode == 0, clean.stdout
        assert _read(url, cache).stdout == local
    finally:
        sock.close()


def test_the_default_directory_is_per_user_and_live_stats_are_seen(
    nginx: server_http.Server, served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = nginx.url("nano.root")
    xdg = tmp_path / "xdg"
    monkeypatch.delenv("RNTUPLE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    want = rntuple.open(str(served / "nano.root:Events")).arrays(FIELDS, library="arrow")
    first = rntuple.open(url + ":Events", cache=True)
    second = rntuple.open(url + ":Events", cache=True)
    assert first.arrays(FIELDS, library="arrow").equals(want)
    default = xdg / "rntuple"
    assert (default / ROOT).is_dir()
    assert default.stat().st_mode & 0o777 == 0o700
    assert rntuple.Cache().dir == str(default)
    # Seen while the readers live, before anything is written to a stats file.
    assert rntuple.Cache().stats()["stored_extents"] > 0
    # The first reader gone: its source writes the shared store's stats file, which the
    # second keeps open; the file and the live store are counted once.
    del first
    gc.collect()
    assert second.arrays(FIELDS, library="arrow").equals(want)
    live = rntuple.Cache().stats()
    assert live["requests"] > 0 and live["stored_extents"] > 0, live
    on_disk = [p for p in (default / ROOT / "stats").iterdir() if p.name != "total"]
    assert len(on_disk) == 1, "the live store's file, counted as the store is now"
    del second
    gc.collect()
    after = rntuple.Cache().stats()
    counters = [
        k for k in live if k not in ("bytes_on_disk", "entries", "versions", "extents", "temporary_files")
    ]
    assert {k: after[k] for k in counters} == {k: live[k] for k in counters}
    # The command finds the default without a directory named.
    out = _run("cache", "stats", "--json", env=_env(XDG_CACHE_HOME=str(xdg)))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["dir"] == str(default) and report["entries"] == 1
    assert report["counters"]["stored_extents"] == live["stored_extents"]
    home = _run("cache", "stats", "--json", env={**_env(HOME=str(tmp_path / "home")), "XDG_CACHE_HOME": ""})
    assert json.loads(home.stdout)["dir"] == str(tmp_path / "home" / ".cache" / "rntuple")
