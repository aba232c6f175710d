"""Dask: :func:`dask` builds a lazy ``dask_awkward.Array`` whose partitions are
cluster-aligned entry ranges of one or more files; :func:`convert_files` converts many
TTree files to RNTuple, one task per file, on a ``dask.distributed`` cluster.

``rntuple.dask`` is the function :func:`dask`; import the converter as
``from rntuple.dask import convert_files`` (or use ``rntuple.convert_files``).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._extras import require
from .errors import ConversionError, InvalidArgumentError, RNTupleError, UnsupportedError
from .file import ReadOnlyFile, expand_files
from .options import FieldSelection, RemoteOptions, Selection, StepSize, TypeOptions, takes_options
from .selection import check_flag, check_step_size
from .ttree import ConvertOptions, ConvertResult, convert
from .unify import ChainReading, absolute, conform, plan_chain

_OPEN_LIMIT = 8
#: per (graph token, path, rntuple name): the open RNTuple, a lock for exact metrics, and
#: what opening it cost until a partition claims it (then empty)
_open: OrderedDict[tuple[str, str, str], tuple[Any, threading.Lock, dict[str, Any]]] = OrderedDict()
_open_lock = threading.Lock()
_opening: dict[tuple[str, str, str], threading.Lock] = {}
#: files being opened ahead, in the background, for the partitions that will need them
_ahead: set[tuple[str, str, str]] = set()

#: for each file (path, rntuple name) of a graph's partitions: the file after it
Following = dict[tuple[str, str], tuple[str, str]]


def _claim(
    entry: tuple[Any, threading.Lock, dict[str, Any]], claim: bool = True
) -> tuple[Any, threading.Lock, dict[str, Any]]:
    """The entry's RNTuple and lock, with what opening it cost if nobody claimed that yet
    (else empty); without ``claim``, the cost stays for the next one. Call with
    ``_open_lock`` held."""
    opening = dict(entry[2])
    if claim:
        entry[2].clear()
    return entry[0], entry[1], opening


def _cached_rntuple(
    token: str, path: str, name: str, network: dict[str, Any] | None = None, claim: bool = True
) -> tuple[Any, threading.Lock, dict[str, Any]]:
    """The RNTuple ``name`` of ``path`` as this process last opened it for the graph
    ``token`` (its metadata is read once per process, not per partition), a lock for
    exact metrics, and what opening it cost if no partition was told yet (empty
    otherwise: the cost is reported once, by the first partition, even when the file was
    opened ahead). ``network``: the keyword arguments ``timeout``, ``connect_timeout``,
    ``retries``, ``cache`` of the graph (see :func:`rntuple.open`). The few most recently
    used stay open; a new graph opens its files anew (they may have been rewritten)."""
    key = (token, path, name)
    with _open_lock:
        hit = _open.get(key)
        if hit is not None:
            _open.move_to_end(key)
            return _claim(hit, claim)
        opening_lock = _opening.setdefault(key, threading.Lock())
    with opening_lock:  # one thread opens a file; the others wait and share it
        with _open_lock:
            hit = _open.get(key)
            if hit is not None:
                _open.move_to_end(key)
                return _claim(hit, claim)
        nt = ReadOnlyFile(path, **(network or {}))[name]
        opening = nt.metrics()  # before any other thread can use it
        with _open_lock:
            entry = _open[key] = (nt, threading.Lock(), opening)
            _opening.pop(key, None)
            while len(_open) > _OPEN_LIMIT:
                _open.popitem(last=False)
            return _claim(entry, claim)


def _open_ahead(token: str, following: tuple[str, str] | None, network: dict[str, Any] | None) -> None:
    """Opens ``following`` (the next file's path and RNTuple name) in a background thread,
    unless it is open or being opened: a worker reading the last partitions of one file
    then finds the next one's metadata read (over a high-latency link, the round trips
    of opening overlap the decoding). A failure is left for the partition that reads the
    file, which opens it again and raises."""
    if following is None:
        return
    key = (token, *following)
    with _open_lock:
        if key in _open or key in _opening or key in _ahead:
            return
        _ahead.add(key)

    def run() -> None:
        try:  # the cost of opening stays for the partition that reads the file to report
            _cached_rntuple(token, *following, network, claim=False)
        except Exception:  # the partition that needs the file opens it again and raises
            pass
        finally:
            with _open_lock:
                _ahead.discard(key)

    threading.Thread(target=run, name="rntuple-open-ahead", daemon=True).start()


def _following(partitions: list[tuple[str, str, int, int]]) -> Following:
    """For each file of ``partitions`` (in their order), the next file."""
    files = list(dict.fromkeys((path, name) for path, name, _, _ in partitions))
    return dict(itertools.pairwise(files))


class FormReader:
    """dask-awkward's IO-function protocol shared by the readers of a form: the report
    flag, column projection always on (to the projection units :meth:`units` lists, of
    which the reader reads ``fields``), data-less and empty arrays of the form, and the
    typetracer that reports the buffers a graph touches."""

    behavior: Any
    attrs: dict | None

    def __init__(
        self,
        units: list[str],
        form: Any,
        *,
        fields: list[str] | None = None,
        report: bool = False,
        token: str | None = None,
        network: dict[str, Any] | None = None,
    ) -> None:
        self.form = form
        #: the projection units (top-level fields) this reader reads
        self.fields = list(units) if fields is None else list(fields)
        self.report = report
        #: the graph's identity: a worker process keeps its files open for it
        self.token = os.urandom(8).hex() if token is None else token
        #: how a worker opens a remote file: ``timeout``, ``connect_timeout``, ``retries``,
        #: ``speed_limit``, ``speed_time``, ``cache``
        self.network = dict(network or {})
        self.attrs = None

    def units(self) -> list[str]:
        """Every projection unit the reader may read, in order."""
        raise NotImplementedError

    def wanted(self, columns: frozenset[str] | set[str] | list[str]) -> set[str]:
        """The projection units ``columns`` (as dask-awkward names them) need."""
        return set(columns)

    def project(self, report: Any, state: Any) -> Any:
        """The reader of only the units the traced graph needs."""
        return self.project_columns(self.necessary_columns(report, state))  # type: ignore[attr-defined]

    def project_manually(self, columns: frozenset[str]) -> Any:
        """The reader of the units ``columns`` names (see :meth:`project_columns`)."""
        return self.project_columns(columns)

    def project_columns(self, columns: frozenset[str] | set[str] | list[str]) -> Any:
        """This reader reading only the units ``columns`` need, in their order; the form
        stays the full one."""
        wanted = self.wanted(columns)
        units = self.units()
        unknown = wanted - set(units)
        if unknown:
            raise InvalidArgumentError(f"no such fields to project to: {sorted(unknown)}")
        projected = copy.copy(self)
        projected.fields = [u for u in units if u in wanted]
        return projected

    def __dask_tokenize__(self) -> Any:
        """A deterministic token: equal readers, equal graph keys."""
        return (
            f"rntuple.{type(self).__name__}",
            self.token,
            self.units(),
            self.fields,
            self.report,
            sorted(self.network.items()),
        )

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


class ChainPartitionReader(FormReader):
    """A reader of partitions of a chain's files, ``(file, rntuple path, start, stop)``
    each: a worker reads its partition with the file kept open for the graph, the file
    after it opened ahead (see :func:`dask`)."""

    def __init__(
        self,
        units: list[str],
        form: Any,
        *,
        following: Following | None = None,
        chain: ChainReading | None = None,
        **reader: Any,
    ) -> None:
        """``reader``: :class:`FormReader`'s keyword arguments."""
        super().__init__(units, form, **reader)
        #: how each file is read as the one schema of the files (``types=``, unified)
        self.chain = chain
        #: for each file, the next one, opened ahead while this one is read
        self.following = dict(following or {})

    def _read(self, partition: tuple[str, str, int, int], read: Callable[[Any], Any]) -> tuple[Any, Any]:
        """``read(nt)`` of the partition's RNTuple, and the report of what it cost (see
        :func:`_read_partition`)."""
        return _read_partition(
            self.token, partition, self.fields, self.report, read, self.network, self.following
        )


