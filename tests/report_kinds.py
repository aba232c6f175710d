"""CI's summary line, with the tests of this project apart from the checks of its
references (imported by ``conftest.py``). An oracle or harness check tests ROOT, uproot,
the conformance data or the test tools themselves (that ROOT's importer agrees with the
TTree, that the renderer reproduces ROOT's JSON, that a fixture has the layout it
promises): worth running, since the product tests lean on them, but not a test of this
project, so not counted as one.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from typing import Any

import pytest

#: Node id patterns of the oracle and harness checks, with what they check.
ORACLE_AND_HARNESS = {
    "tests/test_ttree_oracle.py::*": "the TTree fixtures and ROOT's own RNTupleImporter, against ROOT",
    "tests/test_evolution.py::test_root_outcome*": "ROOT 6.40's outcome of each evolution case",
    "tests/test_evolution.py::test_root_spot_values": "ROOT 6.40's values in the evolution reference",
    "tests/test_copy_roundtrip.py::test_renderer_reproduces_reference*": "the renderer of ROOT's reading",
    "tests/test_root_interop.py::test_c_hexfloat_matches_printf": "the %a emulation of the harness",
    "tests/test_root_interop.py::test_generated_structure*": "the layout of the files ROOT generates",
    "tests/test_root_interop.py::test_compression_algorithms_covered": "the files ROOT generates",
    "tests/test_root_interop.py::test_root_rendering_sane*": "ROOT's rendering of the generated files",
    "tests/test_root_interop.py::test_uproot_agrees_with_root*": "uproot against ROOT",
    "tests/test_root_interop.py::test_root_restricted_rendering_consistent": "ROOT against itself",
    "tests/test_conformance_data.py::*": "where the conformance data is found",
    "tests/test_convert.py::test_kept_baskets_fixtures_keep_baskets_in_the_tree*": "the TTree fixtures",
    "tests/test_writer_properties.py::test_a_comparison_of_nothing_fails": "the property test's comparison",
    "tests/test_skip_policy.py::*": "the rule on skips and this summary",
    "tests/test_copy_roundtrip.py::test_entries_are_compared_not_their_sum": "entry comparison",
    "tests/test_python_vs_uproot.py::test_root_json_check_finds_a_changed_entry": "entry comparison",
}


def kind(nodeid: str) -> str:
    """``"oracle"`` for an oracle or harness check, else ``"product"``."""
    oracle = any(fnmatch.fnmatchcase(nodeid, p) for p in ORACLE_AND_HARNESS)
    return "oracle" if oracle else "product"


_counts: Counter[tuple[str, str]] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Counts each test's outcome by kind (once: at the call, or at the phase that
    failed or skipped it)."""
    if report.when == "call" or report.outcome != "passed":
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        if report.when != "call" and outcome == "failed":
            outcome = "error"
        _counts[(kind(report.nodeid), outcome)] += 1


def summary(counts: Counter[tuple[str, str]]) -> str:
    """One line: the product tests' outcomes, then the oracle and harness checks'."""

    def part(k: str) -> str:
        outcomes = [(o, counts[(k, o)]) for o in ("passed", "failed", "error", "skipped", "xfailed")]
        return ", ".join(f"{n} {o}" for o, n in outcomes if n or o == "passed")

    return f"product tests: {part('product')}; oracle and harness checks: {part('oracle')}"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Writes :func:`summary` at the end of a run that ran tests."""
    if _counts:
        terminalreporter.write_sep("=", summary(_counts))
