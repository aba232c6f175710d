"""``iterate_compute``: an analysis loop, ``for batch in nt.iterate(...): compute(batch)``,
against its parts, to show what decoding ahead buys: with ``decode_ahead=True`` (the
default) the next batch is decoded while ``compute`` runs on the current one, so the loop
should cost about the larger of reading and computing rather than their sum.

Tools (``FIELDS`` is ``subset``, the 12 analysis fields in 20 MB steps, or ``all``, every
field in 100 MB steps):

- ``read-FIELDS``: the loop without the computation (a trivial reduction per batch);
- ``compute-FIELDS``: the computation alone, over the same batches read beforehand (the
  reading is not timed);
- ``loop-FIELDS``: the loop, decoding ahead (the default);
- ``loop-FIELDS-plain``: the loop with ``decode_ahead=False`` (each batch read when the
  loop asks for it).

The computation is NumPy work on the jets: the jagged ``Jet_pt/eta/phi/mass`` flattened,
the four-momentum (``cos``, ``sin``, ``sinh``, ``sqrt``) computed ``WORK`` times and each
energy histogrammed (100 bins). Every tool reports the wall time, the CPU time of the
process (all threads) and the histogram's total (the computing tools agree on it); the
checksum is the number of entries.
"""

from __future__ import annotations

import time
from typing import Any

from common import emit, parse_args, root_file

TOOLS = [
    f"{kind}-{fields}{plain}"
    for fields in ("subset", "all")
    for kind, plain in (("read", ""), ("compute", ""), ("loop", ""), ("loop", "-plain"))
]
#: Step sizes: about 30 batches over the 2M-event dataset either way.
STEPS = {"subset": "20 MB", "all": "100 MB"}
#: Times the four-momentum and histogram are computed per batch.
WORK = 2


def compute(batch: Any) -> Any:
    """The jets' energies, computed ``WORK`` times, histogrammed: NumPy work on a batch."""
    import awkward as ak
    import numpy as np

    pt, eta, phi, mass = (ak.to_numpy(ak.flatten(batch[f"Jet_{x}"])) for x in ("pt", "eta", "phi", "mass"))
    counts = np.zeros(100, dtype=np.int64)
    for _ in range(WORK):
        px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
        energy = np.sqrt(px * px + py * py + pz * pz + mass * mass)
        counts += np.histogram(energy, bins=100, range=(0.0, 500.0))[0]
    return counts


def main() -> None:
    """One measurement."""
    import numpy as np
    from schema import ANALYSIS_FIELDS

    import rntuple

    args = parse_args(TOOLS)
    kind, fields_kind, *plain = args.tool.split("-")
    fields = list(ANALYSIS_FIELDS) if fields_kind == "subset" else None
    step = STEPS[fields_kind]
    nt = rntuple.open(str(root_file(args.data)))["Events"]
    counts = np.zeros(100, dtype=np.int64)
    entries = 0
    if kind == "compute":
        batches = list(nt.iterate(fields, step_size=step))
        t0, c0 = time.perf_counter(), time.process_time()
        for batch in batches:
            counts += compute(batch)
            entries += len(batch)
    else:
        t0, c0 = time.perf_counter(), time.process_time()
        for batch in nt.iterate(fields, step_size=step, decode_ahead=not plain):
            if kind == "loop":
                counts += compute(batch)
            entries += len(batch)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    emit(
        "iterate_compute",
        args.tool,
        seconds,
        {"entries": entries},
        cpu_seconds=cpu,
        histogram_total=int(counts.sum()),
        threads=args.threads,
    )


if __name__ == "__main__":
    main()
