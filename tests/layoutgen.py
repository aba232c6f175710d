"""Write the schemas of the writer-layout test with ROOT 6.40 (PyROOT).

``crates/rntuple/tests/root_writer_layout.rs`` has ROOT write these files, copies each
with our writer under the same write options, and compares the cluster and page layout.
Each schema stresses one part of our writer's entry-size model (``write/size.rs``):

- ``variant``: ``std::variant`` of 2 to 4 alternatives (scalars, strings, vectors);
- ``optional``: ``std::optional`` and ``std::unique_ptr`` of scalars, strings, vectors and
  a record holding an optional;
- ``bitset``: ``std::bitset`` of 1, 7, 64 and 130 bits, and a vector of bitsets;
- ``string``: strings short, empty, long, and in a vector;
- ``nested_vectors``: ``vector<vector<float>>``, three levels, and strings two levels down;
- ``records``: pairs, tuples and arrays holding collections;
- ``nanoaod``: a NanoAOD-like mix of all of these with bools and jagged arrays;
- ``containers``: ``vector<bool>``, ``array<bool, 3>``, ``RVec``, a vector of variants,
  ``unique_ptr<string>``, ``char``, a map and a set;
- ``representations``: columns stored other than by default (Real16, Real32Trunc,
  Real32Quant, a double as SplitReal32, 32-bit indices, an unsplit Int64).

The writing is C++ (``tests/cxx/layoutgen.hxx``) JIT-compiled into ROOT's interpreter;
every value comes from a fixed-seed generator, so a file is the same on every machine.

Command line (several files per run pay ROOT's start-up once)::

    python tests/layoutgen.py --file SCHEMA PATH N COMPRESSION CLUSTER MAX_PAGE INITIAL_PAGE ...

``COMPRESSION`` is ROOT's setting (505 = zstd 5, 0 = none); ``CLUSTER`` the approximate
zipped cluster size, ``MAX_PAGE`` and ``INITIAL_PAGE`` the unzipped page sizes, in bytes
(0 keeps ROOT's default).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rootdump import declare_cxx

#: The schemas ``layoutgen.hxx`` writes.
SCHEMAS = (
    "variant",
    "optional",
    "bitset",
    "string",
    "nested_vectors",
    "records",
    "nanoaod",
    "containers",
    "representations",
)


def _declare() -> Any:
    """JIT-compile the C++ writers once per process and return the ROOT module."""
    return declare_cxx("splitmix.hxx", "layoutgen.hxx")


def write(
    schema: str,
    path: str | Path,
    n_entries: int,
    compression: int = 505,
    cluster_bytes: int = 0,
    max_page_bytes: int = 0,
    initial_page_bytes: int = 0,
) -> None:
    """Have ROOT write ``n_entries`` entries of ``schema`` as RNTuple ``Events`` in ``path``
    with the given write options (0: ROOT's default)."""
    if schema not in SCHEMAS:
        raise ValueError(f"unknown schema {schema!r}; known: {', '.join(SCHEMAS)}")
    ROOT = _declare()
    ROOT.rntuple_layoutgen.Write(
        schema, str(path), n_entries, compression, cluster_bytes, max_page_bytes, initial_page_bytes
    )


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--file",
        nargs=7,
        action="append",
        required=True,
        metavar=("SCHEMA", "PATH", "N", "COMPRESSION", "CLUSTER", "MAX_PAGE", "INITIAL_PAGE"),
        help="one file to write (repeatable)",
    )
    args = ap.parse_args(argv)
    for schema, path, *numbers in args.file:
        if schema not in SCHEMAS:
            ap.error(f"unknown schema {schema!r}; known: {', '.join(SCHEMAS)}")
        try:
            n, compression, cluster, max_page, initial_page = (int(x) for x in numbers)
        except ValueError:
            ap.error(f"--file {schema} {path}: N and the sizes must be integers, got {numbers}")
        write(schema, path, n, compression, cluster, max_page, initial_page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
