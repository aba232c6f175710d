"""``rntuple inspect`` and ``RNTuple.inspect()`` against ROOT 6.40's ``RNTupleInspector``.

Files: every conformance case (but the unreadable ``structure.feature_flag``), the
README's NanoAOD-like example file, the files ``rootgen.generate`` writes with ROOT
(many clusters and cluster groups, five compressions, a late model extension through
``RNTupleWriter::CreateModelUpdater()``) and those of ``rootgen.generate_extra``
(multi-key payloads, several column representations, streamer fields, an RNTuple in a
sub-directory, nested types). For each:

- every physical column: compressed and uncompressed size, elements, pages, compression
  factor; every field (subfields included): compressed and uncompressed size and
  compression factor; the totals and ROOT's ``GetCompressionFactor()``;
- ``--by type --csv`` is exactly ROOT's ``PrintColumnTypeInfo(kCSV)``;
- the header and footer sizes, the size on storage, compression rate and metadata/data
  ratio of ROOT's ``PrintInfo(kStorageDetails)`` (ROOT's footer size counts the page
  lists), the envelope sizes of ROOT's anchor and cluster groups, and the bytes of the
  distinct pages on storage (ROOT's same-page merging lets columns share a page; the
  zero pages ROOT synthesizes for late-extended columns are not stored).

For a few files, the page size distribution of every column, of every column type and
of all pages equals ROOT's ``GetPageSizeDistribution`` histograms bin by bin. The Python
``RNTuple.inspect()`` gives the command's figures, as Arrow and pandas, and draws its
bar chart with matplotlib.

Importer-layout files (TTrees with counted arrays written by ROOT, converted by
``rntuple convert`` and by ROOT's ``RNTupleImporter``): the ``_collectionN`` fields are
labelled by the arrays ROOT's TTree counts with one leaf (``Jet_* (_collectionN)``) in
the JSON, the text, Python's tables and its bar chart; ``--sort`` and ``--top`` give
the rows the JSON's figures order, and the rest summed to the JSON's totals.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import conformance_data
import numpy as np
import pytest
import ttree_oracle
import ttreegen
from conftest import REPO_ROOT, require_rntuple_bin, run_rntuple

import rntuple
import rootgen
from rootdump import load_root

CONFORMANCE = [c for c in conformance_data.cases() if c != "structure.feature_flag"]
EXAMPLE = "examples/events.root"
GENERATED = [f"rootgen/{s.filename}" for s in rootgen.SPECS]
EXTRA = [f"rootgen_extra/{f}" for f in rootgen.EXTRA_FILES]
#: Files whose page size distributions are compared bin by bin.
HISTOGRAM_FILES = [
    EXAMPLE,
    "rootgen/multicluster.root",
    "rootgen/late_extension.root",
    "rootgen_extra/multirep.root",
]
#: The figures of ROOT's ``PrintInfo(kStorageDetails)`` compared.
STORAGE_LINE = re.compile(
    r"\s+(Header size|Footer size|Size on storage|Compression rate|Metadata / data):\s+(\S+)"
)


def _target(case: str, request: pytest.FixtureRequest) -> tuple[Path, str]:
    """The file and RNTuple name of a test case (ROOT-written files are made once)."""
    if case == EXAMPLE:
        return REPO_ROOT / case, "Events"
    if case.startswith("rootgen/"):
        return request.getfixturevalue("generated")[case.split("/", 1)[1]], rootgen.NTUPLE
    if case.startswith("rootgen_extra/"):
        filename = case.split("/", 1)[1]
        return request.getfixturevalue("generated_extra")[filename], rootgen.EXTRA_FILES[filename][0]
    return conformance_data.write_file(case), "ntpl"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(require_rntuple_bin()), "inspect", *args], capture_output=True, text=True, timeout=120
    )


def _ours(path: Path, name: str) -> dict[str, Any]:
    proc = _cli(f"{path}:{name}", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _root_factor(uncompressed: int, compressed: int) -> float:
    """The compression factor as ROOT computes it (single precision; 1 for no bytes, as
    its ``PrintColumnTypeInfo``)."""
    if compressed == 0:
        return 1.0
    return float(np.float32(uncompressed) / np.float32(compressed))


def _storage_details(ROOT: Any, path: Path, name: str) -> dict[str, str]:
    """The figures of ROOT's ``PrintInfo(kStorageDetails)`` header, as printed."""
    reader = ROOT.RNTupleReader.Open(name, str(path))
    out = ROOT.std.ostringstream()
    reader.PrintInfo(ROOT.ENTupleInfo.kStorageDetails, out)
    figures = {}
    for line in str(out.str()).splitlines():
        m = STORAGE_LINE.match(line)
        if m:
            figures.setdefault(m.group(1), m.group(2))
    return figures


