"""Dask: :func:`dask` builds a lazy ``dask_awkward.Array`` whose partitions are
cluster-aligned entry ranges of one or more files; :func:`convert_files` converts many
TTree files to RNTuple, one task per file, on a ``dask.distributed`` cluster.

``rntuple.dask`` is the function :func:`dask`; import the converter as
``from rntuple.dask import convert_files`` (or use ``rntuple.convert_files``).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ConversionError, InvalidArgumentError
from .reading import FieldSelection, StepSize, _expand_files, open_rntuples
from .ttree import ConvertResult, EntryRange, convert

_OPEN_LIMIT = 8
_open: OrderedDict[tuple[str, str, str], tuple[Any, threading.Lock]] = OrderedDict()
_open_lock = threading.Lock()
_opening: dict[tuple[str, str, str], threading.Lock] = {}


def _cached_rntuple(token: str, path: str, name: str) -> tuple[Any, threading.Lock, dict[str, Any]]:
    """The RNTuple ``name`` of ``path`` as this process last opened it for the graph
    ``token`` (its metadata is read once per process, not per partition), a lock for
    exact metrics, and what opening it cost if this call opened it (empty otherwise).
    The few most recently used stay open; a new graph opens its files anew (they may
    have been rewritten)."""
    from .reading import ReadOnlyFile

    key = (token, path, name)
    with _open_lock:
        hit = _open.get(key)
        if hit is not None:
            _open.move_to_end(key)
            return hit[0], hit[1], {}
        opening_lock = _opening.setdefault(key, threading.Lock())
    with opening_lock:  # one thread opens a file; the others wait and share it
        with _open_lock:
            hit = _open.get(key)
            if hit is not None:
                _open.move_to_end(key)
                return hit[0], hit[1], {}
        nt = ReadOnlyFile(path)[name]
        opening = nt.metrics()  # before any other thread can use it
        with _open_lock:
            entry = _open[key] = (nt, threading.Lock())
            _opening.pop(key, None)
            while len(_open) > _OPEN_LIMIT:
                _open.popitem(last=False)
        return entry[0], entry[1], opening


class PartitionReader:
    """Reads one partition, ``(file, rntuple path, start, stop)``, as an Awkward Array:
    the picklable function Dask calls on its workers. It holds field names and the
    Awkward form (computed once, when the graph is built), never an open file.

    It implements dask-awkward's column projection (``mock``,
    ``prepare_for_projection``, ``necessary_columns``, ``project``,
    ``project_manually``): when a graph is optimized, dask-awkward traces it on a
    data-less array of ``form`` and asks which buffers it touched; the reader then
    reads only the top-level fields those buffers belong to (a touched subfield reads
    its whole top-level field) and fills the others with placeholders, so the array
    keeps ``form``'s structure. With ``report``, each call also returns a one-record
    array of what the partition read (see :func:`dask`)."""

    def __init__(
        self,
        selection: dict[str, list[str]],
        form: Any,
        *,
        fields: list[str] | None = None,
        report: bool = False,
        token: str | None = None,
    ) -> None:
        #: each top-level field of the array: the field paths read for it (itself, or
        #: the nested paths selected under it)
        self.selection = dict(selection)
        self.form = form
        #: the top-level fields this reader reads
        self.fields = list(selection) if fields is None else list(fields)
        self.report = report
        #: the graph's identity: a worker process keeps its files open for it
        self.token = os.urandom(8).hex() if token is None else token
        self.behavior: dict | None = None
        self.attrs: dict | None = None

    # -- dask-awkward's IO-function protocol -----------------------------------------

    @property
    def return_report(self) -> bool:
        """Whether each call returns ``(array, report)`` (dask-awkward's ``from_map``
        then returns the array and the report as two collections)."""
        return self.report

    @property
    def use_optimization(self) -> bool:
        """Column projection is always on (dask-awkward's configuration can skip it)."""
        return True

    def mock(self) -> Any:
        """A data-less (typetracer) array of the full form."""
        from awkward.typetracer import typetracer_from_form

        return typetracer_from_form(self.form, behavior=self.behavior, attrs=self.attrs)

    def mock_empty(self, backend: str = "cpu") -> Any:
        """A length-0 array of the full form."""
        import awkward as ak

        layout = self.form.length_zero_array(highlevel=False)
        return ak.to_backend(layout, backend, highlevel=True, behavior=self.behavior)

    def prepare_for_projection(self) -> Any:
        """A typetracer with a report of touched buffers, and the form's structure."""
        from dask_awkward.lib.io.columnar import ColumnProjectionMixin

        return ColumnProjectionMixin.prepare_for_projection(self)  # type: ignore[arg-type]

    def necessary_columns(self, report: Any, state: Any) -> frozenset[str]:
        """The top-level fields whose buffers the traced graph touched (data, or the
        offsets needed for shapes)."""
        from dask_awkward.lib.io.columnar import ColumnProjectionMixin

        paths = ColumnProjectionMixin.necessary_columns(self, report, state)  # type: ignore[arg-type]
        return frozenset(p.split(".", 1)[0] for p in paths) & frozenset(self.selection)

    def project(self, report: Any, state: Any) -> PartitionReader:
        """The reader of only the fields the traced graph needs."""
        return self.project_columns(self.necessary_columns(report, state))

    def project_manually(self, columns: frozenset[str]) -> PartitionReader:
        """The reader of the fields ``columns`` names (see :meth:`project_columns`)."""
        return self.project_columns(columns)

    def project_columns(self, columns: frozenset[str] | set[str] | list[str]) -> PartitionReader:
        """The reader of the top-level fields named (or holding the dotted paths named)
        in ``columns``, in schema order; the form stays the full one."""
        wanted = {c.split(".", 1)[0] for c in columns}
        unknown = wanted - set(self.selection)
        if unknown:
            raise InvalidArgumentError(f"no such fields to project to: {sorted(unknown)}")
        fields = [f for f in self.selection if f in wanted]
        return PartitionReader(self.selection, self.form, fields=fields, report=self.report, token=self.token)

    def __dask_tokenize__(self) -> Any:
        """A deterministic token: equal readers, equal graph keys."""
        return ("rntuple.PartitionReader", self.token, self.selection, self.fields, self.report)

    # -- reading ---------------------------------------------------------------------

    def __call__(self, partition: tuple[str, str, int, int]) -> Any:
        """The partition's entries of the selected fields (and, with ``report``, what
        reading them cost)."""
        import time

        import awkward as ak

        path, name, start, stop = partition
        began = time.perf_counter()
        nt, lock, opening = _cached_rntuple(self.token, path, name)
        paths = [p for f in self.fields for p in self.selection[f]]
        with lock if self.report else contextlib.nullcontext():
            # (with a report, this file's reads in this process wait for each other, so
            # the difference of the counters is this partition's)
            before = nt.metrics() if self.report else {}
            if paths:
                array = nt.arrays(paths, entry_start=start, entry_stop=stop, library="ak")
                layout = array.layout
            else:  # only the number of entries is needed: no field is read
                layout = ak.contents.RecordArray([], [], length=stop - start)
            after = nt.metrics() if self.report else {}
        if len(self.fields) != len(self.selection):
            from dask_awkward.lib.unproject_layout import unproject_layout

            layout = unproject_layout(self.form, layout)
        out = ak.Array(layout, behavior=self.behavior, attrs=self.attrs)
        if not self.report:
            return out
        metrics = {
            k: after[k] - before[k] + opening.get(k, 0) for k in ("bytes_read", "bytes_used", "requests")
        }
        record = {
            "file": path,
            "rntuple": name,
            "entry_start": start,
            "entry_stop": stop,
            "fields": list(self.fields),
            "bytes_read": int(metrics["bytes_read"]),
            "bytes_used": int(metrics["bytes_used"]),
            "requests": int(metrics["requests"]),
            "seconds": time.perf_counter() - began,
            "pid": os.getpid(),
        }
        return out, ak.Array([record])

    def __repr__(self) -> str:
        return f"PartitionReader(fields={self.fields!r}, of {len(self.selection)})"


def dask(
    files: Any,
    fields: FieldSelection = None,
    *,
    step_size: StepSize = "100 MB",
    report: bool = False,
) -> Any:
    """A lazily partitioned ``dask_awkward.Array`` of the selected fields over ``files``
    (the specs of :func:`rntuple.iterate`). Each partition is a cluster-aligned entry
    range of at most ``step_size`` (entries, or uncompressed bytes as ``"100 MB"``);
    nothing is read until the graph is computed, with any Dask scheduler (a
    ``dask.distributed`` cluster of processes too: a partition is a file path or URL,
    an RNTuple name and an entry range).

    The array's form is computed once, here, from the first file. When the graph is
    computed, dask-awkward's column projection narrows each partition's read to the
    top-level fields the graph uses (``dask_awkward.report_necessary_columns`` names
    them); ``dask.config.set({"awkward.optimization.which": ["layer-chains"]})``
    turns that off.

    With ``report=True`` it returns ``(array, report)``: ``report`` is a
    ``dask_awkward.Array`` with one record per partition read (computed with the
    array, ``dask.compute(result, report)``): ``file``, ``rntuple``, ``entry_start``,
    ``entry_stop``, ``fields`` (those read), ``bytes_read`` (bytes the source read,
    opening the file included), ``bytes_used`` (stored page bytes decoded),
    ``requests``, ``seconds`` and ``pid`` (the reading process). Errors are raised, not reported."""
    import dask_awkward as dak

    partitions: list[tuple[str, str, int, int]] = []
    form = None
    selected: list[str] | None = None
    for nt in open_rntuples(files):
        paths = nt.resolve_fields(fields)
        if selected is None:
            selected = paths
            empty = nt.arrays(paths, entry_start=0, entry_stop=0)
            form = empty.layout.form
        for start, stop in nt.batch_ranges(paths, 0, nt.num_entries, step_size):
            partitions.append((_absolute(nt.file_path), nt.path, start, stop))
    if not partitions or selected is None:
        raise ValueError("no entries to read: the files are empty or none were given")
    divisions = [0]
    for _, _, start, stop in partitions:
        divisions.append(divisions[-1] + stop - start)
    selection: dict[str, list[str]] = {}
    for path in selected:
        selection.setdefault(path.split(".", 1)[0], []).append(path)
    return dak.from_map(
        PartitionReader(selection, form, report=report),
        partitions,
        label="rntuple",
        divisions=tuple(divisions),
    )


def _convert_task(input: str, output: str, tree: str | None, options: dict[str, Any]) -> ConvertResult:
    """One file's conversion, as a worker runs it."""
    return convert(input, output, tree=tree, **options)


def _absolute(path: str) -> str:
    """A local path made absolute (workers may run elsewhere); URLs as they are."""
    return path if "://" in path else os.path.abspath(path)


def convert_files(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | dict[str, str],
    out_dir: str | os.PathLike[str],
    *,
    client: Any = None,
    tree: str | None = None,
    name: str | None = None,
    branches: str | Sequence[str] | None = None,
    entries: EntryRange | None = None,
    compression: str | int | None = None,
    skip_unsupported: bool = False,
    overwrite: bool = False,
) -> list[ConvertResult]:
    """Converts TTree files to RNTuple files on a ``dask.distributed`` cluster, one task
    per file: each input ``in/x.root`` becomes ``out_dir/x.root``.

    Args:
        inputs: files (paths or URLs), each optionally ``"file.root:Tree"``, glob
            patterns (``"in/*.root"``, expanded here, sorted), or ``{file: tree}``.
        out_dir: the directory of the outputs (created if missing); with workers on
            other machines it must be on a file system they all share, as the inputs.
        client: the ``distributed.Client`` to run on; default: the current one
            (``distributed.default_client()``).
        tree: the TTree of every input that does not name its own.
        name, branches, entries, compression, skip_unsupported, overwrite: as for
            :func:`rntuple.convert`, the same for every file.

    Returns:
        One :class:`~rntuple.ttree.ConvertResult` per input, in the order of the inputs.

    Raises:
        ConversionError: after every task finished, if any failed: its message names
            each failed file with its error; ``.failures`` maps each failed input to its
            exception and ``.results`` holds the conversions that succeeded (their
            outputs are complete; a failed one leaves no output).
        InvalidArgumentError: no inputs, or two inputs whose outputs would collide.
    """
    import distributed

    pairs = _expand_files(inputs)
    if not pairs:
        raise InvalidArgumentError("no input files to convert")
    directory = Path(_absolute(os.fspath(out_dir)))
    directory.mkdir(parents=True, exist_ok=True)
    tasks: list[tuple[str, str, str | None]] = []
    seen: dict[str, str] = {}
    for path, own_tree in pairs:
        base = path.rstrip("/").rsplit("/", 1)[-1]
        if base in seen:
            raise InvalidArgumentError(
                f"inputs {seen[base]!r} and {path!r} have the same file name: their outputs in "
                f"{directory} would collide"
            )
        seen[base] = path
        tasks.append((_absolute(path), str(directory / base), own_tree or tree))
    options: dict[str, Any] = {
        "name": name,
        "branches": branches,
        "entries": entries,
        "compression": compression,
        "skip_unsupported": skip_unsupported,
        "overwrite": overwrite,
    }
    if client is None:
        client = distributed.default_client()
    uuid = os.urandom(6).hex()  # keys unique per call: a rerun is not the cached result
    futures = [
        client.submit(_convert_task, src, dst, t, options, pure=False, key=f"rntuple-convert-{i}-{uuid}")
        for i, (src, dst, t) in enumerate(tasks)
    ]
    distributed.wait(futures)
    results: list[ConvertResult] = []
    failures: dict[str, BaseException] = {}
    for (src, _, _), future in zip(tasks, futures, strict=True):
        try:
            results.append(future.result())
        except Exception as error:  # each file's failure is reported, after all finished
            failures[src] = error
    if failures:
        raise ConversionError(failures, results, len(tasks))
    return results
