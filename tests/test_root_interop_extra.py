"""More cross-tool tests: files ROOT 6.40 writes with rarer on-disk features.

Each file (written by ``rootgen.generate_extra``, C++ in ``tests/cxx/rootgen_extra.hxx``)
gets a structure assertion from ROOT's descriptor, so that a test cannot silently test
less, and a full comparison of ``rntuple dump FILE:NAME --json`` with ROOT's reading:

- ``multikey_none.root`` / ``multikey_zstd.root``: max key size 4 KiB
  (``RNTupleWriteOptionsManip::SetMaxKeySize``) with 64 KiB pages, a big header
  (120 extra fields), a big footer (120 fields added by a late model extension) and big
  page lists, so pages and envelopes are split over several keys;
- ``multirep.root``: fields with several column representations, the primary one
  switched per cluster (``RFieldRepresentationModifier::SetPrimaryColumnRepresentation``);
- ``streamer.root``: ``RStreamerField`` fields (TH1F, TObjString), whose bytes are also
  checked against ``TClass::Streamer`` of the original objects and deserialized by ROOT;
- ``subdir.root``: an RNTuple in TFile directory ``a/b`` plus one at the top level;
- ``nested.root``: nested STL types, C arrays, atomics, projected fields (cardinality
  and leaf), Double32_t and Real16/Real32Trunc/Real32Quant columns.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_root_interop import Entries, assert_same_entries, run_rntuple_dump

import rootdump
import rootgen

EXTRA_IDS = list(rootgen.EXTRA_FILES)


def _load_root() -> Any:
    return rootdump.load_root()


# ------------------------------------------------------------------ structure


@pytest.mark.parametrize("filename", ["multikey_none.root", "multikey_zstd.root"])
def test_multikey_structure(filename: str, extra_structures: dict[str, dict[str, Any]]) -> None:
    """Pages, header, footer and a page list are larger than the max key size (so span several keys)."""
    s = extra_structures[filename]
    max_key = rootgen.MULTIKEY_MAX_KEY[filename]
    assert s["n_entries"] == rootgen.EXTRA_FILES[filename][1]
    assert s["n_clusters"] >= 4, s["n_clusters"]
    assert s["max_page_size_on_storage"] > max_key, "some page locator exceeds the max key size"
    assert s["max_page_size_on_storage"] > 8 * max_key, "some page spans many keys"
    assert s["footer_size"] > max_key, "footer spans several keys"
    assert any(on_disk > max_key for on_disk, _ in s["page_lists"]), s["page_lists"]
    if filename == "multikey_none.root":
        assert s["header_size"] > 3 * max_key, "header spans several keys"
    assert len(s["fields"]) == 3 + 2 * rootgen.MULTIKEY_PAD_FIELDS


def test_multirep_structure(extra_structures: dict[str, dict[str, Any]]) -> None:
    """Several column representations per field, different clusters using different primary ones."""
    s = extra_structures["multirep.root"]
    expected = {
        "px": [["Real32"], ["Real16"], ["SplitReal32"]],
        "d": [["SplitReal64"], ["Real32"], ["Real64"], ["Real16"]],
        "i32": [["SplitInt32"], ["Int32"]],
        "str": [["Index32", "Char"], ["SplitIndex64", "Char"]],
        "vec": [["Index32"], ["SplitIndex64"], ["Index64"], ["SplitIndex32"]],
        "vec._0": [["SplitReal32"], ["Real16"]],
        "opt": [["SplitIndex64"], ["Index32"]],
    }
    for field, reps in expected.items():
        got = s["representations"][field]
        assert [got[i] for i in sorted(got)] == reps, field
        assert s["primary_representations"][field] == list(range(len(reps))), (
            f"{field}: every representation is primary in some cluster"
        )
    assert s["one_primary_per_cluster"], "exactly one primary representation per field and cluster"
    assert s["n_clusters"] >= 12


def test_streamer_structure(extra_structures: dict[str, dict[str, Any]]) -> None:
    """`h` and `s` are streamer fields (structural role kStreamer, on-disk 0x04)."""
    ROOT = _load_root()
    s = extra_structures["streamer.root"]
    streamer_role = int(ROOT.ENTupleStructure.kStreamer)
    assert s["roles"]["h"] == streamer_role and s["roles"]["s"] == streamer_role
    assert s["roles"]["n"] != streamer_role
    assert s["representations"]["h"] == {0: ["SplitIndex64", "Byte"]}
    assert s["n_clusters"] >= 5


def test_subdir_structure(
    generated_extra: dict[str, Path], extra_structures: dict[str, dict[str, Any]]
) -> None:
    """ROOT finds the RNTuple in directory a/b, and another one at the top level."""
    ROOT = _load_root()
    assert extra_structures["subdir.root"]["n_entries"] == rootgen.SUBDIR_ENTRIES
    f = ROOT.TFile.Open(str(generated_extra["subdir.root"]))
    try:
        assert f.Get("a/b").GetListOfKeys().FindObject("nt"), "nt is a key of directory a/b"
        assert not f.GetListOfKeys().FindObject("nt"), "nt is not at the top level"
        assert f.GetListOfKeys().FindObject(rootgen.SUBDIR_TOP_NTUPLE)
    finally:
        f.Close()


def test_nested_structure(extra_structures: dict[str, dict[str, Any]]) -> None:
    """The nested file has the intended fields, column types and projections."""
    s = extra_structures["nested.root"]
    reps = s["representations"]
    assert reps["f16"] == {0: ["Real16"]} and reps["d16"] == {0: ["Real16"]}
    assert reps["ftr"] == {0: ["Real32Trunc"]} and reps["dtr"] == {0: ["Real32Trunc"]}
    assert reps["fq"] == {0: ["Real32Quant"]} and reps["dq"] == {0: ["Real32Quant"]}
    assert reps["d32"] == {0: ["SplitReal32"]} and reps["d32alias"] == {0: ["SplitReal32"]}
    assert reps["vh._0"] == {0: ["Real16"]}
    assert reps["vb._0"] == {0: ["Bit"]}
    assert sorted(s["projected"]) == ["fproj", "nvf64", "nvvar32", "vfproj"]
    assert "nvf64" not in reps, "projected fields have alias columns only"
    assert s["n_clusters"] >= 5


# ---------------------------------------------------------- ROOT-side sanity


def test_root_rendering_extra_sane(root_rendering_extra: dict[str, Entries]) -> None:
    """ROOT's reading has every entry, and the interesting values really occur."""
    for fname, (_, n) in rootgen.EXTRA_FILES.items():
        assert len(root_rendering_extra[fname]) == n, fname
    nested = root_rendering_extra["nested.root"]
    assert all(e["nvf64"] == len(e["vf"]) and e["nvvar32"] == len(e["vvar"]) for e in nested)
    assert all(e["fproj"] == e["f"] and e["vfproj"] == e["vf"] for e in nested)
    assert any(e["uvf"] is None for e in nested) and any(e["uvf"] for e in nested)
    assert any(isinstance(e["varv"], list) for e in nested) and any(
        isinstance(e["varv"], str) for e in nested
    )
    assert any(len(e["vb"]) > 64 for e in nested)
    assert any(any(m for m in e["vmsv"]) for e in nested)
    multirep = root_rendering_extra["multirep.root"]
    assert any(e["opt"] is None for e in multirep) and any(e["vec"] for e in multirep)


