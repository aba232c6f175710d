"""Schema evolution on read against ROOT 6.40 (issue 38, rows E1-E8 of
``../shared/reference/evolution-and-joins.md``): ``RNTuple.arrays(..., types=...)``.

ROOT writes the files and reads every case of ``evolution_oracle.CASES`` through its view
(``tests/evolution_oracle.py``; once per module, about 30 s with its dictionaries cached,
2 min without).  Per case:

- ``test_root_outcome``: ROOT does what the reference says (values, a refusal, per-page
  range errors, or an abort), so the oracle is the one the reference describes;
- ``test_evolution``: ours, against ROOT's reading:

  - allowed (E1, E5, E6, E8): the values ROOT's view gives, entry by entry (floats bit for
    bit, sets, maps and unordered containers as multisets, nullable targets as option
    types, a dict target's members in the dict's order; members not on disk None, or
    ``defaults=``' value, which is ROOT's default constructor's);
  - refused (E4, E6): ``IncompatibleTypeError`` naming the field and both types (or, for a
    pair or variant whose members clash, that member and its two types), also
    from a copy of the file whose pages are overwritten (refused before any page is read);
  - out of range (E2, E3, E6): ``ValueOutOfRangeError`` naming the field path, the entry
    and the value, where ROOT fails the whole page (10 entries) of which one is bad; with
    ``on_overflow="mask"`` that entry is None and the others are what ROOT reads from the
    same values written one cluster per entry;
  - ROOT aborts (E7): ours fails with a typed error, in a child process (no crash);
  - a streamer field (E8) reads as without ``types=`` (today: decoded through the file's
    streamer infos), equal to the object ROOT's view reads.

Also the checking of ``types=`` and ``on_overflow=`` themselves.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import awkward as ak
import evolution_oracle
import numpy as np
import pytest
from evolution_oracle import CASES, Case

import rntuple

NTUPLE = evolution_oracle.NTUPLE


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """ROOT's files and its reading of every case (``RNTUPLE_INTEROP_KEEP=DIR``: in DIR/evolution)."""
    keep = os.environ.get("RNTUPLE_INTEROP_KEEP")
    outdir = Path(keep) / "evolution" if keep else tmp_path_factory.mktemp("evolution")
    data = evolution_oracle.generate(outdir)
    data["dir"] = outdir
    # Copies whose pages are overwritten: a reader that touches a page fails there.
    unreadable = outdir / "unreadable"
    unreadable.mkdir(exist_ok=True)
    for info in data["files"].values():
        content = bytearray((outdir / info["path"]).read_bytes())
        for offset, size in info["pages"]:
            content[offset : offset + size] = b"\xa5" * size
        (unreadable / info["path"]).write_bytes(bytes(content))
    data["unreadable"] = unreadable
    return data


def file_path(oracle: dict[str, Any], key: str) -> Path:
    """The path of file ``key`` of ``evolution_oracle.FILES``."""
    return oracle["dir"] / oracle["files"][key]["path"]


def read(oracle: dict[str, Any], key: str, case: Case, **kwargs: Any) -> ak.Array:
    """Our reading of ``case.field`` of file ``key`` with ``types=case.types``."""
    nt = rntuple.open(f"{file_path(oracle, key)}:{NTUPLE}")
    return nt.arrays([case.field], types=case.types, **kwargs)[case.field]


# --- comparing our values with ROOT's ----------------------------------------------------------


def plain(value: Any) -> Any:
    """Our ``to_list`` value in ROOT's JSON shapes: pairs and tuples (records ``0``, ``1``,
    ... or ``_0``, ``_1``, ...; Python tuples) and map items (``key``/``value``,
    ``first``/``second``) as lists, bytes as lists of ints."""
    if isinstance(value, dict):
        keys = list(value)
        for names in (["key", "value"], ["first", "second"]):
            if sorted(keys) == sorted(names):
                return [plain(value[k]) for k in names]
        if keys and all(re.fullmatch(r"_?\d+", k) for k in keys):
            return [plain(value[k]) for k in sorted(keys, key=lambda k: int(k.lstrip("_")))]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return list(value)
    return value


def sort_key(value: Any) -> Any:
    """An order for the items of an unordered collection (ROOT's hex floats as floats)."""
    if isinstance(value, str):
        try:
            return (0, float.fromhex(value))
        except ValueError:
            return (1, value)
    if isinstance(value, (list, tuple)):
        return (2, tuple(sort_key(v) for v in value))
    if isinstance(value, dict):
        return (3, tuple((k, sort_key(v)) for k, v in sorted(value.items())))
    return (0, value)