def _helpers(ROOT: Any) -> Any:
    """C++ helpers: the envelope sizes of an RNTuple's anchor (PyROOT's ``TFile.Get``
    cannot bind an ``ROOT::RNTuple`` in a sub-directory) and the per-type page size
    histogram (PyROOT takes a column type for a column id there)."""
    if not hasattr(ROOT, "rntuple_test_inspect"):
        ROOT.gInterpreter.Declare(
            """
            #include <ROOT/RNTuple.hxx>
            #include <ROOT/RNTupleInspector.hxx>
            #include <TFile.h>
            #include <TH1D.h>
            #include <memory>
            #include <unordered_set>
            #include <vector>
            namespace rntuple_test_inspect {
            std::vector<std::uint64_t> AnchorSizes(const char *path, const char *name) {
               std::unique_ptr<TFile> f(TFile::Open(path));
               std::unique_ptr<ROOT::RNTuple> a(f->Get<ROOT::RNTuple>(name));
               return {a->GetNBytesHeader(), a->GetLenHeader(), a->GetNBytesFooter(), a->GetLenFooter()};
            }
            // Bytes of the distinct pages on storage (zero pages left out), and pages
            // that are a page stored before (same-page merging).
            std::vector<std::uint64_t> StoredPages(const ROOT::RNTupleDescriptor &d) {
               std::unordered_set<std::uint64_t> seen;
               std::uint64_t bytes = 0, shared = 0;
               for (const auto &cluster : d.GetClusterIterable()) {
                  for (std::uint64_t id = 0; id < d.GetNPhysicalColumns(); ++id) {
                     if (!cluster.ContainsColumn(id) || cluster.GetColumnRange(id).IsSuppressed())
                        continue;
                     for (const auto &page : cluster.GetPageRange(id).GetPageInfos()) {
                        const auto &locator = page.GetLocator();
                        if (locator.GetType() == ROOT::RNTupleLocator::kTypePageZero)
                           continue;
                        if (seen.insert(locator.GetPosition<std::uint64_t>()).second)
                           bytes += locator.GetNBytesOnStorage();
                        else
                           ++shared;
                     }
                  }
               }
               return {bytes, shared};
            }
            TH1D *TypeHistogram(ROOT::Experimental::RNTupleInspector &insp, int type) {
               return insp.GetPageSizeDistribution(static_cast<ROOT::ENTupleColumnType>(type)).release();
            }
            }
            """
        )
    return ROOT.rntuple_test_inspect


