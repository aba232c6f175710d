"""``rntuple convert`` (TTree -> RNTuple) against ROOT 6.40, case by case of ``ttreegen``.

- For every case, ROOT reads our RNTuple to exactly the values it reads from the TTree
  (``ttree_oracle.compare``: RDataFrame on both, every column).
- For every case ROOT's ``RNTupleImporter`` accepts, our schema (field tree, types,
  aliases, column types, projections) equals the schema of the importer's output.
- The cases the importer rejects (``Float16_t``, ``TString``) are converted by ours.
- STL containers (``stl_containers``: sets, multisets, unordered sets, a vector of sets,
  a pair, maps of numbers, vectors and sets, split and unsplit, a vector of maps) convert
  to what ROOT reads from the tree, in the importer's schema; ``TString`` inside them
  (``stl_tstring``: split, member-wise, in a vector; the importer rejects it) as
  ``std::string``.
- ``std::array`` and ``std::bitset`` (``stl_array_bitset``) wherever a TTree holds them:
  items of vectors, sets and maps (split and unsplit, member-wise), nested in vectors of
  vectors, a whole ``std::bitset``, members of a class split, unsplit and in vectors (a
  vector of arrays in an unsplit class's items too), in the importer's schema; ROOT
  reads them back as from the tree, and so do ``dump`` (arrays as lists, bitsets as
  strings, most significant bit first) and Python's ``arrays`` (bitsets as lists of bools,
  bit 0 first).
- ROOT objects (``tobject_classes``, ``clonesarray``): classes deriving from ``TObject``
  (its ``fUniqueID`` and ``fBits`` compared too) and from plain bases, split and unsplit,
  alone and in vectors, in ROOT 6.40's layout (base classes as ``:_0`` subfields,
  ``TObject`` as its ``TObject`` field); a ``TClonesArray`` as a ``std::vector`` of its
  class (which the importer rejects).
- Objects ROOT's RNTuple stores only whole (``streamer_objects``: ``TLorentzVector``, a
  vector of them, ``TVector3`` and a ``TClonesArray`` stored the old way
  (``TBranchObject``), a class with a counted C array, a class with a streamer of its
  own), which the importer rejects, become streamer fields that ROOT reads back equal
  (the counted array's values compared too; also split, in a split vector and in a
  whole vector the TTree streamed member-wise); their schema is what ROOT's
  ``RStreamerField`` writes (type, version, checksum, columns) and the streamer infos
  travel in the extra type information.
- Unsplit on request (``--unsplit``, ``--split-policy unsplit``): split branches joined
  into whole objects that ROOT reads back equal, streamed to the very bytes ROOT's own
  streamer writes; ``--split-policy auto`` on an AOD-like tree (``aod_like``) keeps each
  product in the smaller form, the file no larger than either all-split or all-unsplit.
- One case is refused with a clear error instead: a top-level ``std::array`` branch
  and a split ``std::vector`` of them, which ROOT 6.40 writes without their values (the
  element branch holds empty entries; ROOT cannot read the first back, reads zeros for
  the second, and its importer writes zeros): ours says so rather than invent values.
  A branch that cannot become a field (a name with a dot) fails the conversion, or with
  ``--skip-unsupported`` is left out with a warning.
- Trees written without a flush first (``*_kept_baskets``: every branch kind, the last
  basket of each branch kept in the tree's metadata, the others in keys of their own)
  convert like the others (the cases above); the fixtures do hold such baskets (uproot).
- Bad TTrees (truncated files, flipped bytes in baskets and in the tree's metadata,
  damaged baskets kept in the metadata) give a clear error, exit status 1 and no output
  file; or, where a flipped byte touches nothing that is read, the values ROOT reads
  from the original tree.

Nothing is skipped: a missing binary or fixture fails the test.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import ttree_oracle
import ttreegen
from conftest import require_rntuple_bin, run_rntuple

from rootdump import load_root

#: Cases ROOT 6.40's importer rejects (``test_ttree_oracle.py`` checks its messages).
IMPORTER_REJECTS = {"float16", "tstring", "clonesarray", "streamer_objects", "stl_tstring"}
#: Cases ours refuses (see the module documentation): each refused branch with a part
#: of the message it fails with.
REFUSED = {
    "stl_array": {
        "arr": 'field "arr": branch "_M_elems[3]", entry 0 of the chunk: corrupt data',
        "varr": 'field "varr": branch "varr._M_elems[3]", entry 1 of the chunk: corrupt data',
    },
}
#: What the refusals above say of ROOT's empty split std::array entries.
EMPTY_STD_ARRAY = "ROOT 6.40 writes a split std::array, or a split collection of them, without the values"
#: The branches those cases convert when the refused branch is left out.
REST = {"stl_array": "k"}


def _name(case: str) -> str:
    """The RNTuple ours writes: the tree's path (``a/b/t``: RNTuple ``t`` in directory
    ``a/b``, as ROOT's importer)."""
    return ttreegen.CASES[case].tree


