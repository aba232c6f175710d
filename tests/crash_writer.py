"""A writer to kill: fills an RNTuple with values that are a function of the entry
number, so that any recovered prefix can be checked value by value.

``python tests/crash_writer.py OUT ENTRIES BATCH CLUSTER_BYTES`` writes ``ENTRIES``
entries in batches of ``BATCH`` with the Python package, a checkpoint after every
cluster (``checkpoint_every=1``). It prints ``ready`` once the RNTuple is started (its
first batch handed to the writer). Entry ``i`` holds:

* ``i`` (``std::int64_t``): ``i``;
* ``x`` (``double``): ``(h >> 11) * 2**-53`` with ``h = i * 0x9E3779B97F4A7C15 mod 2**64``
  (pseudo-random bits, so that pages do not compress to nothing);
* ``v`` (``std::vector<float>``): ``i % 5`` elements, element ``k`` = ``float(x + k)``;
* ``n`` (``std::int32_t``): ``h >> 40``.

The same functions are checked on ROOT's side by ``cxx/crash_check.hxx``.
"""

from __future__ import annotations

import sys

import awkward as ak
import numpy as np


def batch(start: int, stop: int) -> dict[str, object]:
    """The entries ``start..stop`` as a dict of arrays."""
    i = np.arange(start, stop, dtype=np.int64)
    h = i.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # wraps modulo 2**64
    x = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    counts = i % 5
    offsets = np.zeros(len(i) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    k = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], counts)
    values = (np.repeat(x, counts) + k).astype(np.float32)
    v = ak.unflatten(values, counts)
    return {"i": i, "x": x, "v": v, "n": (h >> np.uint64(40)).astype(np.int32)}


def main() -> None:
    """Writes the file named on the command line."""
    import rntuple

    out, entries, step, cluster = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with rntuple.recreate(out, cluster_size=cluster, checkpoint_every=1) as f:
        f.write("Events", batch(0, min(step, entries)))
        # The RNTuple is started (imports and first calls done): the test times its kill
        # from here.
        print("ready", flush=True)
        for start in range(step, entries, step):
            f["Events"].extend(batch(start, min(start + step, entries)))


if __name__ == "__main__":
    main()
