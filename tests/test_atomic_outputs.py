"""Outputs appear only when complete, inputs are never overwritten.

* ``rntuple copy X X`` through five spellings of the same file (the path itself,
  ``./``, ``../dir/``, a symbolic link, a hard link) is refused, naming both paths, and
  X's bytes are unchanged (SHA-256).
* A copy that fails (a corrupt source, a cluster size too small for the schema) into an
  existing output leaves the old output's bytes unchanged and no temporary file.
* Without ``--force`` an existing output is refused; with it, it is replaced by a file
  ROOT 6.40 reads.
* Python's ``recreate`` replaces atomically: a failed write (unsupported data, an
  exception inside the ``with`` block) leaves the old file as it was and no temporary
  file; a reader that still has the old file open keeps reading it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import rntuple

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "examples" / "events.root"


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(binary: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs the CLI in ``cwd``."""
    return subprocess.run([str(binary), *args], capture_output=True, text=True, cwd=cwd)


def leftovers(directory: Path) -> list[str]:
    """Temporary files left in ``directory``."""
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".partial"))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A directory with ``d/X`` (the example file), a symlink and a hard link to it."""
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(EXAMPLE, d / "X.root")
    (d / "link.root").symlink_to("X.root")
    os.link(d / "X.root", d / "hard.root")
    return d


@pytest.mark.parametrize("spelling", ["X.root", "./X.root", "../d/X.root", "link.root", "hard.root"])
@pytest.mark.parametrize("force", [False, True])
def test_copy_onto_its_input_is_refused(
    spelling: str, force: bool, workdir: Path, rntuple_bin: Callable[[], Path]
) -> None:
    """Every spelling of the input as output is refused, with or without --force."""
    before = sha256(workdir / "X.root")
    result = run(rntuple_bin(), "copy", "X.root", spelling, *(["--force"] if force else []), cwd=workdir)
    assert result.returncode == 2, result.stderr
    assert "is the input" in result.stderr and spelling in result.stderr and "X.root" in result.stderr
    assert sha256(workdir / "X.root") == before
    assert os.path.getsize(workdir / "X.root") == EXAMPLE.stat().st_size
    assert leftovers(workdir) == []


def test_existing_output_needs_force(workdir: Path, rntuple_bin: Callable[[], Path], tmp_path: Path) -> None:
    """Without --force an existing output is refused and untouched; with it, replaced
    by a complete file that ROOT reads (same entries as the input)."""
    out = tmp_path / "out.root"
    out.write_bytes(b"precious")
    result = run(rntuple_bin(), "copy", str(workdir / "X.root"), str(out), cwd=tmp_path)
    assert result.returncode == 2 and "already exists" in result.stderr and "--force" in result.stderr
    assert out.read_bytes() == b"precious"
    result = run(rntuple_bin(), "copy", str(workdir / "X.root"), str(out), "--force", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert leftovers(tmp_path) == []
    import ROOT

    reader = ROOT.RNTupleReader.Open("Events", str(out))
    assert reader.GetNEntries() == 2000
    # Permissions of an ordinary new file (not the owner-only ones of temporary files).
    assert out.stat().st_mode & 0o777 == 0o666 & ~current_umask()


def current_umask() -> int:
    """The process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_failed_copy_leaves_the_old_output(
    workdir: Path, rntuple_bin: Callable[[], Path], tmp_path: Path
) -> None:
    """A copy that fails midway (corrupt source page; cluster size too small) with
    --force leaves the existing output's bytes and no temporary file."""
    out = tmp_path / "out.root"
    shutil.copy(EXAMPLE, out)
    before = sha256(out)
    # A source whose page bytes are damaged: the header and footer read, a page does not.
    corrupt = tmp_path / "corrupt.root"
    data = bytearray(EXAMPLE.read_bytes())
    for at in range(20_000, 60_000, 997):
        data[at] ^= 0x5A
    corrupt.write_bytes(bytes(data))
    result = run(rntuple_bin(), "copy", str(corrupt), str(out), "--force", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "corrupt.root" in result.stderr
    assert sha256(out) == before
    assert leftovers(tmp_path) == []
    # A cluster size too small for the schema: an error in the user's terms.
    result = run(
        rntuple_bin(),
        "copy",
        str(workdir / "X.root"),
        str(out),
        "--force",
        "--cluster-size",
        "100",
        cwd=tmp_path,
    )
    # A value the schema cannot take is a usage error.
    assert result.returncode == 2
    assert "cluster size of 100 bytes is too small" in result.stderr and "at least" in result.stderr
    assert sha256(out) == before
    assert leftovers(tmp_path) == []


def test_recreate_replaces_atomically(tmp_path: Path) -> None:
    """A failed recreate leaves the old file; a successful one replaces it while a reader
    of the old one keeps reading the old data."""
    path = tmp_path / "f.root"
    with rntuple.recreate(path) as f:
        f["T"] = {"x": np.arange(10, dtype=np.int32)}
    before = sha256(path)
    old = rntuple.open(f"{path}:T")
    # Unsupported data: a typed error naming the column, the old file untouched.
    with pytest.raises(rntuple.RNTupleError, match="'c'"):
        with rntuple.recreate(path) as f:
            f["T"] = {"c": np.array([1 + 2j, 3j])}
    assert sha256(path) == before
    assert leftovers(tmp_path) == []
    # An exception inside the block abandons the new file.
    with pytest.raises(KeyError):
        with rntuple.recreate(path) as f:
            f["T"] = {"x": np.arange(5, dtype=np.int32)}
            raise KeyError("the analysis failed")
    assert sha256(path) == before
    assert leftovers(tmp_path) == []
    # Replaced while the old file is open: the reader still sees the old entries.
    with rntuple.recreate(path) as f:
        f["T"] = {"x": np.arange(100, 103, dtype=np.int32)}
    assert old.arrays()["x"].to_list() == list(range(10))
    assert rntuple.open(f"{path}:T").arrays()["x"].to_list() == [100, 101, 102]
    assert leftovers(tmp_path) == []


def test_recreate_never_closed_writes_nothing(tmp_path: Path) -> None:
    """A file never closed leaves nothing at its path, with a ResourceWarning."""
    path = tmp_path / "g.root"
    f = rntuple.recreate(path)
    f["T"] = {"x": np.arange(3)}
    with pytest.warns(ResourceWarning, match="never closed"):
        f.__del__()
    assert not path.exists()
    assert leftovers(tmp_path) == []


def test_checkpoint_every_is_validated(tmp_path: Path) -> None:
    """checkpoint_every must be a positive number of clusters or None."""
    for bad in (0, -1, 1.5, True):
        with pytest.raises(rntuple.InvalidArgumentError, match="checkpoint_every"):
            rntuple.recreate(tmp_path / "h.root", checkpoint_every=bad)  # type: ignore[arg-type]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("flag", "keyword", "value"),
    [
        ("--page-size", "page_size", 0),
        ("--page-size", "page_size", 7),
        ("--cluster-size", "cluster_size", 0),
    ],
)
def test_bad_write_option_gives_the_same_message_from_cli_and_python(
    rntuple_bin: Callable[[], Path], tmp_path: Path, flag: str, keyword: str, value: int
) -> None:
    """One validation of write options: the command line and Python refuse the same bad
    value with the same message, naming the option and its range, and write nothing."""
    out = tmp_path / "c.root"
    result = run(rntuple_bin(), "copy", str(EXAMPLE), str(out), flag, str(value), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    with pytest.raises(rntuple.InvalidArgumentError) as python_error:
        rntuple.recreate(tmp_path / "p.root", **{keyword: value})
    message = str(python_error.value)
    assert message.startswith(f"invalid argument: {keyword} must be between "), message
    assert f"not {value}" in message
    assert result.stderr.strip() == f"rntuple: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == []
