"""The conformance data is found relative to the repository (``../shared``) or through
``$RNTUPLE_CONFORMANCE_DIR`` (``conformance_data.py``), and a test needing it FAILS, with
a message naming the folder, when it is missing or empty: never skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import conformance_data
import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent

#: A test module parametrized by the conformance cases, as the real ones are.
PROBE = """
import conformance_data
import pytest


@pytest.mark.parametrize("case", conformance_data.cases())
def test_case(case):
    assert conformance_data.write_file(case).is_file()


def test_folder():
    assert conformance_data.require().is_dir()
"""


def test_found_beside_the_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(conformance_data.ENV, raising=False)
    expected = REPO_ROOT.parent / "shared" / "conformance" / "rntuple-validation-1.0"
    assert conformance_data.root() == expected
    assert conformance_data.problem() is None, conformance_data.problem()
    cases = conformance_data.cases()
    assert len(cases) == 51 and conformance_data.MISSING not in cases
    assert conformance_data.write_file("types.string") == expected / "write" / "types.string.root"
    assert conformance_data.read_file("types.string").is_file()


def test_the_override_is_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "write").mkdir()
    (tmp_path / "read").mkdir()
    (tmp_path / "write" / "a.root").write_bytes(b"")
    (tmp_path / "read" / "a.json").write_text("[]")
    monkeypatch.setenv(conformance_data.ENV, str(tmp_path))
    assert conformance_data.root() == tmp_path
    assert conformance_data.cases() == ["a"]
    assert conformance_data.write_file("a") == tmp_path / "write" / "a.root"


@pytest.mark.parametrize("layout", ["nonexistent", "empty", "no-read-folder"])
def test_missing_data_fails_the_calling_test(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, layout: str
) -> None:
    folder = tmp_path / "conformance"
    if layout != "nonexistent":
        (folder / "write").mkdir(parents=True)
        (folder / "read").mkdir()
    if layout == "no-read-folder":
        (folder / "write" / "a.root").write_bytes(b"")
        (folder / "read").rmdir()
    monkeypatch.setenv(conformance_data.ENV, str(folder))
    assert conformance_data.cases() == [conformance_data.MISSING]
    for call in (
        conformance_data.require,
        lambda: conformance_data.write_file(conformance_data.MISSING),
        lambda: conformance_data.read_file("a"),
    ):
        with pytest.raises(pytest.fail.Exception, match="conformance data missing") as failure:
            call()
        assert str(folder) in str(failure.value)
        assert "../shared/conformance/rntuple-validation-1.0" in str(failure.value)


def run_pytest(args: list[str], nowhere: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, conformance_data.ENV: str(nowhere)}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=False,
    )


def test_a_pytest_run_without_the_data_fails(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    nowhere = tmp_path / "nowhere"
    result = run_pytest([str(probe)], nowhere, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "2 failed" in output and "skipped" not in output, output
    assert "conformance data missing" in output and str(nowhere / "write") in output, output


def test_the_real_conformance_tests_fail_without_the_data(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    selection = "test_conformance_cases_present or test_conformance_vs_uproot"
    result = run_pytest([str(TESTS_DIR / "test_python_vs_uproot.py"), "-k", selection], nowhere, REPO_ROOT)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "2 failed" in output and "skipped" not in output, output
    assert "conformance data missing" in output and str(nowhere / "write") in output, output
