"""Write RNTuple test files with ROOT 6.40 (PyROOT) for cross-tool tests.

The writing itself is C++ (``tests/cxx/rootgen.hxx``) JIT-compiled into ROOT's
interpreter and called from Python: filling complex types entry by entry from Python
would be slow.  Every value is a deterministic function of the entry number.

Files produced by :func:`generate` (see :data:`SPECS`):

- ``multicluster.root``: zstd, a few thousand entries, tiny clusters and pages, a
  cluster group committed every 1000 entries -> dozens of clusters, several cluster
  groups, many pages per column and cluster.
- ``compression_<algo>.root`` for zstd (505), lz4 (404), zlib (101), lzma (207) and
  uncompressed (0).
- ``late_extension.root``: fields added after the first clusters via
  ``RNTupleWriter::CreateModelUpdater()`` (once mid-cluster, once right after a
  cluster-group commit).

Files produced by :func:`generate_extra` (``tests/cxx/rootgen_extra.hxx``, see
:data:`EXTRA_FILES`): multi-key payloads (small max key size), several column
representations per field, streamer fields, an RNTuple in a sub-directory and more
nested types.

Command line::

    python tests/rootgen.py OUTDIR        # writes the files and prints their structure
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rootdump import declare_cxx, load_root, outdir_parser

NTUPLE = "ntpl"

#: Top-level fields of the initial model, in schema order.
EARLY_FIELDS = [
    "b", "c", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "str",
    "vf", "vvi", "vs", "arr", "opt", "pair", "tup", "var", "map", "set", "bits", "rvec",
]  # fmt: skip
#: Fields added by the first model extension (mid-cluster).
LATE1_FIELDS = ["late_i64", "late_vf", "late_str", "late_vvi", "late_opt"]
#: Fields added by the second model extension (right after a cluster-group commit).
LATE2_FIELDS = ["late2_f32", "late2_map", "late2_var"]

_dicts_loaded = False

#: STL types used by ``nested.root`` for which the PyPI ROOT build ships no dictionary
#: (without one, ROOT treats them as emulated collections and crashes when filling).
DICT_TYPES = [
    "std::map<int,std::string>",
    "std::map<std::string,std::vector<float>>",
    "std::vector<std::map<std::string,std::vector<float>>>",
]


@dataclass(frozen=True)
class FileSpec:
    """How to write one test file, and what structure it must end up with."""

    filename: str
    n_entries: int
    compression: int
    approx_zipped_cluster_size: int = 32 * 1024
    max_unzipped_page_size: int = 128
    initial_unzipped_page_size: int = 32
    page_checksums: bool = True
    group_every: int = 0  #: commit a cluster group every that many entries (0: never explicitly)
    cluster_every: int = 0  #: additionally commit a cluster every that many entries
    extend1_at: int = -1  #: entry at which LATE1_FIELDS are added (-1: never)
    extend2_at: int = -1  #: entry at which LATE2_FIELDS are added (-1: never)
    # Expected minimum structure (checked by the tests so they cannot silently test less).
    min_clusters: int = 2
    min_cluster_groups: int = 1
    min_max_pages_per_column_cluster: int = 2
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fields(self) -> list[str]:
        """Top-level field names in schema order."""
        names = list(EARLY_FIELDS)
        if self.extend1_at >= 0:
            names += LATE1_FIELDS
        if self.extend2_at >= 0:
            names += LATE2_FIELDS
        return names

    @property
    def late_fields(self) -> list[str]:
        """Fields added by model extension (they live in the header extension)."""
        return self.fields[len(EARLY_FIELDS) :]


COMPRESSIONS = {"zstd": 505, "lz4": 404, "zlib": 101, "lzma": 207, "none": 0}

SPECS: list[FileSpec] = [
    FileSpec(
        "multicluster.root",
        n_entries=5000,
        compression=505,
        group_every=1000,
        min_clusters=20,
        min_cluster_groups=4,
        min_max_pages_per_column_cluster=4,
    ),
    *[
        FileSpec(
            f"compression_{algo}.root",
            n_entries=1500,
            compression=level,
            page_checksums=(algo != "none"),
            group_every=700,
            min_clusters=4,
            min_cluster_groups=2,
        )
        for algo, level in COMPRESSIONS.items()
    ],
    FileSpec(
        "late_extension.root",
        n_entries=4000,
        compression=505,
        group_every=1500,
        cluster_every=400,
        extend1_at=1234,
        extend2_at=2500,
        min_clusters=10,
        min_cluster_groups=3,
    ),
]

SPECS_BY_NAME = {s.filename: s for s in SPECS}


def ensure_dictionaries() -> Any:
    """Build and load (ACLiC, in a temporary directory) the dictionaries of :data:`DICT_TYPES`."""
    global _dicts_loaded
    ROOT = load_root()
    if not _dicts_loaded:
        cwd = os.getcwd()
        workdir = tempfile.mkdtemp(prefix="rntuple-interop-dicts-")
        try:
            os.chdir(workdir)
            ROOT.gInterpreter.GenerateDictionary(";".join(DICT_TYPES), "map;string;vector")
        finally:
            os.chdir(cwd)
        missing = [t for t in DICT_TYPES if not ROOT.TClass.GetClass(t).HasDictionary()]
        if missing:
            raise RuntimeError(f"failed to generate dictionaries for {missing}")
        _dicts_loaded = True
    return ROOT


def _declare() -> Any:
    """JIT-compile the C++ writers once per process and return the ROOT module."""
    ensure_dictionaries()
    return declare_cxx("splitmix.hxx", "rootgen.hxx", "rootgen_extra.hxx")


def write(spec: FileSpec, outdir: Path) -> Path:
    """Write one file according to ``spec`` into ``outdir``; return its path."""
    ROOT = _declare()
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / spec.filename
    ROOT.rntuple_interop_gen.WriteAllTypes(
        str(path),
        NTUPLE,
        spec.n_entries,
        spec.compression,
        spec.approx_zipped_cluster_size,
        spec.max_unzipped_page_size,
        spec.initial_unzipped_page_size,
        spec.page_checksums,
        spec.group_every,
        spec.cluster_every,
        spec.extend1_at,
        spec.extend2_at,
    )
    return path


def generate(outdir: Path, specs: list[FileSpec] | None = None) -> dict[str, Path]:
    """Write all files of ``specs`` (default :data:`SPECS`); return {filename: path}."""
    return {s.filename: write(s, outdir) for s in (specs or SPECS)}


#: Max key size (bytes) of the multi-key files, and their max unzipped page size.
MULTIKEY_MAX_KEY = {"multikey_none.root": 4096, "multikey_zstd.root": 4096}
MULTIKEY_PAGE_SIZE = 64 * 1024
MULTIKEY_PAD_FIELDS = 120
SUBDIR_NTUPLE = "a/b/nt"
SUBDIR_TOP_NTUPLE = "top"
SUBDIR_ENTRIES = 500
STREAMER_ENTRIES = 300
#: Per extra file: (RNTuple name, number of entries).
EXTRA_FILES = {
    "multikey_none.root": (NTUPLE, 3000),
    "multikey_zstd.root": (NTUPLE, 3000),
    "multirep.root": (NTUPLE, 2000),
    "streamer.root": (NTUPLE, STREAMER_ENTRIES),
    "subdir.root": (SUBDIR_NTUPLE, SUBDIR_ENTRIES),
    "nested.root": (NTUPLE, 1500),
}


def generate_extra(outdir: Path) -> dict[str, Path]:
    """Write the files of :data:`EXTRA_FILES` into ``outdir``; return {filename: path}."""
    ROOT = _declare()
    gen = ROOT.rntuple_interop_gen
    outdir.mkdir(parents=True, exist_ok=True)
    paths = {fname: outdir / fname for fname in EXTRA_FILES}
    for fname, compression in (("multikey_none.root", 0), ("multikey_zstd.root", 505)):
        gen.WriteMultiKey(
            str(paths[fname]),
            NTUPLE,
            EXTRA_FILES[fname][1],
            compression,
            MULTIKEY_MAX_KEY[fname],
            MULTIKEY_PAGE_SIZE,
            MULTIKEY_PAD_FIELDS,
        )
    gen.WriteMultiRep(str(paths["multirep.root"]), NTUPLE, EXTRA_FILES["multirep.root"][1], 150, 505)
    gen.WriteStreamer(str(paths["streamer.root"]), NTUPLE, STREAMER_ENTRIES, 505)
    gen.WriteSubdir(str(paths["subdir.root"]), "nt", SUBDIR_TOP_NTUPLE, SUBDIR_ENTRIES)
    gen.WriteNested(str(paths["nested.root"]), NTUPLE, EXTRA_FILES["nested.root"][1], 505)
    return paths


def expected_streamer_bytes(entry: int) -> dict[str, list[int]]:
    """The bytes ``TClass::Streamer`` writes for entry ``entry``'s objects of ``streamer.root``."""
    ROOT = _declare()
    return json.loads(str(ROOT.rntuple_interop_gen.ExpectedStreamerBytes(entry)))


