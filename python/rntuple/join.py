"""Joins of RNTuples (friends): :func:`join` pairs each entry of a primary RNTuple (or
chain of files, or another join) with entries of a friend, by entry number (an aligned
friend) or by equal key values. The friend's key index, the lookups and the reading of
the matched friend entries are the Rust library's (``rntuple::tools::join``, through
``rntuple._core``), the GIL released."""

from __future__ import annotations

import difflib
import fnmatch
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from . import _core
from .errors import InvalidArgumentError, NotFoundError
from .file import expand_files, open_chain_member
from .join_dask import _Scattered, join_dask
from .libraries import to_awkward, to_numpy
from .ntuple import RNTuple
from .options import RemoteOptions, Selection, TypeOptions, entry_range, takes_options
from .selection import check_library, check_step_size, make_filter
from .unify import ChainReading, plan_chain

__all__ = ["Join", "join"]

HOWS = ("left", "inner")
DUPLICATES = ("first", "error", "all")


def _pick(table: pa.Table, path: str) -> pa.Array:
    """The column at a dotted ``path`` of ``table`` (through struct columns)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        head = ".".join(parts[:i])
        if head in table.column_names:
            column = table.column(head).combine_chunks()
            for member in parts[i:]:
                column = column.field(member)
            return column
    raise NotFoundError(f"join key {path!r} was not read")


class _Chain:
    """RNTuples read one after another, entries numbered globally: a primary or friend
    given as files, a list, a dict or an opened :class:`RNTuple`. Files whose types
    differ are read as one schema (:mod:`rntuple.unify`, as :func:`rntuple.concatenate`
    reads them)."""

    def __init__(self, members: list[RNTuple], chain: ChainReading | None = None) -> None:
        if not members:
            raise InvalidArgumentError("a join's side needs at least one RNTuple (no file given)")
        self.members = members
        self.starts = np.cumsum([0] + [m.num_entries for m in members]).tolist()
        self._core_chain: Any = None
        #: how each member is read as the one schema of the files (several files only)
        self.chain = chain
        self.types = [None if chain is None else chain.read_types(m, i) for i, m in enumerate(members)]

    @classmethod
    def of(cls, source: Any, remote: RemoteOptions) -> _Chain:
        """The chain of ``source`` (files, an :class:`RNTuple` or a chain), opened with
        ``remote``."""
        if isinstance(source, RNTuple):
            return cls([source])
        if isinstance(source, _Chain):
            return source
        members = [open_chain_member(item, remote) for item in expand_files(source)]
        # Every field of every file, one type each (a field some files lack is refused
        # when it is read).
        planned = plan_chain(source, Selection(), TypeOptions(allow_missing=True), remote)
        return cls(members, None if planned is None else planned[0])

    def files(self) -> list[tuple[str, str]]:
        """The members' files (absolute paths, or URLs) and RNTuple paths."""
        return [
            (os.path.abspath(m.file_path) if "://" not in m.file_path else m.file_path, m.path)
            for m in self.members
        ]

    @property
    def num_entries(self) -> int:
        return int(self.starts[-1])

    @property
    def name(self) -> str:
        return self.members[0].name

    def describe(self) -> str:
        first = f"{self.members[0].file_path}:{self.members[0].path}"
        more = len(self.members) - 1
        return first if not more else f"{first} (and {more} more files)"

    def core(self) -> Any:
        if self._core_chain is None:
            self._core_chain = _core.ReaderChain([m._reader for m in self.members], self.types)
        return self._core_chain

    def _table(self, index: int, paths: list[str] | None, start: int, stop: int) -> pa.Table:
        """Member ``index``'s ``paths`` (every field for None) over its ``start:stop``, as
        the chain's schema."""
        member = self.members[index]
        if self.chain is None:
            return member._read_table(member.fields if paths is None else paths, start, stop)
        wanted = self.top_level() if paths is None else paths
        lacking = [p for p in wanted if p.split(".")[0] in self.chain.missing[index]]
        if lacking:
            raise NotFoundError(
                f"{member.file_path}: RNTuple {member.path!r} has no field {lacking[0]!r}, which the "
                f"other files of {self.describe()} have"
            )
        return self.chain.read_table(member, index, wanted, start, stop, self.types[index])

    def paths(self) -> list[str]:
        return self.members[0].keys()

    def top_level(self) -> list[str]:
        return self.members[0].fields

    def resolve(self, patterns: list[str] | None) -> list[str] | None:
        return None if patterns is None else self.members[0].resolve_fields(patterns)

    def qualified(self, paths: list[str] | None) -> list[str] | None:
        return None if paths is None else self.members[0]._qualified(paths)

    def read(self, paths: list[str] | None, start: int, stop: int) -> tuple[pa.Table, np.ndarray]:
        """The fields ``paths`` (every field for None) over the global entries
        ``start:stop``, and the entry number of each row."""
        entries = np.arange(start, max(start, stop), dtype=np.uint64)
        if paths is not None and not paths:
            # Nothing of the primary itself (only the friend's fields): just the rows.
            return pa.table({"rows": pa.nulls(len(entries))}).drop_columns(["rows"]), entries
        tables = []
        for index, (lo, hi) in enumerate(zip(self.starts, self.starts[1:], strict=False)):
            a, b = max(start, lo), min(stop, hi)
            if a < b:
                tables.append(self._table(index, paths, a - lo, b - lo))
        if not tables:
            tables.append(self._table(0, paths, 0, 0))
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return table, entries

    def ranges(self, paths: list[str] | None, start: int, stop: int, step_size: Any) -> list[tuple[int, int]]:
        out = []
        for member, lo, hi in zip(self.members, self.starts, self.starts[1:], strict=False):
            a, b = max(start, lo), min(stop, hi)
            if a < b:
                fields = member.fields if paths is None else paths
                out.extend(
                    (x + lo, y + lo) for x, y in member.batch_ranges(fields, a - lo, b - lo, step_size)
                )
        return out


