"""One schema over many files: :func:`rntuple.iterate`, :func:`rntuple.concatenate`,
:func:`rntuple.dask` and the sides of :func:`rntuple.join` read every file's fields as one
type, fixed before anything is read from the headers of every file.

The one place where a chain decides its types and nullability is :func:`plan_chain`:

- each file's selection is what :meth:`RNTuple.arrays` selects in that file (the same
  ``_plan``: names, nested paths, globs, filters, expressions, cut, aliases); the chain
  reads the union, a field some files lack being None there (``allow_missing=True``);
- each top-level field read is given one type: the caller's ``types=``, else the core's
  ``unify_field`` (numbers promoted to a type that holds every file's, or that holds the
  most of them, with a :class:`~rntuple.PromotionWarning`; collections of different
  kinds as vectors; records member by member);
- each file's types are parsed as one file's are (``RNTuple._read_types``, with
  ``on_overflow`` and ``defaults``), and the chain's Arrow schema is every file's own
  schema of its read (the core's, from its metadata) merged: equal types, nullable where
  any file's read may give None (a masked conversion, a missing field).

Every batch of every file is then given that schema (:meth:`ChainReading.read_table`):
the same values, types and masks as reading each file alone with the same types and
concatenating."""

from __future__ import annotations

import concurrent.futures
import copy
import dataclasses
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from . import _core
from .errors import IncompatibleTypeError, InvalidArgumentError, NotFoundError, PromotionWarning
from .file import expand_files, open_chain_member
from .ntuple import RNTuple
from .options import RemoteOptions, Selection, TypeOptions
from .plan import ReadPlan
from .selection import check_expressions

#: Files opened at once to read their headers.
OPEN_AT_ONCE = 8


def _top(path: str) -> str:
    return path.split(".")[0]


def absolute(path: str) -> str:
    """A local path made absolute (Dask workers may run elsewhere); URLs as they are."""
    return path if "://" in path else os.path.abspath(path)


@dataclasses.dataclass
class ChainReading:
    """How each file of a chain is read as the chain's one schema. Picklable (it travels
    in Dask graphs): the files' metadata (``members``) stays where it was planned."""

    #: per file, ``(file path, RNTuple path)`` as opened
    keys: list[tuple[str, str]]
    #: per file, the ``types=`` it is read with (field path -> type), or None
    types: list[dict[str, Any] | None]
    #: per file, the top-level fields it lacks (read as None)
    missing: list[list[str]]
    on_overflow: str = "raise"
    defaults: dict[str, Any] | None = None
    #: the merged schema of each set of field paths planned (the selection, the inputs of
    #: expressions), by the tuple of paths
    schemas: dict[tuple[str, ...], pa.Schema] = dataclasses.field(default_factory=dict)
    #: per file, its metadata alone (detached RNTuples), to plan other reads; not pickled
    members: list[RNTuple] | None = None
    #: each file's index by its absolute path and RNTuple path (:meth:`index_of`)
    _index: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["members"] = None
        return state

    def index_of(self, path: str, name: str) -> int:
        """The file of a Dask partition (its path, absolute, and RNTuple path)."""
        if not self._index:
            self._index.update({(absolute(p), n): i for i, (p, n) in reversed(list(enumerate(self.keys)))})
        index = self._index.get((absolute(path), name))
        if index is None:
            raise InvalidArgumentError(f"{path}:{name} is not a file of this chain")
        return index

    def read_types(self, nt: RNTuple, index: int) -> Any:
        """File ``index``'s types, parsed by the code that parses one file's (with the
        defaults of the members its types add)."""
        types = self.types[index]
        tops = {_top(k) for k in types or {}}
        defaults = {k: v for k, v in (self.defaults or {}).items() if _top(k) in tops}
        return nt._read_types(types, self.on_overflow, defaults or None)

    def present(self, index: int, paths: list[str]) -> list[str]:
        """The paths of ``paths`` file ``index`` has (its top-level field is not missing)."""
        lacking = self.missing[index]
        return [p for p in paths if _top(p) not in lacking]

    def schema(self, paths: list[str]) -> pa.Schema:
        """The chain's schema of a read of ``paths``: planned, or the columns of a planned
        read that selects the same paths under each of their top-level fields (a Dask
        projection), or merged now from every file's metadata."""
        key = tuple(paths)
        if key in self.schemas:
            return self.schemas[key]
        tops = list(dict.fromkeys(_top(p) for p in paths))
        for planned, schema in self.schemas.items():
            under = [p for p in planned if _top(p) in tops]
            if sorted(under) == sorted(paths) and all(t in schema.names for t in tops):
                return pa.schema([schema.field(t) for t in tops])
        if self.members is None:
            raise InvalidArgumentError(f"the chain's schema of {list(paths)} was not planned")
        self.schemas[key] = _merged_schema(self, self.members, paths)
        return self.schemas[key]

    def read_table(
        self, nt: RNTuple, index: int, paths: list[str], start: int, stop: int, types: Any
    ) -> pa.Table:
        """``paths`` of file ``index`` (opened as ``nt``, ``types`` its
        :meth:`read_types`) over ``start:stop``, as the chain's schema."""
        schema = self.schema(paths)
        present = self.present(index, paths)
        if not present:
            return conform(pa.table({}), schema, stop - start)
        return conform(nt._read_table(present, start, stop, types), schema)

    def stream(
        self,
        nt: RNTuple,
        index: int,
        paths: list[str],
        ranges: list[tuple[int, int]],
        decode_ahead: bool,
        types: Any,
    ) -> Any:
        """The tables of ``paths`` of file ``index`` over each of ``ranges``, in turn, as the
        chain's schema (``close()`` stops the stream)."""
        present = self.present(index, paths)
        inner = nt._stream(present, ranges, decode_ahead, types) if present else None
        return _ConformedStream(self.schema(paths), ranges, inner)


