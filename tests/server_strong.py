"""An HTTP server on loopback whose validator follows the content: each response's
``ETag`` is a hash of the bytes of the file it was cut from (as S3's and some CDNs' are),
with no ``Last-Modified``. It serves single, multi-range (``multipart/byteranges``) and
suffix ranges, honours ``If-Match`` (412 when the file no longer has that ETag) and
reads each response from one open file, so a response is always one version whole.

``start(root_dir)`` returns a :class:`StrongServer` (``url(name)``, ``stop()``).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BOUNDARY = "STRONGSERVERBOUNDARY"


def content_etag(data: bytes) -> str:
    """The ETag this server gives ``data``."""
    return '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def _ranges(header: str, size: int) -> list[tuple[int, int]] | None:
    """The inclusive byte ranges of a ``Range`` header, clipped to ``size``; None when it
    is not a byte-range header."""
    if not header.startswith("bytes="):
        return None
    out = []
    for part in header[len("bytes=") :].split(","):
        m = re.fullmatch(r"\s*(\d*)-(\d*)\s*", part)
        if not m or (not m.group(1) and not m.group(2)):
            return None
        if not m.group(1):
            n = min(int(m.group(2)), size)
            out.append((size - n, size - 1))
        else:
            a = int(m.group(1))
            b = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            if a > b:
                return None
            out.append((a, b))
    return out


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root: Path
    validators: bool

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        """One version of the file, whole or in ranges."""
        path = self.root / self.path.lstrip("/").split("?")[0]
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            self.send_error(404)
            return
        etag = content_etag(data)
        wanted = self.headers.get("If-Match") if self.validators else None
        if wanted is not None and wanted.strip() != etag:
            self.send_response(412)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        header = self.headers.get("Range")
        ranges = _ranges(header, len(data)) if header else None
        if not ranges:
            self._send(200, data, [("ETag", etag)])
            return
        if len(ranges) == 1:
            a, b = ranges[0]
            extra = [("ETag", etag), ("Content-Range", f"bytes {a}-{b}/{len(data)}")]
            self._send(206, data[a : b + 1], extra)
            return
        body = bytearray()
        for a, b in ranges:
            body += (
                f"\r\n--{BOUNDARY}\r\nContent-Type: application/octet-stream\r\n"
                f"Content-Range: bytes {a}-{b}/{len(data)}\r\n\r\n"
            ).encode()
            body += data[a : b + 1]
        body += f"\r\n--{BOUNDARY}--\r\n".encode()
        content_type = f"multipart/byteranges; boundary={BOUNDARY}"
        self._send(206, bytes(body), [("ETag", etag), ("Content-Type", content_type)])

    def _send(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
        if not self.validators:
            headers = [h for h in headers if h[0] != "ETag"]
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@dataclass
class StrongServer:
    """A running server: its port and root."""

    server: http.server.ThreadingHTTPServer
    root: Path

    def url(self, name: str) -> str:
        """The URL of ``name`` under the root."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def stop(self) -> None:
        """Stops serving."""
        self.server.shutdown()
        self.server.server_close()


def start(root: Path, validators: bool = True) -> StrongServer:
    """Serves ``root`` on a free port of 127.0.0.1, on a thread of this process
    (``validators=False``: no ETag at all, as a server that says nothing of versions)."""
    handler = type("Handler", (_Handler,), {"root": Path(root), "validators": validators})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return StrongServer(server, Path(root))


@contextlib.contextmanager
def serving(root: Path, validators: bool = True) -> Iterator[StrongServer]:
    """:func:`start` for a ``with`` block."""
    server = start(root, validators)
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":
    import sys

    s = start(Path(sys.argv[1]))
    print(s.url(""), flush=True)
    threading.Event().wait(float(os.environ.get("SERVE_SECONDS", "3600")))
