"""Round trip through our writer: ``rntuple copy`` of every conformance case, read by ROOT 6.40.

For each case of ``../shared/conformance/rntuple-validation-1.0`` (beside the repository) except
``structure.feature_flag`` (a file ROOT must reject), ``rntuple copy write/<case>.root
OUT.root`` must give a file that ROOT reads to exactly ``read/<case>.json`` under the
comparison conventions of :func:`rootdump.check_case`:

- every case is compared entry by entry; the ``compression.*`` references hold only the
  sum of ``Int64`` over all entries, so their entries are ROOT's reading of the original
  file, checked against those sums (:func:`rootdump.reference_entries`);
- ``types.unordered_set.*`` / ``types.unordered_multiset.*``: every list is compared as a
  multiset (ROOT lists unordered containers in hash-table order);
- maps are JSON objects keyed as the README says (key order ignored);
- ``structure.attributes``: the reference is the attribute set ``Attributes`` as ROOT's
  ``RNTupleReader::OpenAttributeSet`` reads it, so the copy must carry it too.

``test_copy_schema`` also checks that the copy keeps ROOT's schema (types, column
representations) as ROOT's descriptor shows it: the values alone would not notice, e.g.,
a set written where an unordered set was.

ROOT reads in worker processes (:func:`rootdump.run_tasks`): a crash costs only the case
it happened in.  ``test_renderer_reproduces_reference`` checks the renderer itself on
ROOT's own files (all cases, as ``python tests/rootdump.py --validate``).

A missing binary, or a binary without the ``copy`` subcommand, makes every round-trip
case FAIL with a message saying so.  ``RNTUPLE_INTEROP_KEEP=DIR`` keeps the copies in
``DIR/roundtrip``.
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import conformance_data
import pytest
from conftest import require_rntuple_bin, rntuple_bin_path

import rootdump

#: Every conformance case (without the data, one pseudo-case whose tests fail saying so).
ALL_CASES = conformance_data.cases()
#: The error case: ROOT must refuse the file, there is nothing to copy.
ERROR_CASES = {"structure.feature_flag"}
ROUNDTRIP_CASES = [c for c in ALL_CASES if c not in ERROR_CASES]
#: Seconds allowed for one ``rntuple copy``.
COPY_TIMEOUT = 120


@dataclass
class RoundTrip:
    """Outcome of copying every case and reading the copies with ROOT."""

    problem: str | None = None  #: why nothing could be checked (no binary, no ``copy``)
    results: dict[str, tuple[str, str]] = field(default_factory=dict)  #: case -> (status, detail)
    seconds: dict[str, float] = field(default_factory=dict)  #: copy, read
    copies: dict[str, Path] = field(default_factory=dict)  #: case -> the copy (if it was written)


def _copy_problem(binary: Path) -> str | None:
    """``None`` if ``binary`` has a ``copy`` subcommand, else why not."""
    if not binary.is_file() or not os.access(binary, os.X_OK):
        return f"rntuple CLI binary not found or not executable at {binary} (build it or set RNTUPLE_BIN)"
    proc = subprocess.run([str(binary), "copy", "--help"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        err = " ".join((proc.stderr or proc.stdout).split())[:300]
        return f"`{binary} copy` is not available (the CLI has no `copy` subcommand yet?): {err}"
    return None


def _copy(binary: Path, src: Path, dst: Path) -> tuple[str, str] | None:
    """Run ``rntuple copy src dst``; ``None`` on success, else a (status, detail) result."""
    dst.unlink(missing_ok=True)
    try:
        proc = subprocess.run(
            [str(binary), "copy", str(src), str(dst)],
            capture_output=True,
            text=True,
            check=False,
            timeout=COPY_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return "COPY", f"`rntuple copy` took more than {COPY_TIMEOUT}s"
    if proc.returncode != 0:
        err = " ".join((proc.stderr or proc.stdout).split())[:400]
        return "COPY", f"`rntuple copy` exit {proc.returncode}: {err}"
    if not dst.is_file():
        return "COPY", "`rntuple copy` succeeded but wrote no file"
    return None


@pytest.fixture(scope="session")
def renderer_results() -> dict[str, tuple[str, str]]:
    """The renderer on ROOT's own files: ``{case: (status, detail)}`` for every case."""
    t0 = time.perf_counter()
    results = rootdump.validate(conformance_data.require())
    print(f"\n[rootdump] rendered {len(results)} conformance files in {time.perf_counter() - t0:.1f}s")
    return results


