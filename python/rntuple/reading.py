"""Reading: open a ROOT file, pick an RNTuple, read fields into Awkward, NumPy, Arrow,
pandas or Polars, at once or in cluster-aligned batches."""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

import pyarrow as pa

from . import _core
from .convert import to_library
from .errors import FormatError, InvalidArgumentError, NotFoundError

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


def _entry_range(num_entries: int, start: int | None, stop: int | None) -> tuple[int, int]:
    """Python-style bounds (negative counts from the end), clipped to the RNTuple."""
    start = 0 if start is None else int(start)
    stop = num_entries if stop is None else int(stop)
    if start < 0:
        start += num_entries
    if stop < 0:
        stop += num_entries
    start = min(max(start, 0), num_entries)
    stop = min(max(stop, start), num_entries)
    return start, stop


def plan_batches(
    clusters: Sequence[tuple[int, int]],
    cluster_bytes: Sequence[int],
    start: int,
    stop: int,
    step_size: StepSize,
) -> list[tuple[int, int]]:
    """Entry ranges covering ``start:stop`` whose boundaries are cluster boundaries:
    whole clusters are grouped until the next one would pass ``step_size`` (entries for
    an integer, uncompressed bytes of the selected fields for a string), and a cluster
    larger than the step is cut into equal parts. Always at least one cluster per batch."""
    by_entries = isinstance(step_size, int) and not isinstance(step_size, bool)
    target = step_size if by_entries else parse_size(step_size)
    if target <= 0:
        raise InvalidArgumentError(f"step_size must be positive, not {step_size!r}")
    ranges: list[tuple[int, int]] = []
    group_start: int | None = None
    group_end = 0
    group_size = 0.0
    for (first, n), size in zip(clusters, cluster_bytes, strict=False):
        lo, hi = max(first, start), min(first + n, stop)
        if lo >= hi:
            continue
        weight = (hi - lo) if by_entries else size * (hi - lo) / n
        if group_start is not None and group_size + weight > target:
            ranges.append((group_start, group_end))
            group_start = None
        if weight > target:
            parts = -(-int(weight) // int(target))
            bounds = [lo + (hi - lo) * k // parts for k in range(parts + 1)]
            ranges.extend((a, b) for a, b in itertools.pairwise(bounds) if b > a)
            continue
        if group_start is None:
            group_start, group_size = lo, 0.0
        group_end = hi
        group_size += weight
    if group_start is not None:
        ranges.append((group_start, group_end))
    return ranges


def _struct_of(children: dict[str, tuple[pa.Array, pa.Field]], length: int) -> pa.StructArray:
    del length  # every record here has at least one member, which gives the length
    return pa.StructArray.from_arrays(
        [a for a, _ in children.values()], fields=[f for _, f in children.values()]
    )


class RNTuple:
    """One RNTuple of an open file: its schema, clusters, and reading of its entries.

    ``len(nt)`` is the number of entries. Reading releases the GIL while pages are read,
    decompressed and decoded (on all cores)."""

    def __init__(self, reader: _core.Reader) -> None:
        self._reader = reader
        # path -> (C++ type, read directly, qualified name the core takes)
        self._paths: dict[str, tuple[str, bool, str]] | None = None

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

    def keys(self) -> list[str]:
        """Every selectable field path: top-level fields and their record members
        (``"Jet.pt"``), as accepted by :meth:`arrays`."""
        return list(self._field_paths())

    def typenames(self) -> dict[str, str]:
        """The C++ type of every selectable field path."""
        return {p: t for p, (t, _, _) in self._field_paths().items()}

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

    def _read_plan(self, paths: list[str]) -> tuple[list[str], list[tuple[str, Any]]]:
        """What to ask the core for, and how to build each output column from it: per
        top-level field, either one column the core reads (the field, or its projection
        onto members inside collections), or a record of member paths read directly."""
        info = self._field_paths()
        groups: dict[str, list[str]] = {}
        for p in paths:
            groups.setdefault(p.split(".", 1)[0], []).append(p)
        to_read: list[str] = []
        steps: list[tuple[str, Any]] = []
        for top, members in groups.items():
            if top in members:
                to_read.append(top)
                steps.append(("whole", top))
                continue
            tree: dict = {}
            for m in members:
                node = tree
                parts = m.split(".")[1:]
                for part in parts[:-1]:
                    if part in node and node[part] is None:
                        break  # the whole member is selected already
                    node = node.setdefault(part, {})
                else:
                    node[parts[-1]] = None
            if all(info[m][1] for m in members):
                to_read.extend(members)
                steps.append(("record", (top, tree)))
            else:
                to_read.extend(info[m][2] for m in members)
                # Paths into collections: the core reads one column named after the
                # top-level field, with only the selected members (and their columns).
                steps.append(("whole", top))
        return to_read, steps

    def _build(self, batch: pa.RecordBatch, steps: list[tuple[str, Any]]) -> pa.Table:
        columns: list[pa.Array] = []
        fields: list[pa.Field] = []

        def record(prefix: str, tree: dict, name: str) -> tuple[pa.Array, pa.Field]:
            children = {}
            for member, sub in tree.items():
                path = f"{prefix}.{member}"
                if sub is None:
                    index = batch.schema.get_field_index(path)
                    f = batch.schema.field(index)
                    children[member] = (batch.column(index), f.with_name(member))
                else:
                    children[member] = record(path, sub, member)
            arr = _struct_of(children, batch.num_rows)
            return arr, pa.field(name, arr.type, nullable=False)

        for kind, arg in steps:
            if kind == "whole":
                index = batch.schema.get_field_index(arg)
                columns.append(batch.column(index))
                fields.append(batch.schema.field(index))
            else:
                top, tree = arg
                arr, f = record(top, tree, top)
                columns.append(arr)
                fields.append(f)
        return pa.Table.from_arrays(columns, schema=pa.schema(fields))

    # -- reading ---------------------------------------------------------------------

    def arrays(
        self,
        fields: FieldSelection = None,
        *,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
    ) -> Any:
        """Reads the selected fields over ``entry_start:entry_stop`` (Python slice
        semantics, clipped) in the form ``library`` names:

        - ``"ak"``: an ``awkward.Array`` of records (the default);
        - ``"np"``: a dict of NumPy arrays (records flattened to ``a.b`` keys, jagged
          fields as :class:`rntuple.JaggedArray` offsets and values);
        - ``"arrow"``: a ``pyarrow.Table``; ``"pd"``: a pandas DataFrame;
          ``"pl"``: a Polars DataFrame.

        ``fields`` takes top-level names, nested paths (``"Jet.pt"``) and glob patterns
        (``"Muon_*"``); ``None`` reads every field."""
        paths = self.resolve_fields(fields)
        start, stop = _entry_range(self.num_entries, entry_start, entry_stop)
        to_read, steps = self._read_plan(paths)
        batch = self._reader.read(to_read, start, stop)
        return to_library(self._build(batch, steps), library)

    def iterate(
        self,
        fields: FieldSelection = None,
        *,
        step_size: StepSize = "100 MB",
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
    ) -> Iterator[Any]:
        """Yields the selected fields in batches aligned to cluster boundaries:
        ``step_size`` is a number of entries or a memory size (``"100 MB"``) of the
        selected fields, uncompressed. See :meth:`arrays` for the other arguments."""
        paths = self.resolve_fields(fields)
        start, stop = _entry_range(self.num_entries, entry_start, entry_stop)
        to_read, steps = self._read_plan(paths)
        ranges = self.batch_ranges(to_read, start, stop, step_size)
        # One stream over all the batches: from a remote file, the next batches' pages
        # are fetched while the current one is decoded and used.
        for batch in self._reader.stream(to_read, ranges):
            yield to_library(self._build(batch, steps), library)

    def batch_ranges(
        self, fields: FieldSelection, start: int, stop: int, step_size: StepSize
    ) -> list[tuple[int, int]]:
        """The cluster-aligned entry ranges :meth:`iterate` reads (see
        :func:`plan_batches`)."""
        to_read, _ = self._read_plan(self.resolve_fields(fields))
        sizes = self._reader.cluster_bytes(to_read)
        return plan_batches(self._reader.clusters(), sizes, start, stop, step_size)

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


class ReadOnlyFile:
    """A ROOT file opened for reading; ``f["Events"]`` or ``f["dir/Events"]`` gives an
    :class:`RNTuple`. Use it as a context manager."""

    def __init__(self, path: str | os.PathLike) -> None:
        self._path = os.fspath(path)
        try:
            self._handle: _core.RootFileHandle | None = _core.RootFileHandle(self._path)
        except NotFoundError as err:
            # Opening a file looks up no RNTuple: the core's "not found" here means the
            # bytes are not a ROOT file, a format error (and the message names the file).
            message = str(err) if self._path in str(err) else f"{self._path}: {err}"
            raise FormatError(message) from None
        self._keys: list[str] | None = None

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

    def __getitem__(self, name: str) -> RNTuple:
        return RNTuple(self._file().open_rntuple(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip("/") in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def close(self) -> None:
        """Closes the file (RNTuples already opened keep their own handle)."""
        self._handle = None

    def __enter__(self) -> ReadOnlyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ReadOnlyFile {self._path!r}>"


def split_object_path(spec: str) -> tuple[str, str | None]:
    """Splits ``"file.root:dir/Events"`` into the file and the RNTuple path; a spec with
    no ``:`` after the file name has no RNTuple path."""
    match = re.match(r"^(.*?\.root):(.*)$", spec)
    if match and "://" not in match.group(2):
        return match.group(1), match.group(2) or None
    return spec, None


def open(path: str | os.PathLike) -> ReadOnlyFile | RNTuple:
    """Opens a ROOT file: ``rntuple.open("f.root")`` gives a :class:`ReadOnlyFile`
    (a context manager), ``rntuple.open("f.root:Events")`` the RNTuple directly."""
    spec = os.fspath(path)
    file_path, object_path = split_object_path(spec)
    f = ReadOnlyFile(file_path)
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
                raise FileNotFoundError(f"no file matches {path!r}")
            out.extend((m, name) for m in matched)
        else:
            out.append((path, name))
    return out


def open_rntuples(files: Any) -> Iterator[RNTuple]:
    """Opens each RNTuple a files spec names (see :func:`iterate`)."""
    for path, name in _expand_files(files):
        f = ReadOnlyFile(path)
        yield f[name] if name else RNTuple(f._file().open_rntuple(None))


def iterate(
    files: Any,
    fields: FieldSelection = None,
    *,
    step_size: StepSize = "100 MB",
    library: str = "ak",
) -> Iterator[Any]:
    """Yields cluster-aligned batches of the selected fields over many files, in order.
    ``files`` is a spec ``"file.root:Events"`` (glob patterns allowed in the file name;
    the RNTuple path may be omitted when a file holds one), a list of specs, or a dict
    ``{file: rntuple_name}``."""
    for nt in open_rntuples(files):
        yield from nt.iterate(fields, step_size=step_size, library=library)


def concatenate(files: Any, fields: FieldSelection = None, *, library: str = "ak") -> Any:
    """Reads the selected fields of every file (see :func:`iterate`) into one array or
    table, entries in file order."""
    tables = [nt.arrays(fields, library="arrow") for nt in open_rntuples(files)]
    if not tables:
        raise InvalidArgumentError("no files to concatenate")
    try:
        table = pa.concat_tables(tables)
    except pa.ArrowInvalid as err:
        raise InvalidArgumentError(f"the files' schemas differ: {err}") from None
    return to_library(table, library)
