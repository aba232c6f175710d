"""One result whatever the reading path (issue 45, items 2 and 3 of "what was found", item
4 of "what to build").

A property test over generated cases (deterministic seeds): each case is 1 to 3 small
RNTuples (written by uproot, several clusters each, or by our writer) of integer and real
fields of every width with extreme values (2**40, 2**53 + 1, 2**62 + 1, 2**64 - 1, -2**63,
3.5e38, 1e-40, NaN, inf), lists, records, optionals and strings, whose types may differ
from file to file and which some files may lack; and a set of options (``types``,
``on_overflow``, ``defaults``, ``allow_missing``, a selection by names, glob, ``filter_name``,
``filter_typename`` or expressions and ``cut``, ``step_size``, ``library``, entry ranges).

The reference is the single-file read, ``RNTuple.arrays`` of each file with the chain's
types (the caller's, or the one type this test computes by the documented rule of
numbers: the narrowest type that holds every file's, else ``double`` for integers and
reals, ``std::int64_t`` for ``std::uint64_t`` with signed integers), concatenated, a field
a file lacks None there. Every path must give the same values, types and masks, or raise
the same error class: ``concatenate`` (over a list, a glob or a dict), ``iterate`` over the
files (every batch of one type), ``RNTuple.iterate`` and entry ranges of one file,
``rntuple.dask`` (synchronous scheduler), and the primary of an aligned ``join`` (and its
Dask form). The reference itself is checked against the values written, converted by
hand by the same rule (and, read as it is, against uproot's reading of each file).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import random
import warnings
from pathlib import Path
from typing import Any

import awkward as ak
import dask
import numpy as np
import pyarrow as pa
import pytest
import uproot

import rntuple

SEED = 45
N_CASES = 240

CPP = {
    "b": "bool",
    "i8": "std::int8_t",
    "u8": "std::uint8_t",
    "i16": "std::int16_t",
    "u16": "std::uint16_t",
    "i32": "std::int32_t",
    "u32": "std::uint32_t",
    "i64": "std::int64_t",
    "u64": "std::uint64_t",
    "f32": "float",
    "f64": "double",
}
ARROW = {
    "b": pa.bool_(),
    "i8": pa.int8(),
    "u8": pa.uint8(),
    "i16": pa.int16(),
    "u16": pa.uint16(),
    "i32": pa.int32(),
    "u32": pa.uint32(),
    "i64": pa.int64(),
    "u64": pa.uint64(),
    "f32": pa.float32(),
    "f64": pa.float64(),
}
INTS = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
REALS = ["f32", "f64"]
RANGE = {
    "b": (0, 1),
    **{f"i{w}": (-(2 ** (w - 1)), 2 ** (w - 1) - 1) for w in (8, 16, 32, 64)},
    **{f"u{w}": (0, 2**w - 1) for w in (8, 16, 32, 64)},
}
EXTREMES: dict[str, list[Any]] = {
    "b": [True, False],
    "i8": [-128, 127, 0, 5],
    "u8": [255, 0, 7],
    "i16": [-32768, 32767, 300],
    "u16": [65535, 1, 300],
    "i32": [-(2**31), 2**31 - 1, 100000, 2**24 + 1, -5],
    "u32": [2**32 - 1, 2**24 + 1, 3],
    "i64": [2**40, 2**62 + 1, -(2**63), 2**63 - 1, 5, 2**53 + 1, -1],
    "u64": [2**64 - 1, 2**63, 7, 2**53 + 1, 2**40],
    "f32": [3.4e38, -0.0, math.nan, math.inf, 1e-40, 1.5, -2.25],
    "f64": [3.5e38, math.nan, -math.inf, 1e-46, 1e-40, 0.1, 2.5, -7.0, 1e300],
}
F32_TINY = 1.1754943508222875e-38  # the smallest normal float
F64_TINY = 2.2250738585072014e-308  # the smallest normal double


# --- the rule of numbers, as the README states it (this test's own) ----------------------


def promote(codes: list[str]) -> str:
    """The one type of numbers of ``codes``: the narrowest that holds them all, else
    ``f64`` for integers and reals, ``i64`` for ``u64`` with signed integers."""
    if all(c == codes[0] for c in codes):
        return codes[0]
    if any(c in REALS for c in codes):
        return "f32" if all(c == "f32" for c in codes) else "f64"
    lo = min(RANGE[c][0] for c in codes)
    hi = max(RANGE[c][1] for c in codes)
    for c in ["i8", "i16", "i32", "i64"] if lo < 0 else ["u8", "u16", "u32", "u64"]:
        if RANGE[c][0] <= lo and hi <= RANGE[c][1]:
            return c
    return "i64"


def inexact(frm: str, to: str) -> bool:
    """Whether the one type ``to`` of a promotion may not hold a value of ``frm``: the
    promotions kept with a warning (no type holds both)."""
    return (to == "f64" and frm in ("i64", "u64")) or (to == "i64" and frm == "u64")


class Bad(Exception):
    """A value that does not fit (an error, or None when masked)."""


def convert(v: Any, frm: str, to: str) -> Any:
    """``v`` (of type ``frm``) read as ``to``, by hand; :class:`Bad` where it does not fit."""
    if v is None:
        return None
    if frm in REALS and to in REALS:
        if to == "f64" or frm == "f32":
            return float(np.float32(v)) if frm == "f32" else float(v)
        with np.errstate(all="ignore"):
            f = np.float32(v)
        if math.isnan(v) or math.isinf(v) or v == 0:
            return float(f)
        if math.isinf(f) or f == 0 or (abs(v) >= F64_TINY and abs(f) < F32_TINY):
            raise Bad(v)
        return float(f)
    v = int(v)
    if to == "b":
        return v != 0
    if to in REALS:
        r = float(np.float32(v)) if to == "f32" else float(v)
        if math.isinf(r) or int(r) != v:
            raise Bad(v)
        return r
    if not RANGE[to][0] <= v <= RANGE[to][1]:
        raise Bad(v)
    return v


# --- cases --------------------------------------------------------------------------------


@dataclasses.dataclass
class FieldSpec:
    """A field of one file: ``kind`` (num, list, opt, rec, str) and its number codes
    (``rec``: members by name)."""

    kind: str
    code: str = ""
    members: dict[str, str] = dataclasses.field(default_factory=dict)

    def cpp(self) -> str:
        return {
            "num": CPP.get(self.code, ""),
            "list": f"std::vector<{CPP.get(self.code, '')}>",
            "opt": f"std::optional<{CPP.get(self.code, '')}>",
            "str": "std::string",
            "rec": "",
        }[self.kind]

    def arrow(self) -> pa.DataType:
        if self.kind == "num":
            return ARROW[self.code]
        if self.kind == "opt":
            return ARROW[self.code]
        if self.kind == "list":
            return pa.large_list(pa.field("_0", ARROW[self.code], False))
        if self.kind == "str":
            return pa.string()
        return pa.struct([pa.field(m, ARROW[c], False) for m, c in self.members.items()])


@dataclasses.dataclass
class FileSpec:
    fields: dict[str, FieldSpec]
    data: dict[str, list[Any]]
    clusters: list[int]
    writer: str


@dataclasses.dataclass
class Case:
    id: int
    files: list[FileSpec]
    order: list[str]
    expressions: Any = None
    cut: str | None = None
    filter_name: Any = None
    filter_typename: Any = None
    types: dict[str, Any] | None = None
    defaults: dict[str, Any] | None = None
    on_overflow: str = "raise"
    allow_missing: bool = False
    step_size: int = 2
    library: str = "ak"
    spec: str = "list"
    entry_range: tuple[int, int] = (0, 0)


def value_of(rng: random.Random, code: str) -> Any:
    if rng.random() < 0.6:
        return rng.choice(EXTREMES[code])
    if code == "b":
        return rng.random() < 0.5
    if code in REALS:
        return rng.choice([0.5, -1.25, 1e3, 3.0])
    lo, hi = RANGE[code]
    return rng.randint(max(lo, -100), min(hi, 100))


def make_value(rng: random.Random, spec: FieldSpec) -> Any:
    if spec.kind == "num":
        return value_of(rng, spec.code)
    if spec.kind == "opt":
        return None if rng.random() < 0.3 else value_of(rng, spec.code)
    if spec.kind == "list":
        return [value_of(rng, spec.code) for _ in range(rng.choice([0, 1, 2, 3]))]
    if spec.kind == "str":
        return rng.choice(["", "a", "event", "ünï"])
    return {m: value_of(rng, c) for m, c in spec.members.items()}


def field_across_files(rng: random.Random, n_files: int) -> list[FieldSpec]:
    """One field's spec in each file: mostly one type, else types to unify."""
    kind = rng.choice(["num", "num", "num", "list", "opt", "rec", "str"])
    family = rng.choice(
        [INTS, INTS + REALS, REALS, ["i32", "i64", "u64"], ["i64", "f32"], ["b", "u8", "i16"]]
    )
    alike = rng.random() < 0.4
    first = rng.choice(family)
    specs = []
    for _ in range(n_files):
        code = first if alike else rng.choice(family)
        if kind == "rec":
            members = {"a": code, "b": first if alike else rng.choice(family)}
            if not alike and rng.random() < 0.25:
                members.pop("b")
            specs.append(FieldSpec("rec", members=members))
        elif kind == "str":
            specs.append(FieldSpec("str"))
        else:
            specs.append(FieldSpec(kind, code))
    if rng.random() < 0.06 and n_files > 1:
        specs[-1] = FieldSpec("str") if kind != "str" else FieldSpec("num", "i32")  # no one type
    return specs