def _roots(path: Path, name: str) -> dict[str, Any]:
    """What ROOT's ``RNTupleInspector``, ``PrintInfo`` and anchor say of the RNTuple."""
    ROOT = load_root()
    insp = ROOT.Experimental.RNTupleInspector.Create(name, str(path))
    d = insp.GetDescriptor()
    columns = {}
    for c in d.GetColumnIterable():
        if c.IsAliasColumn():
            continue
        ci = insp.GetColumnInspector(c.GetPhysicalId())
        columns[int(c.GetPhysicalId())] = (
            int(ci.GetCompressedSize()),
            int(ci.GetUncompressedSize()),
            int(ci.GetNElements()),
            int(ci.GetNPages()),
        )
    fields = {}
    for f in d.GetFieldIterable(d.GetFieldZeroId()):
        stack = [f]
        while stack:
            g = stack.pop()
            if g.IsProjectedField():
                continue
            fi = insp.GetFieldTreeInspector(g.GetId())
            fields[str(d.GetQualifiedFieldName(g.GetId()))] = (
                int(fi.GetCompressedSize()),
                int(fi.GetUncompressedSize()),
            )
            stack.extend(d.GetFieldIterable(g.GetId()))
    csv = ROOT.std.ostringstream()
    insp.PrintColumnTypeInfo(ROOT.Experimental.ENTupleInspectorPrintFormat.kCSV, csv)
    page_lists = [
        (int(g.GetPageListLocator().GetNBytesOnStorage()), int(g.GetPageListLength()))
        for g in d.GetClusterGroupIterable()
    ]
    anchor = [int(n) for n in _helpers(ROOT).AnchorSizes(str(path), name)]
    stored = [int(n) for n in _helpers(ROOT).StoredPages(d)]
    envelopes = {
        "header_bytes": anchor[0],
        "header_uncompressed": anchor[1],
        "footer_bytes": anchor[2],
        "footer_uncompressed": anchor[3],
        "page_list_bytes": sum(b for b, _ in page_lists),
        "page_list_uncompressed": sum(n for _, n in page_lists),
        "cluster_groups": len(page_lists),
        "clusters": int(d.GetNClusters()),
        "entries": int(d.GetNEntries()),
        "stored_page_bytes": stored[0],
        "shared_pages": stored[1],
    }
    return {
        "columns": columns,
        "fields": fields,
        "compressed": int(insp.GetCompressedSize()),
        "uncompressed": int(insp.GetUncompressedSize()),
        "compression_factor": float(insp.GetCompressionFactor()),
        "type_csv": str(csv.str()),
        "storage": _storage_details(ROOT, path, name),
        "envelopes": envelopes,
    }


@pytest.mark.parametrize("case", [*CONFORMANCE, EXAMPLE, *GENERATED, *EXTRA])
def test_inspect_equals_roots_inspector(case: str, request: pytest.FixtureRequest) -> None:
    assert_equals_roots_inspector(*_target(case, request))


def assert_equals_roots_inspector(path: Path, name: str) -> None:
    """``rntuple inspect`` of RNTuple ``name`` in ``path`` agrees with ROOT (any file:
    ``python -c 'import test_inspect as t; t.assert_equals_roots_inspector(...)'`` in
    ``tests/`` checks a file of one's own)."""
    ours = _ours(path, name)
    theirs = _roots(path, name)

    got_columns = {
        c["id"]: (c["compressed"], c["uncompressed"], c["elements"], c["pages"]) for c in ours["columns"]
    }
    assert got_columns == theirs["columns"]
    for c in ours["columns"]:
        root_factor = _root_factor(c["uncompressed"], c["compressed"])
        assert c["compression_factor"] == pytest.approx(root_factor, rel=1e-6)
        assert c["average_page_size"] == (c["compressed"] / c["pages"] if c["pages"] else 0)
        assert c["share"] == pytest.approx(c["compressed"] / os.path.getsize(path))
    got_fields = {f["name"]: (f["compressed"], f["uncompressed"]) for f in ours["fields"]}
    assert got_fields == theirs["fields"]
    for f in ours["fields"]:
        root_compressed, root_uncompressed = theirs["fields"][f["name"]]
        root_factor = _root_factor(root_uncompressed, root_compressed)
        assert f["compression_factor"] == pytest.approx(root_factor, rel=1e-6)
    assert (ours["compressed"], ours["uncompressed"]) == (theirs["compressed"], theirs["uncompressed"])
    if ours["compressed"]:
        assert ours["compression_factor"] == pytest.approx(theirs["compression_factor"], rel=1e-6)

    # --by type --csv is ROOT's PrintColumnTypeInfo(kCSV), to the byte.
    proc = _cli(f"{path}:{name}", "--by", "type", "--csv")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == theirs["type_csv"]
    assert [t["type"] for t in ours["types"]] == [
        line.split(",")[0] for line in theirs["type_csv"].splitlines()[1:]
    ]

    # The envelopes (ROOT's anchor and cluster groups), the pages stored (its page
    # locators) and PrintInfo's figures (whose "Footer size" counts the page lists).
    for key, value in theirs["envelopes"].items():
        assert ours[key] == value, key
    storage = theirs["storage"]
    assert storage["Header size"] == str(ours["header_bytes"])
    assert storage["Footer size"] == str(ours["footer_bytes"] + ours["page_list_bytes"])
    assert ours["metadata_bytes"] == ours["header_bytes"] + ours["footer_bytes"] + ours["page_list_bytes"]
    assert storage["Size on storage"] == str(ours["compressed"])
    if ours["compressed"]:
        ratio = np.float32(ours["metadata_bytes"]) / np.float32(ours["compressed"])
        assert storage["Metadata / data"] == f"{ratio:.3f}"
        assert ours["metadata_data_ratio"] == pytest.approx(ours["metadata_bytes"] / ours["compressed"])
        rate = np.float32(ours["uncompressed"]) / np.float32(ours["compressed"])
        assert storage["Compression rate"] == f"{rate:.2f}"
    assert ours["file_bytes"] == os.path.getsize(path)
    parts = ours["stored_page_bytes"] + ours["checksum_bytes"] + ours["metadata_bytes"] + ours["other_bytes"]
    assert parts == ours["file_bytes"]
    assert ours["pages"] == sum(c["pages"] for c in ours["columns"])