def difference(ours: Any, root: Any, where: str = "") -> str | None:
    """Where our (plain) value differs from ROOT's JSON value, or None.

    ROOT's floats are C99 hex strings: ours must be a float of the same bits (NaN equal to
    NaN, -0.0 not equal to 0.0), or, for a std::string, the same string; ROOT's integers
    and booleans must be ours exactly, of the same kind (an int is no bool, a float no
    int)."""
    if root is None or isinstance(root, bool):
        ok = ours is root if root is None else isinstance(ours, bool) and ours == root
        return None if ok else f"{where}: ours {ours!r}, ROOT {root!r}"
    if isinstance(root, int):
        ok = isinstance(ours, int) and not isinstance(ours, bool) and ours == root
        return None if ok else f"{where}: ours {ours!r}, ROOT {root!r}"
    if isinstance(root, str):
        if isinstance(ours, str):  # a std::string (ROOT's floats never equal our strings)
            return None if ours == root else f"{where}: ours {ours!r}, ROOT {root!r}"
        if not isinstance(ours, float):
            return f"{where}: ours {ours!r}, ROOT float {root}"
        want = float.fromhex(root)
        same = (math.isnan(want) and math.isnan(ours)) or (
            ours == want and math.copysign(1.0, ours) == math.copysign(1.0, want)
        )
        return None if same else f"{where}: ours {ours!r} ({ours.hex()}), ROOT {root} ({want!r})"
    if isinstance(root, list):
        if not isinstance(ours, list) or len(ours) != len(root):
            return f"{where}: ours {ours!r}, ROOT {root!r}"
        for k, (a, b) in enumerate(zip(ours, root, strict=True)):
            diff = difference(a, b, f"{where}[{k}]")
            if diff:
                return diff
        return None
    if isinstance(root, dict):
        if not isinstance(ours, dict) or set(ours) != set(root):
            return f"{where}: ours {ours!r}, ROOT {root!r}"
        for k in root:
            diff = difference(ours[k], root[k], f"{where}.{k}")
            if diff:
                return diff
        return None
    raise TypeError(f"unexpected ROOT value {root!r}")


def assert_values(ours: ak.Array, root: list[Any], unordered: bool = False) -> None:
    """Our array equals ROOT's values entry by entry (each entry's items in any order if
    ``unordered``)."""
    got = [plain(v) for v in ak.to_list(ours)]
    assert len(got) == len(root), f"{len(got)} entries, ROOT {len(root)}"
    for entry, (a, b) in enumerate(zip(got, root, strict=True)):
        if unordered and isinstance(a, list) and isinstance(b, list):
            a, b = sorted(a, key=sort_key), sorted(b, key=sort_key)
        diff = difference(a, b, f"entry {entry}")
        assert diff is None, diff


def is_option(array: ak.Array) -> bool:
    """Whether the entries of ``array`` are of an option type."""
    return isinstance(array.type.content, ak.types.OptionType)


def root_values(result: dict[str, Any], missing: Any = "error") -> list[Any]:
    """The values of one ROOT reading; a failed entry is ``missing`` (by default an error)."""
    out = []
    for i, e in enumerate(result["entries"]):
        if "error" in e and missing == "error":
            raise AssertionError(f"ROOT failed entry {i}: {e['error']}")
        out.append(e.get("value", missing))
    return out


def expected_values(entry: dict[str, Any], prefix: str = "", missing: Any = "error") -> list[Any]:
    """ROOT's values for a case: its view of the field, or, for a dotted ``types`` key, the
    record assembled from its views of each member (``prefix``: ``"clusters:"`` for the
    one-cluster-per-entry file)."""
    case, root = entry["case"], entry["root"]
    if not case["members"]:
        return root_values(root[prefix.rstrip(":") or "main"], missing)
    columns = {m: root_values(root[f"{prefix}member:{m}"], missing) for m in case["members"]}
    n = len(next(iter(columns.values())))
    return [{m: columns[m][i] for m in columns} for i in range(n)]


