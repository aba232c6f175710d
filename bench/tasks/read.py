"""Read task: every field (``read_all``) or the analysis fields (``read_subset``) into memory.

Tools: ``ours-ak`` / ``ours-arrow`` (``rntuple`` into Awkward / pyarrow), ``uproot``
(``arrays()`` of the ROOT RNTuple), ``uproot-ttree`` (the same on the TTree),
``root-rdf`` (RDataFrame with ``EnableImplicitMT(threads)`` filling columnar C++
buffers), ``pyarrow`` (``pq.read_table`` of the Parquet copy, ``threads`` CPU threads).
"""

from __future__ import annotations

from typing import Any

from common import Timer, checksum_ak, checksum_arrow, emit, parse_args, root_file

TOOLS = ["ours-ak", "ours-arrow", "uproot", "uproot-ttree", "root-rdf", "pyarrow"]


def run(task: str, fields: list[str] | None) -> None:
    """Runs one measurement of ``task``; ``fields=None`` reads every field."""
    from schema import field_names

    args = parse_args(TOOLS)
    names = field_names() if fields is None else list(fields)
    path = str(root_file(args.data))
    checksum: dict[str, Any]
    if args.tool.startswith("ours"):
        import rntuple

        lib = "ak" if args.tool == "ours-ak" else "arrow"
        with Timer() as t:
            data = rntuple.open(path)["Events"].arrays(fields, library=lib)
        checksum = checksum_ak(data, names) if lib == "ak" else checksum_arrow(data)
    elif args.tool.startswith("uproot"):
        import uproot

        if args.tool == "uproot-ttree":
            path = str(args.data / "nanoaod_ttree.root")
        with Timer() as t:
            data = uproot.open(path)["Events"].arrays(fields)
        checksum = checksum_ak(data, names)
    elif args.tool == "pyarrow":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pa.set_cpu_count(args.threads)
        pa.set_io_thread_count(args.threads)
        with Timer() as t:
            data = pq.read_table(str(args.data / "nanoaod.parquet"), columns=fields, use_threads=True)
        checksum = checksum_arrow(data)
    else:
        from rootcode import declare

        ROOT = declare(names)
        cols = ROOT.std.vector["std::string"](names)
        secs, entries, items, sum_jet, sum_mu = ROOT.bench_read_rdf(path, cols, args.threads, ROOT.nullptr)

        class _T:
            seconds = secs

        t = _T()  # type: ignore[assignment]
        checksum = {"entries": int(entries), "fields": len(names), "items": int(items)}
        if "Jet_pt" in names:
            checksum["sum_Jet_pt"] = sum_jet
        if "Muon_pt" in names:
            checksum["sum_Muon_pt"] = sum_mu
    emit(task, args.tool, t.seconds, checksum, threads=args.threads)
