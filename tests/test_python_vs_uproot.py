"""``rntuple.open(...).arrays()`` against uproot 5.7's ``arrays()`` (and ROOT's reading).

Acceptance point of issue 4: for every case of the RNTuple Validation Suite and for the
ROOT-generated multi-cluster files, the Awkward Array our Python package reads equals the
one uproot reads from the same file, field by field: same values (``ak.to_list``, floats
compared bit for bit, NaN-aware) and the same Awkward type.

Where the two legitimately differ, the field is listed in :data:`FIELD_RULES` /
:data:`GENERATED_RULES` with one or more *normalisations* from :data:`NORMALISATIONS`; each
states why it is needed and the reason is printed and included in assertion messages.
A listed field must really need its normalisation (the exact comparison must fail), so the
tables cannot go stale. Nothing is skipped silently:

- fields uproot cannot read, and every normalisation that loses information (narrowing
  casts, restricting to the entries uproot reads correctly), are ALSO compared with
  ROOT's own reading: the conformance reference ``read/<case>.json`` or, for generated
  files, PyROOT's rendering (``rootdump.dump``);
- in fact every conformance case is compared with ROOT's JSON entry by entry, whatever
  uproot does (the ``compression.*`` references hold only sums: their entries are ROOT's
  reading of the file, checked against those sums).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import awkward as ak
import conformance_data
import numpy as np
import pyarrow as pa
import pytest
import uproot

import rntuple
import rootdump
import rootgen
from rntuple.errors import UnsupportedError

#: The conformance cases (without the data, one pseudo-case whose tests fail saying so).
CASES = conformance_data.cases()
NTUPLE = "ntpl"

# --------------------------------------------------------------------------- the tables

#: Every legitimate difference between our reading and uproot's, and why it exists.
NORMALISATIONS: dict[str, str] = {
    "char_unsigned": (
        "uproot reads `char` (and enums with an 8-bit signed underlying type) as uint8; we "
        "read int8 as ROOT does (`char` is signed on ROOT's platforms). Ours is cast to uint8."
    ),
    "cardinality_signed": (
        "uproot reads ROOT::RNTupleCardinality<std::uint32_t/uint64_t> as int32/int64; the "
        "C++ type is unsigned, we read uint32/uint64. Ours is cast to uproot's dtype."
    ),
    "real16": (
        "Real16 columns: uproot gives float16, we widen to the field's float/double as ROOT "
        "does. Ours is cast to float16 (exact: the stored values are halves); ours is also "
        "compared with ROOT's JSON at full width."
    ),
    "double_as_float32": (
        "double fields stored as (Split)Real32 / Real32Trunc / Real32Quant: uproot gives "
        "float32, we give the field's double as ROOT does (Real32Quant values are not "
        "float32-representable once dequantised in double). Ours is cast to float32; ours "
        "is also compared bit for bit with ROOT's JSON."
    ),
    "unique_ptr_as_list": (
        "uproot reads std::unique_ptr<T> as a list of 0 or 1 T; we read an option type "
        "(null = empty pointer) as ROOT does. uproot's lists (checked to be 0/1 long) are "
        "turned into options with ak.firsts at the pointer's depth."
    ),
    "variant_unknown": (
        "uproot's std::variant union has an extra first alternative `?unknown` (never "
        "selected in these files); the types are compared with it removed, values exactly."
    ),
    "base_class_flattened": (
        "uproot flattens a base class's members into the derived record (after its own "
        "members); we keep the base as the sub-record `:_0`, the name RNTuple gives it (as "
        "ROOT's JSON does). Ours is flattened the same way before comparing."
    ),
    "variant_first_cluster_only": (
        "uproot 5.7 misreads std::variant values after the first cluster (wrong alternative "
        "or value); only the first cluster is compared with uproot, every entry is compared "
        "with ROOT's own reading (PyROOT)."
    ),
}

#: Conformance fields that need normalisations: {(case, field): [(kind, parameters)]}.
FIELD_RULES: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {
    ("types.atomic", "Char"): [("char_unsigned", {})],
    ("types.fundamental.misc", "Char"): [("char_unsigned", {})],
    ("types.user.enum", "EnumInt8"): [("char_unsigned", {})],
    **{
        ("projections.cardinality", f): [("cardinality_signed", {})]
        for f in (
            "Index32Cardinality",
            "Index64Cardinality",
            "SplitIndex32Cardinality",
            "SplitIndex64Cardinality",
        )
    },
    ("types.fundamental.real", "FloatReal16"): [("real16", {})],
    ("types.fundamental.real", "DoubleReal16"): [("real16", {})],
    ("types.fundamental.real", "DoubleReal32"): [("double_as_float32", {})],
    ("types.fundamental.real", "DoubleSplitReal32"): [("double_as_float32", {})],
    **{
        ("types.fundamental.real32quant", f"DoubleReal32Quant{n}"): [("double_as_float32", {})]
        for n in (1, 20, 32)
    },
    **{
        ("types.fundamental.real32trunc", f"DoubleReal32Trunc{n}"): [("double_as_float32", {})]
        for n in (10, 16, 31)
    },
    **{
        ("types.unique_ptr", f): [("unique_ptr_as_list", {"axis": 1})]
        for f in ("Index32", "Index64", "SplitIndex32", "SplitIndex64", "String", "VectorInt32")
    },
    ("types.unique_ptr", "Variant"): [("unique_ptr_as_list", {"axis": 1}), ("variant_unknown", {})],
    ("types.unique_ptr", "VectorPtr"): [("unique_ptr_as_list", {"axis": 2})],
    ("types.array", "Array_Variant"): [("variant_unknown", {})],
    ("types.pair", "Variant_Vector"): [("variant_unknown", {})],
    ("types.tuple", "Variant"): [("variant_unknown", {})],
    ("types.variant", "f"): [("variant_unknown", {})],
    ("types.variant", "Vector"): [("variant_unknown", {})],
    ("types.user.class", "f"): [("base_class_flattened", {}), ("variant_unknown", {})],
    ("types.user.class", "Vector"): [("base_class_flattened", {}), ("variant_unknown", {})],
}

#: Conformance files uproot cannot read at all, and why; our reading is compared with
#: ROOT's JSON only.
UPROOT_CANNOT_READ: dict[str, str] = {
    "types.optional": (
        "uproot 5.7 raises TypeError building std::optional<std::variant<...>> "
        "(IndexedOptionArray cannot contain a union-type)"
    ),
}

#: Files we must refuse (ROOT refuses them too); uproot fails on them as well.
MUST_REFUSE: dict[str, str] = {
    "structure.feature_flag": "the header sets unknown feature flag 137: a clear error, as ROOT's",
}

#: Fields of the ROOT-generated files (``tests/rootgen.py``) that need normalisations.
GENERATED_RULES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "c": [("char_unsigned", {})],
    "var": [("variant_unknown", {}), ("variant_first_cluster_only", {})],
    "late2_var": [("variant_unknown", {}), ("variant_first_cluster_only", {})],
}

#: Kinds whose normalisation loses information: the field is also compared with ROOT.
LOSSY = {"real16", "double_as_float32", "variant_first_cluster_only"}

# --------------------------------------------------------------------------- comparing


def same(a: Any, b: Any) -> bool:
    """Deep equality of ``ak.to_list`` values; floats bit for bit (sign of zero included),
    NaN equal to NaN, and a bool never equal to a number."""
    if isinstance(a, float) or isinstance(b, float):
        if not (isinstance(a, float) and isinstance(b, float)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def first_mismatch(a: list[Any], b: list[Any]) -> str:
    """The first entry at which two lists of entries differ, for assertion messages."""
    if len(a) != len(b):
        return f"{len(a)} entries vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not same(x, y):
            return f"entry {i}: ours {str(x)[:300]} != {str(y)[:300]}"
    return "equal"


def type_string(array: ak.Array) -> str:
    """The Awkward type of an array as text."""
    return str(array.type)


def _cast(array: ak.Array, dtype: Any) -> ak.Array:
    return ak.values_astype(array, dtype)


def _flatten_base(layout: ak.contents.Content, **kwargs: Any) -> ak.contents.Content | None:
    """``ak.transform`` callback: a record with a base-class member ``:_0`` becomes a record
    of its own members followed by the base's (uproot's layout)."""
    if not isinstance(layout, ak.contents.RecordArray) or ":_0" not in (layout.fields or []):
        return None
    names, contents = [], []
    for name in layout.fields:
        if name != ":_0":
            names.append(name)
            contents.append(ak.transform(_flatten_base, layout.content(name)).layout)
    base = ak.transform(_flatten_base, layout.content(":_0")).layout
    for name in base.fields:
        names.append(name)
        contents.append(base.content(name))
    return ak.contents.RecordArray(contents, names, length=layout.length)


def _firsts(array: ak.Array, axis: int) -> ak.Array:
    counts = ak.num(array, axis=axis)
    assert ak.all(counts <= 1), f"uproot's unique_ptr lists must hold 0 or 1 item, got {counts}"
    return ak.firsts(array, axis=axis)


Normaliser = Callable[[ak.Array, ak.Array, dict[str, Any]], tuple[ak.Array, ak.Array]]

NORMALISERS: dict[str, Normaliser] = {
    "char_unsigned": lambda o, u, p: (_cast(o, np.uint8), u),
    "cardinality_signed": lambda o, u, p: (_cast(o, ak.to_numpy(u).dtype), u),
    "real16": lambda o, u, p: (_cast(o, np.float16), u),
    "double_as_float32": lambda o, u, p: (_cast(o, np.float32), u),
    "unique_ptr_as_list": lambda o, u, p: (o, _firsts(u, p["axis"])),
    "base_class_flattened": lambda o, u, p: (ak.transform(_flatten_base, o), u),
    "variant_unknown": lambda o, u, p: (o, u),  # a type-only difference, see compare_field
    "variant_first_cluster_only": lambda o, u, p: (o[: p["first_cluster"]], u[: p["first_cluster"]]),
}


def compare_field(
    where: str, ours: ak.Array, theirs: ak.Array, rules: list[tuple[str, dict[str, Any]]]
) -> None:
    """Assert that one field reads the same in both, after the listed normalisations; a
    listed field must differ before them (so the tables stay truthful)."""
    reasons = "; ".join(f"[{kind}] {NORMALISATIONS[kind]}" for kind, _ in rules)
    exact_values = same(ak.to_list(ours), ak.to_list(theirs))
    exact = exact_values and type_string(ours) == type_string(theirs)
    if not rules:
        assert exact_values, (
            f"{where}: values differ from uproot's: {first_mismatch(ak.to_list(ours), ak.to_list(theirs))}"
        )
        assert type_string(ours) == type_string(theirs), (
            f"{where}: Awkward type {type_string(ours)} != uproot's {type_string(theirs)}"
        )
        return
    assert not exact, f"{where}: equals uproot's exactly; remove its normalisation ({reasons})"
    print(f"{where}: normalised: {reasons}")
    unknown = any(kind == "variant_unknown" for kind, _ in rules)
    if unknown:
        assert "?unknown, " in type_string(theirs), f"{where}: uproot's union has no `?unknown` alternative"
    for kind, params in rules:
        ours, theirs = NORMALISERS[kind](ours, theirs, params)
    ours_list, theirs_list = ak.to_list(ours), ak.to_list(theirs)
    assert same(ours_list, theirs_list), (
        f"{where}: values differ from uproot's after normalisation ({reasons}): "
        f"{first_mismatch(ours_list, theirs_list)}"
    )
    their_type = type_string(theirs)
    if unknown:
        their_type = their_type.replace("?unknown, ", "")
    assert type_string(ours) == their_type, (
        f"{where}: Awkward type {type_string(ours)} != uproot's {their_type} after normalisation ({reasons})"
    )


# --------------------------------------------------------------------------- ROOT's JSON


def hex_float(x: float) -> str:
    """``printf("%a")`` of a double: ``0x1.8p+3``, ``-0x0p+0``, ``inf``, ``nan``."""
    if math.isnan(x) or math.isinf(x):
        return str(x) if not math.isinf(x) else ("-inf" if x < 0 else "inf")
    text = x.hex()  # e.g. '-0x1.8000000000000p+3'
    mantissa, exponent = text.split("p")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}p{exponent}"


def render(value: Any, field: pa.Field) -> Any:
    """Our ``ak.to_list`` value of ``field`` in the conformance JSON conventions (see
    ``shared/conformance/README.md``): floats as C99 hex strings, maps as objects (kept
    as sorted key/value pairs so duplicate keys survive), bitsets as 0/1 strings (most
    significant bit first), pairs/tuples as lists."""
    if value is None:
        return None
    t = field.type
    cxx = (field.metadata or {}).get(b"rntuple.type", b"").decode()
    if pa.types.is_map(t):
        return _Obj((_key(k), render(v, t.item_field)) for k, v in value)
    if pa.types.is_fixed_size_list(t) and cxx.startswith("std::bitset<"):
        return "".join("1" if bit else "0" for bit in reversed(value))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [render(v, t.value_field) for v in value]
    if pa.types.is_struct(t):
        if isinstance(value, tuple):
            return [render(v, t.field(i)) for i, v in enumerate(value)]
        return _Obj(
            (t.field(i).name, render(value[t.field(i).name], t.field(i))) for i in range(t.num_fields)
        )
    if pa.types.is_union(t):
        return _render_scalar(value)
    return _render_scalar(value)


def _render_scalar(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return hex_float(value)
    if isinstance(value, (list, tuple)):
        return [_render_scalar(v) for v in value]
    return value


def _key(key: Any) -> str:
    return hex_float(key) if isinstance(key, float) else str(key)


class _Obj(tuple):
    """A JSON object as its (key, value) pairs sorted, so key order does not matter and
    duplicate keys (multimaps) survive."""

    def __new__(cls, pairs: Any) -> _Obj:
        pairs = list(pairs)
        if len({k for k, _ in pairs}) == len(pairs):  # (the values decide only between equal keys)
            return super().__new__(cls, sorted(pairs, key=lambda kv: kv[0]))
        return super().__new__(cls, sorted(pairs, key=lambda kv: (kv[0], json.dumps(kv[1], default=list))))


def load_reference(case: str) -> Any:
    """ROOT's reading of a conformance case, objects as :class:`_Obj`."""
    text = conformance_data.read_file(case).read_text()
    return json.loads(text, object_pairs_hook=_Obj)


