"""One schema over many files: :func:`rntuple.iterate`, :func:`rntuple.concatenate` and
:func:`rntuple.dask` read every file's fields as one type, fixed before anything is read
from the headers of every file (the core's ``unify_field``: numbers promoted as uproot
and NumPy promote them, collections of different kinds as vectors, records member by
member), and, with ``allow_missing=True``, a field some files lack as None there."""

from __future__ import annotations

import concurrent.futures
import dataclasses
from typing import Any

import pyarrow as pa

from . import _core
from .errors import NotFoundError
from .reading import _expand_files, open_chain_member
from .selection import is_glob

#: Files opened at once to read their headers.
OPEN_AT_ONCE = 8


@dataclasses.dataclass
class ChainPlan:
    """How each file of a chain is read so that all give one schema."""

    #: per file, the ``types=`` it is read with (top-level field -> type), or None
    types: list[dict[str, Any] | None]
    #: per file, the selected top-level fields it lacks (read as None)
    missing: list[list[str]]
    #: per file, the expressions it reads (those naming fields it lacks left out)
    expressions: list[Any]
    #: the columns of every batch, in order, with their unified Arrow types, or None
    #: when every file has the same fields of the same types
    schema: pa.Schema | None
    #: the fields whose types unify the files (not the caller's ``types``)
    unified: list[str] = dataclasses.field(default_factory=list)


def _field_names(expressions: Any) -> list[str] | None:
    """The expressions as a list of names, or None for every field."""
    if expressions is None:
        return None
    if isinstance(expressions, str):
        return [expressions]
    return list(expressions)


def plan_chain(
    files: Any,
    expressions: Any,
    *,
    filter_name: Any,
    filter_typename: Any,
    types: dict[str, Any] | None,
    allow_missing: bool,
    options: dict[str, Any],
) -> ChainPlan | None:
    """The plan of a chain of more than one file whose fields are selected by name (not
    computed by expressions), or None when there is nothing to unify (one file). Every
    file's header is read (several at a time); a field that some files lack is an error
    naming them unless ``allow_missing``; types that cannot be unified are an
    :class:`~rntuple.IncompatibleTypeError` naming two files and their types. ``types``
    (the caller's) decides the type of the fields it names."""
    items = _expand_files(files)
    if len(items) < 2:
        return None
    names = _field_names(expressions)
    if names is not None and any(not isinstance(n, str) or is_glob(n) for n in names):
        return None

    def header(index: int) -> tuple[Any, str, list[str], dict[str, str], int]:
        nt = open_chain_member(items[index], options)
        if names is None and filter_name is None and filter_typename is None:
            selected = nt.fields
        elif names is None:
            selected = list(
                dict.fromkeys(
                    p.split(".")[0] for p in nt.keys(filter_name=filter_name, filter_typename=filter_typename)
                )
            )
        else:
            selected = [n for n in dict.fromkeys(n.split(".")[0] for n in names) if nt._lookup(n) is not None]
        qualified = {top: nt._qualified([nt._lookup(top) or top])[0] for top in selected}
        return nt._reader.schema_handle(), nt.file_path, selected, qualified, nt.num_entries

    with concurrent.futures.ThreadPoolExecutor(min(OPEN_AT_ONCE, len(items))) as pool:
        headers = list(pool.map(header, range(len(items))))
    handles = [h for h, *_ in headers]
    paths = [p for _, p, *_ in headers]
    selected = [s for _, _, s, _, _ in headers]
    order: list[str] = []
    if names is not None:
        order = list(dict.fromkeys(n.split(".")[0] for n in names))
    for s in selected:
        order.extend(n for n in s if n not in order)
    missing = [[n for n in order if n not in s] for s in selected]
    lacking = {n: [paths[i] for i, m in enumerate(missing) if n in m] for n in order}
    absent_everywhere = [n for n in order if len(lacking[n]) == len(items)]
    if absent_everywhere:
        raise NotFoundError(f"no file has field {absent_everywhere[0]!r} (of {len(items)} files)")
    if not allow_missing:
        for n, where in lacking.items():
            if where:
                shown = ", ".join(where[:3]) + (f" and {len(where) - 3} more" if len(where) > 3 else "")
                raise NotFoundError(
                    f"field {n!r} is missing from {len(where)} of {len(items)} files ({shown}); "
                    "pass allow_missing=True to read it as None there"
                )
    # The type of each field: the caller's, or one that reads every file's alike.
    unified: dict[str, Any] = {}
    for n in order:
        if types and n in types:
            unified[n] = types[n]
            continue
        having = [i for i, s in enumerate(selected) if n in s]
        qualified = headers[having[0]][3][n]
        unified[n] = _core.unify_field([handles[i] for i in having], qualified)
    per_file_types = []
    for s in selected:
        mine = {n: unified[n] for n in s if unified[n] is not None}
        # Member paths the caller gave (``"evo.a"``) apply as they are.
        mine.update({k: v for k, v in (types or {}).items() if k.split(".")[0] in s and k not in mine})
        per_file_types.append(mine)
    qualified_names = [q for _, _, _, q, _ in headers]
    as_on_disk = all(map(_same_as_disk, handles, per_file_types, qualified_names))
    if not any(missing) and as_on_disk:
        # Nothing to convert: each file read as it is.
        return ChainPlan([types for _ in items], missing, [expressions] * len(items), None)
    expressions_per_file = [
        expressions if names is None else [e for e in names if e.split(".")[0] in s] for s in selected
    ]
    schema = _schema(items, order, selected, per_file_types, missing, options)
    unified_names = [n for n in order if not (types and n in types)]
    return ChainPlan(per_file_types, missing, expressions_per_file, schema, unified_names)


def _same_as_disk(handle: Any, types: dict[str, Any], qualified: dict[str, str]) -> bool:
    """Whether every type of ``types`` is the file's own (a C++ name equal to its)."""
    for n, t in types.items():
        if not isinstance(t, str) or n not in qualified:
            return False
        if handle.type_name(qualified[n]) != t:
            return False
    return True


def _schema(
    items: list[tuple[str, str | None]],
    order: list[str],
    selected: list[list[str]],
    per_file_types: list[dict[str, Any]],
    missing: list[list[str]],
    options: dict[str, Any],
) -> pa.Schema:
    """The columns as read with the unified types (from the first file that has each,
    each such file opened once), nullable where some file lacks them."""
    holders: dict[int, list[str]] = {}
    for n in order:
        holders.setdefault(next(k for k, s in enumerate(selected) if n in s), []).append(n)
    fields: dict[str, pa.Field] = {}
    for i, names in holders.items():
        nt = open_chain_member(items[i], options)
        wanted = {n: per_file_types[i][n] for n in names if n in per_file_types[i]}
        handle = nt._read_types(wanted, unified=list(wanted)) if wanted else None
        schema = nt._reader.schema(nt._qualified([nt._lookup(n) or n for n in names]), handle)
        for n, field in zip(names, schema, strict=True):
            fields[n] = field.with_nullable(field.nullable or any(n in m for m in missing))
    return pa.schema([fields[n] for n in order])


def conform(table: pa.Table, schema: pa.Schema, num_rows: int | None = None) -> pa.Table:
    """``table``'s columns in ``schema``'s order and types: a column it lacks is all
    null (``num_rows`` of them when ``table`` has no column)."""
    n = table.num_rows if num_rows is None else num_rows
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name))
        else:
            columns.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(columns, schema=schema)
