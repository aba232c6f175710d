"""``rntuple.dask.convert_files``: TTree files converted to RNTuple, one task per file,
on a ``dask.distributed`` ``LocalCluster`` of 2 worker processes (one thread each), as
for a dataset larger than one machine.

- 8 distinct TTree files (ROOT-written flat cases at different sizes and compressions):
  8 outputs named like their inputs, each read by ROOT 6.40 equal to its input;
- a truncated input among good ones: the good ones are converted, then
  :class:`rntuple.ConversionError` names the bad file (and only it), which leaves no
  output.

Nothing is skipped: without ROOT, ``distributed`` or the package, the tests fail.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import ttree_oracle
import ttreegen

import rntuple
from rntuple.dask import convert_files

#: The 8 inputs: (file stem, ttreegen case, entries, ROOT compression).
INPUTS = [
    ("nano_zstd", "nanoaod", 2000, 505),
    ("nano_lz4", "nanoaod", 1000, 404),
    ("counts_zstd", "count_arrays", 3000, 505),
    ("counts_zlib", "count_arrays", 1500, 101),
    ("counts_lzma", "count_arrays", 2500, 207),
    ("leaflist_zstd", "leaflist", 3000, 505),
    ("leaflist_none", "leaflist", 1000, 0),
    ("baskets", "many_baskets", 5000, 505),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str, int]]:
    """``{stem: (path, tree, entries)}`` of the :data:`INPUTS`, written by ROOT."""
    outdir = tmp_path_factory.mktemp("convert_dask_in")
    return {
        stem: (ttreegen.write_variant(case, outdir / f"{stem}.root", n, c), ttreegen.CASES[case].tree, n)
        for stem, case, n, c in INPUTS
    }


def test_dask_converts_8_files_on_2_worker_processes(inputs, client, tmp_path):
    out = tmp_path / "out"
    t0 = time.perf_counter()
    results = convert_files([str(p) for p, _, _ in inputs.values()], out, client=client)
    seconds = time.perf_counter() - t0
    print(f"\n[dask] converted {len(results)} files in {seconds:.2f}s")
    # The cluster is 2 worker processes, other than this one.
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids
    assert [r.input for r in results] == [str(p) for p, _, _ in inputs.values()]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{stem}.root" for stem in inputs)
    for (stem, (path, tree, n)), result in zip(inputs.items(), results, strict=True):
        assert result.output == str(out / f"{stem}.root")
        assert result.entries == n and result.skipped == []
        assert result.output_bytes == (out / f"{stem}.root").stat().st_size
        diffs = ttree_oracle.compare(path, tree, out / f"{stem}.root", tree)
        assert not diffs, f"{stem}: ROOT reads the output differently:\n" + "\n".join(diffs[:20])


def test_dask_reports_failed_files_after_all_finished(inputs, client, tmp_path):
    good = [inputs["counts_zlib"][0], inputs["leaflist_none"][0]]
    whole = good[0].read_bytes()
    bad = tmp_path / "truncated.root"
    bad.write_bytes(whole[: len(whole) // 2])
    out = tmp_path / "out"
    with pytest.raises(rntuple.ConversionError) as info:
        convert_files([good[0], bad, good[1]], out, client=client)
    error = info.value
    assert "1 of 3 conversions failed" in str(error)
    assert f"{bad}: FormatError" in str(error)
    assert list(error.failures) == [str(bad)]
    assert isinstance(error.failures[str(bad)], rntuple.FormatError)
    assert [r.input for r in error.results] == [str(p) for p in good]
    # The good outputs are complete; the bad one left nothing.
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in good)
    for p in good:
        assert rntuple.open(f"{out / p.name}").keys()
    # Outputs are refused when they exist, per file, unless overwrite=True.
    with pytest.raises(rntuple.ConversionError, match="already exists"):
        convert_files(good, out, client=client)
    assert len(convert_files(good, out, client=client, overwrite=True)) == 2
