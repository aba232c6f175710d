"""Python's exceptions for files that cannot be read, locally and over every remote
protocol, against real servers on loopback: nginx (``http://``, ``https://``), xrootd
(``root://``, ``roots://``), SeaweedFS (``s3://``), and plain sockets that refuse, reset,
close or never answer.

Every failure is the ``OSError`` subclass Python itself gives it, with its ``errno``:
a missing file ``FileNotFoundError`` (``ENOENT``), a refusal ``PermissionError``
(``EACCES``), a directory ``IsADirectoryError`` (``EISDIR``), a timeout ``TimeoutError``
(``ETIMEDOUT``), a refused connection ``ConnectionRefusedError`` (``ECONNREFUSED``), a
reset or closed one ``ConnectionResetError`` (``ECONNRESET``); a remote one is also a
``rntuple.RemoteError`` (an ``RNTupleError``) whose message and ``filename`` name the
URL; a TLS failure is a ``RemoteError`` of kind ``"tls"``. ``rntuple.open``,
``rntuple.iterate`` and ``rntuple.concatenate`` raise the same.

Also: ``rntuple.concatenate`` of files one of which lacks a requested field names that
file, and ``rntuple.convert_files`` reports failed files in its ``ConversionError`` only,
without a traceback from the workers.

Nothing skips but the local permission test's direct form: as root (who reads any file)
it runs its check as an unprivileged user in a user namespace instead.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import json
import os
import pickle
import shutil
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import server_http
import server_seaweedfs
import server_xrootd
from conftest import REPO_ROOT
from netutil import free_port, tried

import rntuple

EXAMPLE = REPO_ROOT / "examples" / "events.root"
#: The file every remote server holds (``examples/events.root``).
NAME = "events.root"
#: A field of it.
FIELD = "MET_pt"
#: nginx's basic-authentication user of the ``auth/`` location (its password is never sent).
AUTH_USER, AUTH_PASSWORD = "reader", "pw-0c41d9"

# ----------------------------------------------------------------------------- servers


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the servers serve: the example, and beside it ``private/`` and ``auth/``
    (nginx refuses them), ``locked.root`` (xrootd may not read it) and a directory."""
    root = tmp_path_factory.mktemp("errors_served")
    shutil.copy(EXAMPLE, root / NAME)
    for sub in ("private", "auth", "directory"):
        (root / sub).mkdir()
        shutil.copy(EXAMPLE, root / sub / NAME)
    shutil.copy(EXAMPLE, root / "locked.root")
    return root


@pytest.fixture(scope="module")
def nginx(served: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_http.Server]:
    """nginx over ``served``: ``private/`` is ``deny all`` (403), ``auth/`` needs basic
    authentication (401 without it)."""
    users = tmp_path_factory.mktemp("nginx_users") / "htpasswd"
    digest = base64.b64encode(hashlib.sha1(AUTH_PASSWORD.encode()).digest()).decode()
    users.write_text(f"{AUTH_USER}:{{SHA}}{digest}\n")
    config = (
        "location /private/ { deny all; } "
        f'location /auth/ {{ auth_basic "rntuple"; auth_basic_user_file {users}; }}'
    )
    with server_http.serving(served, server_config=config) as server:
        yield server


