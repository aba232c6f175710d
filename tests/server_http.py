"""nginx on loopback serving a directory over HTTP, for the remote-read tests.

``start(root_dir)`` runs nginx in the foreground (``daemon off``) with a generated
configuration in a temporary directory, on a free port of 127.0.0.1, and returns a
:class:`Server` that can give URLs, stop, kill (SIGKILL) and restart (same port, same
root). ``start(root_dir, tls=make_test_certificates(dir))`` serves HTTPS with a
certificate of a throwaway CA (trust it with ``SSL_CERT_FILE=<ca.pem>``).

nginx serves multi-range requests as ``multipart/byteranges`` by default; the access
log records each request's method, path, status, body bytes and Range header, and
:meth:`Server.requests` reads it once every request answered before is in it (nginx
writes a request's line after answering it: a settle marker, ``netutil.settled``).

Command line (serves DIR until interrupted)::

    python tests/server_http.py DIR [--max-ranges N]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netutil import MARKER, accepts, free_port, serve_until_interrupted, settled

#: Seconds to wait for nginx to accept connections or to exit.
STARTUP_TIMEOUT = 15.0
#: Fields of an access-log line, separated by tabs.
LOG_FIELDS = ("method", "path", "status", "body_bytes", "range")


def nginx_binary() -> str:
    """Path of nginx (``$NGINX`` or on PATH / in /usr/sbin)."""
    found = os.environ.get("NGINX") or shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")
    if not found:
        raise RuntimeError("nginx not found: apt-get install -y nginx (tests/run.sh does)")
    return found


@dataclass(frozen=True)
class TestCertificates:
    """A throwaway CA and a server certificate it signed for 127.0.0.1 and localhost."""

    ca: Path
    certificate: Path
    key: Path


def make_test_certificates(directory: Path) -> TestCertificates:
    """Makes a CA and a server certificate (P-256, valid 2 days) with openssl."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key, csr = directory / "server.pem", directory / "server.key", directory / "server.csr"
    extensions = directory / "server.ext"
    extensions.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl(
        "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=rntuple test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    openssl("req", *ec, "-keyout", str(key), "-out", str(csr), "-subj", "/CN=localhost")
    openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
        "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(extensions),
    )  # fmt: skip
    return TestCertificates(ca=ca, certificate=cert, key=key)


