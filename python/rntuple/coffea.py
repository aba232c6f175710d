"""coffea's NanoEvents over RNTuple files, read by this package's reader.

::

    from coffea.nanoevents import NanoAODSchema
    import rntuple.coffea

    events = rntuple.coffea.from_rntuple("nano.root:Events", mode="eager").events()
    events.Jet.pt, events.GenPart.parent.pdgId, (events.Jet[:, 0] + events.Jet[:, 1]).mass

    # a dask_awkward.Array: partitions read only the fields the graph uses
    events = rntuple.coffea.from_rntuple(["a.root:Events", "b.root:Events"], mode="dask").events()

Any schema coffea has works (``schemaclass=``, default ``NanoAODSchema``). Files in the
flat layout (``Jet_pt`` a ``std::vector<float>``, ``nJet`` an integer) and in the layout
of ROOT's ``RNTupleImporter`` and ``rntuple convert`` (an untyped collection
``_collectionN`` per NanoAOD collection, with ``Jet_pt`` a projected
``ROOT::VecOps::RVec<float>`` and ``nJet`` a projected
``ROOT::RNTupleCardinality<std::uint32_t>``) give the same events: NanoEvents are built
from the top-level fields, projected ones included; fields named ``_...`` (the
importer's collections, which the projections already expose) are left out, as
RDataFrame does.

Eager and virtual mode use a :class:`coffea.nanoevents.mapping.base.BaseSourceMapping`
whose columns this reader reads (eager mode reads all of them in one call, decoded in
parallel; virtual mode reads a field when it is first touched). Dask mode hands coffea's
own form mapping (what ``NanoEventsFactory.from_root`` gives ``uproot.dask``) to
:func:`rntuple.dask`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from ._extras import require
from .chain import open_rntuples
from .dask import canonical_column, rntuple_identifier
from .dask import dask as _dask_array
from .errors import InvalidArgumentError, NotFoundError
from .file import ReadOnlyFile
from .options import StepSize
from .selection import check_entry, check_flag, check_step_size

require("coffea", "rntuple.coffea")

import awkward as ak  # noqa: E402  (after the check that names the extra)
import numpy as np  # noqa: E402
from coffea.nanoevents import NanoAODSchema, NanoEventsFactory  # noqa: E402
from coffea.nanoevents.mapping.base import BaseSourceMapping, UUIDOpener  # noqa: E402
from coffea.nanoevents.mapping.preloaded import PreloadedSourceMapping  # noqa: E402
from coffea.nanoevents.util import tuple_to_key  # noqa: E402

__all__ = ["RNTupleSourceMapping", "from_rntuple", "nanoevents_fields"]

_MODES = ("eager", "virtual", "dask")


def nanoevents_fields(nt: Any) -> list[str]:
    """The top-level fields of ``nt`` NanoEvents are built from: all of them, projected
    fields included, but those named ``_...`` (the importer's ``_collectionN``: its
    subfields are also projected fields ``Jet_pt`` ...) and those whose names NanoEvents
    cannot take (with ``,`` or ``!``)."""
    return [f for f in nt.fields if not f.startswith("_") and "," not in f and "!" not in f]


class _RNTupleOpener(UUIDOpener):
    """Opens the file of an identifier (when the mapping's cache lost the open RNTuple)."""

    def open_uuid(self, uuid: str) -> Any:
        return ReadOnlyFile(self._uuid_pfnmap[uuid])


class RNTupleSourceMapping(BaseSourceMapping):
    """coffea's column-source mapping over one RNTuple and entry range: a NanoEvents
    buffer key names a top-level field (``Jet_pt,!load,...``) that this reader reads, as
    an Awkward Array with canonical 64-bit offsets; coffea's transforms make the buffer.

    ``preloaded`` (``{field: array of the range}``) holds fields read beforehand (eager
    mode reads all in one call); others are read when asked for."""

    def __init__(
        self,
        nt: Any,
        uuid: str,
        start: int,
        stop: int,
        *,
        virtual: bool,
        preloaded: dict[str, Any] | None = None,
        access_log: list | None = None,
        buffer_cache: Any = None,
    ) -> None:
        super().__init__(
            _RNTupleOpener({uuid: nt.file_path}),
            start,
            stop,
            cache={},
            access_log=access_log,
            virtual=virtual,
            buffer_cache=buffer_cache,
        )
        self._preloaded = dict(preloaded or {})
        self.preload_column_source(uuid, nt.path, nt)

    @classmethod
    def _extract_base_form(cls, nt: Any, fields: Sequence[str] | None = None) -> dict[str, Any]:
        """The NanoEvents base form of ``fields`` (default :func:`nanoevents_fields`):
        coffea's lazified forms (``field,!load``) of this reader's Awkward forms; a field
        NanoEvents cannot interpret is left out, with coffea's warning."""
        names = nanoevents_fields(nt) if fields is None else list(fields)
        empty = nt.arrays(names, entry_start=0, entry_stop=0, library="ak")
        columns = {name: canonical_column(empty[name]) for name in names}
        form = PreloadedSourceMapping._extract_base_form(columns)
        typenames = nt.typenames()
        for name, content in zip(form["fields"], form["contents"], strict=True):
            _document(content, typenames.get(name, ""))
        form["parameters"]["__doc__"] = nt.name
        return form

    def key_root(self) -> str:
        """The prefix of this mapping's cache keys."""
        return "RNTupleSourceMapping:"

    def get_column_handle(self, columnsource: Any, name: str, allow_missing: bool) -> Any:
        """``(rntuple, field)``; ``None`` for a missing field a form allows to miss."""
        if name not in columnsource.fields:
            if allow_missing:
                return None
            raise NotFoundError(f"no field {name!r} in RNTuple {columnsource.path!r}")
        return (columnsource, name)

    def extract_column(
        self, columnhandle: Any, start: int, stop: int, allow_missing: bool, use_ak_forth: bool = True
    ) -> Any:
        """The field's entries ``[start, stop)`` (``use_ak_forth`` is uproot's; unused)."""
        if columnhandle is None:  # a field allowed to miss: all None
            return ak.contents.IndexedOptionArray(
                ak.index.Index64(np.full(stop - start, -1, dtype=np.int64)),
                ak.contents.NumpyArray(np.zeros(0, dtype=np.bool_)),
            )
        nt, name = columnhandle
        if name in self._preloaded and (start, stop) == (self._start, self._stop):
            array = self._preloaded[name]
        else:
            array = canonical_column(
                nt.arrays([name], entry_start=start, entry_stop=stop, library="ak")[name]
            )
        if allow_missing:  # the form wraps the field in an option type
            return ak.contents.IndexedOptionArray(
                ak.index.Index64(np.arange(stop - start, dtype=np.int64)), ak.to_layout(array)
            )
        return array

    def __len__(self) -> int:
        return self._stop - self._start

    def __iter__(self) -> Any:
        raise NotImplementedError("a NanoEvents mapping builds buffers on demand; it cannot list them")


def _document(form: dict[str, Any], typename: str) -> None:
    """Gives a field's form the parameters NanoEvents from uproot carry (the field's
    C++ type as ``typename``, its description, empty here, as ``__doc__``) on the nodes
    uproot's carry them, so that the events' types are the same."""
    if not form["class"].startswith("ListOffset"):
        form["parameters"] = {**form.get("parameters", {}), "__doc__": "", "typename": typename}
    for child in [form["content"]] if "content" in form else form.get("contents", []):
        _document(child, typename)


def _single_rntuple(files: Any) -> Any:
    rntuples = (nt for nt, _ in open_rntuples(files))
    first = next(rntuples, None)
    if first is None:
        raise InvalidArgumentError("no RNTuple to read: no files were given")
    if next(rntuples, None) is not None:
        raise InvalidArgumentError(
            "eager and virtual mode read one RNTuple: give one file (mode='dask' reads many)"
        )
    return first


def from_rntuple(
    files: Any,
    *,
    mode: str = "virtual",
    entry_start: int | None = None,
    entry_stop: int | None = None,
    schemaclass: Any = NanoAODSchema,
    metadata: dict | None = None,
    fields: Sequence[str] | None = None,
    step_size: StepSize | None = None,
    report: bool = False,
    access_log: list | None = None,
    buffer_cache: Any = None,
) -> Any:
    """coffea's ``NanoEventsFactory`` over RNTuple files, read by this package's reader
    (``.events()`` builds the events, as from ``NanoEventsFactory.from_root``).

    Args:
        files: a files spec as for :func:`rntuple.iterate`: ``"file.root:Events"`` (the
            RNTuple name may be left out when the file holds one), a URL, a list, glob
            patterns, ``{file: name}``. Eager and virtual mode read exactly one RNTuple.
        mode: ``"eager"`` (every field read now, in one parallel call), ``"virtual"``
            (a field is read when first touched) or ``"dask"`` (a
            ``dask_awkward.Array`` of cluster-aligned partitions of every file; computing
            it reads only the fields the graph needs).
        entry_start, entry_stop: the entry range (eager and virtual mode; default all).
        schemaclass: a coffea schema (default ``NanoAODSchema``).
        metadata: coffea's ``metadata`` of the events.
        fields: the top-level fields to build the events from (default
            :func:`nanoevents_fields`: all but the importer's ``_collectionN``).
        step_size: dask mode: a partition's largest size (entries, or ``"100 MB"``);
            by default partitions are whole clusters (see :func:`rntuple.dask`).
        report: dask mode: ``.events()`` returns ``(events, report)``, the report as
            :func:`rntuple.dask` gives (bytes each partition read).
        access_log: eager and virtual mode: a list coffea appends each field read to.
        buffer_cache: eager and virtual mode: coffea's buffer cache (a dict-like).

    Raises:
        InvalidArgumentError: an unknown mode, an entry range in dask mode, several
            RNTuples in eager or virtual mode, no files, a bad entry range.
        NotFoundError: a named field the RNTuple does not have.
    """
    if mode not in _MODES:
        raise InvalidArgumentError(f"mode must be one of {list(_MODES)}, not {mode!r}")
    report = check_flag("report", report)
    if step_size is not None:
        step_size = check_step_size(step_size)
    if mode == "dask":
        if entry_start is not None or entry_stop is not None:
            raise InvalidArgumentError(
                "dask mode reads whole files (partitions by step_size): entry_start and entry_stop "
                "are for eager and virtual mode"
            )
        return _dask_factory(files, schemaclass, metadata, fields, step_size, report)
    if report:
        raise InvalidArgumentError("report=True is for dask mode")
    nt = _single_rntuple(files)
    chosen = _checked_fields(nt, fields)
    start, stop = _entry_range(nt.num_entries, entry_start, entry_stop)
    base_form = RNTupleSourceMapping._extract_base_form(nt, chosen)
    preloaded = None
    if mode == "eager":  # coffea builds every buffer now: read all fields in one call
        names = list(base_form["fields"])
        array = nt.arrays(names, entry_start=start, entry_stop=stop, library="ak") if names else {}
        preloaded = {name: canonical_column(array[name]) for name in names}
    uuid = rntuple_identifier(nt.file_path, nt.path)
    mapping = RNTupleSourceMapping(
        nt,
        uuid,
        start,
        stop,
        virtual=mode == "virtual",
        preloaded=preloaded,
        access_log=access_log,
        buffer_cache=buffer_cache,
    )
    if metadata is not None:
        base_form["parameters"]["metadata"] = metadata
    schema = schemaclass(base_form)
    return NanoEventsFactory(schema, mapping, tuple_to_key((uuid, nt.path, f"{start}-{stop}")), mode=mode)


def _checked_fields(nt: Any, fields: Sequence[str] | None) -> list[str]:
    """``fields`` (default :func:`nanoevents_fields`), each a top-level field of ``nt``."""
    if fields is None:
        return nanoevents_fields(nt)
    if isinstance(fields, str):
        raise InvalidArgumentError("fields must be a list of top-level field names, not a string")
    have = set(nt.fields)
    missing = [f for f in fields if f not in have]
    if missing:
        raise NotFoundError(f"no top-level fields {missing} in RNTuple {nt.path!r} of {nt.file_path}")
    return list(fields)


def _entry_range(num_entries: int, start: int | None, stop: int | None) -> tuple[int, int]:
    """``[start, stop)`` clipped to the RNTuple (``None``: its start, its end); integers
    only (:func:`~rntuple.selection.check_entry`), a range that is not one refused."""
    start = check_entry("entry_start", start)
    stop = check_entry("entry_stop", stop)
    start = 0 if start is None else start
    stop = num_entries if stop is None else min(stop, num_entries)
    if start < 0 or start > stop:
        raise InvalidArgumentError(
            f"bad entry range [{start}, {stop}) of an RNTuple of {num_entries} entries"
        )
    return start, stop


def _dask_factory(
    files: Any,
    schemaclass: Any,
    metadata: dict | None,
    fields: Sequence[str] | None,
    step_size: StepSize | None,
    report: bool,
) -> Any:
    """The dask-mode factory: coffea's own NanoEvents form mapping, handed to
    :func:`rntuple.dask` when ``.events()`` is called (as coffea hands it to
    ``uproot.dask``)."""
    try:  # the form mapping coffea gives uproot.dask (not public API of coffea)
        from coffea.nanoevents.factory import _map_schema_uproot
    except ImportError as error:  # pragma: no cover - depends on coffea's version
        raise ImportError("this coffea version has no NanoEvents form mapping for dask mode") from error

    first = next((nt for nt, _ in open_rntuples(files)), None)
    if first is None:
        raise InvalidArgumentError("no RNTuple to read: no files were given")
    # the fields NanoEvents can interpret (coffea's uproot path drops the others too)
    chosen = list(RNTupleSourceMapping._extract_base_form(first, _checked_fields(first, fields))["fields"])
    map_schema = _map_schema_uproot(
        schemaclass=schemaclass,
        behavior=dict(schemaclass.behavior()),
        metadata=metadata,
        version="latest",
    )
    opener = partial(_dask_array, files, chosen, step_size=step_size, report=report)
    return NanoEventsFactory(map_schema, opener, None, mode="dask")
