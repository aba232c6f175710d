"""Remote reading against local reading on the same machine in the same run:
``python3 bench/remote.py [--repeat R] [--out bench/RESULTS-remote.md]``.

Serves a 500 MB NanoAOD-like file (40 fields, written by ``tests/remote_data.py``) with
nginx (http://), xrootd (root://) and moto (s3://) on loopback, started by the test
suite's server modules, and times ``rntuple read-bench`` over each protocol, directly and
through ``delay_proxy`` (10 ms each way: 20 ms round trip), against the local file, for
all fields and for 5 of them; local and remote alternate. Reports medians, the ratio to
local, the bytes moved against the bytes needed, the requests and the CPU seconds of the
client and of the proxy. As root, also every-field reads with the page cache emptied
before each (local reads from disk, remote ones from the server's reads of that disk),
and Python ``iterate()`` over every field in 100 MB steps.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

# First: it puts tests/, python/ and bench/tasks/ on sys.path.
from paths import RELEASE_CLI, RELEASE_PROXY, REPO

# isort: split

from common import show_row, write_report
from remote_data import write_big

FIVE = ["Jet_pt", "Jet_eta", "Muon_pt", "MET_pt", "PV_npvs"]


def read_bench(location: str, env: dict[str, str], fields: list[str] | None) -> dict[str, Any]:
    """One ``rntuple read-bench --json`` run, with the CPU seconds it used."""
    cmd = [str(RELEASE_CLI), "read-bench", location, "--json"] + (
        ["--fields", ",".join(fields)] if fields else []
    )
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, check=True)
    after = os.times()
    result = json.loads(out.stdout)
    result["cpu_seconds"] = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return result


ITERATE = """
import sys, time
import rntuple
nt = rntuple.open(sys.argv[1])["Events"]
start = time.perf_counter()
rows = sum(b.num_rows for b in nt.iterate(step_size="100 MB", library="arrow"))
print(time.perf_counter() - start, rows)
"""


def iterate_seconds(location: str, env: dict[str, str]) -> float:
    """Seconds of a Python ``iterate()`` over every field in 100 MB steps (after opening)."""
    out = subprocess.run(
        [sys.executable, "-c", ITERATE, location],
        capture_output=True,
        text=True,
        env={**os.environ, **env, "PYTHONPATH": str(REPO / "python")},
        check=True,
    )
    return float(out.stdout.split()[0])


def drop_page_cache() -> bool:
    """Empties the kernel's page cache (root only), so the next read comes from disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def proxy_cpu(pid: int) -> float:
    """CPU seconds a process used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS-remote.md")
    parser.add_argument("--data", type=Path, default=None, help="a directory to keep big.root in")
    args = parser.parse_args()
    data = args.data or Path(tempfile.mkdtemp(prefix="rntuple-remote-"))
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "big.root").exists():
        write_big(str(data / "big.root"))
    local_path = str(data / "big.root")
    read_bench(local_path, {}, None)  # warm the page cache
    import server_http
    import server_s3
    import server_xrootd

    rows: list[str] = []
    iterate_rows: list[str] = []
    cold_rows: list[str] = []
    cold = drop_page_cache()
    notes: list[str] = []
    for protocol, module in [("http", server_http), ("root", server_xrootd), ("s3", server_s3)]:
        server = module.start(data)
        env = dict(server.env()) if hasattr(server, "env") else {}
        try:
            for delay_ms in [0, 10]:
                if delay_ms and protocol == "s3":
                    continue
                url, proxy = server.url("big.root"), None
                proxied = 0
                if delay_ms:
                    parts = urllib.parse.urlsplit(url)
                    port = 19000 + os.getpid() % 1000
                    proxy = subprocess.Popen(
                        [str(RELEASE_PROXY), str(port), f"{parts.hostname}:{parts.port}", str(delay_ms)],
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                    assert proxy.stdout is not None and proxy.stdout.readline().strip() == "ready"
                    url = parts._replace(netloc=f"127.0.0.1:{port}").geturl()
                for fields in [None, FIVE]:
                    local, remote = [], []
                    for _ in range(args.repeat):
                        local.append(read_bench(local_path, {}, fields))
                        remote.append(read_bench(url, env, fields))
                        proxied += proxy is not None
                    lt = statistics.median(r["read_seconds"] for r in local)
                    rt = statistics.median(r["open_seconds"] + r["read_seconds"] for r in remote)
                    last = remote[-1]
                    moved = last["open_bytes_read"] + last["bytes_read"]
                    show_row(
                        rows,
                        f"| {protocol}:// | {2 * delay_ms} ms | {'all 40' if fields is None else '5'} | "
                        f"{lt:.3f} | {rt:.3f} | {rt / lt:.2f}x | {last['bytes_used'] / 1e6:.1f} | "
                        f"{moved / 1e6:.1f} ({moved / last['bytes_used']:.3f}x) | "
                        f"{last['open_requests']} + {last['requests']} "
                        f"({last['vector_requests']} vectored) | "
                        f"{statistics.median(r['cpu_seconds'] for r in local):.2f} / "
                        f"{statistics.median(r['cpu_seconds'] for r in remote):.2f} |",
                    )
                if protocol != "s3" and cold:
                    local_c, remote_c = [], []
                    for _ in range(args.repeat):
                        drop_page_cache()
                        local_c.append(read_bench(local_path, {}, None)["read_seconds"])
                        drop_page_cache()
                        r = read_bench(url, env, None)
                        proxied += proxy is not None
                        remote_c.append(r["open_seconds"] + r["read_seconds"])
                    lt, rt = statistics.median(local_c), statistics.median(remote_c)
                    show_row(
                        cold_rows,
                        f"| {protocol}:// | {2 * delay_ms} ms | {lt:.3f} | {rt:.3f} | {rt / lt:.2f}x |",
                    )
                    read_bench(local_path, {}, None)  # warm again for what follows
                if protocol != "s3":
                    local_t, remote_t = [], []
                    for _ in range(args.repeat):
                        local_t.append(iterate_seconds(local_path, {}))
                        remote_t.append(iterate_seconds(url, env))
                        proxied += proxy is not None
                    lt, rt = statistics.median(local_t), statistics.median(remote_t)
                    show_row(
                        iterate_rows,
                        f"| {protocol}:// | {2 * delay_ms} ms | {lt:.3f} | {rt:.3f} | {rt / lt:.2f}x |",
                    )
                if proxy is not None:
                    notes.append(
                        f"- delay_proxy for {protocol}://: {proxy_cpu(proxy.pid) / max(proxied, 1):.2f} "
                        f"CPU s per remote read (mean over its {proxied} reads: all-field, 5-field, "
                        "cold and iterate)"
                    )
                    proxy.kill()
        finally:
            server.stop()
    text = [
        "# Remote reading against local reading",
        "",
        f"Command: `python3 bench/remote.py --repeat {args.repeat}`, {time.strftime('%Y-%m-%d')}, "
        f"{platform.node()}, {os.cpu_count()} cores. File: {Path(local_path).stat().st_size / 1e6:.0f} MB, "
        "2M entries, 40 fields, 5 clusters (`tests/remote_data.py`). Latency: `delay_proxy` (this kernel "
        "has no netem), which itself uses CPU on the same 2 cores.",
        "",
        "Times are medians of the read (remote: opening included). Bytes: page bytes the decoder "
        "used, and bytes moved (opening included). CPU: client process seconds, local / remote.",
        "",
        "| protocol | added RTT | fields | local s | remote s | remote/local | needed MB | moved MB | "
        "requests (open + read) | client CPU s |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|",
        *rows,
        "",
        *notes,
        "",
        "S3: moto (a Python server) serves about 13-15 MB/s here; the s3:// times measure moto, "
        "not the client. Bytes and requests are what the client did.",
        "",
        "Cold: every field, the page cache emptied before each read (local reads come from "
        "this machine's disk, remote ones from the server's reads of the same disk), medians:"
        if cold
        else "Cold reads: not measured (emptying the page cache needs root).",
        "",
        "| protocol | added RTT | local s | remote s | remote/local |",
        "|---|---|---:|---:|---:|",
        *cold_rows,
        "",
        "Python `iterate()` over every field in 100 MB steps (16 batches; one stream, pages "
        "fetched ahead across batches), medians, opening excluded:",
        "",
        "| protocol | added RTT | local s | remote s | remote/local |",
        "|---|---|---:|---:|---:|",
        *iterate_rows,
        "",
    ]
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