def sort_lists(value: Any) -> Any:
    """``value`` with every list sorted (unordered sets compare as multisets)."""
    if isinstance(value, _Obj):
        return _Obj((k, sort_lists(v)) for k, v in value)
    if isinstance(value, list):
        return sorted((sort_lists(v) for v in value), key=lambda v: json.dumps(v, default=list))
    return value


def rendered_columns(
    nt: rntuple.RNTuple, array: ak.Array, fields: list[str] | None = None
) -> dict[str, list[Any]]:
    """Our Awkward reading rendered as ROOT's JSON, field by field (in ``fields`` order)."""
    schema = nt.schema
    columns = {}
    for name in fields or list(array.fields):
        field, values = schema.field(name), ak.to_list(array[name])
        # Integers and strings render as themselves (what render() would return).
        plain = pa.types.is_integer(field.type) or pa.types.is_string(field.type)
        columns[name] = values if plain else [render(v, field) for v in values]
    return columns


def ours_rendered(nt: rntuple.RNTuple, array: ak.Array, fields: list[str] | None = None) -> list[_Obj]:
    """Our Awkward reading rendered entry by entry as ROOT's JSON."""
    columns = rendered_columns(nt, array, fields)
    return [_Obj((name, values[i]) for name, values in columns.items()) for i in range(len(array))]


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _compact(value: Any) -> str | None:
    """``value`` as compact JSON text (the form of ROOT's rendering), if it has one."""
    try:
        return _COMPACT.encode(value)
    except (TypeError, ValueError):
        return None