def generate(index: int) -> Case:
    rng = random.Random(SEED * 1000 + index)
    n_files = rng.choice([1, 2, 2, 3, 3])
    names = [f"f{i}" for i in range(rng.choice([1, 2, 3]))]
    per_field = {n: field_across_files(rng, n_files) for n in names}
    files = []
    for i in range(n_files):
        fields = {n: per_field[n][i] for n in names}
        if n_files > 1 and len(names) > 1 and rng.random() < 0.2:
            fields.pop(rng.choice(names))  # a field this file lacks
        n = rng.choice([0, 1, 3, 4, 6, 7])
        data = {k: [make_value(rng, s) for _ in range(n)] for k, s in fields.items()}
        cut_at = sorted(rng.sample(range(1, n), min(rng.choice([0, 1, 2]), n - 1))) if n > 1 else []
        clusters = [b - a for a, b in zip([0, *cut_at], [*cut_at, n], strict=True)]
        writer = "uproot" if rng.random() < 0.6 and n > 0 else "ours"
        files.append(FileSpec(fields, data, clusters, writer))
    case = Case(index, files, names)
    options(rng, case)
    return case


def options(rng: random.Random, case: Case) -> None:
    names = case.order
    some_lack = any(set(names) - set(f.fields) for f in case.files)
    case.allow_missing = (some_lack and rng.random() < 0.8) or rng.random() < 0.1
    case.on_overflow = rng.choice(["raise", "mask"])
    case.step_size = rng.choice([1, 2, 3, 5])
    case.spec = rng.choice(["list", "list", "glob", "dict"])
    case.library = rng.choice(["ak"] * 5 + ["np", "pd", "arrow"])
    total = sum(sum(f.clusters) for f in case.files)
    a = rng.randint(0, total)
    case.entry_range = (a, rng.randint(a, total))
    selection = rng.choice(["all", "all", "names", "glob", "filter_name", "filter_typename", "expr"])
    if selection == "names":
        case.expressions = rng.sample(names, rng.randint(1, len(names)))
    elif selection == "glob":
        case.expressions = ["f*"]
    elif selection == "filter_name":
        case.filter_name = rng.choice(["f0", "f[01]", "f*", ["f0", "f2"]])
    elif selection == "filter_typename":
        case.filter_typename = rng.choice(["std::int*", "*int64*", "double", "std::vector*"])
    elif selection == "expr":
        numeric = [
            n for n in names if all(f.fields.get(n, FieldSpec("num", "i8")).kind == "num" for f in case.files)
        ]
        if numeric:
            x = rng.choice(numeric)
            case.expressions = [x, f"{x} * 2", *(n for n in names if n != x and rng.random() < 0.5)]
            case.cut = rng.choice([None, f"{x} > 0", f"{x} != {x}"])
    if rng.random() < 0.4:
        add_types(rng, case)


