"""ROOT 6.40 as the oracle of schema evolution on read (issue 38, rows E1-E8 of
``../shared/reference/evolution-and-joins.md``).

ROOT writes small RNTuple files (``tests/cxx/evolution_write.hxx``) and reads each field
of :data:`CASES` as another type through its view, ``reader->GetView(field, nullptr,
type)`` (the read path that allows field substitutions, "V" in the reference), entry by
entry (``tests/cxx/evolution_read.hxx``).  Per case the outcome is one of:

- ``value``: every entry read; the values as plain JSON (see ``evolution_read.hxx``:
  floats as C99 hex strings, maps as lists of [key, value], classes as objects);
- ``refused``: ROOT refused the type when the view was made (its message);
- ``range``: the view was made, some entries failed when their page was unpacked (a value
  out of the target's range: ROOT fails every entry of that page).  Range cases are read
  from two files with the same values: one page per column (``narrow``, ``classes``) and
  one cluster per entry (``narrow_clusters``, ``classes_clusters``), where only the bad
  entries fail and the others give ROOT's values;
- ``abort``: ROOT 6.40 kills the process (an assertion); such cases run in a forked child.

Class evolution (row E6) takes two processes: the files are written by one that loaded
version 1 of the classes (``tests/cxx/evolution_classes_v1.hxx``) and read by one that
loaded version 2 (``evolution_classes_v2.hxx``), both compiled with ACLiC (cached, like the
STL dictionaries, in ``rootdump.dictionary_cache_dir()``).  :func:`generate` runs both and
returns the oracle (also written to ``OUTDIR/oracle.json``).

The oracle also lists where every page of each file is (``files[key]["pages"]``: offset
and size), so that a test can overwrite them and see whether a reader touched a page.

Each :class:`Case` also says what our ``RNTuple.arrays(..., types=...)`` is asked
(``types``) and what the reference expects ROOT to do (``expect``); ``tests/test_evolution.py``
checks both.

Command line::

    python tests/evolution_oracle.py OUTDIR      # writes the files and the oracle, prints a table
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import rootdump

CXX_DIR = Path(__file__).resolve().parent / "cxx"
NTUPLE = "t"
ORACLE_JSON = "oracle.json"

#: file key -> (file name, entries, one cluster per entry)
FILES: dict[str, tuple[str, int, bool]] = {
    "scalars": ("evo_scalars.root", 5, False),
    "narrow": ("evo_narrow.root", 10, False),
    "narrow_clusters": ("evo_narrow_clusters.root", 10, True),
    "collections": ("evo_collections.root", 4, False),
    "classes": ("evo_classes.root", 4, False),
    "classes_clusters": ("evo_classes_clusters.root", 4, True),
}
#: A file whose entries share one page per column -> the same values, one cluster per entry.
CLUSTER_TWIN = {"narrow": "narrow_clusters", "classes": "classes_clusters"}

#: STL containers ROOT reads through a collection proxy, which needs a compiled dictionary
#: (the PyPI build ships few): those written, and those the cases read as.
WRITE_DICTIONARIES = [
    "std::set<std::int32_t>",
    "std::multiset<std::int32_t>",
    "std::map<std::int32_t,float>",
]

Target = str | dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One conversion: our ``arrays([field], types=types)`` against ROOT's view of
    ``root_field`` as ``root_type``.

    - ``expect``: what the reference says ROOT does (``value``, ``refused``, ``range``,
      ``abort``); for ``range`` the ``bad_entries`` and the first bad value ``bad_value``
      (our error must name ``bad_path``, the first bad entry and that value);
    - ``names``: what our refusal message must name (the field and both types), or else
      ``inner_names`` (the subfield whose types clash, and its two types);
    - ``unordered``: compare the collections of each entry as multisets (sets, maps,
      unordered containers: ROOT sorts or hashes, we need not);
    - ``option``: the target is nullable, our leaf must be an option type;
    - ``added``: (classes) members not on disk: None in ours, ROOT's default constructor's
      value in ROOT's; ``defaults``: our ``defaults=`` giving ROOT's values;
    - ``members``: (a dotted ``types`` key) the record ROOT's reading is assembled from: member
      -> (subfield, type) read by views of their own;
    - ``root_read``: ``V`` (view) or ``M`` (a model of that one field).
    """

    id: str
    row: str
    file: str
    field: str
    types: dict[str, Target]
    root_field: str
    root_type: str
    expect: str
    bad_entries: tuple[int, ...] = ()
    bad_value: int | float | None = None
    bad_path: str = ""
    names: tuple[str, ...] = ()
    inner_names: tuple[str, ...] = ()
    unordered: bool = False
    option: bool = False
    added: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    members: dict[str, tuple[str, str]] = field(default_factory=dict)
    root_read: str = "V"
    note: str = ""
    #: where ours goes beyond ROOT (the reference's "beyond" rows): ``"read"``, every
    #: value read (``disk_values``, as written by ``evolution_write.hxx``), those of
    #: ``bad_entries`` (``bad_value`` the first) not held exactly by the target: an error
    #: naming them, or None with ``on_overflow="mask"``
    ours: str = ""
    disk_values: tuple[int, ...] = ()