def _convert(
    src: Path, tree: str, out: Path | str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_rntuple("convert", f"{src}:{tree}", str(out), *extra, env=env)


@pytest.fixture(scope="session")
def converted(ttrees: dict[str, Path]) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """Every case converted by ``rntuple convert``: ``{case: (output, process)}``."""
    outdir = next(iter(ttrees.values())).parent / "converted"
    outdir.mkdir(exist_ok=True)
    out = {}
    for case, src in ttrees.items():
        dst = outdir / f"{case}.root"
        out[case] = (dst, _convert(src, ttreegen.CASES[case].tree, dst, "--force"))
    return out


@pytest.mark.parametrize("case", [c for c in ttreegen.CASES if c not in REFUSED])
def test_root_reads_our_rntuple_as_the_ttree(
    case: str, ttrees: dict[str, Path], converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    out, proc = converted[case]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"converted {ttreegen.CASES[case].entries} entries"), proc.stdout
    diffs = ttree_oracle.compare(ttrees[case], ttreegen.CASES[case].tree, out, _name(case))
    assert diffs == [], "\n".join(diffs[:20])


def test_convert_streams_into_an_object_store_without_a_temporary_file(
    ttrees: dict[str, Path],
    converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
    tmp_path: Path,
) -> None:
    """``convert`` into a dataset of objects (``ntpl+file://``) writes the objects as it
    converts, with no file in between: with ``TMPDIR`` naming no directory it succeeds,
    and every entry (streamer fields, a tree in sub-directories, NanoAOD-like
    collections) equals the file conversion's; an existing dataset is refused unless
    ``--force``."""
    no_tmp = {"TMPDIR": str(tmp_path / "no-such-directory")}
    for case in ("streamer_objects", "subdir", "nanoaod"):
        file_out, proc = converted[case]
        assert proc.returncode == 0, proc.stderr
        url = f"ntpl+file://{tmp_path}/{case}"
        written = _convert(ttrees[case], ttreegen.CASES[case].tree, url, env=no_tmp)
        assert written.returncode == 0, written.stderr
        assert written.stdout.startswith(f"converted {ttreegen.CASES[case].entries} entries"), written.stdout
        ours = run_rntuple("dump", "--json", url)
        theirs = run_rntuple("dump", "--json", f"{file_out}:{_name(case)}")
        assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
        assert json.loads(ours.stdout) == json.loads(theirs.stdout)
        again = _convert(ttrees[case], ttreegen.CASES[case].tree, url, env=no_tmp)
        assert again.returncode == 2 and "already exists" in again.stderr, again.stderr
        forced = _convert(ttrees[case], ttreegen.CASES[case].tree, url, "--force", env=no_tmp)
        assert forced.returncode == 0, forced.stderr


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_cases_fail_clearly_and_the_rest_converts(
    case: str,
    ttrees: dict[str, Path],
    converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
    tmp_path: Path,
) -> None:
    out, proc = converted[case]
    _assert_clean_failure(proc, out)
    assert any(message in proc.stderr for message in REFUSED[case].values()), proc.stderr
    for branch, message in REFUSED[case].items():
        alone = tmp_path / f"{branch}.root"
        proc = _convert(ttrees[case], "t", alone, "--branches", branch)
        _assert_clean_failure(proc, alone)
        assert message in proc.stderr and EMPTY_STD_ARRAY in proc.stderr, proc.stderr
    rest = tmp_path / "rest.root"
    proc = _convert(ttrees[case], "t", rest, "--branches", REST[case])
    assert proc.returncode == 0, proc.stderr
    assert ttree_oracle.compare(ttrees[case], "t", rest, "t", [REST[case]]) == []


def test_a_branch_that_cannot_be_a_field_fails_or_is_left_out_when_asked(tmp_path: Path) -> None:
    ROOT = load_root()
    src = tmp_path / "dotted.root"
    f = ROOT.TFile.Open(str(src), "RECREATE")
    t = ROOT.TTree("t", "t")
    k = ROOT.std.vector["int"](1)
    x = ROOT.std.vector["float"](1)
    t.Branch("k", k.data(), "k/I")
    t.Branch("a.b", x.data(), "a.b/F")
    for i in range(5):
        k[0], x[0] = i * 3, i / 4
        t.Fill()
    t.Write()
    f.Close()
    out = tmp_path / "out.root"
    proc = _convert(src, "t", out)
    _assert_clean_failure(proc, out)
    assert 'branch "a.b": a name with a dot cannot be a field name' in proc.stderr, proc.stderr
    proc = _convert(src, "t", out, "--skip-unsupported")
    assert proc.returncode == 0, proc.stderr
    assert "warning: left out" in proc.stderr and "a.b" in proc.stderr, proc.stderr
    assert ttree_oracle.rntuple_columns(out, "t") == ["k"]
    assert ttree_oracle.compare(src, "t", out, "t", ["k"]) == []


@pytest.mark.parametrize("case", [c for c in ttreegen.CASES if c not in IMPORTER_REJECTS | set(REFUSED)])
def test_schema_equals_the_importers(
    case: str,
    converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
    imported: dict[str, tuple[Path, ttree_oracle.ImportResult]],
) -> None:
    ours, proc = converted[case]
    assert proc.returncode == 0, proc.stderr
    theirs, result = imported[case]
    assert result.ok, result.error
    want = ttree_oracle.rntuple_schema(theirs, ttreegen.CASES[case].tree)
    got = ttree_oracle.rntuple_schema(ours, _name(case))
    assert ttree_oracle.schema_lines(got) == ttree_oracle.schema_lines(want)
    assert got == want


def test_objects_stored_whole_have_roots_streamer_field_schema(
    converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]], tmp_path: Path
) -> None:
    """Each streamer field's type, version, checksum and columns equal those of the
    field ROOT's own ``RStreamerField`` writes for the same class; the extra type
    information lists the classes involved."""
    ours, proc = converted["streamer_objects"]
    assert proc.returncode == 0, proc.stderr
    got = {f["name"]: f for f in ttree_oracle.rntuple_schema(ours, "t")["fields"]}
    types = {
        "p4": "TLorentzVector",
        "vp4": "std::vector<TLorentzVector>",
        "v3": "TVector3",
        "counted": "TGCounted",
        "custom": "TGCustom",
        "ca0": "TClonesArray",
        "counted99": "TGCounted",
        "vcounted": "std::vector<TGCounted>",
        "vcounted0": "std::vector<TGCounted>",
    }
    want = _streamer_reference(tmp_path, types)
    for name in types:
        assert got[name]["role"] == "Streamer", got[name]
        assert got[name] == want[name], name
    assert got["k"]["role"] == "Plain"
    extra = ttree_oracle.rntuple_streamer_infos(ours, "t")
    assert {"TLorentzVector", "TVector3", "TGCounted"} <= set(extra), extra