def describe_columns(path: Path, name: str = NTUPLE) -> dict[str, Any]:
    """Per-file details for the extra files, from ROOT's descriptor.

    Returns header/footer sizes, page-list sizes, the largest page, per-field column
    representations (``{qualified field: {repr index: [column types]}}``), per-field the
    set of representation indices that are primary (not suppressed) in some cluster,
    whether each cluster has exactly one primary representation per field, the
    structural role of every top-level field and the projected top-level fields.
    """
    ROOT = load_root()
    reader = ROOT.RNTupleReader.Open(name, str(path))
    desc = reader.GetDescriptor()
    reps: dict[str, dict[int, list[str]]] = {}
    col_field: dict[int, tuple[str, int]] = {}
    for col in desc.GetColumnIterable():
        if col.IsAliasColumn():
            continue
        fname = str(desc.GetQualifiedFieldName(col.GetFieldId()))
        rep = int(col.GetRepresentationIndex())
        ctype = str(ROOT.Internal.RColumnElementBase.GetColumnTypeName(col.GetType()))
        reps.setdefault(fname, {}).setdefault(rep, []).append(ctype)
        col_field[int(col.GetPhysicalId())] = (fname, rep)
    primary: dict[str, set[int]] = {}
    one_primary_per_cluster = True
    max_page = 0
    for cluster in desc.GetClusterIterable():
        active: dict[str, set[int]] = {}
        for cid, (fname, rep) in col_field.items():
            if not cluster.ContainsColumn(cid):
                continue
            crange = cluster.GetColumnRange(cid)
            if crange.IsSuppressed():
                continue
            active.setdefault(fname, set()).add(rep)
            for info in cluster.GetPageRange(cid).GetPageInfos():
                max_page = max(max_page, int(info.GetLocator().GetNBytesOnStorage()))
        for fname, rs in active.items():
            primary.setdefault(fname, set()).update(rs)
            if len(rs) != 1:
                one_primary_per_cluster = False
    page_lists = [
        (int(g.GetPageListLocator().GetNBytesOnStorage()), int(g.GetPageListLength()))
        for g in desc.GetClusterGroupIterable()
    ]
    return {
        "n_entries": int(desc.GetNEntries()),
        "n_clusters": int(desc.GetNClusters()),
        "header_size": int(desc.GetOnDiskHeaderSize()),
        "footer_size": int(desc.GetOnDiskFooterSize()),
        "page_lists": page_lists,
        "max_page_size_on_storage": max_page,
        "representations": reps,
        "primary_representations": {k: sorted(v) for k, v in primary.items()},
        "one_primary_per_cluster": one_primary_per_cluster,
        "roles": {f.GetFieldName(): int(f.GetStructure()) for f in desc.GetTopLevelFields()},
        "projected": [f.GetFieldName() for f in desc.GetTopLevelFields() if f.IsProjectedField()],
        "fields": [f.GetFieldName() for f in desc.GetTopLevelFields()],
    }


