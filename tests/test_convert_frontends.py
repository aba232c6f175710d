"""The front ends of TTree -> RNTuple conversion, checked against ROOT 6.40:

- ``rntuple ls`` lists TTrees as TTrees (entries and branch names as ROOT reads them,
  the first 10 of more) next to RNTuples (their line unchanged) and says how to convert them; ``rntuple info``
  describes a TTree branch by branch (class, leaf list, leaf classes as ROOT has them);
- opening a TTree as an RNTuple (``dump``, ``copy``, Python ``rntuple.open``) is a
  not-found error that says it is a TTree and how to convert it;
- ``rntuple convert 'in/*.root' --out-dir DIR -j 2``: one output per input, each read by
  ROOT equal to its input; a truncated input fails the command, leaves no output of its
  own and does not stop the others;
- Python ``rntuple.convert``: ROOT reads the output equal to the TTree; an existing
  output is refused unless ``overwrite=True``; ``branches=`` and ``entries=`` select
  what ROOT then reads; into an object-store dataset (``ntpl+file://``, ``URL:NAME``)
  it stores the objects its result counts, which ROOT reads equal to the TTree once
  copied into a file.

The TTrees are written by ROOT (``ttreegen.py``, flat cases). Nothing is skipped: without
ROOT, the CLI binary or the package, the tests fail.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import ttree_oracle
import ttreegen
from conftest import REPO_ROOT

import rntuple

#: The flat cases used here (their trees convert today).
CASES = ("nanoaod", "count_arrays", "leaflist")


@pytest.fixture(scope="module")
def ttrees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The TTree files of :data:`CASES`, written by ROOT once for the module."""
    return ttreegen.generate(tmp_path_factory.mktemp("convert_frontends"), list(CASES))


def tree_of(case: str) -> str:
    """The tree's name in case ``case``'s file."""
    return ttreegen.CASES[case].tree


def root_tree(path: Path, tree: str) -> dict[str, Any]:
    """What ROOT says of a TTree: entries, and per top-level branch its name, class,
    title and leaf classes."""
    ROOT = ttreegen.declare_user_classes()
    f = ROOT.TFile.Open(str(path))
    try:
        t = f.Get(tree)
        assert t, f"ROOT finds no TTree {tree} in {path}"
        return {
            "entries": int(t.GetEntries()),
            "branches": [
                {
                    "name": str(b.GetName()),
                    "class": str(b.ClassName()),
                    "title": str(b.GetTitle()),
                    "leaves": [str(leaf.ClassName()) for leaf in b.GetListOfLeaves()],
                }
                for b in t.GetListOfBranches()
            ],
        }
    finally:
        f.Close()


def run(binary: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """Runs the CLI, capturing its output."""
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=300)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_equal_to_ttree(ttree_file: Path, tree: str, rntuple_file: Path, name: str) -> None:
    """ROOT reads the RNTuple ``name`` of ``rntuple_file`` equal to the TTree."""
    diffs = ttree_oracle.compare(ttree_file, tree, rntuple_file, name)
    assert not diffs, f"{rntuple_file} differs from {ttree_file}:{tree}:\n" + "\n".join(diffs[:20])


# --- ls and info ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_ls_lists_ttrees_with_roots_entries_and_branches(rntuple_bin, ttrees, case):
    path = ttrees[case]
    facts = root_tree(path, tree_of(case))
    r = run(rntuple_bin(), "ls", path)
    assert r.returncode == 0, r.stderr
    names = [b["name"] for b in facts["branches"]]
    # The first 10 names of more (nanoaod's 105), and where to see them all.
    shown = ", ".join(names[:10])
    if len(names) > 10:
        shown += f", ... ({len(names) - 10} more; rntuple info {path}:{tree_of(case)} shows them all)"
    listed = f"{len(names)} branches: {shown}"
    assert r.stdout.splitlines() == [f"{tree_of(case)}\tTTree\t{facts['entries']} entries\t{listed}"]
    assert f"convert a TTree with: rntuple convert {path}:{tree_of(case)} OUT.root" in r.stderr


