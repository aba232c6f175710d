"""HTTP servers as they are, on a large file: ``python3 bench/http_servers.py FILE``.

Serves the directory of FILE (an RNTuple file of about 100 MB, e.g. ``bench/generate.py
--events 220000 --only root``'s ``nanoaod_root.root``) with ``python3 -m http.server``
(ignores ranges), ``tests/server_ranges.py`` (single ranges only: several ranges and
suffix ranges refused with 400) and nginx (``tests/server_http.py``), and reads it with
``rntuple dump --jsonl`` without the cache and with a new cache directory, twice each.
Every output's SHA-256 must equal the local file's; prints one line per read (seconds,
equal or not, the warnings on standard error, the requests the server saw) and exits 1
if any read differs or fails.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import netutil  # noqa: E402
import server_http  # noqa: E402
import server_ranges  # noqa: E402

CLI = REPO / "target" / "release" / "rntuple"


def dump(target: str, *options: str) -> tuple[str, float, str]:
    """``rntuple dump --jsonl``: the SHA-256 of its output, its seconds and its stderr."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [str(CLI), "dump", "--jsonl", target, *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    digest = hashlib.sha256()
    assert process.stdout is not None and process.stderr is not None
    for chunk in iter(lambda: process.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
        digest.update(chunk)
    stderr = process.stderr.read().decode(errors="replace")
    if process.wait() != 0:
        return f"failed: {stderr.strip()}", time.perf_counter() - start, stderr
    return digest.hexdigest(), time.perf_counter() - start, stderr


@contextlib.contextmanager
def single_ranges(root: Path) -> Iterator[str]:
    """``tests/server_ranges.py`` on ``root`` (refusals: 400): its base URL."""
    with server_ranges.serving(root) as server:
        yield f"http://127.0.0.1:{server.port}"


@contextlib.contextmanager
def nginx(root: Path) -> Iterator[str]:
    """nginx on ``root``: its base URL."""
    with server_http.serving(root) as server:
        yield f"http://127.0.0.1:{server.port}"


def main() -> int:
    """Reads the file over each server kind; 1 if any read differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    args = parser.parse_args()
    path = args.file.resolve()
    local, seconds, _ = dump(str(path))
    print(f"local: {path.stat().st_size} bytes, dump --jsonl in {seconds:.1f} s, sha256 {local[:16]}")
    bad = 0
    for kind, serve in (
        ("python3 -m http.server", netutil.python_http_server),
        ("single ranges", single_ranges),
        ("nginx", nginx),
    ):
        with serve(path.parent) as base, tempfile.TemporaryDirectory() as cache:
            url = f"{base}/{path.name}"
            for options in ([], ["--cache-dir", cache]):
                for n in (1, 2):
                    digest, seconds, stderr = dump(url, *options)
                    equal = digest == local
                    bad += not equal
                    warnings = stderr.count("warning:")
                    label = "cache" if options else "no cache"
                    print(
                        f"{kind:24} {label:8} read {n}: {seconds:6.1f} s, "
                        f"{'equal' if equal else 'DIFFERENT ' + digest[:60]}, {warnings} warning(s)"
                    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