@pytest.fixture(scope="module")
def nginx_tls(served: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[server_http.Server]:
    """nginx serving HTTPS with a certificate of a throwaway CA nobody here trusts."""
    certificates = server_http.make_test_certificates(tmp_path_factory.mktemp("nginx_tls"))
    with server_http.serving(served, tls=certificates) as server:
        yield server


@pytest.fixture(scope="module")
def xrootd(served: Path) -> Iterator[server_xrootd.Server]:
    """xrootd over ``served``, offering TLS (its CA not trusted here); ``locked.root`` is
    made unreadable (mode 000) once it runs: xrootd answers ``kXR_NotAuthorized``."""
    server = server_xrootd.start(served, tls=True)
    locked = served / "locked.root"
    locked.chmod(0)
    try:
        yield server
    finally:
        locked.chmod(0o644)
        server.stop()


@pytest.fixture(scope="module")
def seaweedfs(served: Path) -> Iterator[server_seaweedfs.Server]:
    """SeaweedFS holding ``served`` in its bucket; it checks every request's signature."""
    server = server_seaweedfs.start(served)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No ``AWS_*`` settings, no CA overrides, no bearer token: each test sets its own."""
    for key in list(os.environ):
        if key.startswith("AWS_") or key in ("SSL_CERT_FILE", "SSL_CERT_DIR", "X509_CERT_DIR"):
            monkeypatch.delenv(key)
    for key in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "RNTUPLE_CACHE_DIR"):
        monkeypatch.delenv(key, raising=False)
    return monkeypatch


def use_s3(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """``env``'s ``AWS_*`` variables in this process's environment (the library reads them
    at each open)."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)


class Listener:
    """A TCP listener of 127.0.0.1 that accepts connections and then, by ``mode``:
    ``"silent"`` holds them open and never sends a byte; ``"reset"`` reads what comes for
    a moment and resets the connection (RST); ``"close"`` reads and closes it (FIN)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.connections = 0
        self._held: list[socket.socket] = []
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.port = int(self._socket.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._socket.accept()
            except OSError:
                return
            self.connections += 1
            if self.mode == "silent":
                self._held.append(conn)
                continue
            conn.settimeout(0.3)
            try:
                conn.recv(1 << 16)
            except OSError:
                pass
            if self.mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    def close(self) -> None:
        self._socket.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def listener(request: pytest.FixtureRequest) -> Iterator[Listener]:
    """A :class:`Listener` of the mode the test is parametrized with (``indirect``)."""
    server = Listener(request.param)
    yield server
    server.close()


def closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (connections are refused)."""
    return free_port()


def raised(call: Callable[[], Any]) -> BaseException:
    """The exception ``call`` raises (a test failure if it raises none)."""
    with pytest.raises(Exception) as info:
        call()
    return info.value


#: The three ways into a file, each made to raise: ``(name, call of a URL)``.
READERS: list[tuple[str, Callable[[str], Any]]] = [
    ("open", lambda url, **kw: rntuple.open(url, **kw)),
    ("iterate", lambda url, **kw: next(rntuple.iterate(url, [FIELD], **kw))),
    ("concatenate", lambda url, **kw: rntuple.concatenate([url], [FIELD], **kw)),
]


def assert_remote(
    err: BaseException, url: str, cls: type[OSError], code: int | None, kind: str, subclass: type
) -> None:
    """``err`` is a remote failure of ``url``: an ``OSError`` of class ``cls`` (and
    ``rntuple``'s ``subclass`` of ``RemoteError``, an ``RNTupleError``), ``errno``
    ``code``, ``kind``, a message and ``filename`` that name the URL."""
    assert isinstance(err, OSError), repr(err)
    assert isinstance(err, cls), repr(err)
    assert isinstance(err, rntuple.RemoteError) and isinstance(err, rntuple.RNTupleError), repr(err)
    assert type(err) is subclass, repr(err)
    assert err.errno == code, (err.errno, repr(err))
    assert err.kind == kind, (err.kind, repr(err))
    assert err.filename == url, (err.filename, url)
    message = str(err)
    assert message.startswith(f"remote read of {url} failed: "), message
    assert "[Errno" not in message, message


def assert_everywhere(
    url: str, cls: type[OSError], code: int | None, kind: str, subclass: type, **options: Any
) -> list[str]:
    """:func:`assert_remote` for the failure of ``url`` through ``open``, ``iterate``
    and ``concatenate`` (with ``options``); their messages."""
    messages = []
    for reader, call in READERS:
        err = raised(lambda call=call: call(url, **options))
        try:
            assert_remote(err, url, cls, code, kind, subclass)
        except AssertionError as failure:
            raise AssertionError(f"rntuple.{reader}: {failure}") from None
        messages.append(str(err))
    return messages


# ----------------------------------------------------------------------------- not found


def test_a_missing_file_is_file_not_found_over_http(nginx: server_http.Server, clean_env: Any) -> None:
    url = nginx.url("no/such/file.root")
    for message in assert_everywhere(
        url, FileNotFoundError, errno.ENOENT, "not_found", rntuple.RemoteFileNotFoundError
    ):
        assert message == f"remote read of {url} failed: opening: HTTP 404 Not Found", message
    # Not a FormatError (the file is not there, not bad), and a spec naming an RNTuple
    # is the same error.
    err = raised(lambda: rntuple.open(f"{url}:Events"))
    assert not isinstance(err, rntuple.FormatError)
    assert_remote(err, url, FileNotFoundError, errno.ENOENT, "not_found", rntuple.RemoteFileNotFoundError)


def test_a_missing_file_is_file_not_found_over_xrootd(xrootd: server_xrootd.Server, clean_env: Any) -> None:
    url = xrootd.url("no_such_file.root")
    for message in assert_everywhere(
        url, FileNotFoundError, errno.ENOENT, "not_found", rntuple.RemoteFileNotFoundError
    ):
        assert "no such file on the server (kXR_NotFound (3011)" in message, message
        assert "attempt" not in message, "not retried"


def test_a_missing_key_or_bucket_is_file_not_found_over_s3(
    seaweedfs: server_seaweedfs.Server, clean_env: pytest.MonkeyPatch
) -> None:
    use_s3(clean_env, seaweedfs.env())
    for url in (seaweedfs.url("no/such/key.root"), f"s3://no-such-bucket-3f1/{NAME}"):
        for message in assert_everywhere(
            url, FileNotFoundError, errno.ENOENT, "not_found", rntuple.RemoteFileNotFoundError
        ):
            assert message.endswith(": no such bucket or key"), message


# ----------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(("where", "status"), [("private", "403 Forbidden"), ("auth", "401 Unauthorized")])
def test_a_refused_file_is_permission_denied_over_http(
    where: str, status: str, nginx: server_http.Server, clean_env: Any
) -> None:
    url = nginx.url(f"{where}/{NAME}")
    for message in assert_everywhere(
        url, PermissionError, errno.EACCES, "permission_denied", rntuple.RemotePermissionError
    ):
        assert f"opening: access denied (HTTP {status}); no credentials were sent" in message, message
    # With the password, the same file opens (the refusal was the server's, for this URL).
    with_password = url.replace("http://", f"http://{AUTH_USER}:{AUTH_PASSWORD}@")
    if where == "auth":
        assert rntuple.open(f"{with_password}:Events").num_entries == 2000
    else:
        err = raised(lambda: rntuple.open(with_password))
        assert isinstance(err, PermissionError) and "the credentials were refused" in str(err), err
        assert AUTH_PASSWORD not in str(err) and err.filename == url.replace("http://", "http://***@")


def test_an_unreadable_file_is_permission_denied_over_xrootd(
    xrootd: server_xrootd.Server, clean_env: Any
) -> None:
    url = xrootd.url("locked.root")
    for message in assert_everywhere(
        url, PermissionError, errno.EACCES, "permission_denied", rntuple.RemotePermissionError
    ):
        assert "kXR_NotAuthorized (3010)" in message and "permission denied" in message, message
    # The other files of the server are readable: the refusal is this file's.
    assert rntuple.open(f"{xrootd.url(NAME)}:Events").num_entries == 2000


@pytest.mark.parametrize(
    ("variable", "value", "code"),
    [
        ("AWS_SECRET_ACCESS_KEY", "wrong-secret-0123456789abcdef", "SignatureDoesNotMatch"),
        ("AWS_ACCESS_KEY_ID", "UNKNOWNKEY0123456789", "InvalidAccessKeyId"),
    ],
)
def test_bad_credentials_are_permission_denied_over_s3(
    variable: str, value: str, code: str, seaweedfs: server_seaweedfs.Server, clean_env: pytest.MonkeyPatch
) -> None:
    use_s3(clean_env, {**seaweedfs.env(), variable: value})
    url = seaweedfs.url(NAME)
    for message in assert_everywhere(
        url, PermissionError, errno.EACCES, "permission_denied", rntuple.RemotePermissionError
    ):
        assert f"HTTP 403 Forbidden: {code}" in message, message
        assert seaweedfs.env()["AWS_SECRET_ACCESS_KEY"] not in message, message
        if variable == "AWS_SECRET_ACCESS_KEY":
            assert value not in message, message
    # With the server's credentials, the same object opens.
    use_s3(clean_env, seaweedfs.env())
    assert rntuple.open(f"{url}:Events").num_entries == 2000


# ----------------------------------------------------------------------------- directories


def test_a_directory_is_a_directory_over_xrootd(xrootd: server_xrootd.Server, clean_env: Any) -> None:
    url = xrootd.url("directory")
    for message in assert_everywhere(
        url, IsADirectoryError, errno.EISDIR, "is_a_directory", rntuple.RemoteIsADirectoryError
    ):
        assert "kXR_isDirectory" in message, message


# ----------------------------------------------------------------------------- connections


def remote_urls(port: int, scheme: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The URL of a file at 127.0.0.1:``port`` over ``scheme`` (for ``s3``, the endpoint
    set to that port)."""
    if scheme == "s3":
        use_s3(
            monkeypatch,
            {
                "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
                "AWS_SECRET_ACCESS_KEY": "secret-0123456789abcdef",
                "AWS_REGION": "us-east-1",
            },
        )
        return "s3://bucket/f.root"
    if scheme == "root":
        return f"root://127.0.0.1:{port}//f.root"
    return f"http://127.0.0.1:{port}/f.root"


@pytest.mark.parametrize("scheme", ["http", "root", "s3"])
def test_a_closed_port_is_connection_refused(scheme: str, clean_env: pytest.MonkeyPatch) -> None:
    url = remote_urls(closed_port(), scheme, clean_env)
    for message in assert_everywhere(
        url,
        ConnectionRefusedError,
        errno.ECONNREFUSED,
        "connection_refused",
        rntuple.RemoteConnectionRefusedError,
        retries=0,
    ):
        assert "Connection refused" in message, message
        # (the time of the one attempt, which depends on the machine's load, matched by
        # pattern)
        assert tried(message) == (1, 0) and message.endswith(" or --retries)"), message
    err = raised(lambda: rntuple.open(url, retries=0))
    assert isinstance(err, ConnectionError) and isinstance(err, rntuple.RemoteConnectionError)


@pytest.mark.parametrize("listener", ["silent"], indirect=True)
@pytest.mark.parametrize("scheme", ["http", "root", "s3"])
def test_a_server_that_never_answers_is_a_timeout(
    scheme: str, listener: Listener, clean_env: pytest.MonkeyPatch
) -> None:
    url = remote_urls(listener.port, scheme, clean_env)
    start = time.monotonic()
    messages = assert_everywhere(
        url,
        TimeoutError,
        errno.ETIMEDOUT,
        "timed_out",
        rntuple.RemoteTimeoutError,
        timeout=0.4,
        connect_timeout=0.4,
        retries=0,
    )
    took = time.monotonic() - start
    # Below the smallest default each call would wait otherwise (a connect timeout of
    # 10 s); the messages name the 0.4 s each ran into.
    assert took < 9.0, f"three timeouts of 0.4 s took {took:.1f} s"
    # XRootD's handshake is part of setting up the connection: the connect timeout.
    expected = (
        "no connection within 0.4 s (connect timeout"
        if scheme == "root"
        else "no answer within 0.4 s (first-byte timeout"
    )
    for message in messages:
        assert expected in message, message
    # One connection per call (S3's opening sends two GETs at once: two).
    assert listener.connections == (6 if scheme == "s3" else 3), listener.connections


@pytest.mark.parametrize("listener", ["reset", "close"], indirect=True)
@pytest.mark.parametrize("scheme", ["http", "root", "s3"])
def test_a_reset_or_closed_connection_is_connection_reset(
    scheme: str, listener: Listener, clean_env: pytest.MonkeyPatch
) -> None:
    url = remote_urls(listener.port, scheme, clean_env)
    for message in assert_everywhere(
        url,
        ConnectionResetError,
        errno.ECONNRESET,
        "connection_reset",
        rntuple.RemoteConnectionResetError,
        retries=0,
    ):
        said = "connection reset by peer" if listener.mode == "reset" else "connection closed"
        assert said in message.lower(), message


# ----------------------------------------------------------------------------- TLS


def assert_tls_failure(url: str) -> None:
    """Opening ``url`` fails at once (no retry) with a TLS error: a ``RemoteError`` of
    kind ``"tls"`` and of no more specific OSError subclass."""
    start = time.monotonic()
    for message in assert_everywhere(url, OSError, None, "tls", rntuple.RemoteError):
        assert "certificate" in message and "UnknownIssuer" in message, message
        assert "attempt" not in message, "a certificate that does not verify is not retried"
    # At once: not after the retries' backoff, nor a timeout (30 s by default).
    assert time.monotonic() - start < 20
    err = raised(lambda: rntuple.open(url))
    assert not isinstance(err, (FileNotFoundError, PermissionError, ConnectionError, TimeoutError)), repr(err)


def test_an_untrusted_certificate_is_a_tls_remote_error_over_https(
    nginx_tls: server_http.Server, clean_env: Any
) -> None:
    assert_tls_failure(nginx_tls.url(NAME))


def test_an_untrusted_certificate_is_a_tls_remote_error_over_xrootd(
    xrootd: server_xrootd.Server, clean_env: Any
) -> None:
    assert_tls_failure(xrootd.url(NAME, tls=True))


def test_an_untrusted_certificate_is_a_tls_remote_error_over_s3(
    nginx_tls: server_http.Server, clean_env: pytest.MonkeyPatch
) -> None:
    # An S3 endpoint over HTTPS whose certificate is not trusted: the handshake fails
    # before any S3 request.
    use_s3(
        clean_env,
        {
            "AWS_ENDPOINT_URL": f"https://127.0.0.1:{nginx_tls.port}",
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": "secret-0123456789abcdef",
            "AWS_REGION": "us-east-1",
        },
    )
    assert_tls_failure("s3://bucket/f.root")


# ----------------------------------------------------------------------------- local files


def assert_local(err: BaseException, path: Path, cls: type[OSError], code: int) -> None:
    """``err`` is the file system's failure on ``path``: the builtin class ``cls`` with
    errno ``code``, not an ``RNTupleError``, its message naming the path."""
    assert isinstance(err, cls), repr(err)
    assert not isinstance(err, rntuple.RNTupleError), repr(err)
    assert err.errno == code, (err.errno, repr(err))
    assert str(path) in str(err) and "[Errno" not in str(err), str(err)


def local_everywhere(path: Path, cls: type[OSError], code: int) -> None:
    for reader, call in READERS:
        err = raised(lambda call=call: call(str(path)))
        try:
            assert_local(err, path, cls, code)
        except AssertionError as failure:
            raise AssertionError(f"rntuple.{reader}: {failure}") from None


def test_a_missing_local_file_is_file_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "missing.root"
    local_everywhere(missing, FileNotFoundError, errno.ENOENT)
    # A glob pattern that matches nothing, too.
    err = raised(lambda: rntuple.concatenate(str(tmp_path / "none*.root"), [FIELD]))
    assert isinstance(err, FileNotFoundError) and err.errno == errno.ENOENT, repr(err)


def test_a_local_directory_is_a_directory(tmp_path: Path) -> None:
    local_everywhere(tmp_path, IsADirectoryError, errno.EISDIR)


#: Run as an unprivileged user: opening an unreadable file, printed as JSON.
PERMISSION_CHECK = """
import json, sys
import rntuple
out = {}
for reader, call in [
    ("open", lambda p: rntuple.open(p)),
    ("iterate", lambda p: next(rntuple.iterate(p, ["MET_pt"]))),
    ("concatenate", lambda p: rntuple.concatenate([p], ["MET_pt"])),
]:
    try:
        call(sys.argv[1])
        out[reader] = None
    except Exception as e:
        out[reader] = {
            "mro": [c.__name__ for c in type(e).__mro__],
            "errno": getattr(e, "errno", None),
            "message": str(e),
        }
print(json.dumps(out))
"""


def test_an_unreadable_local_file_is_permission_denied(tmp_path: Path) -> None:
    locked = tmp_path / "locked.root"
    shutil.copy(EXAMPLE, locked)
    locked.chmod(0)
    if os.geteuid() != 0:
        local_everywhere(locked, PermissionError, errno.EACCES)
        return
    # Root reads any file: the same calls as root without its capabilities (setpriv
    # empties the bounding set, so no CAP_DAC_OVERRIDE), for whom a file of mode 000 is
    # unreadable as for its owner.
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to act as root without capabilities"
    check = subprocess.run(
        [
            setpriv,
            "--bounding-set=-all",
            "--inh-caps=-all",
            sys.executable,
            "-c",
            PERMISSION_CHECK,
            str(locked),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    for reader, seen in json.loads(check.stdout).items():
        assert seen is not None, f"rntuple.{reader} read a file of mode 000"
        assert seen["mro"][:2] == ["PermissionError", "OSError"], (reader, seen)
        assert "RNTupleError" not in seen["mro"], (reader, seen)
        assert seen["errno"] == errno.EACCES, (reader, seen)
        assert str(locked) in seen["message"] and "[Errno" not in seen["message"], (reader, seen)


# ----------------------------------------------------------------------------- pickling


def test_remote_errors_survive_pickling(nginx: server_http.Server, clean_env: Any) -> None:
    """Dask hands exceptions from workers to the client pickled: class, message, errno,
    kind and URL come through."""
    url = nginx.url("no/such/file.root")
    err = raised(lambda: rntuple.open(url))
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is rntuple.RemoteFileNotFoundError
    assert (str(back), back.errno, back.kind, back.filename, back.args) == (
        str(err),
        errno.ENOENT,
        "not_found",
        url,
        err.args,
    )


# ----------------------------------------------------------------------------- chains


def test_concatenate_names_the_file_that_lacks_a_field(tmp_path: Path) -> None:
    full, partial = tmp_path / "full.root", tmp_path / "partial.root"
    with rntuple.recreate(full) as f:
        f["Events"] = {"x": np.arange(5.0), "y": np.arange(5.0)}
    with rntuple.recreate(partial) as f:
        f["Events"] = {"x": np.arange(3.0)}
    for call in (
        lambda: rntuple.concatenate([str(full), str(partial)], ["x", "y"]),
        lambda: list(rntuple.iterate([str(full), str(partial)], ["x", "y"])),
    ):
        err = raised(call)
        assert isinstance(err, rntuple.NotFoundError), repr(err)
        assert str(err) == (
            f"field 'y' is missing from 1 of 2 files ({partial}); "
            "pass allow_missing=True to read it as None there"
        ), err
        assert str(full) not in str(err)
    # Types that no one type reads (a string and a number): both files named.
    typed = tmp_path / "typed.root"
    with rntuple.recreate(typed) as f:
        f["Events"] = {"x": ["a", "b", "c"]}
    err = raised(lambda: rntuple.concatenate([str(full), str(typed)], ["x"]))
    assert isinstance(err, rntuple.IncompatibleTypeError), repr(err)
    assert f'field "x" is "double" in {full} and "std::string" in {typed}' in str(err), err


# ----------------------------------------------------------------------------- convert_files

#: Converts the files of argv[2:] into argv[1] on a local cluster of 2 worker
#: processes; prints what ``ConversionError`` reported, as JSON.
CONVERT_FILES = """
import json, sys
import distributed
import rntuple
from rntuple.dask import convert_files

if __name__ == "__main__":
    out, inputs = sys.argv[1], sys.argv[2:]
    with distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        try:
            convert_files(inputs, out, client=client)
            print(json.dumps(None))
        except rntuple.ConversionError as error:
            print(json.dumps({
                "message": str(error),
                "failures": {k: [type(e).__name__, str(e)] for k, e in error.failures.items()},
                "results": [r.input for r in error.results],
            }))
"""


def test_convert_files_reports_failures_once_without_tracebacks(tmp_path: Path) -> None:
    import uproot

    good = tmp_path / "good.root"
    with uproot.recreate(good) as f:
        tree = f.mktree("Events", {"x": "f8", "n": "i4"})
        tree.extend({"x": np.arange(100, dtype="f8"), "n": np.arange(100, dtype="i4")})
    garbage = tmp_path / "garbage.root"
    whole = good.read_bytes()
    garbage.write_bytes(whole[: len(whole) // 2])  # truncated
    missing = tmp_path / "missing.root"
    script = tmp_path / "convert_files.py"
    script.write_text(textwrap.dedent(CONVERT_FILES))
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out"), str(good), str(garbage), str(missing)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["results"] == [str(good)]
    assert list(report["failures"]) == [str(garbage), str(missing)]
    assert report["failures"][str(missing)][0] == "FileNotFoundError"
    assert report["failures"][str(garbage)][0] == "FormatError"
    assert report["message"].startswith("2 of 3 conversions failed:\n"), report["message"]
    for path, (cls, message) in report["failures"].items():
        assert f"  {path}: {cls}: {message}" in report["message"], report["message"]
    # The workers said nothing of the failures: no traceback, no "Compute Failed".
    for noise in ("Traceback", "Compute Failed", "garbage.root", "missing.root"):
        assert noise not in run.stderr, run.stderr
    assert (tmp_path / "out" / "good.root").is_file()
    assert not (tmp_path / "out" / "garbage.root").exists()