def _short(type_name: str) -> str:
    """A type name for a case id: ``std::``, ``ROOT::``, ``_t`` and spaces dropped."""
    return type_name.replace("std::", "").replace("ROOT::", "").replace("_t", "").replace(" ", "")


def _case(
    row: str,
    file: str,
    fld: str,
    target: Target,
    expect: str,
    *,
    root_type: str | None = None,
    key: str | None = None,
    case_id: str | None = None,
    **kw: Any,
) -> Case:
    """``fld`` of ``file`` read with ``types={key: target}`` (``key``: the field itself, or
    one of its members, dotted), ROOT viewing ``key`` as ``root_type`` (by default the
    target); its id ``ROW-CASE_ID``, by default ``ROW-KEY-as-TARGET``."""
    key = key or fld
    return Case(
        id=f"{row}-{case_id or f'{key}-as-{_short(str(target))}'}",
        row=row,
        file=file,
        field=fld,
        types={key: target},
        root_field=key,
        root_type=root_type or str(target),
        expect=expect,
        **kw,
    )


def _value(row: str, file: str, fld: str, target: str, root_type: str | None = None, **kw: Any) -> Case:
    """A conversion ROOT allows (every value read)."""
    return _case(row, file, fld, target, "value", root_type=root_type, **kw)


def _class_case(
    case_id: str, fld: str, target: Target, root_type: str, expect: str = "value", **kw: Any
) -> Case:
    """An E6 case (``E6-CASE_ID``) of the ``classes`` file, read as ``root_type`` by ROOT."""
    return _case("E6", "classes", fld, target, expect, root_type=root_type, case_id=case_id, **kw)


def _refused(row: str, file: str, fld: str, disk: str, target: str, **kw: Any) -> Case:
    """A conversion ROOT refuses when the view is made; our message names field and types."""
    return _case(row, file, fld, target, "refused", names=(fld, disk, target), **kw)


def _range(
    row: str, fld: str, target: str, bad: tuple[int, ...], value: float, root_type: str | None = None
) -> Case:
    """A narrowing on ``narrow``: the entries ``bad`` are out of the target's range."""
    return _case(
        row,
        "narrow",
        fld,
        target,
        "range",
        root_type=root_type,
        bad_entries=bad,
        bad_value=value,
        bad_path=fld,
    )


def _beyond(
    fld: str,
    disk: str,
    target: str,
    values: tuple[int, ...],
    bad: tuple[int, ...] = (),
    value: int | None = None,
) -> Case:
    """An integer read as a real: ROOT 6.40 refuses it when the view is made; ours reads
    it by the one rule of numbers (``types=`` and many files alike), each value checked to
    read back exactly."""
    return _case(
        "E4",
        "scalars",
        fld,
        target,
        "refused",
        names=(fld, disk, target),
        ours="read",
        disk_values=values,
        bad_entries=bad,
        bad_value=value,
        bad_path=fld,
    )