def add_types(rng: random.Random, case: Case) -> None:
    records = [n for n in case.order if any(n in f.fields and f.fields[n].kind == "rec" for f in case.files)]
    name = rng.choice(records) if records and rng.random() < 0.5 else rng.choice(case.order)
    spec = next((f.fields[name] for f in case.files if name in f.fields), None)
    if spec is None:
        return
    code = rng.choice([*INTS, *REALS, "b"])
    if spec.kind == "num":
        case.types = {
            name: CPP[code]
            if rng.random() < 0.8
            else {"f32": "float32", "f64": "float64"}.get(code, CPP[code])
        }
    elif spec.kind == "list":
        case.types = {name: f"std::vector<{CPP[code]}>"}
    elif spec.kind == "opt":
        case.types = {name: f"std::optional<{CPP[code]}>"}
    elif spec.kind == "str":
        case.types = {name: CPP[code]}  # refused
    else:
        case.types = {name: {"a": CPP[code], "z": "float"}}
        if rng.random() < 0.7:
            case.defaults = {f"{name}.z": 2.5}


CASES = [generate(i) for i in range(N_CASES)]


# --- files ----------------------------------------------------------------------------------


def column(spec: FieldSpec, values: list[Any]) -> ak.Array:
    """``values`` as an Awkward column of exactly ``spec``'s type."""

    def numbers(code: str, vs: list[Any]) -> ak.Array:
        dtype = ARROW[code].to_pandas_dtype()
        with np.errstate(all="ignore"):
            return ak.Array(np.array(vs, dtype=dtype))

    if spec.kind == "num":
        return numbers(spec.code, values)
    if spec.kind == "opt":
        # (an indexed option: uproot 5.7 writes a byte-masked one's values misplaced)
        index = np.cumsum([v is not None for v in values], dtype=np.int64) - 1
        index[[v is None for v in values]] = -1
        present = numbers(spec.code, [v for v in values if v is not None])
        return ak.Array(ak.contents.IndexedOptionArray(ak.index.Index64(index), present.layout))
    if spec.kind == "list":
        flat = [x for v in values for x in v]
        return ak.unflatten(numbers(spec.code, flat), np.array([len(v) for v in values], dtype=np.int64))
    if spec.kind == "str":
        return ak.Array(values) if values else ak.Array(np.array([], dtype=str))
    return ak.zip({m: numbers(c, [v[m] for v in values]) for m, c in spec.members.items()}, depth_limit=1)


def write(path: Path, spec: FileSpec) -> None:
    """The file: by uproot (a cluster per part of ``spec.clusters``) or by our writer
    (one cluster; optionals spelled out, as a column without nulls would be plain)."""
    if spec.writer == "uproot":
        array = ak.zip({n: column(f, spec.data[n]) for n, f in spec.fields.items()}, depth_limit=1)
        with uproot.recreate(path) as out:
            writer = out.mkrntuple("t", array.layout.form)
            start = 0
            for size in spec.clusters:
                writer.extend(array[start : start + size])
                start += size
        return
    schema = pa.schema([pa.field(n, f.arrow(), f.kind == "opt") for n, f in spec.fields.items()])
    rows = [{n: spec.data[n][i] for n in spec.fields} for i in range(sum(spec.clusters))]
    table = pa.Table.from_pylist(rows, schema=schema)
    with rntuple.recreate(path) as out:
        out.write("t", table, types={n: f.cpp() for n, f in spec.fields.items() if f.kind in ("num", "opt")})


def written(case: Case, tmp_path: Path) -> tuple[list[str], Any, Any]:
    """The case's files, and their spec for the chain (a list, a glob, or a dict) and for
    the join (a list)."""
    specs = []
    for i, f in enumerate(case.files):
        path = tmp_path / f"part{i}.root"
        write(path, f)
        specs.append(f"{path}:t")
    if case.spec == "glob":
        return specs, f"{tmp_path}/part*.root:t", specs
    if case.spec == "dict":
        return specs, {s.rsplit(":", 1)[0]: "t" for s in specs}, specs
    return specs, specs, specs


# --- what the chain reads: the types, the warnings, the errors (this test's rule) ----------


NO_ONE_TYPE = "no one type"


def unified(specs: list[FieldSpec]) -> tuple[Any, bool]:
    """The ``types=`` value that reads a field of every file having it alike (None: as on
    disk), and whether the promotion may not hold every value; :data:`NO_ONE_TYPE`
    where no type reads them all."""
    if all(s == specs[0] for s in specs):
        return None, False
    kinds = {s.kind for s in specs}
    if kinds <= {"num", "opt", "list"} and not ({"num", "list"} <= kinds):
        codes = [s.code for s in specs]
        to = promote(codes)
        warn = any(inexact(c, to) for c in codes)
        if "list" in kinds:
            return f"std::vector<{CPP[to]}>", warn
        if "opt" in kinds:
            return f"std::optional<{CPP[to]}>", warn
        return CPP[to], warn
    if kinds == {"rec"}:
        members: dict[str, Any] = {}
        warn = False
        for name in dict.fromkeys(m for s in specs for m in s.members):
            codes = [s.members[name] for s in specs if name in s.members]
            to = promote(codes)
            warn = warn or any(inexact(c, to) for c in codes)
            lacking = len(codes) < len(specs)
            members[name] = f"std::optional<{CPP[to]}>" if lacking else CPP[to]
        return members, warn
    return NO_ONE_TYPE, False


def selected_fields(case: Case) -> list[str]:
    """The top-level fields the case reads in some file (by name, glob or filter)."""
    present = [n for n in case.order if any(n in f.fields for f in case.files)]
    if case.filter_name is not None:
        patterns = [case.filter_name] if isinstance(case.filter_name, str) else case.filter_name
        return [n for n in present if any(fnmatch.fnmatch(n, p) for p in patterns)]
    if case.filter_typename is not None:
        return [
            n
            for n in present
            if any(
                n in f.fields
                and (
                    fnmatch.fnmatch(f.fields[n].cpp(), case.filter_typename)
                    or any(
                        fnmatch.fnmatch(CPP[c], case.filter_typename) for c in f.fields[n].members.values()
                    )
                )
                for f in case.files
            )
        ]
    if case.expressions is None or case.expressions == ["f*"]:
        return present
    used = [e.split(" ")[0] for e in case.expressions] + ([case.cut.split(" ")[0]] if case.cut else [])
    return [n for n in case.order if n in used]