class PartitionReader(ChainPartitionReader):
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

    def __init__(self, selection: dict[str, list[str]], form: Any, **reader: Any) -> None:
        """``reader``: :class:`ChainPartitionReader`'s keyword arguments."""
        super().__init__(list(selection), form, **reader)
        #: each top-level field of the array: the field paths read for it (itself, or
        #: the nested paths selected under it)
        self.selection = dict(selection)
        self.behavior = None

    def units(self) -> list[str]:
        """The top-level fields of the array."""
        return list(self.selection)

    def wanted(self, columns: frozenset[str] | set[str] | list[str]) -> set[str]:
        """The top-level fields named, or holding the dotted paths named."""
        return {c.split(".", 1)[0] for c in columns}

    # -- dask-awkward's IO-function protocol -----------------------------------------

    def necessary_columns(self, report: Any, state: Any) -> frozenset[str]:
        """The top-level fields whose buffers the traced graph touched (data, or the
        offsets needed for shapes)."""
        from dask_awkward.lib.io.columnar import ColumnProjectionMixin

        paths = ColumnProjectionMixin.necessary_columns(self, report, state)  # type: ignore[arg-type]
        return frozenset(p.split(".", 1)[0] for p in paths) & frozenset(self.selection)

    # -- reading ---------------------------------------------------------------------

    def __call__(self, partition: tuple[str, str, int, int]) -> Any:
        """The partition's entries of the selected fields (and, with ``report``, what
        reading them cost)."""
        import awkward as ak

        _, _, start, stop = partition
        paths = [p for f in self.fields for p in self.selection[f]]
        chain = self.chain

        def read(nt: Any) -> Any:
            if not paths:
                # only the number of entries is needed: no field is read
                return ak.contents.RecordArray([], [], length=stop - start)
            if chain is None:
                return nt.arrays(paths, entry_start=start, entry_stop=stop, library="ak").layout
            return _chain_layout(chain, nt, partition, paths)

        layout, record = self._read(partition, read)
        if len(self.fields) != len(self.selection):
            from dask_awkward.lib.unproject_layout import unproject_layout

            layout = unproject_layout(self.form, layout)
        out = ak.Array(layout, behavior=self.behavior, attrs=self.attrs)
        return (out, record) if self.report else out

    def __repr__(self) -> str:
        return f"PartitionReader(fields={self.fields!r}, of {len(self.selection)})"


