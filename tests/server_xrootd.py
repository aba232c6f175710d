"""An XRootD server (Debian's ``xrootd-server``) on loopback serving a directory, for the
remote-read tests.

``start(root_dir)`` runs ``xrootd`` in the foreground with a generated configuration in a
temporary directory, on a free port, exporting ``root_dir`` read only with no security
library (anonymous access), and returns a :class:`Server` that gives URLs, stops, kills
(SIGKILL) and restarts (same port, same root). A server that fails to start is tried
again on another port, up to ``STARTUP_ATTEMPTS`` launches in all, each failure printed.
Only clients of this host are admitted (``xrd.allow host localhost``).

``start(root_dir, tls=True)`` also offers TLS (``roots://``) with a certificate for
127.0.0.1 signed by a CA made for the server (``openssl``); clients trust it through
``Server.env()`` (``SSL_CERT_FILE``). ``auth=["unix"]`` makes the server require
authentication (``sec.protocol unix``).

xrootd refuses to run as root. When the tests run as root, the server runs in a user
namespace (``unshare``) that maps root to ``nobody``: xrootd sees a non-root user while
its file access stays that of root, so ``root_dir`` needs no permission changes. Where
user namespaces are not allowed, xrootd switches to the ``xrootd`` (or ``nobody``) user
itself (``-R``); ``root_dir`` and its parents must then be readable by that user, which
``start`` arranges by adding the read/traverse permission for others.

Command line (serves DIR until interrupted)::

    python tests/server_xrootd.py DIR
"""

from __future__ import annotations

import argparse
import atexit
import functools
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from netutil import accepts, free_port, serve_until_interrupted

#: Seconds to wait for xrootd to accept connections or to exit.
STARTUP_TIMEOUT = 20.0
#: Launches, each on a new free port, before ``start`` gives up.
STARTUP_ATTEMPTS = 3
#: The user xrootd runs as when started as root.
UNPRIVILEGED_UID = 65534

_running: set[Server] = set()


def xrootd_binary() -> str:
    """Path of xrootd (``$XROOTD`` or on PATH / in /usr/bin)."""
    found = (
        os.environ.get("XROOTD")
        or shutil.which("xrootd")
        or shutil.which("xrootd", path="/usr/bin:/usr/sbin")
    )
    if not found:
        raise RuntimeError("xrootd not found: apt-get install -y xrootd-server (tests/run.sh does)")
    return found