I32, I64, U8, U16, U32, U64 = (
    "std::int32_t",
    "std::int64_t",
    "std::uint8_t",
    "std::uint16_t",
    "std::uint32_t",
    "std::uint64_t",
)
I8, I16 = "std::int8_t", "std::int16_t"
PAIR_IF = f"std::pair<{I32},float>"
VAR_IF = f"std::variant<{I32},float>"

CASES: list[Case] = [
    # --- E1: widenings, bool <- integers, char <-> int8, integers <- enum ------------------
    _value("E1", "scalars", "f32", "double"),
    *[_value("E1", "scalars", "i8", t) for t in (I16, I32, I64)],
    *[_value("E1", "scalars", "i16", t) for t in (I32, I64)],
    _value("E1", "scalars", "i32", I64),
    *[_value("E1", "scalars", "u8", t) for t in (U16, I16, I32, U64)],
    *[_value("E1", "scalars", "u16", t) for t in (U32, I32, U64)],
    *[_value("E1", "scalars", "u32", t) for t in (I64, U64)],
    *[_value("E1", "scalars", f, "bool") for f in ("i8", "i16", "i32", "i64", "u8", "u64", "ch", "e16")],
    _value("E1", "scalars", "b", I32, note="not in the reference's table: ROOT reads bool as an integer"),
    _value("E1", "scalars", "ch", I8),
    _value("E1", "scalars", "i8", "char"),
    *[_value("E1", "scalars", "ch", t) for t in (I32, I64)],
    *[_value("E1", "scalars", "e16", t) for t in (I16, I32, I64)],
    # enum E16 (int16) <- enum E8 (uint8): ours spells the target enum by its underlying type
    _value("E1", "scalars", "e8", I16, root_type="E16"),
    _value("E1", "scalars", "e8", U16),
    # --- E2: narrowing / sign change: one value out of range, in a page of 10 entries ------
    _range("E2", "i32_i8", I8, (7,), 200),
    _range("E2", "i32_i16", I16, (0,), 40000),
    _range("E2", "i32_u32", U32, (2,), -1),
    _range("E2", "i32_u64", U64, (9,), -7),
    _range("E2", "i32_char", "char", (3,), 128),
    _range("E2", "i64_i32", I32, (1,), 2**31),
    _range("E2", "i64_u64", U64, (6,), -1),
    _range("E2", "u64_i64", I64, (2,), 2**63),
    _range("E2", "u64_u32", U32, (3,), 2**32),
    _range("E2", "u8_i8", I8, (5,), 128),
    _range("E2", "u8_char", "char", (4,), 255),
    _range("E2", "i16_u16", U16, (8,), -1),
    _range("E2", "char_u8", U8, (3,), -1),
    _range("E2", "e16_i8", I8, (1,), 300),
    _range("E2", "e16_char", "char", (0,), 300),
    _range("E2", "e16_u16", U16, (3,), -5),
    # enum E8 (uint8) <- enum E16: enum targets are spelled by their underlying type in ours
    _range("E2", "e16_e8", U8, (2,), 300, root_type="E8"),
    _value("E2", "narrow", "i64_fits", I32),
    _value("E2", "narrow", "u16_fits", U8),
    # --- E3: double -> float: the floating-point class must not change --------------------
    _value("E3", "narrow", "f64_ok", "float"),
    _range("E3", "f64_over", "float", (4,), 3.5e38),
    _range("E3", "f64_negover", "float", (1,), -3.5e38),
    _range("E3", "f64_subnormal", "float", (6,), 1e-40),
    _range("E3", "f64_underflow", "float", (9,), 1e-46),
    # --- E4: refused when the view is made ------------------------------------------------
    _refused("E4", "scalars", "f32", "float", I32),
    _refused("E4", "scalars", "f64", "double", I64),
    _refused("E4", "scalars", "f64", "double", "bool"),
    _refused("E4", "scalars", "f32", "float", "bool"),
    # integers as reals: ROOT refuses; ours reads them, each value checked to be exact
    # (the values of evolution_write.hxx: INT32_MAX is no float, INT64_MAX no double)
    _beyond("i32", I32, "float", (0, -56, 2**31 - 1, -(2**31), 100000), (2,), 2**31 - 1),
    _beyond("i64", I64, "double", (0, -1, 2**63 - 1, -(2**63), 2**40), (2,), 2**63 - 1),
    _beyond("u8", U8, "double", (0, 200, 255, 1, 7)),
    _beyond("b", "bool", "double", (0, 1, 1, 0, 1)),
    _beyond("e16", "E16", "float", (0, 300, -5, 32767, -32768)),
    _refused("E4", "scalars", "i32", I32, "std::byte"),
    _refused("E4", "scalars", "ch", "char", "std::byte"),
    _refused("E4", "scalars", "ch", "char", "std::string"),
    _refused("E4", "collections", "opt_i32", f"std::optional<{I32}>", I32),
    _refused("E4", "collections", "uptr_f32", "std::unique_ptr<float>", "float"),
    _refused("E4", "collections", "vec_f32", "std::vector<float>", "std::optional<float>"),
    _refused("E4", "scalars", "f32", "float", "std::vector<float>"),
    _refused("E4", "scalars", "i32", I32, f"ROOT::RVec<{I32}>"),
    _refused("E4", "collections", "arr_f32", "std::array<float,3>", "std::array<float,4>"),
    _refused("E4", "collections", "bits8", "std::bitset<8>", "std::bitset<16>"),
    _refused("E4", "collections", "bits8", "std::bitset<8>", U8),
    _refused("E4", "collections", "vec_i32", f"std::vector<{I32}>", f"std::set<{I32}>"),
    _refused("E4", "collections", "mset_i32", f"std::multiset<{I32}>", f"std::set<{I32}>"),
    _refused("E4", "collections", "vpair_if", f"std::vector<{PAIR_IF}>", f"std::map<{I32},float>"),
    _refused("E4", "collections", "vpair_if", f"std::vector<{PAIR_IF}>", f"std::set<{PAIR_IF}>"),
    _refused(
        "E4",
        "collections",
        "pair_if",
        PAIR_IF,
        f"std::pair<float,{I32}>",
        inner_names=("pair_if._0", I32, "float"),
    ),
    _refused("E4", "collections", "tup_if", f"std::tuple<{I32},float>", f"std::tuple<{I32},float,{I32}>"),
    _refused(
        "E4",
        "collections",
        "var_if",
        VAR_IF,
        f"std::variant<float,{I32}>",
        inner_names=("var_if._0", I32, "float"),
    ),
    _refused("E4", "collections", "var_if", VAR_IF, f"std::variant<{I32},float,double>"),
    # --- E5: nullable, collection, pair/tuple and variant conversions (elements as E1) -----
    _value("E5", "collections", "atom_i32", I64),
    _value("E5", "scalars", "i32", f"std::atomic<{I64}>"),
    _value("E5", "collections", "atom_i32", f"std::optional<{I32}>", option=True),
    _value("E5", "scalars", "f32", "std::optional<double>", option=True),
    _value("E5", "scalars", "i32", f"std::unique_ptr<{I64}>", option=True),
    _value("E5", "collections", "uptr_f32", "std::optional<double>", option=True),
    _value("E5", "collections", "opt_i32", f"std::unique_ptr<{I64}>", option=True),
    _value("E5", "collections", "opt_f32", "std::vector<double>"),
    _value("E5", "collections", "uptr_i32", f"ROOT::RVec<{I64}>"),
    _value("E5", "collections", "vec_f32", "std::vector<double>"),
    _value("E5", "collections", "vec_i32", f"ROOT::RVec<{I64}>"),
    _value("E5", "collections", "rvec_i16", f"std::vector<{I32}>"),
    _value("E5", "collections", "arr_f32", "std::vector<float>"),
    _value("E5", "collections", "arr_f32", "std::vector<double>"),
    _value("E5", "collections", "arr_f32", "ROOT::RVec<float>"),
    _value("E5", "collections", "arr_f32", "ROOT::RVec<double>"),
    _value("E5", "collections", "vec_i32", f"std::multiset<{I32}>", unordered=True),
    _value("E5", "collections", "rvec_i32", f"std::unordered_multiset<{I64}>", unordered=True),
    _value("E5", "collections", "mset_i32", f"std::multiset<{I64}>", unordered=True),
    _value("E5", "collections", "set_i32", f"std::vector<{I32}>"),
    _value("E5", "collections", "set_i32", f"ROOT::RVec<{I64}>"),
    _value("E5", "collections", "set_i32", f"std::set<{I64}>", unordered=True),
    _value("E5", "collections", "set_i32", f"std::unordered_set<{I32}>", unordered=True),
    _value("E5", "collections", "set_i32", f"std::multiset<{I32}>", unordered=True),
    _value("E5", "collections", "map_if", f"std::vector<{PAIR_IF}>"),
    _value("E5", "collections", "map_if", f"std::vector<std::tuple<{I32},float>>"),
    _value("E5", "collections", "map_if", f"ROOT::RVec<{PAIR_IF}>"),
    _value("E5", "collections", "map_if", f"std::map<{I32},double>", unordered=True),
    _value("E5", "collections", "map_if", f"std::unordered_map<{I32},float>", unordered=True),
    _value("E5", "collections", "map_if", f"std::multimap<{I32},float>", unordered=True),
    _value("E5", "collections", "map_if", f"std::unordered_multimap<{I32},float>", unordered=True),
    _value("E5", "collections", "map_if", f"std::set<{PAIR_IF}>", unordered=True),
    _value("E5", "collections", "vpair_if", f"std::multimap<{I32},float>", unordered=True),
    _value("E5", "collections", "vpair_if", f"std::multiset<{PAIR_IF}>", unordered=True),
    _value("E5", "collections", "pair_if", f"std::tuple<{I64},double>"),
    _value("E5", "collections", "tup_if", f"std::pair<{I64},double>"),
    _value("E5", "collections", "var_if", f"std::variant<{I64},float>"),
    _value("E5", "collections", "var_if", f"std::variant<{I32},double>"),
    # --- E6: classes, version 1 on disk read as version 2 ---------------------------------
    _class_case(
        "evo-add-remove-reorder-widen",
        "evo",
        {"a": I64, "c": I32, "b": "double"},
        "Evo",
        added=("c",),
        defaults={"evo.c": 7},
    ),
    _class_case(
        "evo.a-as-int64",
        "evo",
        I64,
        I64,
        key="evo.a",
        members={"a": ("evo.a", I64), "b": ("evo.b", "float"), "gone": ("evo.gone", I32)},
    ),
    _class_case("member-removed", "remove", {"a": I32, "b": "float"}, "EvoRemove"),
    _class_case("member-added", "add", {"a": I32, "c": I32}, "EvoAdd", added=("c",), defaults={"add.c": 7}),
    _class_case("members-reordered", "reorder", {"d": "double", "a": I32, "b": "float"}, "EvoReorder"),
    _class_case(
        "members-widened-nested",
        "widen",
        {"a": I64, "b": "double", "in": {"x": I64, "y": "double"}},
        "EvoWiden",
    ),
    # narrow.n of entry 2 (100000) is beyond int16: read in the record, or as the member alone.
    *[
        _class_case(
            case_id,
            "narrow",
            target,
            root_type,
            "range",
            key=key,
            bad_entries=(2,),
            bad_value=100000,
            bad_path="narrow.n",
            members={"n": ("narrow.n", I16), "k": ("narrow.k", I32)},
        )
        for case_id, key, target, root_type in (
            ("member-narrowed", None, {"n": I16, "k": I32}, "EvoNarrow"),
            ("narrow.n-as-int16", "narrow.n", I16, I16),
        )
    ],
    _class_case(
        "member-float-to-int",
        "to_int",
        {"f": I32},
        "EvoFloatToInt",
        "refused",
        names=("to_int", "float", I32),
    ),
    _class_case("bases-removed", "bases_removed", {"d": I32}, "EvoBasesRemoved"),
    _class_case("base-added", "base_added", {":_0": {"nb": I32}, "p": I32}, "EvoBaseAdded", added=(":_0",)),
    _class_case("class-renamed", "ren", "Ren2", "Ren2", "refused", names=("ren", "Ren1", "Ren2")),
    # --- E7: ROOT 6.40 aborts; ours must fail cleanly --------------------------------------
    *[
        Case(
            id=f"E7-{fld}-as-enum",
            row="E7",
            file="scalars",
            field=fld,
            types={fld: "E16"},
            root_field=fld,
            root_type="E16",
            expect="abort",
            names=(fld, "E16"),
            note="ours: an enum target is spelled by its underlying type; E16 is no type we know",
        )
        for fld in ("i16", "i32", "b")
    ],
    Case(
        id="E7-absent-field",
        row="E7",
        file="scalars",
        field="nope",
        types={"nope": I32},
        root_field="nope",
        root_type=I32,
        expect="abort",
        names=("nope",),
        root_read="M",
        note="ROOT's view (V) throws `no field named 'nope'`; a model asking for it (M) aborts",
    ),
    # --- E8: a streamer field stays bytes -------------------------------------------------
    Case(
        id="E8-streamer-as-class",
        row="E8",
        file="classes",
        field="st",
        types={"st": "EvoStreamed"},
        root_field="st",
        root_type="EvoStreamed",
        expect="value",
        note="ROOT's view reads it as a streamer field (its value: the bytes and the object's members)",
    ),
]