def _chain_layout(
    chain: ChainReading, nt: Any, partition: tuple[str, str, int, int], paths: list[str]
) -> Any:
    """The layout of ``paths`` of a partition's entries, read as the chain's schema."""
    from .libraries import to_awkward

    path, name, start, stop = partition
    index = chain.index_of(path, name)
    return to_awkward(chain.read_table(nt, index, paths, start, stop, chain.read_types(nt, index))).layout


def _read_partition(
    token: str,
    partition: tuple[str, str, int, int],
    fields: list[str],
    report: bool,
    read: Any,
    network: dict[str, Any] | None = None,
    following: Following | None = None,
) -> tuple[Any, Any]:
    """``read(nt)`` on the partition's RNTuple (opened once per process and graph, with
    the ``network`` options), and, with ``report``, the one-record array of what it
    cost (else ``None``). Without ``report``, the file after it (``following``) is opened
    meanwhile."""
    import time

    import awkward as ak

    path, name, start, stop = partition
    began = time.perf_counter()
    nt, lock, opening = _cached_rntuple(token, path, name, network)
    if not report:
        # (a report counts each file's opening in the partition that reads it: a file
        # opened ahead that this process then never reads would be counted nowhere)
        _open_ahead(token, (following or {}).get((path, name)), network)
    with lock if report else contextlib.nullcontext():
        # (with a report, this file's reads in this process wait for each other, so the
        # difference of the counters is this partition's)
        before = nt.metrics() if report else {}
        out = read(nt)
        after = nt.metrics() if report else {}
    if not report:
        return out, None
    metrics = {k: after[k] - before[k] + opening.get(k, 0) for k in ("bytes_read", "bytes_used", "requests")}
    record = {
        "file": path,
        "rntuple": name,
        "entry_start": start,
        "entry_stop": stop,
        "fields": list(fields),
        "bytes_read": int(metrics["bytes_read"]),
        "bytes_used": int(metrics["bytes_used"]),
        "requests": int(metrics["requests"]),
        "seconds": time.perf_counter() - began,
        "pid": os.getpid(),
    }
    return out, ak.Array([record])