def _th1(h: Any) -> tuple[int, float, float, list[int]]:
    """Bins, range and contents (underflow first, overflow last) of a ROOT TH1."""
    n = int(h.GetNbinsX())
    axis = h.GetXaxis()
    return n, float(axis.GetXmin()), float(axis.GetXmax()), [int(h.GetBinContent(i)) for i in range(n + 2)]


def _hist(h: dict[str, Any] | Any) -> tuple[int, float, float, list[int]]:
    """The same of one of ours (a JSON object or a ``PageSizeHistogram``)."""
    if isinstance(h, dict):
        return len(h["counts"]), h["low"], h["high"], [h["underflow"], *h["counts"], h["overflow"]]
    return len(h.counts), h.low, h.high, [h.underflow, *h.counts, h.overflow]


@pytest.mark.parametrize("case", HISTOGRAM_FILES)
def test_page_size_distribution_equals_roots(case: str, request: pytest.FixtureRequest) -> None:
    """ROOT's ``GetPageSizeDistribution``: per column, per column type, and its stack of
    all types (whose sum is the distribution of all pages) against ours."""
    path, name = _target(case, request)
    ROOT = load_root()
    insp = ROOT.Experimental.RNTupleInspector.Create(name, str(path))
    ours = rntuple.open(f"{path}:{name}").inspect(by="column")
    compared = 0
    for cid in range(int(insp.GetDescriptor().GetNPhysicalColumns())):
        mine = ours.page_size_histogram(cid)
        if not insp.GetColumnInspector(cid).GetNPages():
            assert sum(mine.counts) + mine.overflow == 0
            continue
        assert _hist(mine) == _th1(insp.GetPageSizeDistribution(cid)), cid
        compared += 1
    assert compared >= 5
    types = ours.table("type").column("type").to_pylist()
    for t in types:
        code = int(getattr(ROOT.ENTupleColumnType, f"k{t}"))
        theirs = _helpers(ROOT).TypeHistogram(insp, code)
        if int(theirs.GetEntries()):
            assert _hist(ours.page_size_histogram(t)) == _th1(theirs), t

    # The stack over all types: common bins; what the command's JSON has.
    stack = insp.GetPageSizeDistribution()
    theirs_by_type = {str(h.GetTitle()): _th1(h) for h in stack.GetHists()}
    js = _ours(path, name)["page_sizes"]
    bounds = {"low": js["histogram"]["low"], "high": js["histogram"]["high"]}
    mine_by_type = {h["type"]: _hist({**h, **bounds}) for h in js["by_type"]}
    assert mine_by_type == theirs_by_type
    assert list(mine_by_type) == [t for t in types if t in theirs_by_type]
    total = np.sum([contents for _, _, _, contents in theirs_by_type.values()], axis=0).tolist()
    assert _hist(js["histogram"])[3] == total
    assert _hist(ours.page_size_histogram()) == _hist(js["histogram"])