def json_difference(got: Any, expected: Any, path: str = "") -> str | None:
    """The first place two rendered values differ, or None."""
    if isinstance(expected, list) and isinstance(got, list) and not isinstance(expected, _Obj):
        if len(got) != len(expected):
            return f"{path}: {len(got)} items vs ROOT's {len(expected)}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            diff = json_difference(g, e, f"{path}[{i}]")
            if diff:
                return diff
        return None
    if isinstance(expected, _Obj) and isinstance(got, _Obj):
        if [k for k, _ in got] != [k for k, _ in expected]:
            return f"{path}: keys {[k for k, _ in got]} vs ROOT's {[k for k, _ in expected]}"
        for (k, g), (_, e) in zip(got, expected, strict=True):
            diff = json_difference(g, e, f"{path}.{k}")
            if diff:
                return diff
        return None
    if type(got) is type(expected) and got == expected:
        return None
    return f"{path}: ours {str(got)[:200]} vs ROOT's {str(expected)[:200]}"


# --------------------------------------------------------------------------- conformance


def _open(case: str) -> rntuple.RNTuple:
    return rntuple.open(f"{conformance_data.write_file(case)}:{NTUPLE}")


def test_conformance_cases_present() -> None:
    """The suite's 51 cases are all there (so the parametrisation cannot shrink silently)."""
    folder = conformance_data.require()
    assert len(CASES) == 51, f"expected the 51 validation cases in {folder}, found {len(CASES)}"
    listed = {case for case, _ in FIELD_RULES} | set(UPROOT_CANNOT_READ) | set(MUST_REFUSE)
    assert listed <= set(CASES), f"tables name unknown cases: {listed - set(CASES)}"


