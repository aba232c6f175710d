"""TTree to RNTuple: :func:`convert` writes the RNTuple that ROOT's ``RNTupleImporter``
writes for a TTree (same fields, C++ types, column types and projections), without ROOT,
in the Rust core with the GIL released (``rntuple convert`` on the command line).
:func:`rntuple.dask.convert_files` converts many files on a ``dask.distributed`` cluster.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from . import _core
from .errors import InvalidArgumentError, UnsupportedError
from .options import RemoteOptions, takes_options

#: An entry range ``(start, stop)``: ``stop`` exclusive, ``None`` or past the end for
#: the end of the tree.
EntryRange = tuple[int, int | None]


@dataclass(frozen=True)
class ConvertResult:
    """What one conversion did."""

    #: The input, as given (``"file.root"`` or ``"file.root:Tree"``).
    input: str
    #: The RNTuple file written.
    output: str
    #: Entries written.
    entries: int
    #: Bytes of the TTree's baskets read (as stored in the input file).
    input_bytes: int
    #: Size of the output file in bytes.
    output_bytes: int
    #: Wall-clock time of the conversion in seconds.
    seconds: float
    #: Branches left out with ``skip_unsupported=True``, each with the reason.
    skipped: list[str] = field(default_factory=list)
    #: With ``split_policy="auto"``: per branch of objects, ``(branch, sample entries,
    #: bytes split, bytes unsplit, stored unsplit)`` measured on the sample.
    split_choices: list[tuple[str, int, int, int, bool]] = field(default_factory=list)


def _patterns(patterns: str | Sequence[str] | None) -> list[str] | None:
    """One glob pattern or several as a list (``None`` stays ``None``)."""
    if patterns is None:
        return None
    return [patterns] if isinstance(patterns, str) else list(patterns)


@dataclass(frozen=True)
class ConvertOptions:
    """The options of a conversion, as :func:`convert` takes them (see there), defined
    and checked here once: :func:`rntuple.convert_files` takes the same, for every file.
    """

    name: str | None = None
    branches: str | Sequence[str] | None = None
    entries: EntryRange | None = None
    compression: str | int | None = None
    skip_unsupported: bool = False
    overwrite: bool = False
    unsplit: str | Sequence[str] | None = None
    split_policy: str = "split"

    def __post_init__(self) -> None:
        if self.entries is not None:
            first, stop = self.entries
            if first < 0 or (stop is not None and stop < 0):
                raise InvalidArgumentError(f"entries={self.entries!r}: entry numbers are not negative")
        if self.split_policy not in ("split", "unsplit", "auto"):
            raise InvalidArgumentError(
                f"split_policy={self.split_policy!r}: expected 'split', 'unsplit' or 'auto'"
            )

    def keywords(self) -> dict[str, Any]:
        """The options as :func:`convert`'s keyword arguments."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@takes_options(options=ConvertOptions, remote=RemoteOptions)
def convert(
    input: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    tree: str | None = None,
    options: ConvertOptions,
    remote: RemoteOptions,
) -> ConvertResult:
    """Converts a TTree into an RNTuple in a new ROOT file or object-store dataset.

    Args:
        input: the TTree's file, a path or URL, optionally with the tree as
            ``"file.root:Events"`` (or ``"file.root:dir/Events"``).
        output: the ROOT file to write, or an object-store dataset
            (``"ntpl+s3+https://host/bucket/prefix"``, ``"ntpl+file:///dir/prefix"``,
            ``URL:NAME`` naming the RNTuple), its pages stored as objects while they are
            written. It appears only when complete: on any error nothing is left at
            ``output`` (an existing file there is kept; a dataset's anchor is stored
            last, and the objects of a failed conversion are removed).
        tree: the TTree's name or path in the file, if ``input`` does not name it; may
            be omitted when the file holds a single TTree.
        name: the RNTuple's name (default: the tree's).
        branches: glob patterns of the top-level branches to convert (``"Jet_*"``;
            default all); an array brings its count leaf.
        entries: ``(start, stop)``, the entries to convert (default all).
        compression: ``"ALG[:LEVEL]"`` (``"zstd:5"``, ``"lz4"``, ``"lzma:7"``, ``"none"``)
            or ROOT's number (``505``); default zstd level 5, as ROOT's importer.
        skip_unsupported: leave out branches of a type that cannot be converted (listed
            in :attr:`ConvertResult.skipped`) instead of failing.
        overwrite: replace ``output`` if it exists (else an existing file is refused).
        unsplit: glob patterns of top-level object branches to store unsplit, as
            streamer fields (ROOT reads them back through the class's dictionary).
            Objects RNTuple cannot store as fields of their own (``TLorentzVector``,
            classes with counted C arrays, ...) are stored so without it. A branch split
            in the TTree is joined into whole objects.
        split_policy: which branches of objects (classes, collections of classes) are
            stored split, as fields of their own, and which unsplit, as streamer fields:
            ``"split"`` (as ROOT's importer), ``"unsplit"`` (wherever the objects can be
            streamed whole) or ``"auto"`` (each in the smaller form, measured on a sample
            of its entries written both ways; see :attr:`ConvertResult.split_choices`).
        timeout, connect_timeout, retries, speed_limit, speed_time, cache, bunch_bytes,
            read_ahead_bytes, direct_io, huge_pages, daos_dir, daos_mapping: how the
            input is read, as :func:`rntuple.open` takes them
            (:class:`~rntuple.options.RemoteOptions`); ``None`` leaves each to its
            ``RNTUPLE_*`` variable, else the default.

    Returns:
        :class:`ConvertResult`: entries, bytes read and written, time, skipped branches.

    Raises:
        NotFoundError: no such TTree (or file holding one).
        InvalidArgumentError: a bad option, or ``output`` is the input file.
        OutputExistsError: ``output`` exists and ``overwrite`` is false (a
            ``FileExistsError``).
        UnsupportedError: a branch of a type that cannot be converted.
        FormatError: a corrupt or truncated TTree.
        OSError: the file system failed (``FileNotFoundError`` for a missing input).
    """
    source = os.fspath(input)
    target = os.fspath(output)
    entries = options.entries
    span = None if entries is None else (int(entries[0]), None if entries[1] is None else int(entries[1]))
    start = time.perf_counter()
    try:
        done = _core.convert_ttree(
            source,
            target,
            tree=tree,
            name=options.name,
            branches=_patterns(options.branches),
            entries=span,
            compression=None if options.compression is None else str(options.compression),
            skip_unsupported=options.skip_unsupported,
            overwrite=options.overwrite,
            unsplit=_patterns(options.unsplit),
            split_policy=options.split_policy,
            network=remote.network() or None,
            cache=remote.core_cache(),
            settings=remote.settings() or None,
        )
    except UnsupportedError as e:
        if options.skip_unsupported or 'branch "' not in str(e):
            raise
        hint = "pass skip_unsupported=True to convert the other branches without it"
        raise UnsupportedError(f"{e}; {hint}") from e
    seconds = time.perf_counter() - start
    if done.warning is not None:
        warnings.warn(done.warning, RuntimeWarning, stacklevel=2)
    return ConvertResult(
        input=source,
        output=target,
        entries=done.entries,
        input_bytes=done.input_bytes,
        output_bytes=os.stat(target).st_size if done.output_bytes is None else done.output_bytes,
        seconds=seconds,
        skipped=list(done.skipped),
        split_choices=[tuple(c) for c in done.split_choices],
    )


__all__ = ["ConvertOptions", "ConvertResult", "EntryRange", "convert"]
