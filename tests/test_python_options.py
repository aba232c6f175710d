"""The options Python's front ends share are defined once (issue 47, item 6): every
function of a group takes every option of its group's dataclass, as a keyword with the
dataclass's default, so that the groups cannot drift apart again:

- reading many files (``iterate``, ``concatenate``, ``dask``): :class:`RemoteOptions`
  and :class:`TypeOptions`; opening one (``open``, ``ReadOnlyFile``, ``join``) and
  merging (``merge``, for its inputs and an output in a store): :class:`RemoteOptions`;
- converting (``convert``, ``convert_files``): :class:`ConvertOptions`, and
  :class:`RemoteOptions` for reading the inputs; ``convert_files``
  hands ``unsplit`` and ``split_policy`` to every file's conversion, and refuses a bad one
  before any task runs;
- writing (``recreate``, ``recreate_parallel`` and their classes): :class:`WriteOptions`;
- an RNTuple's reads (``arrays``, ``iterate``): :class:`Selection` and :class:`ReadTypes`;
  listing an RNTuple's or a field's subfields (``keys``, ``typenames``; an RNTuple's
  ``values``, ``items``): :class:`KeyFilter`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import ttreegen

import rntuple
from rntuple.options import KeyFilter, ReadTypes, RemoteOptions, Selection, TypeOptions
from rntuple.ttree import ConvertOptions
from rntuple.writing import WriteOptions


def _takes_all(function: Callable[..., Any], options: type) -> None:
    """``function`` takes every field of the dataclass ``options`` as a keyword argument
    with the field's default."""
    parameters = inspect.signature(function).parameters
    for field in dataclasses.fields(options):
        assert field.name in parameters, f"{function.__qualname__} lacks {field.name}="
        parameter = parameters[field.name]
        assert parameter.kind in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD), field.name
        assert parameter.default == field.default, (function.__qualname__, field.name)


@pytest.mark.parametrize("function", [rntuple.iterate, rntuple.concatenate, rntuple.dask])
def test_chain_reads_take_every_remote_and_type_option(function: Callable[..., Any]) -> None:
    _takes_all(function, RemoteOptions)
    _takes_all(function, TypeOptions)


@pytest.mark.parametrize("function", [rntuple.open, rntuple.ReadOnlyFile, rntuple.join, rntuple.merge])
def test_opening_takes_every_remote_option(function: Callable[..., Any]) -> None:
    _takes_all(function, RemoteOptions)


@pytest.mark.parametrize("function", [rntuple.convert, rntuple.convert_files])
def test_conversions_take_every_convert_and_remote_option(function: Callable[..., Any]) -> None:
    _takes_all(function, ConvertOptions)
    _takes_all(function, RemoteOptions)


@pytest.mark.parametrize(
    "function",
    [rntuple.recreate, rntuple.recreate_parallel, rntuple.WritableFile, rntuple.ParallelWriter],
)
def test_writers_take_every_write_option(function: Callable[..., Any]) -> None:
    _takes_all(function, WriteOptions)


@pytest.mark.parametrize("function", [rntuple.RNTuple.arrays, rntuple.RNTuple.iterate])
def test_ntuple_reads_take_every_selection_and_type_option(function: Callable[..., Any]) -> None:
    _takes_all(function, Selection)
    _takes_all(function, ReadTypes)


@pytest.mark.parametrize(
    "function",
    [
        rntuple.RNTuple.keys,
        rntuple.RNTuple.typenames,
        rntuple.RNTuple.values,
        rntuple.RNTuple.items,
        rntuple.Field.keys,
        rntuple.Field.typenames,
    ],
)
def test_listings_take_every_key_filter(function: Callable[..., Any]) -> None:
    _takes_all(function, KeyFilter)


def test_options_are_checked_when_made() -> None:
    refused: list[tuple[str, Callable[[], object]]] = [
        ("on_overflow", lambda: TypeOptions(on_overflow="wrap")),
        ("allow_missing", lambda: TypeOptions(allow_missing=1)),  # type: ignore[arg-type]
        ("split_policy", lambda: ConvertOptions(split_policy="sometimes")),
        ("checkpoint_every", lambda: WriteOptions(checkpoint_every=0)),
        ("cache", lambda: RemoteOptions(cache=3)),
        ("direct_io", lambda: RemoteOptions(direct_io="sometimes")),
        ("huge_pages", lambda: RemoteOptions(huge_pages=2)),  # type: ignore[arg-type]
        ("daos_dir", lambda: RemoteOptions(daos_dir="")),
        ("recursive", lambda: KeyFilter(recursive=1)),  # type: ignore[arg-type]
    ]
    for keyword, make in refused:
        with pytest.raises(rntuple.InvalidArgumentError, match=keyword):
            make()
    assert RemoteOptions(direct_io="ON", huge_pages=False, daos_dir=Path("/p")).settings() == {
        "direct_io": "always",
        "huge_pages": "never",
        "daos_dir": "/p",
    }
    assert RemoteOptions(timeout=5.0).given() == {"timeout": 5.0}


class _InlineClient:
    """A ``distributed.Client`` stand-in that runs each task at once, here: what
    ``convert_files`` hands a task is what is checked, not the cluster."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, function: Callable[..., Any], *args: Any, **_: Any) -> Future[Any]:
        self.submitted += 1
        future: Future[Any] = Future()
        future.set_result(function(*args))
        return future


def test_convert_files_takes_unsplit_and_split_policy(tmp_path: Path) -> None:
    """``convert_files(split_policy="auto")`` makes each file's choices as
    ``convert`` does; ``unsplit=`` stores the branches it names as streamer fields; a
    policy that does not exist is refused before any task is submitted."""
    pytest.importorskip("distributed")
    src = ttreegen.write("aod_like", tmp_path / "in")
    tree = ttreegen.CASES["aod_like"].tree
    alone = rntuple.convert(src, tmp_path / "alone.root", tree=tree, split_policy="auto")
    client = _InlineClient()
    (auto,) = rntuple.convert_files([src], tmp_path / "auto", client=client, tree=tree, split_policy="auto")
    assert auto.split_choices and [c[0] for c in auto.split_choices] == [c[0] for c in alone.split_choices]
    assert [c[4] for c in auto.split_choices] == [c[4] for c in alone.split_choices]

    branch = auto.split_choices[0][0]
    (unsplit,) = rntuple.convert_files(
        [src], tmp_path / "unsplit", client=client, tree=tree, unsplit=[branch]
    )
    assert unsplit.split_choices == []
    with rntuple.open(unsplit.output) as f:
        record = f[f.keys()[0]][branch].record
    assert record.struct_role == 4, record  # ROOT's streamer role: stored unsplit

    before = client.submitted
    with pytest.raises(rntuple.InvalidArgumentError, match="split_policy"):
        rntuple.convert_files([src], tmp_path / "bad", client=client, tree=tree, split_policy="sometimes")
    assert client.submitted == before