class _ConformedStream:
    """:meth:`ChainReading.stream`: one stream of the file's batches, each conformed."""

    def __init__(self, schema: pa.Schema, ranges: list[tuple[int, int]], inner: Any) -> None:
        """``inner``: the file's stream of the fields it has over ``ranges`` (None when
        it has none of them)."""
        self.schema = schema
        self.ranges = iter(ranges)
        self.inner = inner

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return self

    def __next__(self) -> pa.RecordBatch:
        first, last = next(self.ranges)
        if self.inner is None:
            table = conform(pa.table({}), self.schema, last - first)
        else:
            table = conform(pa.Table.from_batches([next(self.inner)]), self.schema)
        return table.combine_chunks().to_batches()[0] if table.num_rows else _empty_batch(self.schema)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def plan_chain(
    files: Any,
    selection: Selection,
    typing: TypeOptions,
    remote: RemoteOptions,
    *,
    min_files: int = 2,
) -> tuple[ChainReading, list[ReadPlan]] | None:
    """The reading of a chain of at least ``min_files`` files as one schema (None for
    fewer: each file is then read as it is), with each file's read plan: what
    :meth:`RNTuple.arrays` selects and computes in each file (on its metadata), merged,
    with the file's types and the chain.

    Every file's header is read (several at a time). A selected field that some files
    lack is an error naming them unless ``allow_missing``; an expression, cut or alias
    needs its fields in every file. A field whose types cannot be read as one is an
    :class:`~rntuple.IncompatibleTypeError` naming two files and their types; one read as
    a type that does not hold every value of some files gives a
    :class:`~rntuple.PromotionWarning` naming them. ``types`` (the caller's) decides the
    type of the fields it names, ``on_overflow`` and ``defaults`` apply to every file."""
    items = expand_files(files)
    if len(items) < min_files or not items:
        return None
    types, on_overflow, defaults = typing.types, typing.on_overflow, typing.defaults
    if defaults and not types:
        raise InvalidArgumentError("defaults= names members added by types=, and no types= is given")
    for k in defaults or {}:
        if not isinstance(k, str) or _top(k) not in {_top(t) for t in types or {}}:
            raise InvalidArgumentError(
                f"a default is given for {k!r}, which is not a member added by the types asked for"
            )

    def header(index: int) -> tuple[RNTuple, tuple[str, str]]:
        nt = open_chain_member(items[index], remote)
        return RNTuple(nt._reader.detached()), (nt.file_path, nt.path)

    with concurrent.futures.ThreadPoolExecutor(min(OPEN_AT_ONCE, len(items))) as pool:
        opened = list(pool.map(header, range(len(items))))
    members = [m for m, _ in opened]
    keys = [k for _, k in opened]
    template = _merged_plan(_plans(members, selection))
    selection, inputs = template.selection, template.inputs
    order = list(dict.fromkeys(_top(p) for p in [*selection, *inputs]))
    missing = [[t for t in order if m._lookup(t) is None] for m in members]
    for path in selection:
        lacking = [
            keys[i][0]
            for i, m in enumerate(members)
            if _top(path) not in missing[i] and m._lookup(path) is None
        ]
        if lacking:
            raise NotFoundError(
                f"field {path!r} is missing from {_shown(lacking)}, whose {_top(path)!r} lacks it; "
                f"select {_top(path)!r} to read it as None there"
            )
    if not typing.allow_missing:
        for t in order:
            lacking = [keys[i][0] for i in range(len(items)) if t in missing[i]]
            if lacking:
                raise NotFoundError(
                    f"field {t!r} is missing from {len(lacking)} of {len(items)} files ({_shown(lacking)}); "
                    "pass allow_missing=True to read it as None there"
                )
    unified = _unified_types(members, order, missing, types)
    for k in types or {}:
        if not isinstance(k, str) or all(m._lookup(_top(k)) is None for m in members):
            raise NotFoundError(f"types names field {k!r}, which none of the {len(items)} files has")
    per_file: list[dict[str, Any] | None] = []
    for i, m in enumerate(members):
        mine = {t: unified[t] for t in order if t not in missing[i] and unified.get(t) is not None}
        # The caller's other types (member paths, ``"evo.a"``; fields not read) apply as
        # they are, in the files that have their field.
        mine.update(
            {k: v for k, v in (types or {}).items() if k not in mine and m._lookup(_top(k)) is not None}
        )
        per_file.append(mine or None)
    chain = ChainReading(keys, per_file, missing, on_overflow, defaults, members=members)
    for paths in (selection, inputs):
        if paths:
            chain.schema(paths)
    plans = []
    for index, member in enumerate(members):
        plan = copy.copy(template)
        plan.types = chain.read_types(member, index)
        plan.chain, plan.chain_index = chain, index
        plans.append(plan)
    return chain, plans


