"""The rest of uproot's RNTuple reading interface (issue 38, item 4), call by call
against uproot 5.7 on the same files: the metadata objects (``member``, ``header``,
``footer``, ``page_link_list``, ``get_field_metadata``), ``to_akform``, ``ak_add_doc``,
virtual arrays with ``access_log``, an RNTuple as a context manager, ``len`` and
identity of fields, ``iterate(report=True)`` with global entry offsets over files,
``entry_stop`` clamping, and uproot's meaning of ``step_size``.

Files: the NanoAOD-like RNTuple ROOT writes (``nanoaod_like``, many clusters) and small
files uproot writes (``mkrntuple``: one cluster per ``extend``, nested records, lists,
tuples, field descriptions), written once per module."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
import uproot

import rntuple
from rntuple import InvalidArgumentError

# The same nested data uproot's own tests write (records, lists of records, tuples).
NESTED = ak.Array(
    {
        "struct1": [{"x": 1, "y": 2}, {"x": 3, "y": 4}],
        "struct4": [
            {"x": [{"up": 1, "down": 2}, {"up": 3, "down": 4}], "y": [({"left": 5, "right": 6}, 7.0)]},
            {"x": [{"up": 9, "down": 10}], "y": [({"left": 13, "right": 14}, 16.0)]},
        ],
        "struct5": [(1, 2, 3), (4, 5, 6)],
        "text": ["one", "two"],
        "jagged": [[1.5, 2.5], []],
    }
)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Files uproot writes: ``nested`` (NESTED, described fields: a form with ``__doc__``
    parameters), ``flat`` (50 000 entries of one int64 field, one cluster) and ``two``
    (NESTED twice, in two clusters)."""
    out = tmp_path_factory.mktemp("uproot_written")
    paths = {name: str(out / f"{name}.root") for name in ("nested", "flat", "two")}
    form, length, buffers = ak.to_buffers(NESTED)
    described = ak.forms.RecordForm(
        [
            c.copy(parameters={**c.parameters, "__doc__": f"field {n}"})
            for n, c in zip(form.fields, form.contents, strict=True)
        ],
        form.fields,
        parameters={"__doc__": "the records"},
    )
    with uproot.recreate(paths["nested"]) as f:
        data = ak.from_buffers(described, length, buffers)
        f.mkrntuple("ntuple", described, description="the records").extend(data)
    with uproot.recreate(paths["flat"]) as f:
        f.mkrntuple("nt", {"x": np.dtype("int64")}).extend({"x": np.arange(50_000, dtype=np.int64)})
    with uproot.recreate(paths["two"]) as f:
        nt = f.mkrntuple("ntuple", NESTED)
        nt.extend(NESTED)
    # Many clusters and cluster groups, by our writer (uproot reads it as the reference).
    paths["clusters"] = str(out / "clusters.root")
    rng = np.random.default_rng(38)
    counts = rng.integers(0, 5, 20_000)
    with rntuple.recreate(paths["clusters"], cluster_size=40_000, page_size=4096, checkpoint_every=3) as f:
        f["Events"] = {
            "n": counts.astype(np.int32),
            "pt": ak.unflatten(rng.random(int(counts.sum())), counts),
            "flag": counts > 2,
        }
    return paths


@pytest.fixture(scope="module", params=["root", "ours"])
def pair(
    request: pytest.FixtureRequest, nanoaod_like: dict[str, Path], written: dict[str, str]
) -> tuple[rntuple.RNTuple, Any]:
    """The same RNTuple opened by us and by uproot: ROOT's NanoAOD-like file (one
    cluster) and our many-cluster file."""
    spec = f"{nanoaod_like['rntuple']}:Events" if request.param == "root" else f"{written['clusters']}:Events"
    return rntuple.open(spec), uproot.open(spec)


@pytest.fixture(scope="module")
def events(nanoaod_like: dict[str, Path]) -> tuple[rntuple.RNTuple, Any]:
    path = str(nanoaod_like["rntuple"])
    return rntuple.open(f"{path}:Events"), uproot.open(f"{path}:Events")


def records(items: list[Any], names: list[str]) -> list[tuple[Any, ...]]:
    """Each metadata record's ``names`` attributes as a tuple (ints for enums)."""
    return [
        tuple(int(v) if hasattr(v, "__index__") else v for v in (getattr(i, n) for n in names)) for i in items
    ]


# ------------------------------------------------------------------------ metadata


