"""The ``rntuple`` command as the object-store tests (``test_object_layout.py``,
``test_object_replace.py``) run it: in this process's environment without S3
credentials unless given, bounded in time, its outcome returned whatever it is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

#: Seconds one command may take.
COMMAND_TIMEOUT = 120


def rntuple_command() -> Path:
    """The ``rntuple`` command (FAILS the calling test if it is missing)."""
    # Imported here: test_object_layout.py also runs as a ROOT worker, without pytest's hooks.
    from conftest import require_rntuple_bin

    return require_rntuple_bin()


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without S3 credentials or endpoints (``AWS_*``, ROOT's
    ``S3_*``), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_"))}
    env.update(extra or {})
    return env


def run_cli(
    args: list[str], env: dict[str, str], timeout: float = COMMAND_TIMEOUT, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs ``rntuple ARGS`` in ``env`` (and ``cwd``) and returns its outcome (never raises
    on a failure; a hang past ``timeout`` fails the test)."""
    command = [str(rntuple_command()), *args]
    return subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=timeout
    )


def printed(proc: subprocess.CompletedProcess[str]) -> str:
    """What a command printed, on one line (for messages)."""
    return " ".join(f"{proc.stdout} {proc.stderr}".split())[:2000]
