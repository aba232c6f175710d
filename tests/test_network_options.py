"""Timeouts, the low-speed limit and retries of remote reads, as users set them: the
command's options over the ``RNTUPLE_*`` environment variables over the defaults, and
Python's ``timeout=``, ``connect_timeout=``, ``speed_limit=``, ``speed_time=`` and
``retries=`` on ``open``, ``iterate``, ``concatenate`` and ``dask`` (carried to the
workers in the graph).

The server is a loopback HTTP server that serves ``examples/events.root`` whole (a small
file: opening reads it in one request) until it is told to go silent (from then on it
accepts connections and never answers) or to crawl (it sends its headers at once, then
a byte a second). Every test takes a second or two, but those of the crawl, which
measure the default limit (a minute at most, as the issue asks; about 10 s an attempt).

Nothing here needs an idle machine: the seconds a message says the attempts took are
matched by pattern (``netutil.tried``), never compared; a timeout that must cut a wait
short is checked against a bound of :data:`BOUND` seconds, half of the 30 s default it
replaces (tens of times the timeouts under test, so a loaded machine cannot reach it).
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from netutil import tried

import rntuple

EXAMPLE = REPO_ROOT / "examples" / "events.root"
#: Seconds within which a timeout of at most 0.5 s (and its retries) must have ended a
#: wait on a silent server: half of the default first-byte timeout of 30 s that would
#: otherwise end it.
BOUND = 15.0


class Server:
    """Serves ``data`` at any path (HTTP/1.1, the whole file, HTTP 200) until
    ``silent`` is set; counts connections."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.silent = False
        self.crawl = False
        #: Set: a crawling answer is cut (its connection closed).
        self.cut = False
        self.connections = 0
        self._held: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str = "/events.root") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.silent:
                self._held.append(conn)  # never answered, kept open
            else:
                threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            request = b""
            while not request.endswith(b"\r\n\r\n"):
                chunk = conn.recv(4096)
                if not chunk:
                    return
                request += chunk
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.data)}\r\n"
                'ETag: "e1"\r\nConnection: close\r\n\r\n'
            )
            if not self.crawl:
                conn.sendall(head.encode() + self.data)
                return
            conn.sendall(head.encode())
            for byte in self.data:
                time.sleep(1)
                if self.cut:
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self._listener.close()
        for conn in self._held:
            conn.close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server(EXAMPLE.read_bytes())
    yield s
    s.close()


@pytest.fixture
def silent(server: Server) -> Server:
    server.silent = True
    return server


def timed(call: Callable[[], object]) -> tuple[BaseException, float]:
    """The exception ``call`` raises, and the seconds until it did."""
    start = time.perf_counter()
    with pytest.raises(Exception) as info:
        call()
    return info.value, time.perf_counter() - start


# -- Python ---------------------------------------------------------------------------


def test_open_gives_up_on_a_silent_server_within_the_timeout(silent: Server) -> None:
    err, took = timed(lambda: rntuple.open(silent.url(), timeout=0.5, retries=0))
    assert isinstance(err, rntuple.RemoteError) and isinstance(err, OSError), repr(err)
    assert 0.5 <= took < BOUND, took
    message = str(err)
    assert "no answer within 0.5 s (first-byte timeout" in message, message
    assert message.endswith(" s (0 retries, RNTUPLE_RETRIES or --retries)"), message
    assert tried(message) == (1, 0), message
    assert silent.connections == 1

    err, took = timed(lambda: rntuple.open(silent.url() + ":Events", timeout=0.3, retries=2))
    assert 1.2 <= took < BOUND, took  # three waits, backoffs of 0.1 and 0.2 s
    assert tried(str(err)) == (3, 2), err
    assert silent.connections == 4


def test_iterate_and_concatenate_take_the_options(silent: Server) -> None:
    spec = silent.url() + ":Events"
    err, took = timed(lambda: next(rntuple.iterate(spec, ["MET_pt"], timeout=0.4, retries=0)))
    assert isinstance(err, rntuple.RemoteError) and 0.4 <= took < BOUND, (err, took)
    assert "no answer within 0.4 s" in str(err) and tried(str(err)) == (1, 0), err
    err, took = timed(lambda: rntuple.concatenate([spec], ["MET_pt"], timeout=0.4, retries=0))
    assert isinstance(err, rntuple.RemoteError) and 0.4 <= took < BOUND, (err, took)
    assert "no answer within 0.4 s" in str(err) and tried(str(err)) == (1, 0), err