def test_anchor_members(pair: tuple[rntuple.RNTuple, Any]) -> None:
    ours, theirs = pair
    for member in (
        "fVersionEpoch",
        "fVersionMajor",
        "fVersionMinor",
        "fVersionPatch",
        "fSeekHeader",
        "fNBytesHeader",
        "fLenHeader",
        "fSeekFooter",
        "fNBytesFooter",
        "fLenFooter",
        "fMaxKeySize",
    ):
        assert ours.member(member) == theirs.member(member), member
    assert ours.classname == theirs.classname == "ROOT::RNTuple"
    with pytest.raises(rntuple.NotFoundError, match="fNoSuchMember"):
        ours.member("fNoSuchMember")


def test_header_and_footer(pair: tuple[rntuple.RNTuple, Any]) -> None:
    ours, theirs = pair
    assert ours.header.checksum == theirs.header.checksum == ours.footer.header_checksum
    assert ours.header.ntuple_name == theirs.header.ntuple_name
    field_attributes = [
        "field_name",
        "type_name",
        "parent_field_id",
        "struct_role",
        "repetition",
        "field_desc",
    ]
    assert records(ours.header.field_records, field_attributes) == records(
        theirs.header.field_records, field_attributes
    )
    column_attributes = ["type", "nbits", "field_id", "first_element_index"]
    assert records(ours.column_records, column_attributes) == records(
        theirs.column_records, column_attributes
    )
    group_attributes = ["min_entry_num", "entry_span", "num_clusters"]
    assert records(ours.footer.cluster_group_records, group_attributes) == records(
        theirs.footer.cluster_group_records, group_attributes
    )
    assert len(ours.footer.cluster_group_records) > 0
    assert records(ours.cluster_summaries, ["num_first_entry", "num_entries"]) == records(
        theirs.cluster_summaries, ["num_first_entry", "num_entries"]
    )


def test_page_link_list(pair: tuple[rntuple.RNTuple, Any]) -> None:
    ours, theirs = pair
    assert len(ours.page_link_list) == len(theirs.page_link_list) == len(ours.clusters)
    for our_cluster, their_cluster in zip(ours.page_link_list, theirs.page_link_list, strict=True):
        assert len(our_cluster) == len(their_cluster)
        for a, b in zip(our_cluster, their_cluster, strict=True):
            assert a.suppressed == b.suppressed
            assert a.element_offset == b.element_offset
            assert a.compression_settings == b.compression_settings
            assert [(p.num_elements, p.locator.offset, p.locator.num_bytes) for p in a.pages] == [
                (p.num_elements, p.locator.offset, p.locator.num_bytes) for p in b.pages
            ]


def test_get_field_metadata(pair: tuple[rntuple.RNTuple, Any]) -> None:
    ours, theirs = pair
    for ncol in range(len(ours.column_records)):
        a, b = ours.get_field_metadata(ncol), theirs.get_field_metadata(ncol)
        assert (a.ncol, a.dtype_byte, a.split, a.zigzag, a.delta, a.isbit, a.nbits) == (
            b.ncol,
            b.dtype_byte,
            b.split,
            b.zigzag,
            b.delta,
            b.isbit,
            b.nbits,
        )
    with pytest.raises(rntuple.NotFoundError, match="no column"):
        ours.get_field_metadata(len(ours.column_records))


def test_read_cluster_pages(pair: tuple[rntuple.RNTuple, Any]) -> None:
    ours, theirs = pair
    for cluster in sorted({0, len(ours.clusters) - 1}):
        for ncol in range(len(ours.column_records)):
            a = ours.read_cluster_pages(cluster, ncol)
            b = theirs.read_cluster_pages(cluster, ncol, theirs.get_field_metadata(ncol))
            assert len(a) == len(b) and np.array_equal(a, b), (cluster, ncol)
    with pytest.raises(rntuple.NotFoundError, match="no cluster"):
        ours.read_cluster_pages(len(ours.clusters), 0)


def test_field_records_and_roles(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['nested']}:ntuple")
    theirs = uproot.open(f"{written['nested']}:ntuple")
    for path in ("struct1", "struct1.x", "struct4.x", "struct5.0", "text"):
        assert ours[path].record.struct_role == theirs[path].record.struct_role, path
        assert ours[path].record.type_name == theirs[path].record.type_name, path


# ------------------------------------------------- fields, context manager, forms


def test_fields_len_identity_and_context_manager(written: dict[str, str]) -> None:
    theirs = uproot.open(f"{written['nested']}:ntuple")
    with rntuple.open(written["nested"]) as f, f["ntuple"] as ours:
        assert ours is f["ntuple"]
        for path in ("struct1", "struct4", "struct4.x", "struct5", "text", "jagged"):
            assert len(ours[path]) == len(theirs[path]), path
        assert ours["struct4"]["x"] is ours["struct4.x"] is f["ntuple/struct4/x"]
        assert ours["struct1"].description == theirs["struct1"].description == "field struct1"


