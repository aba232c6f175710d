"""Reading: open a ROOT file, pick an RNTuple, read fields into Awkward, NumPy, Arrow,
pandas or Polars, at once or in cluster-aligned batches."""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO

import pyarrow as pa

from . import _core
from .convert import to_library
from .errors import FormatError, InvalidArgumentError, NotFoundError
from .inspection import BY, Inspection

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
        names = self._qualified(self.resolve_fields(fields))
        start, stop = _entry_range(self.num_entries, entry_start, entry_stop)
        batch = self._reader.read(names, start, stop)
        return to_library(pa.Table.from_batches([batch]), library)

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
        ranges = self.batch_ranges(paths, start, stop, step_size)
        # One stream over all the batches: from a remote file, the next batches' pages
        # are fetched while the current one is decoded and used.
        for batch in self._reader.stream(self._qualified(paths), ranges):
            yield to_library(pa.Table.from_batches([batch]), library)

    def batch_ranges(
        self, fields: FieldSelection, start: int, stop: int, step_size: StepSize
    ) -> list[tuple[int, int]]:
        """The entry ranges :meth:`iterate` reads, cut at cluster boundaries: whole
        clusters are grouped until the next one would pass ``step_size`` (entries for an
        integer, uncompressed bytes of the selected fields for a string), and a cluster
        larger than the step is cut into equal parts; at least one entry per batch."""
        names = self._qualified(self.resolve_fields(fields))
        if isinstance(step_size, int) and not isinstance(step_size, bool):
            if step_size <= 0:
                raise InvalidArgumentError(f"step_size must be positive, not {step_size!r}")
            return self._reader.batch_ranges(names, start, stop, step_entries=step_size)
        return self._reader.batch_ranges(names, start, stop, step_bytes=parse_size(step_size))

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