def test_the_options_travel_to_dask_workers(server: Server) -> None:
    import dask

    spec = server.url() + ":Events"
    array = rntuple.dask(spec, ["MET_pt"], timeout=0.5, retries=0, speed_limit=100, speed_time=5)
    (reader,) = {layer.io_func for layer in array.dask.layers.values() if hasattr(layer, "io_func")}
    assert reader.network == {"timeout": 0.5, "retries": 0, "speed_limit": 100, "speed_time": 5}
    assert pickle.loads(pickle.dumps(reader)).network == reader.network
    # The graph opened the file; the worker opens it again, and the server is silent.
    server.silent = True
    err, took = timed(lambda: dask.compute(array, scheduler="sync"))
    # The worker's own open waited 0.5 s, once: the message names the timeout it ran
    # into and the attempts (the default would be 30 s, and four attempts).
    assert isinstance(err, rntuple.RemoteError) and 0.5 <= took < BOUND, (err, took)
    assert "no answer within 0.5 s (first-byte timeout" in str(err), err
    assert tried(str(err)) == (1, 0), err


def test_remote_reads_work_with_the_options(server: Server) -> None:
    nt = rntuple.open(server.url() + ":Events", timeout=5, connect_timeout=2.5, retries=1)
    local = rntuple.open(f"{EXAMPLE}:Events")
    assert nt.num_entries == local.num_entries == 2000
    assert nt.arrays(["MET_pt"]).MET_pt.tolist() == local.arrays(["MET_pt"]).MET_pt.tolist()