@pytest.mark.parametrize("case", CASES)
def test_conformance_vs_uproot(case: str) -> None:
    """``arrays()`` equals uproot's ``arrays()`` field by field (see the tables above)."""
    path = conformance_data.write_file(case)
    if case in MUST_REFUSE:
        with pytest.raises(UnsupportedError, match="unsupported format feature: 137"):
            _open(case).arrays()
        assert load_reference(case) == _Obj([("error", "unsupported format feature: 137")])
        with pytest.raises(Exception):  # noqa: B017 - uproot fails in its own way (an AssertionError)
            uproot.open(path)[NTUPLE].arrays()
        print(f"{case}: refused ({MUST_REFUSE[case]})")
        return
    nt = _open(case)
    ours = nt.arrays()
    if case in UPROOT_CANNOT_READ:
        with pytest.raises(TypeError):
            uproot.open(path)[NTUPLE].arrays()
        print(f"{case}: uproot cannot read it ({UPROOT_CANNOT_READ[case]}); ROOT JSON only")
        check_against_root_json(case, nt, ours)
        return
    theirs = uproot.open(path)[NTUPLE].arrays()
    assert list(ours.fields) == list(theirs.fields)
    assert len(ours) == len(theirs) == nt.num_entries
    for name in ours.fields:
        compare_field(f"{case}:{name}", ours[name], theirs[name], FIELD_RULES.get((case, name), []))