CASES_BY_ID = {c.id: c for c in CASES}
if len(CASES_BY_ID) != len(CASES):  # (ids are test ids)
    raise RuntimeError("evolution_oracle: duplicate case ids")


# --- the ROOT side ---------------------------------------------------------------------------


def _class_library(version: int) -> Path:
    """Build (ACLiC, cached per header content and ROOT version) the dictionary library of
    ``evolution_classes_v<version>.hxx``; return its path."""
    ROOT = rootdump.load_root()
    text = (CXX_DIR / f"evolution_classes_v{version}.hxx").read_text()
    key = hashlib.sha1(text.encode()).hexdigest()[:12]
    workdir = rootdump.dictionary_cache_dir() / f"evolution-classes-v{version}-{key}"
    header = workdir / f"evolution_classes_v{version}.hxx"
    with rootdump._locked(workdir):
        libs = sorted(workdir.glob(f"evolution_classes_v{version}_hxx*.so"))
        if not libs:
            header.write_text(text)
            if not ROOT.gSystem.CompileMacro(str(header), "kO"):
                raise RuntimeError(f"ACLiC failed to compile {header}")
            libs = sorted(workdir.glob(f"**/evolution_classes_v{version}_hxx*.so"))
        if not libs:
            raise RuntimeError(f"ACLiC left no library in {workdir}")
    return libs[0]