def test_streamer_bytes_match_tclass_streamer(root_rendering_extra: dict[str, Entries]) -> None:
    """ROOT's re-serialization of what it read equals TClass::Streamer of the objects written."""
    data = root_rendering_extra["streamer.root"]
    for i in range(0, len(data), 7):
        assert data[i] | {"n": i} == rootgen.expected_streamer_bytes(i) | {"n": i}, f"entry {i}"


# ------------------------------------------------------------- the Rust reader


@pytest.mark.parametrize("filename", [f for f in EXTRA_IDS if f != "nested.root"])
def test_rntuple_dump_extra_equals_root(
    filename: str,
    rntuple_bin: Callable[[], Path],
    generated_extra: dict[str, Path],
    root_rendering_extra: dict[str, Entries],
) -> None:
    """`rntuple dump FILE:NAME --json` reads every value exactly as ROOT does (streamer
    fields as their bytes, as ROOT's rendering gives them)."""
    name = rootgen.EXTRA_FILES[filename][0]
    got = run_rntuple_dump(rntuple_bin(), generated_extra[filename], name=name, extra=("--streamer-bytes",))
    assert_same_entries(got, root_rendering_extra[filename], f"{filename}:{name}")


def test_rntuple_dump_nested_equals_root(
    rntuple_bin: Callable[[], Path],
    generated_extra: dict[str, Path],
    root_rendering_extra: dict[str, Entries],
) -> None:
    """Every field of nested.root reads as ROOT reads it."""
    expected = root_rendering_extra["nested.root"]
    got = run_rntuple_dump(rntuple_bin(), generated_extra["nested.root"])
    assert_same_entries(got, expected, "nested.root")


def test_rntuple_dump_nested_double_key_map(
    rntuple_bin: Callable[[], Path],
    generated_extra: dict[str, Path],
    root_rendering_extra: dict[str, Entries],
) -> None:
    """std::map<double,double>: keys are the hex-float text of the key, as values are."""
    got = run_rntuple_dump(rntuple_bin(), generated_extra["nested.root"], fields=["mdd"])
    assert_same_entries(
        got, rootdump.restrict_fields(root_rendering_extra["nested.root"], ["mdd"]), "nested mdd"
    )


