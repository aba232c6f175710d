"""The options reads share, defined and checked once: sizes (``"100 MB"``), entry
ranges, the remote-file options of :func:`rntuple.open` (:class:`RemoteOptions`), the
types a read converts to (:class:`ReadTypes`; with :class:`TypeOptions`, which
:func:`rntuple.iterate`, :func:`rntuple.concatenate`, :func:`rntuple.dask` and
:func:`rntuple.join` take alike, for many files), the filters that list an RNTuple's or
a field's subfields (:class:`KeyFilter`);
:func:`takes_options`, which gives a function's callers the options of such a group
(here, or :class:`~rntuple.writing.WriteOptions`, :class:`~rntuple.ttree.ConvertOptions`)
as its keyword arguments."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from .cache import check_cache
from .errors import InvalidArgumentError
from .selection import NameFilter, check_entry, check_flag, check_network, make_filter

FieldSelection = str | Sequence[str] | None
StepSize = int | str

_Result = TypeVar("_Result")

#: The :func:`dataclasses.field` metadata of an option that callers may also pass by
#: position (as uproot's ``expressions`` and ``cut``); the others are keyword-only.
POSITIONAL = {"positional": True}

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_size(size: int | str) -> int:
    """Bytes from an integer or a string such as ``"100 MB"``, ``"1.5 GiB"``, ``"512kB"``."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        raise InvalidArgumentError(
            f"a size must be a number of bytes (an integer) or a string such as '100 MB', not {size!r}"
        )
    if isinstance(size, int):
        if size <= 0:
            raise InvalidArgumentError(f"a size must be positive, not {size}")
        return size
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", size)
    unit = match.group(2).lower() if match else ""
    if not match or (unit not in _UNITS and unit != ""):
        raise InvalidArgumentError(
            f"cannot read {size!r} as a size: give bytes as an integer or a number with "
            "a unit (B, kB, MB, GB, KiB, MiB, GiB)"
        )
    value = int(float(match.group(1)) * _UNITS.get(unit, 1))
    if value <= 0:
        raise InvalidArgumentError(f"a size must be positive, not {size!r}")
    return value


def entry_range(num_entries: int, start: Any, stop: Any) -> tuple[int, int]:
    """Python-style bounds (negative counts from the end), clipped to the RNTuple;
    anything but an integer or None is an :class:`InvalidArgumentError`."""
    start = check_entry("entry_start", start)
    stop = check_entry("entry_stop", stop)
    start = 0 if start is None else start
    stop = num_entries if stop is None else stop
    if start < 0:
        start += num_entries
    if stop < 0:
        stop += num_entries
    start = min(max(start, 0), num_entries)
    stop = min(max(stop, start), num_entries)
    return start, stop


def takes_options(**groups: type) -> Callable[[Callable[..., _Result]], Callable[..., _Result]]:
    """Decorator: each parameter ``NAME`` of the function given as ``NAME=Options`` (an
    options dataclass) is, for its callers, the dataclass's fields, each an argument
    with the field's default (keyword-only unless its metadata is :data:`POSITIONAL`);
    the function gets them as one ``Options``, made (and so checked) before it runs.
    The options of a group are so defined once, in their dataclass, and every function
    of the group takes all of them alike (``inspect.signature`` and ``help`` show
    them)."""

    def decorate(function: Callable[..., _Result]) -> Callable[..., _Result]:
        public = _public_signature(inspect.signature(function), groups)
        # Each group's option names, once per function rather than once per call.
        fields = {name: [f.name for f in dataclasses.fields(options)] for name, options in groups.items()}

        def grouped(arguments: dict[str, Any]) -> dict[str, Any]:
            for name, options in groups.items():
                arguments[name] = options(**{n: arguments.pop(n) for n in fields[name] if n in arguments})
            return arguments

        def lazily(arguments: dict[str, Any]) -> Any:
            # A generator's options are checked when it starts, as its own arguments.
            yield from function(**grouped(arguments))

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> _Result:
            try:
                arguments = public.bind(*args, **kwargs).arguments
            except TypeError as err:
                raise TypeError(f"{function.__qualname__}() {err}") from None
            if inspect.isgeneratorfunction(function):
                return lazily(arguments)  # type: ignore[return-value]
            return function(**grouped(arguments))

        call.__signature__ = public  # type: ignore[attr-defined]
        return call

    return decorate