class Join:
    """A primary joined with a friend (see :func:`join`): ``arrays``, ``iterate``,
    ``dask`` and ``keys`` as an :class:`RNTuple`'s, the friend's fields under the record
    :attr:`name`."""

    def __init__(
        self,
        primary: _Chain | Join,
        friend: _Chain,
        on: list[str] | None,
        how: str | None,
        duplicates: str,
        name: str,
    ) -> None:
        self._primary = primary
        self._friend = friend
        self._on = on
        self._how = how
        self._duplicates = duplicates
        self._name = name
        self._index: Any = None

    # -- metadata --------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name of the friend's record in the results."""
        return self._name

    @property
    def on(self) -> list[str] | None:
        """The key fields (None for an aligned friend)."""
        return None if self._on is None else list(self._on)

    @property
    def num_entries(self) -> int:
        """The primary's number of entries (``entry_start``/``entry_stop`` count them)."""
        return self._primary.num_entries

    def __len__(self) -> int:
        return self.num_entries

    def describe(self) -> str:
        """The primary, for messages."""
        return self._primary.describe()

    def paths(self) -> list[str]:
        """Every selectable path: the primary's, then ``name.path`` of the friend's."""
        return [*self._primary.paths(), *(f"{self._name}.{p}" for p in self._friend.paths())]

    def top_level(self) -> list[str]:
        """The top-level names of the results: the primary's, then the friend's record."""
        return [*self._primary.top_level(), self._name]

    def keys(self, *, filter_name: Any = None) -> list[str]:
        """The field paths of both sides: the primary's as they are, the friend's as
        ``"name.field"``; ``filter_name`` as :meth:`RNTuple.keys`."""
        keep = make_filter("filter_name", filter_name)
        return [p for p in self.paths() if keep is None or keep(p) or keep(p.rsplit(".", 1)[-1])]

    def __repr__(self) -> str:
        on = "aligned" if self._on is None else f"on={self._on}"
        return f"<Join {self.describe()} with {self._friend.describe()} as {self._name!r}, {on}>"

    @property
    def index(self) -> Any:
        """The friend's key index (``rntuple._core.KeyIndex``), built on first use from
        the key columns only; None for an aligned friend."""
        if self._on is not None and self._index is None:
            index = _core.KeyIndex(self._friend.core(), self._on)
            if self._duplicates == "error":
                index.check_unique(self._friend.describe())
            self._index = index
        return self._index

    # -- selection -------------------------------------------------------------------

    def _split(self, names: list[str] | None) -> tuple[list[str] | None, list[str] | None, bool]:
        """Primary paths and friend paths (without the prefix) of a selection, and
        whether the friend's record is wanted at all."""
        if names is None:
            return None, None, True
        prefix = self._name + "."
        primary = [n for n in names if not (n == self._name or n.startswith(prefix))]
        friend_all = self._name in names
        friend = [n[len(prefix) :] for n in names if n.startswith(prefix)]
        if friend_all:
            return primary, None, True
        return primary, friend, bool(friend)

    def _resolve(self, expressions: Any, filter_name: Any) -> list[str] | None:
        """The selected paths of ``expressions`` (names, dotted paths, globs) or of
        ``filter_name``; None for everything."""
        if expressions is None:
            if filter_name is None:
                return None
            return self.keys(filter_name=filter_name)
        names = [expressions] if isinstance(expressions, str) else list(expressions)
        known = self.paths()
        out: list[str] = []
        for n in names:
            if not isinstance(n, str):
                raise InvalidArgumentError(f"expressions: {n!r} is not a field name")
            if any(c in n for c in "*?["):
                matched = [p for p in known if fnmatch.fnmatchcase(p, n) and ("." in n or "." not in p)]
                matched += [
                    f"{self._name}.{p}"
                    for p in self._friend.top_level()
                    if fnmatch.fnmatchcase(f"{self._name}.{p}", n)
                ]
                if not matched:
                    raise NotFoundError(f"field pattern {n!r} matches no field of {self!r}")
            elif n in known or n == self._name:
                matched = [n]
            else:
                close = difflib.get_close_matches(n, known, n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise NotFoundError(f"no field {n!r} in the join {self!r}{hint}")
            out.extend(m for m in matched if m not in out)
        return out

    # -- reading ---------------------------------------------------------------------

    def read(self, paths: list[str] | None, start: int, stop: int) -> tuple[pa.Table, np.ndarray]:
        """The selected paths over the primary's entries ``start:stop``: a table of the
        primary's columns and the friend's record column, and each row's primary entry
        number (an inner join drops rows)."""
        primary_paths, friend_paths, want_friend = self._split(paths)
        keys = self._on or []
        read_paths = (
            None if primary_paths is None else [*primary_paths, *(k for k in keys if k not in primary_paths)]
        )
        table, entries = self._primary.read(read_paths, start, stop)
        if self._on is None:
            matches = _core.Matches.aligned(pa.array(entries, type=pa.uint64()), self._friend.num_entries)
        else:
            columns = [_pick(table, k) for k in keys]
            matches = self.index.lookup(columns, self._duplicates, self._primary.describe())
        if self._how == "inner":
            rows, matches = matches.inner()
            table = table.take(rows)
            entries = entries[np.asarray(rows, dtype=np.int64)]
        if primary_paths is not None:
            tops = {p.split(".")[0] for p in primary_paths}
            table = table.select([c for c in table.column_names if c in tops])
        if want_friend:
            fields = self._friend.qualified(self._friend.resolve(friend_paths))
            column = self._friend.core().friend_column(fields, matches, self._duplicates == "all", self._name)
            table = table.append_column(column.schema.field(0), pa.chunked_array([column.column(0)]))
        return table, entries

    def ranges(self, paths: list[str] | None, start: int, stop: int, step_size: Any) -> list[tuple[int, int]]:
        """Cluster-aligned ranges of the primary's entries."""
        primary_paths, _, _ = self._split(paths)
        if primary_paths is not None and not primary_paths:
            primary_paths = [self._primary.top_level()[0]]
        if isinstance(self._primary, Join):
            return self._primary.ranges(primary_paths, start, stop, step_size)
        return self._primary.ranges(
            None if primary_paths is None else [p for p in primary_paths], start, stop, step_size
        )

    def arrays(
        self,
        expressions: str | Sequence[str] | None = None,
        *,
        filter_name: Any = None,
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
    ) -> Any:
        """The primary's fields and the friend's record over the primary's entries
        ``entry_start:entry_stop``: ``expressions`` are field names, dotted paths or
        globs, the friend's as ``"name.field"`` (``"name"`` for all of them);
        ``filter_name`` as :meth:`RNTuple.arrays`; ``library``: ``"ak"`` (records with a
        field ``name``: an optional record, None without a match, or with
        ``duplicates="all"`` a list of records), ``"arrow"``, ``"pd"``, ``"np"``,
        ``"pl"`` (flat columns, the friend's named ``"name.field"``)."""
        library = check_library(library)
        paths = self._resolve(expressions, filter_name)
        start, stop = entry_range(self.num_entries, entry_start, entry_stop)
        table, entries = self.read(paths, start, stop)
        return self._convert(table, entries, library)

    def iterate(
        self,
        expressions: str | Sequence[str] | None = None,
        *,
        filter_name: Any = None,
        step_size: Any = "100 MB",
        entry_start: int | None = None,
        entry_stop: int | None = None,
        library: str = "ak",
    ) -> Iterator[Any]:
        """:meth:`arrays` in cluster-aligned steps of the primary (``step_size`` as
        :meth:`RNTuple.iterate`)."""
        library = check_library(library)
        step_size = check_step_size(step_size)
        paths = self._resolve(expressions, filter_name)
        start, stop = entry_range(self.num_entries, entry_start, entry_stop)
        for a, b in self.ranges(paths, start, stop, step_size):
            table, entries = self.read(paths, a, b)
            yield self._convert(table, entries, library)

    def dask(
        self,
        expressions: str | Sequence[str] | None = None,
        *,
        step_size: Any = None,
        report: bool = False,
        client: Any = None,
    ) -> Any:
        """A ``dask_awkward.Array`` of the join, one partition per cluster-aligned step
        of the primary; with a ``dask.distributed`` ``client`` a key join's index is
        broadcast to the workers (see :func:`rntuple.join_dask.join_dask`)."""
        return join_dask(self, expressions, step_size=step_size, report=report, client=client)

    def chains(self) -> list[_Chain]:
        """The chains of the join: the friend's, then the primary's (its own chains for a
        join)."""
        inner = self._primary
        return [self._friend, *(inner.chains() if isinstance(inner, Join) else [inner])]

    def spec(self, client: Any = None, keep: list[Any] | None = None) -> dict[str, Any]:
        """A picklable description of the join (files, options and the built key index);
        with a ``dask.distributed`` client, each index is broadcast to its workers instead
        of travelling in the graph (``keep`` holds the futures while the graph lives)."""
        primary = self._primary
        index = self.index
        if client is not None and index is not None:
            future = client.scatter(index, broadcast=True, hash=False)
            if keep is not None:
                keep.append(future)
            index = _Scattered(future.key)
        return {
            "primary": primary.spec(client, keep) if isinstance(primary, Join) else primary.files(),
            "friend": self._friend.files(),
            "on": self._on,
            "how": self._how,
            "duplicates": self._duplicates,
            "name": self._name,
            "index": index,
        }

    @classmethod
    def from_spec(cls, spec: dict[str, Any], remote: dict[str, Any]) -> Join:
        """The join a :meth:`spec` describes, its files opened here with the ``remote``
        options given, its index the spec's."""
        options = RemoteOptions(**remote)
        primary = spec["primary"]
        left = (
            cls.from_spec(primary, remote)
            if isinstance(primary, dict)
            else _Chain.of([f"{p}:{n}" for p, n in primary], options)
        )
        right = _Chain.of([f"{p}:{n}" for p, n in spec["friend"]], options)
        join = cls(left, right, spec["on"], spec["how"], spec["duplicates"], spec["name"])
        index = spec["index"]
        join._index = index.get() if isinstance(index, _Scattered) else index
        return join

    def _convert(self, table: pa.Table, entries: np.ndarray, library: str) -> Any:
        if library == "ak":
            return to_awkward(table)
        flat = flatten_friend(table, self._name)
        if library == "arrow":
            return flat
        if library == "np":
            return to_numpy(flat)
        if library == "pd":
            import pandas as pd

            columns = {}
            for n in flat.column_names:
                column = flat.column(n)
                if pa.types.is_list(column.type) or pa.types.is_struct(column.type):
                    columns[n] = to_numpy(pa.table({n: column}))[n]
                else:
                    columns[n] = column.to_pandas().to_numpy()
            return pd.DataFrame(columns, index=pd.Index(entries.astype(np.int64), name="entry"))
        from ._extras import require

        return require("polars", "library='pl'").from_arrow(flat)


def flatten_friend(table: pa.Table, name: str) -> pa.Table:
    """``table`` with the friend's record column ``name`` as flat columns
    ``"name.field"`` (nulls where the record is null; lists per field for a list of
    records)."""
    if name not in table.column_names:
        return table
    at = table.column_names.index(name)
    column = table.column(name).combine_chunks()
    table = table.remove_column(at)
    if pa.types.is_struct(column.type):
        children = column.flatten()
        for i, child in enumerate(children):
            table = table.add_column(at + i, f"{name}.{column.type.field(i).name}", child)
    else:
        records = column.flatten()
        offsets = column.offsets
        for i in range(records.type.num_fields):
            child = pa.ListArray.from_arrays(offsets, records.field(i))
            table = table.add_column(at + i, f"{name}.{records.type.field(i).name}", child)
    return table


def _check_choice(argument: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidArgumentError(f"{argument}={value!r}: choose one of {', '.join(map(repr, choices))}")
    return value


@takes_options(remote=RemoteOptions)
def join(
    primary: Any,
    friend: Any,
    on: str | Sequence[str] | None = None,
    how: str | None = None,
    duplicates: str = "first",
    name: str | None = None,
    *,
    remote: RemoteOptions,
) -> Join:
    """Joins ``friend`` to ``primary``: each primary entry with friend entries, by entry
    number (``on=None``, an aligned friend) or by equal values of the key fields ``on``
    (a name, ``"event"``, or a list of them, present on both sides; integers or bool of
    any width and sign, compared by value; floats refused).

    ``primary`` and ``friend`` are anything :func:`rntuple.iterate` takes (a spec
    ``"file.root:Events"``, a URL, a list or glob of files, a dict) or an opened
    :class:`RNTuple`; ``primary`` may also be a :class:`Join` (nesting). ``how``:
    ``"left"`` keeps every primary entry once, in order (no friend where there is no
    match), ``"inner"`` only those with a match; the default is ``"left"`` except that
    an aligned friend must then have the primary's length (``how="left"`` allows a
    shorter or longer one). ``duplicates``: a friend key several entries share gives
    its lowest entry (``"first"``, as ROOT's ``RNTupleProcessor``), raises
    (``"error"``) or gives every match as a list (``"all"``). ``name``: the friend's
    record in the results (default: the friend RNTuple's name). Remote options as
    :func:`rntuple.open`."""
    if how is not None:
        _check_choice("how", how, HOWS)
    _check_choice("duplicates", duplicates, DUPLICATES)
    if isinstance(on, str):
        keys: list[str] | None = [on]
    elif on is None:
        keys = None
    else:
        keys = list(on)
        if not keys or not all(isinstance(k, str) for k in keys):
            raise InvalidArgumentError(
                f"on={on!r}: a key join needs field names (on=None for an aligned friend)"
            )
        for i, k in enumerate(keys):
            if k in keys[:i]:
                raise InvalidArgumentError(f"on: join key {k!r} is given twice")
    if isinstance(friend, Join):
        raise InvalidArgumentError("a friend cannot be a join; join the friend to the primary's join instead")
    left = primary if isinstance(primary, Join) else _Chain.of(primary, remote)
    right = _Chain.of(friend, remote)
    name = right.name if name is None else name
    if not isinstance(name, str) or not name or "." in name:
        raise InvalidArgumentError(f"name={name!r}: the friend's record needs a name without dots")
    if name in left.top_level():
        raise InvalidArgumentError(
            f"the primary {left.describe()} has a field {name!r}, the name of the friend's "
            f"record: pass another name, e.g. name={name + '_friend'!r}"
        )
    if keys is None:
        if left.num_entries != right.num_entries and how != "left":
            raise InvalidArgumentError(
                f"friends not aligned: the primary {left.describe()} has {left.num_entries} "
                f"entries and the friend {right.describe()} has {right.num_entries}; join on "
                f'keys, or pass how="left" (entries without a friend entry get None)'
            )
    else:
        known = left.paths()
        for k in keys:
            if k not in known:
                close = difflib.get_close_matches(k, known, n=3)
                hint = f"; did you mean {' or '.join(close)}?" if close else ""
                raise NotFoundError(f"join key {k!r} is not a field of the primary {left.describe()}{hint}")
        table, _ = left.read(keys, 0, 0)
        for k in keys:
            t = _pick(table, k).type
            if not (pa.types.is_integer(t) or pa.types.is_boolean(t)):
                extra = (
                    ": floating-point keys are refused, as equality of floats is unreliable"
                    if pa.types.is_floating(t)
                    else ""
                )
                raise InvalidArgumentError(
                    f"cannot join on field {k!r} of the primary {left.describe()}: its type is {t}, "
                    f"and join keys must be integers or bool{extra}"
                )
    result = Join(left, right, keys, how, duplicates, name)
    if keys is not None:
        result.index  # noqa: B018 -- builds the friend's index now: its errors belong to join()
    return result
