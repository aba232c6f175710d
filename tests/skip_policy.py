"""The rule on skips, for pytest (imported by ``conftest.py``, so that a test file run
alone obeys it too): a test, or a module, that skips fails instead, unless
``tests/allowed_skips.txt`` lists it with its reason. Expected failures (``xfail``) are
not skips. The Rust tests follow the same list (``crates/rntuple/src/test_skips.rs``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ALLOW_LIST = Path(__file__).resolve().parent / "allowed_skips.txt"


def allowed_skips(path: Path | None = None) -> dict[str, str]:
    """The allow-list's pytest entries (default :data:`ALLOW_LIST`): {node id pattern:
    reason} (``rust:`` entries are the Rust tests')."""
    out = {}
    for line in (path or ALLOW_LIST).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("rust:") or "|" not in line:
            continue
        pattern, reason = line.split("|", 1)
        out[pattern.strip()] = reason.strip()
    return out


def skip_allowed(nodeid: str, allow: dict[str, str] | None = None) -> bool:
    """Whether the allow-list lets ``nodeid`` skip."""
    allow = allowed_skips() if allow is None else allow
    return any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in allow)


def _refuse(report: Any, what: str) -> None:
    """Turns a skip report into a failure saying why."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"{what} {report.nodeid} was skipped ({reason}): a skip fails the run unless "
        f"tests/allowed_skips.txt lists it with its reason"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test's skip becomes a failure unless allowed."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail") and not skip_allowed(report.nodeid):
        _refuse(report, "the test")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """A module's skip (``importorskip`` at its top, ``pytest.skip(allow_module_level=True)``)
    becomes a collection error unless allowed."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and not skip_allowed(report.nodeid):
        _refuse(report, "the module")