def test_to_akform(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['two']}:ntuple")
    theirs = uproot.open(f"{written['two']}:ntuple")
    form, path = ours.to_akform()
    assert path is None
    assert form == theirs.to_akform()[0] == NESTED.layout.form
    for name in ("struct1", "struct4", "struct5"):
        assert ours[name].to_akform() == theirs[name].to_akform()
    assert ours["struct1"].to_akform(filter_name="x")[0] == form.select_columns(["struct1.x"])


def test_ak_add_doc(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['nested']}:ntuple")
    theirs = uproot.open(f"{written['nested']}:ntuple")
    a, b = ours.arrays(ak_add_doc=True), theirs.arrays(ak_add_doc=True)
    assert a.layout.parameters == b.layout.parameters == {"__doc__": "the records"}
    for name in NESTED.fields:
        assert (
            a[name].layout.parameters.get("__doc__")
            == b[name].layout.parameters.get("__doc__")
            == f"field {name}"
        )
    ours_form, theirs_form = (
        ours["struct4"].to_akform(ak_add_doc=True),
        theirs["struct4"].to_akform(ak_add_doc=True),
    )
    assert ours_form[1] == theirs_form[1] == ["struct4"]
    assert (
        ours_form[0].contents[0].parameters
        == theirs_form[0].contents[0].parameters
        == {"__doc__": "field struct4"}
    )
    a = ours.arrays(ak_add_doc={"typename": "typename"})
    b = theirs.arrays(ak_add_doc={"typename": "typename"})
    assert a["struct1"].layout.parameters["typename"] == b["struct1"].layout.parameters["typename"]
    assert a["jagged"].layout.parameters["typename"] == "std::vector<double>"


def test_tuples_and_records_as_uproot_writes_them(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['two']}:ntuple")
    theirs = uproot.open(f"{written['two']}:ntuple")
    a, b = ours.arrays(), theirs.arrays()
    assert a.tolist() == b.tolist() == ak.concatenate([NESTED, NESTED]).tolist()
    assert str(a.type) == str(b.type)


# ------------------------------------------------------------------ virtual arrays


def test_virtual_arrays_read_on_first_use(written: dict[str, str]) -> None:
    nt = rntuple.open(f"{written['nested']}:ntuple")
    eager = nt.arrays()
    log: list[Any] = []
    virtual = nt.arrays(virtual=True, access_log=log)
    assert log == []
    assert virtual["text"].tolist() == ["one", "two"]
    # One entry per buffer of the field used (a string: offsets and characters).
    assert {a.field for a in log} == {"text"} and len(log) == 2
    assert ak.to_packed(virtual).layout.is_equal_to(ak.to_packed(eager).layout)
    # Every buffer is read once: as many as the eager records have (Awkward's count).
    assert len(log) == len(ak.to_buffers(ak.to_packed(eager))[2])
    ak.materialize(virtual)
    assert len(log) == len(ak.to_buffers(ak.to_packed(eager))[2])
    single: list[Any] = []
    values = nt["jagged"].array(virtual=True, access_log=single, entry_start=1)
    assert single == []
    assert (
        values.tolist() == uproot.open(f"{written['nested']}:ntuple")["jagged"].array(entry_start=1).tolist()
    )
    assert len(single) == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"virtual": True, "how": "zip"}, "'how' cannot be used with 'virtual=True'"),
        ({"virtual": True, "library": "np"}, "'library' cannot be used with 'virtual=True'"),
        ({"virtual": True, "expressions": "struct1"}, "'expressions' cannot be used with 'virtual=True'"),
        ({"virtual": True, "cut": "struct1.x > 1"}, "'cut' cannot be used with 'virtual=True'"),
        ({"virtual": True, "aliases": {"a": "struct1.x"}}, "'aliases' cannot be used with 'virtual=True'"),
        ({"virtual": False, "access_log": []}, "'access_log' cannot be used with 'virtual=False'"),
    ],
)
def test_virtual_refuses_what_uproot_refuses(
    written: dict[str, str], arguments: dict[str, Any], message: str
) -> None:
    ours = rntuple.open(f"{written['nested']}:ntuple")
    theirs = uproot.open(f"{written['nested']}:ntuple")
    with pytest.raises(ValueError, match=message):
        theirs.arrays(**arguments)
    with pytest.raises(InvalidArgumentError, match=message):
        ours.arrays(**arguments)


# ---------------------------------------------------- iterate: reports, steps, ranges


def report_ranges(batches: list[tuple[Any, Any]]) -> list[tuple[int, int, int, int]]:
    return [
        (r.tree_entry_start, r.tree_entry_stop, r.global_entry_start, r.global_entry_stop) for _, r in batches
    ]