def _plain(value: object) -> object:
    """A dumped value without TObject's members (``:_0`` records of ``fUniqueID`` and
    ``fBits``, which uproot leaves out), floats as floats."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != ":_0" or set(v) != {"fUniqueID", "fBits"}}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str) and value.lstrip("-").startswith(("0x", "inf", "nan")):
        return float.fromhex(value) if "0x" in value else float(value)
    return value


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_dump_decodes_streamer_fields_as_uproot_reads_the_ttree(
    ttrees: dict[str, Path], converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    """``dump`` decodes the streamer fields the converter wrote (TLorentzVector, a vector
    of them, TVector3, a class with a counted C array) by the streamer infos the file
    carries: every entry equals uproot's reading of the same objects from the TTree."""
    import uproot

    ours, proc = converted["streamer_objects"]
    assert proc.returncode == 0, proc.stderr
    dump = subprocess.run(
        [
            str(require_rntuple_bin()),
            "dump",
            "--jsonl",
            f"{ours}:t",
            "--fields",
            "p4,vp4,v3,counted,counted99",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = [json.loads(line) for line in dump.stdout.splitlines()]
    tree = uproot.open(ttrees["streamer_objects"])["t"]
    assert len(rows) == tree.num_entries
    # (uproot cannot read vcounted and vcounted0: the oracle compares them with ROOT.)
    for branch in ("p4", "vp4", "v3", "counted", "counted99"):
        want = tree[branch].array(library="ak").tolist()
        got = [_plain(r[branch]) for r in rows]
        bad = [i for i, (x, y) in enumerate(zip(got, want, strict=True)) if not _same(x, y)]
        assert bad == [], (branch, bad[:3], got[bad[0]] if bad else None, want[bad[0]] if bad else None)


def test_dump_decodes_roots_own_streamer_fields(tmp_path: Path) -> None:
    """Streamer fields ROOT's ``RStreamerField`` wrote (a vector of a class with a counted
    array, a vector of a class with strings and vectors, such a class alone) decode to
    the values filled: our reading of ROOT's object-wise framing (item headers, member
    headers) is ROOT's."""
    ROOT = ttreegen.declare_user_classes()
    ROOT.gInterpreter.Declare(
        """
        #include <ROOT/RField.hxx>
        #include <ROOT/RNTupleModel.hxx>
        #include <ROOT/RNTupleWriter.hxx>
        void test_convert_roots_streamer_fields(const char *path) {
           auto m = ROOT::RNTupleModel::Create();
           m->AddField(std::make_unique<ROOT::RStreamerField>("vc", "std::vector<TGCounted>"));
           m->AddField(std::make_unique<ROOT::RStreamerField>("ve", "std::vector<TGEvent>"));
           m->AddField(std::make_unique<ROOT::RStreamerField>("e", "TGEvent"));
           auto w = ROOT::RNTupleWriter::Recreate(std::move(m), "t", path);
           auto vc = w->GetModel().GetDefaultEntry().GetPtr<std::vector<TGCounted>>("vc");
           auto ve = w->GetModel().GetDefaultEntry().GetPtr<std::vector<TGEvent>>("ve");
           auto e = w->GetModel().GetDefaultEntry().GetPtr<TGEvent>("e");
           short s[3] = {1, -2, 3};
           vc->resize(2);
           (*vc)[0].Set(3, s);
           (*vc)[0].fE = 1.5;
           (*vc)[1].fE = 2.5;
           ve->resize(2);
           (*ve)[0].i = 7;
           (*ve)[0].s = "ab";
           (*ve)[0].vf = {1.f};
           (*ve)[0].vs = {"x", "yz"};
           (*ve)[1].i = 8;
           (*ve)[1].nested.v = {4, 5};
           e->i = 9;
           e->s = "cd";
           e->vs = {"q"};
           e->f[2] = 0.5f;
           w->Fill();
        }
        """
    )
    path = tmp_path / "roots.root"
    ROOT.test_convert_roots_streamer_fields(str(path))
    dump = subprocess.run(
        [str(require_rntuple_bin()), "dump", "--jsonl", f"{path}:t"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    (row,) = [_plain(json.loads(line)) for line in dump.stdout.splitlines()]
    assert row["vc"] == [{"fN": 3, "fSlice": [1, -2, 3], "fE": 1.5}, {"fN": 0, "fSlice": [], "fE": 2.5}]
    first, second = row["ve"]
    assert (first["i"], first["s"], first["vf"], first["vs"]) == (7, "ab", [1.0], ["x", "yz"])
    assert (second["i"], second["s"], second["vs"], second["nested"]["v"]) == (8, "", [], [4, 5])
    assert (row["e"]["i"], row["e"]["s"], row["e"]["vs"], row["e"]["f"]) == (9, "cd", ["q"], [0.0, 0.0, 0.5])


def test_python_reads_streamer_fields_as_uproot_reads_the_ttree(
    ttrees: dict[str, Path], converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    """Python's ``arrays`` (Awkward, through Arrow) and the Arrow stream decode the
    streamer fields as ``dump`` does: records equal to uproot's reading of the TTree."""
    import pyarrow as pa
    import uproot

    import rntuple

    ours, proc = converted["streamer_objects"]
    assert proc.returncode == 0, proc.stderr
    branches = ["p4", "vp4", "v3", "counted", "counted99"]
    tree = uproot.open(ttrees["streamer_objects"])["t"]
    with rntuple.open(str(ours)) as f:
        nt = f["t"]
        arrays = nt.arrays(branches)
        schema = nt.schema
    for branch in branches:
        assert pa.types.is_struct(schema.field(branch).type) or pa.types.is_large_list(
            schema.field(branch).type
        ), schema.field(branch)
        want = tree[branch].array(library="ak").tolist()
        got = [_plain(v) for v in arrays[branch].tolist()]
        bad = [i for i, (x, y) in enumerate(zip(got, want, strict=True)) if not _same(x, y)]
        assert bad == [], (branch, bad[:3])


def _root_plain(value: object) -> object:
    """ROOT's reading (``ttree_oracle``) in plain form: a ``std::array`` rendered through
    its class (``{"_M_elems": [...]}``, a class member) as its list, a pair
    (``{"first", "second"}``) as ``[first, second]``, floats as floats."""
    if isinstance(value, dict):
        if set(value) == {"_M_elems"}:
            return _root_plain(value["_M_elems"])
        if set(value) == {"first", "second"}:
            return [_root_plain(value["first"]), _root_plain(value["second"])]
        return {k: _root_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_root_plain(v) for v in value]
    return _plain(value)


def _undump(got: object, want: object) -> object:
    """A value ``dump`` printed in the plain form of ``want`` (ROOT's reading, see
    :func:`_root_plain`): a bitset string (most significant bit first) as its bits from
    bit 0, a map object as a list of ``[key, value]``, hex floats as floats."""
    if isinstance(got, str) and isinstance(want, list):
        assert set(got) <= {"0", "1"}, got
        return [c == "1" for c in reversed(got)]
    if isinstance(got, dict) and isinstance(want, list):
        pairs = []
        for k, (key, value) in enumerate(got.items()):
            w = want[k] if k < len(want) else [None, None]
            pairs.append([int(key) if isinstance(w[0], int) else key, _undump(value, w[1])])
        return pairs
    if isinstance(got, dict) and isinstance(want, dict):
        return {k: _undump(v, want.get(k)) for k, v in got.items()}
    if isinstance(got, list) and isinstance(want, list):
        return [_undump(g, w) for g, w in zip(got, want + [None] * len(got), strict=False)]
    return _plain(got)


def test_dump_and_python_read_arrays_and_bitsets_as_root_reads_the_ttree(
    ttrees: dict[str, Path], converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]]
) -> None:
    """``dump`` and Python's ``arrays`` of the converted ``stl_array_bitset`` give, every
    column and entry, the values ROOT reads from the TTree: ``std::array`` as lists,
    ``std::bitset`` as strings in ``dump`` (most significant bit first) and as lists of
    bools in Python (bit 0 first), maps as objects (``dump``) and ``[key, value]`` lists
    (Python)."""
    import rntuple

    case = "stl_array_bitset"
    ours, proc = converted[case]
    assert proc.returncode == 0, proc.stderr
    want = {c: [_root_plain(v) for v in vs] for c, vs in ttree_oracle.ttree_values(ttrees[case], "t").items()}
    dump = subprocess.run(
        # Floats as hex strings: bit exact, compared as ROOT's values.
        [str(require_rntuple_bin()), "dump", "--jsonl", "--floats", "hex", f"{ours}:t"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = [json.loads(line) for line in dump.stdout.splitlines()]
    with rntuple.open(str(ours)) as f:
        arrays = f["t"].arrays()
    assert len(rows) == len(arrays) == ttreegen.CASES[case].entries
    for column, values in want.items():
        assert any(v not in ([], {}) for v in values), column
        dumped = [_undump(r[column], w) for r, w in zip(rows, values, strict=True)]
        python = json.loads(json.dumps(arrays[column].tolist()))
        for reader, got in (("dump", dumped), ("python", python)):
            bad = [i for i, (x, y) in enumerate(zip(got, values, strict=True)) if not _same(x, y)]
            assert bad == [], (reader, column, bad[:3], bad and got[bad[0]], bad and values[bad[0]])
    # The conventions themselves, at an entry with a 20-bit bitset: bit 0 last in dump's string.
    bits = want["bs"][5]
    assert rows[5]["bs"] == "".join("1" if b else "0" for b in reversed(bits)) and len(bits) == 20


def test_unsplit_stores_whole_object_branches_as_streamer_fields(
    ttrees: dict[str, Path], tmp_path: Path
) -> None:
    """``--unsplit GLOB``: a whole-object branch RNTuple could split (a TObject-derived
    class, its members without their header in the TTree) and a split one (its member
    branches joined into objects) become streamer fields ROOT reads back equal; a pattern
    matching nothing is refused."""
    src = ttrees["tobject_classes"]
    out = tmp_path / "unsplit.root"
    proc = _convert(src, "t", out, "--unsplit", "hit0,hit")
    assert proc.returncode == 0, proc.stderr
    roles = {f["name"]: f["role"] for f in ttree_oracle.rntuple_schema(out, "t")["fields"]}
    assert roles["hit0"] == roles["hit"] == "Streamer" and roles["track"] == "Record", roles
    assert ttree_oracle.compare(src, "t", out, "t") == []
    bad = tmp_path / "bad.root"
    proc = _convert(src, "t", bad, "--unsplit", "nothing*")
    assert proc.returncode != 0 and 'pattern "nothing*" matches no branch' in proc.stderr, proc.stderr
    assert not bad.exists()


def _streamer_reference(tmp_path: Path, types: dict[str, str]) -> dict[str, dict]:
    """The top-level fields ROOT's own ``RStreamerField`` writes for ``{name: type}``."""
    ROOT = ttreegen.declare_user_classes()
    ref = tmp_path / "reference.root"
    if not hasattr(ROOT, "test_convert_streamer_reference"):
        ROOT.gInterpreter.Declare(
            """
            #include <ROOT/RField.hxx>
            #include <ROOT/RNTupleModel.hxx>
            #include <ROOT/RNTupleWriter.hxx>
            void test_convert_streamer_reference(const char *path, const std::vector<std::string> &names,
                                                 const std::vector<std::string> &types) {
               auto model = ROOT::RNTupleModel::Create();
               for (std::size_t k = 0; k < names.size(); ++k)
                  model->AddField(std::make_unique<ROOT::RStreamerField>(names[k], types[k]));
               auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "t", path);
            }
            """
        )
    strings = ROOT.std.vector["std::string"]
    ROOT.test_convert_streamer_reference(str(ref), strings(list(types)), strings(list(types.values())))
    return {f["name"]: f for f in ttree_oracle.rntuple_schema(ref, "t")["fields"]}


#: Per case, the branches holding objects (classes, collections of classes), which
#: ``--split-policy unsplit`` stores as streamer fields.
OBJECT_BRANCHES = {
    "split_class": {"ev", "pl", "vec"},
    "tobject_classes": {"hit", "hit0", "track", "vhit", "vtrack0", "der", "vder0"},
    "clonesarray": {"hits"},
    "aod_like": {"tracks", "vertices", "aux", "trigger", "met"},
}


@pytest.mark.parametrize("case", list(OBJECT_BRANCHES))
def test_split_policy_unsplit_joins_split_objects_that_root_reads_back(
    case: str, ttrees: dict[str, Path], tmp_path: Path
) -> None:
    """``--split-policy unsplit``: every branch of objects, split in the TTree (member
    branches joined into objects, a split TClonesArray into a vector of its class) or
    whole, becomes a streamer field; ROOT reads every object back equal to the TTree, and
    each field's type, version and checksum are those of ROOT's own ``RStreamerField``."""
    src = ttrees[case]
    out = tmp_path / "unsplit.root"
    proc = _convert(src, "t", out, "--split-policy", "unsplit")
    assert proc.returncode == 0, proc.stderr
    fields = {f["name"]: f for f in ttree_oracle.rntuple_schema(out, "t")["fields"]}
    streamers = {name for name, f in fields.items() if f["role"] == "Streamer"}
    assert streamers == OBJECT_BRANCHES[case], fields.keys()
    diffs = ttree_oracle.compare(src, "t", out, "t")
    assert diffs == [], "\n".join(diffs[:20])
    want = _streamer_reference(tmp_path, {name: fields[name]["type"] for name in sorted(streamers)})
    for name in streamers:
        assert fields[name] == want[name], name


def test_joined_objects_stream_as_root_streams_them(ttrees: dict[str, Path], tmp_path: Path) -> None:
    """A TGEvent (ClassDef, nested class, STL members, strings, arrays) joined from its
    split branches streams to the very bytes ROOT's own streamer wrote for the same
    objects in the unsplit tree (``unsplit_class`` fills the same values)."""
    rntuple = str(require_rntuple_bin())
    streamed = []
    for case in ("split_class", "unsplit_class"):
        out = tmp_path / f"{case}.root"
        proc = _convert(ttrees[case], "t", out, "--unsplit", "ev")
        assert proc.returncode == 0, proc.stderr
        dump = subprocess.run(
            [rntuple, "dump", str(out), "--jsonl", "--streamer-bytes", "--fields", "ev"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        streamed.append([json.loads(line)["ev"] for line in dump.stdout.splitlines()])
    joined, roots = streamed
    assert len(joined) == ttreegen.CASES["split_class"].entries
    assert joined == roots


def test_split_policy_auto_takes_the_smaller_form(ttrees: dict[str, Path], tmp_path: Path) -> None:
    """``--split-policy auto`` on the AOD-like tree: each product in the form its sample
    was smaller in (the sizes printed per branch), the file no larger than the smaller
    of all-split and all-unsplit, and ROOT reads it equal to the TTree."""
    src = ttrees["aod_like"]
    sizes = {}
    outputs = {}
    for policy in ("split", "unsplit", "auto"):
        out = tmp_path / f"{policy}.root"
        proc = _convert(src, "t", out, "--split-policy", policy)
        assert proc.returncode == 0, proc.stderr
        sizes[policy] = out.stat().st_size
        outputs[policy] = proc.stdout
    choices = {}
    for line in outputs["auto"].splitlines():
        if ": branch " in line:
            branch = line.split(": branch ")[1].split(":")[0]
            choices[branch] = line.rsplit("-> ", 1)[1]
    assert set(choices) == OBJECT_BRANCHES["aod_like"], outputs["auto"]
    # The fixture exercises both forms (its large track collection is smaller unsplit).
    assert set(choices.values()) == {"split", "unsplit"}, choices
    assert sizes["auto"] <= min(sizes["split"], sizes["unsplit"]), sizes
    roles = {f["name"]: f["role"] for f in ttree_oracle.rntuple_schema(tmp_path / "auto.root", "t")["fields"]}
    for branch, form in choices.items():
        assert (roles[branch] == "Streamer") == (form == "unsplit"), (branch, roles[branch])
    assert ttree_oracle.compare(src, "t", tmp_path / "auto.root", "t") == []


def test_unsplit_bitsets_are_streamer_fields_root_reads_back(
    ttrees: dict[str, Path],
    converted: dict[str, tuple[Path, subprocess.CompletedProcess[str]]],
    tmp_path: Path,
) -> None:
    """``--unsplit`` of a ``std::bitset`` and of a vector of them: streamer fields with the
    schema ROOT's own ``RStreamerField`` writes for those types (its bytes without the
    collection's header), read back by ROOT as from the TTree and decoded by ``dump``
    as the split conversion's bits."""
    case = "stl_array_bitset"
    src = ttrees[case]
    out = tmp_path / "unsplit.root"
    proc = _convert(src, "t", out, "--branches", "bs,vbs,k", "--unsplit", "bs,vbs")
    assert proc.returncode == 0, proc.stderr
    got = {f["name"]: f for f in ttree_oracle.rntuple_schema(out, "t")["fields"]}
    want = _streamer_reference(tmp_path, {"bs": "std::bitset<20>", "vbs": "std::vector<std::bitset<8>>"})
    for name in ("bs", "vbs"):
        assert got[name]["role"] == "Streamer" and got[name] == want[name], (got[name], want[name])
    assert ttree_oracle.compare(src, "t", out, "t", ["bs", "vbs", "k"]) == []
    split, proc = converted[case]
    assert proc.returncode == 0, proc.stderr
    dumps = [
        subprocess.run(
            [str(require_rntuple_bin()), "dump", "--jsonl", f"{path}:t", "--fields", "bs,vbs"],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout.splitlines()
        for path in (out, split)
    ]
    assert dumps[0] == dumps[1] and len(dumps[0]) == ttreegen.CASES[case].entries
    assert json.loads(dumps[0][5])["bs"] == json.loads(dumps[1][5])["bs"] != ""


def test_python_split_policy_chooses_as_the_command(ttrees: dict[str, Path], tmp_path: Path) -> None:
    """``rntuple.convert(..., split_policy="auto")``: the same choices as the command
    (``ConvertResult.split_choices``), the chosen branches stored as streamer fields; a
    policy that does not exist is refused before anything is written."""
    import rntuple

    src = ttrees["aod_like"]
    proc = _convert(src, "t", tmp_path / "cli.root", "--split-policy", "auto")
    assert proc.returncode == 0, proc.stderr
    cli = {
        line.split(": branch ")[1].split(":")[0]: line.rsplit("-> ", 1)[1] == "unsplit"
        for line in proc.stdout.splitlines()
        if ": branch " in line
    }
    out = tmp_path / "py.root"
    result = rntuple.convert(src, out, tree="t", split_policy="auto")
    chosen = {branch: unsplit for branch, _, _, _, unsplit in result.split_choices}
    assert chosen == cli, (chosen, cli)
    for branch, entries, split_bytes, unsplit_bytes, unsplit in result.split_choices:
        assert entries > 0 and (unsplit_bytes < split_bytes) == unsplit, branch
    roles = {f["name"]: f["role"] for f in ttree_oracle.rntuple_schema(out, "t")["fields"]}
    assert {b for b, u in chosen.items() if u} == {n for n, r in roles.items() if r == "Streamer"}
    bad = tmp_path / "bad.root"
    with pytest.raises(rntuple.InvalidArgumentError, match="split_policy"):
        rntuple.convert(src, bad, tree="t", split_policy="sometimes")
    assert not bad.exists()


def _ttree_key(path: Path, tree: str) -> tuple[int, int, int]:
    """(seek, key length, total bytes) of the tree's key, as ROOT reports it."""
    ROOT = load_root()
    f = ROOT.TFile.Open(str(path))
    key = f.GetKey(tree)
    out = (int(key.GetSeekKey()), int(key.GetKeylen()), int(key.GetNbytes()))
    f.Close()
    return out


def _first_basket(path: Path, tree: str, branch: str) -> tuple[int, int]:
    """(seek, bytes) of the branch's first basket, as ROOT reports it."""
    ROOT = load_root()
    f = ROOT.TFile.Open(str(path))
    b = f.Get(tree).GetBranch(branch)
    out = (int(b.GetBasketSeek(0)), int(b.GetBasketBytes()[0]))
    f.Close()
    return out


def _assert_clean_failure(proc: subprocess.CompletedProcess[str], out: Path) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert "panicked" not in proc.stderr and proc.stderr.startswith("rntuple: "), proc.stderr
    assert not out.exists()
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(out.name)] == []


def test_truncated_ttree_is_a_clear_error(ttrees: dict[str, Path], tmp_path: Path) -> None:
    src = ttrees["nanoaod"]
    data = src.read_bytes()
    for fraction in (0.3, 0.6, 0.95):
        cut = tmp_path / f"cut{fraction}.root"
        cut.write_bytes(data[: int(len(data) * fraction)])
        out = tmp_path / "out" / f"cut{fraction}.root"
        out.parent.mkdir(exist_ok=True)
        proc = _convert(cut, "Events", out)
        _assert_clean_failure(proc, out)
        assert "truncated" in proc.stderr.lower() or "past the end" in proc.stderr, proc.stderr


BASKET_CASES = ["compression_zlib", "compression_zstd", "compression_lz4", "compression_lzma"]


@pytest.mark.parametrize("case", BASKET_CASES)
def test_flipped_bytes_in_a_basket_are_a_clear_error(
    case: str, ttrees: dict[str, Path], tmp_path: Path
) -> None:
    src = ttrees[case]
    # The counts of "n" compress well: its baskets are stored compressed (an uncompressed
    # basket has no check at all; ROOT would read flipped values too).
    seek, nbytes = _first_basket(src, "t", "n")
    data = bytearray(src.read_bytes())
    obj_len = int.from_bytes(data[seek + 6 : seek + 10], "big")
    key_len = int.from_bytes(data[seek + 14 : seek + 16], "big")
    assert obj_len > nbytes - key_len, (obj_len, nbytes, key_len)
    # Bytes in the middle of the compressed payload (past the block header).
    middle = seek + key_len + (nbytes - key_len) // 2
    for i in range(4):
        data[middle + i] ^= 0x5A
    bad = tmp_path / "bad.root"
    bad.write_bytes(bytes(data))
    out = tmp_path / "out.root"
    proc = _convert(bad, "t", out)
    _assert_clean_failure(proc, out)
    assert 'branch "n"' in proc.stderr and "basket 0" in proc.stderr, proc.stderr


def test_corrupted_streamer_payloads_are_a_clear_error(tmp_path: Path) -> None:
    """Objects copied into streamer fields are checked as far as their bytes say: a byte
    count that does not end with the entry (a TLorentzVector, a TClonesArray stored the
    old way) or a collection's header gone wrong is an error naming the branch and the
    entry, with no output left."""
    ROOT = ttreegen._declare()
    src = tmp_path / "objects.root"
    # Uncompressed: the payload bytes are in the file as streamed.
    ttreegen._writer("streamer_objects")(ROOT.ttreegen, str(src), 40, 0)
    for branch in ("p4", "ca0", "vp4"):
        seek, _ = _first_basket(src, "t", branch)
        data = bytearray(src.read_bytes())
        key_len = int.from_bytes(data[seek + 14 : seek + 16], "big")
        # The first entry starts the basket's payload: its byte count.
        first = seek + key_len
        if branch == "ca0":
            # A TBranchObject's entry names its class first (length byte, name, NUL).
            first += data[first] + 2
        count = int.from_bytes(data[first : first + 4], "big")
        assert count & 0x40000000, (branch, hex(count))
        data[first : first + 4] = (count + 3).to_bytes(4, "big")
        bad = tmp_path / f"bad_{branch}.root"
        bad.write_bytes(bytes(data))
        out = tmp_path / f"out_{branch}.root"
        proc = _convert(bad, "t", out, "--branches", branch)
        _assert_clean_failure(proc, out)
        assert f'branch "{branch}", entry 0 of the chunk' in proc.stderr, proc.stderr
        assert "byte count" in proc.stderr, proc.stderr


def test_flipped_bytes_in_the_tree_metadata(ttrees: dict[str, Path], tmp_path: Path) -> None:
    """Flips one byte at a time across the (uncompressed) streamed TTree: each run either
    fails cleanly, or converts to the values of the original tree (the byte was one that
    conversion does not use, such as a title or a drawing attribute)."""
    src = ttrees["compression_none"]
    seek, key_len, nbytes = _ttree_key(src, "t")
    data = src.read_bytes()
    failures = 0
    positions = [seek + key_len + (nbytes - key_len) * k // 13 for k in range(1, 13)]
    for n, pos in enumerate(positions):
        bad = tmp_path / f"bad{n}.root"
        flipped = bytearray(data)
        flipped[pos] ^= 0xFF
        bad.write_bytes(bytes(flipped))
        out = tmp_path / f"out{n}.root"
        proc = _convert(bad, "t", out)
        if proc.returncode == 0:
            diffs = ttree_oracle.compare(src, "t", out, "t")
            assert diffs == [], (pos, diffs[:5])
        else:
            failures += 1
            _assert_clean_failure(proc, out)
    # Most of the metadata matters: most flips must have been caught.
    assert failures >= 6, failures


def test_existing_output_is_kept_without_force(ttrees: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out.root"
    out.write_bytes(b"keep me")
    proc = _convert(ttrees["fundamentals"], "t", out)
    assert proc.returncode == 2 and "already exists" in proc.stderr, proc.stderr
    assert out.read_bytes() == b"keep me"
    proc = _convert(ttrees["fundamentals"], "t", out, "--force")
    assert proc.returncode == 0, proc.stderr
    assert ttree_oracle.compare(ttrees["fundamentals"], "t", out, "t") == []


def test_branch_selection_entries_and_name(ttrees: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "sel.root"
    proc = _convert(
        ttrees["nanoaod"], "Events", out, "--branches", "Jet_p*,run", "--entries", "100:250", "--name", "Sel"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("converted 150 entries"), proc.stdout
    columns = ttree_oracle.rntuple_columns(out, "Sel")
    # The Jet arrays bring their count leaf's collection and cardinality.
    assert set(columns) >= {"run", "Jet_pt", "Jet_phi", "nJet"}, columns
    assert not {c for c in columns if c.startswith(("Muon", "Electron"))}, columns
    picked = ["run", "Jet_pt", "Jet_phi", "nJet"]
    want = ttree_oracle.ttree_values(ttrees["nanoaod"], "Events", picked, (100, 250))
    got = ttree_oracle.rntuple_values(out, "Sel", picked)
    assert got == want
    shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.mark.parametrize("case", [f"{base}_kept_baskets" for base in ttreegen.KEPT_BASKETS_BASES])
def test_kept_baskets_fixtures_keep_baskets_in_the_tree(case: str, ttrees: dict[str, Path]) -> None:
    """What the conversion tests of these cases rely on: every branch storing values (not
    a split object's parent) has its last basket in the tree's metadata, and most have
    baskets in keys too (uproot)."""
    import uproot

    with uproot.open(ttrees[case]) as f:
        branches = list(f[ttreegen.CASES[case].tree].itervalues(recursive=True))
        kept = [len(b.embedded_baskets or []) for b in branches]
        written = [b.member("fWriteBasket") for b in branches]
    storing = [k for k, w in zip(kept, written, strict=True) if k or w]
    assert len(storing) >= 3 and all(k == 1 for k in storing), kept
    assert sum(w > 0 for w in written) >= len(storing) // 2, written


def _kept_basket_fields(data: bytes, tree_start: int, tree_end: int) -> list[tuple[str, int]]:
    """Each basket kept in an uncompressed tree's metadata: its branch name and the
    position of its fNevBuf field (after the key header's class, name and title strings,
    the basket's version and two more int32 fields). The basket's buffer, which follows,
    begins with a copy of its key header: every other match is skipped."""
    found = []
    at = data.find(b"\x07TBasket", tree_start, tree_end)
    while at >= 0:
        pos = at + 8
        name = data[pos + 1 : pos + 1 + data[pos]].decode()
        pos += 1 + data[pos]
        pos += 1 + data[pos]  # the title
        found.append((name, pos + 2 + 8))
        at = data.find(b"\x07TBasket", pos, tree_end)
    assert len(found) % 2 == 0, found
    assert [name for name, _ in found[::2]] == [name for name, _ in found[1::2]]
    return found[::2]


def test_damaged_baskets_kept_in_the_tree_are_a_clear_error(tmp_path: Path) -> None:
    src = ttreegen.write_variant("count_arrays_kept_baskets", tmp_path / "kept.root", 993, 0)
    seek, key_len, nbytes = _ttree_key(src, "t")
    data = src.read_bytes()
    kept = _kept_basket_fields(data, seek + key_len, seek + nbytes)
    assert [name for name, _ in kept] == ["nB", "b1", "zN", "z1", "nA", "a1", "a2", "mS", "m1", "a3"]
    for name, pos in kept[:4]:
        for value in (0x7FFFFFFF, 0xFFFFFFF0):
            bad = tmp_path / "bad.root"
            damaged = bytearray(data)
            damaged[pos : pos + 4] = value.to_bytes(4, "big")
            bad.write_bytes(bytes(damaged))
            out = tmp_path / "out.root"
            proc = _convert(bad, "t", out)
            _assert_clean_failure(proc, out)
            message = proc.stderr
            assert f'branch "{name}"' in message and "kept in the tree's metadata" in message, message
