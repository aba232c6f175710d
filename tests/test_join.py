"""Joins (friends): ``rntuple.join`` against ROOT 6.40's ``RNTupleProcessor`` and
against joins done by hand in pandas.

Fixtures (module scope): small RNTuples written by ROOT (``tests/cxx/joingen.hxx``,
JIT-compiled by cling) and read back by ROOT's processor through the same C++ helper:

- ``p``: run, event (int32), x (float), 8 entries in two clusters; run -1 with event -5
  checks negative keys;
- ``aux``: the keys shuffled, some primary keys missing, one key no primary has (z);
- ``auxd``: duplicated keys; ``aux64`` (int64 keys) and ``auxu`` (uint64 run, uint32
  event): keys of other widths and signs; ``auxc1``/``auxc2``: a friend chain whose
  matches sit in both files; ``f1`` (8 entries) and ``f2`` (6): aligned friends (w).

Rows J1-J8 of ``shared/reference/evolution-and-joins.md``: where ROOT is right our
values equal its values; where it is not (J2 stale values, J5 silent non-matches, J6
throws) the test asserts ROOT's behaviour and ours (expected values by hand or pandas).
"""

from __future__ import annotations

import math
import os
import pickle
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import rntuple
from rootdump import load_root

CXX = Path(__file__).resolve().parent / "cxx" / "joingen.hxx"

P = {"run": [1, 1, 1, 2, 2, -1, 3, 3], "event": [1, 2, 3, 1, 2, -5, 1, 2], "x": [0.5 * i for i in range(8)]}
AUX = {"run": [2, 1, 1, 3, -1, 9], "event": [2, 3, 1, 2, -5, 9], "z": [22.0, 13.0, 11.0, 32.0, -15.0, 99.0]}
AUXD = {"run": [1, 2, 1, 2, 1], "event": [1, 1, 1, 2, 1], "z": [11.0, 21.0, 111.0, 22.0, 1111.0]}
AUXU = {"run": [2, 1, 3, 9], "event": [2, 1, 2, 9], "z": [22.0, 11.0, 32.0, 99.0]}
AUXC1 = {"run": [2, 9], "event": [2, 9], "z": [22.0, 99.0]}
AUXC2 = {"run": [1, 3, 1], "event": [3, 2, 1], "z": [13.0, 32.0, 11.0]}
W1 = [10.0 + i for i in range(8)]
W2 = [20.0 + i for i in range(6)]


class Root:
    """ROOT with the join helper declared: writers and the processor oracle."""

    def __init__(self) -> None:
        self.ROOT = load_root()
        assert self.ROOT.gInterpreter.Declare(CXX.read_text()), "joingen.hxx does not compile"
        self.j = self.ROOT.joingen

    def strings(self, *items: str) -> Any:
        return self.ROOT.std.vector["std::string"](list(items))

    def vec(self, kind: str, values: list[Any]) -> Any:
        return self.ROOT.std.vector[kind](values)

    def join(
        self, primary: list[str], pname: str, aux: list[str], aname: str, keys: list[str], fields: list[str]
    ) -> list[list[float | None]]:
        """Per primary entry, the values of ``fields`` (None where ROOT has none)."""
        flat = list(
            self.j.join(
                self.strings(*primary),
                pname,
                self.strings(*aux),
                aname,
                self.strings(*keys),
                self.strings(*fields),
            )
        )
        rows = [flat[i : i + len(fields)] for i in range(0, len(flat), len(fields))]
        return [[None if math.isnan(v) else v for v in row] for row in rows]


@pytest.fixture(scope="module")
def root() -> Root:
    return Root()


