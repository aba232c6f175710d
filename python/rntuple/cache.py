"""The cache of remote reads on local disk: ``cache=`` of :func:`rntuple.open`,
:func:`rntuple.iterate`, :func:`rntuple.concatenate` and :func:`rntuple.dask`.

A directory holds the byte ranges read from remote files (``http(s)://``, ``root://``,
``s3://``), keyed by the URL (credentials and signatures removed) and the file's
identity, each range checksummed. Every process of the user that names the same
directory shares it (several Python processes, dask workers, the ``rntuple`` command),
safely: files appear complete or not at all. A cache fault (a full disk, a damaged file)
is counted and the bytes come from the origin: the cache never fails a read.

The directory must be the user's own and writable by nobody else (as ``ssh`` asks of
``~/.ssh``): a directory of another user's, or one its group or others may write (a
shared ``/tmp/cache``), is refused with a :class:`PermissionError` saying why, because
whoever can write a cache chooses the values read through it (its checksums are not
secret). A cache shared by a group is not offered. The default directory
(``cache=True``, ``Cache()``) is per user: ``$XDG_CACHE_HOME/rntuple``, else
``~/.cache/rntuple``, made with mode 0700. Links, FIFOs, sockets and other users' files
found inside the cache are never followed nor opened: they are removed by name and
counted (``unsafe_files``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from . import _core
from .errors import InvalidArgumentError

#: The values of ``validate``.
VALIDATE = ("open", "never")


def default_dir() -> str:
    """The per-user cache directory: ``$XDG_CACHE_HOME/rntuple`` when that is an
    absolute path, else ``~/.cache/rntuple`` (``$HOME``). Raises
    :class:`InvalidArgumentError` when neither is set."""
    found = _core.default_cache_dir(os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME"))
    if found is None:
        raise InvalidArgumentError(
            "no default cache directory: set XDG_CACHE_HOME or HOME to an absolute path, "
            "or name a directory (cache='/path/to/dir')"
        )
    return str(found)


@dataclass(frozen=True)
class Cache:
    """A cache of remote reads in ``dir`` (created, mode 0700, if missing; ``None``: the
    per-user default, see :func:`default_dir`). The directory must be yours and
    writable by nobody else, else reads through it raise :class:`PermissionError`.

    ``validate``: ``"open"`` (the default) checks each file opened against its origin
    with one small request, and caches a new version if it changed; ``"never"`` trusts
    the cache (no request for cached data: for files that never change, or offline).
    ``max_bytes``: the most the directory may hold (bytes, or a size such as
    ``"20 GB"``); least recently used data goes first. ``None``: the environment's
    ``RNTUPLE_CACHE_VALIDATE`` and ``RNTUPLE_CACHE_MAX_BYTES``, else ``"open"`` and no
    limit. A ``Cache`` pickles, so it travels to dask workers."""

    dir: str | None = None
    validate: str | None = None
    max_bytes: int | str | None = None

    def __post_init__(self) -> None:
        if self.dir is None:
            object.__setattr__(self, "dir", default_dir())
        if not isinstance(self.dir, (str, os.PathLike)) or not os.fspath(self.dir):
            raise InvalidArgumentError(f"Cache needs a directory, not {self.dir!r}")
        object.__setattr__(self, "dir", os.fspath(self.dir))
        if self.validate is not None and self.validate not in VALIDATE:
            raise InvalidArgumentError(f"Cache validate must be 'open' or 'never', not {self.validate!r}")
        size = self.max_bytes
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, str)) or size == ""):
            raise InvalidArgumentError(
                f"Cache max_bytes must be a number of bytes or a size such as '20 GB', not {size!r}"
            )
        if isinstance(size, int) and size < 0:
            raise InvalidArgumentError(f"Cache max_bytes must not be negative, not {size}")

    def options(self) -> dict[str, str]:
        """The cache's settings as the core takes them."""
        out = {"dir": str(self.dir)}
        if self.validate is not None:
            out["validate"] = self.validate
        if self.max_bytes is not None:
            out["max_bytes"] = str(self.max_bytes)
        return out

    def stats(self) -> dict[str, int]:
        """What the cache holds and did, summed over every process that used it (this
        process's open readers counted as they are now; other processes' as they last
        wrote them, at most a few seconds ago): ``entries``, ``versions``, ``extents``,
        ``bytes_on_disk``, and the counters (``hits``, ``misses``, ``bytes_from_cache``,
        ``bytes_from_origin``, ``corrupt_extents``, ``write_errors``, ``evicted_bytes``,
        ``unsafe_files``, ...). A directory that is not yours alone raises
        :class:`PermissionError`."""
        return dict(_core.cache_stats(str(self.dir)))


def check_cache(cache: Any) -> dict[str, str] | None:
    """``cache=`` as the core takes it: ``None`` leaves the environment's cache
    (``RNTUPLE_CACHE_DIR``); ``False`` turns caching off; ``True`` turns it on in the
    per-user default directory (:func:`default_dir`); a directory (a string or path) or
    a :class:`Cache` turns it on there."""
    if cache is None:
        return None
    if cache is False:
        return {"dir": ""}
    if cache is True:
        return Cache().options()
    if isinstance(cache, (str, os.PathLike)):
        return Cache(os.fspath(cache)).options()
    if isinstance(cache, Cache):
        return cache.options()
    raise InvalidArgumentError(
        f"cache must be None, True, False, a directory or an rntuple.Cache, not {type(cache).__name__}"
    )
