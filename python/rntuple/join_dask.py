"""Dask for joins: :func:`join_dask` makes a ``dask_awkward.Array`` of a
:class:`rntuple.Join`, one partition per cluster-aligned step of the primary.

An aligned friend's partition reads the same entry range of the primary and the
friend. A key join's friend index is built once, on the client, from the friend's key
columns only, and travels with the graph's reader (a ``KeyIndex`` pickles as its bytes):
no worker reads the friend's keys again; a partition looks its primary keys up and
reads only the friend clusters holding its matches. Column projection (dask-awkward's
protocol, as :class:`rntuple.dask.PartitionReader`) narrows each partition's read to the
primary's top-level fields and the friend's fields (``name.field``) the graph uses."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from ._extras import require
from .dask import FormReader
from .libraries import indexed_options
from .selection import check_flag, check_step_size

#: per graph token: the join opened in this process (a broadcast index fetched once), a
#: lock for exact metrics, and what opening it cost until a partition claims it
_joins: dict[str, tuple[Any, threading.Lock, dict[str, int]]] = {}
_joins_lock = threading.Lock()
_KEEP = 4


class _Scattered:
    """A key index a ``dask.distributed`` client broadcast to every worker: the graph
    carries only its future (a key), and a worker gets the index from its own memory."""

    def __init__(self, key: Any) -> None:
        #: the scattered data's key (a future itself cannot be unpickled outside a
        #: client's context, as a worker deserializes tasks)
        self.key = key

    def get(self) -> Any:
        """The index: from this worker's memory (broadcast), else fetched by its key."""
        import distributed

        worker = distributed.get_worker()
        if self.key in worker.data:
            return worker.data[self.key]
        # A worker that joined after the broadcast fetches it from another. The future is
        # made as in memory: one made from a bare key waits for news of it that the
        # scheduler never sends this client (a task blocked for ever).
        client = distributed.get_client()
        return distributed.Future(self.key, client, state="memory").result()


def _metrics(join: Any) -> dict[str, int]:
    """Bytes read, page bytes used and requests over every file of the join."""
    total = {"bytes_read": 0, "bytes_used": 0, "requests": 0, "friend_bytes_read": 0}
    for i, chain in enumerate(join.chains()):
        for m in chain.members:
            metrics = m.metrics()
            for k in ("bytes_read", "bytes_used", "requests"):
                total[k] += int(metrics[k])
            if i == 0:
                total["friend_bytes_read"] += int(metrics["bytes_read"])
    return total


def _opened(
    token: str,
    spec: dict[str, Any],
    network: dict[str, Any],
    build: Callable[[dict[str, Any], dict[str, Any]], Any],
) -> tuple[Any, threading.Lock, dict[str, int]]:
    """The join of the graph ``token`` as this process opened it (once, ``build`` making
    it of ``spec`` and ``network``), a lock, and its opening cost for the first partition
    that asks."""
    with _joins_lock:
        hit = _joins.get(token)
        if hit is None:
            join = build(spec, network)
            hit = (join, threading.Lock(), _metrics(join))
            _joins[token] = hit
            while len(_joins) > _KEEP:
                del _joins[next(iter(_joins))]
        opening = dict(hit[2])
        hit[2].clear()
        return hit[0], hit[1], opening


def _top(path: str, name: str) -> str:
    """The projection unit of a path: a primary top-level field, or ``name.field``."""
    parts = path.split(".")
    return ".".join(parts[:2]) if parts[0] == name and len(parts) > 1 else parts[0]


