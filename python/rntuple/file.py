"""Opening files: :func:`open` and :class:`ReadOnlyFile`, the specs that name a file
and its RNTuple (``"f.root:Events"``, ``{"f.root": "Events"}``, globs), and the opening
of each file of a chain."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Iterator
from typing import Any

from . import _core
from .errors import FormatError, InvalidArgumentError, NotFoundError, _os_error
from .ntuple import Field, RNTuple
from .options import RemoteOptions, takes_options
from .selection import is_glob


class ReadOnlyFile:
    """A ROOT file opened for reading; ``f["Events"]`` or ``f["dir/Events"]`` gives an
    :class:`RNTuple`. Use it as a context manager. ``timeout``, ``connect_timeout``,
    ``retries``, ``speed_limit``, ``speed_time``, ``cache``, ``bunch_bytes``,
    ``read_ahead_bytes``, ``direct_io``, ``huge_pages``, ``daos_dir`` and
    ``daos_mapping`` apply as :func:`open` says."""

    @takes_options(remote=RemoteOptions)
    def __init__(self, path: str | os.PathLike, *, remote: RemoteOptions) -> None:
        self._path = os.fspath(path)
        try:
            self._handle: _core.RootFileHandle | None = _core.RootFileHandle(
                self._path, remote.network() or None, remote.core_cache(), remote.settings() or None
            )
        except NotFoundError as err:
            if self._path.startswith("daos://"):
                raise  # a DAOS pool or container that does not exist
            # Opening a file looks up no RNTuple: the core's "not found" here means the
            # bytes are not a ROOT file, a format error (and the message names the file).
            message = str(err) if self._path in str(err) else f"{self._path}: {err}"
            raise FormatError(message) from None
        self._keys: list[str] | None = None
        self._rntuples: dict[str, RNTuple] = {}

    @property
    def file_path(self) -> str:
        """The path the file was opened with."""
        return self._path

    def _file(self) -> _core.RootFileHandle:
        if self._handle is None:
            raise InvalidArgumentError(f"file {self._path!r} is closed")
        return self._handle

    def keys(self) -> list[str]:
        """The paths of every RNTuple in the file (also in sub-directories)."""
        if self._keys is None:
            self._keys = self._file().rntuple_paths()
        return list(self._keys)

    def __getitem__(self, name: str) -> RNTuple | Field:
        """The RNTuple at path ``name`` (the same object each time), or a field of one
        (``"Events/Jet/pt"``, as uproot's paths into an RNTuple)."""
        handle = self._file()  # a closed file opens nothing
        key = name.strip("/").split(";")[0] if isinstance(name, str) else name
        if isinstance(key, str) and key in self._rntuples:
            return self._rntuples[key]
        if isinstance(key, str) and key not in self.keys():
            # "ntuple/field/subfield": the longest leading part that is an RNTuple.
            parts = key.split("/")
            for i in range(len(parts) - 1, 0, -1):
                head = "/".join(parts[:i])
                if head in self.keys():
                    return self[head]["/".join(parts[i:])]
        nt = RNTuple(handle.open_rntuple(name))
        if isinstance(key, str):
            self._rntuples[key] = nt
        return nt

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip("/") in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def close(self) -> None:
        """Closes the file (RNTuples already opened keep their own handle)."""
        self._handle = None
        self._rntuples.clear()

    def __enter__(self) -> ReadOnlyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ReadOnlyFile {self._path!r}>"


def split_object_path(spec: str) -> tuple[str, str | None]:
    """Splits ``"file.root:dir/Events"`` into the file and the RNTuple path, by the rule
    of the command line (the core's ``split_target``, one rule for both): a spec that
    exists as a local file is the file; in a URL (``ntpl+s3+https://host/bkt/nano:Events``,
    ``root://host:1094//f.root:Events``) only a colon after the start of its path begins
    the name, so a port is never taken for one; else the part after the last colon."""
    return _core.split_target(spec)


@takes_options(remote=RemoteOptions)
def open(path: str | os.PathLike | dict[str, str], *, remote: RemoteOptions) -> ReadOnlyFile | RNTuple:
    """Opens a ROOT file (a path or URL): ``rntuple.open("f.root")`` gives a
    :class:`ReadOnlyFile` (a context manager), ``rntuple.open("f.root:Events")`` or
    ``rntuple.open({"f.root": "Events"})`` (uproot's specs) the RNTuple directly. A URL
    takes ``:NAME`` the same way (``"root://host:1094//f.root:Events"``, an object-store
    dataset ``"ntpl+s3+https://host/bucket/nano:Events"``): only a colon after the start
    of its path begins the name, by the rule of the command line. Many files (lists,
    glob patterns) are read with :func:`iterate`, :func:`concatenate` or
    :func:`rntuple.dask`.

    For a remote file (``http(s)://``, ``root(s)://``, ``s3://``), every request and
    every read of the file later on: ``timeout`` (seconds, as uproot's) is the longest
    wait for the first byte of an answer and the longest stall within one,
    ``connect_timeout`` (seconds) the longest a new connection may take to set up (TCP,
    TLS, XRootD's login), ``speed_limit`` (bytes a second, 0 for none) and
    ``speed_time`` (seconds) the low-speed limit (as curl's ``--speed-limit`` and
    ``--speed-time``: an answer that brings fewer than ``speed_limit * speed_time``
    bytes in any ``speed_time`` window from its first byte is given up, however it keeps
    moving), ``retries`` how often a request that failed for a reason that may pass
    (refused or reset connection, a timeout, HTTP 5xx, 408, 429) is tried again.
    ``None`` leaves a setting to the environment (``RNTUPLE_FIRST_BYTE_TIMEOUT`` and
    ``RNTUPLE_IDLE_TIMEOUT``, ``RNTUPLE_CONNECT_TIMEOUT``, ``RNTUPLE_SPEED_LIMIT``,
    ``RNTUPLE_SPEED_TIME``, ``RNTUPLE_RETRIES``), else the defaults: 30 s, 10 s, 1024
    bytes a second over 10 s, 3 retries. A remote file that cannot be read in the end
    raises :class:`~rntuple.RemoteError` (an :class:`OSError`; a
    :class:`~rntuple.RemoteTimeoutError` for a timeout) saying which timeout or limit
    ran out, with its value and setting, and the attempts made. A server that ignores
    byte ranges is read all the same (the whole file is downloaded once, and a
    :class:`~rntuple.SlowReadWarning` says why this is slow).

    ``cache``: the cache of remote reads on local disk, shared by every process that
    names the same directory: a directory, an :class:`rntuple.Cache` (with its
    ``validate`` and ``max_bytes``), ``True`` for the per-user default
    (``$XDG_CACHE_HOME/rntuple``, else ``~/.cache/rntuple``), ``False`` for none, or
    ``None`` (the default) for the environment's (``RNTUPLE_CACHE_DIR``,
    ``RNTUPLE_CACHE_VALIDATE``, ``RNTUPLE_CACHE_MAX_BYTES``; none when unset). A
    directory that is not yours alone raises :class:`PermissionError`
    (:mod:`rntuple.cache` says why). A cached remote file is read again
    without moving its bytes: with ``validate="open"`` (the default) one small request
    checks that the origin still has the same file, with ``"never"`` none.

    ``bunch_bytes`` and ``read_ahead_bytes``: how far planned reads of this file (remote
    ones, and local ones past the page cache) fetch ahead, in bytes; ``None`` leaves
    them to ``RNTUPLE_BUNCH_BYTES`` and ``RNTUPLE_READ_AHEAD_BYTES``, else the defaults
    (the source's, 32 MiB remote; 512 MiB). Two files opened with different values are
    read each with its own.

    ``direct_io``: when planned reads of a local file whose pages are mostly not in the
    page cache bypass it (``O_DIRECT``): ``"auto"`` (reads of a quarter of the machine's
    memory or more), ``"always"`` (or ``True``, ``"on"``), ``"never"`` (or ``False``,
    ``"off"``); ``None`` leaves it to ``RNTUPLE_DIRECT_IO``, else ``"auto"``.
    ``huge_pages``: ``True`` (``"always"``) maps large decoded columns in transparent huge
    pages, ``False`` (``"never"``) does not; a setting of the process's memory, which the
    last file opened sets; ``None`` leaves it to ``RNTUPLE_HUGE_PAGES``, else never.

    A DAOS container, ``"daos://POOL/CONTAINER:NAME"`` (ROOT's DAOS layout), is read from
    the directory store ``daos_dir`` (``None``: ``RNTUPLE_DAOS_DIR``; this build has no
    DAOS client); its RNTuples are opened by name and not listed (``keys()`` is empty).
    ``daos_mapping`` (``"per-page"``, ``"per-cluster"``; ``None``: ``RNTUPLE_DAOS_MAPPING``,
    else per-page) is how :func:`rntuple.merge` writes pages into a container; a read
    finds the mapping in what it reads."""
    # Checked before anything is opened.
    options = remote.as_keywords()
    if isinstance(path, dict):
        if len(path) != 1:
            raise InvalidArgumentError(
                f"open takes one file: a dict spec must have one entry, not {len(path)}; "
                "read many files with rntuple.iterate or rntuple.concatenate"
            )
        ((file_path, object_path),) = path.items()
        if not isinstance(object_path, (str, type(None))):
            raise InvalidArgumentError(
                f"the RNTuple of {file_path!r} must be named by a string, not {object_path!r}"
            )
        f = ReadOnlyFile(os.fspath(file_path), **options)
        return f if object_path is None else f[object_path]
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(
            f"open takes a path, URL or {{path: name}} dict, not {type(path).__name__}; "
            "read many files with rntuple.iterate or rntuple.concatenate"
        )
    spec = os.fspath(path)
    file_path, object_path = split_object_path(spec)
    if "://" not in file_path and is_glob(file_path) and not os.path.exists(file_path):
        raise InvalidArgumentError(
            f"open takes one file, not the pattern {spec!r}: read many files with "
            "rntuple.iterate or rntuple.concatenate"
        )
    f = ReadOnlyFile(file_path, **options)
    if object_path is None:
        return f
    return f[object_path]


def expand_files(files: Any) -> list[tuple[str, str | None]]:
    """``(file, RNTuple path)`` pairs from a spec, a list of specs, or a dict
    ``{file: name}``; glob patterns in file names are expanded (sorted)."""
    if isinstance(files, (str, os.PathLike)):
        items: Iterable[tuple[str, str | None]] = [split_object_path(os.fspath(files))]
    elif isinstance(files, dict):
        items = [(os.fspath(k), v) for k, v in files.items()]
    else:
        items = []
        for f in files:
            items = [*items, *expand_files(f)]
        return list(items)
    out = []
    for path, name in items:
        if any(c in path for c in "*?[") and "://" not in path:
            matched = sorted(glob.glob(path))
            if not matched:
                raise _os_error(None, "NotFound", f"no file matches {path!r}")
            out.extend((m, name) for m in matched)
        else:
            out.append((path, name))
    return out


def open_chain_member(item: tuple[str, str | None], remote: RemoteOptions) -> RNTuple:
    """The RNTuple of a chain's ``(file, RNTuple path)`` (the file's only one when the
    path is None), opened with :func:`open`'s ``remote`` options."""
    path, name = item
    f = ReadOnlyFile(path, **remote.as_keywords())
    return f[name] if name else RNTuple(f._file().open_rntuple(None))


#: Files a chain (:func:`iterate`, :func:`concatenate`, :func:`rntuple.dask`) opens