def canonical_column(array: Any) -> Any:
    """``array`` with its lists' offsets 64-bit, starting at 0 and ending at the end of
    their content (the layout consumers that take a list's ``offsets`` and ``content``
    apart, as coffea's NanoEvents, expect)."""
    import awkward as ak

    def canonical(layout: Any) -> Any:
        if layout.is_list and not layout.is_regular:
            packed = layout.to_ListOffsetArray64(True)
            end = int(packed.offsets[-1])
            content = packed.content[:end] if packed.content.length != end else packed.content
            offsets = packed.offsets
            return ak.contents.ListOffsetArray(offsets, canonical(content), parameters=packed.parameters)
        if layout.is_record:
            return layout.copy(contents=[canonical(c) for c in layout.contents])
        return layout

    layout = ak.to_layout(array)
    return ak.Array(canonical(layout), behavior=getattr(array, "behavior", None))


class RNTupleTreeView:
    """A partition's RNTuple as a form mapping's ``load_buffers`` sees uproot's tree:
    ``arrays(keys, entry_start=, entry_stop=, how=dict)`` reads the top-level fields
    ``keys`` through this package's reader (other uproot options are ignored),
    ``key in view``, ``num_entries``, ``object_path`` and ``file`` (``uuid``, an
    identifier of the file and RNTuple, and ``file_path``)."""

    class _File:
        def __init__(self, uuid: str, file_path: str) -> None:
            self.uuid = uuid
            self.file_path = file_path

    def __init__(
        self, nt: Any, file_path: str, name: str, chain: ChainReading | None = None, fields: Any = None
    ) -> None:
        self._nt = nt
        #: the files' one schema, and its top-level fields (a file may lack some)
        self._chain = chain
        self._fields = set(nt.fields if fields is None else fields)
        self.object_path = name
        self.num_entries = nt.num_entries
        self.file = RNTupleTreeView._File(rntuple_identifier(file_path, name), file_path)

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def keys(self) -> list[str]:
        """The top-level fields."""
        return list(self._nt.fields)

    def arrays(
        self,
        keys: Sequence[str],
        *,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        how: Any = dict,
        **_ignored: Any,
    ) -> dict[str, Any]:
        """``{field: awkward.Array}`` of the entries ``[entry_start, entry_stop)``, read in
        one call (the reader decodes the fields' pages in parallel)."""
        if how is not dict:
            raise InvalidArgumentError(f"RNTupleTreeView.arrays gives how=dict only, not {how!r}")
        keys = list(keys)
        unknown = [k for k in keys if k not in self._fields]
        if unknown:
            raise InvalidArgumentError(f"no such top-level fields in {self.object_path!r}: {unknown}")
        if not keys:
            return {}
        if self._chain is None:
            array = self._nt.arrays(keys, entry_start=entry_start, entry_stop=entry_stop, library="ak")
        else:
            import awkward as ak

            start = 0 if entry_start is None else entry_start
            stop = self.num_entries if entry_stop is None else entry_stop
            partition = (self.file.file_path, self.object_path, start, stop)
            array = ak.Array(_chain_layout(self._chain, self._nt, partition, keys))
        return {k: canonical_column(array[k]) for k in keys}