def describe(path: Path, name: str = NTUPLE) -> dict[str, Any]:
    """Summarise the on-disk structure of an RNTuple as ROOT's descriptor reports it."""
    ROOT = load_root()
    reader = ROOT.RNTupleReader.Open(name, str(path))
    desc = reader.GetDescriptor()
    compressions: set[int] = set()
    n_pages = 0
    max_pages_col_cluster = 0
    checksummed = unchecksummed = 0
    cluster_entry_ranges = []
    for cluster in desc.GetClusterIterable():
        first = int(cluster.GetFirstEntryIndex())
        cluster_entry_ranges.append((first, first + int(cluster.GetNEntries())))
        for col in desc.GetColumnIterable():
            cid = col.GetPhysicalId()
            if col.IsAliasColumn() or not cluster.ContainsColumn(cid):
                continue
            crange = cluster.GetColumnRange(cid)
            if crange.IsSuppressed():
                continue
            setting = crange.GetCompressionSettings()
            if setting.has_value():
                compressions.add(int(setting.value()))
            infos = cluster.GetPageRange(cid).GetPageInfos()
            n_pages += infos.size()
            max_pages_col_cluster = max(max_pages_col_cluster, int(infos.size()))
            for info in infos:
                if info.HasChecksum():
                    checksummed += 1
                else:
                    unchecksummed += 1
    header_ext = desc.GetHeaderExtension()
    late = []
    if header_ext:
        late = [desc.GetFieldDescriptor(fid).GetFieldName() for fid in header_ext.GetTopMostFields(desc)]
    top = [f.GetFieldName() for f in desc.GetTopLevelFields()]
    return {
        "n_entries": int(desc.GetNEntries()),
        "n_clusters": int(desc.GetNClusters()),
        "n_cluster_groups": int(desc.GetNClusterGroups()),
        "n_pages": n_pages,
        "max_pages_per_column_cluster": max_pages_col_cluster,
        "compression_settings": sorted(compressions),
        "pages_with_checksum": checksummed,
        "pages_without_checksum": unchecksummed,
        "fields": top,
        "header_extension_fields": late,
        "cluster_entry_ranges": sorted(cluster_entry_ranges),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: write all files into OUTDIR and print their structure."""
    args = outdir_parser(__doc__).parse_args(argv)
    t0 = time.perf_counter()
    paths = generate(args.outdir)
    print(f"generated {len(paths)} files in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    for fname, path in paths.items():
        info = describe(path)
        info.pop("cluster_entry_ranges")
        print(fname, json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
