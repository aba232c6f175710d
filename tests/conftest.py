"""Shared pytest fixtures for the cross-tool (ROOT <-> rntuple) tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import server_http  # noqa: E402
import ttree_oracle  # noqa: E402
import ttreegen  # noqa: E402

# The rule on skips and CI's summary of product and oracle counts: hooks of this conftest.
from report_kinds import pytest_runtest_logreport, pytest_terminal_summary  # noqa: E402, F401
from skip_policy import pytest_make_collect_report, pytest_runtest_makereport  # noqa: E402, F401

import rootdump  # noqa: E402
import rootgen  # noqa: E402


def rntuple_bin_path() -> Path:
    """Path of the Rust CLI: ``$RNTUPLE_BIN`` or ``target/release/rntuple`` in the repo."""
    env = os.environ.get("RNTUPLE_BIN")
    path = Path(env) if env else REPO_ROOT / "target" / "release" / "rntuple"
    if not path.is_absolute():
        path = REPO_ROOT / path
    return path


def require_rntuple_bin() -> Path:
    """Return the Rust CLI binary; FAIL (not skip) the calling test if it is missing."""
    path = rntuple_bin_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(
            f"rntuple CLI binary not found or not executable at {path}. Build it with "
            "`cargo build --release` (or point RNTUPLE_BIN at it); the interop tests "
            "require `rntuple dump FILE:NAME --json`.",
            pytrace=False,
        )
    return path


def run_rntuple(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Runs ``rntuple ARGS`` (:func:`require_rntuple_bin`) in this process's environment
    plus ``env``; returns its outcome as text, whatever its exit status."""
    return subprocess.run(
        [str(require_rntuple_bin()), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def _rust_binary(env_var: str, relative: str, build: list[str]) -> Path:
    """``$ENV_VAR`` if set, else ``target/release/RELATIVE`` (in ``$CARGO_TARGET_DIR`` if
    set), built with ``cargo build --release BUILD...`` when missing. FAILS (not skips)
    the calling test if it cannot be had."""
    env = os.environ.get(env_var)
    if env:
        path = Path(env)
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO_ROOT / "target"))
        path = target / "release" / relative
    if not path.is_absolute():
        path = REPO_ROOT / path
    if not path.is_file() and not env:
        subprocess.run(
            ["cargo", "build", "--release", "-q", *build],
            cwd=REPO_ROOT,
            check=False,
            timeout=1800,
        )
    if not path.is_file():
        pytest.fail(f"{path} is missing: cargo build --release {' '.join(build)}", pytrace=False)
    return path


def rust_tool(name: str, env_var: str) -> Path:
    """A test tool of the ``rntuple-testkit`` crate (``crates/rntuple-testkit/src/bin/``):
    ``$ENV_VAR`` if set, else ``target/release/NAME`` (in ``$CARGO_TARGET_DIR`` if set),
    built with cargo when missing. FAILS (not skips) the calling test if it cannot be had."""
    return _rust_binary(env_var, name, ["-p", "rntuple-testkit", "--bin", name])


@pytest.fixture(scope="session")
def rntuple_bin() -> Callable[[], Path]:
    """A callable returning the Rust CLI binary path.

    The check runs inside the test body (not at fixture setup) so that a missing binary
    is reported as a test FAILURE with a clear message, not as a setup error or a skip.
    """
    return require_rntuple_bin


def _write_once(
    tmp_path_factory: pytest.TempPathFactory,
    directory: str,
    kind: str,
    write: Callable[[Path], dict[str, Path]],
) -> dict[str, Path]:
    """``write(DIR)``'s files ({filename: path}): DIR is ``$RNTUPLE_INTEROP_KEEP`` if set
    (the files kept afterwards), else a new temporary directory named ``directory``. Says
    how many ``kind`` files it wrote and how long that took."""
    keep = os.environ.get("RNTUPLE_INTEROP_KEEP")
    outdir = Path(keep) if keep else tmp_path_factory.mktemp(directory)
    t0 = time.perf_counter()
    paths = write(outdir)
    print(f"\n[rootgen] wrote {len(paths)} {kind}files to {outdir} in {time.perf_counter() - t0:.1f}s")
    return paths


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Write all ROOT test files once per session; returns {filename: path}.

    Set ``RNTUPLE_INTEROP_KEEP=DIR`` to write them into DIR instead (kept afterwards).
    """
    return _write_once(tmp_path_factory, "rootgen", "", rootgen.generate)


@pytest.fixture(scope="session")
def root_rendering(generated: dict[str, Path]) -> dict[str, list[dict[str, Any]]]:
    """ROOT's full reading of every generated file, rendered per the conformance rules."""
    t0 = time.perf_counter()
    out = {name: rootdump.dump(path, rootgen.NTUPLE) for name, path in generated.items()}
    print(f"\n[rootdump] rendered {len(out)} files in {time.perf_counter() - t0:.1f}s")
    return out