def _public_signature(inner: inspect.Signature, groups: dict[str, type]) -> inspect.Signature:
    """``inner`` with each parameter named in ``groups`` replaced by its dataclass's
    fields (see :func:`takes_options`)."""
    parameters: list[inspect.Parameter] = []
    for parameter in inner.parameters.values():
        if parameter.name not in groups:
            parameters.append(parameter)
            continue
        for option in dataclasses.fields(groups[parameter.name]):
            positional = option.metadata.get("positional", False)
            kind = parameter.POSITIONAL_OR_KEYWORD if positional else parameter.KEYWORD_ONLY
            parameters.append(
                inspect.Parameter(option.name, kind, default=option.default, annotation=option.type)
            )
    # A stable sort: a group's keyword-only options stand first among the keyword-only
    # parameters after its place.
    return inner.replace(parameters=sorted(parameters, key=lambda p: p.kind))


#: The values ``direct_io=`` takes (as ``RNTUPLE_DIRECT_IO``), and what each means.
_DIRECT_IO = {"auto": "auto", "always": "always", "on": "always", "never": "never", "off": "never"}
#: The values ``huge_pages=`` takes as a string (as ``RNTUPLE_HUGE_PAGES``).
_HUGE_PAGES = {"always": True, "on": True, "never": False, "off": False}


def _check_choice(name: str, value: Any, choices: dict[str, Any]) -> Any:
    """What ``value`` (a string of ``choices``, any case) means, else an
    :class:`InvalidArgumentError` naming the keyword ``name``."""
    if isinstance(value, str) and value.strip().lower() in choices:
        return choices[value.strip().lower()]
    expected = ", ".join(repr(c) for c in choices)
    raise InvalidArgumentError(f"{name}={value!r}: expected one of {expected}, or None")


@dataclasses.dataclass(frozen=True)
class RemoteOptions:
    """How files are read, as :func:`rntuple.open` takes it (``timeout``,
    ``connect_timeout``, ``retries``, ``speed_limit``, ``speed_time``, ``cache``,
    ``bunch_bytes``, ``read_ahead_bytes``, ``direct_io``, ``huge_pages``, ``daos_dir``,
    ``daos_mapping``; see there): every setting of the core's ``SourceOptions``; checked
    when made, before anything is opened."""

    timeout: float | None = None
    connect_timeout: float | None = None
    retries: int | None = None
    speed_limit: int | None = None
    speed_time: float | None = None
    cache: Any = None
    bunch_bytes: int | None = None
    read_ahead_bytes: int | None = None
    direct_io: str | bool | None = None
    huge_pages: str | bool | None = None
    daos_dir: str | os.PathLike[str] | None = None
    daos_mapping: str | None = None

    def __post_init__(self) -> None:
        self.network()
        self.core_cache()
        self.settings()

    def settings(self) -> dict[str, str]:
        """The settings given that are neither the network's nor the cache's, as the core
        takes them (empty: the environment's): ``direct_io`` (``"auto"``, ``"always"``
        or ``"never"``; ``True`` is always, ``False`` never), ``huge_pages`` (``True`` or
        ``"always"``, ``False`` or ``"never"``), ``daos_dir`` (a directory) and
        ``daos_mapping`` (``"per-page"``, ``"per-cluster"``; checked by the core when a
        file is opened)."""
        settings: dict[str, str] = {}
        if isinstance(self.direct_io, bool):
            settings["direct_io"] = "always" if self.direct_io else "never"
        elif self.direct_io is not None:
            settings["direct_io"] = _check_choice("direct_io", self.direct_io, _DIRECT_IO)
        if self.huge_pages is not None:
            huge = self.huge_pages
            if not isinstance(huge, bool):
                huge = _check_choice("huge_pages", huge, _HUGE_PAGES)
            settings["huge_pages"] = "always" if huge else "never"
        if self.daos_dir is not None:
            if not isinstance(self.daos_dir, (str, os.PathLike)) or not os.fspath(self.daos_dir):
                raise InvalidArgumentError(
                    f"daos_dir={self.daos_dir!r}: expected a directory (a path), or None"
                )
            settings["daos_dir"] = os.fspath(self.daos_dir)
        if self.daos_mapping is not None:
            if not isinstance(self.daos_mapping, str):
                raise InvalidArgumentError(
                    f"daos_mapping={self.daos_mapping!r}: expected 'per-page' or 'per-cluster', or None"
                )
            settings["daos_mapping"] = self.daos_mapping
        return settings

    def network(self) -> dict[str, float]:
        """The network settings given, as the core takes them (empty: the environment's)."""
        return check_network(
            self.timeout,
            self.connect_timeout,
            self.retries,
            self.speed_limit,
            self.speed_time,
            self.bunch_bytes,
            self.read_ahead_bytes,
        )

    def core_cache(self) -> dict[str, str] | None:
        """The cache setting as the core takes it (None: the environment's)."""
        return check_cache(self.cache)

    def as_keywords(self) -> dict[str, Any]:
        """Every option as :func:`rntuple.open`'s keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def given(self) -> dict[str, Any]:
        """The options given (not None) as keyword arguments: what travels to Dask workers,
        whose environment sets the others."""
        return {k: v for k, v in self.as_keywords().items() if v is not None}


@dataclasses.dataclass(frozen=True)
class ReadTypes:
    """The types a read converts fields to (``types``, ``on_overflow``, ``defaults``: see
    :meth:`rntuple.RNTuple.arrays`), as one RNTuple's reads take them."""

    types: dict[str, Any] | None = None
    on_overflow: str = "raise"
    defaults: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.on_overflow not in ("raise", "mask"):
            raise InvalidArgumentError(f"on_overflow={self.on_overflow!r}: expected 'raise' or 'mask'")