@pytest.fixture(scope="session")
def roundtrip(tmp_path_factory: pytest.TempPathFactory) -> RoundTrip:
    """Copy every case with ``rntuple copy`` and check ROOT's reading of each copy."""
    conformance = conformance_data.require()
    binary = rntuple_bin_path()
    problem = _copy_problem(binary)
    if problem:
        return RoundTrip(problem=problem)
    keep = os.environ.get("RNTUPLE_INTEROP_KEEP")
    outdir = Path(keep) / "roundtrip" if keep else tmp_path_factory.mktemp("roundtrip")
    outdir.mkdir(parents=True, exist_ok=True)
    out = RoundTrip()

    t0 = time.perf_counter()
    copies = {case: outdir / f"{case}.root" for case in ROUNDTRIP_CASES}

    def copy_case(case: str) -> tuple[str, str] | None:
        return _copy(binary, conformance / "write" / f"{case}.root", copies[case])

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        failed = dict(zip(ROUNDTRIP_CASES, pool.map(copy_case, ROUNDTRIP_CASES), strict=True))
    out.seconds["copy"] = time.perf_counter() - t0
    for case, result in failed.items():
        if result is not None:
            out.results[case] = result

    t0 = time.perf_counter()
    copied = {case: path for case, path in copies.items() if case not in out.results}
    out.copies = copied
    out.results.update(rootdump.run_tasks(rootdump.conformance_tasks(conformance, copied)))
    out.seconds["read"] = time.perf_counter() - t0
    print(
        f"\n[roundtrip] copied {len(copies)} cases in {out.seconds['copy']:.1f}s, "
        f"ROOT read the copies in {out.seconds['read']:.1f}s ({outdir})"
    )
    return out


def test_entries_are_compared_not_their_sum(tmp_path: Path) -> None:
    """The compression.* cases are compared entry by entry: a file holding
    compression.algorithms.zstd's entries with two of them swapped keeps the reference's
    sum of ``Int64``, and ROOT's reading of it is found to differ at the first of them."""
    import numpy as np

    import rntuple

    case = "compression.algorithms.zstd"
    values = list(range(32))
    values[5], values[10] = values[10], values[5]
    path = tmp_path / "swapped.root"
    with rntuple.recreate(path) as f:
        f.write("ntpl", {"Int64": np.array(values, dtype=np.int64)})
    task = rootdump.Task(case, str(path), str(conformance_data.read_file(case)))
    assert rootdump.run_tasks([task], jobs=1)[case] == (
        "DIFF",
        'entry 5: got {"Int64": 10} expected {"Int64": 5}',
    )


@pytest.mark.parametrize("case", ALL_CASES)
def test_renderer_reproduces_reference(case: str, renderer_results: dict[str, tuple[str, str]]) -> None:
    """ROOT's reading of ``write/<case>.root``, rendered by rootdump, is ``read/<case>.json``."""
    status, detail = renderer_results[case]
    assert status == "OK", f"{case}: {status}: {detail}"


@pytest.mark.parametrize("case", ROUNDTRIP_CASES)
def test_copy_roundtrip(case: str, roundtrip: RoundTrip) -> None:
    """ROOT 6.40 reads ``rntuple copy write/<case>.root OUT.root`` to exactly ``read/<case>.json``."""
    if roundtrip.problem:
        require_rntuple_bin()  # a clearer message if the binary itself is missing
        pytest.fail(roundtrip.problem, pytrace=False)
    status, detail = roundtrip.results[case]
    if status != "OK":
        pytest.fail(f"{case}: ROOT's reading of the copy: {status}: {detail}", pytrace=False)


@pytest.mark.filterwarnings("ignore:.*RNTuple Attributes are experimental")
@pytest.mark.parametrize("case", ROUNDTRIP_CASES)
def test_copy_schema(case: str, roundtrip: RoundTrip) -> None:
    """The copy has ROOT's schema: field names, types, type aliases, structure, repetitions,
    projections and columns (type, representation index, bits on storage, value range)."""
    if roundtrip.problem:
        require_rntuple_bin()
        pytest.fail(roundtrip.problem, pytrace=False)
    if case not in roundtrip.copies:
        pytest.fail(f"{case}: no copy: {roundtrip.results[case][1]}", pytrace=False)
    want = rootdump.schema(conformance_data.write_file(case))
    got = rootdump.schema(roundtrip.copies[case])
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            keys = sorted(k for k in set(g) | set(w) if g.get(k) != w.get(k))
            diff = {k: {"copy": g.get(k), "ROOT": w.get(k)} for k in keys}
            pytest.fail(f"{case}: field #{i} {w['name']!r} (depth first) differs: {diff}", pytrace=False)
    if len(got) != len(want):
        pytest.fail(f"{case}: the copy has {len(got)} fields, ROOT's file {len(want)}", pytrace=False)