def test_ls_lists_rntuples_unchanged_next_to_ttrees(rntuple_bin, ttrees, tmp_path):
    # A file holding both: the example's RNTuple, and count_arrays' tree copied in by ROOT.
    mixed = tmp_path / "mixed.root"
    shutil.copy(REPO_ROOT / "examples" / "events.root", mixed)
    ROOT = ttreegen.declare_user_classes()
    src = ROOT.TFile.Open(str(ttrees["count_arrays"]))
    dst = ROOT.TFile.Open(str(mixed), "UPDATE")
    dst.cd()
    src.Get("t").CloneTree(-1, "fast").Write()
    dst.Close()
    src.Close()
    r = run(rntuple_bin(), "ls", mixed)
    assert r.returncode == 0, r.stderr
    facts = root_tree(ttrees["count_arrays"], "t")
    names = [b["name"] for b in facts["branches"]]
    nt = rntuple.open(f"{REPO_ROOT / 'examples' / 'events.root'}:Events")
    assert r.stdout.splitlines() == [
        f"Events\t{nt.num_entries} entries\t{len(nt.fields)} fields: {', '.join(nt.fields)}",
        f"t\tTTree\t{facts['entries']} entries\t{len(names)} branches: {', '.join(names)}",
    ]
    assert f"rntuple convert {mixed}:t OUT.root" in r.stderr
    # info: FILE:t is the TTree, FILE:Events and FILE (its only RNTuple) the RNTuple.
    tree_info = run(rntuple_bin(), "info", f"{mixed}:t")
    assert tree_info.returncode == 0, tree_info.stderr
    assert tree_info.stdout.startswith(f'TTree "t" in {mixed}')
    for target in (f"{mixed}:Events", str(mixed)):
        rnt_info = run(rntuple_bin(), "info", target)
        assert rnt_info.returncode == 0, rnt_info.stderr
        assert "TTree" not in rnt_info.stdout
        assert "Jet_pt" in rnt_info.stdout


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("named", [True, False], ids=["FILE:TREE", "FILE"])
def test_info_describes_a_ttree_as_root_has_it(rntuple_bin, ttrees, case, named):
    path = ttrees[case]
    tree = tree_of(case)
    facts = root_tree(path, tree)
    r = run(rntuple_bin(), "info", f"{path}:{tree}" if named else path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f'TTree "{tree}" in {path}')
    assert f"entries: {facts['entries']}" in lines
    assert f"branches: {len(facts['branches'])} ({len(facts['branches'])} at every level)" in lines
    branch_lines = [line for line in lines if line.startswith("  ")]
    assert len(branch_lines) == len(facts["branches"]), r.stdout
    for line, b in zip(branch_lines, facts["branches"], strict=True):
        leaves = ", ".join(b["leaves"])
        pattern = rf"^  {re.escape(b['name'])} +{b['class']} +{re.escape(b['title'])} \({leaves}\)$"
        assert re.match(pattern, line), f"{line!r} does not match {pattern!r}"
    assert lines[-1].endswith(f"convert it with: rntuple convert {path}:{tree} OUT.root")


# --- opening a TTree as an RNTuple ----------------------------------------------------------


def test_dump_and_copy_of_a_ttree_say_how_to_convert_it(rntuple_bin, ttrees, tmp_path):
    path = ttrees["nanoaod"]
    hint = f"rntuple convert {path}:Events OUT.root"
    r = run(rntuple_bin(), "dump", f"{path}:Events", "--json")
    assert r.returncode == 1 and r.stdout == ""
    assert f'"Events" in {path} is a TTree, not an RNTuple' in r.stderr and hint in r.stderr
    # Without a name: the file holds no RNTuple, but a TTree.
    r = run(rntuple_bin(), "dump", path, "--json")
    assert r.returncode == 1
    assert f"{path} holds no RNTuple but a TTree" in r.stderr and hint in r.stderr
    out = tmp_path / "copy.root"
    r = run(rntuple_bin(), "copy", f"{path}:Events", out)
    assert r.returncode == 1 and hint in r.stderr
    assert not out.exists() and not list(tmp_path.glob("*.partial"))
    # A name that is neither: the plain error, naming the TTrees there are.
    r = run(rntuple_bin(), "dump", f"{path}:Nope", "--json")
    assert r.returncode == 1
    assert f'no RNTuple named "Nope" in {path}' in r.stderr and "TTree Events" in r.stderr


