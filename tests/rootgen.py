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

Command line::

    python tests/rootgen.py OUTDIR        # writes the files and prints their structure
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rootdump import load_root

CXX_DIR = Path(__file__).resolve().parent / "cxx"
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

_declared = False


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


def _declare() -> Any:
    """JIT-compile the C++ writer once per process and return the ROOT module."""
    global _declared
    ROOT = load_root()
    if not _declared:
        if not ROOT.gInterpreter.Declare((CXX_DIR / "rootgen.hxx").read_text()):
            raise RuntimeError("failed to declare tests/cxx/rootgen.hxx in cling")
        _declared = True
    return ROOT


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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=Path)
    args = ap.parse_args(argv)
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
