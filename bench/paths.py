"""Where the remote benchmarks (``remote.py``, ``datacenter.py``) find this checkout's
pieces. Importing this module puts the test helpers (``tests/``: the servers and the data
writers), the Python package's sources (``python/``) and the task helpers (``bench/tasks/``)
on ``sys.path``, the last first; the constants name the release binaries they run."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
for _folder in ("tests", "python", "bench/tasks"):
    sys.path.insert(0, str(REPO / _folder))

# cargo build --release -p rntuple-cli -p rntuple-testkit
RELEASE_CLI = REPO / "target" / "release" / "rntuple"
RELEASE_PROXY = REPO / "target" / "release" / "delay_proxy"