def _documented_form(form: Any, typenames: dict[str, str], name: str) -> Any:
    """The record form of the selected fields as a form mapping gets it (as uproot's,
    with ``ak_add_doc``): each field's ``typename`` and ``__doc__`` parameters, the
    record's ``__doc__`` and ``typenames``."""
    import awkward as ak

    contents = []
    for field, content in zip(form.fields, form.contents, strict=True):
        # __doc__: the field's description (ROOT writes none)
        parameters = {"__doc__": "", "typename": typenames.get(field, ""), **content.parameters}
        contents.append(content.copy(parameters=parameters))
    parameters = dict(form.parameters)
    parameters.setdefault("__doc__", name)
    parameters["typenames"] = {f: typenames.get(f, "") for f in form.fields}
    return ak.forms.RecordForm(contents, list(form.fields), parameters=parameters)


class MappedPartitionReader(ChainPartitionReader):
    """Reads one partition through a form mapping (see :func:`dask`): the mapping's
    ``load_buffers`` gets the top-level fields the graph needs and builds the buffers of
    the mapped form; buffers of fields not read are placeholders. The picklable
    function Dask calls, with dask-awkward's column-projection protocol."""

    def __init__(self, keys: list[str], form: Any, info: Any, **reader: Any) -> None:
        """``reader``: :class:`ChainPartitionReader`'s keyword arguments."""
        super().__init__(keys, form, **reader)
        #: every top-level field the mapping may read
        self.keys = list(keys)
        self.info = info

    def units(self) -> list[str]:
        """Every top-level field the mapping may read."""
        return list(self.keys)

    @property
    def behavior(self) -> Any:
        """The mapping's behaviors (coffea's schema methods)."""
        return self.info.behavior

    def mock(self) -> Any:
        """A data-less (typetracer) array of the mapped form."""
        from awkward.typetracer import typetracer_from_form

        return typetracer_from_form(self.form, highlevel=True, behavior=self.behavior)

    def prepare_for_projection(self) -> Any:
        """A typetracer reporting the buffers (named by the mapping) a graph touches, and
        the form's structure."""
        from awkward.typetracer import typetracer_with_report
        from dask_awkward.lib.utils import trace_form_structure

        meta, report = typetracer_with_report(
            self.form, highlevel=True, behavior=self.behavior, buffer_key=self.info.buffer_key
        )
        return meta, report, {"trace": trace_form_structure(self.form, buffer_key=self.info.buffer_key)}

    def necessary_columns(self, report: Any, state: Any) -> frozenset[str]:
        """The top-level fields behind the touched buffers (data, and the buffers above
        a shape-only touch)."""
        from dask_awkward.lib.utils import buffer_keys_required_to_compute_shapes

        trace = state["trace"]
        touched = set(report.data_touched)
        touched.update(
            buffer_keys_required_to_compute_shapes(
                self.info.parse_buffer_key,
                report.shape_touched,
                trace["form_key_to_parent_form_key"],
                trace["form_key_to_buffer_keys"],
            )
        )
        return frozenset(self.info.keys_for_buffer_keys(frozenset(touched))) & frozenset(self.keys)

    def __call__(self, partition: tuple[str, str, int, int]) -> Any:
        """The partition as an array of the mapped form (and, with ``report``, what
        reading it cost)."""
        import awkward as ak
        from awkward._nplikes.numpy import Numpy
        from awkward.typetracer import PlaceholderArray, unknown_length

        path, name, start, stop = partition
        keys = frozenset(self.fields)

        def read(nt: Any) -> Any:
            view = RNTupleTreeView(nt, path, name, self.chain, self.keys)
            return self.info.load_buffers(view, keys, start, stop, None, None, {"ak_add_doc": False})

        buffers, record = self._read(partition, read)
        container: dict[str, Any] = {}
        nplike = Numpy.instance()
        for key, dtype in self.form.expected_from_buffers(buffer_key=self.info.buffer_key).items():
            needed = self.info.keys_for_buffer_keys(frozenset({key}))
            if all(k in keys for k in needed):
                container[key] = buffers[key]
            else:  # a field the graph does not use: never read, never touched
                container[key] = PlaceholderArray(nplike=nplike, shape=(unknown_length,), dtype=dtype)
        out = ak.from_buffers(
            self.form, stop - start, container, buffer_key=self.info.buffer_key, behavior=self.behavior
        )
        return (out, record) if self.report else out

    def __repr__(self) -> str:
        return f"MappedPartitionReader(fields={self.fields!r}, of {len(self.keys)})"


