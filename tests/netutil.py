"""Loopback helpers shared by the test servers: free ports, and whether a port answers."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def accepts(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def backdate(root: Path, seconds: float = 60.0) -> None:
    """Sets the modification time of every file under ``root`` ``seconds`` back. A remote
    file modified within the last second is opened again once that second has passed (a
    rewrite in the same second would keep its validators: ``io/version.rs``); fixtures
    whose tests count requests serve files that are no longer being written."""
    when = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        if path.is_file() and not path.is_symlink():
            os.utime(path, (when, when))
