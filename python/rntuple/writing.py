"""Writing: create a ROOT file and fill RNTuples from Awkward Arrays, dicts of arrays,
pyarrow tables, or pandas and Polars data frames."""

from __future__ import annotations

import os
import warnings
from typing import Any

from . import _core
from .convert import to_arrow_input
from .errors import InvalidArgumentError
from .reading import parse_size


def _size_option(size: int | str) -> int:
    """Bytes for a size option. A non-negative integer passes as it is: the core checks
    every option's range and names the option, with the same message as the command line
    (``rntuple copy --page-size 0``); a string such as ``"64 MiB"`` is read by
    :func:`parse_size`."""
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        return size
    return parse_size(size)


class WritableRNTuple:
    """An RNTuple being written; :meth:`extend` appends entries."""

    def __init__(self, file: WritableFile, name: str) -> None:
        self._file = file
        self._name = name

    @property
    def name(self) -> str:
        """The RNTuple's name."""
        return self._name

    @property
    def num_entries(self) -> int:
        """Entries written so far."""
        return self._file._writer().num_entries(self._name)

    def __len__(self) -> int:
        return self.num_entries

    def extend(self, data: Any) -> None:
        """Appends the entries of ``data``, which must have the fields the RNTuple was
        created with (same input kinds as :meth:`WritableFile.write`)."""
        table = to_arrow_input(data)
        self._file._writer().extend(self._name, table)

    def __repr__(self) -> str:
        return f"<WritableRNTuple {self._name!r}: {self.num_entries} entries>"


class WritableFile:
    """A new ROOT file, written on :meth:`close` (or at the end of a ``with`` block).

    ``f["Events"] = data`` creates the RNTuple ``Events`` from ``data``;
    ``f["Events"].extend(more)`` appends entries. Pages are compressed on all cores and
    the GIL is released while writing."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        compression: str | int = "zstd:5",
        cluster_size: int | str | None = None,
        page_size: int | str | None = None,
        page_checksums: bool = True,
        checkpoint_every: int | None = 1,
    ) -> None:
        if checkpoint_every is not None and (
            isinstance(checkpoint_every, bool)
            or not isinstance(checkpoint_every, int)
            or checkpoint_every < 1
        ):
            raise InvalidArgumentError(
                f"checkpoint_every must be a positive number of clusters or None, got {checkpoint_every!r}"
            )
        self._path = os.fspath(path)
        self._handle: _core.FileWriterHandle | None = None
        self._handle = _core.FileWriterHandle(
            self._path,
            str(compression),
            None if cluster_size is None else _size_option(cluster_size),
            None if page_size is None else _size_option(page_size),
            page_checksums,
            checkpoint_every,
        )

    @property
    def file_path(self) -> str:
        """The path being written."""
        return self._path

    def _writer(self) -> _core.FileWriterHandle:
        if self._handle is None:
            raise InvalidArgumentError(f"file {self._path!r} is closed")
        return self._handle

    def write(self, name: str, data: Any, *, types: dict[str, str] | None = None) -> WritableRNTuple:
        """Creates the RNTuple ``name`` from ``data``: an Awkward Array of records, a
        dict of NumPy/Awkward arrays or lists, a ``pyarrow.Table``, or a pandas or Polars
        DataFrame. Field types follow the data (``float64`` → ``double``, jagged →
        ``std::vector``, strings → ``std::string``, records → untyped records, option
        types and columns holding nulls → ``std::optional``); ``types`` maps field names
        to C++ type names that override them (e.g. ``{"pt": "float"}``)."""
        if not isinstance(name, str) or not name or "/" in name:
            raise InvalidArgumentError(f"invalid RNTuple name {name!r}")
        table = to_arrow_input(data)
        self._writer().create(name, table, types)
        return WritableRNTuple(self, name)

    def __setitem__(self, name: str, data: Any) -> None:
        self.write(name, data)

    def __getitem__(self, name: str) -> WritableRNTuple:
        if name not in self._writer().names():
            raise KeyError(f"no RNTuple {name!r} is being written in {self._path!r}")
        return WritableRNTuple(self, name)

    def keys(self) -> list[str]:
        """The names of the RNTuples written so far."""
        return self._writer().names()

    def close(self) -> None:
        """Commits every RNTuple and completes the file, which appears at its path only
        now (replacing what was there); closing twice does nothing. If completing fails,
        nothing is written and what was at the path stays."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            handle.close()

    def abort(self) -> None:
        """Abandons the file: nothing is written, and what was at the path stays."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            handle.abort()

    def __enter__(self) -> WritableFile:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # An exception inside the block abandons the file rather than completing a file
        # that holds only part of what was meant to be written.
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            warnings.warn(
                f"rntuple file {self._path!r} was never closed: nothing was written "
                "(call close() or use 'with')",
                ResourceWarning,
                stacklevel=2,
            )
            self.abort()

    def __repr__(self) -> str:
        return f"<WritableFile {self._path!r}>"


def recreate(
    path: str | os.PathLike,
    *,
    compression: str | int = "zstd:5",
    cluster_size: int | str | None = None,
    page_size: int | str | None = None,
    page_checksums: bool = True,
    checkpoint_every: int | None = 1,
) -> WritableFile:
    """Creates (or overwrites) a ROOT file for writing RNTuples; use it as a context
    manager. ``compression`` is ``"zstd:5"`` (ROOT's default), ``"lz4:4"``, ``"zlib:1"``,
    ``"lzma:7"``, ``"none"`` or ROOT's number (505); ``cluster_size`` is the compressed
    cluster size to aim at (ROOT's default 128 MiB; at least 1 byte, at most 1280 MiB)
    and ``page_size`` the largest uncompressed page (1 MiB; at least 8 bytes, at most
    1280 MiB), in bytes or as ``"64 MiB"``. A value out of range raises
    :class:`InvalidArgumentError` naming the option and its range.

    The file is written under a temporary name beside ``path`` (``NAME.XXXXXX.partial``)
    and renamed over ``path`` when closed, complete: an error, an exception inside the
    ``with`` block, or a file never closed leaves ``path`` as it was (a reader still
    holding the old file keeps reading it). ``checkpoint_every`` commits a cluster group
    every that many clusters (default 1): if the process is killed while writing, every
    committed cluster of the ``.partial`` file can be recovered with
    ``rntuple recover``; ``None`` commits one group at the end, as ROOT."""
    return WritableFile(
        path,
        compression=compression,
        cluster_size=cluster_size,
        page_size=page_size,
        page_checksums=page_checksums,
        checkpoint_every=checkpoint_every,
    )