def test_two_files_read_with_their_own_read_ahead(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bunch_bytes=`` and ``read_ahead_bytes=`` reach the reader of the file opened with
    them, and only that one: two files in one process, each with its own; without the
    keywords, the environment's (``RNTUPLE_BUNCH_BYTES``, ``RNTUPLE_READ_AHEAD_BYTES``),
    else the defaults."""
    monkeypatch.delenv("RNTUPLE_BUNCH_BYTES", raising=False)
    monkeypatch.delenv("RNTUPLE_READ_AHEAD_BYTES", raising=False)
    small = rntuple.open(server.url() + ":Events", bunch_bytes=64 << 10, read_ahead_bytes=1 << 20)
    default = rntuple.open(f"{EXAMPLE}:Events")
    assert small._reader.read_ahead() == (64 << 10, 1 << 20)
    assert default._reader.read_ahead() == (None, 512 << 20)
    assert small.arrays(["MET_pt"]).MET_pt.tolist() == default.arrays(["MET_pt"]).MET_pt.tolist()
    # The variables keep working, and a keyword overrides them.
    monkeypatch.setenv("RNTUPLE_BUNCH_BYTES", "2 MiB")
    monkeypatch.setenv("RNTUPLE_READ_AHEAD_BYTES", "8 MiB")
    assert rntuple.open(f"{EXAMPLE}:Events")._reader.read_ahead() == (2 << 20, 8 << 20)
    assert rntuple.open(f"{EXAMPLE}:Events", bunch_bytes=4096)._reader.read_ahead() == (4096, 8 << 20)
    for arguments in ({"bunch_bytes": 0}, {"read_ahead_bytes": -1}, {"bunch_bytes": 1.5}):
        (name,) = arguments
        with pytest.raises(rntuple.InvalidArgumentError, match=f"^{name} must be"):
            rntuple.open(f"{EXAMPLE}:Events", **arguments)


#: The default low-speed limit, as every message of it says.
DEFAULT_LOW_SPEED = (
    "fewer than 1024 bytes a second arrived over 10 s (low-speed limit, RNTUPLE_SPEED_LIMIT and "
    "RNTUPLE_SPEED_TIME or --speed-limit and --speed-time)"
)


@pytest.fixture
def crawling(server: Server) -> Server:
    server.crawl = True
    return server


def test_open_gives_up_on_a_crawling_server_within_the_default_limit(crawling: Server) -> None:
    # Headers at once, then a byte a second: no wait runs into the 3 s timeouts.
    err, took = timed(lambda: rntuple.open(crawling.url(), timeout=3, retries=0))
    assert isinstance(err, rntuple.RemoteTimeoutError), repr(err)
    message = str(err)
    assert (
        f"remote read of {crawling.url()} failed: opening: reading the reply: {DEFAULT_LOW_SPEED}" in message
    )
    assert tried(message) == (1, 0), message
    assert took < 60, took
    assert crawling.connections == 1


def test_the_speed_options_are_taken_and_checked(crawling: Server) -> None:
    err, took = timed(lambda: rntuple.open(crawling.url(), speed_limit=100, speed_time=1.5, retries=0))
    assert isinstance(err, rntuple.RemoteTimeoutError), repr(err)
    assert "fewer than 100 bytes a second arrived over 1.5 s (low-speed limit" in str(err), err
    assert took < 30, took
    # No limit: the crawl goes on, until the server cuts it.
    outcome: list[BaseException | object] = []

    def crawl_without_limit() -> None:
        try:
            outcome.append(rntuple.open(crawling.url(), speed_limit=0, retries=0))
        except rntuple.RemoteError as e:
            outcome.append(e)

    opener = threading.Thread(target=crawl_without_limit, daemon=True)
    opener.start()
    opener.join(3)
    assert opener.is_alive() and not outcome, "a crawl without a limit is not given up"
    crawling.cut = True
    opener.join(15)
    assert not opener.is_alive()
    assert isinstance(outcome[0], rntuple.RemoteError) and "low-speed" not in str(outcome[0]), outcome


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"speed_limit": -1}, "speed_limit"),
        ({"speed_limit": 1.5}, "speed_limit"),
        ({"speed_limit": "1 KiB"}, "speed_limit"),
        ({"speed_time": 0}, "speed_time"),
        ({"speed_time": 86401}, "speed_time"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.5}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"timeout": 90000}, "timeout"),
        ({"timeout": "5"}, "timeout"),
        ({"timeout": True}, "timeout"),
        ({"connect_timeout": 0.0}, "connect_timeout"),
        ({"connect_timeout": [1]}, "connect_timeout"),
        ({"retries": -1}, "retries"),
        ({"retries": 1.5}, "retries"),
        ({"retries": False}, "retries"),
    ],
)
def test_bad_arguments_name_themselves(arguments: dict[str, object], named: str) -> None:
    # Checked before anything is opened: the file need not exist.
    for call in (
        lambda: rntuple.open("http://127.0.0.1:9/none.root", **arguments),
        lambda: next(rntuple.iterate("http://127.0.0.1:9/none.root:Events", **arguments)),
        lambda: rntuple.concatenate("http://127.0.0.1:9/none.root:Events", **arguments),
    ):
        with pytest.raises(rntuple.InvalidArgumentError, match=f"^{named} must be"):
            call()


# -- the command ------------------------------------------------------------------------


def cli(
    rntuple_bin: Callable[[], Path], args: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Runs the command with ``env`` over an environment without ``RNTUPLE_*``
    variables; its result and the seconds it took."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RNTUPLE_") or k == "RNTUPLE_BIN"}
    start = time.perf_counter()
    result = subprocess.run(
        [str(rntuple_bin()), *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=60,
        check=False,
    )
    return result, time.perf_counter() - start


def test_cli_options_override_the_environment_which_overrides_the_defaults(
    rntuple_bin: Callable[[], Path], silent: Server
) -> None:
    url = silent.url()
    cases = [
        # (options, environment, first-byte timeout in the message, (attempts, retries))
        (["--first-byte-timeout", "0.3", "--retries", "0"], {}, "0.3 s", (1, 0)),
        ([], {"RNTUPLE_FIRST_BYTE_TIMEOUT": "0.4", "RNTUPLE_RETRIES": "1"}, "0.4 s", (2, 1)),
        (
            ["--first-byte-timeout", "0.3", "--retries", "0"],
            {"RNTUPLE_FIRST_BYTE_TIMEOUT": "0.4", "RNTUPLE_RETRIES": "1"},
            "0.3 s",
            (1, 0),
        ),
        (["--retries", "0"], {"RNTUPLE_FIRST_BYTE_TIMEOUT": "0.2"}, "0.2 s", (1, 0)),
        # A bad variable that an option overrides is not read.
        (
            ["--first-byte-timeout", "0.2", "--retries", "0"],
            {"RNTUPLE_RETRIES": "many"},
            "0.2 s",
            (1, 0),
        ),
    ]
    for options, env, timeout, attempts in cases:
        # The options are global: before or after the command.
        for args in ([*options, "info", url], ["info", url, *options]):
            result, took = cli(rntuple_bin, args, env)
            assert result.returncode == 1, (args, env, result.stderr)
            assert (
                f"no answer within {timeout} (first-byte timeout, RNTUPLE_FIRST_BYTE_TIMEOUT" in result.stderr
            ), (
                args,
                env,
                result.stderr,
            )
            assert tried(result.stderr) == attempts, (args, env, result.stderr)
            assert took < BOUND, (args, env, took)


def test_cli_gives_up_on_a_crawling_server_within_the_default_limit(
    rntuple_bin: Callable[[], Path], crawling: Server
) -> None:
    args = ["info", crawling.url(), "--idle-timeout", "3", "--first-byte-timeout", "3", "--retries", "1"]
    result, took = cli(rntuple_bin, args)
    assert result.returncode == 1, result.stderr
    assert f"opening: reading the reply: {DEFAULT_LOW_SPEED}; 2 attempts over " in result.stderr, (
        result.stderr
    )
    assert result.stderr.rstrip().endswith(" s (1 retry, RNTUPLE_RETRIES or --retries)"), result.stderr
    assert tried(result.stderr) == (2, 1), result.stderr
    assert took < 60, took
    # The options and variables set it.
    for options, env in (
        (["--speed-limit", "2KiB", "--speed-time", "1.5"], {}),
        ([], {"RNTUPLE_SPEED_LIMIT": "2 KiB", "RNTUPLE_SPEED_TIME": "1.5"}),
    ):
        result, took = cli(rntuple_bin, ["info", crawling.url(), "--retries", "0", *options], env)
        assert result.returncode == 1, result.stderr
        assert "fewer than 2048 bytes a second arrived over 1.5 s (low-speed limit" in result.stderr, (
            result.stderr
        )
        assert took < 30, took


def test_cli_refused_connections_name_the_attempts(rntuple_bin: Callable[[], Path]) -> None:
    # A port nobody listens on: refused at once, so the retries are what is counted.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result, _ = cli(rntuple_bin, ["info", f"root://127.0.0.1:{port}//f.root", "--retries", "2"])
    assert result.returncode == 1
    assert "refused" in result.stderr.lower(), result.stderr
    assert tried(result.stderr) == (3, 2), result.stderr


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--connect-timeout", "0"], {}, "--connect-timeout"),
        (["--first-byte-timeout", "soon"], {}, "--first-byte-timeout"),
        (["--idle-timeout", "-3"], {}, "--idle-timeout"),
        (["--idle-timeout", "86401"], {}, "--idle-timeout"),
        (["--retries", "-1"], {}, "--retries"),
        (["--retries", "2.5"], {}, "--retries"),
        ([], {"RNTUPLE_IDLE_TIMEOUT": "soon"}, "RNTUPLE_IDLE_TIMEOUT"),
        ([], {"RNTUPLE_RETRIES": "-2"}, "RNTUPLE_RETRIES"),
        ([], {"RNTUPLE_CONNECT_TIMEOUT": "0"}, "RNTUPLE_CONNECT_TIMEOUT"),
        (["--speed-limit", "fast"], {}, "--speed-limit"),
        (["--speed-limit", "-5"], {}, "--speed-limit"),
        (["--speed-time", "0"], {}, "--speed-time"),
        ([], {"RNTUPLE_SPEED_LIMIT": "1.5.2"}, "RNTUPLE_SPEED_LIMIT"),
        ([], {"RNTUPLE_SPEED_TIME": "-1"}, "RNTUPLE_SPEED_TIME"),
    ],
)
def test_cli_bad_values_exit_2_naming_the_option(
    rntuple_bin: Callable[[], Path], args: list[str], env: dict[str, str], named: str
) -> None:
    result, _ = cli(rntuple_bin, ["info", str(EXAMPLE), *args], env)
    assert result.returncode == 2, (args, env, result.returncode, result.stderr)
    assert named in result.stderr, result.stderr
    assert result.stdout == ""


def test_cli_help_documents_the_options(rntuple_bin: Callable[[], Path]) -> None:
    for args in (["--help"], ["dump", "--help"]):
        result, _ = cli(rntuple_bin, args)
        for option, variable, default in [
            ("--connect-timeout <SECS>", "RNTUPLE_CONNECT_TIMEOUT", "default: 10"),
            ("--first-byte-timeout <SECS>", "RNTUPLE_FIRST_BYTE_TIMEOUT", "default: 30"),
            ("--idle-timeout <SECS>", "RNTUPLE_IDLE_TIMEOUT", "default: 30"),
            ("--retries <N>", "RNTUPLE_RETRIES", "default: 3"),
            ("--speed-limit <BYTES>", "RNTUPLE_SPEED_LIMIT", "default: 1024"),
            ("--speed-time <SECS>", "RNTUPLE_SPEED_TIME", "default: 10"),
        ]:
            assert option in result.stdout and variable in result.stdout and default in result.stdout, (
                args,
                option,
            )