@takes_options(remote=RemoteOptions, typing=TypeOptions)
def dask(
    files: Any,
    fields: FieldSelection = None,
    *,
    step_size: StepSize | None = None,
    report: bool = False,
    form_mapping: Any = None,
    remote: RemoteOptions,
    typing: TypeOptions,
) -> Any:
    """A lazily partitioned ``dask_awkward.Array`` of the selected fields over ``files``
    (the specs of :func:`rntuple.iterate`). By default each partition is one or more
    whole clusters (grouped up to 100 MB of the selected fields, uncompressed; a larger
    cluster is a partition of its own): a partition that began or ended inside a
    cluster would decode the pages it shares with its neighbours again. With
    ``step_size`` (entries, or uncompressed bytes as ``"20 MB"``) partitions are the
    batches of :meth:`RNTuple.iterate`, a cluster larger than the step cut into parts.
    Nothing is read until the graph is computed, with any Dask scheduler (a
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
    ``requests``, ``seconds`` and ``pid`` (the reading process). Errors are raised, not reported.

    ``form_mapping`` is the hook ``uproot.dask(..., form_mapping=)`` offers (coffea's
    NanoEvents use it, see :mod:`rntuple.coffea`): a callable taking the base form (a
    record of the selected top-level fields; each field's form carries the parameters
    ``typename`` and ``__doc__``, the record ``__doc__`` and ``typenames``) and returning
    ``(form, info)``. The array then has ``form``; ``info`` names its buffers
    (``buffer_key``, ``parse_buffer_key``), says which top-level fields a buffer needs
    (``keys_for_buffer_keys``), and builds them (``load_buffers(tree, keys, start, stop,
    decompression_executor, interpretation_executor, options)``, where ``tree`` is a
    view of the partition's RNTuple with uproot's ``arrays(keys, entry_start=,
    entry_stop=, how=dict)``, ``file.uuid``, ``file.file_path``, ``object_path`` and
    ``key in tree``). Column projection reads only the fields the touched buffers need.

    ``timeout``, ``connect_timeout``, ``retries``, ``speed_limit``, ``speed_time``,
    ``cache``, ``bunch_bytes``, ``read_ahead_bytes``, ``direct_io``, ``huge_pages``,
    ``daos_dir`` and ``daos_mapping`` apply as :func:`rntuple.open` says, here and on the
    workers:
    they travel in the graph with the reader (a worker's environment variables
    ``RNTUPLE_*`` set what they leave out;
    a cache directory must be one the workers reach, as a node's local disk for the
    workers of a node). The files are opened here (for their metadata) several at a
    time. On a worker, a partition of one file has the next file opened (its metadata
    read) in the background while it reads, unless ``report`` is on (its counts then
    are each partition's own); the few files a worker process used last stay open.

    ``types``, ``on_overflow``, ``defaults`` and ``allow_missing``: one schema over
    every file, as :func:`rntuple.iterate` (fixed here, from every file's header; a
    partition reads its file as that schema)."""
    import pyarrow as pa

    dak = require("dask_awkward", "rntuple.dask")
    report = check_flag("report", report)
    network = remote.given()
    if step_size is not None:
        step_size = check_step_size(step_size)
    chain, selected = _chain_reading(files, fields, typing, remote)
    partitions: list[tuple[str, str, int, int]] = []
    assert chain.members is not None
    for index, member in enumerate(chain.members):
        # (the files' metadata, read once by the plan: nothing is opened again here)
        paths = chain.present(index, selected)
        ranges = member.batch_ranges(paths or member.fields, 0, member.num_entries, step_size or "100 MB")
        if step_size is None:
            ranges = _whole_clusters(ranges, {c.start for c in member.clusters})
        key = chain.keys[index]
        partitions.extend((absolute(key[0]), key[1], start, stop) for start, stop in ranges)
    if not partitions:
        raise ValueError("no entries to read: the files are empty or none were given")
    from .libraries import to_awkward

    form = to_awkward(conform(pa.table({}), chain.schema(selected), 0)).layout.form
    first_typenames = chain.members[0].typenames()
    first_name = chain.members[0].name
    divisions = [0]
    for _, _, start, stop in partitions:
        divisions.append(divisions[-1] + stop - start)
    selection: dict[str, list[str]] = {}
    for path in selected:
        selection.setdefault(path.split(".", 1)[0], []).append(path)
    if form_mapping is not None:
        if not callable(form_mapping):
            raise InvalidArgumentError(
                f"form_mapping must be callable (form -> (form, info)), not {type(form_mapping).__name__}"
            )
        if any(len(paths) != 1 or paths[0] != top for top, paths in selection.items()):
            raise InvalidArgumentError(
                "a form mapping reads whole top-level fields: select top-level fields, not subfields"
            )
        base_form = _documented_form(form, first_typenames, first_name)
        mapped_form, info = form_mapping(base_form)
        reader: Any = MappedPartitionReader(
            list(selection),
            mapped_form,
            info,
            report=report,
            network=network,
            following=_following(partitions),
            chain=chain,
        )
    else:
        reader = PartitionReader(
            selection, form, report=report, network=network, following=_following(partitions), chain=chain
        )
    return dak.from_map(
        reader,
        partitions,
        label="rntuple",
        divisions=tuple(divisions),
    )