@pytest.fixture(scope="module")
def files(root: Root, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("join")
    j, vec = root.j, root.vec
    paths = {
        k: str(out / f"{k}.root") for k in ("p", "aux", "auxd", "aux64", "auxu", "auxc1", "auxc2", "f1", "f2")
    }
    # (writer, file, RNTuple, types of run and event, values, their field, entries per cluster)
    keyed = [
        (j.write_i32, "p", "p", "int", "int", P, "x", 4),
        *[
            (j.write_i32, key, "aux", "int", "int", data, "z", 2)
            for key, data in (("aux", AUX), ("auxd", AUXD), ("auxc1", AUXC1), ("auxc2", AUXC2))
        ],
        (j.write_i64, "aux64", "aux", "Long64_t", "Long64_t", AUX, "z", 0),
        (j.write_u64, "auxu", "aux", "ULong64_t", "unsigned int", AUXU, "z", 0),
    ]
    for write, key, name, run_type, event_type, data, value, cluster_every in keyed:
        runs, events, values = (
            vec(run_type, data["run"]),
            vec(event_type, data["event"]),
            vec("float", data[value]),
        )
        write(paths[key], name, runs, events, values, value, cluster_every)
    # The same friend as "aux", written by our writer, with a jagged field besides.
    paths["ours"] = str(out / "ours.root")
    with rntuple.recreate(paths["ours"]) as f:
        f["aux"] = {
            "run": np.array(AUX["run"], dtype=np.int32),
            "event": np.array(AUX["event"], dtype=np.int32),
            "z": np.array(AUX["z"], dtype=np.float32),
            "hits": ak.Array([[float(i)] * i for i in range(len(AUX["z"]))]),
        }
    j.write_float(paths["f1"], "f1", vec("float", W1), "w")
    j.write_float(paths["f2"], "f2", vec("float", W2), "w")
    return paths


def by_hand(
    primary: dict[str, list[Any]], friend: dict[str, list[Any]], keys: list[str], field: str
) -> list[Any]:
    """The first friend value per primary entry (None without a match), by value."""
    found: dict[tuple[int, ...], Any] = {}
    for i in range(len(friend[field])):
        found.setdefault(tuple(int(friend[k][i]) for k in keys), friend[field][i])
    return [found.get(tuple(int(primary[k][i]) for k in keys)) for i in range(len(primary["x"]))]


def friend_values(array: ak.Array, name: str, field: str) -> list[Any]:
    return [None if r is None else r[field] for r in ak.to_list(array[name])]


# -- J1-J8 against ROOT's RNTupleProcessor -----------------------------------------------


def test_j1_aligned_equal_lengths(root: Root, files: dict[str, str]) -> None:
    oracle = root.join([files["p"]], "p", [files["f1"]], "f1", [], ["x", "f1.w"])
    joined = rntuple.join(f"{files['p']}:p", f"{files['f1']}:f1")
    got = joined.arrays()
    assert [[r["x"], r["f1"]["w"]] for r in ak.to_list(got)] == oracle
    assert [row[1] for row in oracle] == W1


def test_j2_aligned_shorter_friend(root: Root, files: dict[str, str]) -> None:
    # ROOT 6.40 keeps the friend's last value for the entries it lacks (stale values).
    oracle = root.join([files["p"]], "p", [files["f2"]], "f2", [], ["f2.w"])
    assert [row[0] for row in oracle] == [*W2, W2[-1], W2[-1]]
    # Ours: an error by default, None with how="left".
    with pytest.raises(rntuple.InvalidArgumentError, match=r"friends not aligned.*8 entries.*f2\.root.*6"):
        rntuple.join(f"{files['p']}:p", f"{files['f2']}:f2")
    with pytest.raises(rntuple.InvalidArgumentError, match="friends not aligned"):
        rntuple.join(f"{files['p']}:p", f"{files['f2']}:f2", how="inner")
    left = rntuple.join(f"{files['p']}:p", f"{files['f2']}:f2", how="left").arrays()
    assert friend_values(left, "f2", "w") == [*W2, None, None]
    # A longer friend with how="left": its extra entries are never paired.
    longer = rntuple.join(f"{files['f2']}:f2", f"{files['f1']}:f1", how="left").arrays()
    assert friend_values(longer, "f1", "w") == W1[:6]


def test_j3_key_join_shuffled_with_missing_keys(root: Root, files: dict[str, str]) -> None:
    oracle = root.join([files["p"]], "p", [files["aux"]], "aux", ["run", "event"], ["x", "aux.z"])
    got = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"]).arrays(["x", "aux.z"])
    assert [[r["x"], None if r["aux"] is None else r["aux"]["z"]] for r in ak.to_list(got)] == oracle
    assert [row[1] for row in oracle] == by_hand(P, AUX, ["run", "event"], "z")
    assert [row[1] for row in oracle].count(None) == 3
    # One key: the first friend entry with that event.
    oracle_event = root.join([files["p"]], "p", [files["aux"]], "aux", ["event"], ["aux.z"])
    got_event = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on="event").arrays(["aux.z"])
    assert friend_values(got_event, "aux", "z") == [row[0] for row in oracle_event]
    inner = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"], how="inner")
    kept = inner.arrays(library="pd")
    assert list(kept.index) == [i for i, row in enumerate(oracle) if row[1] is not None]
    assert list(kept["aux.z"]) == [row[1] for row in oracle if row[1] is not None]


