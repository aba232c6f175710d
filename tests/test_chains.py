"""Many files, one schema: rows C1-C3 and F1-F3 of
``../shared/reference/evolution-and-joins.md``. ROOT 6.40's ``RNTupleProcessor`` chain
is the oracle where it is right (order, global entry numbers, a field a later file
lacks); where it throws (a field the first file lacks, a type that differs) our stated
behaviour is checked against values computed by hand; uproot 5.7's ``concatenate`` is the
oracle of numeric promotion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
import uproot

import rntuple

ROOT_HELPERS = r"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleProcessor.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

namespace chaintest {
// `n` entries: event = first + i, x = first + i + 0.25 (as X), y = 100 + 10 * (first + i)
// when with_y; several clusters (one per 2 entries).
template <typename X>
void write(const std::string &path, int n, int first, bool with_y)
{
   auto model = ROOT::RNTupleModel::Create();
   auto event = model->MakeField<std::int64_t>("event");
   auto x = model->MakeField<X>("x");
   std::shared_ptr<float> y;
   if (with_y)
      y = model->MakeField<float>("y");
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "t", path);
   for (int i = 0; i < n; ++i) {
      *event = first + i;
      *x = static_cast<X>(first + i + 0.25);
      if (y)
         *y = 100.f + 10.f * (first + i);
      writer->Fill();
      if (i % 2 == 1)
         writer->CommitCluster();
   }
}

// The chain's entries as JSON: [global index, processor number, value or null], or
// "error: " and the message.
template <typename T>
std::string read_chain(const std::vector<std::string> &files, const std::string &field)
{
   std::vector<ROOT::Experimental::RNTupleOpenSpec> specs;
   for (const auto &f : files)
      specs.emplace_back("t", f);
   std::ostringstream out;
   try {
      auto proc = ROOT::Experimental::RNTupleProcessor::CreateChain(specs);
      auto value = proc->RequestField<T>(field);
      out << "[";
      bool first = true;
      for (auto idx : *proc) {
         out << (first ? "" : ",") << "[" << idx << "," << proc->GetCurrentProcessorNumber() << ",";
         first = false;
         if (value.HasValue())
            out << std::setprecision(17) << static_cast<double>(*value);
         else
            out << "null";
         out << "]";
      }
      out << "]";
   } catch (const std::exception &e) {
      return std::string("error: ") + e.what();
   }
   return out.str();
}
} // namespace chaintest
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """ROOT-written files: ``a`` (3 entries, float x), ``empty`` (none), ``b`` (2
    entries, float x and y), ``b2`` (2 entries, double x)."""
    import ROOT

    ROOT.gInterpreter.Declare(ROOT_HELPERS)
    out = tmp_path_factory.mktemp("chains")
    paths = {name: str(out / f"{name}.root") for name in ("a", "empty", "b", "b2")}
    ROOT.chaintest.write["float"](paths["a"], 3, 0, False)
    ROOT.chaintest.write["float"](paths["empty"], 0, 0, False)
    ROOT.chaintest.write["float"](paths["b"], 2, 10, True)
    ROOT.chaintest.write["double"](paths["b2"], 2, 20, False)
    return paths


def root_chain(paths: list[str], field: str, cpp_type: str = "float") -> Any:
    """ROOT's chain processor's reading of ``field`` as ``cpp_type``."""
    import ROOT

    text = str(ROOT.chaintest.read_chain[cpp_type](ROOT.std.vector["std::string"](paths), field))
    if text.startswith("error: "):
        return {"error": text}
    return json.loads(text)


def test_c1_order_and_global_entries_equal_root_s_chain(files: dict[str, str]) -> None:
    paths = [files["a"], files["empty"], files["b"]]
    root = root_chain(paths, "x")
    assert [idx for idx, _, _ in root] == [0, 1, 2, 3, 4]
    assert [p for _, p, _ in root] == [0, 0, 0, 2, 2]
    ours = rntuple.concatenate([f"{p}:t" for p in paths], ["x"], library="pd")
    assert list(ours.index) == [idx for idx, _, _ in root]
    assert ours["x"].tolist() == [v for _, _, v in root]
    # iterate: the same values, file by file, in order.
    batches = list(rntuple.iterate([f"{p}:t" for p in paths], ["x"], step_size=100))
    assert ak.concatenate(batches).x.tolist() == [v for _, _, v in root]


def test_c2_a_field_a_later_file_lacks_is_none_as_root_has_no_value(files: dict[str, str]) -> None:
    paths = [files["b"], files["a"]]
    root = root_chain(paths, "y")
    assert [v for _, _, v in root] == [200.0, 210.0, None, None, None]
    specs = [f"{p}:t" for p in paths]
    ours = rntuple.concatenate(specs, ["y"], allow_missing=True)
    assert ours.y.tolist() == [v for _, _, v in root]
    assert str(ours.y.type) == "5 * ?float32"
    # Without allow_missing: the files lacking it are named.
    with pytest.raises(rntuple.NotFoundError) as err:
        rntuple.concatenate(specs, ["y"])
    assert files["a"] in str(err.value) and files["b"] not in str(err.value)
    assert "allow_missing=True" in str(err.value)


def test_c2_a_field_the_first_file_lacks_is_none_where_root_throws(files: dict[str, str]) -> None:
    paths = [files["a"], files["b"]]
    root = root_chain(paths, "y")
    assert "not present" in root["error"], root
    ours = rntuple.concatenate([f"{p}:t" for p in paths], ["x", "y"], allow_missing=True)
    assert ours.y.tolist() == [None, None, None, 200.0, 210.0]
    assert ours.x.tolist() == [0.25, 1.25, 2.25, 10.25, 11.25]
    # The same through iterate, every batch of one type.
    batches = list(rntuple.iterate([f"{p}:t" for p in paths], ["x", "y"], allow_missing=True, step_size=1))
    assert {str(b.type).split(" * ", 1)[1] for b in batches} == {"{x: float32, y: ?float32}"}
    assert ak.concatenate(batches).y.tolist() == ours.y.tolist()


def test_c3_a_type_that_differs_converts_where_root_throws(files: dict[str, str]) -> None:
    paths = [files["a"], files["b2"]]
    root = root_chain(paths, "x")
    assert "type mismatch" in root["error"], root
    ours = rntuple.concatenate([f"{p}:t" for p in paths], ["x"])
    assert str(ours.x.type) == "5 * float64"
    # float 0.25 + i is exact in both types.
    assert ours.x.tolist() == [0.25, 1.25, 2.25, 20.25, 21.25]
    # types= names the type instead: the doubles read as floats.
    as_float = rntuple.concatenate([f"{p}:t" for p in paths], ["x"], types={"x": "float"})
    assert str(as_float.x.type) == "5 * float32"
    assert as_float.x.tolist() == [0.25, 1.25, 2.25, 20.25, 21.25]


def test_f1_numbers_promote_as_uproot_promotes(tmp_path: Path) -> None:
    # Files written by uproot itself, read by uproot and by us.
    cases = {
        "f32": {"x": np.array([1.5, 2.5], np.float32), "n": np.array([1, -2], np.int32)},
        "f64": {"x": np.array([0.1, 1e300]), "n": np.array([2**40, 5], np.int64)},
        "u8": {"x": np.array([7.0], np.float32), "n": np.array([255], np.uint8)},
    }
    paths = []
    for name, data in cases.items():
        path = tmp_path / f"{name}.root"
        with uproot.recreate(path) as f:
            f.mkrntuple("t", {k: v.dtype for k, v in data.items()}).extend(data)
        paths.append(f"{path}:t")
    theirs = uproot.concatenate(paths)
    ours = rntuple.concatenate(paths)
    assert str(ours.type) == str(theirs.type) == "5 * {x: float64, n: int64}"
    assert ours.tolist() == theirs.tolist()


def test_f3_iterate_gives_one_type_where_uproot_gives_one_per_file(files: dict[str, str]) -> None:
    specs = [f"{files['a']}:t", f"{files['b2']}:t"]
    theirs = {str(b.x.type).split(" * ")[1] for b in uproot.iterate(specs, ["x"])}
    assert theirs == {"float32", "float64"}  # uproot: the type of each file
    ours = {str(b.x.type).split(" * ")[1] for b in rntuple.iterate(specs, ["x"], step_size=1)}
    assert ours == {"float64"}


def test_unification_refuses_a_mix_no_type_reads(tmp_path: Path) -> None:
    text, number = tmp_path / "text.root", tmp_path / "number.root"
    with rntuple.recreate(text) as f:
        f["t"] = {"x": ["a", "b"]}
    with rntuple.recreate(number) as f:
        f["t"] = {"x": np.arange(2.0)}
    with pytest.raises(rntuple.IncompatibleTypeError) as err:
        rntuple.concatenate([f"{text}:t", f"{number}:t"])
    message = str(err.value)
    assert '"std::string"' in message and '"double"' in message
    assert str(text) in message and str(number) in message


def test_records_unify_member_by_member(tmp_path: Path) -> None:
    old, new = tmp_path / "old.root", tmp_path / "new.root"
    with rntuple.recreate(old) as f:
        f["t"] = ak.Array({"evo": [{"a": np.int32(1), "b": 2.0}]})
    with rntuple.recreate(new) as f:
        f["t"] = ak.Array({"evo": [{"a": 3, "c": np.float32(4.5)}]})
    ours = rntuple.concatenate([f"{old}:t", f"{new}:t"])
    assert ours.evo.tolist() == [{"a": 1, "b": 2.0, "c": None}, {"a": 3, "b": None, "c": 4.5}]
    assert str(ours.evo.a.type) == "2 * int64"


def test_dask_reads_the_chain_s_one_schema(files: dict[str, str]) -> None:
    specs = [f"{files['a']}:t", f"{files['empty']}:t", f"{files['b']}:t", f"{files['b2']}:t"]
    eager = rntuple.concatenate(specs, ["x", "y"], allow_missing=True)
    lazy = rntuple.dask(specs, ["x", "y"], allow_missing=True)
    assert str(lazy.form.type) == "{x: float64, y: ?float32}"
    computed = lazy.compute()
    assert computed.tolist() == eager.tolist()
    assert str(computed.type) == str(eager.type)
    assert eager.y.tolist() == [None, None, None, 200.0, 210.0, None, None]
    # A projection to one field reads it alone, still as the chain's type.
    assert lazy.x.compute().tolist() == eager.x.tolist()


def test_files_alike_with_untyped_records_read_as_they_are(tmp_path: Path) -> None:
    # uproot writes records without a C++ type name, here inside a list: two files of the
    # same schema have nothing to unify, and read as uproot reads them.
    data = ak.Array({"jets": [[{"pt": 1.5, "n": 1}], [], [{"pt": 2.5, "n": 2}, {"pt": 3.5, "n": 3}]]})
    paths = []
    for name in ("one", "two"):
        path = tmp_path / f"{name}.root"
        with uproot.recreate(path) as f:
            f.mkrntuple("t", data)
        paths.append(f"{path}:t")
    ours = rntuple.concatenate(paths)
    assert ours.tolist() == uproot.concatenate(paths).tolist() == ak.concatenate([data, data]).tolist()
