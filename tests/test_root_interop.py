"""Cross-tool acceptance tests: the Rust reader must read ROOT 6.40 files like ROOT does.

Acceptance criterion: files written by ROOT 6.40 with many clusters, several cluster
groups, many pages per column, each compression algorithm and a late model extension
(fields added after the first clusters) are read with every value equal to what ROOT
reads.  ROOT's reading is rendered by ``rootdump.py`` (PyROOT ``RNTupleReader``); the
Rust reader's by ``rntuple dump FILE:NAME --json [--fields A,B] [--entries START:STOP]``
(binary from ``$RNTUPLE_BIN``, default ``target/release/rntuple``).

Both are compared as parsed JSON.  Notes on ROOT's reading that the Rust reader must
reproduce:

- entries written before a late model extension read as default values: ``0``,
  ``"0x0p+0"``, ``""``, ``[]``, ``{}`` and ``null`` for ``std::optional``;
- a ``std::variant`` read where nothing was written (before its late extension) is
  valueless, rendered as ``null``.
"""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import rootdump
import rootgen
from rootgen import SPECS, SPECS_BY_NAME, FileSpec

FILE_IDS = [s.filename for s in SPECS]
Entries = list[dict[str, Any]]


# --------------------------------------------------------------------------- helpers


def run_rntuple_dump(
    binary: Path,
    path: Path,
    fields: list[str] | None = None,
    entries: tuple[int, int] | None = None,
    name: str = rootgen.NTUPLE,
    extra: tuple[str, ...] = (),
) -> Entries:
    """Run ``rntuple dump PATH:NAME --json`` (with optional restrictions and ``extra``
    options); return parsed JSON."""
    cmd = [str(binary), "dump", f"{path}:{name}", "--json", *extra]
    if fields is not None:
        cmd += ["--fields", ",".join(fields)]
    if entries is not None:
        cmd += ["--entries", f"{entries[0]}:{entries[1]}"]
    proc = subprocess.run(cmd, capture_output=True, timeout=600, check=False)
    if proc.returncode != 0:
        pytest.fail(
            f"`{' '.join(cmd)}` exited with {proc.returncode}\n"
            f"stderr:\n{proc.stderr.decode(errors='replace')[:4000]}",
            pytrace=False,
        )
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"`{' '.join(cmd)}` printed invalid JSON: {exc}\n{proc.stdout[:2000]!r}", pytrace=False)


