"""Loopback helpers shared by the test servers and the remote-read tests: free ports,
whether a port answers, a server's request log read once settled, and what a retried
remote failure's message says it tried (its seconds matched by pattern, never compared).

Nothing here measures or guesses how long something takes: a loaded machine only makes
the waits longer."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

#: What a settle marker's path holds (see :func:`settled`); requests of markers are left
#: out of every log a test reads.
MARKER = "/.rntuple-settled-"
#: Seconds :func:`settled` waits for its marker in a log.
SETTLE_TIMEOUT = 60.0

T = TypeVar("T")


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


def marker_path() -> str:
    """A path no other request asks for: ``/.rntuple-settled-<random hex>``."""
    return f"{MARKER}{uuid.uuid4().hex}"


def settled(
    read: Callable[[], Sequence[T]],
    ask: Callable[[str], None],
    path_of: Callable[[T], str],
    timeout: float = SETTLE_TIMEOUT,
) -> list[T]:
    """A server's log of requests once every request answered before this call is in it.

    A server writes a request's line when it is done with the request, which may be
    after its client has the answer; so a log read at once can lack requests a test just
    made. This asks the server for a marker (``ask(path)``, a request that fails is
    fine) and reads the log (``read()``, the requests so far, oldest first) until the
    marker's request is in it: a server that logs each request as it answers it, in
    order (nginx with one worker process), has by then logged every request answered
    before; one whose lines may trail their answers by a moment (weed) has too, unless
    a line trails by more than the whole round trip of the marker asked afterwards.
    Returns the requests before the marker's, every marker's left out (``path_of`` gives
    a request's path). Fails if the marker is not logged within ``timeout`` seconds."""
    path = marker_path()
    ask(path)
    deadline = time.monotonic() + timeout
    while True:
        entries = list(read())
        for i, entry in enumerate(entries):
            if path_of(entry).endswith(path):
                return [e for e in entries[:i] if MARKER not in path_of(e)]
        if time.monotonic() > deadline:
            raise AssertionError(f"the server did not log the request of {path} within {timeout} s")
        time.sleep(0.005)


#: The end of a retried remote failure's message (``io/retry.rs``): ``; 3 attempts over
#: 0.72 s (2 retries, RNTUPLE_RETRIES or --retries)``. The seconds depend on the load.
TRIED = re.compile(
    r"; (?P<attempts>\d+) (?P<attempt_word>attempts?) over \d+(?:\.\d+)? s "
    r"\((?P<retries>\d+) (?P<retry_word>retry|retries), RNTUPLE_RETRIES or --retries\)"
)


def tried(message: str) -> tuple[int, int]:
    """The attempts and the retries that a retried remote failure's message (or a
    command's error output holding one) names, in the exact wording: ``1 attempt``, ``2
    attempts``, ``1 retry``, ``0 retries``, the seconds a number (not compared). Fails,
    showing the message, unless it names them exactly once."""
    found = list(TRIED.finditer(message))
    assert len(found) == 1, f"not one retried failure in: {message}"
    match = found[0]
    attempts, retries = int(match["attempts"]), int(match["retries"])
    assert match["attempt_word"] == ("attempt" if attempts == 1 else "attempts"), message
    assert match["retry_word"] == ("retry" if retries == 1 else "retries"), message
    return attempts, retries


def serve_until_interrupted(*stops: Callable[[], None], wait: Callable[[], object] = signal.pause) -> None:
    """A test server's command line: ``wait`` (by default until a signal comes) until
    Ctrl-C or the server's end, then each of ``stops``."""
    try:
        wait()
    except KeyboardInterrupt:
        pass
    finally:
        for stop in stops:
            stop()


@contextlib.contextmanager
def python_http_server(root: Path, timeout: float = 15.0) -> Iterator[str]:
    """``python3 -m http.server`` (no byte ranges: whole files only) serving ``root`` on
    a free port of 127.0.0.1: its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while not accepts(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("python3 -m http.server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()