class JoinPartitionReader(FormReader):
    """Reads one partition ``(start, stop)`` of the primary's entries of a join as an
    Awkward Array (the picklable function Dask calls on its workers): ``build`` makes the
    join of ``spec`` (:meth:`rntuple.Join.from_spec`)."""

    def __init__(
        self,
        spec: dict[str, Any],
        selection: dict[str, list[str]],
        form: Any,
        *,
        build: Callable[[dict[str, Any], dict[str, Any]], Any],
        fields: list[str] | None = None,
        report: bool = False,
        token: str | None = None,
        network: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(list(selection), form, fields=fields, report=report, token=token, network=network)
        self.spec = spec
        self.build = build
        #: each projection unit (primary top-level field, or ``name.field``): its paths
        self.selection = dict(selection)
        self.behavior = None

    def units(self) -> list[str]:
        """The primary's top-level fields and the friend's ``name.field`` read."""
        return list(self.selection)

    def wanted(self, columns: frozenset[str] | set[str] | list[str]) -> set[str]:
        """The units of ``columns`` (a friend's record: all its units)."""
        name = self.spec["name"]
        wanted = {_top(c, name) for c in columns}
        if name in columns:
            wanted |= {u for u in self.selection if u.startswith(name + ".")}
        return wanted

    def necessary_columns(self, report: Any, state: Any) -> frozenset[str]:
        """The projection units (primary fields, ``name.field``) the graph touched."""
        from dask_awkward.lib.io.columnar import ColumnProjectionMixin

        paths = ColumnProjectionMixin.necessary_columns(self, report, state)  # type: ignore[arg-type]
        return frozenset(_top(p, self.spec["name"]) for p in paths) & frozenset(self.selection)

    def __call__(self, partition: tuple[int, int]) -> Any:
        """The partition's rows (and, with ``report``, what reading them cost)."""
        import awkward as ak

        from .libraries import to_awkward

        start, stop = partition
        began = time.perf_counter()
        join, lock, opening = _opened(self.token, self.spec, self.network, self.build)
        paths = [p for f in self.fields for p in self.selection[f]]
        with lock if self.report else contextlib.nullcontext():
            before = _metrics(join) if self.report else {}
            table, _ = join.read(paths, start, stop)
            after = _metrics(join) if self.report else {}
        layout = indexed_options(to_awkward(table).layout)
        if len(self.fields) != len(self.selection):
            from dask_awkward.lib.unproject_layout import unproject_layout

            layout = unproject_layout(self.form, layout)
        out = ak.Array(layout, behavior=self.behavior, attrs=self.attrs)
        if not self.report:
            return out
        record = {k: after[k] - before[k] + opening.get(k, 0) for k in before}
        record.update(
            entry_start=start,
            entry_stop=stop,
            rows=len(out),
            fields=list(self.fields),
            seconds=time.perf_counter() - began,
            pid=os.getpid(),
        )
        return out, ak.Array([record])

    def __repr__(self) -> str:
        return f"JoinPartitionReader(fields={self.fields!r}, of {len(self.selection)})"


def join_dask(
    join: Any, expressions: Any = None, *, step_size: Any = None, report: bool = False, client: Any = None
) -> Any:
    """A ``dask_awkward.Array`` of ``join`` (see :meth:`rntuple.Join.dask`): partitions
    are the primary's cluster-aligned steps (``step_size`` as :func:`rntuple.dask`,
    default 100 MB of the selected fields); with ``report=True``, also one record per
    partition: ``bytes_read`` (primary and friend, the files' opening on that worker
    included), ``friend_bytes_read``, ``bytes_used``, ``requests``, ``entry_start``,
    ``entry_stop``, ``rows``, ``fields``, ``seconds``, ``pid``. With a
    ``dask.distributed`` ``client``, a key join's index (built here once) is broadcast
    to the workers (``client.scatter(broadcast=True)``) and the graph carries only its
    key; without one, the index travels pickled with the graph's reader."""
    dak = require("dask_awkward", "Join.dask")
    report = check_flag("report", report)
    step = "100 MB" if step_size is None else check_step_size(step_size)
    paths = join._resolve(expressions, None)
    if paths is None:
        paths = join.paths()
        paths = [p for p in paths if "." not in p or _top(p, join.name) == p]
    form = indexed_options(join.arrays(paths, entry_start=0, entry_stop=0).layout).form
    selection: dict[str, list[str]] = {}
    for p in paths:
        if p == join.name:
            for q in join.paths():
                if q.startswith(join.name + ".") and _top(q, join.name) == q:
                    selection.setdefault(q, []).append(q)
        else:
            selection.setdefault(_top(p, join.name), []).append(p)
    ranges = join.ranges(paths, 0, join.num_entries, step)
    if not ranges:
        raise ValueError("no entries to read: the primary is empty")
    divisions = None
    if join._how != "inner":
        divisions = [0]
        for a, b in ranges:
            divisions.append(divisions[-1] + b - a)
        divisions = tuple(divisions)
    keep: list[Any] = []
    reader = JoinPartitionReader(
        join.spec(client, keep), selection, form, build=type(join).from_spec, report=report
    )
    # The broadcast indexes live as long as the join (the graph holds only their keys).
    join._scattered = [*getattr(join, "_scattered", []), *keep]
    return dak.from_map(reader, ranges, label="rntuple-join", divisions=divisions)