def _chain_reading(
    files: Any, fields: Any, typing: TypeOptions, remote: RemoteOptions
) -> tuple[ChainReading, list[str]]:
    """How the files are read as one schema (:func:`rntuple.unify.plan_chain`, for one
    file as for many), and the field paths read: ``fields`` selected in each file as
    :meth:`RNTuple.arrays` selects them (names, nested paths, globs; no expressions)."""
    if fields is not None and not isinstance(fields, (str, list, tuple)):
        raise InvalidArgumentError(
            f"fields must be a name, a glob or a list of them, not {type(fields).__name__}"
        )
    planned = plan_chain(files, Selection(fields), typing, remote, min_files=1)
    if planned is None:
        raise ValueError("no entries to read: the files are empty or none were given")
    chain, plans = planned
    if plans[0].computes:
        computed = [n for n, c in plans[0].outputs.items() if c is not None]
        raise InvalidArgumentError(
            f"rntuple.dask reads fields, not expressions: {computed[0]!r} names no field "
            "(compute it on the array the graph gives)"
        )
    return chain, plans[0].selection


def _whole_clusters(ranges: list[tuple[int, int]], cluster_starts: set[int]) -> list[tuple[int, int]]:
    """``ranges`` (consecutive) merged where a boundary falls inside a cluster."""
    merged: list[tuple[int, int]] = []
    for start, stop in ranges:
        if merged and start not in cluster_starts:
            merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((start, stop))
    return merged