def expected_chain(case: Case) -> tuple[dict[str, Any] | None, set[str], type[Exception] | None]:
    """The types each field is read as (the caller's, else unified), the fields warned
    about, and the error the chain must raise before reading (None: none)."""
    fields = selected_fields(case)
    types = dict(case.types or {})
    warned = set()
    if not fields and case.filter_typename is not None:
        return types or None, warned, None
    for n in fields:
        having = [f.fields[n] for f in case.files if n in f.fields]
        if len(having) < len(case.files) and not case.allow_missing and len(case.files) > 1:
            return None, warned, rntuple.NotFoundError
        if n in types or len(case.files) == 1:
            continue
        one, warn = unified(having)
        if one == NO_ONE_TYPE:
            return None, warned, rntuple.IncompatibleTypeError
        if one is not None:
            types[n] = one
        if warn:
            warned.add(n)
    return types or None, warned, None


# --- reading ----------------------------------------------------------------------------------


class Outcome:
    """A path's result, or the class of the error it raised."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = None if error is None else type(error)
        self.message = "" if error is None else str(error)
        #: every error class the files raised (a chain may raise any of them)
        self.others = set() if error is None else {type(error)}

    def __repr__(self) -> str:
        return f"error {self.error.__name__}: {self.message}" if self.error else "ok"


def attempt(read: Any) -> Outcome:
    """``read()``'s outcome: its value, or the package's error it raised."""
    try:
        return Outcome(read())
    except rntuple.RNTupleError as err:
        return Outcome(error=err)


def plain(value: Any) -> Any:
    """A value compared exactly: floats by their repr (NaN equal to NaN, -0.0 apart from
    0.0), bools apart from ints, NumPy scalars and arrays as Python's."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return plain(rows_of_masked(value) if isinstance(value, np.ma.MaskedArray) else value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or value is np.ma.masked:
        return None
    if isinstance(value, (bool, np.bool_)):
        return ("bool", bool(value))
    if isinstance(value, (float, np.floating)):
        return ("real", repr(float(value)))
    if isinstance(value, (int, np.integer)):
        return int(value)
    return value


def rows_of_masked(array: np.ma.MaskedArray) -> list[Any]:
    return [
        None if m else x for x, m in zip(array.data.tolist(), np.ma.getmaskarray(array).tolist(), strict=True)
    ]


def rows(result: Any, library: str) -> list[dict[str, Any]]:
    """A result of ``library`` as one plain dict per entry (pandas: with its index)."""
    if library == "ak":
        return plain(result.tolist())
    if library == "arrow":
        return plain(result.to_pylist())
    if library == "pd":
        # (pandas shows a missing real as NaN: NaN and None are one here)
        index = result.index.tolist()
        records = plain(result.to_dict("records"))
        out = [{k: None if v == ("real", "nan") else v for k, v in r.items()} for r in records]
        return [{**r, "(index)": i} for r, i in zip(out, index, strict=True)]
    columns = {k: plain(v) for k, v in result.items()}
    n = len(next(iter(columns.values()))) if columns else 0
    return [{k: columns[k][i] for k in columns} for i in range(n)]


def kind_of(result: Any, library: str) -> Any:
    """The types of a result: Awkward's type, Arrow's schema without nullability (files
    read alone differ in it; a chain is nullable where any is), else the columns."""
    if library == "ak":
        return (ak.fields(result), str(result.type).split(" * ", 1)[1])
    if library == "arrow":
        return [(f.name, str(f.type).replace(" not null", "")) for f in result.schema]
    return list(result.columns) if library == "pd" else list(result)


def outermost(paths: list[str]) -> list[str]:
    return [p for p in paths if not any(p.startswith(f"{q}.") for q in paths)]


def single_reads(case: Case, specs: list[str], types: dict[str, Any] | None, library: str) -> Outcome:
    """Each file read alone (``RNTuple.arrays``) with the chain's types: the list of
    results, or the first error. A filter selecting less in one file than in another
    reads, in that file, the paths the chain reads (what any file selects)."""
    selections = []
    if case.filter_name is not None or case.filter_typename is not None:
        for spec in specs:
            nt = rntuple.open(spec)
            selections.append(
                outermost(nt.keys(filter_name=case.filter_name, filter_typename=case.filter_typename))
            )
    union = list(dict.fromkeys(p for s in selections for p in s))
    results, errors, calls = [], [], []
    for i, spec in enumerate(specs):
        nt = rntuple.open(spec)
        present = set(case.files[i].fields)
        exprs = case.expressions
        filters: dict[str, Any] = {"filter_name": case.filter_name, "filter_typename": case.filter_typename}
        if selections and selections[i] != [p for p in union if p.split(".")[0] in present]:
            exprs, filters = [p for p in union if p.split(".")[0] in present], {}
        if isinstance(exprs, list):
            exprs = [e for e in exprs if e not in case.order or e in present]
        mine = {k: v for k, v in (types or {}).items() if k.split(".")[0] in present} or None
        defaults = {
            k: v for k, v in (case.defaults or {}).items() if mine and k.split(".")[0] in mine
        } or None
        call = {"types": mine, "on_overflow": case.on_overflow, "defaults": defaults, **filters}
        calls.append((nt, exprs, call))
        out = attempt(
            lambda nt=nt, exprs=exprs, call=call: nt.arrays(exprs, case.cut, library=library, **call)
        )
        if out.error:
            errors.append(out)
        results.append(out.value)
    if errors:
        # (the chain plans every file before it reads any: any file's error may come first)
        errors[0].others = {e.error for e in errors}
        return errors[0]
    out = Outcome(results)
    out.calls = calls
    return out


def by_field(array: ak.Array) -> list[tuple[str, str]]:
    """Each field's type, by name."""
    return sorted((f, str(array[f].type)) for f in ak.fields(array))