def normalized(text: str) -> str:
    """A message or type name without spaces around ``<`` and ``,`` or before ``>``, and
    ``ROOT::VecOps::RVec`` spelled ``ROOT::RVec``."""
    text = re.sub(r"\s+>", ">", re.sub(r"\s*([<,])\s*", r"\1", text))
    return text.replace("ROOT::VecOps::RVec", "ROOT::RVec")


def unnamed(message: str, names: tuple[str, ...]) -> list[str]:
    """Those of ``names`` (fields or types) that ``message`` does not name as a whole name
    (a name within a longer name or path does not count: ``float`` in ``float_to_int``)."""
    text = normalized(message)
    return [
        name
        for name in names
        if not re.search(rf"(?<![\w.])(?<!::){re.escape(normalized(name))}(?!\w|::)", text)
    ]


def assert_names(message: str, names: tuple[str, ...], inner_names: tuple[str, ...] = ()) -> None:
    """``message`` names each of ``names``, or else each of ``inner_names``."""
    missing = unnamed(message, names)
    if missing and inner_names and not unnamed(message, inner_names):
        return
    assert not missing, f"{missing} not named in: {message}"


#: A number in a message (not the digits of a name such as ``i32``).
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan)")


def assert_value_named(message: str, value: int | float) -> None:
    """``value`` appears in ``message`` as a number (an integer exactly, a float by value)."""
    tokens = NUMBER.findall(message)
    if isinstance(value, int):
        found = any(re.fullmatch(r"[-+]?\d+", t) and int(t) == value for t in tokens)
    else:
        found = any(float(t) == value for t in tokens if t not in ("inf", "nan"))
    assert found, f"value {value!r} not named in: {message}"


def assert_entry_named(message: str, entry: int) -> None:
    """The message names entry ``entry`` (``entry 7``, ``entry #7``, ``entry: 7``)."""
    named = [int(m) for m in re.findall(r"entry\W{0,3}(\d+)", message, re.IGNORECASE)]
    assert named == [entry] or (named and set(named) == {entry}), f"entry {entry} not named in: {message}"


# --- ROOT's side -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_root_outcome(oracle: dict[str, Any], case: Case) -> None:
    """ROOT 6.40 does what the reference says: reads the values, refuses the type when the
    view is made, fails the whole page of an out-of-range value, or aborts."""
    entry = oracle["cases"][case.id]
    root = entry["root"]
    main = root["main"]
    assert entry["outcome"] == case.expect, json.dumps(main)[:2000]
    if case.expect == "range":
        # Per page: every entry of the one page fails; one cluster per entry: the bad ones.
        assert evolution_oracle.failed_entries(main) == list(range(len(main["entries"])))
        assert evolution_oracle.failed_entries(root["clusters"]) == list(case.bad_entries)
        first_error = root["clusters"]["entries"][case.bad_entries[0]]["error"]
        if isinstance(case.bad_value, int):
            assert f"value out of range: {case.bad_value} " in first_error, first_error
        else:
            assert "floating point class mismatch" in first_error, first_error
    if case.expect == "abort":
        assert "violated" in main["error"], main
    if case.root_read == "M":  # the view does not abort: it names the missing field
        missing = f"no field named '{case.field}' in RNTuple '{NTUPLE}'"
        assert root["view"] == {"opened": False, "error": missing}
    if case.row == "E8":
        assert root["model"]["opened"] is False, root["model"]  # "invalid attempt to substitute field st"


def test_root_spot_values(oracle: dict[str, Any]) -> None:
    """A few of ROOT's values checked by hand against the reference's statements."""
    cases = oracle["cases"]

    def values(cid: str) -> list[Any]:
        return root_values(cases[cid]["root"]["main"])

    assert values("E1-ch-as-int32")[1] == -56  # char -56 read as int32
    assert values("E3-f64_ok-as-float")[0] == "0x1.99999ap-4"  # 0.1 -> 0.1f
    assert values("E3-f64_ok-as-float")[1:5] == ["nan", "inf", "-inf", "-0x0p+0"]
    assert values("E1-i32-as-bool") == [False, True, True, True, True]  # nonzero -> true
    assert values("E5-opt_f32-as-vector<double>") == [[], ["0x1p-1"], ["0x1.0624dep-10"], []]  # 1e-3f
    assert [v["c"] for v in values("E6-member-added")] == [7, 7, 7, 7]  # the default constructor's
    # a multimap from a vector of pairs keeps the duplicates
    assert values("E5-vpair_if-as-multimap<int32,float>")[0] == [[1, "0x1p-1"], [1, "0x1p-2"]]


