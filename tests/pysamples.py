"""Small NanoAOD-like RNTuples written with ``rntuple.recreate`` for the Python tests:
seeded, several clusters each, and known content (returned as Awkward Arrays)."""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np

import rntuple

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "examples" / "events.root"
SUBDIRS = REPO_ROOT / "crates" / "rntuple" / "tests" / "data" / "container_subdirs.root"


def events(seed: int, n: int) -> ak.Array:
    """``n`` random events: jets (pt, eta), missing transverse momentum, event number."""
    rng = np.random.default_rng(seed)
    counts = rng.poisson(4, n)
    total = int(counts.sum())
    return ak.zip(
        {
            "event": np.arange(seed * 1_000_000, seed * 1_000_000 + n, dtype=np.uint64),
            "Jet_pt": ak.unflatten((20 + rng.exponential(30, total)).astype(np.float32), counts),
            "Jet_eta": ak.unflatten(rng.normal(0, 1.5, total).astype(np.float32), counts),
            "MET_pt": rng.exponential(30, n),
        },
        depth_limit=1,
    )


def write_events(path: Path, seed: int, n: int, cluster_size: str = "16 kB") -> ak.Array:
    """Writes :func:`events` as the RNTuple ``Events`` of ``path`` (small clusters, so
    several of them) and returns what was written."""
    data = events(seed, n)
    with rntuple.recreate(path, cluster_size=cluster_size) as f:
        f.write("Events", data, types={"Jet_pt": "std::vector<float>", "Jet_eta": "std::vector<float>"})
    return data