def _shown(files: list[str]) -> str:
    return ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")


def _plans(members: list[RNTuple], selection: Selection) -> list[ReadPlan]:
    """The plan :meth:`RNTuple.arrays` makes in each file, on its metadata, of the
    expressions (the names of fields it lacks left out)."""
    exprs = check_expressions(selection.expressions)
    names = set() if exprs is None else {e for e in exprs if any(m._lookup(e) is not None for m in members)}
    plans = []
    for m in members:
        mine = None if exprs is None else [e for e in exprs if e not in names or m._lookup(e) is not None]
        try:
            plans.append(m._plan(dataclasses.replace(selection, expressions=mine)))
        except NotFoundError as err:
            raise NotFoundError(f"{m.file_path}: {err}") from None
    return plans


def _merged_plan(plans: list[ReadPlan]) -> ReadPlan:
    """One plan of what the files' plans select and compute, each list merged in the
    order of every file's (a field an earlier file lacks comes where later files have it)."""
    merged = ReadPlan()
    merged.selection = _merged_order([p.selection for p in plans])
    merged.inputs = _merged_order([p.inputs for p in plans])
    compiled: dict[str, Any] = {}
    for p in plans:
        for name, c in p.outputs.items():
            compiled.setdefault(name, c)
    merged.outputs = {name: compiled[name] for name in _merged_order([list(p.outputs) for p in plans])}
    merged.cut, merged.aliases = plans[0].cut, plans[0].aliases
    return merged


def _merged_order(sequences: list[list[str]]) -> list[str]:
    """The items of ``sequences``, each once, every sequence's order kept where they
    agree: an item new to the result goes right after the item before it in its own
    sequence."""
    out: list[str] = []
    for sequence in sequences:
        previous = -1
        for item in sequence:
            if item in out:
                previous = out.index(item)
            else:
                previous += 1
                out.insert(previous, item)
    return out


def _unified_types(
    members: list[RNTuple],
    order: list[str],
    missing: list[list[str]],
    types: dict[str, Any] | None,
) -> dict[str, Any]:
    """The one type of each top-level field of ``order`` (None: as on disk, or the
    caller's member paths decide), warning once per field that may not read exactly."""
    unified: dict[str, Any] = {}
    own: dict[int, dict[str, str]] = {}  # each file's type names, when first asked
    for t in order:
        if types and t in types:
            unified[t] = types[t]
            continue
        if types and any(_top(k) == t for k in types):
            unified[t] = None
            continue
        having = [i for i in range(len(members)) if t not in missing[i]]
        qualified = members[having[0]]._qualified([members[having[0]]._lookup(t) or t])[0]
        found = _core.unify_field([members[i]._reader for i in having], qualified)
        unified[t] = found.read_as
        if found.inexact:
            _warn_inexact(t, found.inexact, len(having))
        if isinstance(unified[t], str):
            for i in having:
                own.setdefault(i, members[i].typenames())
            if all(own[i].get(t) == unified[t] for i in having):
                unified[t] = None  # every file's own type: each read as it is
    return unified


def _warn_inexact(field: str, inexact: list[dict[str, str]], files: int) -> None:
    """One :class:`PromotionWarning` for ``field``: the type chosen, the files whose
    values it may not hold and their types, and how to choose another."""
    by_type: dict[tuple[str, str, str], list[str]] = {}
    for note in inexact:
        by_type.setdefault((note["field"], note["from"], note["to"]), []).append(note["file"])
    parts = []
    for (part, frm, to), where in by_type.items():
        inside = "" if part == field else f" in its part {part!r}"
        parts.append(f"{frm} in {_shown(where)} (read as {to}{inside})")
    warnings.warn(
        f"field {field!r} of {files} files is read as one type, which does not hold every value of "
        f"{'; '.join(parts)}: each value is checked as it is read (one that does not read back "
        "exactly raises ValueOutOfRangeError, or is None with on_overflow='mask'); choose the "
        f"type with types={{{field!r}: ...}}",
        PromotionWarning,
        stacklevel=_outside_the_package(),
    )