@pytest.mark.parametrize("filename", ["nested.root", "multirep.root", "multikey_zstd.root"])
def test_rntuple_dump_extra_entry_range(
    filename: str,
    rntuple_bin: Callable[[], Path],
    generated_extra: dict[str, Path],
    root_rendering_extra: dict[str, Entries],
) -> None:
    """`--entries` ranges crossing cluster boundaries equal the slice of ROOT's reading."""
    expected = root_rendering_extra[filename]
    fields = list(expected[0])[:12]
    for start, stop in [(140, 460), (len(expected) - 3, len(expected)), (0, 1)]:
        got = run_rntuple_dump(rntuple_bin(), generated_extra[filename], fields=fields, entries=(start, stop))
        want = rootdump.restrict_fields(expected[start:stop], fields)
        assert_same_entries(got, want, f"{filename} --entries {start}:{stop}", first_entry=start)


def test_rntuple_dump_subdir_top(rntuple_bin: Callable[[], Path], generated_extra: dict[str, Path]) -> None:
    """The top-level RNTuple next to the sub-directory one reads as ROOT reads it."""
    path = generated_extra["subdir.root"]
    expected = rootdump.dump(path, rootgen.SUBDIR_TOP_NTUPLE)
    assert len(expected) == rootgen.SUBDIR_ENTRIES // 2 + 1
    got = run_rntuple_dump(rntuple_bin(), path, name=rootgen.SUBDIR_TOP_NTUPLE)
    assert_same_entries(got, expected, f"subdir.root:{rootgen.SUBDIR_TOP_NTUPLE}")


def test_rntuple_ls_subdir(rntuple_bin: Callable[[], Path], generated_extra: dict[str, Path]) -> None:
    """`rntuple ls` lists a/b/nt and the top-level RNTuple with their entry counts."""
    proc = subprocess.run(
        [str(rntuple_bin()), "ls", str(generated_extra["subdir.root"])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    listed = {ln.split()[0]: ln for ln in proc.stdout.splitlines() if ln.split()}
    top_entries = rootgen.SUBDIR_ENTRIES // 2 + 1
    for path, n in [
        (rootgen.SUBDIR_NTUPLE, rootgen.SUBDIR_ENTRIES),
        (rootgen.SUBDIR_TOP_NTUPLE, top_entries),
    ]:
        assert path in listed, f"{path} not listed:\n{proc.stdout}"
        assert str(n) in listed[path].replace(",", " ").split(), f"entry count {n} not in {listed[path]!r}"


def test_rntuple_streamer_bytes_deserialize_in_root(
    rntuple_bin: Callable[[], Path],
    generated_extra: dict[str, Path],
    root_rendering_extra: dict[str, Entries],
) -> None:
    """ROOT deserializes rntuple's streamer bytes into the objects ROOT itself reads."""
    got = run_rntuple_dump(rntuple_bin(), generated_extra["streamer.root"], extra=("--streamer-bytes",))
    expected = root_rendering_extra["streamer.root"]
    assert len(got) == len(expected)
    n_filled = 0
    for i in range(0, len(got), 3):
        for field, cls in (("h", "TH1F"), ("s", "TObjString")):
            ours = rootdump.describe_streamed(cls, got[i][field])
            roots = rootdump.describe_streamed(cls, expected[i][field])
            assert ours == roots, f"entry {i} field {field}"
            assert ours["consumed"] == len(got[i][field]), f"entry {i} field {field}: all bytes consumed"
        n_filled += ours_h_filled(rootdump.describe_streamed("TH1F", got[i]["h"]))
    assert n_filled > 10, "histograms with contents were compared"


def test_rntuple_dump_decodes_the_streamer_fields_its_streamer_infos_describe(
    rntuple_bin: Callable[[], Path],
    generated_extra: dict[str, Path],
    root_rendering_extra: dict[str, Entries],
) -> None:
    """Without ``--streamer-bytes``, a TObjString field (its class described by the
    streamer infos ROOT wrote) is a record whose ``fString`` is the string ROOT reads from
    the same bytes; a TH1F (a member ROOT's streamer infos do not lay out: pointers)
    stays its bytes."""
    got = run_rntuple_dump(rntuple_bin(), generated_extra["streamer.root"])
    expected = root_rendering_extra["streamer.root"]
    assert len(got) == len(expected)
    for i in range(len(got)):
        want = rootdump.describe_streamed("TObjString", expected[i]["s"])["string"]
        assert got[i]["s"]["fString"] == want, f"entry {i}"
        assert set(got[i]["s"]) == {":_0", "fString"}, got[i]["s"]
        assert got[i]["h"] == expected[i]["h"], f"entry {i}"


def ours_h_filled(summary: dict[str, Any]) -> int:
    """1 if a histogram summary has any non-zero bin, else 0."""
    return int(any(c not in ("0x0p+0", "-0x0p+0") for c in summary["contents"]))
