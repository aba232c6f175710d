"""A file past 5 GiB written by rntuple and read back by ROOT 6.40 (slow: ``pytest -m slow``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
#: Bytes of data to write; RNTUPLE_LARGE_FILE_BYTES overrides it for a quick run.
SIZE = int(os.environ.get("RNTUPLE_LARGE_FILE_BYTES", 5 * 2**30 + 2**20))


def expected_sums(n: int) -> tuple[int, int]:
    """Sum of ``i`` and of every element of ``v`` over ``n`` entries, computed exactly."""
    i = np.arange(n, dtype=np.int64)
    total_v = sum(int(((i + j) % 1000).sum()) for j in range(64))
    return n * (n - 1) // 2, total_v


@pytest.mark.slow
def test_5gib_file_reads_back_in_root(tmp_path: Path) -> None:
    """ROOT's RDataFrame reads every entry of a 5 GiB file with the exact sums."""
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "rntuple-cli", "--example", "bigfile"],
        cwd=REPO,
        check=True,
    )
    out = tmp_path / "big.root"
    made = subprocess.run(
        [str(REPO / "target/release/examples/bigfile"), str(out), str(SIZE)],
        check=True,
        capture_output=True,
        text=True,
    )
    n = int(made.stdout.strip())
    assert out.stat().st_size > SIZE - 2**20
    import ROOT

    df = ROOT.RDataFrame("big", str(out))
    count = df.Count()
    sum_i = df.Sum("i")
    sum_v = df.Define("sv", "std::accumulate(v.begin(), v.end(), 0.)").Sum("sv")
    sizes = df.Define("nv", "v.size()")
    min_n, max_n = sizes.Min("nv"), sizes.Max("nv")
    want_i, want_v = expected_sums(n)
    assert count.GetValue() == n
    assert int(sum_i.GetValue()) == want_i
    assert int(sum_v.GetValue()) == want_v
    assert (min_n.GetValue(), max_n.GetValue()) == (64, 64)
    os.remove(out)
