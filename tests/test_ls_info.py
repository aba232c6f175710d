"""``rntuple ls`` and ``rntuple info`` of files of many fields and of several files.

- ``ls`` of an RNTuple of 854 fields (written by the Python package) lists the count and
  the first 10 names, then how many more and the command that shows them all (which
  does: ``info`` names every field);
- ``ls FILE...`` and ``info TARGET...``: each file under a ``== FILE ==`` header, in the
  order given; a bad or missing file is reported on standard error naming it, the
  others are still listed, and the command exits 1; one file prints no header.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import REPO_ROOT, require_rntuple_bin

import rntuple

EXAMPLE = REPO_ROOT / "examples" / "events.root"
#: Fields of the wide RNTuple.
WIDE_FIELDS = 854


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(require_rntuple_bin()), *map(str, args)], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An RNTuple ``Events`` of :data:`WIDE_FIELDS` int32 fields ``f0``, ``f1``, ...
    (3 entries)."""
    path = tmp_path_factory.mktemp("wide") / "wide.root"
    with rntuple.recreate(path) as f:
        f["Events"] = pa.table({f"f{k}": pa.array([k, k + 1, k + 2], pa.int32()) for k in range(WIDE_FIELDS)})
    return path


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file that is not a ROOT file."""
    path = tmp_path_factory.mktemp("bad") / "bad.root"
    path.write_bytes(b"this is not a ROOT file\n" * 10)
    return path


def test_ls_cuts_a_long_field_list(wide: Path) -> None:
    proc = _cli("ls", wide)
    assert proc.returncode == 0, proc.stderr
    names = ", ".join(f"f{k}" for k in range(10))
    assert proc.stdout == (
        f"Events\t3 entries\t{WIDE_FIELDS} fields: {names}, ... "
        f"({WIDE_FIELDS - 10} more; rntuple info {wide}:Events shows them all)\n"
    )
    # ... which it does.
    info = _cli("info", f"{wide}:Events")
    assert info.returncode == 0, info.stderr
    listed = [line.split(" : ")[0].strip() for line in info.stdout.splitlines() if " : std::int32_t" in line]
    assert listed == [f"f{k}" for k in range(WIDE_FIELDS)]
    # Ten names or fewer are all listed.
    nt = rntuple.open(f"{EXAMPLE}:Events")
    assert len(nt.fields) <= 10
    example = _cli("ls", EXAMPLE).stdout
    assert example == f"Events\t{nt.num_entries} entries\t{len(nt.fields)} fields: {', '.join(nt.fields)}\n"


def test_ls_of_several_files_goes_on_past_a_bad_one(wide: Path, bad: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.root"
    alone = {p: _cli("ls", p) for p in (EXAMPLE, wide, bad, missing)}
    assert [alone[p].returncode for p in alone] == [0, 0, 1, 1]
    proc = _cli("ls", EXAMPLE, bad, wide, missing)
    assert proc.returncode == 1
    assert proc.stdout == (
        f"== {EXAMPLE} ==\n{alone[EXAMPLE].stdout}\n== {bad} ==\n\n"
        f"== {wide} ==\n{alone[wide].stdout}\n== {missing} ==\n"
    )
    # Each error as alone (it names its file), then which files failed.
    errors = proc.stderr.splitlines()
    assert errors[:2] == [alone[bad].stderr.strip(), alone[missing].stderr.strip()]
    assert (
        errors[0].startswith(f"rntuple: file {bad}: ")
        and "not a ROOT file" in errors[0]
        and f"{missing}: No such file" in errors[1]
    )
    assert errors[2:] == [f"rntuple: 2 of 4 files failed: {bad}, {missing}"]
    # All good: exit 0, every file under its header.
    proc = _cli("ls", wide, EXAMPLE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"== {wide} ==\n{alone[wide].stdout}\n== {EXAMPLE} ==\n{alone[EXAMPLE].stdout}"
    # No file is a usage error.
    assert _cli("ls").returncode == 2


def test_info_of_several_targets_goes_on_past_a_bad_one(wide: Path, bad: Path) -> None:
    targets = [f"{EXAMPLE}:Events", str(bad), f"{wide}:Events", f"{wide}:NoSuchRNTuple"]
    alone = {t: _cli("info", t) for t in targets}
    assert [alone[t].returncode for t in targets] == [0, 1, 0, 1]
    proc = _cli("info", *targets)
    assert proc.returncode == 1
    expected = "\n".join(f"== {t} ==\n{alone[t].stdout}" for t in targets)
    assert proc.stdout == expected
    errors = proc.stderr.splitlines()
    assert errors == [
        alone[str(bad)].stderr.strip(),
        alone[f"{wide}:NoSuchRNTuple"].stderr.strip(),
        f"rntuple: 2 of 4 files failed: {bad}, {wide}:NoSuchRNTuple",
    ]
    assert 'no RNTuple named "NoSuchRNTuple"' in errors[1]
    # --stats goes with every target.
    proc = _cli("info", "--stats", f"{EXAMPLE}:Events", f"{wide}:Events")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("opening: ") == 2
