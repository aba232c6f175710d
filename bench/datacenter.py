"""Remote reading as in a data centre, against local reading, on one machine in one run:
``python3 bench/datacenter.py [--repeat R] [--data DIR] [--out bench/RESULTS-datacenter.md]``.

Six measurements on the 524 MB NanoAOD-like file of ``tests/remote_data.py`` (40 fields,
2M entries), each against the local file with the page cache warm, local and remote runs
alternating, medians of ``--repeat`` runs:

1. cold remote reads (no cache of remote reads) over http:// (nginx) and root:// (xrootd)
   at 20 ms and 130 ms round trip (``delay_proxy``), every field and 5 fields;
2. the cache of remote reads (``RNTUPLE_CACHE_DIR``) at 20 ms over http://: a cold read
   into an empty cache against one without it, warm re-reads with
   ``RNTUPLE_CACHE_VALIDATE=never`` and ``open`` against the local read;
3. reuse across selections: 5 fields into an empty cache, then 10 (those 5 and 5 others);
4. a chain of 20 files of ~25 MB over http:// at 20 ms, Python ``rntuple.iterate`` and
   ``rntuple.concatenate``;
5. S3 on a real server (SeaweedFS) against nginx, no added latency;
6. XCache (xrootd's proxy file cache in front of an origin xrootd), cold then warm,
   against our cache (root:// from the same origin), with no added latency and at 20 ms.

The servers, ``delay_proxy`` and the client share the machine's cores: every table gives
the CPU seconds of the client, of the server's process tree and of the proxy.
``--small`` runs everything on a 50 MB file and 20 files of 10,000 entries, once, for a
quick check of the script (its results go to a temporary file unless ``--out`` is given).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

# First: it puts tests/, python/ and bench/tasks/ on sys.path.
from paths import RELEASE_CLI, RELEASE_PROXY, REPO

# isort: split

import server_http
import server_seaweedfs
import server_xcache
import server_xrootd
from common import cpu_model, memory_bytes, show_row, write_text_atomically
from netutil import free_port
from remote_data import nanoaod_like, write_big

BUILT_PACKAGE = REPO / "python" / "rntuple"  # bash python/develop.sh
#: The binaries and package measured: copies of the built ones taken when the run starts
#: (:func:`snapshot`), so that a build during the run changes nothing it measures.
CLI = RELEASE_CLI
PROXY = RELEASE_PROXY
PYTHONPATH = REPO / "python"
#: Processes of others that would share the cores with a measurement: each measurement
#: waits until none runs (:func:`wait_quiet`).
BUSY_NAMES = ("cargo", "rustc", "cc1", "cc1plus", "ld", "maturin", "pytest")
FIVE = ["Jet_pt", "Jet_eta", "Muon_pt", "MET_pt", "PV_npvs"]
OTHER_FIVE = ["Jet_phi", "Electron_pt", "Photon_pt", "MET_phi", "genWeight"]
CHAIN_FILES = 20
#: The base environment of every measured process: none of the reader's settings
#: (``RNTUPLE_*``: no cache unless a run asks for one) nor S3 credentials.
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("RNTUPLE_", "AWS_"))}
BASE_ENV["OPENBLAS_NUM_THREADS"] = "1"

Run = dict[str, Any]
#: CPU seconds of the machine during each read-bench run not used by the client, the
#: servers or the proxies (kernel threads, writeback, other processes).
OTHER_CPU: list[float] = []


# ---------------------------------------------------------------------------- processes


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process used so far; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_pids(root: int) -> list[int]:
    """``root`` and every process descending from it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def tree_cpu(roots: Iterable[int]) -> float:
    """CPU seconds used so far by the process trees of ``roots``."""
    return sum(process_cpu(pid) for root in roots for pid in tree_pids(root))


def system_busy() -> float:
    """CPU seconds the whole machine spent busy so far (all cores; idle and I/O wait excluded)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = values[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


@dataclass
class Quiet:
    """How long measurements waited for other people's builds and tests to end."""

    waits: int = 0
    seconds: float = 0.0
    seen: set[str] = field(default_factory=set)
    #: Measurements at whose end such a process ran (it began during the measurement).
    overlapped: int = 0


QUIET = Quiet()


def busy_processes() -> list[str]:
    """Names of running processes of :data:`BUSY_NAMES` that are not this run's."""
    mine = set(tree_pids(os.getpid()))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if comm in BUSY_NAMES or "pytest" in cmdline:
            found.append(comm)
    return found


def wait_quiet(limit_s: float = 1200.0) -> None:
    """Waits (checking every 5 s) while another process of :data:`BUSY_NAMES` runs, at most
    ``limit_s``."""
    started = None
    while (busy := busy_processes()) and (started is None or time.perf_counter() - started < limit_s):
        if started is None:
            started = time.perf_counter()
            QUIET.waits += 1
            QUIET.seen.update(busy)
            print(f"waiting for {', '.join(sorted(set(busy)))} to end", flush=True)
        time.sleep(5)
    if started is not None:
        QUIET.seconds += time.perf_counter() - started
        time.sleep(2)


def snapshot(directory: Path) -> str:
    """Copies the CLI, ``delay_proxy`` and the Python package into ``directory`` and points
    :data:`CLI`, :data:`PROXY` and :data:`PYTHONPATH` at the copies; returns a description
    of what was copied (modification times) and of the checkout."""
    global CLI, PROXY, PYTHONPATH
    wait_quiet()
    (directory / "python").mkdir(parents=True)
    CLI = Path(shutil.copy2(RELEASE_CLI, directory / "rntuple"))
    PROXY = Path(shutil.copy2(RELEASE_PROXY, directory / "delay_proxy"))
    shutil.copytree(BUILT_PACKAGE, directory / "python" / "rntuple")
    PYTHONPATH = directory / "python"
    sys.path.insert(0, str(PYTHONPATH))

    def built(path: Path) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True).stdout.strip()

    dirty = [
        line.split(maxsplit=1)[1] for line in git("status", "--short", "--", "crates", "python").splitlines()
    ]
    extension = next(BUILT_PACKAGE.glob("_core*.so"), None)
    return (
        f"checkout at commit {git('rev-parse', '--short', 'HEAD')} "
        f"({git('log', '-1', '--format=%ci')})"
        + (f", with uncommitted changes to {', '.join(dirty)}" if dirty else "")
        + f"; `rntuple` built {built(RELEASE_CLI)}"
        + (f", the Python extension {built(extension)}" if extension else "")
        + " (copies of both taken when the run began were measured)"
    )


