"""uproot's reading interface (issue 16, points 1 and 4), call by call against uproot 5.7.

Each test makes the same call with ``rntuple`` and with uproot on the same file and
compares the values: on the benchmark's NanoAOD-like file written by ROOT (the
``nanoaod_like`` fixture: RNTuple ``Events`` and the same events as a TTree) and on the
RNTuple Validation Suite. uproot 5.7's RNTuple reading treats ``expressions`` as
``filter_name`` and ignores ``cut`` and ``aliases`` (and its ``how="zip"`` fails), so
expressions, cuts, aliases and zipping are compared with uproot's TTree reading of the
same events, which evaluates them. The documented differences (``python/README.md``,
"Differences from uproot") are asserted as differences. Each bad argument has a test
naming the exception class and its message.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import conformance_data
import numpy as np
import pandas as pd
import pytest
import server_http
import uproot
from test_python_vs_uproot import FIELD_RULES, MUST_REFUSE, UPROOT_CANNOT_READ

import rntuple
from rntuple import InvalidArgumentError, MissingDependencyError, NotFoundError

CASES = conformance_data.cases()
NTUPLE = "ntpl"

#: Conformance files whose ``library="np"`` form uproot 5.7 cannot build, and why.
UPROOT_NUMPY_FAILS: dict[str, str] = {
    "types.user.class": "uproot raises 'Field Vector cannot be converted to NumPy/Pandas'",
    "types.unique_ptr": "every field has a documented difference (test_python_vs_uproot.FIELD_RULES)",
    "types.variant": "every field has a documented difference (test_python_vs_uproot.FIELD_RULES)",
}

# -------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def paths(nanoaod_like: dict[str, Path]) -> dict[str, str]:
    return {"rntuple": str(nanoaod_like["rntuple"]), "ttree": str(nanoaod_like["ttree"])}


@pytest.fixture(scope="module")
def nt(paths: dict[str, str]) -> rntuple.RNTuple:
    return rntuple.open(f"{paths['rntuple']}:Events")


@pytest.fixture(scope="module")
def un(paths: dict[str, str]) -> Any:
    """uproot's RNTuple model of the same file."""
    return uproot.open(f"{paths['rntuple']}:Events")


@pytest.fixture(scope="module")
def ut(paths: dict[str, str]) -> Any:
    """uproot's TTree of the same events (it evaluates expressions, cuts, aliases)."""
    return uproot.open(f"{paths['ttree']}:Events")


def conformance(case: str) -> tuple[rntuple.RNTuple, Any]:
    path = conformance_data.write_file(case)
    return rntuple.open(f"{path}:{NTUPLE}"), uproot.open(f"{path}:{NTUPLE}")


# --------------------------------------------------------------------------- compare


def same_awkward(ours: Any, theirs: Any) -> None:
    """Equal values and the same Awkward type."""
    assert isinstance(ours, ak.Array) and isinstance(theirs, ak.Array)
    assert str(ours.type) == str(theirs.type)
    assert ak.to_list(ours) == ak.to_list(theirs)


def same_records(ours: ak.Array, theirs: ak.Array) -> None:
    """The same fields (in any order: uproot's RNTuple reading orders them by schema)
    with equal values and types."""
    assert sorted(ours.fields) == sorted(theirs.fields)
    assert len(ours) == len(theirs)
    for name in ours.fields:
        same_awkward(ours[name], theirs[name])


def same_numpy(ours: Any, theirs: Any) -> None:
    """Equal NumPy values of the same form: array class, dtype, shape, nested arrays."""
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), (type(ours), theirs)
        assert type(ours) is type(theirs)  # masked or not
        assert ours.shape == theirs.shape
        if theirs.dtype.kind == "U":
            assert ours.dtype.kind == "U"  # the width is the longest string's
        elif theirs.dtype.names:
            assert ours.dtype.names == theirs.dtype.names
        else:
            assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
        if theirs.dtype == object:
            for a, b in zip(ours.ravel(), theirs.ravel(), strict=True):
                same_numpy(a, b)
        elif theirs.dtype.names:
            for name in theirs.dtype.names:
                same_numpy(ours[name], theirs[name])
        else:
            np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs or (ours != ours and theirs != theirs)


def same_dict(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    assert list(ours) == list(theirs)
    for name in theirs:
        same_numpy(ours[name], theirs[name])


def ttree_numpy(array: Any) -> Any:
    """uproot's TTree gives jagged NumPy results as object arrays of arrays; uproot's
    RNTuple form (ours) is the same, so no conversion: this names the comparison."""
    return array


# ------------------------------------------------- field objects: nt[...] (patterns 1-9)


def test_field_object_array_and_typename(nt: rntuple.RNTuple, un: Any) -> None:
    for name in ("Jet_pt", "nJet", "run", "HLT_IsoMu24"):
        ours, theirs = nt[name], un[name]
        assert ours.typename == theirs.typename
        assert ours.name == theirs.name and ours.path == theirs.path
        same_awkward(ours.array(), theirs.array())


def test_field_object_array_numpy_and_range(nt: rntuple.RNTuple, un: Any) -> None:
    same_numpy(nt["nJet"].array(library="np"), un["nJet"].array(library="np"))
    same_numpy(
        nt["Jet_pt"].array(entry_start=100, entry_stop=400, library="np"),
        un["Jet_pt"].array(entry_start=100, entry_stop=400, library="np"),
    )
    same_awkward(nt["Jet_eta"].array(entry_start=-10), un["Jet_eta"].array(entry_start=-10))


def test_field_object_arrays(nt: rntuple.RNTuple, un: Any) -> None:
    same_records(nt["Jet_pt"].arrays(entry_stop=500), un["Jet_pt"].arrays(entry_stop=500))
    assert nt["Jet_pt"].fields == [] == un["Jet_pt"].fields


def test_field_object_pandas_series(nt: rntuple.RNTuple, un: Any) -> None:
    ours = nt["MET_pt"].array(library="pd", entry_start=5, entry_stop=9)
    theirs = un["MET_pt"].array(library="pd", entry_start=5, entry_stop=9)
    np.testing.assert_array_equal(ours.to_numpy(), theirs.to_numpy())
    assert list(ours.index) == list(range(5, 9))


def test_field_objects_of_nested_paths_on_conformance() -> None:
    ours, theirs = conformance("types.user.class")
    for path in ("f.fNested", "f.fNested.fInt", "Vector.fNested", "Vector.fString", "f.fVector"):
        # "f/fNested" and "f\\fNested" are uproot's other spellings of a path.
        for spelling in (path, path.replace(".", "/"), path.replace(".", "\\")):
            assert ours[spelling].path == path
        assert ours[path].typename == theirs[path].typename
        same_awkward(ours[path].array(), theirs[path].array())
        same_records(ours[path].arrays(), theirs[path].arrays())
    assert [f.name for f in ours["f.fNested"].fields] == [f.name for f in theirs["f.fNested"].fields]
    # Documented difference: the base class is the sub-record ":_0" (RNTuple's name for
    # it); uproot flattens its members (fInt) into the derived record.
    assert [f.name for f in ours["f"].fields] == [":_0", "fString", "fVariant", "fVector", "fNested"]
    assert [f.name for f in theirs["f"].fields] == ["fInt", "fString", "fVariant", "fVector", "fNested"]
    assert ours["f.:_0.fInt"].typename == theirs["f.fInt"].typename


def test_field_object_tuple_members_in_uproot_spelling() -> None:
    ours, theirs = conformance("types.pair")
    # uproot spells tuple members "0", "1"; we list them as "_0", "_1" (RNTuple's
    # names) and accept both spellings.
    assert ours["Pair.0.1"].path == "Pair._0._1"
    same_awkward(ours["Pair.0.1"].array(), theirs["Pair.0.1"].array())
    same_awkward(ours["VectorPair.1"].array(), theirs["VectorPair.1"].array())
    same_awkward(ours[0].array(), theirs[0].array())


def test_field_object_bare_member_name() -> None:
    ours, theirs = conformance("types.user.class")
    # As uproot: a bare name finds the first field of that name at any depth.
    assert ours["fString"].path == "f.fString" == theirs["fString"].path
    same_awkward(ours["fString"].array(), theirs["fString"].array())


# --------------------------------------------------------- keys() (patterns 10-17)


def uproot_spelling(key: str) -> str | None:
    """Our key in uproot's spelling: tuple members ``_N`` -> ``N``; base classes
    (``:_0``) are flattened by uproot, so ``x.:_0`` has no counterpart (None) and
    ``x.:_0.m`` is ``x.m``."""
    parts = key.split(".")
    if parts[-1].startswith(":_"):
        return None
    parts = [p for p in parts if not p.startswith(":_")]
    return ".".join(p[1:] if p[:1] == "_" and p[1:].isdigit() else p for p in parts)


def test_keys_and_typenames(nt: rntuple.RNTuple, un: Any) -> None:
    assert nt.keys() == un.keys()
    assert len(nt.keys()) == 105
    assert nt.typenames() == un.typenames()


@pytest.mark.parametrize(
    "arguments",
    [
        {"filter_name": "Jet_*"},
        {"filter_name": "/Muon_(pt|eta)/"},
        {"filter_name": "/^HLT_.*mu/i"},
        {"filter_name": ["nJet", "MET_*"]},
        {"filter_name": lambda name: name.endswith("_phi")},
        {"filter_typename": "std::vector<float>"},
        {"filter_typename": ["bool", "std::uint64_t"]},
        {"filter_name": "Jet_*", "filter_typename": "std::vector<std::int32_t>"},
    ],
    ids=["glob", "regex", "regex-flags", "list", "function", "typename", "typenames", "both"],
)
def test_keys_with_filters(nt: rntuple.RNTuple, un: Any, arguments: dict[str, Any]) -> None:
    ours = nt.keys(**arguments)
    assert ours, arguments
    assert ours == un.keys(**arguments)
    assert nt.typenames(**arguments) == un.typenames(**arguments)


@pytest.mark.parametrize("case", [c for c in CASES if c not in MUST_REFUSE])
def test_keys_on_conformance(case: str) -> None:
    ours, theirs = conformance(case)
    # Documented difference: uproot lists a map's entry members ("m.0" key, "m.1"
    # value, and theirs); we list the map (read whole) without them.
    maps = [k for k, t in theirs.typenames().items() if "map<" in t]
    for arguments in ({}, {"recursive": False}, {"full_paths": False}, {"filter_name": "*Index*"}):
        mine = [uproot_spelling(k) for k in ours.keys(**arguments)]
        expected = theirs.keys(**arguments)
        if maps and arguments.get("full_paths", True):
            members = [k for k in expected if any(k.startswith(f"{m}.") for m in maps)]
            assert members or arguments == {"recursive": False}
            expected = [k for k in expected if k not in members]
        elif maps:
            expected = [k for k in expected if k not in ("0", "1")]
        assert sorted(k for k in mine if k is not None) == sorted(expected), arguments


# ------------------------------------------------ arrays(): selection (patterns 18-27)


def test_arrays_every_field(nt: rntuple.RNTuple, un: Any) -> None:
    same_records(nt.arrays(entry_stop=2000), un.arrays(entry_stop=2000))


def test_arrays_by_names_and_globs(nt: rntuple.RNTuple, un: Any) -> None:
    same_records(nt.arrays(["nJet", "Jet_pt"]), un.arrays(["nJet", "Jet_pt"]))
    # Our order is the order asked for (as uproot's TTree reading); uproot's RNTuple
    # reading orders by schema.
    assert nt.arrays(["Jet_pt", "nJet"], entry_stop=1).fields == ["Jet_pt", "nJet"]
    assert un.arrays(["Jet_pt", "nJet"], entry_stop=1).fields == ["nJet", "Jet_pt"]
    same_records(nt.arrays("Muon_*"), un.arrays("Muon_*"))


@pytest.mark.parametrize(
    "arguments",
    [
        {"filter_name": "Jet_*"},
        {"filter_name": "/^(PV|MET)_/"},
        {"filter_typename": "bool"},
        {"filter_name": "Electron_*", "filter_typename": "std::vector<float>"},
        {"filter_name": "Jet_*", "entry_start": 1000, "entry_stop": 1500},
        {"filter_name": ["run", "event"], "entry_start": -300},
        {"filter_name": "Tau_*", "entry_start": 19990, "entry_stop": 30000},
        {"filter_name": "nJet", "entry_start": 50, "entry_stop": 10},
    ],
    ids=["glob", "regex", "typename", "name+typename", "range", "negative", "clipped", "empty"],
)
def test_arrays_with_filters_and_ranges(nt: rntuple.RNTuple, un: Any, arguments: dict[str, Any]) -> None:
    same_records(nt.arrays(**arguments), un.arrays(**arguments))


def test_arrays_numpy(nt: rntuple.RNTuple, un: Any) -> None:
    names = ["run", "event", "nJet", "Jet_pt", "Muon_charge", "HLT_IsoMu24", "MET_pt"]
    ours = nt.arrays(names, library="np", entry_start=7, entry_stop=3007)
    theirs = un.arrays(names, library="np", entry_start=7, entry_stop=3007)
    # Flat fields are NumPy arrays; jagged ones object arrays of per-entry arrays.
    assert ours["nJet"].dtype == np.int32 and ours["Jet_pt"].dtype == object
    same_dict({k: ours[k] for k in theirs}, theirs)


def test_arrays_numpy_filter_name(nt: rntuple.RNTuple, un: Any) -> None:
    same_dict(
        nt.arrays(filter_name="Photon_*", library="np"), un.arrays(filter_name="Photon_*", library="np")
    )


def test_arrays_pandas(nt: rntuple.RNTuple, un: Any) -> None:
    ours = nt.arrays(["nJet", "MET_pt", "Jet_pt"], library="pd", entry_start=10, entry_stop=200)
    theirs = un.arrays(["nJet", "MET_pt", "Jet_pt"], library="pd", entry_start=10, entry_stop=200)
    assert isinstance(ours, pd.DataFrame)
    assert list(ours.index) == list(theirs.index) == list(range(10, 200))
    for name in theirs.columns:
        same_numpy(ours[name].to_numpy(), theirs[name].to_numpy())


@pytest.mark.parametrize("how", [dict, tuple, list])
@pytest.mark.parametrize("library", ["ak", "np"])
def test_arrays_how(nt: rntuple.RNTuple, un: Any, ut: Any, how: Any, library: str) -> None:
    names = ["nJet", "Jet_pt"]  # in schema order: uproot's RNTuple reading groups so
    ours = nt.arrays(names, library=library, how=how, entry_stop=3000)
    theirs = un.arrays(names, library=library, how=how, entry_stop=3000)
    assert type(ours) is type(theirs) is how
    values = list(ours.values()) if how is dict else list(ours)
    expected = list(theirs.values()) if how is dict else list(theirs)
    if how is dict:
        assert list(ours) == list(theirs)
    for a, b in zip(values, expected, strict=True):
        (same_awkward if library == "ak" else same_numpy)(a, b)


def test_arrays_how_zip(nt: rntuple.RNTuple, ut: Any) -> None:
    # uproot 5.7's RNTuple reading fails with how="zip"; its TTree reading zips.
    names = ["nJet", "Jet_pt", "Jet_eta", "Muon_pt", "Muon_eta", "MET_pt"]
    ours = nt.arrays(names, how="zip", entry_stop=3000)
    theirs = ut.arrays(names, how="zip", entry_stop=3000)
    assert ours.fields == theirs.fields == ["nJet", "MET_pt", "Jet", "Muon"]
    assert ak.to_list(ours) == ak.to_list(theirs)


# --------------------------------- expressions, aliases, cut (patterns 28-38): vs TTree


@pytest.mark.parametrize(
    "arguments",
    [
        {"expressions": "Jet_pt * 2"},
        {"expressions": ["sqrt(MET_pt)", "nJet"]},
        {"expressions": ["abs(Jet_eta)", "log(MET_sumEt)", "where(nJet > 3, 1, 0)"]},
        {"expressions": ["get('MET_pt') + PuppiMET_pt", "Jet_pt / Jet_mass"]},
        {"expressions": ["Jet_pt", "nJet"], "cut": "nJet > 3"},
        {"expressions": ["Jet_pt", "Jet_eta"], "cut": "Jet_pt > 30"},
        {"expressions": ["ptx2", "nJet"], "aliases": {"ptx2": "Jet_pt * 2"}},
        {"expressions": ["a"], "aliases": {"a": "b * 2", "b": "nJet + 1"}, "cut": "b > 5"},
        {"expressions": ["MET_pt"], "cut": "high", "aliases": {"high": "MET_pt > 100"}},
        {"expressions": ["Jet_pt * 2", "MET_pt"], "cut": "nJet >= 2", "entry_start": 500, "entry_stop": 4000},
    ],
    ids=[
        "mul",
        "sqrt",
        "functions",
        "getter",
        "cut",
        "jagged-cut",
        "alias",
        "alias-chain",
        "alias-cut",
        "range",
    ],
)
@pytest.mark.parametrize("library", ["ak", "np"])
def test_expressions_like_uproot_ttree(
    nt: rntuple.RNTuple, ut: Any, arguments: dict[str, Any], library: str
) -> None:
    arguments = {"entry_stop": 5000, **arguments}
    ours = nt.arrays(**arguments, library=library)
    if library == "np" and arguments.get("cut") == "Jet_pt > 30":
        # uproot 5.7's TTree reading cannot apply a jagged cut to NumPy object arrays
        # ("truth value of an array ... is ambiguous"): compare with its Awkward result.
        with pytest.raises(ValueError, match="truth value of an array"):
            ut.arrays(**arguments, library=library)
        theirs_ak = ut.arrays(**arguments)
        assert list(ours) == theirs_ak.fields
        for name in ours:
            assert [x.tolist() for x in ours[name]] == ak.to_list(theirs_ak[name])
        return
    theirs = ut.arrays(**arguments, library=library)
    if library == "ak":
        assert ours.fields == theirs.fields
        for name in theirs.fields:
            assert ak.to_list(ours[name]) == ak.to_list(theirs[name]), name
            assert ours[name].type.content == theirs[name].type.content
    else:
        assert list(ours) == list(theirs)
        for name in theirs:
            same_numpy(ours[name], ttree_numpy(theirs[name]))


def test_expressions_pandas_with_cut(nt: rntuple.RNTuple, ut: Any) -> None:
    ours = nt.arrays(["MET_pt * 2", "nJet"], cut="MET_pt > 100", library="pd", entry_stop=3000)
    theirs = ut.arrays(["MET_pt * 2", "nJet"], cut="MET_pt > 100", library="pd", entry_stop=3000)
    assert list(ours.columns) == list(theirs.columns)
    assert list(ours.index) == list(theirs.index)  # the entries the cut keeps
    np.testing.assert_array_equal(ours["MET_pt * 2"].to_numpy(), theirs["MET_pt * 2"].to_numpy())


def test_expressions_differ_from_uproot_rntuple(nt: rntuple.RNTuple, un: Any) -> None:
    # Documented difference: uproot 5.7's RNTuple reading treats expressions as name
    # patterns and ignores cut; we evaluate them (as uproot's TTree reading does).
    assert un.arrays("Jet_pt * 2", entry_stop=3).fields == []
    assert nt.arrays("Jet_pt * 2", entry_stop=3).fields == ["Jet_pt * 2"]
    assert len(un.arrays(["nJet"], cut="nJet > 3", entry_stop=100)) == 100
    ours = nt.arrays(["nJet"], cut="nJet > 3", entry_stop=100)
    assert len(ours) == int(np.count_nonzero(un["nJet"].array(entry_stop=100, library="np") > 3))


# --------------------------------------------- iterate and concatenate (patterns 39-46)


def test_iterate_step_entries(nt: rntuple.RNTuple, un: Any) -> None:
    ours = list(nt.iterate(filter_name="Jet_*", step_size=4000))
    theirs = list(un.iterate(filter_name="Jet_*", step_size=4000))
    same_records(ak.concatenate(ours), ak.concatenate(theirs))
    # Our batches follow the cluster plan (a cluster larger than the step is cut into
    # steps from its start: here the same 4000-entry batches as uproot's).
    plan = nt.step_ranges(nt.keys(filter_name="Jet_*"), 0, len(nt), 4000)
    assert [len(b) for b in ours] == [b - a for a, b in plan]
    assert [len(b) for b in theirs] == [4000] * 5


def test_iterate_expressions_cut_numpy(nt: rntuple.RNTuple, ut: Any) -> None:
    arguments = {"expressions": ["Jet_pt * 2", "nJet"], "cut": "nJet > 4"}
    batches = list(nt.iterate(**arguments, step_size="1 MB", library="np", how=tuple))
    assert all(isinstance(b, tuple) and len(b) == 2 for b in batches)
    theirs = ut.arrays(**arguments, library="np")
    same_numpy(np.concatenate([b[1] for b in batches]), theirs["nJet"])
    ours_pt = [x for b in batches for x in b[0]]
    assert len(ours_pt) == len(theirs["Jet_pt * 2"])
    for a, b in zip(ours_pt, theirs["Jet_pt * 2"], strict=True):
        same_numpy(a, b)


@pytest.fixture(scope="module")
def two_files(paths: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    out = tmp_path_factory.mktemp("two_files")
    files: dict[str, list[str]] = {"rntuple": [], "ttree": []}
    for kind in files:
        for i in range(2):
            copy = out / f"{kind}_{i}.root"
            shutil.copy(paths[kind], copy)
            files[kind].append(str(copy))
    return files


def test_concatenate_filter_name(two_files: dict[str, list[str]]) -> None:
    specs = [f"{p}:Events" for p in two_files["rntuple"]]
    same_records(
        rntuple.concatenate(specs, filter_name="Muon_*"), uproot.concatenate(specs, filter_name="Muon_*")
    )


def test_concatenate_glob_and_dict_specs(two_files: dict[str, list[str]]) -> None:
    folder = Path(two_files["rntuple"][0]).parent
    glob_spec = f"{folder}/rntuple_*.root:Events"
    theirs = uproot.concatenate(glob_spec, ["nJet", "Jet_pt"])
    same_records(rntuple.concatenate(glob_spec, ["nJet", "Jet_pt"]), theirs)
    as_dict = {p: "Events" for p in two_files["rntuple"]}
    same_records(
        rntuple.concatenate(as_dict, ["nJet", "Jet_pt"]), uproot.concatenate(as_dict, ["nJet", "Jet_pt"])
    )


def test_concatenate_expressions_cut_aliases_pandas(two_files: dict[str, list[str]]) -> None:
    arguments = {"expressions": ["met2", "nJet"], "aliases": {"met2": "MET_pt * 2"}, "cut": "nJet > 5"}
    ours = rntuple.concatenate([f"{p}:Events" for p in two_files["rntuple"]], **arguments, library="pd")
    theirs = uproot.concatenate([f"{p}:Events" for p in two_files["ttree"]], **arguments, library="pd")
    assert list(ours.columns) == list(theirs.columns)
    np.testing.assert_array_equal(ours["met2"].to_numpy(), theirs["met2"].to_numpy())
    np.testing.assert_array_equal(ours["nJet"].to_numpy(), theirs["nJet"].to_numpy())
    # The index numbers the entries the cut keeps, counted over both files (as uproot).
    assert list(ours.index) == list(theirs.index)


def test_module_iterate_over_files(two_files: dict[str, list[str]]) -> None:
    specs = [f"{p}:Events" for p in two_files["rntuple"]]
    ours = list(rntuple.iterate(specs, filter_name="PV_*", step_size=10_000, library="np", how=dict))
    theirs = list(uproot.iterate(specs, filter_name="PV_*", step_size=10_000, library="np", how=dict))
    merged = {k: np.concatenate([b[k] for b in ours]) for k in ours[0]}
    expected = {k: np.concatenate([b[k] for b in theirs]) for k in theirs[0]}
    same_dict(merged, expected)


# ---------------------------------------------------------- open specs (patterns 47-50)


def test_open_specs(paths: dict[str, str]) -> None:
    expected = uproot.open({paths["rntuple"]: "Events"}).arrays(["MET_pt"])
    same_records(rntuple.open({paths["rntuple"]: "Events"}).arrays(["MET_pt"]), expected)
    same_records(rntuple.open(f"{paths['rntuple']}:Events").arrays(["MET_pt"]), expected)
    same_records(rntuple.open(Path(paths["rntuple"]))["Events"].arrays(["MET_pt"]), expected)


@pytest.fixture(scope="module")
def nginx(two_files: dict[str, list[str]]) -> Iterator[server_http.Server]:
    with server_http.serving(Path(two_files["rntuple"][0]).parent) as server:
        yield server


def test_open_url_over_http(nginx: server_http.Server, two_files: dict[str, list[str]]) -> None:
    url = nginx.url(Path(two_files["rntuple"][0]).name)
    ours = rntuple.open(f"{url}:Events").arrays(["nJet", "Jet_pt"], cut="nJet > 3", entry_stop=2000)
    theirs = uproot.open(f"{url}:Events").arrays(["nJet", "Jet_pt"], entry_stop=2000)
    mask = ak.to_numpy(theirs.nJet > 3)
    same_records(ours, theirs[mask])
    same_records(
        rntuple.concatenate({url: "Events"}, ["MET_pt"]), uproot.concatenate({url: "Events"}, ["MET_pt"])
    )


# ------------------------------------------------ the conformance files, library="np"


NUMPY_CASES = [
    c for c in CASES if c not in MUST_REFUSE and c not in UPROOT_CANNOT_READ and c not in UPROOT_NUMPY_FAILS
]


@pytest.mark.parametrize("case", NUMPY_CASES)
def test_numpy_form_on_conformance(case: str) -> None:
    ours, theirs = conformance(case)
    # Fields with documented differences (test_python_vs_uproot.FIELD_RULES: char as
    # int8, Real16 widened, unique_ptr as options, ...) are compared there.
    names = [n for n in theirs.keys(recursive=False) if (case, n) not in FIELD_RULES]
    if not names:
        pytest.fail(f"{case}: every field has a documented difference; list the case instead")
    mine = ours.arrays(names, library="np")
    expected = theirs.arrays(filter_name=names, library="np")
    assert sorted(mine) == sorted(expected)
    for name in expected:
        same_numpy(mine[name], expected[name])


# -------------------------------------------------------------- bad arguments (point 4)


BAD_ARRAYS_ARGUMENTS: list[tuple[dict[str, Any], str]] = [
    ({"entry_start": 1.5}, "entry_start must be an integer or None, not 1.5 (float)"),
    ({"entry_start": True}, "entry_start must be an integer or None, not True (bool)"),
    ({"entry_stop": "10"}, "entry_stop must be an integer or None, not '10' (str)"),
    ({"entry_stop": 2.0}, "entry_stop must be an integer or None, not 2.0 (float)"),
    ({"library": "numpy2"}, "library must be one of 'ak', 'np', 'pd', 'pl' or 'arrow', not 'numpy2' (str)"),
    ({"library": None}, "library must be one of 'ak', 'np', 'pd', 'pl' or 'arrow', not None (NoneType)"),
    ({"how": "merge"}, "how must be None, dict, tuple, list or 'zip' for library='ak', not 'merge' (str)"),
    ({"how": ()}, "how must be None, dict, tuple, list or 'zip' for library='ak', not () (tuple)"),
    (
        {"how": "zip", "library": "np"},
        "how must be None, dict, tuple, list for library='np', not 'zip' (str)",
    ),
    (
        {"filter_name": 3},
        "filter_name must be None, a glob or name, a regular expression '/pattern/flags', "
        "a function of the name, or a list of these, not 3 (int)",
    ),
    (
        {"filter_name": b"Jet_*"},
        "filter_name must be None, a glob or name, a regular expression '/pattern/flags', "
        "a function of the name, or a list of these, not b'Jet_*' (bytes)",
    ),
    (
        {"filter_typename": ["float", 4]},
        "filter_typename must be None, a glob or name, a regular expression '/pattern/flags', "
        "a function of the name, or a list of these, not ['float', 4] (list)",
    ),
    (
        {"filter_name": "/Jet_(/"},
        "filter_name: bad regular expression '/Jet_(/': missing ), unterminated subpattern*",
    ),
    ({"expressions": 5}, "expressions must be a string, a list of strings or None, not 5 (int)"),
    (
        {"expressions": ["nJet", 3]},
        "expressions must be a string, a list of strings or None, not ['nJet', 3] (list)",
    ),
    ({"expressions": "nJet >"}, "expressions: 'nJet >' is not a valid expression: invalid syntax"),
    ({"cut": 3}, "cut must be an expression string or None, not 3 (int)"),
    ({"cut": ["nJet > 3"]}, "cut must be an expression string or None, not ['nJet > 3'] (list)"),
    ({"aliases": ["a"]}, "aliases must be a dict of names to expression strings, not ['a'] (list)"),
    ({"aliases": {"a": 1}}, "aliases must be a dict of names to expression strings, not {'a': 1} (dict)"),
    (
        {"expressions": ["a"], "aliases": {"a": "b", "b": "a"}},
        "aliases refer to each other in a cycle: b -> a -> b",
    ),
]


@pytest.mark.parametrize(("arguments", "message"), BAD_ARRAYS_ARGUMENTS, ids=lambda x: None)
def test_bad_arrays_argument(nt: rntuple.RNTuple, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        nt.arrays(**{"entry_stop": 10, **arguments})
    if message.endswith("*"):  # the end is Python's own wording, which varies
        assert str(raised.value).startswith(message[:-1])
    else:
        assert str(raised.value) == message
    assert isinstance(raised.value, ValueError)


STEP_SIZE_TYPE = "step_size must be a number of entries (an integer) or a memory size such as '100 MB', not "


@pytest.mark.parametrize(
    ("step_size", "message"),
    [
        (
            1.5,
            STEP_SIZE_TYPE + "1.5 (float)",
        ),
        (
            True,
            STEP_SIZE_TYPE + "True (bool)",
        ),
        (-5, "step_size must be positive, not -5"),
        (0, "step_size must be positive, not 0"),
        (
            "lots",
            "step_size: cannot read 'lots' as a size: give bytes as an integer or a number with a unit "
            "(B, kB, MB, GB, KiB, MiB, GiB)",
        ),
    ],
)
def test_bad_step_size(nt: rntuple.RNTuple, paths: dict[str, str], step_size: Any, message: str) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        next(nt.iterate(["nJet"], step_size=step_size))
    assert str(raised.value) == message
    with pytest.raises(InvalidArgumentError) as raised:
        next(rntuple.iterate(f"{paths['rntuple']}:Events", ["nJet"], step_size=step_size))
    assert str(raised.value) == message


def test_bad_keys_arguments(nt: rntuple.RNTuple) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^recursive must be True or False, not 'yes'$"):
        nt.keys(recursive="yes")
    with pytest.raises(InvalidArgumentError, match=r"^full_paths must be True or False, not 1$"):
        nt.keys(full_paths=1)
    with pytest.raises(InvalidArgumentError, match=r"^filter_typename must be None, .* not 2.5 \(float\)$"):
        nt.keys(filter_typename=2.5)


def test_unknown_names_are_not_found(nt: rntuple.RNTuple) -> None:
    with pytest.raises(NotFoundError) as raised:
        nt["Jet_ptt"]
    assert str(raised.value) == (
        "RNTuple 'Events' has no field 'Jet_ptt'; did you mean 'Jet_pt', 'Jet_phi', 'Jet_eta'?"
    )
    with pytest.raises(NotFoundError) as raised:
        nt.arrays(["Jet_ptt"])
    assert str(raised.value).startswith(
        "RNTuple 'Events' has no field or alias 'Jet_ptt' (in expressions 'Jet_ptt')"
    )
    with pytest.raises(NotFoundError) as raised:
        nt.arrays(["Jet_pt * weight"])
    assert str(raised.value).startswith(
        "RNTuple 'Events' has no field or alias 'weight' (in expressions 'Jet_pt * weight')"
    )
    with pytest.raises(NotFoundError) as raised:
        nt.arrays(["nJet"], cut="nJets > 3")
    assert str(raised.value) == (
        "RNTuple 'Events' has no field or alias 'nJets' (in cut 'nJets > 3'); "
        "did you mean 'nJet', 'Jet_mass'?"
    )
    with pytest.raises(NotFoundError, match=r"^no field of RNTuple 'Events' matches 'Nothing_\*'$"):
        nt.arrays("Nothing_*")
    with pytest.raises(NotFoundError, match=r"^RNTuple 'Events' has 105 top-level fields, no field 105$"):
        nt[105]
    with pytest.raises(InvalidArgumentError, match=r"^a field is named by a string or an integer, not 1.5$"):
        nt[1.5]


def test_bad_field_object_arguments(nt: rntuple.RNTuple) -> None:
    with pytest.raises(
        InvalidArgumentError, match=r"^entry_start must be an integer or None, not 1.5 \(float\)$"
    ):
        nt["Jet_pt"].array(entry_start=1.5)
    with pytest.raises(InvalidArgumentError, match=r"^library must be one of .* not 'root' \(str\)$"):
        nt["Jet_pt"].array(library="root")
    with pytest.raises(
        InvalidArgumentError, match=r"^how must be None, dict, tuple, list .* not 'x' \(str\)$"
    ):
        nt["Jet_pt"].arrays(how="x")


def test_bad_open_specs(paths: dict[str, str]) -> None:
    with pytest.raises(InvalidArgumentError) as raised:
        rntuple.open([paths["rntuple"]])
    assert str(raised.value) == (
        "open takes a path, URL or {path: name} dict, not list; "
        "read many files with rntuple.iterate or rntuple.concatenate"
    )
    with pytest.raises(
        InvalidArgumentError, match=r"^open takes one file: a dict spec must have one entry, not 2"
    ):
        rntuple.open({paths["rntuple"]: "Events", paths["ttree"]: "Events"})
    folder = Path(paths["rntuple"]).parent
    with pytest.raises(
        InvalidArgumentError, match=r"^open takes one file, not the pattern '.*\*\.root:Events'"
    ):
        rntuple.open(f"{folder}/*.root:Events")


def test_bad_dask_arguments(paths: dict[str, str]) -> None:
    spec = f"{paths['rntuple']}:Events"
    with pytest.raises(InvalidArgumentError) as raised:
        rntuple.dask(spec, ["nJet"], step_size=1.5)
    assert str(raised.value) == STEP_SIZE_TYPE + "1.5 (float)"
    with pytest.raises(InvalidArgumentError) as raised:
        rntuple.dask(spec, ["nJet"], report="yes")
    assert str(raised.value) == "report must be True or False, not 'yes'"


def test_bad_concatenate_arguments(paths: dict[str, str]) -> None:
    spec = f"{paths['rntuple']}:Events"
    with pytest.raises(InvalidArgumentError, match=r"^library must be one of .* not 'xy' \(str\)$"):
        rntuple.concatenate(spec, ["nJet"], library="xy")
    with pytest.raises(
        InvalidArgumentError, match=r"^cut must be an expression string or None, not 1 \(int\)$"
    ):
        rntuple.concatenate(spec, ["nJet"], cut=1)


# ------------------------------------------------------------ missing optional modules


@pytest.mark.parametrize(
    ("library", "module", "message"),
    [
        ("pd", "pandas", "library='pd' needs pandas, which is not installed: pip install 'rntuple[pandas]'"),
        ("pl", "polars", "library='pl' needs polars, which is not installed: pip install 'rntuple[polars]'"),
    ],
)
def test_missing_library_names_the_extra(
    nt: rntuple.RNTuple, monkeypatch: pytest.MonkeyPatch, library: str, module: str, message: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    for call in (
        lambda: nt.arrays(["nJet"], library=library, entry_stop=5),
        lambda: nt.arrays(["nJet * 2"], library=library, entry_stop=5),
        lambda: nt["nJet"].array(library=library, entry_stop=5),
    ):
        with pytest.raises(MissingDependencyError) as raised:
            call()
        assert str(raised.value) == message
        assert isinstance(raised.value, ImportError) and isinstance(raised.value, rntuple.RNTupleError)


@pytest.mark.parametrize(
    ("module", "extra"),
    [("dask_awkward", "dask"), ("distributed", "dask"), ("coffea", "coffea"), ("matplotlib.pyplot", "plot")],
)
def test_missing_optional_module_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, extra: str
) -> None:
    from rntuple._extras import require

    monkeypatch.setitem(sys.modules, module.split(".")[0], None)
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError) as raised:
        require(module, "the feature")
    top = module.split(".")[0]
    assert (
        str(raised.value)
        == f"the feature needs {top}, which is not installed: pip install 'rntuple[{extra}]'"
    )


def test_entry_points_name_their_missing_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """rntuple.dask, rntuple.convert_files and rntuple.coffea themselves raise it."""
    files = [str(conformance_data.write_file("types.fundamental.integer"))]
    monkeypatch.setitem(sys.modules, "dask_awkward", None)
    with pytest.raises(MissingDependencyError) as raised:
        rntuple.dask(files)
    assert str(raised.value) == (
        "rntuple.dask needs dask_awkward, which is not installed: pip install 'rntuple[dask]'"
    )
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingDependencyError) as raised:
        rntuple.convert_files(files, tmp_path)
    assert str(raised.value) == (
        "rntuple.convert_files needs distributed, which is not installed: pip install 'rntuple[dask]'"
    )
    monkeypatch.delitem(sys.modules, "rntuple.coffea", raising=False)
    monkeypatch.setitem(sys.modules, "coffea", None)
    with pytest.raises(MissingDependencyError) as raised:
        importlib.import_module("rntuple.coffea")
    assert str(raised.value) == (
        "rntuple.coffea needs coffea, which is not installed: pip install 'rntuple[coffea]'"
    )


def test_extras_are_declared() -> None:
    import tomllib

    pyproject = Path(__file__).resolve().parent.parent / "python" / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    from rntuple._extras import EXTRA_OF_MODULE

    assert set(EXTRA_OF_MODULE.values()) <= set(extras)
    assert any(r.startswith("coffea>=2025") for r in extras["coffea"])
    assert set(extras["all"]) >= {
        r for name in ("pandas", "polars", "plot", "dask", "coffea") for r in extras[name]
    }