#: Entries rendered and compared at a time (``compression.block.big`` has 5 million).
CHUNK_ENTRIES = 200_000


def check_against_root_json(case: str, nt: rntuple.RNTuple, ours: ak.Array) -> None:
    """Our reading equals ROOT's, entry by entry (README rules; unordered sets compare as
    multisets). The ``compression.*`` references hold only sums: their entries are ROOT's
    reading of the file, checked against those sums (:func:`rootdump.reference_entries`)."""
    expected = rootdump.reference_entries(case, conformance_data.require())
    assert len(ours) == len(expected), f"{case}: {len(ours)} entries, ROOT's reading {len(expected)}"
    unordered = case.startswith(("types.unordered_set.", "types.unordered_multiset."))
    for start in range(0, len(expected), CHUNK_ENTRIES):
        columns = rendered_columns(nt, ours[start : start + CHUNK_ENTRIES])
        texts = expected[start : start + CHUNK_ENTRIES]
        entries = [{name: values[i] for name, values in columns.items()} for i in range(len(texts))]
        # Equal text is equal values: one comparison for a chunk whose every entry is
        # rendered as ROOT renders it (the 5 million entries of compression.block.big stay
        # cheap); otherwise entry by entry, value by value where the texts differ.
        if _compact(entries) == "[" + ",".join(texts) + "]":
            continue
        for i, (entry, text) in enumerate(zip(entries, texts, strict=True)):
            if _compact(entry) == text:
                continue
            got, want = _Obj(entry.items()), json.loads(text, object_pairs_hook=_Obj)
            if unordered:
                got, want = sort_lists(got), sort_lists(want)
            diff = json_difference(got, want, f"[{start + i}]")
            assert diff is None, f"{case}: our reading differs from ROOT's JSON: {diff}"


