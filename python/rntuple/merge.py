"""Merging RNTuples: :func:`merge` writes one file holding the entries of many RNTuples
in order, as ROOT's ``hadd`` does, copying compressed pages byte for byte (their
checksums verified) wherever encoding and compression match (``rntuple merge`` on the
command line).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import _core
from .errors import InvalidArgumentError
from .options import RemoteOptions, takes_options

#: The merge modes: what to do with fields the inputs do not all have.
MODES = ("filter", "strict", "union")


@dataclass(frozen=True)
class MergeResult:
    """What one merge did."""

    #: The file written.
    output: str
    #: Inputs merged.
    inputs: int
    #: Entries written.
    entries: int
    #: Clusters written (one per input cluster).
    clusters: int
    #: Pages copied byte for byte (their checksums verified).
    pages_copied: int
    #: Pages decompressed and compressed again (or decoded and encoded again).
    pages_resealed: int
    #: Pages of zeros written for fields an input lacks (``mode="union"``).
    zero_pages: int
    #: Stored page bytes read from the inputs.
    bytes_read: int
    #: Stored page bytes written.
    bytes_written: int
    #: The output's compression (ROOT's number, e.g. 505).
    compression: int
    #: Size of the output file in bytes (a dataset of objects: the bytes of its objects,
    #: the anchor included).
    output_bytes: int
    #: Wall-clock time in seconds.
    seconds: float
    #: Fields added by late model extension (``mode="union"``).
    fields_added: list[str] = field(default_factory=list)
    #: Fields of later inputs left out (``mode="filter"``).
    fields_dropped: list[str] = field(default_factory=list)
    #: Attribute sets of the inputs, not merged (as ROOT).
    attribute_sets_dropped: list[str] = field(default_factory=list)
    #: The inputs that lack fields of the output (``mode="union"``), each as
    #: ``(input, entries, fields)``: those entries hold zeros there (a
    #: :class:`MergeWarning` says so for each).
    inputs_lacking: list[tuple[str, int, list[str]]] = field(default_factory=list)
    #: Fields whose types differ between inputs, each with the type every input was read
    #: as (``(field, C++ type)``): their values were decoded and written again.
    fields_converted: list[tuple[str, str]] = field(default_factory=list)


class MergeWarning(UserWarning):
    """A union merge filled the fields an input lacks with zeros."""


@takes_options(remote=RemoteOptions)
def merge(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    mode: str = "filter",
    compression: str | int | None = None,
    keep_compression: bool = False,
    name: str | None = None,
    overwrite: bool = False,
    allow_disjoint: bool = False,
    remote: RemoteOptions,
) -> MergeResult:
    """Merges RNTuples into a new ROOT file, as ``hadd`` (ROOT's ``RNTupleMerger``) does.

    The output holds every input's entries, in order, with the first input's schema; its
    clusters are the inputs' clusters.

    Args:
        inputs: the RNTuples, ``"file.root"`` or ``"file.root:Events"`` each (paths or
            URLs); a single string is one input.
        output: the ROOT file to write. It appears only when complete: on any error
            nothing is left at ``output`` (an existing file there is kept). Or an
            object-store URL, ``ntpl+s3+https://HOST/BUCKET/PREFIX`` (``ntpl+s3+http://``
            for a local test server) or ``ntpl+file:///DIR/PREFIX``: the RNTuple is
            stored in ROOT's S3 layout (an object per page, page list, header and
            footer; the JSON anchor at ``PREFIX`` last, so a dataset is complete once
            it is visible; on an error the objects stored are removed; an existing
            dataset, with ``overwrite``, stays whole until the new anchor replaces its
            own; ``URL:NAME`` names the RNTuple written, as ``name`` does). One input with
            ``keep_compression=True`` copies an RNTuple between a file and an object
            store as stored. Attribute sets are not stored there (ROOT's S3 layout has
            none yet): ``attribute_sets_dropped`` names them. Or a DAOS container,
            ``daos://POOL/CONTAINER[:NAME]`` (ROOT's DAOS layout, in the directory store
            ``daos_dir``, its pages stored as ``daos_mapping`` says: ``"per-page"``, ROOT
            main's object per page, or ``"per-cluster"``, ROOT 6.40's); an RNTuple of
            that name there is replaced only with ``overwrite``.
        mode: ``"filter"`` (default, as ROOT: a later input's extra fields are left out,
            a missing field is an error), ``"strict"`` (both are errors) or ``"union"``
            (fields first seen in a later input are added; the entries of inputs that
            lack a field read as zeros, empty collections or default values).
        compression: ``"ALG[:LEVEL]"`` or ROOT's number for the output's pages; default:
            the first input's. Pages compressed otherwise are compressed again.
        keep_compression: keep every page's compression (nothing is recompressed).
        name: the output RNTuple's name (default: the first input's).
        overwrite: replace ``output`` if it exists.
        allow_disjoint: with ``mode="union"``, merge an input that shares no field with
            the inputs before it (refused by default: every entry would hold zeros for
            the other side's fields).
        timeout, connect_timeout, retries, speed_limit, speed_time, cache, bunch_bytes,
        read_ahead_bytes, direct_io, huge_pages, daos_dir, daos_mapping: how the inputs
        (and an output in a store) are read and written, as :func:`rntuple.open` takes
        them; ``None`` leaves each to its ``RNTUPLE_*`` variable, else the default.

    Returns:
        :class:`MergeResult`. With ``mode="union"``, a :class:`MergeWarning` for each
        input that lacks fields of the output, naming them.

    Raises:
        InvalidArgumentError: bad options; schemas that do not merge in this ``mode``
            (the message names the input and the field); ``output`` is one of the
            inputs.
        OutputExistsError: ``output`` exists and ``overwrite`` is false (a
            ``FileExistsError``).
        NotFoundError: an input without the RNTuple.
        ChecksumError: a page whose checksum does not match (the input is corrupt).
        UnsupportedError: fields with several column representations; a streamer
            field to add in ``"union"`` mode.
        FormatError: a corrupt or truncated input.
        OSError: the file system failed.
    """
    if isinstance(inputs, str | os.PathLike):
        sources = [os.fspath(inputs)]
    else:
        sources = [os.fspath(i) for i in inputs]
    if not sources:
        raise InvalidArgumentError("inputs: no RNTuple to merge")
    if mode not in MODES:
        raise InvalidArgumentError(f"mode={mode!r}: expected one of {', '.join(MODES)}")
    target = os.fspath(output)
    if target.startswith("daos://"):
        _check_daos_target(sources, target, name)
    start = time.perf_counter()
    summary = _core.merge_rntuples(
        sources,
        target,
        mode=mode,
        compression=None if compression is None else str(compression),
        keep_compression=keep_compression,
        name=name,
        overwrite=overwrite,
        allow_disjoint=allow_disjoint,
        network=remote.network() or None,
        cache=remote.core_cache(),
        settings=remote.settings() or None,
    )
    for source, n, fields in summary.inputs_lacking:
        warnings.warn(
            f"input {source} lacks {len(fields)} of the output's fields ({', '.join(fields)}): "
            f"its {n} entries hold zeros there",
            MergeWarning,
            stacklevel=2,
        )
    stored_bytes = summary.output_bytes
    return MergeResult(
        output=target,
        inputs=summary.inputs,
        entries=summary.entries,
        clusters=summary.clusters,
        pages_copied=summary.pages_copied,
        pages_resealed=summary.pages_resealed,
        zero_pages=summary.zero_pages,
        bytes_read=summary.bytes_read,
        bytes_written=summary.bytes_written,
        compression=summary.compression,
        output_bytes=os.stat(target).st_size if stored_bytes is None else stored_bytes,
        seconds=time.perf_counter() - start,
        fields_added=list(summary.fields_added),
        fields_dropped=list(summary.fields_dropped),
        attribute_sets_dropped=list(summary.attribute_sets_dropped),
        inputs_lacking=[(source, n, list(fields)) for source, n, fields in summary.inputs_lacking],
        fields_converted=[(name, cpp) for name, cpp in summary.fields_converted],
    )


def _check_daos_target(sources: list[str], target: str, name: str | None) -> None:
    """Refuses a DAOS output ``daos://POOL/CONTAINER[:NAME]`` whose NAME is not ``name``
    (when both are given) or that is one of the inputs."""
    uri, target_name = _core.split_target(target)
    if target_name is not None and name is not None and target_name != name:
        raise InvalidArgumentError(f'{target} names the RNTuple "{target_name}", name="{name}": give one')
    written = target_name or name
    for source in sources:
        if written is not None and _core.split_target(source) == (uri, written):
            raise InvalidArgumentError(f"{source} is both an input and the output")


__all__ = ["MODES", "MergeResult", "MergeWarning", "merge"]
