"""Chains of files read as one: :func:`iterate` and :func:`concatenate` over many
files (one schema over all, :mod:`rntuple.unify`), and the opening of the files ahead of
their use (:func:`open_rntuples`)."""

from __future__ import annotations

import concurrent.futures
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import awkward as ak
import numpy as np
import pyarrow as pa

from .errors import InvalidArgumentError, NotFoundError
from .file import expand_files, open_chain_member
from .ntuple import RNTuple
from .options import RemoteOptions, Selection, StepSize, TypeOptions, takes_options
from .plan import ReadPlan, awkward_records
from .selection import check_flag, check_how, check_library, check_step_size
from .unify import plan_chain
from .uproot_compat import Report

#: Files a chain (:func:`iterate`, :func:`concatenate`, :func:`rntuple.dask`) opens
#: ahead of the one in use.
OPEN_AHEAD = 4

#: The option groups :func:`iterate` and :func:`concatenate` take, as keywords (see
#: :func:`rntuple.options.takes_options`).
_reads_chain = takes_options(selection=Selection, remote=RemoteOptions, typing=TypeOptions)


def open_rntuples(
    files: Any,
    remote: RemoteOptions | None = None,
    *,
    first_read: Callable[[RNTuple], Any] | None = None,
    first_read_at: Callable[[RNTuple, int], Any] | None = None,
) -> Iterator[tuple[RNTuple, Any]]:
    """Opens each RNTuple a files spec names (see :func:`iterate`), with the ``remote``
    options of :func:`open` (none given: the environment's), and yields it with
    ``first_read(nt)`` (``None`` without one). The next :data:`OPEN_AHEAD` files are
    opened, and the next one's ``first_read`` run, on threads of their own while the
    caller uses the current one (the core releases the GIL while it opens and reads):
    over many remote files the round trips of opening them, and the fetching of the next
    one's first pages, overlap the work on this one. A file is no longer referenced here
    once the caller moves on. ``first_read_at``: as ``first_read``, also given the file's
    index in the chain."""
    remote = RemoteOptions() if remote is None else remote
    items = expand_files(files)

    def open_only(index: int) -> RNTuple:
        return open_chain_member(items[index], remote)

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


@_reads_chain
def iterate(
    files: Any,
    selection: Selection,
    *,
    step_size: StepSize = "100 MB",
    library: str = "ak",
    how: Any = None,
    decode_ahead: bool = True,
    report: bool = False,
    ak_add_doc: Any = False,
    remote: RemoteOptions,
    typing: TypeOptions,
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
    ``speed_time``, ``cache``, ``bunch_bytes``, ``read_ahead_bytes``, ``direct_io``,
    ``huge_pages``, ``daos_dir`` and ``daos_mapping``: as :func:`open`.

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
    plans = _file_plans(files, selection, typing, remote)
    done = object()

    def first_batch(nt: RNTuple, index: int) -> tuple[Iterator[Any], Any]:
        batches = nt._iterate_plan(plans(nt, index), step_size, None, None, library, how, decode_ahead, 0)
        return batches, next(batches, done)

    global_offset = 0
    for nt, (batches, first) in open_rntuples(files, remote, first_read_at=first_batch):
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


@_reads_chain
def concatenate(
    files: Any,
    selection: Selection,
    *,
    library: str = "ak",
    how: Any = None,
    remote: RemoteOptions,
    typing: TypeOptions,
) -> Any:
    """:meth:`RNTuple.arrays` of every file (see :func:`iterate`) in one result,
    entries in file order (a pandas index counts entries over all files). The next file
    is opened and read while the current one is converted. ``timeout``,
    ``connect_timeout``, ``retries``, ``speed_limit``, ``speed_time``, ``cache``,
    ``bunch_bytes``, ``read_ahead_bytes``, ``direct_io``, ``huge_pages``, ``daos_dir`` and
    ``daos_mapping``: as :func:`open`.
    ``types``, ``on_overflow``, ``defaults`` and ``allow_missing``: one schema over
    every file, as :func:`iterate`."""
    library = check_library(library)
    how = check_how(how, library)
    plans = _file_plans(files, selection, typing, remote)

    def read(nt: RNTuple, index: int) -> tuple[ReadPlan, Any]:
        plan = plans(nt, index)
        if plan.computes:
            return plan, plan.evaluate(nt, 0, nt.num_entries)
        return plan, plan.table(nt, plan.selection, 0, nt.num_entries)

    tables = []
    sources = []
    parts = []
    offset = 0
    for nt, (plan, read_out) in open_rntuples(files, remote, first_read_at=read):
        if plan.computes:
            columns, entries = read_out
            parts.append((awkward_records(columns, len(entries)), entries + offset))
        else:
            tables.append(read_out)
            sources.append(nt.file_path)
        offset += nt.num_entries
    if not tables and not parts:
        raise InvalidArgumentError("no files to concatenate")
    if parts:
        records = ak.concatenate([r for r, _ in parts]) if len(parts) > 1 else parts[0][0]
        columns = {name: records[name] for name in records.fields}
        return ReadPlan.finish(columns, np.concatenate([i for _, i in parts]), library, how)
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
    files: Any, selection: Selection, typing: TypeOptions, remote: RemoteOptions
) -> Callable[[RNTuple, int], ReadPlan]:
    """The read plan of each file of ``files`` (by its index), as one schema
    (:func:`rntuple.unify.plan_chain`) when there are several; a single file's is
    :meth:`RNTuple.arrays`' own."""
    planned = plan_chain(files, selection, typing, remote)

    def plan(nt: RNTuple, index: int) -> ReadPlan:
        if planned is not None:
            return planned[1][index]
        return nt._plan(selection, typing)

    return plan