@pytest.fixture(scope="session")
def structures(generated: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """ROOT descriptor summary (clusters, groups, pages, compression...) per file."""
    return {name: rootgen.describe(path) for name, path in generated.items()}


@pytest.fixture(scope="session")
def generated_extra(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Write the extra ROOT test files (``rootgen.EXTRA_FILES``) once per session."""
    return _write_once(tmp_path_factory, "rootgen_extra", "extra ", rootgen.generate_extra)


@pytest.fixture(scope="session")
def root_rendering_extra(generated_extra: dict[str, Path]) -> dict[str, list[dict[str, Any]]]:
    """ROOT's full reading of every extra file (its RNTuple per ``rootgen.EXTRA_FILES``)."""
    return {
        fname: rootdump.dump(path, rootgen.EXTRA_FILES[fname][0]) for fname, path in generated_extra.items()
    }


@pytest.fixture(scope="session")
def extra_structures(generated_extra: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """ROOT descriptor details (``rootgen.describe_columns``) of every extra file."""
    return {
        fname: rootgen.describe_columns(path, rootgen.EXTRA_FILES[fname][0])
        for fname, path in generated_extra.items()
    }


def _session_shared(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory every pytest-xdist worker of this run shares (the workers' temporary
    directories' parent), or this session's own without xdist."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture(scope="session")
def ttrees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every ttreegen case, written once per run: the first xdist worker to ask writes
    them, the others wait and read the same files (``RNTUPLE_TTREE_KEEP=DIR`` keeps them
    in DIR)."""
    keep = os.environ.get("RNTUPLE_TTREE_KEEP")
    outdir = Path(keep) if keep else _session_shared(tmp_path_factory, "ttreegen")
    with rootdump._locked(outdir):
        done = outdir / "written.json"
        if done.exists() and not keep:
            return {name: Path(p) for name, p in json.loads(done.read_text()).items()}
        t0 = time.perf_counter()
        paths = ttreegen.generate(outdir)
        done.write_text(json.dumps({name: str(p) for name, p in paths.items()}))
    print(f"\n[ttreegen] wrote {len(paths)} files to {outdir} in {time.perf_counter() - t0:.1f}s")
    return paths


@pytest.fixture(scope="session")
def imported(ttrees: dict[str, Path]) -> dict[str, tuple[Path, ttree_oracle.ImportResult]]:
    """ROOT's importer run on every case (two at a time), once per run as ``ttrees``:
    ``{case: (output, result)}``."""
    outdir = next(iter(ttrees.values())).parent / "imported"

    def run(name: str) -> tuple[str, tuple[Path, ttree_oracle.ImportResult]]:
        dst = outdir / f"{name}.root"
        return name, (dst, ttree_oracle.root_import(ttrees[name], ttreegen.CASES[name].tree, dst))

    with rootdump._locked(outdir):
        done = outdir / "imported.json"
        if done.exists():
            return {
                name: (Path(dst), ttree_oracle.ImportResult(**result))
                for name, (dst, result) in json.loads(done.read_text()).items()
            }
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:
            out = dict(pool.map(run, ttreegen.CASES))
        done.write_text(json.dumps({name: (str(dst), asdict(r)) for name, (dst, r) in out.items()}))
    print(f"\n[importer] {len(out)} cases in {time.perf_counter() - t0:.1f}s")
    return out


NANOAOD_EVENTS = 20_000


@pytest.fixture(scope="session")
def nanoaod_like(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The benchmark's NanoAOD-like dataset (``bench/generate.py``: 105 fields, run,
    luminosityBlock, event, ``Jet_pt`` and ``nJet`` ...), ``NANOAOD_EVENTS`` events,
    written once per session by ROOT: ``{"rntuple": RNTuple Events by ROOT's
    RNTupleWriter, "ttree": TTree Events with NanoAOD branches}``."""
    out = tmp_path_factory.mktemp("nanoaod_like")
    subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "bench" / "generate.py"),
            "--events",
            str(NANOAOD_EVENTS),
            "--out",
            str(out),
            "--only",
            "root",
            "ttree",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return {"rntuple": out / "nanoaod_root.root", "ttree": out / "nanoaod_ttree.root"}


@pytest.fixture(scope="session")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A ``dask.distributed`` client of a local cluster of 2 worker processes, one thread
    each, their scratch space in the session's temporary directory; shared by the tests
    that run graphs on real worker processes (started once: about 5 s). Not the default
    scheduler: the tests that use it name it, the others keep dask's local one."""
    import dask
    import distributed

    scratch = str(tmp_path_factory.mktemp("dask_workers"))
    with (
        dask.config.set({"temporary-directory": scratch}),
        distributed.LocalCluster(
            n_workers=2,
            processes=True,
            threads_per_worker=1,
            dashboard_address=None,
            local_directory=scratch,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        yield c


#: Test files that take minutes, run first: with the suite spread over workers a file at
#: a time (tests/run.sh), a long file begun last would leave the other workers idle.
SLOW_FILES_FIRST = (
    "test_install.py",
    "test_writer_properties.py",
    "test_crash_recovery.py",
    "test_remote_cache.py",
    "test_convert.py",
    "test_remote_acceptance.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs the files of :data:`SLOW_FILES_FIRST` before the others (in that order)."""

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return SLOW_FILES_FIRST.index(name) if name in SLOW_FILES_FIRST else len(SLOW_FILES_FIRST)

    items.sort(key=rank)


@pytest.fixture(scope="module")
def nginx(served: Path) -> Iterator[server_http.Server]:
    """nginx on loopback serving the test module's ``served`` directory (a module whose
    files are elsewhere defines its own ``nginx``)."""
    with server_http.serving(served) as server:
        yield server
