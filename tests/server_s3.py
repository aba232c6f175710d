"""A real S3-compatible server on loopback for tests: moto's server, from PyPI.

``start(root_dir)`` starts moto's S3 server on 127.0.0.1, creates bucket :data:`BUCKET`
and uploads every file under ``root_dir`` into it (the key is the file's path relative to
``root_dir``), and hands back a :class:`Server`::

    server = server_s3.start(files_dir)
    try:
        env = {**os.environ, **server.env()}
        subprocess.run([rntuple, "dump", "--json", server.url("a/b.root")], env=env)
    finally:
        server.stop()

Two processes make the server, because moto keeps objects in memory only:

- the *store*: ``python -m moto.server`` on a private port, holding the objects;
- the *endpoint*: a small TCP relay (this file run as a script) on the public port that
  clients connect to, passing bytes to and from the store.

:meth:`Server.kill` SIGKILLs the endpoint, as a crashed S3 front end: every connection
is cut at once and the port refuses new ones, while the objects outlive it (as S3's do,
on disk, behind its front ends). :meth:`Server.restart` then starts a new endpoint on
the same port in a fraction of a second, with the same contents: a reader retrying
through the outage finds exactly the objects it was reading, same ETags included.
:meth:`Server.stop` ends both processes; a :meth:`Server.restart` after it starts a new
store and uploads ``root_dir`` again *before* the endpoint listens, so clients never see
a half-filled bucket (only refused connections, then every object, with its old ETag:
same bytes, uploaded the same way).
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

BUCKET = "rntuple-test"
#: moto accepts any credentials; these are the values its documentation uses.
ACCESS_KEY_ID = "testing"
SECRET_ACCESS_KEY = "testing"
REGION = "us-east-1"
#: How long a starting process may take to listen.
START_TIMEOUT_S = 60.0
#: Bytes the relay moves per read.
RELAY_CHUNK = 1 << 18


class S3Endpoint:
    """What a client of an S3 test server needs: this one's (moto) and SeaweedFS's
    (``server_seaweedfs.py``). A server class gives ``endpoint``, ``bucket`` and its
    credentials."""

    endpoint: str
    bucket: str
    access_key_id: ClassVar[str]
    secret_access_key: ClassVar[str]
    region: ClassVar[str]

    def url(self, relative_path: str | Path) -> str:
        """The ``s3://`` URL of a file of ``root_dir`` (given relative to it)."""
        return f"s3://{self.bucket}/{Path(relative_path).as_posix()}"

    def env(self) -> dict[str, str]:
        """The ``AWS_*`` environment variables a client needs to reach this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_REGION": self.region,
            "AWS_ALLOW_HTTP": "true",
        }

    def client(self) -> Any:
        """A boto3 S3 client for this server (to add, change or delete objects)."""
        return self._client(self.endpoint)

    def _client(self, endpoint: str) -> Any:
        import boto3  # here, not at the top: the relay process must start fast
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name=self.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2}),
        )


class Server(S3Endpoint):
    """A running moto server holding the files of one directory in bucket :data:`BUCKET`."""

    access_key_id = ACCESS_KEY_ID
    secret_access_key = SECRET_ACCESS_KEY
    region = REGION

    def __init__(self, root_dir: Path) -> None:
        self.root_dir = Path(root_dir)
        # Imported here: this file also runs as the relay, with `python -I` (no tests/ on
        # the module path).
        from netutil import free_port

        self.port = free_port()
        self.store_port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.bucket = BUCKET
        self._log = tempfile.NamedTemporaryFile(prefix="moto-server-", suffix=".log", delete=False)
        self._store: subprocess.Popen[bytes] | None = None
        self._relay: subprocess.Popen[bytes] | None = None
        # Whatever happens to the test, no process outlives it.
        atexit.register(self.close)

    # ------------------------------------------------------------------ what clients need

    def log_text(self) -> str:
        """What the store printed (for failure messages)."""
        return Path(self._log.name).read_text(errors="replace")

    # ------------------------------------------------------------------ life cycle

    def stop(self) -> None:
        """Stop the server (endpoint and store); its contents are gone until a restart."""
        self._relay = _end(self._relay, signal.SIGTERM)
        self._store = _end(self._store, signal.SIGTERM)

    def kill(self) -> None:
        """Kill the endpoint at once (SIGKILL), as a crash would; the objects survive."""
        self._relay = _end(self._relay, signal.SIGKILL)

    def restart(self) -> None:
        """Start the server again on the same port with the same contents."""
        self._relay = _end(self._relay, signal.SIGTERM)
        if self._store is not None and self._store.poll() is not None:
            self._store = _end(self._store, signal.SIGKILL)
        if self._store is None:
            self._start_store()
        self._start_relay()

    def close(self) -> None:
        """Kill both processes and remove the store's log (idempotent)."""
        self._relay = _end(self._relay, signal.SIGKILL)
        self._store = _end(self._store, signal.SIGKILL)
        Path(self._log.name).unlink(missing_ok=True)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ inner workings

    def _spawn(self, args: list[str], port: int, what: str) -> subprocess.Popen[bytes]:
        """Start a process that will listen on ``port``; return once it does."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        process = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{what} exited with {process.returncode}:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return process
            except OSError:
                if time.monotonic() > deadline:
                    process.kill()
                    process.wait()
                    raise RuntimeError(f"{what} did not listen within {START_TIMEOUT_S}s") from None
                time.sleep(0.02)

    def _start_store(self) -> None:
        """Start moto on the private port and fill the bucket from ``root_dir``."""
        cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.store_port)]
        self._store = self._spawn(cmd, self.store_port, "moto server")
        client = self._client(f"http://127.0.0.1:{self.store_port}")
        client.create_bucket(Bucket=self.bucket)
        for path in sorted(self.root_dir.rglob("*")):
            if path.is_file():
                client.upload_file(str(path), self.bucket, path.relative_to(self.root_dir).as_posix())

    def _start_relay(self) -> None:
        """Start the endpoint on the public port."""
        cmd = [sys.executable, "-I", "-S", __file__, str(self.port), str(self.store_port)]
        self._relay = self._spawn(cmd, self.port, "S3 endpoint relay")


def _end(process: subprocess.Popen[bytes] | None, sig: int) -> None:
    """Send ``sig`` to ``process`` if it still runs, and wait for it to end."""
    if process is not None:
        if process.poll() is None:
            process.send_signal(sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return None


def start(root_dir: Path) -> Server:
    """Start a moto S3 server on a free loopback port serving every file under ``root_dir``."""
    server = Server(root_dir)
    try:
        server.restart()
    except BaseException:
        server.close()
        raise
    return server


# ---------------------------------------------------------------------- the relay process


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy bytes from ``source`` to ``sink`` until either side closes, then close both."""
    try:
        while data := source.recv(RELAY_CHUNK):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _relay(port: int, store_port: int) -> None:
    """Accept connections on ``port`` and relay each one to the store."""
    listener = socket.create_server(("127.0.0.1", port), backlog=128)
    while True:
        client, _ = listener.accept()
        try:
            store = socket.create_connection(("127.0.0.1", store_port))
        except OSError:
            client.close()
            continue
        for pair in ((client, store), (store, client)):
            threading.Thread(target=_pump, args=pair, daemon=True).start()


if __name__ == "__main__":
    _relay(int(sys.argv[1]), int(sys.argv[2]))
