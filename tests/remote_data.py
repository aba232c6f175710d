"""Data for the remote-reading tests and benchmark: NanoAOD-like tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

import rntuple


def nanoaod_like(n: int, seed: int) -> pa.Table:
    """40 NanoAOD-like fields: 8 event scalars and 4 collections of 8 float members
    (``Jet_pt``, ...), with per-event multiplicities as in physics data."""
    rng = np.random.default_rng(seed)
    columns: dict[str, pa.Array] = {
        "run": pa.array(np.full(n, 1, dtype=np.uint32)),
        "event": pa.array(np.arange(n, dtype=np.uint64)),
        "MET_pt": pa.array(rng.exponential(30, n).astype(np.float32)),
        "MET_phi": pa.array(rng.uniform(-3.14, 3.14, n).astype(np.float32)),
        "PV_npvs": pa.array(rng.poisson(30, n).astype(np.int32)),
        "PV_z": pa.array(rng.normal(0, 5, n).astype(np.float32)),
        "genWeight": pa.array(rng.normal(1, 0.1, n).astype(np.float32)),
        "HLT_IsoMu24": pa.array(rng.random(n) < 0.3),
    }
    for coll, mean in [("Jet", 5), ("Electron", 1), ("Muon", 1.5), ("Photon", 2)]:
        counts = rng.poisson(mean, n).astype(np.int64)
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        total = int(counts.sum())
        for member in ["pt", "eta", "phi", "mass", "charge", "dxy", "dz", "iso"]:
            values = pa.array(rng.normal(20, 10, total).astype(np.float32))
            columns[f"{coll}_{member}"] = pa.ListArray.from_arrays(offsets, values)
    assert len(columns) == 40
    return pa.table(columns)


def write_nanoaod_like(path: Path, entries: int, seed: int, cluster_size: str) -> Path:
    """Writes ``entries`` entries of :func:`nanoaod_like` as the RNTuple ``Events`` of
    ``path``, in clusters of ``cluster_size``; returns ``path``."""
    with rntuple.recreate(path, cluster_size=cluster_size) as f:
        f["Events"] = nanoaod_like(entries, seed=seed)
    return path


def write_big(path: str, entries_per_part: int = 500_000) -> None:
    """Writes about 500 MB: 2M NanoAOD-like entries in four parts (random values, so zstd
    cannot shrink them much), zstd level 1 for a quick write; with ``entries_per_part``
    smaller, a file that much smaller."""
    with rntuple.recreate(path, compression="zstd:1") as f:
        for part in range(4):
            table = nanoaod_like(entries_per_part, seed=100 + part)
            if part == 0:
                f["Events"] = table
            else:
                f["Events"].extend(table)


def same_size_pair(
    directory: Path, entries: int = 50_000, list_length: int = 3, cluster_size: str = "256 kB"
) -> tuple[Path, Path]:
    """Two RNTuples (``version1.root``, ``version2.root`` in ``directory``) of the same size
    and layout with different values: a file replaced at its origin by one its size does not
    tell apart. Each has ``entries`` entries of a double, an int32 and a list of
    ``list_length`` doubles, uncompressed, in clusters of ``cluster_size``."""
    paths = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        n = entries
        table = pa.table(
            {
                "x": pa.array(rng.normal(size=n)),
                "n": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
                "v": pa.ListArray.from_arrays(
                    pa.array(np.arange(0, list_length * n + 1, list_length, dtype=np.int32)),
                    rng.normal(size=list_length * n),
                ),
            }
        )
        path = directory / f"version{seed}.root"
        with rntuple.recreate(path, compression="none", cluster_size=cluster_size) as f:
            f["Events"] = table
        paths.append(path)
    assert paths[0].stat().st_size == paths[1].stat().st_size
    return paths[0], paths[1]
