"""Writing: create a ROOT file and fill RNTuples from Awkward Arrays, dicts of arrays,
pyarrow tables, or pandas and Polars data frames; or fill one RNTuple from several
threads (:func:`recreate_parallel`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import warnings
from typing import Any, TypeVar

import pyarrow as pa

from . import _core
from .errors import InvalidArgumentError, UnsupportedError
from .libraries import to_arrow_input
from .options import parse_size, takes_options


def _size_option(size: int | str) -> int:
    """Bytes for a size option. A non-negative integer passes as it is: the core checks
    every option's range and names the option, with the same message as the command line
    (``rntuple copy --page-size 0``); a string such as ``"64 MiB"`` is read by
    :func:`parse_size`."""
    if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
        return size
    return parse_size(size)


def _check_checkpoint_every(checkpoint_every: int | None) -> None:
    """Refuses a ``checkpoint_every`` that is neither a positive integer nor ``None``."""
    if checkpoint_every is not None and (
        isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1
    ):
        raise InvalidArgumentError(
            f"checkpoint_every must be a positive number of clusters or None, got {checkpoint_every!r}"
        )


@dataclasses.dataclass(frozen=True)
class WriteOptions:
    """The options every writer takes (:func:`recreate`, :func:`recreate_parallel`, and
    their classes), defined and checked here once; see :func:`recreate` for each."""

    compression: str | int = "zstd:5"
    cluster_size: int | str | None = None
    page_size: int | str | None = None
    page_checksums: bool = True
    checkpoint_every: int | None = 1

    def __post_init__(self) -> None:
        _check_checkpoint_every(self.checkpoint_every)

    def handle(self) -> _core.WriteOptionsHandle:
        """The core's form of these options (checked there: compression, size ranges)."""
        return _core.WriteOptionsHandle(
            str(self.compression),
            None if self.cluster_size is None else _size_option(self.cluster_size),
            None if self.page_size is None else _size_option(self.page_size),
            self.page_checksums,
            self.checkpoint_every,
        )


class _AtomicOutput:
    """A ROOT file written under a temporary name beside its path and renamed over it
    only when closed, complete; the base of :class:`WritableFile` and
    :class:`ParallelWriter`, which say how to :meth:`close` and :meth:`abort`."""

    _path: str
    _handle: Any

    @property
    def file_path(self) -> str:
        """The path being written."""
        return self._path

    def close(self) -> None:
        """Completes the file."""
        raise NotImplementedError

    def abort(self) -> None:
        """Abandons the file."""
        raise NotImplementedError

    def __enter__(self: _Output) -> _Output:
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


_Output = TypeVar("_Output", bound=_AtomicOutput)


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


class WritableFile(_AtomicOutput):
    """A new ROOT file, written on :meth:`close` (or at the end of a ``with`` block).

    ``f["Events"] = data`` creates the RNTuple ``Events`` from ``data``;
    ``f["Events"].extend(more)`` appends entries. Pages are compressed on all cores and
    the GIL is released while writing."""

    @takes_options(options=WriteOptions)
    def __init__(self, path: str | os.PathLike, *, options: WriteOptions) -> None:
        self._path = os.fspath(path)
        self._handle: _core.FileWriterHandle | _core.ObjectWriterHandle | None = None
        # An object-store URL (ROOT's S3 layout) holds one RNTuple, stored as objects.
        handle = _core.ObjectWriterHandle if _core.is_object_layout(self._path) else _core.FileWriterHandle
        self._handle = handle(self._path, options.handle())

    def _writer(self) -> _core.FileWriterHandle | _core.ObjectWriterHandle:
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

    def __repr__(self) -> str:
        return f"<WritableFile {self._path!r}>"