@pytest.mark.parametrize("case", [c for c in CASES if c not in MUST_REFUSE and c != "structure.attributes"])
def test_conformance_vs_root_json(case: str) -> None:
    """``arrays()`` rendered as ROOT renders it equals ``read/<case>.json`` (for
    ``compression.*``, ROOT's reading checked against it), entry by entry: this covers the
    fields uproot cannot read and the lossy normalisations above at full precision.
    (``structure.attributes``' reference is the attribute set, not the entries, which the
    uproot comparison covers.)"""
    nt = _open(case)
    check_against_root_json(case, nt, nt.arrays())


def test_root_json_check_finds_a_changed_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`check_against_root_json` passes on ROOT's entries of a compression case and
    names the entry where one value, or the number of entries, differs (chunks of 10)."""
    case = "compression.algorithms.zstd"
    entries = rootdump.reference_entries(case, conformance_data.require())
    assert len(entries) == 32 and json.loads(entries[17]) == {"Int64": 17}
    nt = _open(case)
    monkeypatch.setattr(sys.modules[__name__], "CHUNK_ENTRIES", 10)
    monkeypatch.setattr(rootdump, "reference_entries", lambda *_: entries)
    check_against_root_json(case, nt, nt.arrays())
    changed = [*entries[:17], '{"Int64":18}', *entries[18:]]
    monkeypatch.setattr(rootdump, "reference_entries", lambda *_: changed)
    with pytest.raises(AssertionError, match=r"\[17\]\.Int64: ours 17 vs ROOT's 18"):
        check_against_root_json(case, nt, nt.arrays())
    monkeypatch.setattr(rootdump, "reference_entries", lambda *_: entries[:31])
    with pytest.raises(AssertionError, match="32 entries, ROOT's reading 31"):
        check_against_root_json(case, nt, nt.arrays())


# --------------------------------------------------------------------------- generated files


@pytest.fixture(scope="module")
def generated_ntuples(generated: dict[str, Path]) -> dict[str, Path]:
    """The ROOT-generated multi-cluster files (``rootgen.SPECS``)."""
    return generated


@pytest.mark.parametrize("filename", [s.filename for s in rootgen.SPECS])
def test_generated_vs_uproot(filename: str, generated_ntuples: dict[str, Path]) -> None:
    """Every field of a multi-cluster ROOT file reads as uproot reads it; the fields uproot
    misreads are also compared with ROOT's reading of every entry."""
    path = generated_ntuples[filename]
    nt = rntuple.open(f"{path}:{rootgen.NTUPLE}")
    clusters = nt.clusters
    assert len(clusters) >= rootgen.SPECS_BY_NAME[filename].min_clusters
    ours = nt.arrays()
    theirs = uproot.open(path)[rootgen.NTUPLE].arrays()
    assert list(ours.fields) == list(theirs.fields) == rootgen.SPECS_BY_NAME[filename].fields
    first_cluster = clusters[0].stop
    for name in ours.fields:
        rules = [(k, {**p, "first_cluster": first_cluster}) for k, p in GENERATED_RULES.get(name, [])]
        compare_field(f"{filename}:{name}", ours[name], theirs[name], rules)
    lossy = [name for name in ours.fields if any(k in LOSSY for k, _ in GENERATED_RULES.get(name, []))]
    reference = rootdump.dump(path, rootgen.NTUPLE, fields=lossy)
    got = ours_rendered(nt, ours, lossy)
    for i, (g, e) in enumerate(zip(got, reference, strict=True)):
        diff = json_difference(g, json.loads(json.dumps(e), object_pairs_hook=_Obj))
        assert diff is None, f"{filename} entry {i}: our reading differs from ROOT's: {diff}"
    assert len(got) == len(reference) == nt.num_entries