def single_file_differences(case: Case, singles: Outcome) -> list[str]:
    """Each file's other reads against its ``arrays`` (Awkward): ``RNTuple.iterate``
    (every batch of one type), an entry range, and ``virtual=True``."""
    found = []
    for i, ((nt, exprs, call), whole) in enumerate(zip(singles.calls, singles.value, strict=True)):
        want = (kind_of(whole, "ak"), plain(whole.tolist()))
        batches = attempt(
            lambda nt=nt, exprs=exprs, call=call: list(
                nt.iterate(exprs, case.cut, step_size=case.step_size, **call)
            )
        )
        if batches.error:
            found.append(f"file {i} iterate: {batches!r}")
        else:
            kinds = {repr(kind_of(b, "ak")) for b in batches.value if len(b)}
            got = [r for b in batches.value for r in plain(b.tolist())]
            if got != want[1] or len(kinds) > 1 or (kinds and kinds != {repr(want[0])}):
                found.append(f"file {i} iterate: {got} of {kinds} != {want}")
        if case.cut is not None:
            continue  # (an entry range of a cut keeps the range's entries that pass)
        a, b = (min(x, len(whole)) for x in case.entry_range)
        ranged = attempt(
            lambda nt=nt, exprs=exprs, call=call, a=a, b=b: nt.arrays(
                exprs, entry_start=a, entry_stop=b, **call
            )
        )
        if ranged.error or plain(ranged.value.tolist()) != want[1][a:b]:
            found.append(f"file {i} entries {a}:{b}: {ranged!r} {ranged.value} != {want[1][a:b]}")
        if exprs is None or all(nt._lookup(e) is not None for e in exprs):
            virtual = attempt(
                lambda nt=nt, exprs=exprs, call=call: (
                    nt.arrays(
                        filter_name=exprs,
                        virtual=True,
                        **{k: v for k, v in call.items() if k not in ("filter_name", "filter_typename")},
                    )
                    if exprs is not None
                    else nt.arrays(virtual=True, **call)
                )
            )
            # (filter_name selects in the schema's order: fields compared by name)
            if virtual.error or (by_field(virtual.value), plain(virtual.value.tolist())) != (
                by_field(whole),
                want[1],
            ):
                found.append(f"file {i} virtual: {virtual!r} != {want}")
    return found


def column_names(result: Any, library: str) -> list[str]:
    """The columns of a result of ``library``."""
    if library == "ak":
        return list(ak.fields(result))
    if library == "arrow":
        return list(result.column_names)
    return list(result.columns) if library == "pd" else list(result)


def columns_of(case: Case, singles: list[Any], library: str) -> list[str]:
    """The chain's output columns, in order: the expressions', else the fields any file
    gives, in the files' order."""
    seen = [column_names(r, library) for r in singles]
    if isinstance(case.expressions, list) and case.expressions != ["f*"]:
        names = [e.split(".")[0] if e.split(".")[0] in case.order else e for e in case.expressions]
        return [n for n in dict.fromkeys(names) if any(n in s for s in seen) or n in case.order]
    out: list[str] = []
    for s in seen:
        previous = -1
        for c in s:
            if c in out:
                previous = out.index(c)
            else:
                previous += 1
                out.insert(previous, c)
    return out


def expected_awkward(case: Case, singles: list[ak.Array]) -> ak.Array:
    """The single reads concatenated, a column a file lacks None there."""
    columns = columns_of(case, singles, "ak")
    if not columns:
        return ak.Array(ak.contents.RecordArray([], [], length=sum(len(r) for r in singles)))

    def none(n: int) -> ak.Array:  # (an option type even when empty)
        return ak.Array([None] * max(n, 1))[:n]

    filled = [
        ak.zip({c: r[c] if c in ak.fields(r) else none(len(r)) for c in columns}, depth_limit=1)
        for r in singles
    ]
    return ak.concatenate(filled) if len(filled) > 1 else filled[0]


# --- the values written, converted by hand ---------------------------------------------------

CODE_OF = {v: k for k, v in CPP.items()} | {"float32": "f32", "float64": "f64"}


def target_of(name: str) -> tuple[str, str]:
    """``("num" | "opt" | "list", code)`` of a C++ type name of ``types=``."""
    for wrapper, kind in (("std::vector<", "list"), ("std::optional<", "opt")):
        if name.startswith(wrapper):
            return kind, CODE_OF[name[len(wrapper) : -1]]
    return "num", CODE_OF[name]


def by_hand(spec: FieldSpec, value: Any, want: Any, mask: bool, default: dict[str, Any]) -> Any:
    """A written ``value`` of ``spec`` as ``types=`` value ``want`` says (None: as it
    is), converted by this test's rule; a value that does not fit is None (``mask``) or
    raises :class:`Bad`."""

    def one(v: Any, frm: str, to: str) -> Any:
        try:
            return convert(v, frm, to)
        except Bad:
            if mask:
                return None
            raise

    if spec.kind == "str":
        assert want is None, "a string is never read as a number"
        return value
    if want is None:  # as written: its own type
        want = spec.members if spec.kind == "rec" else spec.cpp()
        want = {m: CPP[c] for m, c in want.items()} if spec.kind == "rec" else want
    if spec.kind == "rec":
        return {
            m: one(value[m], spec.members[m], target_of(t)[1]) if m in spec.members else default.get(m)
            for m, t in want.items()
        }
    kind, to = target_of(want)
    if spec.kind == "list":
        return [one(v, spec.code, to) for v in value]
    if kind == "list":  # an optional read as a list of 0 or 1
        return [] if value is None else [one(value, spec.code, to)]
    return one(value, spec.code, to)


def hand_rows(case: Case, types: dict[str, Any] | None, columns: list[str]) -> list[dict[str, Any]]:
    """The entries the chain reads, from the values written (raises :class:`Bad` for a
    value that does not fit without a mask)."""
    out = []
    mask = case.on_overflow == "mask"
    for f in case.files:
        for i in range(sum(f.clusters)):
            row = {}
            for c in columns:
                if c not in f.fields:
                    row[c] = None
                    continue
                default = {
                    k.split(".", 1)[1]: v for k, v in (case.defaults or {}).items() if k.split(".")[0] == c
                }
                row[c] = by_hand(f.fields[c], f.data[c][i], (types or {}).get(c), mask, default)
            out.append(row)
    return plain(out)


# --- the paths ----------------------------------------------------------------------------------


