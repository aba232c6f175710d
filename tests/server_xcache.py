"""XCache (XRootD's proxy file cache, Debian's ``xrootd-server`` with its plugins) on
loopback, in front of an origin xrootd, for tests and benchmarks.

``start(origin, cache_dir)`` runs an ``xrootd`` (through :mod:`server_xrootd`: same user
namespace, port choice and retries) configured as a caching proxy:

- ``ofs.osslib libXrdPss.so`` + ``pss.origin HOST:PORT``: every file is read from the
  origin (a :class:`server_xrootd.Server`, ``"host:port"`` or ``"root://host:port"``);
- ``pss.cachelib libXrdPfc.so``: the proxy file cache keeps what it fetched in
  ``cache_dir`` (``oss.localroot``): the file's bytes under the same path, and beside it
  ``NAME.cinfo``: which blocks are there, and one access record per open (bytes served
  from the cache, fetched from the origin, passed through);
- ``pfc.blocksize`` (default :data:`BLOCKSIZE`): the unit fetched from the origin and
  kept; ``pfc.prefetch`` (default 0: only blocks a client asked for are fetched);
  ``pfc.ram``: the RAM for blocks in flight (XrdPfc refuses less than 1g); ``pfc.diskusage``
  as fractions of ``cache_dir``'s file system (purged above the second).

The returned :class:`Cache` gives ``url(name)`` (``root://`` through the proxy),
``cinfo(name)`` (``xrdpfc_print``'s reading of a ``.cinfo`` file: blocks and access
records), ``cached_files()``, ``log()`` (with ``pfc.trace info``: an ``Attach()`` line per
open and where its size came from) and ``stop()``/``kill()``/``restart()`` (the cache
directory stays).

What the origin served through the proxy is in the origin's log when it traces opens and
reads: start it with ``server_xrootd.start(dir, extra_config=ORIGIN_TRACE)``; then
:func:`origin_touches` counts the opens and reads of a file there.

Command line (serves DIR through a cache in CACHE until interrupted)::

    python tests/server_xcache.py DIR CACHE
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import server_xrootd
from netutil import serve_until_interrupted

#: The proxy's block size: each block missing from the cache is one read at the origin.
BLOCKSIZE = "1M"
#: Blocks read ahead at the origin per open file (0: none).
PREFETCH = 0
#: RAM for blocks in flight; XrdPfc refuses less than 1g (it is a limit, not an allocation).
RAM = "1g"
#: Configuration for an origin (``server_xrootd.start(dir, extra_config=ORIGIN_TRACE)``)
#: that logs each open and read (``ofs_open: ... fn=/NAME``, ``ofs_read: LEN@OFFSET fn=/NAME``).
ORIGIN_TRACE = ["ofs.trace open read"]


def origin_touches(origin_log: str, name: str) -> dict[str, int]:
    """Opens and reads of ``/name`` in a log of an origin started with :data:`ORIGIN_TRACE`,
    and the bytes those reads asked for."""
    path = "/" + name.lstrip("/")
    opens = reads = read_bytes = 0
    for line in origin_log.splitlines():
        if not line.endswith(f" fn={path}"):
            continue
        if "ofs_open:" in line and "attach" not in line:
            opens += 1
        elif match := re.search(r"ofs_read: (\d+)@\d+ fn=", line):
            reads += 1
            read_bytes += int(match.group(1))
    return {"opens": opens, "reads": reads, "read_bytes": read_bytes}


def _origin_address(origin: server_xrootd.Server | str) -> str:
    """``host:port`` of the origin."""
    if isinstance(origin, server_xrootd.Server):
        return f"127.0.0.1:{origin.port}"
    if "://" in origin:
        parts = urllib.parse.urlsplit(origin)
        return f"{parts.hostname}:{parts.port or 1094}"
    return origin


@dataclass
class Cache:
    """A running XCache: the proxy (an ``xrootd``), the origin it reads from, its cache."""

    proxy: server_xrootd.Server
    origin: str
    cache_dir: Path

    @property
    def port(self) -> int:
        """The proxy's port."""
        return self.proxy.port

    def url(self, relative_path: str) -> str:
        """The ``root://`` URL of ``relative_path`` (relative to the origin's root) read
        through the proxy."""
        return self.proxy.url(relative_path)

    def env(self) -> dict[str, str]:
        """The environment a client needs (none: no TLS, no authentication)."""
        return {}

    def log(self) -> str:
        """The proxy's log (``pfc.trace info``)."""
        return self.proxy.log()

    def cached_files(self) -> list[str]:
        """Files the cache holds (those with a ``.cinfo``), relative to ``cache_dir``."""
        return sorted(
            p.relative_to(self.cache_dir).as_posix().removesuffix(".cinfo")
            for p in self.cache_dir.rglob("*.cinfo")
        )

    def cinfo(self, relative_path: str) -> dict[str, object]:
        """``xrdpfc_print``'s reading of the cache's record of a file: ``file_kb``,
        ``block_kb``, ``blocks``, ``downloaded`` (blocks in the cache), ``complete``, and
        ``accesses``: one per open, oldest first, each ``{"hit_kb", "miss_kb",
        "bypass_kb"}`` (kB served from the cache, fetched from the origin, passed through)."""
        info = self.cache_dir / (relative_path.lstrip("/") + ".cinfo")
        out = subprocess.run(
            [shutil.which("xrdpfc_print") or "/usr/bin/xrdpfc_print", str(info)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        head = re.search(
            r"file_size (\d+) kB, buffer_size (\d+) kB, n_blocks (\d+), n_downloaded (\d+), state (\w+)", out
        )
        if head is None:
            raise RuntimeError(f"unexpected xrdpfc_print output for {info}:\n{out}")
        accesses = []
        for line in out.splitlines():
            fields = line.split()
            # Record Attach Detach Duration N_ios N_mrg B_hit B_miss B_bypass
            if len(fields) == 9 and fields[0].isdigit():
                hit, miss, bypass = (int(v) for v in fields[6:9])
                accesses.append({"hit_kb": hit, "miss_kb": miss, "bypass_kb": bypass})
        return {
            "file_kb": int(head.group(1)),
            "block_kb": int(head.group(2)),
            "blocks": int(head.group(3)),
            "downloaded": int(head.group(4)),
            "complete": head.group(5) == "complete",
            "accesses": accesses,
        }

    def stop(self) -> None:
        """Stops the proxy (the cache directory stays)."""
        self.proxy.stop()

    def kill(self) -> None:
        """Kills the proxy at once (SIGKILL)."""
        self.proxy.kill()

    def restart(self) -> None:
        """Starts the proxy again on the same port, with the same cache directory."""
        self.proxy.restart()


def config(origin: str, *, blocksize: str, prefetch: int, ram: str) -> list[str]:
    """The proxy-cache configuration lines (besides :mod:`server_xrootd`'s port, export,
    ``oss.localroot`` and admin paths)."""
    return [
        "ofs.osslib libXrdPss.so",
        f"pss.origin {origin}",
        "pss.cachelib libXrdPfc.so",
        f"pfc.blocksize {blocksize}",
        f"pfc.prefetch {prefetch}",
        f"pfc.ram {ram}",
        "pfc.diskusage 0.95 0.98",
        "pfc.trace info",
    ]


def start(
    origin: server_xrootd.Server | str,
    cache_dir: Path,
    *,
    blocksize: str = BLOCKSIZE,
    prefetch: int = PREFETCH,
    ram: str = RAM,
    extra_config: list[str] | None = None,
) -> Cache:
    """Starts XCache on a free port of 127.0.0.1 reading from ``origin`` and keeping what
    it read in ``cache_dir`` (see the module doc)."""
    cache = Path(cache_dir).resolve()
    cache.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and not server_xrootd._user_namespaces_work():
        # xrootd will switch to this account (-R): the cache must be its to write.
        shutil.chown(cache, user=server_xrootd._drop_user())
    address = _origin_address(origin)
    lines = config(address, blocksize=blocksize, prefetch=prefetch, ram=ram) + list(extra_config or [])
    proxy = server_xrootd.start(cache, extra_config=lines)
    return Cache(proxy=proxy, origin=address, cache_dir=cache)


def main() -> None:
    """Serves a directory through XCache until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("cache", type=Path)
    args = parser.parse_args()
    origin = server_xrootd.start(args.root, extra_config=ORIGIN_TRACE)
    cache = start(origin, args.cache)
    print(f"origin {origin.url('')} (log {origin.log_path})", flush=True)
    print(f"through the cache: {cache.url('')} (log {cache.proxy.log_path})", flush=True)
    serve_until_interrupted(cache.stop, origin.stop)


if __name__ == "__main__":
    main()