def test_text_csv_and_usage() -> None:
    """The text output names the figures; CSV per field and column; --json and --csv
    exclude each other; an unknown --by is refused."""
    target = f"{REPO_ROOT / EXAMPLE}:Events"
    ours = _ours(REPO_ROOT / EXAMPLE, "Events")
    for by in ("field", "column", "type"):
        proc = _cli(target, "--by", by)
        assert proc.returncode == 0, proc.stderr
        needles = (
            "header",
            "footer",
            "page list",
            "metadata / data",
            "page sizes (compressed): min",
            "% of file",
        )
        for needle in needles:
            assert needle in proc.stdout, (by, needle)
    assert f"header {ours['header_bytes']} B" in proc.stdout
    fields = _cli(target, "--csv").stdout.splitlines()
    assert fields[0] == (
        "fieldName,typeName,nColumns,compressedSize,uncompressedSize,compressionFactor,nPages,averagePageSize,fileShare"
    )
    # std::pair<float,std::int32_t> holds a comma: quoted.
    assert any('"std::pair<float,std::int32_t>"' in line for line in fields)
    assert len(fields) == 1 + len(ours["fields"])
    columns = _cli(target, "--by", "column", "--csv").stdout.splitlines()
    assert columns[0].startswith("columnId,fieldName,columnType,nElements,compressedSize,uncompressedSize")
    assert columns[1].split(",")[:2] == ["0", ours["columns"][0]["field"]]
    proc = _cli(target, "--json", "--csv")
    assert proc.returncode == 2 and "cannot be used with" in proc.stderr
    proc = _cli(target, "--by", "cluster")
    assert proc.returncode == 2 and "invalid value" in proc.stderr


# ------------------------------------------------------------------------- Python


@pytest.mark.parametrize("case", [EXAMPLE, "rootgen/late_extension.root", "rootgen_extra/subdir.root"])
def test_python_inspect_equals_the_command(case: str, request: pytest.FixtureRequest) -> None:
    path, name = _target(case, request)
    ours = _ours(path, name)
    nt = rntuple.open(f"{path}:{name}")
    for by, key in (("field", "fields"), ("column", "columns"), ("type", "types")):
        inspection = nt.inspect(by=by)
        assert inspection.to_arrow().to_pylist() == ours[key]
        frame = inspection.to_pandas()
        assert list(frame.columns) == list(ours[key][0])
        assert frame.to_dict("records") == ours[key]
    inspection = nt.inspect()
    for key, value in inspection.figures.items():
        assert getattr(inspection, key) == value == ours[key], key
    summary = inspection.page_size_summary()
    assert summary == {k: v for k, v in ours["page_sizes"].items() if k not in ("histogram", "by_type")}
    sizes = inspection.page_sizes
    assert sizes.num_rows == ours["pages"] == summary["pages"]
    assert sizes.column_names == ["column", "field", "type", "compressed"]
    assert sum(sizes.column("compressed").to_pylist()) == ours["compressed"]
    compressed = np.array(sizes.column("compressed").to_pylist())
    assert summary["median"] == pytest.approx(float(np.quantile(compressed, 0.5)))
    assert summary["p90"] == pytest.approx(float(np.quantile(compressed, 0.9)))
    assert _hist(inspection.page_size_histogram()) == _hist(ours["page_sizes"]["histogram"])
    by_type = inspection.page_size_histograms_by_type()
    assert [h["counts"] for h in ours["page_sizes"]["by_type"]] == [h.counts for h in by_type.values()]


def test_python_inspect_plot_and_errors() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rntuple.errors import InvalidArgumentError

    nt = rntuple.open(f"{REPO_ROOT / EXAMPLE}:Events")
    inspection = nt.inspect()
    top = sorted(
        (r for r in inspection.to_arrow().to_pylist() if "." not in r["name"]),
        key=lambda r: r["compressed"],
        reverse=True,
    )
    ax = inspection.plot(n=3)
    bars = sorted(ax.patches, key=lambda p: -p.get_y())  # top to bottom
    labels = [t.get_text() for t in sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])]
    assert labels == [r["name"] for r in top[:3]] == [r["label"] for r in top[:3]]
    assert [b.get_width() for b in bars] == [r["compressed"] for r in top[:3]]
    file_bytes = os.path.getsize(REPO_ROOT / EXAMPLE)
    assert ax.get_xlabel() == f"compressed bytes (%: of the file's {file_bytes:,} B)"
    shares = [t.get_text() for t in ax.texts]
    assert shares == [f"{100 * r['compressed'] / file_bytes:.1f}%" for r in top[:3]][::-1]
    plt.close(ax.figure)
    fig, given = plt.subplots()
    assert inspection.plot(ax=given) is given
    assert len(given.patches) == len(top)
    plt.close(fig)

    with pytest.raises(InvalidArgumentError):
        nt.inspect(by="cluster")
    with pytest.raises(InvalidArgumentError):
        inspection.page_size_histogram(10_000)
    with pytest.raises(InvalidArgumentError):
        inspection.page_size_histogram("Real16")


