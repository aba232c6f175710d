"""``rntuple merge`` (and ``rntuple.merge``) against ROOT 6.40's merger.

- Every conformance case merged with itself: ROOT reads the output as the input's
  entries twice, and every page was copied byte for byte (none recompressed).
- ROOT-written inputs (``tests/rootgen.py``): many clusters and cluster groups, late
  model extension, all compression algorithms mixed (with the uncompressed file's
  unsplit column types re-encoded), pages larger than a key, streamer fields, an
  RNTuple in a sub-directory: ROOT reads each output as the concatenation of the inputs.
- The modes: ``union`` of inputs with different fields reads (with ROOT) exactly as
  ROOT's own union merge (``TFileMerger`` with ``rntuple.MergingMode=Union``);
  ``filter`` and ``strict`` reject what ROOT rejects, with a message naming the input
  and the fields, and leave no output.
- ``hadd`` merges our files and we merge files ``hadd`` wrote; both read back equal.
- A corrupt page stops the merge (checksum), an existing output is kept, an input is
  never the output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import conformance_data
import pytest
from conftest import REPO_ROOT, run_rntuple

import rootdump
from rootdump import load_root

CASES = [c for c in conformance_data.cases() if c != "structure.feature_flag"]
#: ROOT's hadd cannot merge this case (no dictionary for the enum: ``RFieldBase::Create``
#: fails); ours can, and ROOT still reads our output.
ROOT_CANNOT_MERGE = {"types.user.enum"}

SUMMARY_RE = re.compile(
    r"merged (\d+) inputs, (\d+) entries, (\d+) clusters .* pages: (\d+) copied, "
    r"(\d+) recompressed, (\d+) of zeros"
)


def run_merge(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """``rntuple merge ARGS...``."""
    return run_rntuple("merge", *map(str, args), timeout=600)


def merge_ok(*args: str | os.PathLike[str]) -> dict[str, int]:
    """Runs ``rntuple merge`` expecting success; returns its summary's figures."""
    proc = run_merge(*args)
    assert proc.returncode == 0, proc.stderr
    match = SUMMARY_RE.search(proc.stdout)
    assert match, proc.stdout
    keys = ["inputs", "entries", "clusters", "copied", "resealed", "zeros"]
    return dict(zip(keys, map(int, match.groups()), strict=True))


def root_reading(path: str | os.PathLike[str], name: str = "ntpl") -> Any:
    """ROOT's reading of every entry, per the conformance rendering."""
    return rootdump.load_json(rootdump.dump_text(str(path), name))


def assert_same(got: Any, expected: Any, unordered: bool = False) -> None:
    diff = rootdump.first_difference(got, expected, unordered)
    assert diff is None, diff


def root_merge(output: Path, inputs: list[Path], mode: str, compression: int = 505) -> bool:
    """ROOT's own merge (``TFileMerger``, as hadd, with ``rntuple.MergingMode``)."""
    ROOT = load_root()
    merger = ROOT.TFileMerger(False, False)
    merger.SetPrintLevel(0)
    merger.OutputFile(str(output), "RECREATE", compression)
    for path in inputs:
        merger.AddFile(str(path))
    merger.SetMergeOptions(ROOT.TString(f"rntuple.MergingMode={mode}"))
    ok = bool(merger.Merge())
    merger.CloseOutputFile()
    return ok


def hadd_bin() -> Path:
    """ROOT's ``hadd`` of the PyPI package."""
    ROOT = load_root()
    path = Path(ROOT.__file__).parent / "bin" / "hadd"
    assert path.exists(), path
    return path


# --- Every conformance case merged with itself --------------------------------------


def assert_reads_as_twice(merged: Path, source: Path, entries: int, unordered: bool) -> None:
    """ROOT reads ``merged``'s first and second ``entries`` entries each as it reads
    ``source``, and nothing after them. Compared as ROOT's JSON text (the same renderer on
    both sides: equal text is equal values), which keeps the 98 MB rendering of
    compression.block.big fast; parsed on a difference (to name it) and for the unordered
    cases (multisets)."""
    once = rootdump.dump_text(str(source))
    for start in (0, entries):
        half = rootdump.dump_text(str(merged), start=start, stop=start + entries)
        if unordered or half != once:
            assert_same(rootdump.load_json(half), rootdump.load_json(once), unordered)
    assert rootdump.load_json(rootdump.dump_text(str(merged), start=2 * entries)) == []