@functools.cache
def _user_namespaces_work() -> bool:
    """Whether ``unshare`` can run a command as ``nobody`` in a user namespace."""
    unshare = shutil.which("unshare")
    if not unshare:
        return False
    probe = subprocess.run(
        [unshare, "-U", f"--map-user={UNPRIVILEGED_UID}", f"--map-group={UNPRIVILEGED_UID}", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def _drop_user() -> str:
    """The account xrootd switches to with ``-R`` when user namespaces are unavailable."""
    for name in ("xrootd", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("no unprivileged account (xrootd, nobody) for xrootd to run as")


def _open_for_others(root: Path) -> None:
    """Lets other users traverse ``root``'s parents and read everything below it."""
    for parent in [root, *root.parents]:
        mode = parent.stat().st_mode
        parent.chmod(mode | stat.S_IXOTH)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = Path(dirpath, d)
            p.chmod(p.stat().st_mode | stat.S_IROTH | stat.S_IXOTH)
        for f in filenames:
            p = Path(dirpath, f)
            p.chmod(p.stat().st_mode | stat.S_IROTH)
    root.chmod(root.stat().st_mode | stat.S_IROTH | stat.S_IXOTH)


@dataclass(eq=False)
class Server:
    """A running (or stopped) xrootd serving ``root`` on port ``port`` of 127.0.0.1."""

    root: Path
    port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = None
    extra_config: list[str] = field(default_factory=list)
    tls: bool = False
    auth: list[str] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.workdir / "xrootd.log"

    @property
    def ca_file(self) -> Path:
        """The CA certificate that signed the server's TLS certificate (``tls=True``)."""
        return self.workdir / "tls" / "ca.pem"

    def url(self, relative_path: str, tls: bool = False) -> str:
        """The ``root://`` (``roots://`` with ``tls``) URL of ``relative_path`` (relative to
        the served root)."""
        scheme = "roots" if tls else "root"
        return f"{scheme}://127.0.0.1:{self.port}//{relative_path.lstrip('/')}"

    def env(self) -> dict[str, str]:
        """The environment a client needs: the CA to trust when TLS is on."""
        return {"SSL_CERT_FILE": str(self.ca_file)} if self.tls else {}

    def log(self) -> str:
        """What the server logged so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def _command(self) -> list[str]:
        config = self.workdir / "xrootd.cfg"
        admin = self.workdir / "admin"
        admin.mkdir(exist_ok=True)
        lines = [
            f"xrd.port {self.port}",
            "xrd.allow host localhost",
            "xrd.trace off",
            "all.export / readonly",
            f"oss.localroot {self.root}",
            f"all.adminpath {admin}",
            f"all.pidpath {admin}",
        ]
        if self.tls:
            cert, key = make_certificates(self.workdir / "tls")
            lines += [f"xrd.tls {cert} {key}", f"xrd.tlsca certfile {self.ca_file}"]
        if self.auth:
            lines.append("xrootd.seclib libXrdSec.so")
            lines += [f"sec.protocol {protocol}" for protocol in self.auth]
        lines += self.extra_config
        config.write_text("\n".join(lines) + "\n")
        command = [xrootd_binary(), "-c", str(config), "-l", str(self.log_path)]
        if os.geteuid() != 0:
            return command
        if _user_namespaces_work():
            return [
                "unshare",
                "-U",
                f"--map-user={UNPRIVILEGED_UID}",
                f"--map-group={UNPRIVILEGED_UID}",
                *command,
            ]
        user = _drop_user()
        _open_for_others(self.root)
        # The work directory must be the user's (admin files, log, TLS key).
        for dirpath, _, filenames in os.walk(self.workdir):
            shutil.chown(dirpath, user=user)
            for f in filenames:
                shutil.chown(Path(dirpath, f), user=user)
        return [*command, "-R", user]

    def _launch(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        # `unshare` execs xrootd: the pid is xrootd's, so signals reach it directly.
        self.process = subprocess.Popen(
            self._command(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _running.add(self)
        while time.monotonic() < deadline:
            status = self.process.poll()
            if status is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                self.process = None
                # The status tells a signal (negative) from an error exit when xrootd died
                # before writing anything (seen once in CI, not reproduced).
                raise RuntimeError(
                    f"xrootd exited at start-up with status {status} (port {self.port}): {err}\n"
                    f"{self.log()[-3000:]}"
                )
            if accepts(self.port):
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(
            f"xrootd did not accept connections within {STARTUP_TIMEOUT} s:\n{self.log()[-3000:]}"
        )

    def stop(self) -> None:
        """Stops the server (SIGTERM, then SIGKILL) and removes its work directory."""
        self._terminate(signal.SIGTERM)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def kill(self) -> None:
        """Kills the server at once (SIGKILL), as a crash would; ``restart`` brings it back."""
        self._terminate(signal.SIGKILL)

    def restart(self) -> None:
        """Starts the server again on the same port, serving the same directory."""
        self._terminate(signal.SIGTERM)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            try:
                self._launch()
                return
            except RuntimeError:
                # The port may still be held for a moment after a kill.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _terminate(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        _running.discard(self)
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()


def make_certificates(directory: Path) -> tuple[Path, Path]:
    """A CA (``ca.pem``) and a server certificate for 127.0.0.1 and localhost signed by
    it, in ``directory`` (made once); returns the certificate and key paths."""
    cert, key = directory / "server.pem", directory / "server.key"
    if cert.is_file() and key.is_file():
        return cert, key
    openssl = shutil.which("openssl")
    if not openssl:
        raise RuntimeError("openssl not found: apt-get install -y openssl (tests/run.sh does)")
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, csr, ext = directory / "ca.key", directory / "server.csr", directory / "server.ext"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    ca = directory / "ca.pem"
    ca_subject = ["-subj", "/CN=rntuple test CA", "-addext", "basicConstraints=critical,CA:TRUE"]
    signed = ["-out", cert, "-days", "2", "-extfile", ext]
    steps = [
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            ca_key,
            "-out",
            ca,
            "-days",
            "2",
            *ca_subject,
        ],
        ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", *signed],
    ]
    for step in steps:
        subprocess.run([openssl, *map(str, step)], capture_output=True, check=True)
    return cert, key


def start(
    root_dir: Path, *, tls: bool = False, auth: list[str] | None = None, extra_config: list[str] | None = None
) -> Server:
    """Starts xrootd serving ``root_dir`` on a free port of 127.0.0.1 (see the module doc).

    ``tls``: also offer TLS (``roots://``); ``auth``: security protocols the server requires
    (``["unix"]``); ``extra_config``: more configuration lines.
    """
    root = Path(root_dir).resolve()
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    failures: list[str] = []
    for _ in range(STARTUP_ATTEMPTS):
        workdir = Path(tempfile.mkdtemp(prefix="rntuple-xrootd-"))
        server = Server(
            root=root,
            port=free_port(),
            workdir=workdir,
            extra_config=list(extra_config or []),
            tls=tls,
            auth=list(auth or []),
        )
        try:
            server._launch()
        except RuntimeError as e:
            server.stop()
            # The free port may have been taken between the probe and xrootd's bind:
            # another port, and the failure stays on record.
            failures.append(str(e))
            print(f"xrootd start-up attempt {len(failures)} failed: {e}", file=sys.stderr)
            continue
        except BaseException:
            server.stop()
            raise
        return server
    raise RuntimeError(f"xrootd failed to start {STARTUP_ATTEMPTS} times:\n" + "\n".join(failures))


@atexit.register
def _stop_all() -> None:
    """Stops servers a crashed or interrupted test left behind."""
    for server in list(_running):
        server.stop()


def main() -> None:
    """Serves a directory until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    args = parser.parse_args()
    server = start(args.root)
    print(f"serving {server.root} at {server.url('')} (log {server.log_path})", flush=True)
    serve_until_interrupted(server.stop)


if __name__ == "__main__":
    main()