def test_iterate_report_and_entry_stop_clamping(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['flat']}:nt")
    theirs = uproot.open(f"{written['flat']}:nt")
    for arguments in (
        {"step_size": 30_000, "entry_stop": 40_000},
        {"step_size": 15_000, "entry_start": 10_000, "entry_stop": 40_000},
        {"step_size": 50, "entry_start": 60_000, "entry_stop": 70_000},
    ):
        a = list(ours.iterate(report=True, **arguments))
        b = list(theirs.iterate(report=True, **arguments))
        assert report_ranges(a) == report_ranges(b), arguments
        assert [len(x) for x, _ in a] == [len(x) for x, _ in b]
        assert all(r.file_path == written["flat"] for _, r in a)


def test_module_iterate_global_offsets(written: dict[str, str]) -> None:
    specs = [f"{written['flat']}:nt", f"{written['flat']}:nt"]
    a = list(rntuple.iterate(specs, step_size=20_000, report=True))
    b = list(uproot.iterate(specs, step_size=20_000, report=True))
    assert report_ranges(a) == report_ranges(b)
    assert a[3][1].global_entry_start == 50_000
    frames = [x for x, _ in rntuple.iterate(specs, step_size=20_000, library="pd", report=True)]
    expected = [x for x, _ in uproot.iterate(specs, step_size=20_000, library="pd", report=True)]
    assert [list(f.index[[0, -1]]) for f in frames] == [list(f.index[[0, -1]]) for f in expected]


def test_step_size_in_bytes_as_uproot(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['flat']}:nt")
    theirs = uproot.open(f"{written['flat']}:nt")
    # One cluster: uproot's entries per step (8 bytes an entry), the same batches.
    for step in ("100 kB", "64 KiB", "1 MB"):
        assert [len(x) for x in ours.iterate(step_size=step)] == [
            len(x) for x in theirs.iterate(step_size=step)
        ]
    # Many clusters: batches of at most uproot's step, ending at cluster boundaries.
    nt = rntuple.open(f"{written['clusters']}:Events")
    un = uproot.open(f"{written['clusters']}:Events")
    assert len(nt.clusters) > 3
    steps = [len(x) for x in un.iterate(filter_name="pt", step_size="100 kB")]
    ranges = nt.step_ranges(["pt"], 0, nt.num_entries, "100 kB")
    assert max(b - a for a, b in ranges) <= max(steps)
    boundaries = {c.start for c in nt.clusters} | {nt.num_entries}
    assert {b for _, b in ranges} <= boundaries
    assert ranges[0][0] == 0 and ranges[-1][1] == nt.num_entries
    assert all(a == b for (_, a), (b, _) in itertools.pairwise(ranges))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A TTree uproot writes (``nJet``, ``Jet_pt``, ``Jet_eta``, ``MET``) converted by
    ``rntuple.convert`` into ROOT's importer layout: a ``_collection0`` of records, the
    ``Jet_*`` fields projected onto it, ``nJet`` a cardinality field."""
    out = tmp_path_factory.mktemp("imported")
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 4, 5000)
    jets = ak.zip(
        {
            "pt": ak.unflatten(rng.random(int(counts.sum())).astype(np.float32), counts),
            "eta": ak.unflatten(rng.random(int(counts.sum())), counts),
        }
    )
    with uproot.recreate(out / "tree.root") as f:
        f.mktree("Events", {"Jet": jets.type.content, "MET": "float64"})
        f["Events"].extend({"Jet": jets, "MET": rng.random(5000)})
    rntuple.convert(f"{out / 'tree.root'}:Events", str(out / "imported.root"))
    return str(out / "imported.root")


def test_step_size_in_bytes_counts_projections_as_uproot(imported: str) -> None:
    ours = rntuple.open(f"{imported}:Events")
    theirs = uproot.open(f"{imported}:Events")
    sources = [r.source_field_id for r in ours.field_records]
    assert any(s is not None for s in sources)  # projected fields, nJet's cardinality
    assert [r.source_field_id for r in theirs.field_records] == sources
    for arguments in ({}, {"filter_name": "nJet"}, {"filter_name": "Jet_*"}):
        for step in ("10 kB", "33 kB"):
            a = [len(x) for x in ours.iterate(step_size=step, **arguments)]
            b = [len(x) for x in theirs.iterate(step_size=step, **arguments)]
            assert a == b, (arguments, step)


def test_field_iterate(written: dict[str, str]) -> None:
    ours = rntuple.open(f"{written['flat']}:nt")
    theirs = uproot.open(f"{written['flat']}:nt")
    a = [x["x"].tolist()[:2] for x in ours["x"].iterate(step_size="100 kB")]
    b = [x["x"].tolist()[:2] for x in theirs["x"].iterate(step_size="100 kB")]
    assert a == b
