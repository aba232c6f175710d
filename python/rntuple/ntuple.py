"""An RNTuple of an open file (:class:`RNTuple`) and its fields (:class:`Field`):
schema, metadata, and reading fields or expressions of them, at once or in batches."""

from __future__ import annotations

import difflib
import fnmatch
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import awkward as ak
import numpy as np
import pyarrow as pa

from . import _core
from .errors import InvalidArgumentError, NotFoundError
from .inspection import BY, Inspection
from .libraries import to_awkward, to_library
from .metadata import MetaRecord, RNTupleMetadata
from .options import (
    FieldSelection,
    KeyFilter,
    ReadTypes,
    Selection,
    StepSize,
    entry_range,
    parse_size,
    takes_options,
)
from .plan import ReadPlan, descend
from .selection import (
    Compiled,
    NameFilter,
    check_aliases,
    check_cut,
    check_expressions,
    check_flag,
    check_how,
    check_library,
    check_step_size,
    compile_expression,
    is_glob,
    to_numpy_like_uproot,
)
from .uproot_compat import (
    Report,
    add_doc,
    check_virtual,
    virtual_content,
)


class RNTuple:
    """One RNTuple of an open file: its schema, clusters, and reading of its entries.

    ``len(nt)`` is the number of entries. Reading releases the GIL while pages are read,
    decompressed and decoded (on all cores)."""

    def __init__(self, reader: _core.Reader) -> None:
        self._reader = reader
        # path -> its C++ type, whether it is read directly, the qualified name the core takes
        self._paths: dict[str, _core.FieldPath] | None = None
        # One Field object per path, as uproot gives the same RField each time.
        self._field_objects: dict[str, Field] = {}
        self._metadata: RNTupleMetadata | None = None

    def __enter__(self) -> RNTuple:
        return self

    def __exit__(self, *exc: object) -> None:
        # The file stays open while any RNTuple or Field of it is referenced.
        return None

    # -- metadata objects (as uproot names them; see rntuple.metadata) ------------------

    @property
    def classname(self) -> str:
        """The ROOT class of the object: ``"ROOT::RNTuple"``."""
        return "ROOT::RNTuple"

    @property
    def metadata(self) -> RNTupleMetadata:
        """The anchor, header, footer and page lists (see :class:`rntuple.metadata.RNTupleMetadata`)."""
        if self._metadata is None:
            self._metadata = RNTupleMetadata(self._reader.metadata())
        return self._metadata

    def member(self, name: str) -> int:
        """A member of the anchor by ROOT's name (``"fVersionEpoch"``, ``"fSeekHeader"``,
        ``"fNBytesHeader"``, ``"fLenHeader"``, the same of the footer, ``"fMaxKeySize"``)."""
        anchor = self.metadata.anchor
        if name not in anchor:
            raise NotFoundError(
                f"the anchor of RNTuple {self.path!r} has no member {name!r} (it has {', '.join(anchor)})"
            )
        return anchor[name]

    @property
    def header(self) -> MetaRecord:
        """The header: ``ntuple_name``, ``ntuple_description``, ``writer_identifier``,
        ``field_records``, ``column_records``, ``extra_type_infos``, ``checksum``."""
        return self.metadata.header

    @property
    def footer(self) -> MetaRecord:
        """The footer: ``header_checksum``, ``extension_links`` (the schema extension's
        ``field_records`` and ``column_records``), ``cluster_group_records``,
        ``linked_attribute_sets``."""
        return self.metadata.footer

    @property
    def field_records(self) -> list[MetaRecord]:
        """Every field record, the header's then the schema extension's."""
        return self.metadata.field_records

    @property
    def column_records(self) -> list[MetaRecord]:
        """Every column record, the header's then the schema extension's."""
        return self.metadata.column_records

    @property
    def cluster_summaries(self) -> list[MetaRecord]:
        """``num_first_entry`` and ``num_entries`` of every cluster."""
        return self.metadata.cluster_summaries

    @property
    def page_link_list(self) -> list[list[MetaRecord]]:
        """Per cluster, per column: its ``pages``, ``element_offset``, ``suppressed``."""
        return self.metadata.page_link_list

    def get_field_metadata(self, ncol: int) -> MetaRecord:
        """How column ``ncol`` is stored (see :meth:`RNTupleMetadata.column_metadata`)."""
        if not isinstance(ncol, (int, np.integer)) or not 0 <= ncol < len(self.column_records):
            raise NotFoundError(
                f"RNTuple {self.path!r} has {len(self.column_records)} columns, no column {ncol!r}"
            )
        return self.metadata.column_metadata(int(ncol))

    def read_cluster_pages(self, cluster_idx: int, col_idx: int, field_metadata: Any = None) -> np.ndarray:
        """The decoded elements of column ``col_idx`` in cluster ``cluster_idx``, page
        after page (an offset column's count from the cluster's start; a switch column's
        are records of ``index`` and ``tag``); of a column the cluster suppresses, those
        of the representation of its field the cluster uses. ``field_metadata`` (uproot's
        argument) is not needed: the column's type is in the metadata."""
        for argument, value in (("cluster_idx", cluster_idx), ("col_idx", col_idx)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise InvalidArgumentError(f"{argument} must be a non-negative integer, not {value!r}")
        meta = self.metadata
        if cluster_idx < len(meta.page_link_list) and col_idx < len(meta.page_link_list[cluster_idx]):
            listed = meta.page_link_list[cluster_idx]
            if listed[col_idx].suppressed:
                field_id = meta.column_records[col_idx].field_id
                col_idx = next(
                    (
                        c.idx
                        for c in meta.column_records
                        if c.field_id == field_id and c.idx < len(listed) and not listed[c.idx].suppressed
                    ),
                    col_idx,
                )
        dtype, data = self._reader.column_values(int(cluster_idx), int(col_idx))
        if dtype == "switch":
            return np.frombuffer(data, dtype=np.dtype([("index", "<u8"), ("tag", "<u4")]))
        return np.frombuffer(data, dtype=np.dtype(dtype))

    def to_akform(
        self,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        ak_add_doc: Any = False,
    ) -> tuple[ak.forms.Form, None]:
        """The Awkward form of :meth:`arrays` with these filters, and ``None`` (as uproot,
        whose second item is the path to a field within its form)."""
        values = self.arrays(
            filter_name=filter_name, filter_typename=filter_typename, entry_stop=0, ak_add_doc=ak_add_doc
        )
        return values.layout.form, None

    # -- metadata --------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The RNTuple's name (without its directory)."""
        return self._reader.path.rsplit("/", 1)[-1]

    @property
    def path(self) -> str:
        """The RNTuple's path in its file (``dir/name``)."""
        return self._reader.path

    @property
    def file_path(self) -> str:
        """The file the RNTuple is read from."""
        return self._reader.file_name

    @property
    def num_entries(self) -> int:
        """The number of entries."""
        return self._reader.num_entries

    def __len__(self) -> int:
        return self._reader.num_entries

    @property
    def fields(self) -> list[str]:
        """The names of the top-level fields that can be read, in schema order."""
        return self._reader.field_names()

    @takes_options(filters=KeyFilter)
    def keys(self, filters: KeyFilter, *, full_paths: bool = True) -> list[str]:
        """The selectable field paths: top-level fields and their members (``"Jet.pt"``)
        as :meth:`arrays` takes them, in schema order. As uproot: ``filter_name`` (a name,
        glob, regex ``"/pattern/flags"``, function or list of these) matches a field's
        name, its path or ``"." + path``; ``filter_typename`` its C++ type;
        ``recursive=False`` lists top-level fields only; ``full_paths=False`` gives
        names without their parents."""
        return [self._shown(p, full_paths) for p in self._select_keys(filters)]

    @takes_options(filters=KeyFilter)
    def typenames(self, filters: KeyFilter, *, full_paths: bool = True) -> dict[str, str]:
        """The C++ type of every selectable field path (filters as :meth:`keys`)."""
        return self._typenames(filters, full_paths)

    @takes_options(filters=KeyFilter)
    def values(self, filters: KeyFilter) -> list[Field]:
        """The :class:`Field` of every selected path (filters as :meth:`keys`)."""
        return [Field(self, p) for p in self._select_keys(filters)]

    @takes_options(filters=KeyFilter)
    def items(self, filters: KeyFilter) -> list[tuple[str, Field]]:
        """``(path, Field)`` pairs of the selected paths (filters as :meth:`keys`)."""
        return [(p, Field(self, p)) for p in self._select_keys(filters)]

    def __getitem__(self, where: str | int) -> Field:
        """The field at a path (``nt["Jet_pt"]``, ``nt["Jet.pt"]``, ``nt["Jet/pt"]``; a
        tuple member as ``"pair.0"`` or ``"pair._0"``), or the ``where``-th top-level
        field; a bare member name (``nt["pt"]``) finds the first field of that name."""
        if isinstance(where, (int, np.integer)) and not isinstance(where, bool):
            top = self.fields
            if not -len(top) <= where < len(top):
                raise NotFoundError(
                    f"RNTuple {self.path!r} has {len(top)} top-level fields, no field {where}"
                )
            return self._field(top[where])
        if not isinstance(where, str):
            raise InvalidArgumentError(f"a field is named by a string or an integer, not {where!r}")
        path = self._lookup(where)
        if path is None:
            bare = where.replace("/", ".").replace("\\", ".")
            path = next((p for p in self._field_paths() if p.rsplit(".", 1)[-1] == bare), None)
        if path is None:
            self.resolve_fields([where])  # raises NotFoundError with close matches
        assert path is not None
        return self._field(path)

    def _field(self, path: str) -> Field:
        """The one :class:`Field` object of ``path``."""
        if path not in self._field_objects:
            self._field_objects[path] = Field(self, path)
        return self._field_objects[path]

    def __contains__(self, where: object) -> bool:
        return isinstance(where, str) and self._lookup(where) is not None

    def _lookup(self, where: str) -> str | None:
        """The field path ``where`` names (``/`` or ``\\`` as separators, tuple members
        ``0`` for ``_0`` as uproot spells them), or None."""
        paths = self._field_paths()
        if where in paths:
            return where
        spelled = where.replace("/", ".").replace("\\", ".").strip(".")
        if spelled in paths:
            return spelled
        segments = spelled.split(".")
        for i in range(1, len(segments)):
            if segments[i].isdigit() and f"{'.'.join(segments[:i])}._{segments[i]}" in paths:
                segments[i] = f"_{segments[i]}"
        candidate = ".".join(segments)
        return candidate if candidate in paths else None

    def _select_keys(self, filters: KeyFilter, under: str = "") -> list[str]:
        """The field paths below ``under`` (a path and its dot; "" for all) that
        ``filters`` select, relative to ``under``, in schema order."""
        return filters.paths(((p, f.type_name) for p, f in self._field_paths().items()), under)

    def _typenames(self, filters: KeyFilter, full_paths: Any, under: str = "") -> dict[str, str]:
        """``typenames`` of this RNTuple (``under=""``) or of the field ``under`` names."""
        info = self._field_paths()
        paths = self._select_keys(filters, under)
        return {self._shown(p, full_paths): info[under + p].type_name for p in paths}

    @staticmethod
    def _shown(path: str, full_paths: Any) -> str:
        full_paths = check_flag("full_paths", full_paths)
        return path if full_paths else path.rsplit(".", 1)[-1]

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of all readable fields. Each field's C++ type is in its
        metadata under ``rntuple.type``."""
        return self._reader.schema(None)

    def metrics(self) -> dict[str, int | float]:
        """What reading this RNTuple has cost so far, to check every claim about I/O.

        Keys: ``requests``, ``vector_requests`` (requests that carried several ranges),
        ``ranges`` and ``bytes_read`` (the source's counters, opening included),
        ``bytes_used`` (stored page bytes the decoder used), ``io_wait_seconds`` (time
        in source calls, summed over threads), ``prefetch_wait_seconds`` (time the decoder
        waited for prefetched pages), ``read_seconds`` (time in reads) and
        ``unplanned_pages`` (pages a planned remote read had to fetch on demand).
        """
        return dict(self._reader.metrics())

    @property
    def clusters(self) -> list[range]:
        """The entry range of each cluster, in order."""
        return [range(first, first + n) for first, n in self._reader.clusters()]

    @property
    def compressed_bytes(self) -> int:
        """The compressed size of all pages, in bytes."""
        return self._reader.compressed_bytes()

    @property
    def uncompressed_bytes(self) -> int:
        """The uncompressed size of all pages, in bytes."""
        return self._reader.uncompressed_bytes()

    @property
    def warnings(self) -> list[str]:
        """Why fields were left out (types this reader cannot decode)."""
        return self._reader.warnings

    def show(self, stream: TextIO | None = None) -> None:
        """Prints the schema tree: one line per field with its C++ type and column
        representation (to standard output unless ``stream`` is given)."""
        out = sys.stdout if stream is None else stream
        out.write(f'RNTuple "{self.path}": {self.num_entries} entries\n')
        out.write(self._reader.schema_tree())

    def describe(self) -> str:
        """Schema, cluster groups, clusters and sizes as text (``rntuple info``)."""
        return self._reader.describe()

    def inspect(self, by: str = "field") -> Inspection:
        """Where the bytes go (``rntuple inspect``), from the page lists: a table per
        ``by`` (``"field"``, its subfields included; ``"column"``; or column ``"type"``)
        with compressed and uncompressed bytes, compression factor, pages, average page
        size and share of the file, equal to ROOT's ``RNTupleInspector``; the header,
        footer and page-list sizes; the page sizes. See :class:`rntuple.Inspection`."""
        if by not in BY:
            raise InvalidArgumentError(f"by must be one of {', '.join(map(repr, BY))}, not {by!r}")
        return Inspection(self._reader.inspect(), by=by, name=self.name)

    def __repr__(self) -> str:
        return f"<RNTuple {self.path!r} in {self.file_path!r}: {self.num_entries} entries>"

    # -- field selection ---------------------------------------------------------------

    def _field_paths(self) -> dict[str, _core.FieldPath]:
        if self._paths is None:
            self._paths = {f.path: f for f in self._reader.field_paths()}
        return self._paths

    def resolve_fields(self, fields: FieldSelection) -> list[str]:
        """The field paths a selection names: ``None`` for every top-level field, names,
        nested paths (``"Jet.pt"``) and glob patterns (``"Muon_*"``; a pattern with a dot
        also matches nested paths). Unknown names raise :class:`NotFoundError`."""
        top = self.fields
        if fields is None:
            return top
        if isinstance(fields, str):
            fields = [fields]
        paths = self._field_paths()
        out: list[str] = []
        for pattern in fields:
            if not isinstance(pattern, str):
                raise InvalidArgumentError(f"field names must be strings, not {pattern!r}")
            if any(c in pattern for c in "*?["):
                pool = list(paths) if "." in pattern else top
                matched = [p for p in pool if fnmatch.fnmatchcase(p, pattern)]
                if not matched:
                    raise NotFoundError(f"no field of RNTuple {self.path!r} matches {pattern!r}")
            elif pattern in paths:
                matched = [pattern]
            else:
                close = difflib.get_close_matches(pattern, list(paths), n=3)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                raise NotFoundError(f"RNTuple {self.path!r} has no field {pattern!r}{hint}")
            out.extend(m for m in matched if m not in out)
        return out

    def _qualified(self, paths: list[str]) -> list[str]:
        """The names the core takes for resolved field paths (``Jet._0.pt`` for
        ``Jet.pt``); the core keeps paths through records as members of their top-level
        record and gathers paths into collections into their top-level field's column."""
        info = self._field_paths()
        return [info[p].qualified for p in paths]

    # -- reading ---------------------------------------------------------------------

    @takes_options(selection=Selection, typing=ReadTypes)
    def arrays(
        self,
        selection: Selection,
        *,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        how: Any = None,
        typing: ReadTypes,
        ak_add_doc: Any = False,
        virtual: bool = False,
        access_log: Any = None,
    ) -> Any:
        """Reads fields or expressions of them over ``entry_start:entry_stop`` (Python
        slice semantics, clipped), as uproot's ``arrays``:

        - ``expressions``: field names, nested paths (``"Jet.pt"``, read as the
          top-level record holding the path), glob patterns (``"Muon_*"``), aliases, or
          Python expressions of them (``"Jet_pt * 2"``, ``"sqrt(MET_pt)"``, NumPy's
          functions; a result is named by its expression); ``None`` reads every field
          the filters select (every field without filters);
        - ``cut``: an expression; only the entries (or list items) where it is true are
          returned; ``aliases``: ``{name: expression}`` usable in both;
        - ``filter_name``, ``filter_typename``: as :meth:`keys`, when ``expressions`` is
          None (as uproot's TTree reading, they select nothing with expressions);
        - ``library``: ``"ak"`` (an ``awkward.Array`` of records), ``"np"`` (a dict of
          NumPy arrays as uproot gives them: jagged fields as object arrays of per-entry
          arrays), ``"pd"`` (a DataFrame indexed by entry number), ``"pl"``, ``"arrow"``;
        - ``how``: ``dict``, ``tuple`` or ``list`` of the results, or ``"zip"`` (for
          ``"ak"``: jagged fields with equal counts zipped by their common prefix);
        - ``types``: fields read as another type than the one on disk, by ROOT's schema
          evolution rules: ``{"x": "double", "v": "std::vector<std::int64_t>"}`` (C++
          type names as ROOT spells them, or NumPy's ``"float64"``, ``"int32"``, ...); a
          dict of members reads a record member by member, by name, in the dict's
          order (``{"evo": {"a": "std::int64_t", "c": "float"}}``: members not listed
          are left out, listed members not on disk are None, or ``defaults[path]``); a
          path converts one member (``{"evo.a": "std::int64_t"}``). A conversion the
          rules refuse raises :class:`~rntuple.IncompatibleTypeError` before anything
          is read; a value that does not fit raises
          :class:`~rntuple.ValueOutOfRangeError` naming the field, the entry and the
          value, or is None with ``on_overflow="mask"``.
        - ``ak_add_doc``: for ``"ak"``, ``True`` puts each field's description in its
          Awkward ``__doc__`` parameter (the RNTuple's on the records), a dict
          ``{parameter: attribute}`` a field's ``"typename"``, ``"description"`` or
          ``"name"`` in that parameter;
        - ``virtual=True``: Awkward records whose fields are read when first used, each
          field with one read (no expressions, cut, aliases or ``how``); each buffer
          read is appended to ``access_log`` (a list, or anything with ``+=``) as an
          :class:`rntuple.uproot_compat.Accessed`.
        """
        virtual = check_virtual(
            virtual,
            access_log,
            library=library,
            how=how,
            expressions=selection.expressions,
            cut=selection.cut,
            aliases=selection.aliases,
        )
        plan = self._plan(selection, typing)
        library = check_library(library)
        how = check_how(how, library)
        start, stop = entry_range(self.num_entries, entry_start, entry_stop)
        if virtual:
            return self._virtual_records(plan.selection, start, stop, access_log, ak_add_doc, plan.types)
        return self._add_doc(plan.read(self, start, stop, library, how), library, how, ak_add_doc)

    def _virtual_records(
        self, selection: list[str], start: int, stop: int, access_log: Any, ak_add_doc: Any, types: Any = None
    ) -> ak.Array:
        """Records of the top-level fields holding ``selection``, read when first used
        (as ``types``, :meth:`_read_types`, asks)."""
        groups: dict[str, list[str]] = {}
        for path in selection:
            groups.setdefault(path.split(".")[0], []).append(path)
        contents = [
            virtual_content(self, paths, name, start, stop, access_log, types=types)
            for name, paths in groups.items()
        ]
        records = ak.Array(ak.contents.RecordArray(contents, list(groups), length=stop - start))
        return self._add_doc(records, "ak", None, ak_add_doc)

    def _add_doc(self, result: Any, library: str, how: Any, ak_add_doc: Any) -> Any:
        """``result`` with field descriptions as Awkward parameters (see :meth:`arrays`)."""
        if ak_add_doc is False or ak_add_doc is None:
            return result
        if not (ak_add_doc is True or isinstance(ak_add_doc, dict)):
            raise InvalidArgumentError(f"ak_add_doc must be True, False or a dict, not {ak_add_doc!r}")
        if library != "ak" or how is not None:
            return result
        meta = self.metadata
        ids = meta.field_paths()
        layout = result.layout
        contents = [
            add_doc(content, meta, ids[name], ak_add_doc) if name in ids else content
            for name, content in zip(layout.fields, layout.contents, strict=True)
        ]
        parameters = dict(layout.parameters)
        if ak_add_doc is True and meta.header.ntuple_description:
            parameters["__doc__"] = meta.header.ntuple_description
        return ak.Array(layout.copy(contents=contents, parameters=parameters))

    @takes_options(selection=Selection, typing=ReadTypes)
    def iterate(
        self,
        selection: Selection,
        *,
        step_size: StepSize = "100 MB",
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        how: Any = None,
        decode_ahead: bool = True,
        typing: ReadTypes,
        report: bool = False,
        ak_add_doc: Any = False,
    ) -> Iterator[Any]:
        """Yields :meth:`arrays` in batches of at most ``step_size`` entries that end at
        cluster boundaries: whole clusters are grouped while they fit in a step, and a
        cluster larger than a step is cut into steps from its first entry (so a batch
        may be shorter than uproot's, never longer). A memory size (``"100 MB"``) is
        turned into entries as uproot does: the step's share of the decoded bytes of the
        selected columns over the clusters the range touches.

        ``report=True`` yields ``(arrays, report)`` pairs, the
        :class:`rntuple.uproot_compat.Report` saying which entries the batch holds.
        ``ak_add_doc``: as :meth:`arrays`.

        With ``decode_ahead`` (the default) the next batch is read and decoded on a
        thread of its own while the caller works on the current one, so that a loop
        costs about the larger of reading and computing, not their sum; memory holds at
        most one decoded batch beyond the caller's. ``decode_ahead=False`` reads each
        batch only when the loop asks for it. ``types``, ``on_overflow``, ``defaults``:
        as :meth:`arrays`."""
        report = check_flag("report", report)
        plan = self._plan(selection, typing)
        for result, first, last in self._iterate_plan(
            plan, step_size, entry_start, entry_stop, library, how, decode_ahead, 0
        ):
            result = self._add_doc(result, library, how, ak_add_doc)
            yield (result, Report(self, first, last)) if report else result

    def step_ranges(
        self, fields: FieldSelection, start: int, stop: int, step_size: StepSize
    ) -> list[tuple[int, int]]:
        """The entry ranges :meth:`iterate` reads over ``start:stop`` (see there), as the
        core plans uproot's steps."""
        step_size = check_step_size(step_size)
        if isinstance(step_size, int):
            return self._reader.batch_ranges(None, start, stop, step_entries=step_size, uproot=True)
        try:
            target = parse_size(step_size)
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"step_size: {err}") from None
        names = self._qualified(self.resolve_fields(fields))
        return self._reader.batch_ranges(names, start, stop, step_bytes=target, uproot=True)

    def _iterate_plan(
        self,
        plan: ReadPlan,
        step_size: Any,
        entry_start: Any,
        entry_stop: Any,
        library: Any,
        how: Any,
        decode_ahead: bool,
        global_offset: int,
    ) -> Iterator[tuple[Any, int, int]]:
        """The batches of ``plan`` (this file's alone, or as a file of a chain) with their
        entry ranges: one code for both."""
        library = check_library(library)
        how = check_how(how, library)
        step_size = check_step_size(step_size)
        start, stop = entry_range(self.num_entries, entry_start, entry_stop)
        ranges = self.step_ranges(plan.present(plan.read_paths) or self.fields, start, stop, step_size)
        # One stream over all the batches: the next batch is decoded while the current
        # one is used (decode_ahead), and from a remote file the next batches' pages are
        # fetched meanwhile.
        if not plan.computes:
            streams = [plan.stream(self, plan.selection, ranges, decode_ahead)]
        else:
            # The fields selected as they are and the expressions' inputs.
            streams = [
                plan.stream(self, paths, ranges, decode_ahead) if paths else None
                for paths in (plan.selection, plan.inputs)
            ]
        try:
            for first, last in ranges:
                tables = [None if s is None else pa.Table.from_batches([next(s)]) for s in streams]
                if not plan.computes:
                    result = plan.convert(tables[0], first + global_offset, library, how)
                else:
                    columns, index = plan.evaluate_tables(tables[0], tables[1], first, last)
                    result = plan.finish(columns, index + global_offset, library, how)
                yield result, first, last
        finally:
            # Leaving the loop early stops the decoding threads now, not when collected.
            for s in streams:
                if s is not None:
                    s.close()

    def _stream(
        self, paths: list[str], ranges: list[tuple[int, int]], decode_ahead: bool, types: Any = None
    ) -> Any:
        """An iterator of the ``pyarrow.RecordBatch`` of ``paths`` over each of
        ``ranges``, in turn (``close()`` stops it); ``types``: :meth:`_read_types`."""
        return self._reader.batches(self._qualified(paths), ranges, decode_ahead, types)

    def _read_table(self, paths: list[str], start: int, stop: int, types: Any = None) -> pa.Table:
        batch = self._reader.read(self._qualified(paths), start, stop, types)
        return pa.Table.from_batches([batch])

    def _read_types(
        self,
        types: dict[str, Any] | None,
        on_overflow: str = "raise",
        defaults: dict[str, Any] | None = None,
    ) -> Any:
        """The core's parsed form of ``types=`` (field paths as :meth:`keys` names them,
        C++ type names or dicts of members), or None when nothing is converted: the one
        place a read's types are decided, for one file as for each file of a chain."""
        if on_overflow not in ("raise", "mask"):
            raise InvalidArgumentError(f"on_overflow={on_overflow!r}: expected 'raise' or 'mask'")
        if types is None:
            if defaults:
                raise InvalidArgumentError("defaults= names members added by types=, and no types= is given")
            return None
        if not isinstance(types, dict):
            raise InvalidArgumentError(
                f"types must be a dict of field names to C++ type names, not {type(types).__name__}"
            )
        if defaults is not None and not isinstance(defaults, dict):
            raise InvalidArgumentError(f"defaults must be a dict, not {type(defaults).__name__}")
        info = self._field_paths()

        def qualified(path: str, added: bool = False) -> str:
            if not isinstance(path, str):
                raise InvalidArgumentError(f"types and defaults name fields by strings, not {path!r}")
            if path in info:
                return info[path].qualified
            head, _, tail = path.rpartition(".")
            # A member added by types= (a default's path) is not on disk, nor the item of a
            # collection (``v._0``): qualify its record or collection.
            if head in info and (added or re.fullmatch(r"_\d+", tail)):
                return f"{info[head].qualified}.{tail}"
            close = difflib.get_close_matches(path, list(info), n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise NotFoundError(f"RNTuple {self.path!r} of {self.file_path} has no field {path!r}{hint}")

        if not types:
            return None
        return _core.read_types(
            {qualified(k): v for k, v in types.items()},
            on_overflow,
            {qualified(k, added=True): v for k, v in (defaults or {}).items()},
        )

    def _plan(self, selection: Selection, typing: ReadTypes | None = None) -> ReadPlan:
        """What :meth:`arrays` reads and computes for uproot's selection arguments, read
        as ``typing`` asks (:meth:`_read_types`)."""
        exprs = check_expressions(selection.expressions)
        cut = check_cut(selection.cut)
        alias_texts = check_aliases(selection.aliases)
        filter_name, filter_typename = selection.filter_name, selection.filter_typename
        filtered = (
            self._select_keys(KeyFilter(filter_name, filter_typename))
            if filter_name is not None or filter_typename is not None
            else None
        )
        plan = ReadPlan()

        def is_name(name: str) -> bool:
            return name in alias_texts or self._lookup(name) is not None

        def unknown_in(text: str, argument: str) -> Any:
            def error(name: str) -> Exception:
                close = difflib.get_close_matches(name, [*self._field_paths(), *alias_texts], n=3)
                hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
                return NotFoundError(
                    f"RNTuple {self.path!r} has no field or alias {name!r} (in {argument} {text!r}){hint}"
                )

            return error

        def compile_text(argument: str, text: str) -> Compiled:
            return compile_expression(argument, text, is_name, unknown_in(text, argument))

        if exprs is None:
            if filtered is None:
                plan.select(self.fields)
            else:
                # A selected field comes with its subfields: keep the outermost paths.
                outer = [p for p in filtered if not any(p.startswith(f"{q}.") for q in filtered)]
                plan.select(outer)
        else:
            for text in exprs:
                if text in alias_texts:
                    plan.compute(text, compile_text("aliases", alias_texts[text]))
                    continue
                path = self._lookup(text)
                if path is not None:
                    plan.select([path])
                    continue
                try:
                    plan.compute(text, compile_text("expressions", text))
                except (InvalidArgumentError, NotFoundError) as err:
                    if not is_glob(text):
                        raise
                    # Not an expression of known names: a glob pattern ("Muon_*"); if
                    # it matches nothing either, the expression's error says why.
                    try:
                        matched = self.resolve_fields([text])
                    except NotFoundError:
                        if isinstance(err, NotFoundError):
                            raise err from None
                        raise
                    plan.select(matched)
        if cut is not None:
            plan.cut = compile_text("cut", cut)
        # The aliases the expressions use, compiled once each (an unused one is not).
        pending = [n for c in plan.compiled() for n in c.used if n in alias_texts]
        while pending:
            name = pending.pop()
            if name not in plan.aliases:
                plan.aliases[name] = compile_text(f"alias {name!r}", alias_texts[name])
                pending.extend(n for n in plan.aliases[name].used if n in alias_texts)
        plan.inputs = [self._lookup(n) or n for c in plan.compiled() for n in c.used if n not in alias_texts]
        plan.inputs = list(dict.fromkeys(plan.inputs))
        if typing is not None:
            plan.types = self._read_types(typing.types, typing.on_overflow, typing.defaults)
        return plan

    def batch_ranges(
        self, fields: FieldSelection, start: int, stop: int, step_size: StepSize
    ) -> list[tuple[int, int]]:
        """The entry ranges :func:`rntuple.dask` partitions cover (:meth:`iterate`'s are
        :meth:`step_ranges`), cut at cluster boundaries: whole
        clusters are grouped until the next one would pass ``step_size`` (entries for an
        integer, uncompressed bytes of the selected fields for a string), and a cluster
        larger than the step is cut into equal parts; at least one entry per batch."""
        names = self._qualified(self.resolve_fields(fields))
        step_size = check_step_size(step_size)
        if isinstance(step_size, int):
            return self._reader.batch_ranges(names, start, stop, step_entries=step_size)
        try:
            step_bytes = parse_size(step_size)
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"step_size: {err}") from None
        return self._reader.batch_ranges(names, start, stop, step_bytes=step_bytes)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow PyCapsule stream of every field, one record batch per cluster,
        read as the consumer pulls (``pyarrow.table(nt)``, ``polars.from_arrow(nt)``,
        DuckDB's ``FROM nt``)."""
        clusters = self._reader.clusters() or [(0, 0)]
        ranges = [(first, first + n) for first, n in clusters]
        return self._reader.stream(None, ranges).__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        """The Arrow PyCapsule of the schema of every field."""
        return self.schema.__arrow_c_schema__()


class Field:
    """One field of an RNTuple, as uproot's ``RField``: ``nt["Jet_pt"]``,
    ``nt["Jet.pt"]``. ``array()`` reads its values, ``arrays()`` the record holding it,
    ``fields`` are its direct subfields, ``typename`` its C++ type."""

    def __init__(self, ntuple: RNTuple, path: str) -> None:
        self._ntuple = ntuple
        self._path = path

    @property
    def ntuple(self) -> RNTuple:
        """The RNTuple the field is part of."""
        return self._ntuple

    @property
    def path(self) -> str:
        """The field's path from the top (``"Jet.pt"``)."""
        return self._path

    @property
    def name(self) -> str:
        """The field's own name (the last segment of its path)."""
        return self._path.rsplit(".", 1)[-1]

    @property
    def typename(self) -> str:
        """The field's C++ type."""
        return self._ntuple._field_paths()[self._path].type_name

    @property
    def num_entries(self) -> int:
        """The number of entries of the RNTuple."""
        return self._ntuple.num_entries

    @property
    def fields(self) -> list[Field]:
        """The direct subfields (record members, tuple elements, a collection's item
        members), in schema order."""
        prefix = f"{self._path}."
        return [
            self._ntuple._field(p)
            for p in self._ntuple._field_paths()
            if p.startswith(prefix) and "." not in p[len(prefix) :]
        ]

    def __len__(self) -> int:
        """The number of direct subfields (as uproot's ``len`` of a field)."""
        return len(self.fields)

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    @property
    def field_id(self) -> int:
        """The field's id in the RNTuple's schema."""
        return self._ntuple.metadata.field_paths()[self._path]

    @property
    def record(self) -> MetaRecord:
        """The field's record in the schema (``struct_role``, ``type_name``, ...)."""
        return self._ntuple.field_records[self.field_id]

    @property
    def description(self) -> str:
        """The field's description."""
        return self.record.field_desc

    def to_akform(
        self, *, filter_name: NameFilter = None, filter_typename: NameFilter = None, ak_add_doc: Any = False
    ) -> tuple[ak.forms.Form, list[str]]:
        """The Awkward form of :meth:`arrays` with these filters (the record
        ``{name: values}``) and the path to this field from the form's top (as uproot)."""
        values = self.arrays(filter_name=filter_name, filter_typename=filter_typename, entry_stop=0)
        if ak_add_doc is not False and ak_add_doc is not None:
            if not (ak_add_doc is True or isinstance(ak_add_doc, dict)):
                raise InvalidArgumentError(f"ak_add_doc must be True, False or a dict, not {ak_add_doc!r}")
            layout = add_doc(values[self.name].layout, self._ntuple.metadata, self.field_id, ak_add_doc)
            values = ak.Array(ak.contents.RecordArray([layout], [self.name], length=0))
        return values.layout.form, [self.name]

    def iterate(
        self,
        *,
        step_size: StepSize = "100 MB",
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        how: Any = None,
        report: bool = False,
    ) -> Iterator[Any]:
        """Yields :meth:`arrays` (the record ``{name: values}``) in the batches of
        :meth:`RNTuple.iterate` (``step_size``, ``report`` as there)."""
        library = check_library(library)
        how = check_how(how, library)
        report = check_flag("report", report)
        start, stop = entry_range(self._ntuple.num_entries, entry_start, entry_stop)
        for first, last in self._ntuple.step_ranges([self._path], start, stop, step_size):
            result = self.arrays(entry_start=first, entry_stop=last, library=library, how=how)
            yield (result, Report(self._ntuple, first, last)) if report else result

    @takes_options(filters=KeyFilter)
    def keys(self, filters: KeyFilter, *, full_paths: bool = True) -> list[str]:
        """The paths of the subfields relative to this field (filters as
        :meth:`RNTuple.keys`, matched on the relative path)."""
        return list(self._ntuple._typenames(filters, full_paths, f"{self._path}."))

    @takes_options(filters=KeyFilter)
    def typenames(self, filters: KeyFilter, *, full_paths: bool = True) -> dict[str, str]:
        """The C++ types of the subfields, by relative path (filters as :meth:`keys`)."""
        return self._ntuple._typenames(filters, full_paths, f"{self._path}.")

    def __getitem__(self, where: str | int) -> Field:
        if isinstance(where, (int, np.integer)) and not isinstance(where, bool):
            return self.fields[where]
        if not isinstance(where, str):
            raise InvalidArgumentError(f"a subfield is named by a string or an integer, not {where!r}")
        return self._ntuple[f"{self._path}.{where.lstrip('./')}"]

    def _values(self, paths: list[str], entry_start: Any, entry_stop: Any) -> tuple[ak.Array, int]:
        start, stop = entry_range(self._ntuple.num_entries, entry_start, entry_stop)
        records = to_awkward(self._ntuple._read_table(paths, start, stop))
        return descend(records, self._path), start

    def array(
        self,
        *,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        virtual: bool = False,
        access_log: Any = None,
    ) -> Any:
        """The field's values over ``entry_start:entry_stop``: an ``awkward.Array``
        (``"ak"``), a NumPy array as uproot gives it (``"np"``), a pandas Series indexed
        by entry (``"pd"``), a pyarrow Array (``"arrow"``) or a Polars Series (``"pl"``).
        ``virtual``, ``access_log``: as :meth:`RNTuple.arrays`."""
        virtual = check_virtual(virtual, access_log, library=library)
        library = check_library(library)
        if virtual:
            start, stop = entry_range(self._ntuple.num_entries, entry_start, entry_stop)
            top = self._path.split(".")[0]
            layout = virtual_content(
                self._ntuple,
                [self._path],
                top,
                start,
                stop,
                access_log,
                select=lambda records: descend(ak.Array({top: records}), self._path),
            )
            return ak.Array(layout)
        values, start = self._values([self._path], entry_start, entry_stop)
        index = np.arange(start, start + len(values))
        if library == "ak":
            return values
        if library == "np":
            return to_numpy_like_uproot(values)
        if library == "pd":
            frame = ReadPlan.finish({self.name: values}, index, "pd", None)
            return frame[self.name]
        table = ak.to_arrow_table(
            ak.Array({self.name: values}), extensionarray=False, list_to32=False, string_to32=False
        )
        if library == "arrow":
            return table.column(self.name).combine_chunks()
        return to_library(table, "pl")[self.name]

    def arrays(
        self,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        how: Any = None,
    ) -> Any:
        """The record ``{name: values}`` of this field (as uproot's ``RField.arrays``),
        restricted to the subfields the filters select (as :meth:`keys`)."""
        library = check_library(library)
        how = check_how(how, library)
        if filter_name is None and filter_typename is None:
            paths = [self._path]
        else:
            relative = self._ntuple._select_keys(KeyFilter(filter_name, filter_typename), f"{self._path}.")
            paths = [f"{self._path}.{r}" for r in relative]
            paths = [p for p in paths if not any(p.startswith(f"{q}.") for q in paths)]
        if not paths:
            start, stop = entry_range(self._ntuple.num_entries, entry_start, entry_stop)
            return ReadPlan.finish({}, np.arange(start, stop), library, how)
        values, start = self._values(paths, entry_start, entry_stop)
        return ReadPlan.finish({self.name: values}, np.arange(start, start + len(values)), library, how)

    def __repr__(self) -> str:
        return f"<Field {self._path!r} ({self.typename}) of RNTuple {self._ntuple.path!r}>"