def _short(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def first_difference(got: Any, expected: Any, path: str = "") -> str | None:
    """Describe the first place where two JSON values differ, or None if equal."""
    where = path or "<root>"
    if type(got) is not type(expected):
        return (
            f"{where}: type {type(got).__name__} != ROOT's {type(expected).__name__}: "
            f"got {_short(got)}, ROOT {_short(expected)}"
        )
    if isinstance(expected, dict):
        if list(got) != list(expected) and set(got) != set(expected):
            return f"{path or '<root>'}: keys {sorted(got)} != ROOT's {sorted(expected)}"
        for key in expected:
            diff = first_difference(got[key], expected[key], f"{path}.{key}" if path else key)
            if diff:
                return diff
        return None
    if isinstance(expected, list):
        for i, (g, e) in enumerate(zip(got, expected, strict=False)):
            diff = first_difference(g, e, f"{path}[{i}]")
            if diff:
                return diff
        if len(got) != len(expected):
            return f"{path or '<root>'}: length {len(got)} != ROOT's {len(expected)}"
        return None
    if got != expected:
        return f"{path or '<root>'}: got {_short(got)}, ROOT {_short(expected)}"
    return None


def assert_same_entries(got: Entries, expected: Entries, what: str, first_entry: int = 0) -> None:
    """Assert two renderings are equal; on failure report the first differing entry/field."""
    if got == expected:
        return
    if not isinstance(got, list):
        pytest.fail(f"{what}: expected a JSON list of entries, got {type(got).__name__}", pytrace=False)
    n_diff = sum(1 for g, e in zip(got, expected, strict=False) if g != e)
    n_common = min(len(got), len(expected))
    msg = [f"{what}: rntuple's reading differs from ROOT's ({n_diff} of the first {n_common} entries differ)"]
    if len(got) != len(expected):
        msg.append(f"entry count: rntuple {len(got)}, ROOT {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            msg.append(f"first differing entry: #{first_entry + i}")
            msg.append("  " + (first_difference(g, e) or "?"))
            msg.append(f"  rntuple: {_short(g, 1500)}")
            msg.append(f"  ROOT:    {_short(e, 1500)}")
            break
    pytest.fail("\n".join(msg), pytrace=False)


def crossing_range(structure: dict[str, Any]) -> tuple[int, int]:
    """An entry range starting inside cluster 1 and ending inside cluster 3 (crosses 2+ boundaries)."""
    ranges = structure["cluster_entry_ranges"]
    assert len(ranges) >= 4, "need at least 4 clusters to build a crossing range"
    start = ranges[1][1] - 3
    stop = ranges[3][0] + 5
    return start, stop


def c_hexfloat(x: float) -> str:
    """Format a float like C's printf("%a") (glibc), e.g. 12.0 -> '0x1.8p+3'."""
    text = x.hex()  # e.g. '0x1.8000000000000p+3', '-0x0.0p+0', '0x0.0000000000001p-1022'
    mant, _, exp = text.partition("p")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    if mant.lstrip("-") == "0x0":
        exp = "+0"
    return f"{mant}p{exp}"


def from_uproot(value: Any, field: str) -> Any:
    """Convert uproot's ``to_list()`` value of a generated field into the conformance rendering."""
    if field in ("map", "late2_map"):
        return {k: from_uproot(v, "") for k, v in value}
    if field == "bits":
        return "".join("1" if b else "0" for b in reversed(value))  # uproot: bit i at index i
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return c_hexfloat(value)
    if isinstance(value, list | tuple):
        return [from_uproot(v, "") for v in value]
    return value


# ----------------------------------------------------- self-checks of the ROOT side


def test_c_hexfloat_matches_printf() -> None:
    """Our Python %a emulation (used for the uproot check) matches glibc on edge values."""
    import ctypes

    libc = ctypes.CDLL(None)
    buf = ctypes.create_string_buffer(64)
    for x in [0.0, -0.0, 1.0, 12.0, 0.1, -3.5e-310, 5e-324, 1.7976931348623157e308, 2.2250738585072014e-308]:
        libc.snprintf(buf, 64, b"%a", ctypes.c_double(x))
        assert c_hexfloat(x) == buf.value.decode(), x


@pytest.mark.parametrize("filename", FILE_IDS)
def test_generated_structure(filename: str, structures: dict[str, dict[str, Any]]) -> None:
    """The generated files really have the intended structure (so the tests cannot test less)."""
    spec: FileSpec = SPECS_BY_NAME[filename]
    s = structures[filename]
    assert s["n_entries"] == spec.n_entries
    assert s["fields"] == spec.fields, "top-level fields / schema order"
    assert s["n_clusters"] >= spec.min_clusters, s
    assert s["n_cluster_groups"] >= spec.min_cluster_groups, s
    assert s["n_cluster_groups"] > 1, "several cluster groups"
    assert s["max_pages_per_column_cluster"] >= spec.min_max_pages_per_column_cluster, "many pages per column"
    assert s["n_pages"] >= 10 * s["n_clusters"], s
    assert s["compression_settings"] == [spec.compression], "every column range uses the file's compression"
    if spec.page_checksums:
        assert s["pages_with_checksum"] > 0
    else:
        assert s["pages_with_checksum"] == 0
    assert s["header_extension_fields"] == spec.late_fields
    if spec.late_fields:
        # The extension must come after the first clusters were written.
        ranges = s["cluster_entry_ranges"]
        assert sum(1 for _, stop in ranges if stop <= spec.extend1_at) >= 2, ranges
        assert any(start < spec.extend1_at < stop for start, stop in ranges), "first extension is mid-cluster"
        assert any(start == spec.extend2_at for start, _ in ranges), "second extension starts a cluster"


def test_compression_algorithms_covered(structures: dict[str, dict[str, Any]]) -> None:
    """The files ROOT wrote hold every compression algorithm (settings as ROOT's
    descriptor gives them): zstd, lz4, zlib, lzma and none."""
    settings = {
        tuple(structures[s.filename]["compression_settings"])
        for s in SPECS
        if s.filename.startswith("compression_")
    }
    assert settings == {(505,), (404,), (101,), (207,), (0,)}


@pytest.mark.parametrize("filename", FILE_IDS)
def test_root_rendering_sane(filename: str, root_rendering: dict[str, Entries]) -> None:
    """ROOT's rendering has every entry and field, and late fields default before their extension."""
    spec = SPECS_BY_NAME[filename]
    data = root_rendering[filename]
    assert len(data) == spec.n_entries
    assert all(list(e) == spec.fields for e in data)
    if spec.late_fields:
        before = data[spec.extend1_at - 1]
        assert before["late_i64"] == 0 and before["late_vf"] == [] and before["late_str"] == ""
        assert before["late_vvi"] == [] and before["late_opt"] is None
        assert data[spec.extend2_at - 1]["late2_var"] is None
        assert any(e["late_vvi"] for e in data[spec.extend1_at :])
        assert any(e["late2_map"] for e in data[spec.extend2_at :])


#: Fields uproot 5.7 reads wrongly: std::variant values from the second cluster on come
#: out wrong (e.g. multicluster.root entry 192: uproot 0, ROOT 1916563724, which is the
#: value the generator wrote).  ROOT's reading of them is checked by the other tests.
UPROOT_WRONG = {"var", "late2_var"}


@pytest.mark.parametrize("filename", ["multicluster.root", "late_extension.root", "compression_lzma.root"])
def test_uproot_agrees_with_root(
    filename: str, generated: dict[str, Path], root_rendering: dict[str, Entries]
) -> None:
    """Independent sanity check of the ROOT-side rendering: uproot reads the same values."""
    import uproot

    expected = root_rendering[filename]
    with uproot.open(generated[filename]) as f:
        arrays = f[rootgen.NTUPLE].arrays()
        for field in SPECS_BY_NAME[filename].fields:
            if field in UPROOT_WRONG:
                continue
            got = [from_uproot(v, field) for v in arrays[field].to_list()]
            want = [e[field] for e in expected]
            if got != want:
                i = next(i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w)
                pytest.fail(f"{field} entry {i}: uproot {_short(got[i])} != ROOT {_short(want[i])}")


def test_root_restricted_rendering_consistent(
    generated: dict[str, Path], root_rendering: dict[str, Entries], structures: dict[str, dict[str, Any]]
) -> None:
    """ROOT's reading of an entry range equals the slice of its full reading."""
    name = "multicluster.root"
    start, stop = crossing_range(structures[name])
    part = rootdump.dump(generated[name], rootgen.NTUPLE, (start, stop), ["vvi", "f64"])
    assert part == [{"vvi": e["vvi"], "f64": e["f64"]} for e in root_rendering[name][start:stop]]


# ------------------------------------------------------------- the Rust reader


@pytest.mark.parametrize("filename", FILE_IDS)
def test_rntuple_dump_equals_root(
    filename: str,
    rntuple_bin: Callable[[], Path],
    generated: dict[str, Path],
    root_rendering: dict[str, Entries],
) -> None:
    """`rntuple dump FILE:ntpl --json` reads every value exactly as ROOT does."""
    got = run_rntuple_dump(rntuple_bin(), generated[filename])
    assert_same_entries(got, root_rendering[filename], filename)


@pytest.mark.parametrize("filename", ["multicluster.root", "late_extension.root", "compression_lz4.root"])
def test_rntuple_dump_entry_range(
    filename: str,
    rntuple_bin: Callable[[], Path],
    generated: dict[str, Path],
    structures: dict[str, dict[str, Any]],
) -> None:
    """`--entries START:STOP` across cluster boundaries (and across the late extension)."""
    binary = rntuple_bin()
    spec = SPECS_BY_NAME[filename]
    ranges = [crossing_range(structures[filename])]
    if spec.late_fields:
        ranges.append((spec.extend1_at - 7, spec.extend2_at + 9))  # spans both model extensions
    group_ends = sorted({stop for _, stop in structures[filename]["cluster_entry_ranges"]})
    ranges.append((0, 1))
    ranges.append((spec.n_entries - 2, spec.n_entries))
    if spec.group_every:
        ranges.append((spec.group_every - 4, spec.group_every + 4))  # crosses a cluster-group boundary
    assert group_ends[-1] == spec.n_entries
    for start, stop in ranges:
        expected = rootdump.dump(generated[filename], rootgen.NTUPLE, (start, stop))
        assert len(expected) == stop - start
        got = run_rntuple_dump(binary, generated[filename], entries=(start, stop))
        assert_same_entries(got, expected, f"{filename} --entries {start}:{stop}", first_entry=start)


FIELD_SUBSETS = {
    "multicluster.root": ["vvi", "b", "var", "bits", "map"],
    "late_extension.root": ["f64", "late_vvi", "late2_var", "tup"],
    "compression_zlib.root": ["str"],
}


@pytest.mark.parametrize("filename", list(FIELD_SUBSETS))
def test_rntuple_dump_field_subset(
    filename: str,
    rntuple_bin: Callable[[], Path],
    generated: dict[str, Path],
    root_rendering: dict[str, Entries],
    structures: dict[str, dict[str, Any]],
) -> None:
    """`--fields A,B` alone and combined with `--entries`."""
    binary = rntuple_bin()
    fields = FIELD_SUBSETS[filename]
    expected = rootdump.restrict_fields(root_rendering[filename], fields)
    got = run_rntuple_dump(binary, generated[filename], fields=fields)
    assert_same_entries(got, expected, f"{filename} --fields {','.join(fields)}")
    start, stop = crossing_range(structures[filename])
    expected_part = rootdump.dump(generated[filename], rootgen.NTUPLE, (start, stop), fields)
    got_part = run_rntuple_dump(binary, generated[filename], fields=fields, entries=(start, stop))
    assert_same_entries(got_part, expected_part, f"{filename} --fields ... --entries {start}:{stop}", start)


def test_float_bits_exact_in_rendering(root_rendering: dict[str, Entries]) -> None:
    """The edge values we rely on (-0.0, subnormals, FLT_MAX) are present in ROOT's rendering."""
    values = {e["f32"] for e in root_rendering["multicluster.root"]}
    for needle in ["-0x0p+0", "0x1p-149", "-0x1.8p-148", "0x1.fffffep+127", "0x1.8p-127"]:
        assert needle in values, needle
    dbl = {e["f64"] for e in root_rendering["multicluster.root"]}
    assert "0x0.0000000000001p-1022" in dbl
    assert struct.unpack("<d", struct.pack("<d", float.fromhex("0x0.0000000000001p-1022")))[0] > 0


# ------------------------------------------------- multimaps with repeated keys

MULTIMAP_TYPES = [
    "std::multimap<std::string,std::int32_t>",
    "std::unordered_multimap<std::int32_t,std::string>",
]
MULTIMAPGEN = r"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
namespace multimapgen {
void Write(const char *path) {
   auto model = ROOT::RNTupleModel::Create();
   auto mm = model->MakeField<std::multimap<std::string, std::int32_t>>("mm");
   auto um = model->MakeField<std::unordered_multimap<std::int32_t, std::string>>("um");
   auto w = ROOT::RNTupleWriter::Recreate(std::move(model), "ntpl", path);
   *mm = {{"b", 3}, {"a", 1}, {"a", 2}, {"a", 4}};
   *um = {{7, "x"}, {7, "y"}, {8, "z"}};
   w->Fill();
   mm->clear();
   um->clear();
   w->Fill();
   *mm = {{"k", 5}, {"k", 5}, {"k", -6}};
   *um = {{1, "p"}, {1, "p"}};
   w->Fill();
}
}
"""
#: What ``multimapgen::Write`` fills, per entry: ``mm``'s pairs in the multimap's order
#: (by key, equal keys as inserted) and ``um``'s pairs (keys as JSON keys), sorted.
MULTIMAP_FILLED = [
    ([("a", 1), ("a", 2), ("a", 4), ("b", 3)], [("7", "x"), ("7", "y"), ("8", "z")]),
    ([], []),
    ([("k", 5), ("k", 5), ("k", -6)], [("1", "p"), ("1", "p")]),
]


def test_rntuple_dump_multimap_repeated_keys(rntuple_bin: Callable[[], Path], tmp_path: Path) -> None:
    """A multimap's repeated keys: `dump --json` and `--jsonl` print every pair, as ROOT
    does (``{"a": 1, "a": 2}``), std::multimap's in ROOT's order, std::unordered_multimap's
    the same pairs (in hash-table order, which ROOT's reading does not keep)."""
    ROOT = rootdump.load_root()
    rootdump.ensure_stl_dictionaries(MULTIMAP_TYPES)  # (ROOT's map field needs the TClass)
    if not hasattr(ROOT, "multimapgen"):
        ROOT.gInterpreter.Declare(MULTIMAPGEN)
    path = tmp_path / "multimap.root"
    ROOT.multimapgen.Write(str(path))

    def pairs(text: str) -> Any:
        """Parsed JSON, every object as its list of (key, value) pairs: repeats survive."""
        return json.loads(text, object_pairs_hook=list)

    def per_entry(entries: Any) -> list[tuple[list[Any], list[Any]]]:
        out = []
        for entry in entries:
            assert [k for k, _ in entry] == ["mm", "um"], entry
            (_, mm), (_, um) = entry
            out.append((mm, sorted(um)))
        return out

    root = per_entry(pairs(rootdump.dump_text(str(path), rootgen.NTUPLE)))
    assert root == MULTIMAP_FILLED, "ROOT reads what was filled"
    binary = str(rntuple_bin())
    target = f"{path}:{rootgen.NTUPLE}"
    for mode in ("--json", "--jsonl"):
        proc = subprocess.run(
            [binary, "dump", target, mode], capture_output=True, text=True, timeout=60, check=False
        )
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout if mode == "--json" else "[" + ",".join(proc.stdout.splitlines()) + "]"
        assert per_entry(pairs(text)) == root, f"dump {mode}:\n{proc.stdout}"