@pytest.mark.parametrize("filename", ["multicluster.root", "late_extension.root"])
def test_generated_iterate_and_slices(filename: str, generated_ntuples: dict[str, Path]) -> None:
    """``iterate`` concatenated equals ``arrays()``; entry ranges crossing cluster
    boundaries equal ``arrays()`` sliced and uproot's reading of the same range."""
    path = generated_ntuples[filename]
    nt = rntuple.open(f"{path}:{rootgen.NTUPLE}")
    full = nt.arrays()
    full_list = ak.to_list(full)
    for step in (100, 777, "64 kB"):
        batches = list(nt.iterate(step_size=step))
        assert len(batches) > 1, f"step_size={step!r} must give several batches"
        # Batch by batch: ``ak.concatenate`` of more than ~42 batches fails on the variant
        # fields ("UnionArray cannot have more than 128 content types", an Awkward
        # limitation that uproot's unions share), so the concatenation is checked as
        # consecutive slices of ``arrays()`` that together cover every entry.
        stop = 0
        for batch in batches:
            start, stop = stop, stop + len(batch)
            where = f"step_size={step!r}, batch {start}:{stop}"
            assert type_string(batch) == type_string(full[start:stop]), where
            got = ak.to_list(batch)
            assert same(got, full_list[start:stop]), f"{where}: {first_mismatch(got, full_list[start:stop])}"
        assert stop == len(full) == nt.num_entries, f"step_size={step!r}: batches cover {stop} entries"
    clusters = nt.clusters
    # Ranges starting and ending inside clusters, crossing several cluster boundaries
    # (and, for late_extension.root, the model extensions).
    ranges = [
        (clusters[1].start + 3, clusters[4].stop - 5),
        (clusters[0].start + 1, clusters[-3].start + 2),
        (clusters[len(clusters) // 2].start - 1, clusters[-1].stop - 1),
    ]
    tree = uproot.open(path)[rootgen.NTUPLE]
    for start, stop in ranges:
        part = nt.arrays(entry_start=start, entry_stop=stop)
        assert type_string(part) == type_string(full[start:stop])
        assert same(ak.to_list(part), full_list[start:stop]), f"entries {start}:{stop}"
        theirs = tree.arrays(entry_start=start, entry_stop=stop)
        for name in part.fields:
            rules = [r for r in GENERATED_RULES.get(name, []) if r[0] != "variant_first_cluster_only"]
            if any(k == "variant_unknown" for k, _ in rules):
                # uproot's variants are wrong after the first cluster (see NORMALISATIONS);
                # ours were checked against ROOT above, here only the lengths.
                assert len(theirs[name]) == len(part[name])
                continue
            compare_field(f"{filename}[{start}:{stop}]:{name}", part[name], theirs[name], rules)
