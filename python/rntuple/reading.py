"""Reading: open a ROOT file, pick an RNTuple, read fields into Awkward, NumPy, Arrow,
pandas or Polars, at once or in cluster-aligned batches."""

from __future__ import annotations

import concurrent.futures
import difflib
import fnmatch
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TextIO

import awkward as ak
import numpy as np
import pyarrow as pa

from . import _core
from ._extras import require
from .cache import check_cache
from .convert import to_awkward, to_library
from .errors import FormatError, InvalidArgumentError, NotFoundError, _os_error
from .inspection import BY, Inspection
from .metadata import MetaRecord, RNTupleMetadata
from .selection import (
    Compiled,
    Evaluator,
    NameFilter,
    check_aliases,
    check_cut,
    check_entry,
    check_expressions,
    check_flag,
    check_how,
    check_library,
    check_network,
    check_step_size,
    compile_expression,
    is_glob,
    make_filter,
    to_numpy_like_uproot,
    zip_jagged,
)
from .uproot_compat import (
    Report,
    add_doc,
    check_virtual,
    step_entries_for_bytes,
    step_ranges,
    virtual_content,
)

FieldSelection = str | Sequence[str] | None
StepSize = int | str

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(size: int | str) -> int:
    """Bytes from an integer or a string such as ``"100 MB"``, ``"1.5 GiB"``, ``"512kB"``."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise InvalidArgumentError(
            f"a size must be a number of bytes (an integer) or a string such as '100 MB', not {size!r}"
        )
    if isinstance(size, int):
        if size <= 0:
            raise InvalidArgumentError(f"a size must be positive, not {size}")
        return size
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", size)
    unit = match.group(2).lower() if match else ""
    if not match or (unit not in _UNITS and unit != ""):
        raise InvalidArgumentError(
            f"cannot read {size!r} as a size: give bytes as an integer or a number with "
            "a unit (B, kB, MB, GB, KiB, MiB, GiB)"
        )
    value = int(float(match.group(1)) * _UNITS.get(unit, 1))
    if value <= 0:
        raise InvalidArgumentError(f"a size must be positive, not {size!r}")
    return value


def _entry_range(num_entries: int, start: Any, stop: Any) -> tuple[int, int]:
    """Python-style bounds (negative counts from the end), clipped to the RNTuple;
    anything but an integer or None is an :class:`InvalidArgumentError`."""
    start = check_entry("entry_start", start)
    stop = check_entry("entry_stop", stop)
    start = 0 if start is None else start
    stop = num_entries if stop is None else stop
    if start < 0:
        start += num_entries
    if stop < 0:
        stop += num_entries
    start = min(max(start, 0), num_entries)
    stop = min(max(stop, start), num_entries)
    return start, stop


class RNTuple:
    """One RNTuple of an open file: its schema, clusters, and reading of its entries.

    ``len(nt)`` is the number of entries. Reading releases the GIL while pages are read,
    decompressed and decoded (on all cores)."""

    def __init__(self, reader: _core.Reader) -> None:
        self._reader = reader
        # path -> (C++ type, read directly, qualified name the core takes)
        self._paths: dict[str, tuple[str, bool, str]] | None = None
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

    def keys(
        self,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        recursive: bool = True,
        full_paths: bool = True,
    ) -> list[str]:
        """The selectable field paths: top-level fields and their members (``"Jet.pt"``)
        as :meth:`arrays` takes them, in schema order. As uproot: ``filter_name`` (a name,
        glob, regex ``"/pattern/flags"``, function or list of these) matches a field's
        name, its path or ``"." + path``; ``filter_typename`` its C++ type;
        ``recursive=False`` lists top-level fields only; ``full_paths=False`` gives
        names without their parents."""
        return [
            self._shown(p, full_paths) for p in self._select_keys(filter_name, filter_typename, recursive)
        ]

    def typenames(
        self,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        recursive: bool = True,
        full_paths: bool = True,
    ) -> dict[str, str]:
        """The C++ type of every selectable field path (filters as :meth:`keys`)."""
        paths = self._select_keys(filter_name, filter_typename, recursive)
        info = self._field_paths()
        return {self._shown(p, full_paths): info[p][0] for p in paths}

    def values(
        self, *, filter_name: NameFilter = None, filter_typename: NameFilter = None, recursive: bool = True
    ) -> list[Field]:
        """The :class:`Field` of every selected path (filters as :meth:`keys`)."""
        return [Field(self, p) for p in self._select_keys(filter_name, filter_typename, recursive)]

    def items(
        self, *, filter_name: NameFilter = None, filter_typename: NameFilter = None, recursive: bool = True
    ) -> list[tuple[str, Field]]:
        """``(path, Field)`` pairs of the selected paths (filters as :meth:`keys`)."""
        return [(p, Field(self, p)) for p in self._select_keys(filter_name, filter_typename, recursive)]

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

    def _select_keys(self, filter_name: Any, filter_typename: Any, recursive: Any = True) -> list[str]:
        recursive = check_flag("recursive", recursive)
        by_name = make_filter("filter_name", filter_name)
        by_type = make_filter("filter_typename", filter_typename)
        out = []
        for path, (typename, _, _) in self._field_paths().items():
            if not recursive and "." in path:
                continue
            name = path.rsplit(".", 1)[-1]
            if by_name is not None and not (by_name(name) or by_name(path) or by_name("." + path)):
                continue
            if by_type is not None and not by_type(typename):
                continue
            out.append(path)
        return out

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

    def _field_paths(self) -> dict[str, tuple[str, bool, str]]:
        if self._paths is None:
            self._paths = {p: (t, direct, q) for p, t, direct, q in self._reader.field_paths()}
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
        return [info[p][2] for p in paths]

    # -- reading ---------------------------------------------------------------------

    def arrays(
        self,
        expressions: str | Sequence[str] | None = None,
        cut: str | None = None,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        aliases: dict[str, str] | None = None,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        how: Any = None,
        types: dict[str, Any] | None = None,
        on_overflow: str = "raise",
        defaults: dict[str, Any] | None = None,
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
            virtual, access_log, library=library, how=how, expressions=expressions, cut=cut, aliases=aliases
        )
        plan = self._plan(expressions, cut, filter_name, filter_typename, aliases)
        plan.types = self._read_types(types, on_overflow, defaults)
        library = check_library(library)
        how = check_how(how, library)
        start, stop = _entry_range(self.num_entries, entry_start, entry_stop)
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

    def iterate(
        self,
        expressions: str | Sequence[str] | None = None,
        cut: str | None = None,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        aliases: dict[str, str] | None = None,
        step_size: StepSize = "100 MB",
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
        how: Any = None,
        decode_ahead: bool = True,
        types: dict[str, Any] | None = None,
        on_overflow: str = "raise",
        defaults: dict[str, Any] | None = None,
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
        for result, first, last in self._iterate(
            expressions,
            cut,
            filter_name,
            filter_typename,
            aliases,
            step_size,
            entry_start,
            entry_stop,
            library,
            how,
            decode_ahead,
            0,
            types,
            on_overflow,
            defaults,
        ):
            result = self._add_doc(result, library, how, ak_add_doc)
            yield (result, Report(self, first, last)) if report else result

    def step_ranges(
        self, fields: FieldSelection, start: int, stop: int, step_size: StepSize
    ) -> list[tuple[int, int]]:
        """The entry ranges :meth:`iterate` reads over ``start:stop`` (see there)."""
        step_size = check_step_size(step_size)
        if isinstance(step_size, str):
            try:
                target = parse_size(step_size)
            except InvalidArgumentError as err:
                raise InvalidArgumentError(f"step_size: {err}") from None
            ids = self.metadata.field_paths()
            paths = self.resolve_fields(fields)
            field_ids = sorted({i for p in paths if p in ids for i in self.metadata.subtree(ids[p])})
            step_size = step_entries_for_bytes(self.metadata, field_ids, target, start, stop)
        return step_ranges(self.clusters, start, stop, step_size)

    def _iterate(
        self,
        expressions: Any,
        cut: Any,
        filter_name: Any,
        filter_typename: Any,
        aliases: Any,
        step_size: Any,
        entry_start: Any,
        entry_stop: Any,
        library: Any,
        how: Any,
        decode_ahead: bool,
        global_offset: int,
        types: dict[str, Any] | None = None,
        on_overflow: str = "raise",
        defaults: dict[str, Any] | None = None,
    ) -> Iterator[tuple[Any, int, int]]:
        """:meth:`iterate`'s batches with their entry ranges; a pandas index counts from
        ``global_offset`` (the entries of the files before this one)."""
        plan = self._plan(expressions, cut, filter_name, filter_typename, aliases)
        plan.types = self._read_types(types, on_overflow, defaults)
        yield from self._iterate_plan(
            plan, step_size, entry_start, entry_stop, library, how, decode_ahead, global_offset
        )

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
        start, stop = _entry_range(self.num_entries, entry_start, entry_stop)
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
                    result = plan._finish(columns, index + global_offset, library, how)
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
                return info[path][2]
            head, _, tail = path.rpartition(".")
            # A member added by types= (a default's path) is not on disk, nor the item of a
            # collection (``v._0``): qualify its record or collection.
            if head in info and (added or re.fullmatch(r"_\d+", tail)):
                return f"{info[head][2]}.{tail}"
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

    def _plan(
        self, expressions: Any, cut: Any, filter_name: Any, filter_typename: Any, aliases: Any
    ) -> ReadPlan:
        """What :meth:`arrays` reads and computes for uproot's selection arguments."""
        exprs = check_expressions(expressions)
        cut = check_cut(cut)
        alias_texts = check_aliases(aliases)
        filtered = (
            self._select_keys(filter_name, filter_typename)
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


def _descend(records: ak.Array, path: str) -> ak.Array:
    """The values at a field path of records read with that path (through lists)."""
    value = records
    for segment in path.split("."):
        if segment not in value.fields and re.fullmatch(r"_[0-9]+", segment) and value.is_tuple:
            segment = segment[1:]  # a tuple's member "_0" is Awkward's field "0"
        value = value[segment]
    return value


def _group(columns: dict[str, Any], how: Any) -> Any:
    """``columns`` as ``how`` asks: a dict, tuple or list (None is handled by the caller)."""
    if how is dict:
        return dict(columns)
    if how is tuple:
        return tuple(columns.values())
    return list(columns.values())


def _awkward_records(columns: dict[str, Any], length: int) -> ak.Array:
    if not columns:
        return ak.Array(ak.contents.RecordArray([], [], length=length))
    return ak.Array(columns)


class ReadPlan:
    """What one :meth:`RNTuple.arrays` call reads and computes: fields read as they are
    (``selection``), results named by their expressions, the cut, the aliases used."""

    def __init__(self) -> None:
        #: Field paths read as they are, each output as its top-level record.
        self.selection: list[str] = []
        #: Output names in order, with the compiled expression (None for a selection).
        self.outputs: dict[str, Compiled | None] = {}
        self.cut: Compiled | None = None
        self.aliases: dict[str, Compiled] = {}
        #: The field paths the expressions, cut and aliases use.
        self.inputs: list[str] = []
        #: The types fields are read as (the core's parsed ``types=``), or None.
        self.types: Any = None
        #: The chain (:class:`rntuple.unify.ChainReading`) this file is read as a part
        #: of, and the file's index in it; None for a file read alone.
        self.chain: Any = None
        self.chain_index = 0

    def select(self, paths: list[str]) -> None:
        """Reads ``paths`` as they are; each is output as its top-level record."""
        for path in paths:
            if path not in self.selection:
                self.selection.append(path)
            self.outputs.setdefault(path.split(".")[0], None)

    def compute(self, name: str, compiled: Compiled) -> None:
        """Outputs the value of ``compiled`` as ``name``."""
        self.outputs.setdefault(name, compiled)

    def compiled(self) -> list[Compiled]:
        """Every compiled expression: the outputs', the cut's and the aliases'."""
        out = [c for c in self.outputs.values() if c is not None]
        return [*out, *([self.cut] if self.cut is not None else []), *self.aliases.values()]

    @property
    def computes(self) -> bool:
        """Whether anything is evaluated (an expression or a cut)."""
        return self.cut is not None or any(c is not None for c in self.outputs.values())

    @property
    def read_paths(self) -> list[str]:
        """Every field path read: the selection's and the expressions' inputs."""
        return list(dict.fromkeys([*self.selection, *self.inputs]))

    def table(self, nt: RNTuple, paths: list[str], start: int, stop: int) -> pa.Table:
        """``paths`` over ``start:stop`` read with the plan's types (as the chain's schema
        for a file of a chain: the one place both paths read a table)."""
        if self.chain is None:
            return nt._read_table(paths, start, stop, self.types)
        return self.chain.read_table(nt, self.chain_index, paths, start, stop, self.types)

    def stream(self, nt: RNTuple, paths: list[str], ranges: list[tuple[int, int]], decode_ahead: bool) -> Any:
        """The record batches of ``paths`` over each of ``ranges``, in turn, as
        :meth:`table` reads them (``close()`` stops the stream)."""
        if self.chain is None:
            return nt._stream(paths, ranges, decode_ahead, self.types)
        return self.chain.stream(nt, self.chain_index, paths, ranges, decode_ahead, self.types)

    def present(self, paths: list[str]) -> list[str]:
        """The paths of ``paths`` the file has (a file of a chain may lack some)."""
        return paths if self.chain is None else self.chain.present(self.chain_index, paths)

    def read(self, nt: RNTuple, start: int, stop: int, library: str, how: Any) -> Any:
        """The results over ``start:stop`` in ``library``'s form, grouped as ``how``."""
        if not self.computes:
            return self.convert(self.table(nt, self.selection, start, stop), start, library, how)
        return self._finish(*self.evaluate(nt, start, stop), library, how)

    def evaluate(self, nt: RNTuple, start: int, stop: int) -> tuple[dict[str, Any], np.ndarray]:
        """The output columns over ``start:stop`` (Awkward or NumPy, the cut applied)
        and the entry numbers they hold."""
        return self.evaluate_tables(
            self.table(nt, self.selection, start, stop) if self.selection else None,
            self.table(nt, self.inputs, start, stop) if self.inputs else None,
            start,
            stop,
        )

    def evaluate_tables(
        self, selected_table: pa.Table | None, inputs_table: pa.Table | None, start: int, stop: int
    ) -> tuple[dict[str, Any], np.ndarray]:
        """:meth:`evaluate` of tables already read over ``start:stop``: the selection's
        (None when nothing is selected as it is) and the expressions' inputs' (None
        when they use no field)."""
        selected = to_awkward(selected_table) if selected_table is not None else None
        inputs = to_awkward(inputs_table) if inputs_table is not None else None
        evaluator = Evaluator({p: _descend(inputs, p) for p in self.inputs}, self.aliases)
        length = stop - start
        columns: dict[str, Any] = {}
        for name, compiled in self.outputs.items():
            if compiled is None:
                assert selected is not None
                columns[name] = selected[name]
                continue
            value = evaluator.evaluate(compiled)
            if not isinstance(value, ak.Array) and np.ndim(value) == 0:
                value = np.full(length, value)  # a constant: one value per entry
            columns[name] = value
        index = np.arange(start, stop)
        if self.cut is not None:
            mask = evaluator.evaluate(self.cut)
            if isinstance(mask, ak.Array):
                mask = mask != 0
                if mask.ndim == 1:
                    mask = ak.to_numpy(ak.fill_none(mask, False))
            else:
                mask = np.asarray(mask) != 0
            columns = {name: value[mask] for name, value in columns.items()}
            if isinstance(mask, np.ndarray) and mask.ndim == 1:
                index = index[mask]
        return columns, index

    def convert(self, table: pa.Table, start: int, library: str, how: Any) -> Any:
        """A table read as it is in ``library``'s form, grouped as ``how``."""
        if library == "arrow" and how is None:
            return table
        if library == "arrow":
            return _group({n: table.column(n) for n in table.column_names}, how)
        if library == "pl":
            pl = to_library(table, "pl")
            return pl if how is None else _group({n: pl[n] for n in pl.columns}, how)
        if library == "ak" and how is None:
            return to_awkward(table)
        records = to_awkward(table)
        columns = {name: records[name] for name in records.fields}
        return self._finish(columns, np.arange(start, start + table.num_rows), library, how)

    @staticmethod
    def _finish(columns: dict[str, Any], index: np.ndarray, library: str, how: Any) -> Any:
        length = len(index)
        if library == "ak":
            columns = {n: v if isinstance(v, ak.Array) else ak.Array(v) for n, v in columns.items()}
            if how is None:
                return _awkward_records(columns, length)
            return zip_jagged(columns) if how == "zip" else _group(columns, how)
        if library in ("arrow", "pl"):
            table = ak.to_arrow_table(
                _awkward_records(columns, length), extensionarray=False, list_to32=False, string_to32=False
            )
            converted = to_library(table, library)
            if how is None:
                return converted
            if library == "arrow":
                return _group({n: table.column(n) for n in table.column_names}, how)
            return _group({n: converted[n] for n in converted.columns}, how)
        arrays = {n: to_numpy_like_uproot(v) for n, v in columns.items()}
        if library == "np":
            return arrays if how is None else _group(arrays, how)
        pandas = require("pandas", "library='pd'")
        pandas_index = _pandas_index(pandas, index)
        arrays = {n: _pandas_column(pandas, v) for n, v in arrays.items()}
        if how is None:
            return pandas.DataFrame(arrays, index=pandas_index)
        return _group({n: pandas.Series(v, index=pandas_index, name=n) for n, v in arrays.items()}, how)


def _pandas_column(pandas: Any, array: np.ndarray) -> Any:
    """A NumPy column (uproot's form) as pandas holds it, of one dtype whatever the
    entries: an optional integer or bool as pandas' nullable ``Int64``, ``boolean``, ...
    (every value exact, None as ``pd.NA``: ``float64`` would round integers past 2**53);
    an n-D block (jagged entries that happen to have one shape) as one array per entry."""
    if array.ndim > 1:
        rows = np.empty(len(array), dtype=object)
        for i, row in enumerate(array):
            rows[i] = row
        return rows
    if isinstance(array, np.ma.MaskedArray) and array.dtype.names:
        # records with optional members: each a tuple, None where a member is
        rows = np.empty(len(array), dtype=object)
        masks = np.ma.getmaskarray(array).tolist()
        for i, (values, masked) in enumerate(zip(array.data.tolist(), masks, strict=True)):
            rows[i] = tuple(None if m else v for v, m in zip(values, masked, strict=True))
        return rows
    if isinstance(array, np.ma.MaskedArray) and array.dtype.kind in "iub":
        mask = np.ma.getmaskarray(array)
        data = np.asarray(array.data)
        if array.dtype.kind == "b":
            return pandas.arrays.BooleanArray(data, mask)
        return pandas.arrays.IntegerArray(data, mask)
    return array


def _pandas_index(pandas: Any, entries: np.ndarray) -> Any:
    """Entry numbers as a pandas index (a ``RangeIndex`` when contiguous, as uproot)."""
    if len(entries) == 0:
        return pandas.RangeIndex(0, 0)
    if entries[-1] - entries[0] == len(entries) - 1:
        return pandas.RangeIndex(int(entries[0]), int(entries[-1]) + 1)
    return pandas.Index(entries)


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
        return self._ntuple._field_paths()[self._path][0]

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
        start, stop = _entry_range(self._ntuple.num_entries, entry_start, entry_stop)
        for first, last in self._ntuple.step_ranges([self._path], start, stop, step_size):
            result = self.arrays(entry_start=first, entry_stop=last, library=library, how=how)
            yield (result, Report(self._ntuple, first, last)) if report else result

    def keys(
        self,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        recursive: bool = True,
        full_paths: bool = True,
    ) -> list[str]:
        """The paths of the subfields relative to this field (filters as
        :meth:`RNTuple.keys`, matched on the relative path)."""
        return list(
            self.typenames(
                filter_name=filter_name,
                filter_typename=filter_typename,
                recursive=recursive,
                full_paths=full_paths,
            )
        )

    def typenames(
        self,
        *,
        filter_name: NameFilter = None,
        filter_typename: NameFilter = None,
        recursive: bool = True,
        full_paths: bool = True,
    ) -> dict[str, str]:
        """The C++ types of the subfields, by relative path (filters as :meth:`keys`)."""
        recursive = check_flag("recursive", recursive)
        by_name = make_filter("filter_name", filter_name)
        by_type = make_filter("filter_typename", filter_typename)
        prefix = f"{self._path}."
        out = {}
        for path, (typename, _, _) in self._ntuple._field_paths().items():
            if not path.startswith(prefix):
                continue
            relative = path[len(prefix) :]
            name = relative.rsplit(".", 1)[-1]
            if not recursive and "." in relative:
                continue
            if by_name is not None and not (by_name(name) or by_name(relative) or by_name("." + relative)):
                continue
            if by_type is not None and not by_type(typename):
                continue
            out[RNTuple._shown(relative, full_paths)] = typename
        return out

    def __getitem__(self, where: str | int) -> Field:
        if isinstance(where, (int, np.integer)) and not isinstance(where, bool):
            return self.fields[where]
        if not isinstance(where, str):
            raise InvalidArgumentError(f"a subfield is named by a string or an integer, not {where!r}")
        return self._ntuple[f"{self._path}.{where.lstrip('./')}"]

    def _values(self, paths: list[str], entry_start: Any, entry_stop: Any) -> tuple[ak.Array, int]:
        start, stop = _entry_range(self._ntuple.num_entries, entry_start, entry_stop)
        records = to_awkward(self._ntuple._read_table(paths, start, stop))
        return _descend(records, self._path), start

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
            start, stop = _entry_range(self._ntuple.num_entries, entry_start, entry_stop)
            top = self._path.split(".")[0]
            layout = virtual_content(
                self._ntuple,
                [self._path],
                top,
                start,
                stop,
                access_log,
                select=lambda records: _descend(ak.Array({top: records}), self._path),
            )
            return ak.Array(layout)
        values, start = self._values([self._path], entry_start, entry_stop)
        index = np.arange(start, start + len(values))
        if library == "ak":
            return values
        if library == "np":
            return to_numpy_like_uproot(values)
        if library == "pd":
            frame = ReadPlan._finish({self.name: values}, index, "pd", None)
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
            relative = self.keys(filter_name=filter_name, filter_typename=filter_typename)
            paths = [f"{self._path}.{r}" for r in relative]
            paths = [p for p in paths if not any(p.startswith(f"{q}.") for q in paths)]
        if not paths:
            start, stop = _entry_range(self._ntuple.num_entries, entry_start, entry_stop)
            return ReadPlan._finish({}, np.arange(start, stop), library, how)
        values, start = self._values(paths, entry_start, entry_stop)
        return ReadPlan._finish({self.name: values}, np.arange(start, start + len(values)), library, how)

    def __repr__(self) -> str:
        return f"<Field {self._path!r} ({self.typename}) of RNTuple {self._ntuple.path!r}>"


class ReadOnlyFile:
    """A ROOT file opened for reading; ``f["Events"]`` or ``f["dir/Events"]`` gives an
    :class:`RNTuple`. Use it as a context manager. ``timeout``, ``connect_timeout``,
    ``retries``, ``speed_limit``, ``speed_time`` and ``cache`` apply to a remote file
    (see :func:`open`)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        retries: int | None = None,
        speed_limit: int | None = None,
        speed_time: float | None = None,
        cache: Any = None,
        bunch_bytes: int | None = None,
        read_ahead_bytes: int | None = None,
    ) -> None:
        self._path = os.fspath(path)
        network = check_network(
            timeout, connect_timeout, retries, speed_limit, speed_time, bunch_bytes, read_ahead_bytes
        )
        cached = check_cache(cache)
        try:
            self._handle: _core.RootFileHandle | None = _core.RootFileHandle(
                self._path, network or None, cached
            )
        except NotFoundError as err:
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


def open(
    path: str | os.PathLike | dict[str, str],
    *,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    retries: int | None = None,
    speed_limit: int | None = None,
    speed_time: float | None = None,
    cache: Any = None,
    bunch_bytes: int | None = None,
    read_ahead_bytes: int | None = None,
) -> ReadOnlyFile | RNTuple:
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
    read each with its own."""
    # Before anything is opened.
    check_network(timeout, connect_timeout, retries, speed_limit, speed_time, bunch_bytes, read_ahead_bytes)
    check_cache(cache)
    options = {
        "timeout": timeout,
        "connect_timeout": connect_timeout,
        "retries": retries,
        "speed_limit": speed_limit,
        "speed_time": speed_time,
        "cache": cache,
        "bunch_bytes": bunch_bytes,
        "read_ahead_bytes": read_ahead_bytes,
    }
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


def _expand_files(files: Any) -> list[tuple[str, str | None]]:
    """``(file, RNTuple path)`` pairs from a spec, a list of specs, or a dict
    ``{file: name}``; glob patterns in file names are expanded (sorted)."""
    import glob

    if isinstance(files, (str, os.PathLike)):
        items: Iterable[tuple[str, str | None]] = [split_object_path(os.fspath(files))]
    elif isinstance(files, dict):
        items = [(os.fspath(k), v) for k, v in files.items()]
    else:
        items = []
        for f in files:
            items = [*items, *_expand_files(f)]
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


def open_chain_member(item: tuple[str, str | None], options: dict[str, Any]) -> RNTuple:
    """The RNTuple of a chain's ``(file, RNTuple path)`` (the file's only one when the
    path is None), opened with :func:`open`'s ``options``."""
    path, name = item
    f = ReadOnlyFile(path, **options)
    return f[name] if name else RNTuple(f._file().open_rntuple(None))


#: Files a chain (:func:`iterate`, :func:`concatenate`, :func:`rntuple.dask`) opens
#: ahead of the one in use.
OPEN_AHEAD = 4


def open_rntuples(
    files: Any,
    *,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    retries: int | None = None,
    speed_limit: int | None = None,
    speed_time: float | None = None,
    cache: Any = None,
    first_read: Callable[[RNTuple], Any] | None = None,
    first_read_at: Callable[[RNTuple, int], Any] | None = None,
) -> Iterator[tuple[RNTuple, Any]]:
    """Opens each RNTuple a files spec names (see :func:`iterate`), with the options of
    :func:`open`, and yields it with ``first_read(nt)`` (``None`` without one). The next
    :data:`OPEN_AHEAD` files are opened, and the next one's ``first_read`` run, on
    threads of their own while the caller uses the current one (the core releases the
    GIL while it opens and reads): over many remote files the round trips of opening
    them, and the fetching of the next one's first pages, overlap the work on this one.
    A file is no longer referenced here once the caller moves on. ``first_read_at``:
    as ``first_read``, also given the file's index in the chain."""
    check_network(timeout, connect_timeout, retries, speed_limit, speed_time)
    check_cache(cache)
    items = _expand_files(files)
    options = {
        "timeout": timeout,
        "connect_timeout": connect_timeout,
        "retries": retries,
        "speed_limit": speed_limit,
        "speed_time": speed_time,
        "cache": cache,
    }

    def open_only(index: int) -> RNTuple:
        return open_chain_member(items[index], options)

    def open_and_read(index: int) -> tuple[RNTuple, Any]:
        nt = opening[index].result()
        if first_read is None and first_read_at is None:
            return nt, None
        try:
            return nt, first_read(nt) if first_read is not None else first_read_at(nt, index)  # type: ignore[misc]
        except NotFoundError as err:
            # A field one file of many lacks: say which file.
            if nt.file_path in str(err):
                raise
            raise type(err)(f"{nt.file_path}: {err}") from None

    if not items:
        return
    # Files opened ahead at once (their metadata: round trips, few bytes), and the first
    # read of the next one: a chain of remote files waits for neither.
    ahead = min(OPEN_AHEAD, len(items))
    with concurrent.futures.ThreadPoolExecutor(ahead + 1, thread_name_prefix="rntuple-open-ahead") as pool:
        opening = {index: pool.submit(open_only, index) for index in range(ahead)}
        reading = pool.submit(open_and_read, 0)
        for index in range(len(items)):
            opened = reading.result()
            if index + ahead < len(items):
                opening[index + ahead] = pool.submit(open_only, index + ahead)
            if index + 1 < len(items):
                reading = pool.submit(open_and_read, index + 1)
            del opening[index]
            yield opened
            del opened


def iterate(
    files: Any,
    expressions: str | Sequence[str] | None = None,
    cut: str | None = None,
    *,
    filter_name: NameFilter = None,
    filter_typename: NameFilter = None,
    aliases: dict[str, str] | None = None,
    step_size: StepSize = "100 MB",
    library: str = "ak",
    how: Any = None,
    decode_ahead: bool = True,
    report: bool = False,
    ak_add_doc: Any = False,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    retries: int | None = None,
    speed_limit: int | None = None,
    speed_time: float | None = None,
    cache: Any = None,
    types: dict[str, Any] | None = None,
    on_overflow: str = "raise",
    defaults: dict[str, Any] | None = None,
    allow_missing: bool = False,
) -> Iterator[Any]:
    """Yields cluster-aligned batches of :meth:`RNTuple.arrays` over many files, in
    order (a batch never spans two files; ``step_size`` as :meth:`RNTuple.iterate`).
    ``report=True`` yields ``(arrays, report)`` pairs whose
    :class:`rntuple.uproot_compat.Report` gives the batch's entries in its file
    (``tree_entry_start``/``stop``) and over all files (``global_entry_start``/``stop``);
    a pandas index counts entries over all files, as uproot's. ``files`` is a spec ``"file.root:Events"``
    (glob patterns allowed in the file name; the RNTuple path may be omitted when a file
    holds one), a URL, a list of specs, or a dict ``{file: rntuple_name}``.
    ``decode_ahead``: as :meth:`RNTuple.iterate` (the next batch of a file is decoded
    while the caller works on the current one). The next file is opened, and its first
    batch read, while the caller works on the current file's batches: a chain of
    remote files does not wait at each file boundary; a file is closed once its last
    batch is handed out. ``timeout``, ``connect_timeout``, ``retries``, ``speed_limit``,
    ``speed_time`` and ``cache``: for remote files, as :func:`open`.

    Every batch has one schema, fixed before the first is read from the headers of
    every file (:mod:`rntuple.unify`): a field whose type differs between files is read
    as one type (numbers as the narrowest type that holds every file's values, ``float``
    and ``double`` as ``double``, ``std::int32_t`` and ``std::int64_t`` as
    ``std::int64_t``; where none does, ``double`` for 64-bit integers with reals and
    ``std::int64_t`` for ``std::uint64_t`` with signed integers, with a
    :class:`~rntuple.PromotionWarning`, each value checked as it is read; collections of
    different kinds as vectors; records member by member); ``types`` (as
    :meth:`RNTuple.arrays`, with ``on_overflow`` and ``defaults``) names the type
    instead. A selected field that some files lack is an error naming them, or None in
    their entries with ``allow_missing=True``. Each file's values, types and masks are
    those it gives read alone with the same types."""
    library = check_library(library)
    how = check_how(how, library)
    step_size = check_step_size(step_size)
    report = check_flag("report", report)
    options = {
        "timeout": timeout,
        "connect_timeout": connect_timeout,
        "retries": retries,
        "speed_limit": speed_limit,
        "speed_time": speed_time,
        "cache": cache,
    }
    check_network(timeout, connect_timeout, retries, speed_limit, speed_time)
    check_cache(cache)
    allow_missing = check_flag("allow_missing", allow_missing)
    plans = _file_plans(
        files,
        expressions,
        cut,
        aliases,
        filter_name,
        filter_typename,
        types,
        on_overflow,
        defaults,
        allow_missing,
        options,
    )
    done = object()

    def first_batch(nt: RNTuple, index: int) -> tuple[Iterator[Any], Any]:
        batches = nt._iterate_plan(plans(nt, index), step_size, None, None, library, how, decode_ahead, 0)
        return batches, next(batches, done)

    global_offset = 0
    for nt, (batches, first) in open_rntuples(files, **options, first_read_at=first_batch):
        if first is not done:
            for result, start, stop in itertools.chain([first], batches):
                # Batches were read with file-local entry numbers (the next file is read
                # ahead, before the entries of this one are counted in).
                result = nt._add_doc(_shift_index(result, global_offset, library), library, how, ak_add_doc)
                yield (result, Report(nt, start, stop, global_offset)) if report else result
        global_offset += nt.num_entries


def _shift_index(result: Any, offset: int, library: str) -> Any:
    """A pandas result with its index moved on by ``offset`` entries (others as they are)."""
    if library != "pd" or offset == 0:
        return result
    if isinstance(result, (tuple, list)):
        return type(result)(_shift_index(r, offset, library) for r in result)
    if isinstance(result, dict):
        return {k: _shift_index(v, offset, library) for k, v in result.items()}
    result.index = result.index + offset
    return result


def concatenate(
    files: Any,
    expressions: str | Sequence[str] | None = None,
    cut: str | None = None,
    *,
    filter_name: NameFilter = None,
    filter_typename: NameFilter = None,
    aliases: dict[str, str] | None = None,
    library: str = "ak",
    how: Any = None,
    timeout: float | None = None,
    connect_timeout: float | None = None,
    retries: int | None = None,
    speed_limit: int | None = None,
    speed_time: float | None = None,
    cache: Any = None,
    types: dict[str, Any] | None = None,
    on_overflow: str = "raise",
    defaults: dict[str, Any] | None = None,
    allow_missing: bool = False,
) -> Any:
    """:meth:`RNTuple.arrays` of every file (see :func:`iterate`) in one result,
    entries in file order (a pandas index counts entries over all files). The next file
    is opened and read while the current one is converted. ``timeout``,
    ``connect_timeout``, ``retries``, ``speed_limit``, ``speed_time`` and ``cache``: for
    remote files, as :func:`open`.
    ``types``, ``on_overflow``, ``defaults`` and ``allow_missing``: one schema over
    every file, as :func:`iterate`."""
    library = check_library(library)
    how = check_how(how, library)
    options = {
        "timeout": timeout,
        "connect_timeout": connect_timeout,
        "retries": retries,
        "speed_limit": speed_limit,
        "speed_time": speed_time,
        "cache": cache,
    }
    check_network(timeout, connect_timeout, retries, speed_limit, speed_time)
    check_cache(cache)
    allow_missing = check_flag("allow_missing", allow_missing)
    plans = _file_plans(
        files,
        expressions,
        cut,
        aliases,
        filter_name,
        filter_typename,
        types,
        on_overflow,
        defaults,
        allow_missing,
        options,
    )

    def read(nt: RNTuple, index: int) -> tuple[ReadPlan, Any]:
        plan = plans(nt, index)
        if plan.computes:
            return plan, plan.evaluate(nt, 0, nt.num_entries)
        return plan, plan.table(nt, plan.selection, 0, nt.num_entries)

    tables = []
    sources = []
    parts = []
    offset = 0
    for nt, (plan, read_out) in open_rntuples(files, **options, first_read_at=read):
        if plan.computes:
            columns, entries = read_out
            parts.append((_awkward_records(columns, len(entries)), entries + offset))
        else:
            tables.append(read_out)
            sources.append(nt.file_path)
        offset += nt.num_entries
    if not tables and not parts:
        raise InvalidArgumentError("no files to concatenate")
    if parts:
        records = ak.concatenate([r for r, _ in parts]) if len(parts) > 1 else parts[0][0]
        columns = {name: records[name] for name in records.fields}
        return ReadPlan._finish(columns, np.concatenate([i for _, i in parts]), library, how)
    try:
        table = pa.concat_tables(tables)
        if not table.num_columns:
            # No field selected: the entries still count (Arrow keeps no rows of no column).
            table = pa.table({"entries": pa.nulls(sum(t.num_rows for t in tables))}).drop_columns(["entries"])
    except pa.ArrowInvalid as err:
        # Name the first file whose selection differs from the first file's.
        other = next((i for i, t in enumerate(tables) if not t.schema.equals(tables[0].schema)), None)
        which = f" ({sources[0]} and {sources[other]})" if other is not None else ""
        raise InvalidArgumentError(f"the files' schemas differ{which}: {err}") from None
    return ReadPlan().convert(table, 0, library, how)


def _file_plans(
    files: Any,
    expressions: Any,
    cut: Any,
    aliases: Any,
    filter_name: Any,
    filter_typename: Any,
    types: Any,
    on_overflow: str,
    defaults: Any,
    allow_missing: bool,
    options: dict[str, Any],
) -> Callable[[RNTuple, int], ReadPlan]:
    """The read plan of each file of ``files`` (by its index), as one schema
    (:func:`rntuple.unify.plan_chain`) when there are several; a single file's is
    :meth:`RNTuple.arrays`' own."""
    from .unify import plan_chain

    if on_overflow not in ("raise", "mask"):
        raise InvalidArgumentError(f"on_overflow={on_overflow!r}: expected 'raise' or 'mask'")
    planned = plan_chain(
        files,
        expressions,
        cut=cut,
        aliases=aliases,
        filter_name=filter_name,
        filter_typename=filter_typename,
        types=types,
        on_overflow=on_overflow,
        defaults=defaults,
        allow_missing=allow_missing,
        options=options,
    )

    def plan(nt: RNTuple, index: int) -> ReadPlan:
        if planned is not None:
            return planned[1][index]
        alone = nt._plan(expressions, cut, filter_name, filter_typename, aliases)
        alone.types = nt._read_types(types, on_overflow, defaults)
        return alone

    return plan
