"""A plain HTTP server for the remote-read tests, as simple servers are: it serves one
byte range per request (``206`` with ``Content-Range``) and refuses the rest, several
ranges in one request and suffix ranges (``bytes=-N``), with ``refusal`` (400 by
default; 416, 501, or 200: the whole file). Files carry a strong ``ETag`` (size and
modification time in nanoseconds) and ``Last-Modified``; a ``HEAD`` tells the size.
``compress=True`` sends every body gzip-compressed with ``Content-Encoding: gzip``,
whatever the request asked for (a misconfigured proxy).

It runs on a thread of the calling process (``serving(root)``, a context manager) and
logs each request's method, path, Range header and status.

Command line (serves DIR until interrupted)::

    python3 tests/server_ranges.py DIR [--port N] [--refusal 400]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Server:
    """A running server: its port, root, and the requests it saw."""

    root: Path
    port: int
    log: list[dict[str, str]] = field(default_factory=list)
    httpd: ThreadingHTTPServer | None = None

    def url(self, name: str) -> str:
        """The URL of ``name`` under the root."""
        return f"http://127.0.0.1:{self.port}/{name}"

    def requests(self) -> list[dict[str, str]]:
        """Every request so far: ``method``, ``path``, ``range``, ``status``."""
        return list(self.log)

    def clear_log(self) -> None:
        """Forgets the requests seen so far."""
        self.log.clear()


def handler(root: Path, refusal: int, compress: bool, log: list[dict[str, str]]) -> type:
    """A request handler class serving ``root`` as the module says."""

    class Handler(SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: requests go to the log list."""

        def do_HEAD(self) -> None:
            self._answer(head=True)

        def do_GET(self) -> None:
            self._answer(head=False)

        def _answer(self, head: bool) -> None:
            path = Path(self.translate_path(self.path))
            spec = self.headers.get("Range", "")
            entry = {"method": self.command, "path": self.path, "range": spec, "status": ""}
            log.append(entry)
            if not path.is_file():
                entry["status"] = "404"
                self._send(HTTPStatus.NOT_FOUND, b"", {}, head)
                return
            stat = path.stat()
            validators = {
                "ETag": f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"',
                "Last-Modified": formatdate(stat.st_mtime, usegmt=True),
                "Accept-Ranges": "bytes",
            }
            status, body, headers = self._range(spec, path, stat.st_size)
            entry["status"] = str(int(status))
            self._send(status, body, {**validators, **headers}, head)

        def _range(self, spec: str, path: Path, size: int) -> tuple[HTTPStatus, bytes, dict[str, str]]:
            if self.command == "HEAD":
                return HTTPStatus.OK, b"", {"Content-Length": str(size)}
            if not spec:
                return HTTPStatus.OK, path.read_bytes(), {}
            ranges = spec.removeprefix("bytes=")
            if "," in ranges or ranges.startswith("-"):
                if refusal == 200:
                    return HTTPStatus.OK, path.read_bytes(), {}
                return HTTPStatus(refusal), b"", {}
            first_text, _, last_text = ranges.partition("-")
            first = int(first_text)
            last = min(int(last_text), size - 1) if last_text else size - 1
            if first >= size or first > last:
                return HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, b"", {"Content-Range": f"bytes */{size}"}
            with path.open("rb") as f:
                f.seek(first)
                body = f.read(last + 1 - first)
            return HTTPStatus.PARTIAL_CONTENT, body, {"Content-Range": f"bytes {first}-{last}/{size}"}

        def _send(self, status: HTTPStatus, body: bytes, headers: dict[str, str], head: bool) -> None:
            if compress and body:
                body = gzip.compress(body)
                headers = {**headers, "Content-Encoding": "gzip"}
            self.send_response(status)
            headers = {"Content-Length": str(len(body)), **headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if not head:
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

    return Handler


@contextlib.contextmanager
def serving(root: Path, refusal: int = 400, compress: bool = False, port: int = 0) -> Iterator[Server]:
    """Serves ``root`` on 127.0.0.1 (a free port unless ``port``) while the block runs."""
    log: list[dict[str, str]] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", port), handler(root, refusal, compress, log))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Server(root=root, port=httpd.server_address[1], log=log, httpd=httpd)
    finally:
        httpd.shutdown()
        httpd.server_close()


def main() -> None:
    """Serves a directory until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--refusal", type=int, default=400)
    args = parser.parse_args()
    with serving(args.root.resolve(), refusal=args.refusal, port=args.port) as server:
        print(f"serving {args.root} at http://127.0.0.1:{server.port}/ (single ranges only)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    os._exit(0)


if __name__ == "__main__":
    main()