def _load_classes(version: int) -> Any:
    """Load version ``version`` of the classes into this process; return ROOT."""
    ROOT = rootdump._declare()
    lib = _class_library(version)
    if ROOT.gSystem.Load(str(lib)) < 0:
        raise RuntimeError(f"cannot load {lib}")
    names = ["Evo", "EvoWiden", "EvoStreamed", "Ren1" if version == 1 else "Ren2"]
    for name in names:
        cl = ROOT.TClass.GetClass(name)
        if not cl or not cl.HasDictionary():
            raise RuntimeError(f"no dictionary for {name} after loading {lib}")
    return ROOT


def _path(outdir: Path, key: str) -> str:
    return str(outdir / FILES[key][0])


def _write_files(outdir: Path) -> None:
    """(Process 1: version-1 classes.)  Write every file of :data:`FILES` into ``outdir``."""
    ROOT = _load_classes(1)
    rootdump.ensure_stl_dictionaries(WRITE_DICTIONARIES)
    if not ROOT.gInterpreter.Declare((CXX_DIR / "evolution_write.hxx").read_text()):
        raise RuntimeError("failed to declare tests/cxx/evolution_write.hxx in cling")
    gen = ROOT.evolution_oracle
    outdir.mkdir(parents=True, exist_ok=True)
    gen.WriteScalars(_path(outdir, "scalars"), NTUPLE)
    gen.WriteNarrow(_path(outdir, "narrow"), NTUPLE, False)
    gen.WriteNarrow(_path(outdir, "narrow_clusters"), NTUPLE, True)
    gen.WriteCollections(_path(outdir, "collections"), NTUPLE)
    gen.WriteClasses(_path(outdir, "classes"), NTUPLE, False)
    gen.WriteClasses(_path(outdir, "classes_clusters"), NTUPLE, True)