def chain_paths(case: Case, chain_spec: Any, join_specs: list[str], tmp_path: Path) -> dict[str, Outcome]:
    """Every path's reading of the chain, in the case's library (Dask and the join: Awkward)."""
    lib = case.library
    kw = {
        "filter_name": case.filter_name,
        "filter_typename": case.filter_typename,
        "types": case.types,
        "on_overflow": case.on_overflow,
        "defaults": case.defaults,
        "allow_missing": case.allow_missing,
    }
    out = {
        "concatenate": attempt(
            lambda: rntuple.concatenate(chain_spec, case.expressions, case.cut, library=lib, **kw)
        ),
        "iterate": attempt(
            lambda: list(
                rntuple.iterate(
                    chain_spec, case.expressions, case.cut, step_size=case.step_size, library=lib, **kw
                )
            )
        ),
    }
    by_name = case.cut is None and case.filter_name is None and case.filter_typename is None
    by_name = by_name and (
        case.expressions is None or all(e in case.order or e == "f*" for e in case.expressions)
    )
    total = sum(sum(f.clusters) for f in case.files)
    if by_name and case.id % 2 == 0 and total:  # (rntuple.dask refuses files of no entry)
        out["dask"] = attempt(
            lambda: rntuple.dask(
                chain_spec,
                case.expressions,
                step_size=case.step_size,
                types=case.types,
                on_overflow=case.on_overflow,
                defaults=case.defaults,
                allow_missing=case.allow_missing,
            ).compute(scheduler="sync")
        )
    # (a join reads as on disk, or unified; it takes no types=, on_overflow=, allow_missing=)
    plain_case = by_name and case.types is None and case.on_overflow == "raise"
    plain_case = plain_case and not any(set(case.order) - set(f.fields) for f in case.files)
    if plain_case:
        friend = tmp_path / "friend.root"
        with rntuple.recreate(friend) as f:
            f["w"] = {"w": np.arange(total, dtype=np.int64)}
        joined = attempt(lambda: rntuple.join(join_specs, f"{friend}:w", name="friend"))
        if joined.error:
            out["join"] = joined
        else:
            j = joined.value
            fields = case.expressions or [n for n in case.order]
            out["join"] = attempt(
                lambda: j.arrays(fields)[[c for c in ak.fields(j.arrays(fields)) if c != "friend"]]
            )
            a, b = case.entry_range
            out["join range"] = attempt(lambda: (a, j.arrays(fields, entry_start=a, entry_stop=b)))
            if case.id % 4 == 0 and total:  # (Dask refuses a primary of no entry)
                out["join dask"] = attempt(
                    lambda: j.dask(fields, step_size=case.step_size).compute(scheduler="sync")
                )
    return out


def differences(case: Case, tmp_path: Path) -> list[str]:
    """Where a path's result differs from the single-file reads (none, for a pass)."""
    specs, chain_spec, join_specs = written(case, tmp_path)
    types, warned, chain_error = expected_chain(case)
    lib = case.library
    singles = single_reads(case, specs, types, lib)
    singles_ak = singles if lib == "ak" else single_reads(case, specs, types, "ak")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = chain_paths(case, chain_spec, join_specs, tmp_path)
    found = []
    # The warning: once per field whose one type may not hold every value (when read).
    if len(specs) > 1 and chain_error is None:
        warned_fields = [
            str(w.message).split("'")[1] for w in caught if issubclass(w.category, rntuple.PromotionWarning)
        ]
        for n in warned:
            if not any(f == n for f in warned_fields):
                found.append(f"no PromotionWarning for {n!r}: {[str(w.message) for w in caught]}")
        for n in set(warned_fields) - warned:
            found.append(f"a PromotionWarning for {n!r}, whose type holds every value")
    if chain_error is not None or singles.error is not None:
        allowed = {chain_error} if chain_error is not None else set(singles.others)
        if singles_ak.error is not None and chain_error is None:
            allowed |= singles_ak.others
        for name, got in paths.items():
            if name == "join range" and got.error is None and rntuple.ValueOutOfRangeError in allowed:
                continue  # (a range may hold no value that does not fit)
            if got.error not in allowed:
                found.append(f"{name}: {got!r}, expected {sorted(c.__name__ for c in allowed)} ({singles!r})")
        return found
    found.extend(single_file_differences(case, singles_ak))
    expected_ak = expected_awkward(case, singles_ak.value)
    want = {"type": kind_of(expected_ak, "ak"), "rows": plain(expected_ak.tolist())}
    for name, got in paths.items():
        if got.error is not None:
            found.append(f"{name}: {got!r}")
            continue
        found.extend(compare(case, name, got.value, want, singles.value, expected_ak))
    found.extend(by_hand_differences(case, types, expected_ak))
    return found


def compare(
    case: Case, name: str, value: Any, want: dict[str, Any], singles: list[Any], expected_ak: ak.Array
) -> list[str]:
    """``value`` (of path ``name``) against the single reads."""
    lib = "ak" if name.startswith(("dask", "join")) else case.library
    if name == "join range":
        a, value = value
        b = a + len(value)
        expected = plain(expected_ak[a:b].tolist())
        got = plain(value[[c for c in ak.fields(value) if c != "friend"]].tolist())
        return [] if got == expected else [f"{name} {a}:{b}: {got} != {expected}"]
    if name == "iterate":
        batches = value
        kinds = {repr(kind_of(b, lib)) for b in batches if len(b)}
        if len(kinds) > 1:
            return [f"iterate: batches of {len(kinds)} types: {kinds}"]
        if not batches:
            return [] if not want["rows"] else [f"iterate: no batch, expected {len(want['rows'])} entries"]
        got_rows = [r for b in batches for r in rows(b, lib)]
        value = ak.concatenate(batches) if lib == "ak" else batches[0]
    else:
        got_rows = rows(value, lib)
    if lib == "ak":
        out = []
        if got_rows != want["rows"]:
            out.append(f"{name}: values {got_rows} != {want['rows']}")
        if len(expected_ak) and kind_of(value, "ak") != want["type"]:
            out.append(f"{name}: type {kind_of(value, 'ak')} != {want['type']}")
        return out
    expected_rows = []
    offset = 0
    columns = columns_of(case, singles, lib)
    for i, r in enumerate(singles):
        for row in rows(r, lib):
            full = {c: row.get(c) for c in columns}
            if lib == "pd":
                full = {k: None if v == ("real", "nan") else v for k, v in full.items()}
            if lib == "pd":
                full["(index)"] = row["(index)"] + offset
            expected_rows.append(full)
        offset += sum(case.files[i].clusters)
    out = []
    if [dict(sorted(r.items())) for r in got_rows] != [dict(sorted(r.items())) for r in expected_rows]:
        out.append(f"{name} ({lib}): rows {got_rows} != {expected_rows}")
    if lib == "arrow":
        chain = dict(kind_of(value, lib))
        for r in singles:
            for c, t in kind_of(r, lib):
                if chain.get(c) != t:
                    out.append(f"{name}: column {c} is {chain.get(c)}, read alone {t}")
    return out