def test_python_open_of_a_ttree_raises_not_found_saying_how_to_convert(ttrees):
    path = ttrees["nanoaod"]
    for attempt in (lambda: rntuple.open(f"{path}:Events"), lambda: rntuple.open(path)["Events"]):
        with pytest.raises(rntuple.NotFoundError) as info:
            attempt()
        message = str(info.value)
        assert "is a TTree, not an RNTuple" in message
        assert f"rntuple convert {path}:Events OUT.root" in message
        assert f'rntuple.convert("{path}:Events", "out.root")' in message
        assert isinstance(info.value, KeyError)


# --- many files on the command line ---------------------------------------------------------


def test_cli_converts_many_files_into_a_directory(rntuple_bin, ttrees, tmp_path):
    indir = tmp_path / "in"
    indir.mkdir()
    for case in CASES:
        shutil.copy(ttrees[case], indir / f"{case}.root")
    outdir = tmp_path / "out"
    outdir.mkdir()
    r = run(rntuple_bin(), "convert", f"{indir}/*.root", "--out-dir", outdir, "-j", "2")
    assert r.returncode == 0, r.stderr
    summaries = [line for line in r.stdout.splitlines() if line.startswith("converted ")]
    assert len(summaries) == len(CASES), r.stdout
    assert sorted(p.name for p in outdir.iterdir()) == sorted(f"{c}.root" for c in CASES)
    for case in CASES:
        facts = root_tree(ttrees[case], tree_of(case))
        line = f"converted {facts['entries']} entries: {indir / case}.root"
        assert any(s.startswith(line) for s in summaries), summaries
        assert_equal_to_ttree(ttrees[case], tree_of(case), outdir / f"{case}.root", tree_of(case))