def test_friend_written_by_our_writer(root: Root, files: dict[str, str]) -> None:
    oracle = root.join([files["p"]], "p", [files["ours"]], "aux", ["run", "event"], ["aux.z"])
    got = rntuple.join(f"{files['p']}:p", f"{files['ours']}:aux", on=["run", "event"]).arrays()
    assert (
        friend_values(got, "aux", "z") == [row[0] for row in oracle] == by_hand(P, AUX, ["run", "event"], "z")
    )
    # A jagged friend field: the matched entry's list (entry 2 of the friend for (1, 1)).
    assert friend_values(got, "aux", "hits")[:2] == [[2.0, 2.0], None]


def test_j4_duplicated_friend_keys(root: Root, files: dict[str, str]) -> None:
    oracle = root.join([files["p"]], "p", [files["auxd"]], "aux", ["run", "event"], ["aux.z"])
    primary, friend = f"{files['p']}:p", f"{files['auxd']}:aux"
    first = rntuple.join(primary, friend, on=["run", "event"]).arrays()
    assert friend_values(first, "aux", "z") == [row[0] for row in oracle]
    assert oracle[0][0] == 11.0  # the lowest of the friend entries 0, 2, 4 with (1, 1)
    with pytest.raises(
        rntuple.InvalidArgumentError,
        match=r"key \(run=1, event=1\) is at friend entries 0 and 2 of .*auxd\.root",
    ):
        rntuple.join(primary, friend, on=["run", "event"], duplicates="error")
    every = rntuple.join(primary, friend, on=["run", "event"], duplicates="all").arrays()
    assert [[r["z"] for r in rs] for rs in ak.to_list(every["aux"])] == [
        [11.0, 111.0, 1111.0], [], [], [21.0], [22.0], [], [], []
    ]  # fmt: skip
    assert str(ak.type(every["aux"])).startswith("8 * var * {")


def test_j5_keys_of_other_widths_and_signs_match_by_value(root: Root, files: dict[str, str]) -> None:
    # ROOT 6.40 reads each key as an unsigned integer of the friend's width: int32 keys
    # against int64 ones match nothing, silently.
    for aux in ("aux64", "auxu"):
        oracle = root.join([files["p"]], "p", [files[aux]], "aux", ["run", "event"], ["aux.z"])
        assert all(row[0] is None for row in oracle), aux
    primary = f"{files['p']}:p"
    by64 = rntuple.join(primary, f"{files['aux64']}:aux", on=["run", "event"]).arrays()
    assert friend_values(by64, "aux", "z") == by_hand(P, AUX, ["run", "event"], "z")
    assert friend_values(by64, "aux", "z")[5] == -15.0  # int32 -1 matches int64 -1
    byu = rntuple.join(primary, f"{files['auxu']}:aux", on=["run", "event"]).arrays()
    assert friend_values(byu, "aux", "z") == by_hand(P, AUXU, ["run", "event"], "z")
    # Floats are refused before any page is read; so are keys one side lacks.
    with pytest.raises(
        rntuple.InvalidArgumentError,
        match=r"cannot join on field 'x'.*float.*floating-point keys are refused",
    ):
        rntuple.join(primary, f"{files['aux']}:aux", on="x")
    with pytest.raises(
        rntuple.NotFoundError, match=r"join key 'evnt' is not a field of the primary .*did you mean event"
    ):
        rntuple.join(primary, f"{files['aux']}:aux", on="evnt")
    with pytest.raises(
        rntuple.NotFoundError, match=r'join key "run" is not a field of the friend .*f1\.root'
    ):
        rntuple.join(f"{files['aux']}:aux", f"{files['f1']}:f1", on=["run"])