def by_hand_differences(case: Case, types: dict[str, Any] | None, expected_ak: ak.Array) -> list[str]:
    """The single reads against the values written, converted by hand (fields read by
    name, no expression or cut)."""
    if case.cut is not None or case.filter_name is not None or case.filter_typename is not None:
        return []
    if case.expressions not in (None, ["f*"]) and not all(e in case.order for e in case.expressions):
        return []
    columns = ak.fields(expected_ak)
    try:
        want = hand_rows(case, types, columns)
    except Bad as bad:
        return [f"the single reads hold {bad.args[0]!r}, which does not fit (on_overflow='raise')"]
    got = plain(expected_ak.tolist())
    return [] if got == want else [f"single reads {got} != written values {want}"]


# --- the tests ----------------------------------------------------------------------------------


def uproot_differences(case: Case, specs: list[str]) -> list[str]:
    """Each file read alone as it is, against uproot's reading of it."""
    found = []
    for spec in specs:
        path = spec.rsplit(":", 1)[0]
        ours = plain(rntuple.open(spec).arrays().tolist())
        theirs = plain(uproot.open(path)["t"].arrays().tolist())
        if ours != theirs:
            found.append(f"{path}: ours {ours} != uproot's {theirs}")
    return found


@pytest.mark.parametrize("index", range(N_CASES))
def test_one_result_whatever_the_path(index: int, tmp_path: Path) -> None:
    """Every path reads case ``index`` as the single-file reads do (values, types,
    masks, or the error class), and those read the values written."""
    case = CASES[index]
    with dask.config.set(scheduler="sync"):
        found = differences(case, tmp_path)
    found.extend(uproot_differences(case, [f"{tmp_path}/part{i}.root:t" for i in range(len(case.files))]))
    assert not found, f"case {index}: {case}\n" + "\n".join(found)


def test_the_cases_cover_the_options() -> None:
    """The generated cases hold every kind of case, enough times each."""
    counts = {
        "cases": len(CASES),
        "several files": sum(len(c.files) > 1 for c in CASES),
        "types to unify": sum(bool(expected_chain(c)[0]) and c.types is None for c in CASES),
        "promotions warned": sum(bool(expected_chain(c)[1]) for c in CASES),
        "no one type": sum(expected_chain(c)[2] is rntuple.IncompatibleTypeError for c in CASES),
        "fields missing": sum(any(set(c.order) - set(f.fields) for f in c.files) for c in CASES),
        "types=": sum(c.types is not None for c in CASES),
        "defaults=": sum(c.defaults is not None for c in CASES),
        "masked": sum(c.on_overflow == "mask" for c in CASES),
        "expressions": sum(c.cut is not None or any(" " in e for e in c.expressions or []) for c in CASES),
        "filters": sum(c.filter_name is not None or c.filter_typename is not None for c in CASES),
        "other libraries": sum(c.library != "ak" for c in CASES),
        "uproot's files": sum(f.writer == "uproot" for c in CASES for f in c.files),
        "globs and dicts": sum(c.spec != "list" for c in CASES),
    }
    assert counts["cases"] >= 200, counts
    assert all(v >= 8 for v in counts.values()), counts


# --- the reproducers ------------------------------------------------------------------------------


def _write(path: Path, columns: dict[str, Any]) -> str:
    with rntuple.recreate(path) as f:
        f["t"] = columns
    return f"{path}:t"


def test_a_mask_over_two_files_is_the_mask_of_each(tmp_path: Path) -> None:
    """int64 [2**40, 5] as std::int32_t with on_overflow="mask", the file twice: [None, 5,
    None, 5] from every path (it was [2147483647, 5, 2147483647, 5]); a double 3.5e38 as
    float: None (it was 0.0), or an error naming the file, the entry and the value."""
    spec = _write(tmp_path / "a.root", {"k": np.array([2**40, 5], np.int64), "d": np.array([3.5e38, 1.5])})
    twice = [spec, spec]
    masked = {"types": {"k": "std::int32_t", "d": "float"}, "on_overflow": "mask"}
    alone = rntuple.open(spec).arrays(["k", "d"], **masked)
    assert alone.k.tolist() == [None, 5] and alone.d.tolist() == [None, 1.5]
    assert str(alone.type) == "2 * {k: ?int32, d: ?float32}"
    both = rntuple.concatenate(twice, ["k", "d"], **masked)
    assert both.k.tolist() == [None, 5, None, 5] and both.d.tolist() == [None, 1.5, None, 1.5]
    assert str(both.type) == "4 * {k: ?int32, d: ?float32}"
    batches = list(rntuple.iterate(twice, ["k", "d"], step_size=1, **masked))
    assert [b.k.tolist() for b in batches] == [[None], [5], [None], [5]]
    assert {str(b.type) for b in batches} == {"1 * {k: ?int32, d: ?float32}"}
    lazy = rntuple.dask(twice, ["k", "d"], **masked)
    assert str(lazy.form.type) == "{k: ?int32, d: ?float32}"
    assert lazy.compute(scheduler="sync").tolist() == both.tolist()
    arrow = rntuple.concatenate(twice, ["k"], library="arrow", **masked)
    assert arrow.column("k").to_pylist() == [None, 5, None, 5] and arrow.schema.field("k").nullable
    for read in (
        lambda: rntuple.concatenate(twice, ["d"], types={"d": "float"}),
        lambda: list(rntuple.iterate(twice, ["d"], types={"d": "float"})),
        lambda: rntuple.dask(twice, ["d"], types={"d": "float"}).compute(scheduler="sync"),
    ):
        with pytest.raises(rntuple.ValueOutOfRangeError) as err:
            read()
        assert "a.root" in str(err.value) and "entry 0" in str(err.value) and "3.5e38" in str(err.value)


