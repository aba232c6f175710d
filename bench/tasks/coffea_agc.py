"""``coffea_agc``: the AGC ttbar selection and histograms with coffea (``examples/agc``)
over the ROOT-written RNTuple, NanoEvents through our reader and through uproot, eagerly
and on a local ``dask.distributed`` cluster.

Tools: ``ours-eager`` (``rntuple.coffea.from_rntuple(mode="eager")``),
``uproot-eager`` (``NanoEventsFactory.from_root(mode="eager")``), ``ours-dask`` (our
default partitions, whole clusters grouped up to 100 MB, or of ``--step-size`` entries),
``ours-dask-1`` (one partition, as uproot's) and ``uproot-dask`` (coffea's form mapping
on ``uproot.dask``, one partition per file: with more its results are wrong, see
``examples/agc/README.md``), the dask tools on a LocalCluster of ``--threads`` worker
processes, one thread each.

Timed: building the events, reading, selecting and filling the histogram (the cluster
computing the observables). Not timed: imports, starting the cluster, and a warm-up of
the analysis on 2,000 entries in this process and on every worker (coffea's and
Awkward's numba kernels compile on first use). Checksum: the bin counts per region.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from typing import Any

import cloudpickle
from common import REPO, emit, parse_args, root_file

# examples/agc/agc.py, under a name of its own (bench/tasks/agc.py is another task); its
# functions go to the workers by value (they cannot import it)
_spec = importlib.util.spec_from_file_location("agc_example", REPO / "examples" / "agc" / "agc.py")
assert _spec is not None and _spec.loader is not None
agc = importlib.util.module_from_spec(_spec)
sys.modules["agc_example"] = agc
_spec.loader.exec_module(agc)
cloudpickle.register_pickle_by_value(agc)

TOOLS = ["ours-eager", "uproot-eager", "ours-dask", "ours-dask-1", "uproot-dask"]


def checksum(h: Any) -> dict[str, Any]:
    """Bin counts (flow bins included) and events per region."""
    return {
        region: {
            "events": int(h[:, region].sum(flow=True)),
            "bins": [int(x) for x in h[:, region].values(flow=True)],
        }
        for region in agc.REGIONS
    }


def main() -> None:
    """Runs one measurement."""
    args = parse_args(TOOLS, lambda p: p.add_argument("--step-size", type=int, default=None))
    warnings.filterwarnings("ignore", module="coffea")  # missing cross-references of the dataset
    path = str(root_file(args.data).resolve())
    reader = "rntuple" if args.tool.startswith("ours") else "uproot"
    agc.warm_up(path)
    if args.tool.endswith("eager"):
        h, seconds = agc.run(path, reader, "eager")
    else:
        import distributed

        step = None if args.tool != "ours-dask" else args.step_size
        with (
            distributed.LocalCluster(
                n_workers=args.threads, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            client.run(agc.warm_up, path)
            if args.tool == "ours-dask-1":
                import rntuple

                step = rntuple.open(path)["Events"].num_entries  # one partition
            h, seconds = agc.run(path, reader, "dask", client=client, step_size=step)
    emit("coffea_agc", args.tool, seconds, checksum(h), threads=args.threads)


if __name__ == "__main__":
    main()
