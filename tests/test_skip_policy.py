"""The rule on skips (``skip_policy.py``) and CI's summary (``report_kinds.py``), run on a
small test suite of their own in a pytest subprocess: a skip fails unless the allow-list
names it, an expected failure is not a skip, a module that skips at import fails, and the
summary counts product tests apart from oracle checks."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import report_kinds
import skip_policy

TESTS_DIR = Path(__file__).resolve().parent

SUITE = {
    "test_a.py": """
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_skips_without_leave():
    pytest.skip("no server here")

def test_skips_with_leave():
    pytest.skip("a listed reason")

@pytest.mark.xfail(strict=True, reason="a known bug")
def test_known_bug():
    assert 1 + 1 == 3
""",
    "test_b.py": """
import pytest
pytest.importorskip("no_such_module_anywhere")

def test_never_collected():
    pass
""",
}


def test_a_skip_fails_unless_listed(tmp_path: Path) -> None:
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    allow = tmp_path / "allowed.txt"
    allow.write_text("# comment\nrust: x::y | a Rust test\ntest_a.py::test_skips_with_leave | listed reason")
    (tmp_path / "conftest.py").write_text(
        f"import sys\nfrom pathlib import Path\nsys.path.insert(0, {str(TESTS_DIR)!r})\n"
        "import skip_policy\n"
        f"skip_policy.ALLOW_LIST = Path({str(allow)!r})\n"
        "from skip_policy import pytest_make_collect_report, pytest_runtest_makereport\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-rA",
            "--continue-on-collection-errors",
            ".",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    out = run.stdout
    assert run.returncode == 1, out
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 1 error" in out, out
    assert "FAILED test_a.py::test_skips_without_leave" in out, out
    assert "was skipped (Skipped: no server here): a skip fails the run unless tests/allowed_skips.txt" in out
    assert "ERROR test_b.py" in out and "no_such_module_anywhere" in out, out
    assert skip_policy.allowed_skips(allow) == {"test_a.py::test_skips_with_leave": "listed reason"}


def test_the_repository_allow_list_is_short_and_gives_reasons() -> None:
    entries = [
        line
        for line in skip_policy.ALLOW_LIST.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(entries) <= 10
    assert all(len(line.split("|", 1)[1].strip()) > 20 for line in entries), entries


def test_the_summary_counts_product_and_oracle_apart() -> None:
    counts = Counter({("product", "passed"): 7, ("product", "failed"): 1})
    counts.update({("oracle", "passed"): 3, ("oracle", "xfailed"): 2})
    assert report_kinds.summary(counts) == (
        "product tests: 7 passed, 1 failed; oracle and harness checks: 3 passed, 2 xfailed"
    )
    assert report_kinds.kind("tests/test_ttree_oracle.py::test_fixture_layout") == "oracle"
    assert report_kinds.kind("tests/test_evolution.py::test_root_outcome[a-b]") == "oracle"
    assert report_kinds.kind("tests/test_evolution.py::test_evolution[a-b]") == "product"