@dataclass
class Server:
    """A running (or stopped) nginx serving ``root`` on 127.0.0.1:``port``."""

    root: Path
    port: int
    workdir: Path
    max_ranges: int | None = None
    header_buffers: str = "4 64k"
    tls: TestCertificates | None = None
    #: More directives of the ``server`` block (``location /private/ { deny all; }``).
    server_config: str = ""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def access_log(self) -> Path:
        """The access log (one tab-separated line per request, see :data:`LOG_FIELDS`)."""
        return self.workdir / "access.log"

    @property
    def error_log(self) -> Path:
        """nginx's error log."""
        return self.workdir / "error.log"

    def url(self, relative_path: str) -> str:
        """The http:// (https:// with TLS) URL of ``relative_path`` under the served root."""
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}/{relative_path.lstrip('/')}"

    def logged(self) -> list[dict[str, str]]:
        """The access log's requests as it is now, oldest first (settle markers
        included; a request just answered may be missing: see :meth:`requests`)."""
        if not self.access_log.exists():
            return []
        # Whole lines only: one being written has no newline yet.
        lines = self.access_log.read_text().split("\n")[:-1]
        return [dict(zip(LOG_FIELDS, line.split("\t"), strict=True)) for line in lines if line]

    def _ask(self, path: str) -> None:
        """A GET of ``path`` (a settle marker: nginx answers 204 without a body)."""
        if self.tls:
            context = ssl.create_default_context(cafile=str(self.tls.ca))
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", self.port, timeout=30, context=context
            )
        else:
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", path)
            connection.getresponse().read()
        finally:
            connection.close()

    def requests(self) -> list[dict[str, str]]:
        """Every request answered so far, oldest first, settle markers left out: the log
        read once nginx logged them all (``netutil.settled``: a marker request asked
        after them, and the log read until it holds the marker's line; nginx's one
        worker process logs each request as it finishes answering it, in order). With
        nginx stopped, the log as it is."""
        if not self.running():
            return [r for r in self.logged() if MARKER not in r["path"]]
        return settled(self.logged, self._ask, lambda r: r["path"])

    def clear_log(self) -> None:
        """Forgets the requests answered so far: empties the access log once they are all
        in it (nginx keeps appending to the same file), so that none of them is logged
        after this."""
        if self.running():
            self.requests()
        if self.access_log.exists():
            with self.access_log.open("r+") as f:
                f.truncate(0)

    def write_config(self) -> Path:
        """Writes nginx.conf for this server; returns its path."""
        w = self.workdir
        # Worker processes of a root master run as "nobody" unless told otherwise, and
        # could not read a root-owned temporary directory.
        user = "user root root;" if os.geteuid() == 0 else ""
        max_ranges = f"max_ranges {self.max_ranges};" if self.max_ranges is not None else ""
        tls = (
            f"ssl_certificate {self.tls.certificate}; ssl_certificate_key {self.tls.key};" if self.tls else ""
        )
        temp_paths = "\n".join(
            f"    {kind}_temp_path {w / (kind + '_temp')};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        config = f"""daemon off;
worker_processes 1;
pid {w / "nginx.pid"};
error_log {self.error_log} warn;
{user}
events {{ worker_connections 256; }}
http {{
    log_format ranges '$request_method\\t$uri\\t$status\\t$body_bytes_sent\\t$http_range';
    access_log {self.access_log} ranges;
{temp_paths}
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 10000;
    # A Range header of 1024 ranges is about 20 KB; nginx's default header buffer is 8 KB.
    large_client_header_buffers {self.header_buffers};
    server {{
        listen 127.0.0.1:{self.port}{" ssl" if self.tls else ""};
        root {self.root};
        # Settle markers (netutil.settled): answered and logged, never served from root.
        location ^~ {MARKER} {{ return 204; }}
        {max_ranges}
        {tls}
        {self.server_config}
    }}
}}
"""
        path = w / "nginx.conf"
        path.write_text(config)
        return path

    def running(self) -> bool:
        """Whether the nginx master process is alive."""
        return self.process is not None and self.process.poll() is None

    def launch(self) -> None:
        """Starts nginx and waits until it accepts connections."""
        config = self.write_config()
        log = (self.workdir / "stderr.log").open("ab")
        self.process = subprocess.Popen(
            [nginx_binary(), "-p", str(self.workdir), "-c", str(config), "-e", str(self.error_log)],
            stdout=log,
            stderr=log,
            start_new_session=True,  # its own process group: kill() reaches the workers too
        )
        log.close()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                errors = self.error_log.read_text() if self.error_log.exists() else ""
                stderr = (self.workdir / "stderr.log").read_text()
                raise RuntimeError(f"nginx exited with {self.process.returncode}: {stderr}{errors}")
            if accepts(self.port):
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"nginx did not accept connections on port {self.port} within {STARTUP_TIMEOUT} s")

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass

    def _wait_port_closed(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while accepts(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        """Stops nginx (SIGTERM: fast shutdown), SIGKILL if it does not exit in time."""
        if self.process is None:
            return
        self._signal_group(signal.SIGTERM)
        try:
            self.process.wait(timeout=STARTUP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            return
        self._signal_group(signal.SIGKILL)  # any worker left behind
        self._wait_port_closed()

    def kill(self) -> None:
        """Kills nginx and its workers at once (SIGKILL to the process group)."""
        if self.process is None:
            return
        self._signal_group(signal.SIGKILL)
        try:
            self.process.wait(timeout=STARTUP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        self._wait_port_closed()

    def restart(self) -> None:
        """Stops nginx if it runs, then starts it again on the same port and root."""
        if self.running():
            self.stop()
        self.launch()


def start(
    root_dir: Path,
    *,
    max_ranges: int | None = None,
    header_buffers: str = "4 64k",
    port: int | None = None,
    tls: TestCertificates | None = None,
    server_config: str = "",
) -> Server:
    """Starts nginx serving ``root_dir`` on a free port of 127.0.0.1.

    ``max_ranges``: nginx's ``max_ranges`` (1 refuses multi-range requests: the whole
    file comes back with HTTP 200). ``header_buffers``: ``large_client_header_buffers``
    (nginx's default ``4 8k`` refuses a Range header of more than about 400 ranges).
    ``tls``: serve HTTPS with these certificates (see :func:`make_test_certificates`).
    ``server_config``: more directives of the ``server`` block, such as
    ``location /private/ { deny all; }`` (HTTP 403 there).
    """
    workdir = Path(tempfile.mkdtemp(prefix="rntuple-nginx-"))
    server = Server(
        root=Path(root_dir).resolve(),
        port=port or free_port(),
        workdir=workdir,
        max_ranges=max_ranges,
        header_buffers=header_buffers,
        tls=tls,
        server_config=server_config,
    )
    server.launch()
    return server


@contextlib.contextmanager
def serving(root_dir: Path, **options: Any) -> Iterator[Server]:
    """:func:`start` (same options) for a ``with`` block or a fixture; afterwards nginx is
    stopped, its process group killed and its working directory removed."""
    server = start(root_dir, **options)
    try:
        yield server
    finally:
        server.stop()
        server.kill()
        shutil.rmtree(server.workdir, ignore_errors=True)


def main() -> None:
    """Serves a directory until interrupted."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", type=Path)
    parser.add_argument("--max-ranges", type=int, default=None)
    args = parser.parse_args()
    server = start(args.root, max_ranges=args.max_ranges)
    print(f"serving {args.root} at {server.url('')} (logs in {server.workdir})", flush=True)

    def wait() -> None:
        while server.running():
            time.sleep(1)

    serve_until_interrupted(server.stop, wait=wait)


if __name__ == "__main__":
    main()