def test_j6_friend_chain_with_matches_in_the_second_file(root: Root, files: dict[str, str]) -> None:
    chain = [files["auxc1"], files["auxc2"]]
    # ROOT 6.40 throws for a match in the 2nd file of an aux chain (root#22820).
    with pytest.raises(Exception, match="out of bounds"):
        root.join([files["p"]], "p", chain, "aux", ["run", "event"], ["aux.z"])
    both = {k: AUXC1[k] + AUXC2[k] for k in AUXC1}
    got = rntuple.join(f"{files['p']}:p", [f"{c}:aux" for c in chain], on=["run", "event"]).arrays()
    assert friend_values(got, "aux", "z") == by_hand(P, both, ["run", "event"], "z")
    assert friend_values(got, "aux", "z") == [11.0, None, 13.0, None, 22.0, None, None, 32.0]


def test_j7_nested_joins(root: Root, files: dict[str, str]) -> None:
    flat = list(
        root.j.join2(
            root.strings(files["p"]), "p", root.strings(files["aux"]), "aux", root.strings("run", "event"),
            root.strings(files["f1"]), "f1", root.strings(), root.strings("x", "aux.z", "f1.w"),
        )
    )  # fmt: skip
    oracle = [[None if math.isnan(v) else v for v in flat[i : i + 3]] for i in range(0, len(flat), 3)]
    inner = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"])
    outer = rntuple.join(inner, f"{files['f1']}:f1")
    got = ak.to_list(outer.arrays(["x", "aux.z", "f1.w"]))
    assert [[r["x"], None if r["aux"] is None else r["aux"]["z"], r["f1"]["w"]] for r in got] == oracle
    assert outer.keys() == ["run", "event", "x", "aux.run", "aux.event", "aux.z", "f1.w"]
    # join(chain, chain): the primary twice over, the friend chain of J6, by hand.
    chain = rntuple.join(
        [f"{files['p']}:p"] * 2, [f"{files['auxc1']}:aux", f"{files['auxc2']}:aux"], on=["run", "event"]
    )
    z = friend_values(chain.arrays(), "aux", "z")
    assert z == [11.0, None, 13.0, None, 22.0, None, None, 32.0] * 2
    assert friend_values(chain.arrays(entry_start=6, entry_stop=10), "aux", "z") == [None, 32.0, 11.0, None]


def test_j8_naming_and_collisions(files: dict[str, str]) -> None:
    joined = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"], name="calib")
    table = joined.arrays(["x", "calib.z"], library="arrow")
    assert table.column_names == ["x", "calib.z"]
    assert table.column("calib.z").null_count == 3
    assert joined.keys() == ["run", "event", "x", "calib.run", "calib.event", "calib.z"]
    assert joined.keys(filter_name="z") == ["calib.z"]
    records = joined.arrays(["calib"])
    assert records.fields == ["calib"] and records.calib.fields == ["run", "event", "z"]
    assert str(ak.type(records.calib)).startswith("8 * ?{")
    with pytest.raises(rntuple.InvalidArgumentError, match=r"has a field 'x'.*name='x_friend'"):
        rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on="run", name="x")
    with pytest.raises(rntuple.InvalidArgumentError, match=r"how='outer'"):
        rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on="run", how="outer")
    with pytest.raises(rntuple.InvalidArgumentError, match=r"duplicates='last'"):
        rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on="run", duplicates="last")
    with pytest.raises(rntuple.NotFoundError, match=r"no field 'calib.q'.*did you mean"):
        joined.arrays(["calib.q"])


# -- against pandas -----------------------------------------------------------------------