def test_python_plot_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    inspection = rntuple.open(f"{REPO_ROOT / EXAMPLE}:Events").inspect()
    with pytest.raises(rntuple.MissingDependencyError, match=r"pip install 'rntuple\[plot\]'") as raised:
        inspection.plot()
    assert isinstance(raised.value, ImportError)
    assert str(raised.value) == (
        "Inspection.plot() needs matplotlib, which is not installed: pip install 'rntuple[plot]'"
    )


# ------------------------------------------------------------ importer-layout files

#: The labels of the collections of ``count_arrays``' counted arrays, by count leaf
#: (hand-computed: a1, a2, a3 share ``a``; a single array is its own name).
COUNT_ARRAYS_LABELS = {"mS": "m1", "nA": "a*", "nB": "b1", "zN": "z1"}


@pytest.fixture(scope="module")
def importer_layout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path, str]]:
    """``{name: (RNTuple file, TTree file, tree)}``: ttreegen's ``nanoaod`` and
    ``count_arrays`` TTrees (written by ROOT) converted by ``rntuple convert``
    (``nanoaod``, ``count_arrays``) and by ROOT's ``RNTupleImporter``
    (``nanoaod_importer``)."""
    out = tmp_path_factory.mktemp("importer_layout")
    trees = ttreegen.generate(out / "ttrees", ["nanoaod", "count_arrays"])
    files = {}
    for case in ("nanoaod", "count_arrays"):
        tree = ttreegen.CASES[case].tree
        dst = out / f"{case}.root"
        proc = run_rntuple("convert", f"{trees[case]}:{tree}", str(dst))
        assert proc.returncode == 0, proc.stderr
        files[case] = (dst, trees[case], tree)
    dst = out / "nanoaod_importer.root"
    result = ttree_oracle.root_import(trees["nanoaod"], "Events", dst)
    assert result.ok, result.error
    files["nanoaod_importer"] = (dst, trees["nanoaod"], "Events")
    return files


def _counted_arrays(path: Path, tree: str) -> dict[str, list[str]]:
    """ROOT's reading of a TTree: per count leaf, the branches of the arrays it counts."""
    ROOT = load_root()
    f = ROOT.TFile.Open(str(path))
    try:
        groups: dict[str, list[str]] = {}
        for b in f.Get(tree).GetListOfBranches():
            count = b.GetListOfLeaves()[0].GetLeafCount()
            if count:
                groups.setdefault(str(count.GetName()), []).append(str(b.GetName()))
        return groups
    finally:
        f.Close()


def _expected_labels(name: str, files: dict[str, tuple[Path, Path, str]]) -> dict[str, str]:
    """The label each ``_collectionN`` field of file ``name`` should have, by field name:
    the arrays ROOT counts with one leaf are the members of one collection (found in
    our JSON as ``_collectionN._0.MEMBER``), labelled by NanoAOD's convention (count
    leaf ``nJet``, arrays ``Jet_*``) or by hand (:data:`COUNT_ARRAYS_LABELS`)."""
    path, ttree, tree = files[name]
    fields = [f["name"] for f in _ours(path, tree)["fields"]]
    expected = {}
    for count, members in _counted_arrays(ttree, tree).items():
        holders = {f.split(".")[0] for f in fields if f.split(".")[-1] in members and f.count(".") == 2}
        assert len(holders) == 1, (count, holders)
        (holder,) = holders
        assert re.fullmatch(r"_collection\d+", holder)
        assert sorted(f.split(".")[-1] for f in fields if f.startswith(f"{holder}._0.")) == sorted(members)
        if name.startswith("nanoaod"):
            assert count.startswith("n")
            label = f"{count[1:]}_*"
        else:
            label = COUNT_ARRAYS_LABELS[count]
        expected[holder] = label
    return expected