@takes_options(options=WriteOptions)
def recreate(path: str | os.PathLike, *, options: WriteOptions) -> WritableFile:
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
    ``rntuple recover``; ``None`` commits one group at the end, as ROOT.

    ``path`` may also be an object-store URL, ``ntpl+s3+https://HOST/BUCKET/PREFIX``
    (``ntpl+s3+http://`` for a local test server; credentials from ``AWS_*`` or ROOT's
    ``S3_ACCESS_KEY``, ``S3_SECRET_KEY``, ``S3_REGION``) or ``ntpl+file:///DIR/PREFIX``:
    the RNTuple is stored in ROOT's S3 layout, an object per page, page list, header and
    footer, and the JSON anchor at ``PREFIX`` written last, on :meth:`~WritableFile.close`,
    so that readers see the dataset only once it is complete. Such a dataset holds one
    RNTuple (``URL:NAME`` names it: ``f[NAME]`` is then the only RNTuple it takes). An
    existing dataset at the URL is replaced as a file is: the new objects are stored
    beside its own (under new object ids), the anchor is switched on close, and only
    then are the old objects removed; until then, and if the process is killed, the old
    dataset reads whole. An error, an exception in the ``with`` block or
    :meth:`~WritableFile.abort` removes the objects stored and leaves the store as it
    was. A malformed URL (a host in ``ntpl+file://``, a relative path, ``.``/``..``,
    empty or trailing segments) raises :class:`InvalidArgumentError` before anything is
    created."""
    return WritableFile(path, **dataclasses.asdict(options))


class FillContext:
    """One thread's way of filling a :class:`ParallelWriter`'s RNTuple (ROOT's
    ``RNTupleFillContext``): it buffers and compresses its own pages and commits a
    cluster into the shared file whenever its cluster is full, so the clusters of the
    threads interleave while the entries of one context keep their order. Use one
    context per thread (a context is not meant to be shared); :meth:`close` (or the end
    of a ``with`` block) commits its last cluster."""

    def __init__(self, handle: _core.FillContextHandle) -> None:
        self._handle: _core.FillContextHandle | None = handle

    def _context(self) -> _core.FillContextHandle:
        if self._handle is None:
            raise InvalidArgumentError("the fill context is closed")
        return self._handle

    @property
    def num_entries(self) -> int:
        """Entries written through this context so far."""
        return 0 if self._handle is None else self._handle.num_entries

    @property
    def closed(self) -> bool:
        """Whether the context was closed."""
        return self._handle is None

    def extend(self, data: Any) -> None:
        """Appends the entries of ``data``, which must have the fields of the writer's
        schema (same input kinds as :meth:`WritableFile.write`). The GIL is released
        while the entries are written, so that threads fill in parallel."""
        table = to_arrow_input(data)
        self._context().extend(table)

    def flush_cluster(self) -> None:
        """Commits the open cluster now (ROOT's ``FlushCluster``)."""
        self._context().flush_cluster()

    def close(self) -> None:
        """Commits the last cluster and ends the context; closing twice does nothing."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            handle.close()

    def _abandon(self) -> None:
        """Ends the context without committing its open cluster (the writer is being
        abandoned)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            handle.abandon()

    def __enter__(self) -> FillContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"{self.num_entries} entries"
        return f"<FillContext: {state}>"


class ParallelWriter(_AtomicOutput):
    """One RNTuple in a new ROOT file, filled from several threads (ROOT's
    ``RNTupleParallelWriter``): each thread takes a :meth:`fill_context` and extends it.
    The file appears at its path only on :meth:`close` (or at the end of a ``with``
    block), complete; an exception in the block, or :meth:`abort`, leaves the path as it
    was."""

    @takes_options(options=WriteOptions)
    def __init__(
        self,
        path: str | os.PathLike,
        name: str,
        schema: Any,
        *,
        types: dict[str, str] | None = None,
        options: WriteOptions,
    ) -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise InvalidArgumentError(f"invalid RNTuple name {name!r}")
        self._path = os.fspath(path)
        if _core.is_object_layout(self._path):
            raise UnsupportedError(
                f"{self._path}: recreate_parallel writes ROOT files only; write an RNTuple "
                "as objects with rntuple.recreate (one thread), or write a file and copy it "
                "with rntuple.merge([file], url, keep_compression=True)"
            )
        self._name = name
        self._contexts: list[FillContext] = []
        self._lock = threading.Lock()
        arrow_schema = schema if isinstance(schema, pa.Schema) else to_arrow_input(schema).schema
        self._handle: _core.ParallelWriterHandle | None = None
        self._handle = _core.ParallelWriterHandle(self._path, name, arrow_schema, options.handle(), types)

    @property
    def name(self) -> str:
        """The RNTuple's name."""
        return self._name

    def _writer(self) -> _core.ParallelWriterHandle:
        if self._handle is None:
            raise InvalidArgumentError(f"file {self._path!r} is closed")
        return self._handle

    @property
    def num_entries(self) -> int:
        """Entries in the clusters committed so far (by every context)."""
        return self._writer().num_entries()

    def fill_context(self) -> FillContext:
        """A new fill context, for one thread (safe to call from any thread)."""
        context = FillContext(self._writer().fill_context())
        with self._lock:
            self._contexts.append(context)
        return context

    def close(self) -> None:
        """Closes the contexts still open (committing their last clusters), writes the
        page lists, footer and anchor, and completes the file, which appears at its path
        only now; closing twice does nothing. Every thread must be done filling. If
        completing fails, nothing is written and what was at the path stays."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        with self._lock:
            contexts, self._contexts = self._contexts, []
        try:
            for context in contexts:
                context.close()
        except BaseException:
            handle.abort()
            raise
        handle.close()

    def abort(self) -> None:
        """Abandons the file: nothing is written, and what was at the path stays. The
        contexts are ended without committing; one still filling in another thread
        fails from then on (the temporary file goes with it)."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            with self._lock:
                contexts, self._contexts = self._contexts, []
            handle.abort()
            for context in contexts:
                # A context busy in another thread cannot be ended here; it fails on its
                # next write, the writer being gone.
                with contextlib.suppress(RuntimeError):
                    context._abandon()

    def __repr__(self) -> str:
        return f"<ParallelWriter {self._name!r} in {self._path!r}>"


@takes_options(options=WriteOptions)
def recreate_parallel(
    path: str | os.PathLike,
    name: str,
    schema: Any,
    *,
    types: dict[str, str] | None = None,
    options: WriteOptions,
) -> ParallelWriter:
    """Creates (or overwrites) a ROOT file with one RNTuple ``name`` to fill from several
    threads; use it as a context manager::

        with rntuple.recreate_parallel("out.root", "Events", chunks[0]) as w:
            def fill(chunk):
                with w.fill_context() as ctx:
                    ctx.extend(chunk)
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(fill, chunks))

    ``schema`` gives the fields: a ``pyarrow.Schema`` (a nullable field becomes
    ``std::optional``; pyarrow makes fields nullable unless told ``nullable=False``), or
    data of any kind :meth:`WritableFile.write` takes, whose fields and types are taken
    as they would be written (its entries are not written); ``types`` maps field names
    to C++ type names that override them. Each thread fills through a
    :meth:`ParallelWriter.fill_context` of its own, whose pages are compressed with the
    GIL released; clusters are committed in the order the contexts fill them, and the
    entries of one context keep their order. The options are those of :func:`recreate`
    (``cluster_size`` is each context's cluster size); the file appears at ``path``
    only when the writer is closed, complete."""
    return ParallelWriter(path, name, schema, types=types, **dataclasses.asdict(options))