def _proxied(type_name: str) -> list[str]:
    """The proxied STL containers (needing a dictionary) among ``type_name`` and its arguments."""
    found = [type_name] if rootdump._PROXIED_RE.match(type_name) else []
    for arg in rootdump.template_args(type_name):
        found += _proxied(arg)
    return found


def _in_child(read: Callable[[], str]) -> dict[str, Any]:
    """Run ``read`` in a forked child (ROOT may abort the process); its JSON result, or
    ``{"aborted": True, "signal"|"exit": ..., "error": ROOT's last fatal line}``."""
    ROOT = rootdump.load_root()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as out:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: no Python cleanup, no ROOT crash handler (it runs gdb)
            code = 1
            try:
                os.dup2(err.fileno(), 2)
                ROOT.gEnv.SetValue("Root.Stacktrace", "no")
                ROOT.gSystem.ResetSignals()
                out.write(read().encode())
                out.flush()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        text, stderr = out.read().decode(), err.read().decode(errors="replace")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return json.loads(text)
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith("Fatal")] or lines[-1:]
    how = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.WEXITSTATUS(status)}
    return {"aborted": True, **how, "error": fatal[0][:500] if fatal else ""}


def outcome(result: dict[str, Any]) -> str:
    """``value``, ``refused``, ``range`` or ``abort`` for one ROOT reading."""
    if result.get("aborted"):
        return "abort"
    if not result["opened"]:
        return "refused"
    return "range" if any("error" in e for e in result["entries"]) else "value"