@pytest.mark.parametrize("how", ["left", "inner"])
@pytest.mark.parametrize("duplicates", ["first", "all"])
@pytest.mark.parametrize("keys", [["run", "event"], ["event"], ["run"]])
def test_equals_a_pandas_merge(files: dict[str, str], how: str, duplicates: str, keys: list[str]) -> None:
    primary = rntuple.open(f"{files['p']}:p").arrays(library="pd").reset_index(drop=True)
    friend = rntuple.open(f"{files['auxd']}:aux").arrays(library="pd").reset_index(drop=True)
    friend["friend_entry"] = np.arange(len(friend))
    if duplicates == "first":
        friend = friend.drop_duplicates(keys, keep="first")
    primary["entry"] = np.arange(len(primary))
    expected = pd.merge(primary, friend[[*keys, "z", "friend_entry"]], on=keys, how=how, sort=False)
    expected = expected.sort_values(["entry", "friend_entry"], kind="stable")
    joined = rntuple.join(f"{files['p']}:p", f"{files['auxd']}:aux", on=keys, how=how, duplicates=duplicates)
    got = joined.arrays(["x", "aux.z"], library="pd")
    if duplicates == "all":
        got = got.explode("aux.z")
        got["aux.z"] = got["aux.z"].astype(float)
        if how == "left":
            got["aux.z"] = got["aux.z"].where(got["aux.z"].notna(), np.nan)
    assert list(got.index) == list(expected["entry"])
    np.testing.assert_array_equal(got["x"].to_numpy(dtype=float), expected["x"].to_numpy(dtype=float))
    np.testing.assert_array_equal(got["aux.z"].to_numpy(dtype=float), expected["z"].to_numpy(dtype=float))


def test_iterate_equals_arrays(files: dict[str, str]) -> None:
    joined = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"])
    whole = joined.arrays(library="arrow")
    steps = list(joined.iterate(step_size=3, library="arrow"))
    assert len(steps) >= 2
    assert pa.concat_tables(steps).equals(whole)
    assert isinstance(whole, pa.Table) and whole.column_names == [
        "run",
        "event",
        "x",
        "aux.run",
        "aux.event",
        "aux.z",
    ]


def test_opened_rntuples_and_filters(files: dict[str, str]) -> None:
    p = rntuple.open(f"{files['p']}:p")
    aux = rntuple.open(f"{files['aux']}:aux")
    joined = rntuple.join(p, aux, on=["run", "event"])
    got = joined.arrays(filter_name=["x", "z"], entry_start=2, entry_stop=6, library="np")
    assert list(got) == ["x", "aux.z"]
    np.testing.assert_array_equal(got["x"], np.array(P["x"][2:6], dtype=np.float32))
    assert got["aux.z"].tolist() == [13.0, None, 22.0, -15.0]  # a masked array


# -- the CLI --------------------------------------------------------------------------------