@pytest.mark.parametrize("case", CASES)
def test_conformance_case_merged_with_itself(case: str, tmp_path: Path) -> None:
    source = conformance_data.write_file(case)
    out = tmp_path / "merged.root"
    figures = merge_ok(out, source, source)
    assert figures["inputs"] == 2
    # The same encoding and compression: every page copied, none sealed again.
    assert figures["resealed"] == 0 and figures["zeros"] == 0, figures
    unordered = rootdump.is_unordered_case(case)
    assert figures["entries"] % 2 == 0, figures
    entries = figures["entries"] // 2
    assert_reads_as_twice(out, source, entries, unordered)
    if case not in ROOT_CANNOT_MERGE and entries:
        # What ROOT's hadd makes of the same merge reads the same.
        hadded = tmp_path / "hadd.root"
        proc = subprocess.run(
            [str(hadd_bin()), "-f", "-ff", str(hadded), str(source), str(source)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert_reads_as_twice(hadded, source, entries, unordered)


def test_root_cannot_merge_what_we_merge(tmp_path: Path) -> None:
    """The one case ROOT's hadd refuses (and we merge, above): it still refuses."""
    (case,) = ROOT_CANNOT_MERGE
    source = conformance_data.write_file(case)
    proc = subprocess.run(
        [str(hadd_bin()), "-f", str(tmp_path / "h.root"), str(source), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "Could NOT merge RNTuples" in proc.stderr + proc.stdout


# --- ROOT-written inputs -------------------------------------------------------------


def test_many_clusters_and_late_extension(generated: dict[str, Path], tmp_path: Path) -> None:
    late, multi = generated["late_extension.root"], generated["multicluster.root"]
    out = tmp_path / "late.root"
    figures = merge_ok(out, late, late, late)
    once = root_reading(late)
    assert_same(root_reading(out), once * 3)
    # The first copy's deferred columns stay deferred; the later copies' leading zeros
    # (before their extension) are stored as zero pages.
    assert figures["resealed"] == 0 and figures["zeros"] > 0
    # Filter: the late fields of the second input are left out, as ROOT leaves them.
    ours, roots = tmp_path / "filter.root", tmp_path / "filter_root.root"
    proc = run_merge(ours, multi, late)
    assert proc.returncode == 0, proc.stderr
    assert 'field "late_i64" of a later input is not in the first input' in proc.stderr
    assert root_merge(roots, [multi, late], "Filter")
    assert_same(root_reading(ours), root_reading(roots))
    # ... and the first input's deferred columns stay deferred when the first input is late.
    assert run_merge(tmp_path / "x.root", late, multi).returncode != 0
    assert not root_merge(tmp_path / "x_root.root", [late, multi], "Filter")
    assert not (tmp_path / "x.root").exists()


def test_union_with_late_extension_as_root(generated: dict[str, Path], tmp_path: Path) -> None:
    late, multi = generated["late_extension.root"], generated["multicluster.root"]
    ours, roots = tmp_path / "union.root", tmp_path / "union_root.root"
    figures = merge_ok(ours, multi, late, multi, "--mode", "union")
    assert figures["zeros"] > 0
    assert root_merge(roots, [multi, late, multi], "Union")
    assert_same(root_reading(ours), root_reading(roots))


def test_mixed_compressions(generated: dict[str, Path], tmp_path: Path) -> None:
    inputs = [generated[f"compression_{a}.root"] for a in ("zstd", "lz4", "zlib", "lzma", "none")]
    expected = [e for path in inputs for e in root_reading(path)]
    # Default: the first input's compression (zstd); the others are compressed again, the
    # uncompressed input's unsplit columns encoded again as the first input's split ones.
    out = tmp_path / "mixed.root"
    figures = merge_ok(out, *inputs)
    assert figures["copied"] > 0 and figures["resealed"] > 0
    assert_same(root_reading(out), expected)
    # Keeping every page's compression, and forcing another.
    for flags in (["--keep-compression"], ["--compression", "lz4:4"]):
        out = tmp_path / f"mixed_{flags[0].strip('-')}.root"
        merge_ok(out, *inputs, *flags)
        assert_same(root_reading(out), expected)


def test_pages_larger_than_a_key(generated_extra: dict[str, Path], tmp_path: Path) -> None:
    source = generated_extra["multikey_zstd.root"]
    out = tmp_path / "multikey.root"
    figures = merge_ok(out, source, source)
    assert figures["resealed"] == 0
    once = root_reading(source)
    assert_same(root_reading(out), once + once)


def test_streamer_fields_and_sub_directories(generated_extra: dict[str, Path], tmp_path: Path) -> None:
    streamer = generated_extra["streamer.root"]
    out = tmp_path / "streamer.root"
    merge_ok(out, streamer, streamer)
    once = root_reading(streamer)
    assert_same(root_reading(out), once + once)
    # An RNTuple in a/b/nt keeps its place.
    subdir = generated_extra["subdir.root"]
    out = tmp_path / "subdir.root"
    merge_ok(out, f"{subdir}:a/b/nt", f"{subdir}:a/b/nt")
    once = root_reading(subdir, "a/b/nt")
    assert_same(root_reading(out, "a/b/nt"), once + once)


def test_several_representations_are_refused(generated_extra: dict[str, Path], tmp_path: Path) -> None:
    source = generated_extra["multirep.root"]
    proc = run_merge(tmp_path / "rep.root", source, source)
    assert proc.returncode != 0
    assert "several column representations" in proc.stderr
    assert not (tmp_path / "rep.root").exists()
    # ROOT 6.40's merger refuses it too (its sources' columns must be representation 0).
    assert not root_merge(tmp_path / "rep_root.root", [source, source], "Filter")


# --- Modes against ROOT's TFileMerger ----------------------------------------------

MERGEGEN = r"""
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
namespace mergegen {
// x (int, or float with xFloat), v, s (withS), and with withExtra three more fields.
void Write(const char *path, int n, int offset, bool withS, bool withExtra, bool xFloat, int compression) {
   auto model = ROOT::RNTupleModel::Create();
   std::shared_ptr<int> xi;
   std::shared_ptr<float> xf;
   if (xFloat) xf = model->MakeField<float>("x"); else xi = model->MakeField<int>("x");
   auto v = model->MakeField<std::vector<float>>("v");
   std::shared_ptr<std::string> s;
   if (withS) s = model->MakeField<std::string>("s");
   std::shared_ptr<float> ef;
   std::shared_ptr<std::vector<int>> ev;
   std::shared_ptr<std::pair<int, double>> ep;
   if (withExtra) {
      ef = model->MakeField<float>("extra_f");
      ev = model->MakeField<std::vector<int>>("extra_v");
      ep = model->MakeField<std::pair<int, double>>("extra_p");
   }
   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(compression);
   opts.SetApproxZippedClusterSize(4000);
   auto w = ROOT::RNTupleWriter::Recreate(std::move(model), "ntpl", path, opts);
   for (int i = 0; i < n; i++) {
      int k = i + offset;
      if (xFloat) *xf = k * 0.5f; else *xi = k;
      v->assign(k % 4, k * 0.25f);
      if (withS) *s = std::string(k % 5, 'a' + k % 26);
      if (withExtra) {
         *ef = -k;
         ev->assign(k % 3, k);
         *ep = {k, k * 1.5};
      }
      w->Fill();
   }
}
}
"""


@pytest.fixture(scope="module")
def schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Four ROOT-written RNTuples: ``A`` (x, v, s), ``B`` (A's fields and three more,
    lz4), ``C`` (no s), ``D`` (x a float)."""
    ROOT = load_root()
    if not hasattr(ROOT, "mergegen"):
        ROOT.gInterpreter.Declare(MERGEGEN)
    d = tmp_path_factory.mktemp("mergegen")
    spec = {
        "A": (1000, 0, True, False, False, 505),
        "B": (700, 1000, True, True, False, 404),
        "C": (500, 2000, False, False, False, 505),
        "D": (300, 3000, True, False, True, 505),
    }
    paths = {}
    for key, args in spec.items():
        paths[key] = d / f"{key}.root"
        ROOT.mergegen.Write(str(paths[key]), *args)
    return paths


def test_union_reads_as_roots_union(schemas: dict[str, Path], tmp_path: Path) -> None:
    inputs = [schemas[k] for k in "ABAC"]
    ours, roots = tmp_path / "ours.root", tmp_path / "root.root"
    proc = run_merge(ours, *inputs, "--mode", "union")
    assert proc.returncode == 0, proc.stderr
    for field in ("extra_f", "extra_v", "extra_p"):
        assert f'added field "{field}"' in proc.stderr
    assert root_merge(roots, inputs, "Union")
    got = root_reading(ours)
    assert len(got) == 1000 + 700 + 1000 + 500
    assert_same(got, root_reading(roots))
    # The first input's entries read the added fields as zeros; C's lack s as well.
    first, last = dict(got[0]), dict(got[-1])
    assert first["extra_f"] == "0x0p+0" and first["extra_v"] == [] and last["s"] == ""


def test_filter_drops_extra_fields_as_root(schemas: dict[str, Path], tmp_path: Path) -> None:
    inputs = [schemas["A"], schemas["B"]]
    ours, roots = tmp_path / "ours.root", tmp_path / "root.root"
    proc = run_merge(ours, *inputs)
    assert proc.returncode == 0, proc.stderr
    assert root_merge(roots, inputs, "Filter")
    assert_same(root_reading(ours), root_reading(roots))


@pytest.mark.parametrize(
    ("mode", "inputs", "message"),
    [
        ("filter", "AC", r'input 2 \(.*C\.root\): the input lacks fields of the output: "s"'),
        ("strict", "AC", r'input 2 \(.*C\.root\): the input lacks fields of the output: "s"'),
        ("strict", "AB", r'input 2 \(.*B\.root\): fields the first input lacks \(mode strict\): "extra_f"'),
        ("union", "AD", r'merge --mode union of inputs whose field types differ \("x" as double\)'),
    ],
)  # fmt: skip
def test_rejects_what_root_rejects(
    schemas: dict[str, Path], tmp_path: Path, mode: str, inputs: str, message: str
) -> None:
    paths = [schemas[k] for k in inputs]
    assert not root_merge(tmp_path / "root.root", paths, mode.capitalize())
    out = tmp_path / "ours.root"
    proc = run_merge(out, *paths, "--mode", mode)
    assert proc.returncode != 0
    assert re.search(message, proc.stderr), proc.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("ours.root")]


def test_types_that_differ_are_promoted_where_root_refuses(schemas: dict[str, Path], tmp_path: Path) -> None:
    # A's x is std::int32_t, D's float: ROOT's merger refuses them (filter and strict);
    # ours reads both as double, as uproot and NumPy promote, and writes every value again.
    inputs = [schemas["A"], schemas["D"]]
    assert not root_merge(tmp_path / "root.root", inputs, "Filter")
    out = tmp_path / "ours.root"
    proc = run_merge(out, *inputs)
    assert proc.returncode == 0, proc.stderr
    assert 'field "x" differs in type between inputs: every input read as double' in proc.stderr
    got = root_reading(out)
    expected = root_reading(schemas["A"]) + root_reading(schemas["D"])
    assert len(got) == len(expected) == 1000 + 300

    def number(value: Any) -> float:
        return float.fromhex(value) if isinstance(value, str) else float(value)

    assert [number(dict(e)["x"]) for e in got] == [number(dict(e)["x"]) for e in expected]
    # Every other field of A is there, equal (D's extra fields are left out, as filter).
    others = [k for k in dict(got[0]) if k != "x"]
    assert others
    for key in others:
        assert [dict(e)[key] for e in got] == [dict(e).get(key) for e in expected], key
    # Python's merge says the same.
    import rntuple

    result = rntuple.merge([str(p) for p in inputs], tmp_path / "py.root")
    assert result.fields_converted == [("x", "double")]
    assert result.entries == 1000 + 300
    assert root_reading(tmp_path / "py.root") == got


def test_strict_accepts_equal_schemas(schemas: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "strict.root"
    merge_ok(out, schemas["A"], schemas["A"], "--mode", "strict")
    once = root_reading(schemas["A"])
    assert_same(root_reading(out), once + once)


# --- hadd and us -----------------------------------------------------------------


def test_hadd_merges_our_files_and_we_merge_hadds(schemas: dict[str, Path], tmp_path: Path) -> None:
    a, b = schemas["A"], schemas["B"]
    # Ours: A then B in filter mode, and A re-encoded by our writer (rntuple copy).
    ours = tmp_path / "ours.root"
    merge_ok(ours, a, b)
    copied = tmp_path / "copied.root"
    proc = run_rntuple("copy", f"{a}:ntpl", str(copied), timeout=120)
    assert proc.returncode == 0, proc.stderr
    hadded = tmp_path / "hadd_of_ours.root"
    proc = subprocess.run(
        [str(hadd_bin()), "-f", str(hadded), str(ours), str(copied)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    a_rows, ours_rows = root_reading(a), root_reading(ours)
    assert_same(root_reading(hadded), ours_rows + a_rows)
    # Ours of our own files (a merge output and a copy written by our writer).
    own = tmp_path / "ours_of_ours.root"
    merge_ok(own, ours, copied)
    assert_same(root_reading(own), ours_rows + a_rows)
    # Ours of hadd's output and A again: read by ROOT and by us alike.
    again = tmp_path / "ours_of_hadd.root"
    merge_ok(again, hadded, a)
    expected = ours_rows + a_rows + a_rows
    assert_same(root_reading(again), expected)
    dump = run_rntuple("dump", f"{again}:ntpl", "--json", timeout=120)
    assert dump.returncode == 0, dump.stderr
    assert_same(rootdump.load_json(dump.stdout), expected)


# --- Remote inputs ------------------------------------------------------------------


def test_remote_inputs_over_http(generated: dict[str, Path], tmp_path: Path) -> None:
    """Inputs read from nginx on loopback (vectored range requests) merge as local ones."""
    import server_http

    served = tmp_path / "served"
    served.mkdir()
    late = generated["late_extension.root"]
    shutil.copy(late, served / "late.root")
    server = server_http.start(served)
    try:
        out = tmp_path / "remote.root"
        url = server.url("late.root")
        figures = merge_ok(out, f"{url}:ntpl", late, url)
        assert figures["inputs"] == 3
        once = root_reading(late)
        assert_same(root_reading(out), once * 3)
        assert any(r.get("status") == "206" for r in server.requests())
    finally:
        server.stop()
        server.kill()
        shutil.rmtree(server.workdir, ignore_errors=True)


# --- Never losing data ------------------------------------------------------------


def test_a_corrupt_page_stops_the_merge(schemas: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.root"
    shutil.copy(schemas["A"], bad)
    # Flip a byte in the middle of the file's page data (past the header envelope).
    data = bytearray(bad.read_bytes())
    data[len(data) // 3] ^= 0xFF
    bad.write_bytes(bytes(data))
    out = tmp_path / "out.root"
    out.write_bytes(b"keep me")
    proc = run_merge(out, schemas["A"], bad, "--force")
    assert proc.returncode != 0
    assert "bad.root" in proc.stderr and re.search(r"checksum|corrupt", proc.stderr), proc.stderr
    assert out.read_bytes() == b"keep me"
    # Without --force an existing output is refused; an input cannot be the output.
    proc = run_merge(out, schemas["A"])
    assert proc.returncode != 0 and "already exists" in proc.stderr
    copy = tmp_path / "a.root"
    shutil.copy(schemas["A"], copy)
    before = copy.read_bytes()
    proc = run_merge(copy, copy, schemas["C"], "--force")
    assert proc.returncode != 0
    assert copy.read_bytes() == before


# --- Python -----------------------------------------------------------------------


def test_python_merge(schemas: dict[str, Path], tmp_path: Path) -> None:
    code = f"""
import json, rntuple
r = rntuple.merge([{str(schemas["A"])!r}, {str(schemas["B"])!r}, {str(schemas["C"])!r}],
                  {str(tmp_path / "py.root")!r}, mode="union")
print(json.dumps([r.inputs, r.entries, r.fields_added, r.zero_pages > 0, r.compression]))
try:
    rntuple.merge([{str(schemas["A"])!r}, {str(schemas["C"])!r}], {str(tmp_path / "no.root")!r})
except rntuple.InvalidArgumentError as e:
    print("error:", e)
try:
    rntuple.merge([{str(schemas["A"])!r}], {str(tmp_path / "no.root")!r}, mode="both")
except rntuple.InvalidArgumentError as e:
    print("error:", e)
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == '[3, 2200, ["extra_f", "extra_v", "extra_p"], true, 505]'
    assert 'the input lacks fields of the output: "s"' in lines[1]
    assert "mode='both'" in lines[2]
    roots = tmp_path / "root.root"
    assert root_merge(roots, [schemas["A"], schemas["B"], schemas["C"]], "Union")
    assert_same(root_reading(tmp_path / "py.root"), root_reading(roots))
    assert not (tmp_path / "no.root").exists()


def test_union_warns_per_input_lacking_fields(schemas: dict[str, Path], tmp_path: Path) -> None:
    """A union merge says, per input, which of the output's fields it lacks and that its
    entries hold zeros there: A and B lack B's extra fields (A twice), C lacks s too."""
    inputs = [schemas[k] for k in "ABAC"]
    proc = run_merge(tmp_path / "ours.root", *inputs, "--mode", "union")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning: input" in line]
    extras = "extra_f, extra_v, extra_p"
    lacks = "rntuple: warning: input {} lacks {} of the output's fields ({}): its {} entries hold zeros there"
    assert warnings == [
        lacks.format(schemas["A"], 3, extras, 1000),
        lacks.format(schemas["A"], 3, extras, 1000),
        lacks.format(schemas["C"], 4, f"s, {extras}", 500),
    ], proc.stderr


def test_union_of_inputs_sharing_no_field_is_refused_unless_allowed(tmp_path: Path) -> None:
    """Inputs with no field in common would make a file of zeros for half of every
    entry: refused (exit 2, naming the input and the option), merged with
    --allow-disjoint (ROOT reads the zeros), with a warning per input."""
    import numpy as np

    import rntuple

    left, right = tmp_path / "left.root", tmp_path / "right.root"
    with rntuple.recreate(left) as f:
        f["ntpl"] = {"x": np.arange(3, dtype=np.int32)}
    with rntuple.recreate(right) as f:
        f["ntpl"] = {"y": np.arange(10, 12, dtype=np.float64)}
    out = tmp_path / "out.root"
    refused = run_merge(out, left, right, "--mode", "union")
    assert refused.returncode == 2 and not out.exists(), refused.stderr
    assert f"({right})" in refused.stderr and "shares no field" in refused.stderr, refused.stderr
    assert "--allow-disjoint" in refused.stderr and len(refused.stderr.splitlines()) == 1
    merged = run_merge(out, left, right, "--mode", "union", "--allow-disjoint")
    assert merged.returncode == 0, merged.stderr
    assert (
        f"warning: input {left} lacks 1 of the output's fields (y): its 3 entries hold zeros there"
        in merged.stderr
    )
    assert (
        f"warning: input {right} lacks 1 of the output's fields (x): its 2 entries hold zeros there"
        in merged.stderr
    )
    got = [dict(e) for e in root_reading(out)]
    assert got == [
        {"x": 0, "y": "0x0p+0"},
        {"x": 1, "y": "0x0p+0"},
        {"x": 2, "y": "0x0p+0"},
        {"x": 0, "y": "0x1.4p+3"},
        {"x": 0, "y": "0x1.6p+3"},
    ]
    with pytest.warns(rntuple.MergeWarning, match=r"lacks 1 of the output's fields \(y\)"):
        result = rntuple.merge([left, right], tmp_path / "py.root", mode="union", allow_disjoint=True)
    assert result.inputs_lacking == [(str(left), 3, ["y"]), (str(right), 2, ["x"])]
    with pytest.raises(rntuple.InvalidArgumentError, match="shares no field"):
        rntuple.merge([left, right], tmp_path / "no.root", mode="union")