# --- ours ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_evolution(oracle: dict[str, Any], case: Case) -> None:
    """Ours against ROOT's reading of the same file, per the case's kind."""
    entry = oracle["cases"][case.id]
    checks = {"value": check_value, "refused": check_refused, "range": check_range, "abort": check_abort}
    (check_beyond if case.ours == "read" else checks[case.expect])(oracle, case, entry)


def check_value(oracle: dict[str, Any], case: Case, entry: dict[str, Any]) -> None:
    """Allowed: equal to ROOT's view, entry by entry."""
    expected = expected_values(entry)
    got = read(oracle, case.file, case)
    target = case.types.get(case.field)
    if isinstance(target, dict):  # a record: the dict's members, in the dict's order
        assert ak.fields(got) == list(target)
        nested = {k: v for k, v in target.items() if isinstance(v, dict)}
        for member, sub in nested.items():
            if member not in case.added:
                assert ak.fields(got[member]) == list(sub)
    if case.added:
        # Members not on disk: None (an option type), never a made-up value; ROOT gives the
        # default constructor's value, which ``defaults=`` reproduces.
        for member in case.added:
            assert is_option(got[member]), f"{member}: {got[member].type}"
            assert ak.to_list(got[member]) == [None] * len(expected)
        kept = [m for m in target if m not in case.added]
        assert_values(got[kept], [{m: v[m] for m in kept} for v in expected])
        if case.defaults:
            with_defaults = read(oracle, case.file, case, defaults=case.defaults)
            assert_values(with_defaults, expected)
        return
    if case.row == "E8":
        # A streamer field reads as without types= (decoded through the file's streamer
        # infos into the object's members), which is the object ROOT's view reads.
        nt = rntuple.open(f"{file_path(oracle, case.file)}:{NTUPLE}")
        as_today = nt.arrays([case.field])[case.field]
        assert ak.to_list(got) == ak.to_list(as_today)
        expected = [v["object"] for v in expected]
    assert_values(got, expected, unordered=case.unordered)
    if case.option:
        assert is_option(got), str(got.type)


def check_refused(oracle: dict[str, Any], case: Case, entry: dict[str, Any]) -> None:
    """Refused: ``IncompatibleTypeError`` (a ``TypeError``) naming the field and both types,
    before any page is read (the same from a copy of the file whose pages are overwritten)."""
    with pytest.raises(rntuple.IncompatibleTypeError) as info:
        read(oracle, case.file, case)
    assert isinstance(info.value, rntuple.RNTupleError) and isinstance(info.value, TypeError)
    assert_names(str(info.value), case.names, case.inner_names)
    nt = rntuple.open(f"{oracle['unreadable'] / oracle['files'][case.file]['path']}:{NTUPLE}")
    with pytest.raises(rntuple.IncompatibleTypeError):
        nt.arrays([case.field], types=case.types)


def check_range(oracle: dict[str, Any], case: Case, entry: dict[str, Any]) -> None:
    """Out of range: the error names the field path, the bad entry and its value, though
    the page holds good entries too; masked, exactly the bad entries are None."""
    assert case.bad_value is not None
    with pytest.raises(rntuple.ValueOutOfRangeError) as info:
        read(oracle, case.file, case)
    assert isinstance(info.value, rntuple.RNTupleError) and isinstance(info.value, ValueError)
    message = str(info.value)
    assert_names(message, (case.bad_path,))
    assert_entry_named(message, case.bad_entries[0])
    assert_value_named(message, case.bad_value)

    # ROOT's values where it reads them (one cluster per entry), None where it fails.
    expected = expected_values(entry, "clusters:", missing=None)
    if not case.members:
        assert [i for i, v in enumerate(expected) if v is None] == list(case.bad_entries)
    member = case.bad_path.split(".")[-1] if "." in case.bad_path else None
    for key in (case.file, evolution_oracle.CLUSTER_TWIN[case.file]):
        masked = read(oracle, key, case, on_overflow="mask")
        if member is None:
            assert is_option(masked), str(masked.type)
            assert_values(masked, expected)
        else:  # a member of a record: only that leaf becomes None
            assert is_option(masked[member]), str(masked[member].type)
            assert [v[member] is None for v in ak.to_list(masked)] == [
                i in case.bad_entries for i in range(len(expected))
            ]
            assert_values(masked, expected)