@dataclasses.dataclass(frozen=True)
class TypeOptions(ReadTypes):
    """:class:`ReadTypes`, and for many files whether a field some lack reads as None
    there (``allow_missing``: see :func:`rntuple.iterate`)."""

    allow_missing: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_flag("allow_missing", self.allow_missing)


@dataclasses.dataclass(frozen=True)
class Selection:
    """What a read selects, in uproot's arguments (see :meth:`rntuple.RNTuple.arrays`):
    ``expressions`` (field names, paths, globs, aliases or expressions of them), a
    ``cut``, the name and type filters, and ``aliases``; checked when the plan is made
    (:meth:`rntuple.RNTuple._plan`), against the file's fields."""

    expressions: str | Sequence[str] | None = dataclasses.field(default=None, metadata=POSITIONAL)
    cut: str | None = dataclasses.field(default=None, metadata=POSITIONAL)
    filter_name: NameFilter = None
    filter_typename: NameFilter = None
    aliases: dict[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class KeyFilter:
    """Which field paths ``keys``, ``typenames``, ``values`` and ``items`` of an
    :class:`~rntuple.RNTuple` or a :class:`~rntuple.ntuple.Field` list (``filter_name``,
    ``filter_typename``, ``recursive``: see :meth:`rntuple.RNTuple.keys`); checked when
    made."""

    filter_name: NameFilter = None
    filter_typename: NameFilter = None
    recursive: bool = True

    def __post_init__(self) -> None:
        check_flag("recursive", self.recursive)
        # The filters' predicates, made once: a filter given as an iterator is read once.
        predicates = (
            make_filter("filter_name", self.filter_name),
            make_filter("filter_typename", self.filter_typename),
        )
        object.__setattr__(self, "_predicates", predicates)

    def paths(self, typenames: Iterable[tuple[str, str]], under: str = "") -> list[str]:
        """The paths, relative to ``under`` (a path and its dot, or "" for the top), of
        the ``(path, C++ type)`` pairs below ``under`` that the filters select, in order."""
        by_name, by_type = self._predicates
        out = []
        for path, typename in typenames:
            if not path.startswith(under):
                continue
            relative = path[len(under) :]
            if not self.recursive and "." in relative:
                continue
            name = relative.rsplit(".", 1)[-1]
            if by_name is not None and not (by_name(name) or by_name(relative) or by_name("." + relative)):
                continue
            if by_type is not None and not by_type(typename):
                continue
            out.append(relative)
        return out