class _Failed:
    """A conversion that failed on a worker, with its exception: returned as the task's
    value rather than raised, so that the worker does not log the failure with its
    traceback (``convert_files`` reports every failed file once, in its
    :class:`~rntuple.ConversionError`)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _convert_task(
    input: str, output: str, tree: str | None, options: dict[str, Any]
) -> ConvertResult | _Failed:
    """One file's conversion, as a worker runs it: its result, or its failure."""
    try:
        return convert(input, output, tree=tree, **options)
    except Exception as error:  # reported by convert_files, with the file it concerns
        try:
            pickle.dumps(error)
        except Exception:
            # An exception that cannot travel back: its class and message can.
            error = RNTupleError(f"{type(error).__name__}: {error}")
        return _Failed(error)


def rntuple_identifier(file_path: str, name: str) -> str:
    """A stable identifier of the RNTuple ``name`` in the file ``file_path`` (the same
    in every process; NanoEvents keys its buffers by it): a hash of the absolute path or
    URL and the name."""
    import hashlib

    return hashlib.sha1(f"{absolute(file_path)}\0{name}".encode()).hexdigest()[:32]


@takes_options(options=ConvertOptions, remote=RemoteOptions)
def convert_files(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | dict[str, str],
    out_dir: str | os.PathLike[str],
    *,
    client: Any = None,
    tree: str | None = None,
    options: ConvertOptions,
    remote: RemoteOptions,
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
        name, branches, entries, compression, skip_unsupported, overwrite, unsplit,
            split_policy: as for :func:`rntuple.convert`, the same for every file
            (:class:`~rntuple.ttree.ConvertOptions`, checked before any task starts).
        timeout, connect_timeout, retries, speed_limit, speed_time, cache, bunch_bytes,
            read_ahead_bytes, direct_io, huge_pages, daos_dir, daos_mapping: how every
            input is read (:class:`~rntuple.options.RemoteOptions`, checked before any
            task starts); those given travel to the workers, whose environment sets the
            others.

    Returns:
        One :class:`~rntuple.ttree.ConvertResult` per input, in the order of the inputs.

    Raises:
        ConversionError: after every task finished, if any failed: its message names
            each failed file with its error; ``.failures`` maps each failed input to its
            exception and ``.results`` holds the conversions that succeeded (their
            outputs are complete; a failed one leaves no output).
        InvalidArgumentError: no inputs, or two inputs whose outputs would collide.
    """
    distributed = require("distributed", "rntuple.convert_files")
    keywords = {**options.keywords(), **remote.given()}

    pairs = expand_files(inputs)
    if not pairs:
        raise InvalidArgumentError("no input files to convert")
    if "://" in os.fspath(out_dir):
        raise UnsupportedError(
            f"out_dir={os.fspath(out_dir)!r}: convert_files writes ROOT files into a local (or "
            "shared) directory, not to a URL"
        )
    directory = Path(absolute(os.fspath(out_dir)))
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
        tasks.append((absolute(path), str(directory / base), own_tree or tree))
    if client is None:
        client = distributed.default_client()
    uuid = os.urandom(6).hex()  # keys unique per call: a rerun is not the cached result
    futures = [
        client.submit(_convert_task, src, dst, t, keywords, pure=False, key=f"rntuple-convert-{i}-{uuid}")
        for i, (src, dst, t) in enumerate(tasks)
    ]
    # Each future's own client (not the default one: `client` need not be it); the loop
    # ends when the last task has, so failures are reported after all finished.
    results: list[ConvertResult] = []
    failures: dict[str, BaseException] = {}
    for (src, _, _), future in zip(tasks, futures, strict=True):
        try:
            outcome = future.result()
        except Exception as error:  # each file's failure is reported, after all finished
            failures[src] = error
            continue
        if isinstance(outcome, _Failed):
            failures[src] = outcome.error
        else:
            results.append(outcome)
    if failures:
        raise ConversionError(failures, results, len(tasks))
    return results