def test_cli_many_files_with_a_bad_one(rntuple_bin, ttrees, tmp_path):
    indir = tmp_path / "in"
    indir.mkdir()
    for case in CASES:
        shutil.copy(ttrees[case], indir / f"{case}.root")
    whole = ttrees["count_arrays"].read_bytes()
    (indir / "bad.root").write_bytes(whole[: len(whole) // 2])
    outdir = tmp_path / "out"
    outdir.mkdir()
    r = run(rntuple_bin(), "convert", f"{indir}/*.root", "--out-dir", outdir, "-j", "2")
    assert r.returncode != 0
    assert f"file {indir / 'bad.root'} (fEND in the file header)" in r.stderr, r.stderr
    assert f"1 of 4 conversions failed: {indir / 'bad.root'}" in r.stderr
    assert sorted(p.name for p in outdir.iterdir()) == sorted(f"{c}.root" for c in CASES)
    for case in CASES:
        assert (
            rntuple.open(f"{outdir / case}.root:{tree_of(case)}").num_entries
            == root_tree(ttrees[case], tree_of(case))["entries"]
        )


# --- Python rntuple.convert -----------------------------------------------------------------


def test_python_convert_equals_the_ttree(ttrees, tmp_path):
    path = ttrees["nanoaod"]
    out = tmp_path / "events.root"
    result = rntuple.convert(f"{path}:Events", out)
    assert isinstance(result, rntuple.ConvertResult)
    assert result.entries == root_tree(path, "Events")["entries"]
    assert result.output_bytes == out.stat().st_size
    assert result.input_bytes > 0 and result.seconds > 0 and result.skipped == []
    assert_equal_to_ttree(path, "Events", out, "Events")
    # The tree by keyword, a file with one tree by its path alone.
    for kwargs, target in (({"tree": "t"}, "kw.root"), ({}, "only.root")):
        result = rntuple.convert(ttrees["count_arrays"], tmp_path / target, **kwargs)
        assert result.entries == root_tree(ttrees["count_arrays"], "t")["entries"]
        assert_equal_to_ttree(ttrees["count_arrays"], "t", tmp_path / target, "t")


def test_python_convert_refuses_an_existing_output_unless_overwrite(ttrees, tmp_path):
    out = tmp_path / "out.root"
    rntuple.convert(f"{ttrees['leaflist']}:t", out)
    before = sha256(out)
    with pytest.raises(FileExistsError, match=r"already exists.*overwrite=True") as refused:
        rntuple.convert(f"{ttrees['count_arrays']}:t", out)
    assert isinstance(refused.value, rntuple.OutputExistsError) and refused.value.errno == errno.EEXIST
    assert sha256(out) == before
    rntuple.convert(f"{ttrees['count_arrays']}:t", out, overwrite=True)
    assert sha256(out) != before
    assert_equal_to_ttree(ttrees["count_arrays"], "t", out, "t")
    # A failed conversion leaves nothing behind, and errors are the package's.
    missing = tmp_path / "missing.root"
    with pytest.raises(rntuple.NotFoundError, match='no TTree "Nope"'):
        rntuple.convert(f"{ttrees['leaflist']}:Nope", missing)
    with pytest.raises(FileNotFoundError):
        rntuple.convert(tmp_path / "no-such-file.root", missing)
    assert not missing.exists() and not list(tmp_path.glob("*.partial"))


def test_python_convert_branches_and_entries(ttrees, tmp_path):
    path = ttrees["nanoaod"]
    out = tmp_path / "selected.root"
    start, stop = 100, 700
    result = rntuple.convert(path, out, branches=["Jet_*", "run"], entries=(start, stop), name="Sel")
    assert result.entries == stop - start
    all_columns = ttree_oracle.ttree_columns(path, "Events")[0]
    wanted = [c for c in all_columns if c == "run" or fnmatch.fnmatch(c, "Jet_*")]
    assert len(wanted) > 10
    # ROOT reads exactly the selected columns (and the count leaf nJet the arrays bring).
    got = ttree_oracle.rntuple_columns(out, "Sel")
    assert sorted(got) == sorted([*wanted, "nJet"])
    assert ttree_oracle.rntuple_values(out, "Sel", wanted) == ttree_oracle.ttree_values(
        path, "Events", wanted, (start, stop)
    )
    # A stop past the end converts to the end.
    tail = rntuple.convert(path, tmp_path / "tail.root", branches="MET_*", entries=(2900, 10**9))
    assert tail.entries == root_tree(path, "Events")["entries"] - 2900


def test_python_convert_into_an_object_store(ttrees, tmp_path):
    """``rntuple.convert`` into a dataset of objects: ``output_bytes`` is the size of
    the objects stored, the RNTuple takes the URL's ``:NAME``, and ROOT reads the
    dataset (copied into a file by ``rntuple.merge``) equal to the TTree; an existing
    dataset is refused unless ``overwrite=True``, and a name that disagrees with the
    URL's creates nothing."""
    path = ttrees["nanoaod"]
    url = f"ntpl+file://{tmp_path}/nano"
    result = rntuple.convert(f"{path}:Events", f"{url}:Nano")
    assert result.entries == root_tree(path, "Events")["entries"]
    objects = [tmp_path / "nano.obj", *(tmp_path / "nano.d").glob("*.obj")]
    assert len(objects) > 2
    assert result.output_bytes == sum(o.stat().st_size for o in objects)
    copied = tmp_path / "copied.root"
    rntuple.merge([url], copied, keep_compression=True)
    assert_equal_to_ttree(path, "Events", copied, "Nano")
    # An existing dataset: refused, then replaced with overwrite=True.
    with pytest.raises(rntuple.OutputExistsError):
        rntuple.convert(f"{ttrees['count_arrays']}:t", url)
    assert rntuple.open(url).keys() == ["Nano"]
    rntuple.convert(f"{ttrees['count_arrays']}:t", url, overwrite=True)
    again = tmp_path / "again.root"
    rntuple.merge([url], again, keep_compression=True)
    assert_equal_to_ttree(ttrees["count_arrays"], "t", again, "t")
    # A name= that disagrees with the URL's: nothing created.
    other = f"ntpl+file://{tmp_path}/other"
    with pytest.raises(rntuple.InvalidArgumentError, match="give one"):
        rntuple.convert(f"{path}:Events", f"{other}:A", name="B")
    assert not list(tmp_path.glob("other*"))