def check_beyond(oracle: dict[str, Any], case: Case, entry: dict[str, Any]) -> None:
    """An integer as a real, which ROOT refuses (its outcome checked by
    ``test_root_outcome``): ours reads each value, as written, exactly; a value the real
    type does not hold is an error naming the field, the entry and the value, or None
    with ``on_overflow="mask"`` (the others read)."""
    numpy_type = {"float": np.float32, "double": np.float64}[case.types[case.field]]
    exact = [None if i in case.bad_entries else float(numpy_type(v)) for i, v in enumerate(case.disk_values)]
    # (the expected values are the written integers: a real holds each of the good ones)
    assert all(v is None or int(v) == w for v, w in zip(exact, case.disk_values, strict=True))
    if case.bad_entries:
        assert case.bad_value is not None
        with pytest.raises(rntuple.ValueOutOfRangeError) as info:
            read(oracle, case.file, case)
        message = str(info.value)
        assert_names(message, (case.bad_path, case.types[case.field]))
        assert_entry_named(message, case.bad_entries[0])
        assert_value_named(message, case.bad_value)
        got = read(oracle, case.file, case, on_overflow="mask")
        assert is_option(got), str(got.type)
    else:
        got = read(oracle, case.file, case)
        assert not is_option(got), str(got.type)
    assert (
        str(got.type.content).strip("?") == {"float": "float32", "double": "float64"}[case.types[case.field]]
    )
    assert ak.to_list(got) == exact


CHILD = textwrap.dedent(
    """
    import json, sys
    import rntuple
    path, field, types = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    try:
        rntuple.open(path).arrays([field], types=types)
        print(json.dumps({"raised": None}))
    except Exception as exc:
        print(json.dumps({"raised": [c.__name__ for c in type(exc).__mro__], "message": str(exc)}))
    """
)


def check_abort(oracle: dict[str, Any], case: Case, entry: dict[str, Any]) -> None:
    """Where ROOT aborts: a typed error, in a child process that must not crash."""
    target = f"{file_path(oracle, case.file)}:{NTUPLE}"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, target, case.field, json.dumps(case.types)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["raised"], "no error"
    if case.root_read == "M":  # the field is absent
        assert "NotFoundError" in result["raised"], result
    else:  # an enum type name: we have no dictionaries, enums are spelled as integers
        assert {"IncompatibleTypeError", "InvalidArgumentError"} & set(result["raised"]), result
    assert_names(result["message"], case.names)


@pytest.mark.parametrize("key", list(evolution_oracle.FILES))
def test_unreadable_copies(oracle: dict[str, Any], key: str) -> None:
    """The copies with overwritten pages (for the refusals' "before any page is read") do
    fail when a page is read: ours opens them (the metadata is intact) but reads no field."""
    nt = rntuple.open(f"{oracle['unreadable'] / oracle['files'][key]['path']}:{NTUPLE}")
    for name in nt.keys(recursive=False):
        with pytest.raises(rntuple.RNTupleError):
            nt.arrays([name])


# --- the arguments -------------------------------------------------------------------------------


def test_error_classes() -> None:
    """The two new errors are ``RNTupleError``s and the built-in errors they mean."""
    assert issubclass(rntuple.IncompatibleTypeError, rntuple.RNTupleError)
    assert issubclass(rntuple.IncompatibleTypeError, TypeError)
    assert issubclass(rntuple.ValueOutOfRangeError, rntuple.RNTupleError)
    assert issubclass(rntuple.ValueOutOfRangeError, ValueError)


def test_types_unknown_field(oracle: dict[str, Any]) -> None:
    """``types`` naming a field the file lacks: ``NotFoundError`` suggesting the near one."""
    nt = rntuple.open(f"{file_path(oracle, 'collections')}:{NTUPLE}")
    with pytest.raises(rntuple.NotFoundError) as info:
        nt.arrays(["opt_i32"], types={"vec_f23": "std::vector<double>"})
    assert_names(str(info.value), ("vec_f23", "vec_f32"))


def test_types_unknown_member(oracle: dict[str, Any]) -> None:
    """A dotted ``types`` key naming a member the record lacks: ``NotFoundError``
    suggesting the near one."""
    nt = rntuple.open(f"{file_path(oracle, 'classes')}:{NTUPLE}")
    with pytest.raises(rntuple.NotFoundError) as info:
        nt.arrays(["evo"], types={"evo.gnoe": "std::int64_t"})
    assert_names(str(info.value), ("evo.gnoe",))
    assert "gone" in str(info.value)