def test_a_mask_in_one_file_only_makes_the_chain_nullable(tmp_path: Path) -> None:
    """Files whose reads differ in nullability (int64 narrowed and masked; int32 as it
    is): the chain's type is nullable in every batch, the values each file's."""
    wide = _write(tmp_path / "wide.root", {"k": np.array([2**40, 5], np.int64)})
    narrow = _write(tmp_path / "narrow.root", {"k": np.array([7, 8], np.int32)})
    options = {"types": {"k": "std::int32_t"}, "on_overflow": "mask"}
    assert str(rntuple.open(narrow).arrays(**options).type) == "2 * {k: int32}"
    for files in ([narrow, wide], [wide, narrow]):
        expected = [7, 8, None, 5] if files[0] == narrow else [None, 5, 7, 8]
        assert rntuple.concatenate(files, **options).k.tolist() == expected
        types = {str(b.type) for b in rntuple.iterate(files, step_size=1, **options)}
        assert types == {"1 * {k: ?int32}"}
        assert str(rntuple.dask(files, **options).form.type) == "{k: ?int32}"


def test_int64_and_uint64_are_never_silently_inexact(tmp_path: Path) -> None:
    """int64 and uint64 files: read as std::int64_t (NumPy's float64 holds neither 2**62 +
    1 nor 2**64 - 1), with a PromotionWarning naming the field, the file and its type; a
    uint64 value past 2**63 - 1 raises naming the file, entry and value, or is None."""
    signed = _write(tmp_path / "signed.root", {"k": np.array([2**62 + 1, -(2**63)], np.int64)})
    unsigned = _write(tmp_path / "unsigned.root", {"k": np.array([2**64 - 1, 3], np.uint64)})
    files = [signed, unsigned]
    with pytest.warns(rntuple.PromotionWarning) as caught:
        with pytest.raises(rntuple.ValueOutOfRangeError) as err:
            rntuple.concatenate(files)
    message = str(caught[0].message)
    assert "'k'" in message and "std::uint64_t" in message and "unsigned.root" in message
    assert "std::int64_t" in message and "types=" in message and len(caught) == 1
    assert "unsigned.root" in str(err.value) and "entry 0" in str(err.value)
    assert "18446744073709551615" in str(err.value)
    with pytest.warns(rntuple.PromotionWarning):
        masked = rntuple.concatenate(files, on_overflow="mask")
    assert masked.k.tolist() == [2**62 + 1, -(2**63), None, 3]
    assert str(masked.k.type) == "4 * ?int64"
    # types= chooses, by the same rule: every value exact, or an error naming it.
    with pytest.raises(rntuple.ValueOutOfRangeError, match=r"signed.root.*-9223372036854775808 of entry 1"):
        rntuple.concatenate(files, types={"k": "std::uint64_t"})
    with pytest.raises(rntuple.ValueOutOfRangeError, match=r"signed.root.*4611686018427387905 of entry 0"):
        rntuple.concatenate(files, types={"k": "double"})
    as_double = rntuple.concatenate(files, types={"k": "double"}, on_overflow="mask")
    assert as_double.k.tolist() == [None, -(2.0**63), None, 3.0]


def test_integers_and_reals_unify_as_double_checked(tmp_path: Path) -> None:
    """int64 and float32 files: double, with the warning; 2**62 + 1 raises or is None,
    5 and 2**40 read exactly. int32 and float32: double, every value exact, no warning."""
    ints = _write(tmp_path / "ints.root", {"k": np.array([2**62 + 1, 5, 2**40], np.int64)})
    reals = _write(tmp_path / "reals.root", {"k": np.array([1.5, np.nan], np.float32)})
    with pytest.warns(rntuple.PromotionWarning, match=r"'k'.*std::int64_t in .*ints.root \(read as double\)"):
        with pytest.raises(rntuple.ValueOutOfRangeError, match=r"ints.root.*4611686018427387905 of entry 0"):
            rntuple.concatenate([ints, reals])
    with pytest.warns(rntuple.PromotionWarning):
        got = rntuple.concatenate([ints, reals], on_overflow="mask")
    assert [None if v is None or v != v else v for v in got.k.tolist()] == [None, 5.0, 2.0**40, 1.5, None]
    small = _write(tmp_path / "small.root", {"k": np.array([2**31 - 1, -(2**31)], np.int32)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", rntuple.PromotionWarning)
        exact = rntuple.concatenate([small, reals])
    assert exact.k.tolist()[:3] == [2**31 - 1, -(2.0**31), 1.5] and str(exact.k.type) == "4 * float64"


def test_types_on_one_file_follow_the_same_rule(tmp_path: Path) -> None:
    """types={"k": "double"} on one int64 file (ROOT 6.40 refuses an integer as a real):
    read, each value checked to be exact, as unification reads it."""
    spec = _write(tmp_path / "one.root", {"k": np.array([2**53, 2**53 + 1, -7], np.int64)})
    nt = rntuple.open(spec)
    with pytest.raises(rntuple.ValueOutOfRangeError) as err:
        nt.arrays(types={"k": "double"})
    assert (
        "one.root" in str(err.value) and "entry 1" in str(err.value) and "9007199254740993" in str(err.value)
    )
    assert nt.arrays(types={"k": "double"}, on_overflow="mask").k.tolist() == [2.0**53, None, -7.0]
    assert nt.arrays(types={"k": "double"}, entry_start=2).k.tolist() == [-7.0]
    # a real is still never read as an integer (refused before reading, as ROOT)
    reals = _write(tmp_path / "reals.root", {"x": np.array([1.5])})
    with pytest.raises(rntuple.IncompatibleTypeError):
        rntuple.open(reals).arrays(types={"x": "std::int64_t"})


def test_merge_of_int64_and_uint64_never_writes_an_inexact_value(tmp_path: Path) -> None:
    """rntuple.merge unifies as reading does: a uint64 value int64 cannot hold fails the
    merge (nothing written) instead of being written rounded."""
    signed = _write(tmp_path / "signed.root", {"k": np.array([-1], np.int64)})
    unsigned = _write(tmp_path / "unsigned.root", {"k": np.array([2**64 - 1], np.uint64)})
    out = tmp_path / "merged.root"
    with pytest.raises(rntuple.ValueOutOfRangeError, match="18446744073709551615"):
        rntuple.merge([signed.rsplit(":", 1)[0], unsigned.rsplit(":", 1)[0]], out)
    assert not out.exists()
    fits = _write(tmp_path / "fits.root", {"k": np.array([2**63 - 1], np.uint64)})
    result = rntuple.merge([signed.rsplit(":", 1)[0], fits.rsplit(":", 1)[0]], out)
    assert result.fields_converted == [("k", "std::int64_t")]
    assert rntuple.open(f"{out}:t").arrays().k.tolist() == [-1, 2**63 - 1]