def failed_entries(result: dict[str, Any]) -> list[int]:
    """The entries of a reading that failed."""
    return [i for i, e in enumerate(result.get("entries", [])) if "error" in e]


def _read_cases(outdir: Path) -> dict[str, Any]:
    """(Process 2: version-2 classes.)  ROOT's reading of every case; the oracle as a dict."""
    ROOT = _load_classes(2)
    needed = sorted({t for c in CASES for t in _proxied(c.root_type)})
    rootdump.ensure_stl_dictionaries(needed)
    if not ROOT.gInterpreter.Declare((CXX_DIR / "evolution_read.hxx").read_text()):
        raise RuntimeError("failed to declare tests/cxx/evolution_read.hxx in cling")
    ev = ROOT.evolution_oracle

    def read(key: str, fld: str, type_name: str, how: str = "V", fork: bool = False) -> dict[str, Any]:
        def run() -> str:
            if how == "V":
                return str(ev.ReadView(_path(outdir, key), NTUPLE, fld, type_name))
            return str(ev.ReadModel(_path(outdir, key), NTUPLE, fld, type_name))

        return _in_child(run) if fork else json.loads(run())

    cases: dict[str, Any] = {}
    for case in CASES:
        fork = case.expect == "abort"
        main = read(case.file, case.root_field, case.root_type, case.root_read, fork)
        root: dict[str, Any] = {"main": main}
        if case.root_read == "M":  # what the view does instead
            root["view"] = read(case.file, case.root_field, case.root_type, "V", fork)
        twin = CLUSTER_TWIN.get(case.file)
        if twin and case.expect == "range":
            root["clusters"] = read(twin, case.root_field, case.root_type)
        for member, (sub, type_name) in case.members.items():
            root[f"member:{member}"] = read(case.file, sub, type_name)
            if twin and case.expect == "range":
                root[f"clusters:member:{member}"] = read(twin, sub, type_name)
        if case.file == "classes" and case.field == "st":
            root["model"] = read(case.file, case.root_field, case.root_type, "M", fork=True)
        disk = str(ev.OnDiskType(_path(outdir, case.file), NTUPLE, case.root_field))
        cases[case.id] = {
            "case": asdict(case),
            "disk_type": disk,
            "outcome": outcome(root["main"]),
            "root": root,
        }
    files = {
        key: {
            "path": name,
            "entries": entries,
            "cluster_per_entry": per_entry,
            "pages": json.loads(str(ev.PageLocations(_path(outdir, key), NTUPLE))),
        }
        for key, (name, entries, per_entry) in FILES.items()
    }
    return {"root_version": str(ROOT.gROOT.GetVersion()), "ntuple": NTUPLE, "files": files, "cases": cases}