@pytest.mark.parametrize("bad", ["std::vector<int", "std::int32_t>", "std::map<int,float", ""])
def test_types_malformed(oracle: dict[str, Any], bad: str) -> None:
    """A malformed type name: ``InvalidArgumentError`` quoting it."""
    nt = rntuple.open(f"{file_path(oracle, 'scalars')}:{NTUPLE}")
    with pytest.raises(rntuple.InvalidArgumentError) as info:
        nt.arrays(["i32"], types={"i32": bad})
    if bad:
        assert bad in str(info.value)


def test_on_overflow_bogus(oracle: dict[str, Any]) -> None:
    """``on_overflow`` other than ``"raise"``/``"mask"``: ``InvalidArgumentError`` naming it."""
    nt = rntuple.open(f"{file_path(oracle, 'narrow')}:{NTUPLE}")
    with pytest.raises(rntuple.InvalidArgumentError) as info:
        nt.arrays(["i32_i8"], types={"i32_i8": "std::int8_t"}, on_overflow="bogus")
    assert "bogus" in str(info.value)


def test_on_overflow_raise_is_default(oracle: dict[str, Any]) -> None:
    """``on_overflow="raise"`` spelled out raises as the default does."""
    nt = rntuple.open(f"{file_path(oracle, 'narrow')}:{NTUPLE}")
    with pytest.raises(rntuple.ValueOutOfRangeError):
        nt.arrays(["i32_i8"], types={"i32_i8": "std::int8_t"}, on_overflow="raise")


@pytest.mark.parametrize(
    ("spelling", "case_id"),
    [("int", "E1-i8-as-int32"), ("long long", "E1-i8-as-int64"), ("short", "E1-i8-as-int16")],
)
def test_types_spellings(oracle: dict[str, Any], spelling: str, case_id: str) -> None:
    """C++ spellings normalized as the writer's ``types=``: ``int`` is ``std::int32_t``."""
    nt = rntuple.open(f"{file_path(oracle, 'scalars')}:{NTUPLE}")
    got = nt.arrays(["i8"], types={"i8": spelling})["i8"]
    assert_values(got, expected_values(oracle["cases"][case_id]))


def test_no_types_is_on_disk(oracle: dict[str, Any]) -> None:
    """Without ``types=`` nothing changes: the narrowing file reads as written (int32)."""
    nt = rntuple.open(f"{file_path(oracle, 'narrow')}:{NTUPLE}")
    got = nt.arrays(["i32_i8"])["i32_i8"]
    assert ak.to_list(got) == [1, -128, 127, 0, -1, 5, -5, 200, 3, 2]


VARIANT_WRITER = r"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <variant>
void evolution_write_variant(const char *path)
{
   auto model = ROOT::RNTupleModel::Create();
   auto v = model->MakeField<std::variant<std::int32_t, float>>("v");
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "t", path);
   for (auto value : std::vector<std::variant<std::int32_t, float>>{1, 2.5f, 3.5f, 300, 4}) {
      *v = value;
      writer->Fill();
   }
}
"""


def test_a_variant_value_out_of_range_names_its_own_entry(tmp_path: Path) -> None:
    """The int32 alternative's 300 is the second int32 value but entry 3: the message
    names entry 3, and masking it leaves the other entries (ROOT fails the page)."""
    import ROOT

    if not hasattr(ROOT, "evolution_write_variant"):
        ROOT.gInterpreter.Declare(VARIANT_WRITER)
    path = tmp_path / "variant.root"
    ROOT.evolution_write_variant(str(path))
    nt = rntuple.open(f"{path}:t")
    with pytest.raises(rntuple.ValueOutOfRangeError) as info:
        nt.arrays(["v"], types={"v": "std::variant<std::int8_t,float>"})
    assert 'field "v": the value 300 of entry 3 is out of the range of std::int8_t' in str(info.value)
    masked = nt.arrays(["v"], types={"v": "std::variant<std::int8_t,float>"}, on_overflow="mask")
    assert masked.v.tolist() == [1, 2.5, 3.5, None, 4]
    wide = nt.arrays(["v"], types={"v": "std::variant<std::int64_t,double>"})
    assert wide.v.tolist() == [1, 2.5, 3.5, 300, 4]