@pytest.mark.parametrize("name", ["nanoaod", "nanoaod_importer", "count_arrays"])
def test_importer_collections_are_labelled_by_their_arrays(
    name: str, importer_layout: dict[str, tuple[Path, Path, str]]
) -> None:
    path, _, tree = importer_layout[name]
    expected = _expected_labels(name, importer_layout)
    assert len(expected) == (6 if name.startswith("nanoaod") else 4)
    ours = _ours(path, tree)
    # The JSON keeps each field's name and adds its label.
    for f in ours["fields"]:
        top = f["name"].split(".")[0]
        if top in expected and f["name"].count(".") < 2:
            assert f["label"] == f"{expected[top]} ({f['name']})", f
        else:
            assert f["label"] == f["name"], f
    for c in ours["columns"]:
        field = next(f for f in ours["fields"] if f["name"] == c["field"])
        assert c["label"] == field["label"]
    # The text shows the labels where the names were.
    lines = _cli(f"{path}:{tree}").stdout.splitlines()
    assert lines[0].startswith("field ")
    for holder, label in expected.items():
        assert sum(line.startswith(f"{label} ({holder}) ") for line in lines) == 1
        assert sum(line.startswith(f"{label} ({holder}._0) ") for line in lines) == 1
        assert not any(line.startswith(f"{holder} ") for line in lines)
    column_lines = _cli(f"{path}:{tree}", "--by", "column").stdout.splitlines()
    for holder, label in expected.items():
        offsets = re.compile(rf"\s*\d+  {re.escape(label)} \({holder}\) +SplitIndex")
        assert any(offsets.match(line) for line in column_lines)
    # Python: the same labels in the tables and on the bars.
    inspection = rntuple.open(f"{path}:{tree}").inspect()
    assert inspection.table("field").column("label").to_pylist() == [f["label"] for f in ours["fields"]]
    assert inspection.table("column").column("label").to_pylist() == [c["label"] for c in ours["columns"]]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = inspection.plot(n=1000)
    ticks = {t.get_text() for t in ax.get_yticklabels()}
    assert {f"{label} ({holder})" for holder, label in expected.items()} <= ticks
    assert not any(t.startswith("_collection") for t in ticks)
    plt.close(ax.figure)


def _table_rows(text: str, numbers: int = 7) -> list[tuple[str, list[float]]]:
    """The rows of the text table: each row's text before its last ``numbers`` values
    (field label and type), and those values (``%`` removed)."""
    lines = text.splitlines()
    end = next(k for k, line in enumerate(lines) if line.startswith("% of file: "))
    row = re.compile(r"(.*?)" + r"\s+(\S+)" * numbers + r"\s*")
    rows = []
    for line in lines[1:end]:
        m = row.fullmatch(line)
        assert m, line
        rows.append((m.group(1), [float(v.rstrip("%")) for v in m.groups()[1:]]))
    return rows