def _run_step(step: str, outdir: Path, timeout: float) -> None:
    """Run ``python evolution_oracle.py <step> OUTDIR`` (one ROOT process per class version)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), step, str(outdir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        output = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        raise RuntimeError(f"evolution_oracle {step} failed (exit {proc.returncode}):\n{output}")


def generate(outdir: Path, timeout: float = 600) -> dict[str, Any]:
    """Write the files into ``outdir`` (version-1 classes), read every case with ROOT
    (version-2 classes), each in a process of its own; return the oracle (``oracle.json``)."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    _run_step("_write", outdir, timeout)
    _run_step("_read", outdir, timeout)
    return json.loads((outdir / ORACLE_JSON).read_text())


def table(oracle: dict[str, Any]) -> str:
    """One line per case: id, on-disk type, target, ROOT's outcome and a summary of it."""
    lines = []
    for cid, entry in oracle["cases"].items():
        case, root = entry["case"], entry["root"]
        main = root["main"]
        if entry["outcome"] == "value":
            what = json.dumps([e["value"] for e in main["entries"]])
        elif entry["outcome"] == "range":
            what = f"entries failing: page layout {failed_entries(main)}"
            if "clusters" in root:
                what += f", cluster per entry {failed_entries(root['clusters'])}"
            what += f": {next(e['error'] for e in main['entries'] if 'error' in e)}"
        else:
            what = main["error"]
        flag = "" if entry["outcome"] == case["expect"] else f"  [reference: {case['expect']}]"
        lines.append(f"{cid}\t{entry['disk_type']} -> {case['root_type']}\t{entry['outcome']}{flag}\t{what}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (``_write`` and ``_read`` are the two ROOT processes)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "_write":
        _write_files(Path(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "_read":
        oracle = _read_cases(Path(argv[1]))
        (Path(argv[1]) / ORACLE_JSON).write_text(json.dumps(oracle, indent=1) + "\n")
        return 0
    args = rootdump.outdir_parser(__doc__).parse_args(argv)
    t0 = time.perf_counter()
    oracle = generate(args.outdir)
    print(f"oracle of {len(oracle['cases'])} cases in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    print(table(oracle))
    return 0


if __name__ == "__main__":
    sys.exit(main())
