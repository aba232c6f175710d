"""Where the conformance data is, for every Python test and tool.

The RNTuple Validation Suite (files written by ROOT 6.40 in ``write/``, ROOT's reading
of them in ``read/``) lives in ``../shared/conformance/rntuple-validation-1.0`` relative
to the repository, or where ``$RNTUPLE_CONFORMANCE_DIR`` points. A test that needs it
and does not find it FAILS with a message naming the folder (never skips):

- :func:`cases` lists the cases; without data it lists one pseudo-case, :data:`MISSING`,
  so that a test parametrized by the cases still runs once, and fails;
- :func:`require`, :func:`write_file` and :func:`read_file` fail the calling test (or
  fixture) when the data is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable that overrides where the data is.
ENV = "RNTUPLE_CONFORMANCE_DIR"
REPO_ROOT = Path(__file__).resolve().parent.parent
#: Where the data is when ``$RNTUPLE_CONFORMANCE_DIR`` is not set.
DEFAULT = REPO_ROOT.parent / "shared" / "conformance" / "rntuple-validation-1.0"
#: The one case :func:`cases` lists when the data is missing; every use of it fails.
MISSING = "conformance-data-missing"


def root() -> Path:
    """The conformance data folder (holding ``write/`` and ``read/``)."""
    env = os.environ.get(ENV)
    return Path(env) if env else DEFAULT


def problem() -> str | None:
    """Why the conformance data cannot be used (a message naming the folder), or None."""
    base = root()
    for sub, pattern in (("write", "*.root"), ("read", "*.json")):
        folder = base / sub
        if not folder.is_dir():
            why = f"{folder} does not exist"
        elif not any(folder.glob(pattern)):
            why = f"{folder} holds no {pattern} files"
        else:
            continue
        return (
            f"conformance data missing: {why}. The RNTuple Validation Suite is expected in "
            f"../shared/conformance/rntuple-validation-1.0 beside the repository ({DEFAULT}), "
            f"or where ${ENV} points."
        )
    return None


def require() -> Path:
    """The conformance data folder; FAILS the calling test when the data is missing."""
    why = problem()
    if why is not None:
        import pytest

        pytest.fail(why, pytrace=False)
    return root()


def cases() -> list[str]:
    """The case names (``write/<case>.root``), sorted; ``[MISSING]`` without data."""
    if problem() is not None:
        return [MISSING]
    return sorted(p.name[: -len(".root")] for p in (root() / "write").glob("*.root"))


def write_file(case: str) -> Path:
    """``write/<case>.root``; fails the calling test when the data is missing."""
    return require() / "write" / f"{case}.root"


def read_file(case: str) -> Path:
    """``read/<case>.json`` (ROOT's reading); fails the calling test when the data is missing."""
    return require() / "read" / f"{case}.json"