def test_cli_dump_and_show_with_a_friend(files: dict[str, str], rntuple_bin: Any) -> None:
    import json
    import subprocess

    binary = str(rntuple_bin())

    def dump(*args: str) -> list[dict[str, Any]]:
        done = subprocess.run(
            [binary, "dump", f"{files['p']}:p", "--jsonl", *args], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    rows = dump("--friend", f"{files['aux']}:aux", "--on", "run,event")
    expected = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"]).arrays()
    assert [None if r["aux"] is None else r["aux"]["z"] for r in rows] == friend_values(expected, "aux", "z")
    assert [r["x"] for r in rows] == P["x"]
    inner = dump(
        "--friend",
        f"{files['aux']}:aux",
        "--on",
        "run,event",
        "--how",
        "inner",
        "--friend-name",
        "c",
        "--fields",
        "x,c.z",
    )
    assert inner == [
        {"x": x, "c": {"z": z}} for x, z in ((0.0, 11.0), (1.0, 13.0), (2.0, 22.0), (2.5, -15.0), (3.5, 32.0))
    ]
    aligned = dump("--friend", f"{files['f1']}:f1", "--fields", "f1")
    assert aligned == [{"f1": {"w": w}} for w in W1]
    friend = ["--friend", f"{files['aux']}:aux", "--on", "run,event"]
    shown = subprocess.run(
        [binary, "show", f"{files['p']}:p", *friend, "--entries", "0:2"], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert '"aux": {' in shown.stdout and '"z": 11' in shown.stdout and '"aux": null' in shown.stdout
    bad = subprocess.run(
        [binary, "dump", f"{files['p']}:p", "--jsonl", "--friend", f"{files['f2']}:f2"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "friends not aligned" in bad.stderr and "f2.root" in bad.stderr
    bad = subprocess.run(
        [binary, "dump", f"{files['p']}:p", "--jsonl", "--friend", f"{files['aux']}:aux", "--on", "x"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "floating-point keys are refused" in bad.stderr


# -- Dask and remote friends ---------------------------------------------------------------

BIG = 200_000
BLOCK = 25_000


def page_bytes(spec: str, fields: list[str]) -> int:
    """The stored page bytes of ``fields`` of one RNTuple (``RNTuple.inspect()``)."""
    table = rntuple.open(spec).inspect().to_pandas().set_index("name")
    return int(table.loc[fields, "compressed"].sum())


@pytest.fixture(scope="module")
def big(root: Root, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A primary of ``BIG`` events in clusters of ``BLOCK``; a friend of the even events
    (int64 keys) whose clusters hold the primary's blocks in reverse order, so that a
    partition's matches sit in one friend cluster; an aligned friend of ``BIG`` entries."""
    out = tmp_path_factory.mktemp("join_big")
    j, vec = root.j, root.vec
    events = np.arange(BIG)
    x = (np.sin(events) * 100).astype(np.float32).tolist()
    j.write_i32(
        str(out / "events.root"),
        "events",
        vec("int", [1] * BIG),
        vec("int", events.tolist()),
        vec("float", x),
        "x",
        BLOCK,
    )
    blocks = [events[b * BLOCK : (b + 1) * BLOCK : 2] for b in reversed(range(BIG // BLOCK))]
    friend_events = np.concatenate(blocks)
    ones, keys = vec("Long64_t", [1] * len(friend_events)), vec("Long64_t", friend_events.tolist())
    z = vec("float", (np.cos(friend_events) * 10).astype(np.float32).tolist())
    j.write_i64(str(out / "friend.root"), "fr", ones, keys, z, "z", BLOCK // 2)
    j.write_float(
        str(out / "aligned.root"), "al", vec("float", (events * 0.25).astype(np.float32).tolist()), "y"
    )
    return {"dir": str(out), **{k: str(out / f"{k}.root") for k in ("events", "friend", "aligned")}}


def same(a: ak.Array, b: ak.Array) -> bool:
    """Equal values, types and missing values (whatever the option layouts)."""
    return a.type == b.type and ak.to_arrow_table(a).equals(ak.to_arrow_table(b))


def test_dask_nested_join_with_projection(files: dict[str, str]) -> None:
    inner = rntuple.join(f"{files['p']}:p", f"{files['aux']}:aux", on=["run", "event"])
    outer = rntuple.join(inner, f"{files['f1']}:f1")
    lazy = outer.dask(["x", "aux.z", "f1.w"], step_size=4)
    assert lazy.npartitions == 2
    assert same(lazy.compute(scheduler="sync"), outer.arrays(["x", "aux.z", "f1.w"]))
    # Only the inner friend's field: the reader projects to it, the rest filled in.
    z = lazy.aux.z.compute(scheduler="sync")
    assert ak.to_list(z) == [11.0, None, 13.0, None, 22.0, -15.0, None, 32.0]
    assert not same(lazy.compute(scheduler="sync"), outer.arrays(["x", "aux.z", "f1.w"], entry_stop=7)[:8])


def test_dask_aligned_and_key_joins_on_two_processes(big: dict[str, str], client: Any) -> None:
    import dask

    primary, friend, aligned = f"{big['events']}:events", f"{big['friend']}:fr", f"{big['aligned']}:al"
    keyed = rntuple.join(primary, friend, on=["run", "event"])
    # The index was built from the friend's key columns only.
    friend_nt = keyed._friend.members[0]
    index_read = friend_nt.metrics()["bytes_read"]
    key_pages = page_bytes(friend, ["run", "event"])
    assert index_read <= 1.1 * key_pages + 8192, (index_read, key_pages)
    eager = keyed.arrays(["x", "fr.z"])
    assert ak.sum(ak.is_none(eager.fr)) == BIG // 2
    # The index built here is broadcast to the workers: the graph carries its key only.
    lazy, report = keyed.dask(["x", "fr.z"], step_size=BLOCK, report=True, client=client)
    (reader,) = [layer.io_func for layer in lazy.dask.layers.values() if hasattr(layer, "io_func")]
    assert len(pickle.dumps(reader)) < 4096 < len(pickle.dumps(keyed.index))
    got, parts = dask.compute(lazy, report, scheduler=client)
    assert same(got, eager)
    # Without a client the index travels pickled in the graph, with the same result.
    assert same(keyed.dask(["x", "fr.z"], step_size=BLOCK).compute(scheduler=client), eager)
    pids = set(ak.to_list(parts.pid))
    assert pids <= set(client.run(os.getpid).values()) and os.getpid() not in pids
    asked = page_bytes(primary, ["run", "event", "x"]) + page_bytes(friend, ["z"])
    total = int(ak.sum(parts.bytes_read))
    print(
        f"\n[join dask] key join: {len(parts)} partitions read {total:,} bytes; "
        f"pages of keys and x + fr.z {asked:,}"
    )
    assert total <= 1.1 * asked + 16384 * 2 * 3
    # Each partition read the one friend cluster holding its matches: z of one block.
    z_per_cluster = page_bytes(friend, ["z"]) / (BIG // BLOCK)
    print(
        f"[join dask] friend bytes per partition {ak.to_list(parts.friend_bytes_read)}; "
        f"z pages per cluster {z_per_cluster:,.0f}"
    )
    assert all(b <= 1.2 * z_per_cluster + 16384 for b in ak.to_list(parts.friend_bytes_read))
    # Aligned: the same entry ranges of both sides.
    joined = rntuple.join(primary, aligned)
    lazy, report = joined.dask(["x", "al.y"], step_size=BLOCK, report=True)
    got, parts = dask.compute(lazy, report, scheduler=client)
    assert same(got, joined.arrays(["x", "al.y"]))
    total = int(ak.sum(parts.bytes_read))
    asked = page_bytes(primary, ["x"]) + page_bytes(aligned, ["y"])
    print(f"[join dask] aligned: {len(parts)} partitions read {total:,} bytes; pages of x + al.y {asked:,}")
    assert total <= 1.1 * asked + 16384 * 2 * 3
    # Projection: a graph of the friend's field only reads neither x nor the primary's keys
    # beyond what the join needs.
    only_y = joined.dask(step_size=BLOCK, report=True)
    values, parts = dask.compute(only_y[0].al.y, only_y[1], scheduler=client)
    assert set(map(tuple, ak.to_list(parts["fields"]))) == {("al.y",)}
    np.testing.assert_array_equal(ak.to_numpy(values), (np.arange(BIG) * 0.25).astype(np.float32))


def test_remote_friend_reads_only_its_key_columns(big: dict[str, str]) -> None:
    import server_http

    primary, friend = f"{big['events']}:events", f"{big['friend']}:fr"
    with server_http.serving(Path(big["dir"])) as server:
        url = server.url("friend.root") + ":fr"
        remote = rntuple.join(primary, url, on=["run", "event"])
        friend_nt = remote._friend.members[0]
        scanned = friend_nt.metrics()["bytes_read"]
        local = rntuple.join(primary, friend, on=["run", "event"])
        assert ak.to_list(remote.arrays(["fr.z"], entry_start=1000, entry_stop=60000)) == ak.to_list(
            local.arrays(["fr.z"], entry_start=1000, entry_stop=60000)
        )
    key_pages = page_bytes(friend, ["run", "event"])
    z_pages = page_bytes(friend, ["z"])
    opening = 65536 + 131072
    print(
        f"\n[join remote] key scan read {scanned:,} bytes (opening {opening:,}); "
        f"key pages {key_pages:,}, z pages {z_pages:,}"
    )
    assert scanned <= opening + 1.1 * key_pages
    assert scanned < z_pages


def test_a_worker_that_joins_after_the_broadcast_gets_the_index() -> None:
    """The key index is broadcast to the workers there are; a worker that joins later
    (a cluster scaling up, a worker restarted) fetches it from another instead of
    waiting for ever (it did: a partition blocked its worker with no error)."""
    import distributed

    from rntuple.join_dask import _Scattered

    index = b"the key index" * 1000
    options = {"n_workers": 1, "threads_per_worker": 1, "processes": False, "dashboard_address": None}
    with distributed.LocalCluster(**options) as cluster, distributed.Client(cluster) as client:
        future = client.scatter(index, broadcast=True, hash=False)
        (first,) = client.scheduler_info()["workers"]
        cluster.scale(2)
        client.wait_for_workers(2, timeout=120)
        (late,) = [w for w in client.scheduler_info()["workers"] if w != first]
        assert late not in client.who_has([future])[future.key]
        got = client.submit(lambda key: _Scattered(key).get(), future.key, workers=[late], pure=False)
        assert got.result(timeout=120) == index