@pytest.mark.parametrize("name", ["nanoaod", "nanoaod_importer"])
def test_sort_and_top_against_the_json(name: str, importer_layout: dict[str, tuple[Path, Path, str]]) -> None:
    path, _, tree = importer_layout[name]
    target = f"{path}:{tree}"
    ours = _ours(path, tree)
    top_level = [f for f in ours["fields"] if "." not in f["name"]]
    # Every column is in one top-level field: they add up to the whole RNTuple.
    assert sum(f["compressed"] for f in top_level) == ours["compressed"]
    assert sum(f["uncompressed"] for f in top_level) == ours["uncompressed"]
    assert sum(f["pages"] for f in top_level) == ours["pages"]

    proc = _cli(target, "--sort", "size", "--top", "10")
    assert proc.returncode == 0, proc.stderr
    rows = _table_rows(proc.stdout)
    largest = sorted(top_level, key=lambda f: -f["compressed"])  # stable: ties in file order
    assert len(rows) == 11
    for (head, values), f in zip(rows, largest[:10], strict=False):
        assert head.split("  ")[0] == f["label"], (head, f)
        assert values[1:3] == [f["compressed"], f["uncompressed"]]
        assert values[4] == f["pages"]
        assert values[6] == round(100 * f["compressed"] / ours["file_bytes"], 1)
    rest = largest[10:]
    head, values = rows[-1]
    assert head == f"... {len(top_level) - 10} more fields"
    compressed = ours["compressed"] - sum(f["compressed"] for f in largest[:10])
    assert compressed == sum(f["compressed"] for f in rest)
    assert values[0] == sum(f["columns"] for f in rest)
    assert values[1] == compressed
    assert values[2] == ours["uncompressed"] - sum(f["uncompressed"] for f in largest[:10])
    assert values[4] == ours["pages"] - sum(f["pages"] for f in largest[:10])
    assert values[6] == round(100 * compressed / ours["file_bytes"], 1)
    # What the percentages are of.
    legend = "% of file: compressed B (the bytes of the row's pages, checksums not included)"
    assert f"{legend} over the whole file's {ours['file_bytes']} B\n" in proc.stdout
    # --top alone is by size.
    assert _cli(target, "--top", "10").stdout == proc.stdout

    # Per column, by compression factor (the worst first), as CSV with the rest summed.
    proc = _cli(target, "--by", "column", "--sort", "compression", "--top", "5", "--csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    worst = sorted(ours["columns"], key=lambda c: c["compression_factor"])
    assert [int(line.split(",")[0]) for line in lines[1:6]] == [c["id"] for c in worst[:5]]
    rest_cells = lines[6].split(",")
    elements = sum(c["elements"] for c in worst[5:])
    assert rest_cells[:4] == ["", f"... {len(worst) - 5} more columns", "", str(elements)]
    assert int(rest_cells[4]) == ours["compressed"] - sum(c["compressed"] for c in worst[:5])
    assert len(lines) == 7

    # Sorted without --top: every field, subfields right after their parent.
    proc = _cli(target, "--sort", "name")
    labels = [head.split("  ")[0] for head, _ in _table_rows(proc.stdout)]
    assert sorted(labels) == sorted(f["label"] for f in ours["fields"])
    tops = [f["label"] for f in sorted(top_level, key=lambda f: f["label"].encode())]
    assert [label for label in labels if label in tops] == tops
    for f in top_level:
        if f["name"].startswith("_collection"):
            at = labels.index(f["label"])
            members = sorted(g["label"] for g in ours["fields"] if g["name"].startswith(f"{f['name']}._0."))
            assert labels[at + 1] == f"{f['label'].split(' (')[0]} ({f['name']}._0)"
            assert labels[at + 2 : at + 2 + len(members)] == members

    # Python: the same rows and rest.
    inspection = rntuple.open(target).inspect()
    table = inspection.table(sort="size", top=10).to_pylist()
    assert [r["label"] for r in table[:10]] == [f["label"] for f in largest[:10]]
    assert table[10]["label"] == table[10]["name"] == f"... {len(top_level) - 10} more fields"
    assert table[10]["type"] is None
    assert (table[10]["compressed"], table[10]["pages"]) == (compressed, values[4])
    assert sum(r["compressed"] for r in table) == ours["compressed"]
    frame = inspection.to_pandas(sort="compression")
    assert len(frame) == len(ours["fields"])
    assert inspection.to_arrow(top=0).to_pylist()[0]["compressed"] == ours["compressed"]


def test_sort_and_top_usage() -> None:
    from rntuple.errors import InvalidArgumentError

    target = f"{REPO_ROOT / EXAMPLE}:Events"
    for args in (["--sort", "size", "--json"], ["--top", "3", "--json"]):
        proc = _cli(target, *args)
        assert proc.returncode == 2 and "cannot be used with" in proc.stderr
    for args in (["--sort", "largest"], ["--top=-1"], ["--top", "x"]):
        proc = _cli(target, *args)
        assert proc.returncode == 2 and "invalid value" in proc.stderr, args
    # Fewer rows than --top: all of them, no rest.
    proc = _cli(target, "--top", "100")
    assert "more fields" not in proc.stdout
    inspection = rntuple.open(target).inspect()
    with pytest.raises(InvalidArgumentError, match="sort must be one of"):
        inspection.table(sort="largest")
    for top in (-1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="top must be"):
            inspection.table(top=top)
