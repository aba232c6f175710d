"""Lazy, partitioned reading with Dask: :func:`dask` builds a ``dask_awkward.Array``
whose partitions are cluster-aligned entry ranges of one or more files."""

from __future__ import annotations

from typing import Any

from .reading import FieldSelection, StepSize, open_rntuples


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