def _outside_the_package() -> int:
    """The ``stacklevel`` of the first caller outside this package, for a warning given
    by the caller of this function: it names the user's line, whichever path read."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(2), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _merged_schema(chain: ChainReading, members: list[RNTuple], paths: list[str]) -> pa.Schema:
    """The chain's schema of a read of ``paths``: every file's own schema of its read
    (the core's), merged by :func:`_merged_field`; a column some file lacks is nullable."""
    fields: dict[str, tuple[pa.Field, str]] = {}
    tops = list(dict.fromkeys(_top(p) for p in paths))
    for index, member in enumerate(members):
        present = chain.present(index, paths)
        if not present:
            continue
        handle = chain.read_types(member, index)
        schema = member._reader.schema(member._qualified(present), handle)
        for field in schema:
            if field.name in fields:
                earlier, where = fields[field.name]
                fields[field.name] = (_merged_field(earlier, field, where, member.file_path), where)
            else:
                fields[field.name] = (field, member.file_path)
    out = []
    for t in tops:
        field = fields[t][0]
        lacking = any(t in m for m in chain.missing)
        out.append(field.with_nullable(True) if lacking else field)
    return pa.schema(out)


def _merged_field(a: pa.Field, b: pa.Field, file_a: str, file_b: str) -> pa.Field:
    """``a`` (of ``file_a``), nullable wherever ``a`` or ``b`` is: the files' reads must
    have one type but for nullability (one file's conversion may give None where
    another's cannot)."""
    t = _merged_type(a.type, b.type)
    if t is None:
        raise IncompatibleTypeError(
            f"field {a.name!r} reads as {a.type} from {file_a} and as {b.type} from {file_b}: "
            "the files' types could not be made one; choose one with types="
        )
    return pa.field(a.name, t, a.nullable or b.nullable, a.metadata)


def _merged_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type of ``a`` with each child nullable where ``a``'s or ``b``'s is, or None
    when they differ otherwise."""
    if a.num_fields != b.num_fields or a.num_fields == 0:
        return a if a.num_fields == 0 and _same_but_children(a, b) else None
    if not _same_but_children(a, b):
        return None
    children = []
    for i in range(a.num_fields):
        x, y = a.field(i), b.field(i)
        if x.name != y.name:
            return None
        t = _merged_type(x.type, y.type)
        if t is None:
            return None
        children.append(pa.field(x.name, t, x.nullable or y.nullable, x.metadata))
    return _with_children(a, children)


def _same_but_children(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether ``a`` and ``b`` are one type once their children are made alike."""
    if a.num_fields == 0:
        return a == b
    if a.id != b.id:
        return False
    if isinstance(a, pa.FixedSizeListType):
        return a.list_size == b.list_size
    if isinstance(a, pa.UnionType):
        return a.mode == b.mode and list(a.type_codes) == list(b.type_codes)
    if isinstance(a, pa.MapType):
        return a.keys_sorted == b.keys_sorted
    return True


def _with_children(t: pa.DataType, children: list[pa.Field]) -> pa.DataType:
    """A type of ``t``'s kind with ``children``."""
    if isinstance(t, pa.StructType):
        return pa.struct(children)
    if isinstance(t, pa.LargeListType):
        return pa.large_list(children[0])
    if isinstance(t, pa.FixedSizeListType):
        return pa.list_(children[0], t.list_size)
    if isinstance(t, pa.ListType):
        return pa.list_(children[0])
    if isinstance(t, pa.MapType):
        entries = children[0].type
        return pa.map_(entries.field(0), entries.field(1), keys_sorted=t.keys_sorted)
    if isinstance(t, pa.UnionType):
        return pa.union(children, t.mode, list(t.type_codes))
    raise InvalidArgumentError(f"a chain's schema cannot merge Arrow type {t}")


def conform(table: pa.Table, schema: pa.Schema, num_rows: int | None = None) -> pa.Table:
    """``table``'s columns in ``schema``'s order and types (nullable where the schema
    says, children too): a column it lacks is all null (``num_rows`` of them when
    ``table`` has no column)."""
    n = table.num_rows if num_rows is None else num_rows
    if table.schema.equals(schema, check_metadata=True) and table.num_rows == n:
        return table
    if not schema:
        # No column, but the entries still count.
        return pa.table({"entries": pa.nulls(n)}).drop_columns(["entries"])
    columns = []
    for field in schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            columns.append(column if column.type == field.type else column.cast(field.type))
        else:
            columns.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(columns, schema=schema)
