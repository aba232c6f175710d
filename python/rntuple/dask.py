"""Dask: :func:`dask` builds a lazy ``dask_awkward.Array`` whose partitions are
cluster-aligned entry ranges of one or more files; :func:`convert_files` converts many
TTree files to RNTuple, one task per file, on a ``dask.distributed`` cluster.

``rntuple.dask`` is the function :func:`dask`; import the converter as
``from rntuple.dask import convert_files`` (or use ``rntuple.convert_files``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import ConversionError, InvalidArgumentError
from .reading import FieldSelection, StepSize, _expand_files, open_rntuples
from .ttree import ConvertResult, EntryRange, convert


class PartitionReader:
    """Reads one partition, ``(file, rntuple path, start, stop)``, as an Awkward Array
    (the picklable function Dask calls on its workers)."""

    def __init__(self, fields: list[str] | None) -> None:
        self.fields = fields

    def __call__(self, partition: tuple[str, str, int, int]) -> Any:
        """The partition's entries of the selected fields."""
        from .reading import ReadOnlyFile

        path, name, start, stop = partition
        nt = ReadOnlyFile(path)[name]
        return nt.arrays(self.fields, entry_start=start, entry_stop=stop, library="ak")


def dask(files: Any, fields: FieldSelection = None, *, step_size: StepSize = "100 MB") -> Any:
    """A lazily partitioned ``dask_awkward.Array`` of the selected fields over ``files``
    (the specs of :func:`rntuple.iterate`). Each partition is a cluster-aligned entry
    range of at most ``step_size`` (entries, or uncompressed bytes as ``"100 MB"``);
    nothing is read until the graph is computed, with any Dask scheduler."""
    import dask_awkward as dak

    partitions: list[tuple[str, str, int, int]] = []
    meta = None
    selected: list[str] | None = None
    for nt in open_rntuples(files):
        paths = nt.resolve_fields(fields)
        if selected is None:
            selected = paths
            empty = nt.arrays(paths, entry_start=0, entry_stop=0)
            meta = empty.layout.to_typetracer(forget_length=True)
        for start, stop in nt.batch_ranges(paths, 0, nt.num_entries, step_size):
            partitions.append((nt.file_path, nt.path, start, stop))
    if not partitions:
        raise ValueError("no entries to read: the files are empty or none were given")
    divisions = [0]
    for _, _, start, stop in partitions:
        divisions.append(divisions[-1] + stop - start)
    import awkward as ak

    return dak.from_map(
        PartitionReader(selected),
        partitions,
        label="rntuple",
        meta=ak.Array(meta),
        divisions=tuple(divisions),
    )


def _convert_task(input: str, output: str, tree: str | None, options: dict[str, Any]) -> ConvertResult:
    """One file's conversion, as a worker runs it."""
    return convert(input, output, tree=tree, **options)


def _absolute(path: str) -> str:
    """A local path made absolute (workers may run elsewhere); URLs as they are."""
    return path if "://" in path else os.path.abspath(path)


def convert_files(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | dict[str, str],
    out_dir: str | os.PathLike[str],
    *,
    client: Any = None,
    tree: str | None = None,
    name: str | None = None,
    branches: str | Sequence[str] | None = None,
    entries: EntryRange | None = None,
    compression: str | int | None = None,
    skip_unsupported: bool = False,
    overwrite: bool = False,
) -> list[ConvertResult]:
    """Converts TTree files to RNTuple files on a ``dask.distributed`` cluster, one task
    per file: each input ``in/x.root`` becomes ``out_dir/x.root``.

    Args:
        inputs: files (paths or URLs), each optionally ``"file.root:Tree"``, glob
            patterns (``"in/*.root"``, expanded here, sorted), or ``{file: tree}``.
        out_dir: the directory of the outputs (created if missing); with workers on
            other machines it must be on a file system they all share, as the inputs.
        client: the ``distributed.Client`` to run on; default: the current one
            (``distributed.default_client()``).
        tree: the TTree of every input that does not name its own.
        name, branches, entries, compression, skip_unsupported, overwrite: as for
            :func:`rntuple.convert`, the same for every file.

    Returns:
        One :class:`~rntuple.ttree.ConvertResult` per input, in the order of the inputs.

    Raises:
        ConversionError: after every task finished, if any failed: its message names
            each failed file with its error; ``.failures`` maps each failed input to its
            exception and ``.results`` holds the conversions that succeeded (their
            outputs are complete; a failed one leaves no output).
        InvalidArgumentError: no inputs, or two inputs whose outputs would collide.
    """
    import distributed

    pairs = _expand_files(inputs)
    if not pairs:
        raise InvalidArgumentError("no input files to convert")
    directory = Path(_absolute(os.fspath(out_dir)))
    directory.mkdir(parents=True, exist_ok=True)
    tasks: list[tuple[str, str, str | None]] = []
    seen: dict[str, str] = {}
    for path, own_tree in pairs:
        base = path.rstrip("/").rsplit("/", 1)[-1]
        if base in seen:
            raise InvalidArgumentError(
                f"inputs {seen[base]!r} and {path!r} have the same file name: their outputs in "
                f"{directory} would collide"
            )
        seen[base] = path
        tasks.append((_absolute(path), str(directory / base), own_tree or tree))
    options: dict[str, Any] = {
        "name": name,
        "branches": branches,
        "entries": entries,
        "compression": compression,
        "skip_unsupported": skip_unsupported,
        "overwrite": overwrite,
    }
    if client is None:
        client = distributed.default_client()
    uuid = os.urandom(6).hex()  # keys unique per call: a rerun is not the cached result
    futures = [
        client.submit(_convert_task, src, dst, t, options, pure=False, key=f"rntuple-convert-{i}-{uuid}")
        for i, (src, dst, t) in enumerate(tasks)
    ]
    distributed.wait(futures)
    results: list[ConvertResult] = []
    failures: dict[str, BaseException] = {}
    for (src, _, _), future in zip(tasks, futures, strict=True):
        try:
            results.append(future.result())
        except Exception as error:  # each file's failure is reported, after all finished
            failures[src] = error
    if failures:
        raise ConversionError(failures, results, len(tasks))
    return results