class DelayProxy:
    """``delay_proxy`` on a free port of 127.0.0.1 in front of ``target`` (host:port),
    adding ``one_way_ms`` each way."""

    running: ClassVar[set[DelayProxy]] = set()

    def __init__(self, target: str, one_way_ms: int) -> None:
        self.one_way_ms = one_way_ms
        for _ in range(3):
            self.port = free_port()
            self.process = subprocess.Popen(
                [str(PROXY), str(self.port), target, str(one_way_ms)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            DelayProxy.running.add(self)
            assert self.process.stdout is not None
            if self.process.stdout.readline().strip() == "ready":
                return
            self.stop()
        raise RuntimeError(f"delay_proxy in front of {target} did not start")

    def url(self, url: str) -> str:
        """``url`` with its host and port replaced by the proxy's."""
        return urllib.parse.urlsplit(url)._replace(netloc=f"127.0.0.1:{self.port}").geturl()

    def stop(self) -> None:
        """Kills the proxy."""
        DelayProxy.running.discard(self)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@atexit.register
def _stop_proxies() -> None:
    """Kills proxies an interrupted run left behind."""
    for proxy in list(DelayProxy.running):
        proxy.stop()


def target_of(url: str) -> str:
    """``host:port`` of a URL."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.hostname}:{parts.port}"


# ---------------------------------------------------------------------------- measuring


def read_bench(
    location: str,
    fields: Sequence[str] | None = None,
    env: dict[str, str] | None = None,
    servers: Sequence[int] = (),
    proxies: Sequence[DelayProxy] = (),
    nginx: server_http.Server | None = None,
) -> Run:
    """One ``rntuple read-bench --json`` run: its report, ``seconds`` (open + read of a
    remote file, the read of a local one), the CPU seconds of the client (``client_cpu``),
    of the process trees of ``servers`` (``server_cpu``), of ``proxies`` (``proxy_cpu``)
    and of the rest of the machine (``other_cpu``); with ``nginx``, the requests and body
    bytes its access log recorded during the run (``log_requests``, ``log_bytes``,
    ``log``)."""
    cmd = [str(CLI), "read-bench", location, "--json"]
    if fields:
        cmd += ["--fields", ",".join(fields)]
    wait_quiet()
    if nginx is not None:
        nginx.clear_log()
    server_before = tree_cpu(servers)
    proxy_before = sum(process_cpu(p.process.pid) for p in proxies)
    busy_before = system_busy()
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**BASE_ENV, **(env or {})})
    after = os.times()
    busy = system_busy() - busy_before
    if overlapping := busy_processes():
        QUIET.overlapped += 1
        QUIET.seen.update(overlapping)
        print(f"warning: {', '.join(sorted(set(overlapping)))} ran during this measurement", flush=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr}")
    run: Run = json.loads(out.stdout)
    # Remote: open + read; local: the read (opening a local file takes about 1 ms).
    remote = "://" in location
    run["seconds"] = run["open_seconds"] + run["read_seconds"] if remote else run["read_seconds"]
    run["client_cpu"] = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    run["server_cpu"] = tree_cpu(servers) - server_before
    run["proxy_cpu"] = sum(process_cpu(p.process.pid) for p in proxies) - proxy_before
    run["other_cpu"] = busy - run["client_cpu"] - run["server_cpu"] - run["proxy_cpu"]
    OTHER_CPU.append(run["other_cpu"])
    run["moved"] = run["open_bytes_read"] + run["bytes_read"]
    run["all_requests"] = run["open_requests"] + run["requests"]
    if nginx is not None:
        time.sleep(0.05)  # nginx logs a request once its response is sent
        log = nginx.requests()
        run["log"] = log
        run["log_requests"] = len(log)
        run["log_bytes"] = sum(int(r["body_bytes"]) for r in log)
    return run


CHAIN_SCRIPT = r"""
import json, os, sys, time
import numpy as np
import pyarrow as pa
import rntuple

mode, compute, files = sys.argv[1], sys.argv[2], sys.argv[3:]


def work(batch):
    total = 0.0
    for column in batch.columns:
        array = column.combine_chunks()
        while isinstance(array, (pa.ListArray, pa.LargeListArray)):
            array = array.flatten()
        total += float(np.sum(array.to_numpy(zero_copy_only=False), dtype=np.float64))
    return total


before = os.times()
start = time.perf_counter()
rows, batches, total = 0, 0, 0.0
if mode == "iterate":
    for batch in rntuple.iterate(files, step_size="100 MB", library="arrow"):
        rows += batch.num_rows
        batches += 1
        if compute == "numpy":
            total += work(batch)
else:
    table = rntuple.concatenate(files, library="arrow")
    rows, batches = table.num_rows, 1
seconds = time.perf_counter() - start
after = os.times()
cpu = (after.user - before.user) + (after.system - before.system)
print(json.dumps({"seconds": seconds, "rows": rows, "batches": batches, "cpu": cpu, "sum": total}))
"""


def python_chain(
    mode: str,
    compute: str,
    files: Sequence[str],
    servers: Sequence[int] = (),
    proxies: Sequence[DelayProxy] = (),
    nginx: server_http.Server | None = None,
) -> Run:
    """One Python process reading ``files`` with ``rntuple.iterate`` (``mode`` "iterate",
    ``compute`` "none" or "numpy": a NumPy sum of every column of every batch) or
    ``rntuple.concatenate``; ``seconds`` from before the call to the end of the loop,
    ``client_cpu`` the process's CPU seconds over that span, the servers' and proxies'
    CPU seconds and nginx's log as :func:`read_bench`."""
    wait_quiet()
    if nginx is not None:
        nginx.clear_log()
    server_before = tree_cpu(servers)
    proxy_before = sum(process_cpu(p.process.pid) for p in proxies)
    out = subprocess.run(
        [sys.executable, "-c", CHAIN_SCRIPT, mode, compute, *files],
        capture_output=True,
        text=True,
        env={**BASE_ENV, "PYTHONPATH": str(PYTHONPATH)},
    )
    if out.returncode != 0:
        raise RuntimeError(f"python chain {mode} {compute} failed: {out.stderr}")
    run: Run = json.loads(out.stdout.strip().splitlines()[-1])
    run["client_cpu"] = run.pop("cpu")
    if overlapping := busy_processes():
        QUIET.overlapped += 1
        QUIET.seen.update(overlapping)
        print(f"warning: {', '.join(sorted(set(overlapping)))} ran during this measurement", flush=True)
    run["server_cpu"] = tree_cpu(servers) - server_before
    run["proxy_cpu"] = sum(process_cpu(p.process.pid) for p in proxies) - proxy_before
    if nginx is not None:
        time.sleep(0.05)
        log = nginx.requests()
        run["log_requests"] = len(log)
        run["log_bytes"] = sum(int(r["body_bytes"]) for r in log)
    return run


def stop_nginx(server: server_http.Server) -> None:
    """Stops nginx and removes its working directory (configuration and logs)."""
    server.stop()
    shutil.rmtree(server.workdir, ignore_errors=True)


def fresh_dir(prefix: str) -> Path:
    """A new empty temporary directory."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def remove(path: Path) -> None:
    """Removes a directory tree and writes back what is dirty, so that neither the deletion
    nor the writeback of a cache's files runs during the next measurement."""
    shutil.rmtree(path, ignore_errors=True)
    os.sync()


# ---------------------------------------------------------------------------- reporting


def med(runs: Sequence[Run], key: str) -> float:
    """Median of ``key`` over ``runs``."""
    return float(statistics.median(r[key] for r in runs))


def spread(runs: Sequence[Run], key: str = "seconds", digits: int = 3) -> str:
    """``median (min-max)`` of ``key``; the single value for one run."""
    values = [r[key] for r in runs]
    m = statistics.median(values)
    if len(values) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def mb(n: float) -> str:
    """Bytes as MB with one decimal."""
    return f"{n / 1e6:.1f}"


def cpu_cols(runs: Sequence[Run]) -> str:
    """Median CPU seconds of client | server tree | delay proxy, as three table cells."""
    return f"{med(runs, 'client_cpu'):.2f} | {med(runs, 'server_cpu'):.2f} | {med(runs, 'proxy_cpu'):.2f}"


@dataclass
class Target:
    """One acceptance target: what, the measured value, whether it is met, and (when not)
    the measured quantities that bound it."""

    what: str
    measured: str
    met: bool | None
    bound: str = ""


@dataclass
class Report:
    """Sections of the results file and the acceptance targets, filled as measured."""

    sections: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, lines: list[str]) -> None:
        """Adds a section (its lines) and prints it."""
        text = "\n".join(lines)
        self.sections.append(text)
        print(text, flush=True)


def wall_bound(remote: Sequence[Run], local: Sequence[Run], rtt_ms: int) -> str:
    """A sentence of measured quantities on what separates ``remote`` from ``local``: the
    gap, the opening (in round trips), the read after it, the CPU of every process on the
    machine's cores."""
    gap = med(remote, "seconds") - med(local, "seconds")
    opening = med(remote, "open_seconds")
    total_cpu = med(remote, "client_cpu") + med(remote, "server_cpu") + med(remote, "proxy_cpu")
    cores = os.cpu_count() or 1
    trips = f" = {opening * 1000 / rtt_ms:.1f} RTT" if rtt_ms else ""
    return (
        f"remote - local = {gap:.3f} s; opening {opening:.3f} s{trips} (connection set-up and "
        f"{remote[-1]['open_requests']} request(s)), the read after it {med(remote, 'read_seconds'):.3f} s "
        f"against {med(local, 'seconds'):.3f} s locally; client + server + proxy CPU {total_cpu:.2f} s "
        f"on {cores} cores (>= {total_cpu / cores:.3f} s of wall), the client's "
        f"{med(remote, 'client_cpu'):.2f} s against {med(local, 'client_cpu'):.2f} s locally."
    )


def ratio_target(
    report: Report, what: str, limit: float, remote: Sequence[Run], local: Sequence[Run], rtt_ms: int
) -> float:
    """Adds the target ``remote median / local median <= limit``; returns the ratio."""
    ratio = med(remote, "seconds") / med(local, "seconds")
    met = ratio <= limit
    report.targets.append(
        Target(
            what=f"{what} <= {limit:.2f}x",
            measured=f"{ratio:.2f}x ({med(remote, 'seconds'):.3f} / {med(local, 'seconds'):.3f} s)",
            met=met,
            bound="" if met else wall_bound(remote, local, rtt_ms),
        )
    )
    return ratio


def selection_name(fields: Sequence[str] | None) -> str:
    """``all 40`` or the number of fields."""
    return "all 40" if fields is None else str(len(fields))


# ---------------------------------------------------------------------------- data


def make_data(data: Path, small: bool) -> tuple[Path, list[Path]]:
    """The big file and the chain of :data:`CHAIN_FILES` files in ``data`` (made if missing)."""
    import rntuple

    data.mkdir(parents=True, exist_ok=True)
    big = data / ("small.root" if small else "big.root")
    if not big.exists():
        print(f"writing {big}", flush=True)
        partial = big.with_name(big.name + ".part")
        write_big(str(partial), entries_per_part=50_000 if small else 500_000)
        partial.rename(big)
    chain_dir = data / ("chain-small" if small else "chain")
    chain_dir.mkdir(exist_ok=True)
    chain = []
    for k in range(CHAIN_FILES):
        path = chain_dir / f"part{k:02d}.root"
        if not path.exists():
            print(f"writing {path}", flush=True)
            partial = path.with_name(path.name + ".part")
            with rntuple.recreate(str(partial), compression="zstd:1") as f:
                f["Events"] = nanoaod_like(10_000 if small else 100_000, seed=1000 + k)
            partial.rename(path)
        chain.append(path)
    return big, chain


# ---------------------------------------------------------------------------- sections


def section_cold(report: Report, big: Path, data: Path, repeat: int, delays: Sequence[int]) -> None:
    """1. Cold remote reads over http:// and root:// through delay_proxy against local."""
    rows = []
    for protocol, module in [("http", server_http), ("root", server_xrootd)]:
        server: Any = module.start(data)
        try:
            pid = server.process.pid
            for one_way in delays:
                proxy = DelayProxy(target_of(server.url(big.name)), one_way)
                try:
                    url = proxy.url(server.url(big.name))
                    for fields in [None, FIVE]:
                        local, remote = [], []
                        for _ in range(repeat):
                            local.append(read_bench(str(big), fields))
                            remote.append(read_bench(url, fields, servers=[pid], proxies=[proxy]))
                        r = remote[-1]
                        show_row(
                            rows,
                            f"| {protocol}:// | {2 * one_way} ms | {selection_name(fields)} | "
                            f"{spread(local)} | {spread(remote)} | "
                            f"{med(remote, 'seconds') / med(local, 'seconds'):.2f}x | "
                            f"{spread(remote, 'open_seconds')} | {r['open_requests']} + {r['requests']} "
                            f"({r['vector_requests']} vectored, {r['ranges']} ranges) | "
                            f"{mb(r['bytes_used'])} | {mb(r['moved'])} "
                            f"({r['moved'] / r['bytes_used']:.3f}x) | "
                            f"{med(local, 'client_cpu'):.2f} | {cpu_cols(remote)} |",
                        )
                        if one_way == 10:
                            limit = 1.3 if fields is None else 1.5
                            ratio_target(
                                report,
                                f"1. {protocol}:// 20 ms, {selection_name(fields)} fields: remote/local",
                                limit,
                                remote,
                                local,
                                20,
                            )
                        else:
                            ratio = med(remote, "seconds") / med(local, "seconds")
                            report.targets.append(
                                Target(
                                    f"1. {protocol}:// {2 * one_way} ms, {selection_name(fields)} fields: "
                                    "remote/local (stated)",
                                    f"{ratio:.2f}x ({med(remote, 'seconds'):.3f} / "
                                    f"{med(local, 'seconds'):.3f} s)",
                                    None,
                                    wall_bound(remote, local, 2 * one_way),
                                )
                            )
                finally:
                    proxy.stop()
        finally:
            if isinstance(server, server_http.Server):
                stop_nginx(server)
            else:
                server.stop()
    report.add(
        [
            "## 1. Cold remote reads against local",
            "",
            "No cache of remote reads; the page cache warm for the local file and for the server. "
            "Seconds: median (min-max); remote = open + read, local = read. Requests: open + read "
            "(as read-bench counts them). Moved: bytes read, opening included, against the page bytes "
            "the decoder used (needed). CPU: seconds per read, median.",
            "",
            "| protocol | RTT | fields | local s | remote s | remote/local | remote open s | requests | "
            "needed MB | moved MB | CPU local client | CPU remote client | CPU server | CPU delay_proxy |",
            "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )


def section_cache(report: Report, big: Path, data: Path, repeat: int) -> None:
    """2. The cache of remote reads at 20 ms over http://, cold and warm."""
    nginx = server_http.start(data)
    rows_cold, rows_warm = [], []
    try:
        pid = nginx.process.pid if nginx.process else 0
        proxy = DelayProxy(target_of(nginx.url(big.name)), 10)
        try:
            url = proxy.url(nginx.url(big.name))
            for fields in [None, FIVE]:
                name = selection_name(fields)
                off, on = [], []
                cache: Path | None = None
                for _ in range(repeat):
                    off.append(read_bench(url, fields, servers=[pid], proxies=[proxy], nginx=nginx))
                    if cache is not None:
                        remove(cache)
                    cache = fresh_dir("rntuple-dc-cache-")
                    env = {"RNTUPLE_CACHE_DIR": str(cache)}
                    on.append(read_bench(url, fields, env, servers=[pid], proxies=[proxy], nginx=nginx))
                    os.sync()
                assert cache is not None
                stats = json.loads(
                    subprocess.run(
                        [str(CLI), "cache", "stats", "--json", "--cache-dir", str(cache)],
                        capture_output=True,
                        text=True,
                        check=True,
                        env=BASE_ENV,
                    ).stdout
                )
                needed = on[-1]["bytes_used"]
                for label, runs in [("off", off), ("on (empty cache)", on)]:
                    r = runs[-1]
                    show_row(
                        rows_cold,
                        f"| {name} | {label} | {spread(runs)} | "
                        f"{med(runs, 'seconds') / med(off, 'seconds'):.3f}x | "
                        f"{r['log_requests']} | {mb(r['log_bytes'])} ({r['log_bytes'] / needed:.3f}x) | "
                        f"{mb(r['moved'])} ({r['moved'] / needed:.3f}x) | {mb(needed)} | {cpu_cols(runs)} |",
                    )
                ratio = med(on, "seconds") / med(off, "seconds")
                cpu_on, cpu_off = (
                    med(runs, "client_cpu") + med(runs, "server_cpu") + med(runs, "proxy_cpu")
                    for runs in (on, off)
                )
                report.targets.append(
                    Target(
                        f"2a. cold, cache on / off, {name} fields (wall) <= 1.05x",
                        f"{ratio:.3f}x ({med(on, 'seconds'):.3f} / {med(off, 'seconds'):.3f} s)",
                        ratio <= 1.05,
                        ""
                        if ratio <= 1.05
                        else (
                            f"client CPU {med(on, 'client_cpu'):.2f} s with the cache against "
                            f"{med(off, 'client_cpu'):.2f} s without (writing "
                            f"{mb(stats['disk_bytes'])} MB of extents), server + proxy CPU "
                            f"{med(on, 'server_cpu') + med(on, 'proxy_cpu'):.2f} s: "
                            f"{cpu_on:.2f} s on {os.cpu_count()} cores (>= "
                            f"{cpu_on / (os.cpu_count() or 1):.3f} s of wall) against {cpu_off:.2f} s "
                            "without the cache."
                        ),
                    )
                )
                origin = med(on, "log_bytes") / needed
                report.targets.append(
                    Target(
                        f"2a. cold into an empty cache, {name} fields: origin bytes / needed <= 1.1x",
                        f"{origin:.3f}x (nginx {mb(med(on, 'log_bytes'))} MB, read-bench "
                        f"{mb(med(on, 'moved'))} MB, needed {mb(needed)} MB)",
                        origin <= 1.1,
                    )
                )
                # Warm: the cache of the last cold read, never and open, against local.
                local: list[Any] = []
                warm: dict[str, list[Any]] = {"never": [], "open": []}
                for _ in range(repeat):
                    local.append(read_bench(str(big), fields))
                    for validate, runs in warm.items():
                        env = {"RNTUPLE_CACHE_DIR": str(cache), "RNTUPLE_CACHE_VALIDATE": validate}
                        runs.append(read_bench(url, fields, env, servers=[pid], proxies=[proxy], nginx=nginx))
                never, opened = warm["never"], warm["open"]
                remove(cache)
                for label, runs in [("local", local), ("warm, never", never), ("warm, open", opened)]:
                    r = runs[-1]
                    logged = (
                        "-"
                        if label == "local"
                        else f"{max(x['log_requests'] for x in runs)} / {max(x['log_bytes'] for x in runs)}"
                    )
                    show_row(
                        rows_warm,
                        f"| {name} | {label} | {spread(runs)} | "
                        f"{med(runs, 'seconds') / med(local, 'seconds'):.3f}x | {logged} | "
                        f"{r['open_requests']} + {r['requests']} | {cpu_cols(runs)} |",
                    )
                ratio_target(report, f"2b. warm, never, {name} fields: / local", 1.1, never, local, 0)
                never_requests = max(x["log_requests"] for x in never)
                report.targets.append(
                    Target(
                        f"2b. warm, never, {name} fields: origin requests = 0",
                        f"{never_requests} (most in any run, nginx log)",
                        never_requests == 0,
                    )
                )
                ratio_target(report, f"2c. warm, open, {name} fields: / local", 1.15, opened, local, 20)
                open_requests = max(x["log_requests"] for x in opened)
                open_bytes = max(x["log_bytes"] for x in opened)
                ok = open_requests <= 2 and open_bytes <= 16 * 1024
                report.targets.append(
                    Target(
                        f"2c. warm, open, {name} fields: <= 2 requests and <= 16 KiB per file opened",
                        f"{open_requests} request(s), {open_bytes} B (most in any run, nginx log)",
                        ok,
                    )
                )
        finally:
            proxy.stop()
    finally:
        stop_nginx(nginx)
    report.add(
        [
            "## 2. The cache of remote reads, http:// at 20 ms RTT",
            "",
            "Cold: the same read without a cache and into a fresh empty cache directory "
            "(`RNTUPLE_CACHE_DIR`), alternating. Origin requests and bytes are from nginx's access "
            "log (body bytes) and from read-bench (opening included), of the last run; "
            "needed = the page bytes the decoder used.",
            "",
            "| fields | cache | s | / off | origin requests | origin MB (nginx) | origin MB (read-bench) | "
            "needed MB | CPU client | CPU server | CPU delay_proxy |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows_cold,
            "",
            "Warm: re-reads from the cache of the last cold read, `RNTUPLE_CACHE_VALIDATE=never` "
            "and `open`, alternating with the local read. Origin requests / bytes: the most "
            "nginx logged in any run; read-bench's requests (open + read) of the last run.",
            "",
            "| fields | read | s | / local | origin requests / bytes (nginx) | requests (read-bench) | "
            "CPU client | CPU server | CPU delay_proxy |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|",
            *rows_warm,
            "",
        ]
    )


def section_reuse(report: Report, big: Path, data: Path, repeat: int) -> None:
    """3. 5 fields into an empty cache, then 10: what the second read fetched."""
    new_only = read_bench(str(big), OTHER_FIVE)["bytes_used"]
    nginx = server_http.start(data)
    rows = []
    try:
        proxy = DelayProxy(target_of(nginx.url(big.name)), 10)
        try:
            url = proxy.url(nginx.url(big.name))
            first, second = [], []
            for _ in range(repeat):
                cache = fresh_dir("rntuple-dc-cache-")
                env = {"RNTUPLE_CACHE_DIR": str(cache)}
                first.append(read_bench(url, FIVE, env, nginx=nginx))
                r = read_bench(url, FIVE + OTHER_FIVE, env, nginx=nginx)
                validation = r["log"][0]
                r["validation_bytes"] = int(validation["body_bytes"])
                r["origin_bytes"] = r["log_bytes"] - r["validation_bytes"]
                second.append(r)
                remove(cache)
        finally:
            proxy.stop()
    finally:
        stop_nginx(nginx)
    for label, runs in [("5 fields, empty cache", first), ("10 fields (5 cached + 5 new)", second)]:
        r = runs[-1]
        rows.append(
            f"| {label} | {spread(runs)} | {r['log_requests']} | {mb(r['log_bytes'])} | "
            f"{r['open_requests']} + {r['requests']} | {mb(r['moved'])} | {mb(r['bytes_used'])} |"
        )
    r = second[-1]
    ratio = med(second, "origin_bytes") / new_only
    report.targets.append(
        Target(
            "3. 10 fields after 5: origin bytes (without the validation) / pages of the 5 new fields <= 1.1x",
            f"{ratio:.3f}x ({mb(med(second, 'origin_bytes'))} / {mb(new_only)} MB)",
            ratio <= 1.1,
        )
    )
    report.add(
        [
            "## 3. Reuse across selections, http:// at 20 ms RTT",
            "",
            f"`{','.join(FIVE)}` into an empty cache, then those and `{','.join(OTHER_FIVE)}` "
            f"(fresh cache each repetition). The 5 new fields alone need {mb(new_only)} MB of pages "
            "(read-bench bytes_used on the local file). Origin: nginx's log of the last run; the second "
            f"read's first request is the validation ({r['validation_bytes']} B, range "
            f"`{r['log'][0]['range']}`), left out of the ratio.",
            "",
            "| read | s | origin requests (nginx) | origin MB (nginx) | requests (read-bench) | "
            "moved MB (read-bench) | needed MB (all selected) |",
            "|---|---:|---:|---:|---|---:|---:|",
            *rows,
            "",
        ]
    )


def section_chain(report: Report, chain: list[Path], data: Path, repeat: int) -> None:
    """4. A chain of 20 files over http:// at 20 ms, Python iterate and concatenate."""
    nginx = server_http.start(data)
    rows = []
    try:
        pid = nginx.process.pid if nginx.process else 0
        proxy = DelayProxy(target_of(nginx.url("x")), 10)
        try:
            local_files = [str(p) for p in chain]
            urls = [proxy.url(nginx.url(p.relative_to(data).as_posix())) for p in chain]
            for mode, compute in [("iterate", "none"), ("iterate", "numpy"), ("concatenate", "none")]:
                local, remote = [], []
                for _ in range(repeat):
                    local.append(python_chain(mode, compute, local_files))
                    remote.append(
                        python_chain(mode, compute, urls, servers=[pid], proxies=[proxy], nginx=nginx)
                    )
                assert local[-1]["rows"] == remote[-1]["rows"], (local[-1], remote[-1])
                r = remote[-1]
                label = f"`{mode}`" + (", NumPy sum of every column per batch" if compute == "numpy" else "")
                ratio = med(remote, "seconds") / med(local, "seconds")
                show_row(
                    rows,
                    f"| {label} | {r['rows']} | {r['batches']} | {spread(local)} | {spread(remote)} | "
                    f"{ratio:.2f}x | {r['log_requests']} | {mb(r['log_bytes'])} | "
                    f"{med(local, 'client_cpu'):.2f} | {cpu_cols(remote)} |",
                )
                what = f"4. chain of {len(chain)} files, 20 ms, {label}: remote/local"
                measured = f"{ratio:.2f}x ({med(remote, 'seconds'):.3f} / {med(local, 'seconds'):.3f} s)"
                total_cpu = med(remote, "client_cpu") + med(remote, "server_cpu") + med(remote, "proxy_cpu")
                gap = med(remote, "seconds") - med(local, "seconds")
                bound = (
                    f"remote - local = {gap:.3f} s over {len(chain)} files, {gap / len(chain) * 1000:.0f} ms "
                    f"= {gap / len(chain) / 0.020:.1f} RTT per file ({r['log_requests']} requests, "
                    f"{mb(r['log_bytes'] / len(chain))} MB per file); client + server + proxy CPU "
                    f"{total_cpu:.2f} s on {os.cpu_count()} cores, client {med(remote, 'client_cpu'):.2f} s "
                    f"against {med(local, 'client_cpu'):.2f} s locally."
                )
                if mode == "iterate" and compute == "none":
                    report.targets.append(
                        Target(what + " <= 1.2x", measured, ratio <= 1.2, "" if ratio <= 1.2 else bound)
                    )
                else:
                    report.targets.append(Target(what + " (stated)", measured, None, bound))
        finally:
            proxy.stop()
    finally:
        stop_nginx(nginx)
    size = sum(p.stat().st_size for p in chain)
    report.add(
        [
            f"## 4. A chain of {len(chain)} files, http:// at 20 ms RTT",
            "",
            f"{len(chain)} files of {size / len(chain) / 1e6:.1f} MB ({size / 1e6:.0f} MB in all; "
            "`nanoaod_like(100_000, seed=1000 + k)`, zstd:1), every field. One Python process per "
            'run: `rntuple.iterate(files, step_size="100 MB", library="arrow")` summing `num_rows` '
            "(and a NumPy sum of every column of each batch, lists flattened), or "
            '`rntuple.concatenate(files, library="arrow")`; seconds from before the call to the end '
            "of the loop (imports excluded). Requests and bytes: nginx's log, last run. "
            "CPU: the Python process over the timed span.",
            "",
            "| read | rows | batches | local s | remote s | remote/local | requests | MB | "
            "CPU local client | CPU remote client | CPU server | CPU delay_proxy |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )


def section_s3(report: Report, big: Path, data: Path, repeat: int) -> None:
    """5. The file on SeaweedFS (s3://) against nginx (http://), no added latency."""
    weed_dir = fresh_dir("rntuple-dc-weed-src-")
    os.link(big, weed_dir / big.name)
    rows = []
    nginx = server_http.start(data)
    weed: server_seaweedfs.Server | None = None
    try:
        started = time.perf_counter()
        weed = server_seaweedfs.start(weed_dir)
        upload = time.perf_counter() - started
        assert weed.process is not None and nginx.process is not None
        weed_pid, nginx_pid = weed.process.pid, nginx.process.pid
        s3_env = weed.env()
        for fields in [None, FIVE]:
            local, http, s3 = [], [], []
            s3_requests = []
            for _ in range(repeat):
                local.append(read_bench(str(big), fields))
                http.append(read_bench(nginx.url(big.name), fields, servers=[nginx_pid], nginx=nginx))
                before = weed.metrics()["requests"]
                s3.append(read_bench(weed.url(big.name), fields, s3_env, servers=[weed_pid]))
                after = weed.metrics()["requests"]
                s3_requests.append(sum(after.values()) - sum(before.values()))
            name = selection_name(fields)
            for label, runs in [("local", local), ("http:// (nginx)", http), ("s3:// (SeaweedFS)", s3)]:
                r = runs[-1]
                served = {"local": "-", "http:// (nginx)": str(r.get("log_requests", "-"))}.get(
                    label, str(s3_requests[-1])
                )
                show_row(
                    rows,
                    f"| {name} | {label} | {spread(runs)} | "
                    f"{med(runs, 'seconds') / med(http, 'seconds'):.2f}x | "
                    f"{med(runs, 'seconds') / med(local, 'seconds'):.2f}x | "
                    f"{r['open_requests']} + {r['requests']} | {served} | {mb(r['moved'])} | "
                    f"{med(runs, 'client_cpu'):.2f} | {med(runs, 'server_cpu'):.2f} |",
                )
            ratio = med(s3, "seconds") / med(http, "seconds")
            met = ratio <= 1.3
            bound = (
                f"SeaweedFS used {med(s3, 'server_cpu'):.2f} CPU s per read against nginx's "
                f"{med(http, 'server_cpu'):.2f} s, the client {med(s3, 'client_cpu'):.2f} s against "
                f"{med(http, 'client_cpu'):.2f} s ({med(s3, 'all_requests'):.0f} requests against "
                f"{med(http, 'all_requests'):.0f}), on {os.cpu_count()} cores."
            )
            report.targets.append(
                Target(
                    f"5. s3:// (SeaweedFS) / http:// (nginx), {name} fields, no added latency <= 1.3x",
                    f"{ratio:.2f}x ({med(s3, 'seconds'):.3f} / {med(http, 'seconds'):.3f} s)",
                    met,
                    "" if met else bound,
                )
            )
    finally:
        if weed is not None:
            weed.close()
        stop_nginx(nginx)
        remove(weed_dir)
    report.add(
        [
            "## 5. S3 on a real server (SeaweedFS) against nginx, no added latency",
            "",
            f"SeaweedFS `weed mini` (one process: master, volume, filer, S3 gateway; the upload took "
            f"{upload:.1f} s) and nginx, both serving from this machine. Requests: read-bench's "
            "(open + read) and the server's count (nginx's log; SeaweedFS's request counter), last run. "
            "CPU: seconds per read, median: the client, the server's process tree.",
            "",
            "| fields | source | s | / nginx | / local | requests (read-bench) | requests (server) | "
            "moved MB | CPU client | CPU server |",
            "|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )


def section_xcache(report: Report, big: Path, data: Path, repeat: int, delays: Sequence[int]) -> None:
    """6. XCache cold then warm against our cache (root:// from the same origin) and local."""
    origin = server_xrootd.start(data, extra_config=server_xcache.ORIGIN_TRACE)
    rows = []
    try:
        assert origin.process is not None
        origin_pid = origin.process.pid
        for one_way in delays:
            origin_proxy = DelayProxy(target_of(origin.url(big.name)), one_way) if one_way else None
            try:
                ours_url = origin_proxy.url(origin.url(big.name)) if origin_proxy else origin.url(big.name)
                results: dict[str, list[Run]] = {
                    k: []
                    for k in [
                        "local",
                        "XCache cold",
                        "XCache warm",
                        "ours cold",
                        "ours warm never",
                        "ours warm open",
                    ]
                }
                for _ in range(repeat):
                    results["local"].append(read_bench(str(big)))
                    xdir = fresh_dir("rntuple-dc-xcache-")
                    xcache = server_xcache.start(origin, xdir)
                    xproxy = DelayProxy(target_of(xcache.url(big.name)), one_way) if one_way else None
                    try:
                        xurl = xproxy.url(xcache.url(big.name)) if xproxy else xcache.url(big.name)
                        pids = [xcache.proxy.process.pid if xcache.proxy.process else 0, origin_pid]
                        proxies = [xproxy] if xproxy else []
                        for label in ["XCache cold", "XCache warm"]:
                            touched = server_xcache.origin_touches(origin.log(), big.name)
                            r = read_bench(xurl, servers=pids, proxies=proxies)
                            now = server_xcache.origin_touches(origin.log(), big.name)
                            r["origin_reads"] = now["reads"] - touched["reads"]
                            r["origin_bytes"] = now["read_bytes"] - touched["read_bytes"]
                            results[label].append(r)
                            os.sync()
                    finally:
                        if xproxy is not None:
                            xproxy.stop()
                        xcache.stop()
                        remove(xdir)
                    cache = fresh_dir("rntuple-dc-cache-")
                    proxies = [origin_proxy] if origin_proxy else []
                    for label, validate in [
                        ("ours cold", "open"),
                        ("ours warm never", "never"),
                        ("ours warm open", "open"),
                    ]:
                        env = {"RNTUPLE_CACHE_DIR": str(cache), "RNTUPLE_CACHE_VALIDATE": validate}
                        r = read_bench(ours_url, None, env, servers=[origin_pid], proxies=proxies)
                        r["origin_reads"] = r["requests"]
                        r["origin_bytes"] = r["bytes_read"]
                        results[label].append(r)
                        os.sync()
                    remove(cache)
            finally:
                if origin_proxy is not None:
                    origin_proxy.stop()
            local = results["local"]
            for label, runs in results.items():
                r = runs[-1]
                origin_cell = "-" if label == "local" else f"{r['origin_reads']} / {mb(r['origin_bytes'])}"
                show_row(
                    rows,
                    f"| {2 * one_way} ms | {label} | {spread(runs)} | "
                    f"{med(runs, 'seconds') / med(local, 'seconds'):.2f}x | "
                    f"{r['open_requests']} + {r['requests']} | {origin_cell} | {cpu_cols(runs)} |",
                )
            xwarm = med(results["XCache warm"], "seconds")
            for label in ["ours warm never", "ours warm open"]:
                ours = med(results[label], "seconds")
                report.targets.append(
                    Target(
                        f"6. {2 * one_way} ms: {label} / XCache warm (stated)",
                        f"{ours / xwarm:.2f}x ({ours:.3f} / {xwarm:.3f} s)",
                        None,
                    )
                )
    finally:
        origin.stop()
    report.add(
        [
            "## 6. XCache against our cache, every field",
            "",
            "An origin xrootd (tracing opens and reads) serves the file. XCache: "
            "`tests/server_xcache.py` (XrdPfc, 1 MiB blocks, no prefetch), a fresh cache directory and "
            "proxy each repetition, read twice with `read-bench root://proxy//big.root` (cold, warm). "
            "Ours: `read-bench root://origin//big.root` with `RNTUPLE_CACHE_DIR` (a fresh directory each "
            "repetition): cold, then warm with `RNTUPLE_CACHE_VALIDATE=never` and `open`. With added "
            "latency, `delay_proxy` sits between the client and the XCache proxy (the proxy reaches "
            "the origin directly) and between the client and the origin for ours. "
            "Requests: read-bench's (to the server it talks to); origin reads / MB: for XCache the "
            "origin's trace (reads of the origin file), for ours read-bench's origin requests and "
            "bytes (opening excluded). CPU server: the XCache proxy and the origin (XCache rows), "
            "the origin (ours).",
            "",
            "| RTT | read | s | / local | requests (read-bench) | origin reads / MB | CPU client | "
            "CPU server | CPU delay_proxy |",
            "|---|---|---:|---:|---|---:|---:|---:|---:|",
            *rows,
            "",
        ]
    )


# ---------------------------------------------------------------------------- main


def versions() -> str:
    """The servers' versions."""

    def first_line(cmd: list[str]) -> str:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        except OSError:
            return "?"
        return (out.stdout + out.stderr).strip().splitlines()[0] if (out.stdout + out.stderr).strip() else "?"

    nginx = first_line([server_http.nginx_binary(), "-v"])
    xrootd = first_line([server_xrootd.xrootd_binary(), "-v"])
    weed = first_line([server_seaweedfs.weed_binary(), "version"])
    return f"{nginx}; xrootd {xrootd}; SeaweedFS {weed}"


def machine() -> str:
    """CPU model, cores, memory, kernel."""
    return (
        f"{platform.node()}, {cpu_model()}, {os.cpu_count()} cores, {memory_bytes() / 2**30:.0f} GiB, "
        f"Linux {platform.release()}"
    )


def file_summary(big: Path) -> str:
    """Size, entries, clusters of the big file."""
    info = subprocess.run([str(CLI), "info", str(big)], capture_output=True, text=True, check=True).stdout
    entries = next(
        (line.split(":")[1].strip() for line in info.splitlines() if line.startswith("entries:")), "?"
    )
    clusters = next(
        (line.split(":")[1].strip() for line in info.splitlines() if line.startswith("clusters:")), "?"
    )
    return f"{big.stat().st_size / 1e6:.0f} MB, {entries} entries, 40 fields, {clusters} clusters, zstd:1"


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=None, help="a directory to keep the files in")
    parser.add_argument("--out", type=Path, default=None, help="default bench/RESULTS-datacenter.md")
    parser.add_argument(
        "--small", action="store_true", help="a 50 MB file and small chain, for a quick check"
    )
    parser.add_argument(
        "--sections", type=int, nargs="*", default=[1, 2, 3, 4, 5, 6], help="which sections to run (1-6)"
    )
    args = parser.parse_args()
    out = args.out or (
        Path(tempfile.gettempdir()) / "RESULTS-datacenter-small.md"
        if args.small
        else REPO / "bench" / "RESULTS-datacenter.md"
    )
    began = time.perf_counter()
    data = (args.data or fresh_dir("rntuple-datacenter-")).resolve()
    copies = fresh_dir("rntuple-datacenter-bin-")
    try:
        return run_all(args, out, data, copies, began)
    finally:
        shutil.rmtree(copies, ignore_errors=True)
        if args.data is None:
            remove(data)


def run_all(args: argparse.Namespace, out: Path, data: Path, copies: Path, began: float) -> int:
    """Makes the data, runs the selected sections, writes the results file."""
    measured = snapshot(copies)
    big, chain = make_data(data, args.small)
    for _ in range(2):
        read_bench(str(big))  # the page cache warm
    for path in chain:
        read_bench(str(path))
    report = Report()
    steps: dict[int, Callable[[], None]] = {
        1: lambda: section_cold(report, big, data, args.repeat, [10, 65]),
        2: lambda: section_cache(report, big, data, args.repeat),
        3: lambda: section_reuse(report, big, data, args.repeat),
        4: lambda: section_chain(report, chain, data, args.repeat),
        5: lambda: section_s3(report, big, data, args.repeat),
        6: lambda: section_xcache(report, big, data, args.repeat, [0, 10]),
    }
    for number in args.sections:
        started = time.perf_counter()
        steps[number]()
        print(f"section {number}: {time.perf_counter() - started:.0f} s", flush=True)
    command = " ".join(["python3 bench/datacenter.py", *sys.argv[1:]])

    def verdict(t: Target) -> str:
        return "stated" if t.met is None else ("yes" if t.met else "no")

    target_rows = [
        f"| {t.what} | {t.measured} | {verdict(t)}{': ' + t.bound if t.bound and t.met is False else ''} |"
        for t in report.targets
    ]
    stated_bounds = [f"- {t.what}: {t.bound}" for t in report.targets if t.met is None and t.bound]
    other = sorted(OTHER_CPU)
    quiet = (
        f"Measurements waited {QUIET.waits} time(s), {QUIET.seconds:.0f} s in all, for other "
        f"processes ({', '.join(sorted(QUIET.seen))}) to end."
        if QUIET.waits
        else "No build or test of others was running when a measurement began."
    ) + f" Measurements at whose end one was running: {QUIET.overlapped}."
    report.notes.append(
        f"Other load: {quiet} CPU of the machine during each `read-bench` run not used by the "
        "client, the servers or the proxies (kernel threads such as writeback, other processes): "
        f"median {statistics.median(other):.2f} s, max {other[-1]:.2f} s over {len(other)} runs."
    )
    text = [
        "# Remote reading in a data centre: latency, the cache of remote reads, chains, S3, XCache",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M')}, {time.perf_counter() - began:.0f} s). "
        f"Machine: {machine()}; a VM, every server, `delay_proxy` and the client on the same cores. "
        f"{versions()}. Code: {measured}.",
        "",
        f"File: `big.root` of `tests/remote_data.py` (`write_big`): {file_summary(big)}. "
        f"Repetitions: {args.repeat}, local and remote runs alternating; seconds are medians with "
        "(min-max). Latency: `delay_proxy PORT HOST:PORT ONE_WAY_MS` (this kernel has no netem): "
        "10 ms each way = 20 ms RTT, 65 = 130 ms, plus one RTT at each connection set-up. Remote "
        "seconds are open + read (`read-bench`), local ones the read.",
        "",
        *report.sections,
        "## Acceptance targets",
        "",
        "| target | measured | met? |",
        "|---|---|---|",
        *target_rows,
        "",
        *(["What bounds the stated ratios (measured):", "", *stated_bounds, ""] if stated_bounds else []),
        *report.notes,
        "",
    ]
    write_text_atomically(out, "\n".join(text))
    print(f"wrote {out} in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
