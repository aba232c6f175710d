"""Every error of the command is one sentence on standard error that names what went
wrong and where, with the way out where there is one, and exit status 1 (bad data, I/O)
or 2 (usage).

The walk runs every subcommand that reads a file on a missing file, a directory, a text
file, a random file that starts with ``root``, a FIFO (which must not block), a ROOT file
cut short, and the ``.partial`` file a killed writer leaves (made here as one: a copy
that commits a cluster group per cluster, cut where the writer stopped). The rest are
the usage errors a newcomer meets: names that do not exist (with "did you mean"), an
output that exists, a directory as output, a shell-expanded glob, a missing --out-dir,
a branch that cannot be converted, a range past the end.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT, require_rntuple_bin

EVENTS = REPO_ROOT / "examples" / "events.root"


def run(*args: str | os.PathLike[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``rntuple ARGS...``, with a timeout a blocking open would run into."""
    return subprocess.run(
        [str(require_rntuple_bin()), *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def one_sentence(proc: subprocess.CompletedProcess[str]) -> str:
    """The one line of standard error, checked: ``rntuple: ...``, no panic, no label
    the exit status already tells."""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("rntuple: "), line
    assert "panicked" not in line and "invalid argument" not in line, line
    return line


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A file of each bad kind, by kind."""
    d = tmp_path_factory.mktemp("bad")
    files = {
        "missing": d / "missing.root",
        "directory": d / "directory.root",
        "text": d / "text.root",
        "random": d / "random.root",
        "fifo": d / "fifo.root",
        "cut": d / "cut.root",
        "partial": d / "out.root.x7Qa2b.partial",
    }
    files["directory"].mkdir()
    files["text"].write_text("hello\n")
    files["random"].write_bytes(b"root" + random.Random(7).randbytes(300))
    os.mkfifo(files["fifo"])
    data = EVENTS.read_bytes()
    files["cut"].write_bytes(data[: len(data) * 6 // 10])
    # A writer that commits a cluster group per cluster, stopped two thirds of the way.
    whole = d / "checkpointed.root"
    proc = run("copy", EVENTS, whole, "--cluster-size", "8000", "--checkpoint-every", "1")
    assert proc.returncode == 0, proc.stderr
    checkpointed = whole.read_bytes()
    files["partial"].write_bytes(checkpointed[: len(checkpointed) * 2 // 3])
    whole.unlink()
    return files


#: Each subcommand that reads a file, with ``IN`` and ``OUT`` to fill in.
COMMANDS = {
    "ls": ["ls", "IN"],
    "info": ["info", "IN"],
    "read-bench": ["read-bench", "IN"],
    "inspect": ["inspect", "IN"],
    "show": ["show", "IN"],
    "dump --json": ["dump", "IN", "--json"],
    "dump --jsonl": ["dump", "IN", "--jsonl"],
    "verify": ["verify", "IN"],
    "copy": ["copy", "IN", "OUT"],
    "convert": ["convert", "IN", "OUT"],
    "merge": ["merge", "OUT", "IN"],
    "recover": ["recover", "IN", "OUT"],
}


@pytest.mark.parametrize("kind", ["missing", "directory", "text", "random", "fifo", "cut", "partial"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_fails_in_one_sentence_naming_the_file(
    command: str, kind: str, bad_inputs: dict[str, Path], tmp_path: Path
) -> None:
    bad = bad_inputs[kind]
    out = tmp_path / "out.root"
    args = [str(bad) if a == "IN" else str(out) if a == "OUT" else a for a in COMMANDS[command]]
    proc = run(*args, cwd=tmp_path)
    if command == "recover" and kind == "partial":
        # The way out the other commands point to works.
        assert proc.returncode == 0, proc.stderr
        assert 'recovered RNTuple "Events"' in proc.stderr
        assert run("verify", out).returncode == 0
        return
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    line = one_sentence(proc)
    assert str(bad) in line, line
    # Nothing written, nothing left behind.
    assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())
    if command == "verify":
        assert proc.stdout.startswith(f"BAD  {bad}: "), proc.stdout
        assert line == f"rntuple: 1 of 1 files are bad: {bad}"
        return
    assert proc.stdout == "", proc.stdout
    what = {
        "missing": "No such file or directory",
        "directory": "it is a directory",
        "text": "not a ROOT file",
        "random": "corrupt data in TFile header",
        "fifo": "it is a FIFO (named pipe)",
        "cut": "truncated data",
    }
    if command == "recover":
        what.update(random="not a ROOT file", cut="nothing to recover")
    if kind in what:
        assert what[kind] in line, line
    if kind == "cut" and command != "recover":
        assert (
            "an interrupted copy or download?" in line
            and "`rntuple recover` finds no committed entries" in line
        )
    if kind == "cut" and command == "recover":
        assert "nothing to recover: no cluster group was committed before the data ends" in line, line
    if kind == "partial":
        assert "unfinished output of a writer that stopped" in line, line
        assert f"`rntuple recover {bad} OUT.root` saves the " in line, line


def test_the_entries_the_hint_promises_are_the_entries_recovered(
    bad_inputs: dict[str, Path], tmp_path: Path
) -> None:
    line = one_sentence(run("info", bad_inputs["partial"]))
    promised = int(line.split("saves the ")[1].split(" entries")[0])
    out = tmp_path / "recovered.root"
    assert run("recover", bad_inputs["partial"], out).returncode == 0
    dumped = run("dump", out, "--jsonl", "--fields", "event")
    assert dumped.returncode == 0, dumped.stderr
    assert 0 < promised == len(dumped.stdout.splitlines()) < 2000


def test_merge_names_the_bad_input_among_many(bad_inputs: dict[str, Path], tmp_path: Path) -> None:
    """The issue's reproducer: ``merge out.root text.root good.root``, and with 20 inputs."""
    inputs = [EVENTS] * 10 + [bad_inputs["text"]] + [EVENTS] * 9
    proc = run("merge", tmp_path / "out.root", *inputs)
    assert proc.returncode == 1
    line = one_sentence(proc)
    assert line.startswith(f"rntuple: file {bad_inputs['text']}: ") and "not a ROOT file" in line, line
    assert not (tmp_path / "out.root").exists()


# --- Usage errors: exit status 2 --------------------------------------------------------


def test_names_that_do_not_exist_get_did_you_mean(tmp_path: Path) -> None:
    proc = run("show", f"{EVENTS}:Evnts")
    assert proc.returncode == 1
    assert one_sentence(proc) == f'rntuple: no RNTuple named "Evnts" in {EVENTS}; did you mean "Events"?'
    proc = run("dump", EVENTS, "--jsonl", "--fields", "Jet_Pt")
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_sentence(proc) == (
        f'rntuple: no field "Jet_Pt" in RNTuple "Events" of {EVENTS}; did you mean "Jet_pt"?'
    )
    proc = run("show", EVENTS, "--fields", "Electron_*")
    assert proc.returncode == 2
    assert 'field pattern "Electron_*" matches no field' in one_sentence(proc)


def test_fields_take_glob_patterns_as_convert_and_python_do() -> None:
    proc = run("dump", EVENTS, "--jsonl", "--entries", "0:1", "--fields", "Jet_*,run")
    assert proc.returncode == 0, proc.stderr
    import json

    assert list(json.loads(proc.stdout)) == ["Jet_pt", "Jet_eta", "run"]


def test_an_existing_output_or_a_directory_is_a_usage_error_in_every_command(tmp_path: Path) -> None:
    existing = tmp_path / "exists.root"
    existing.write_bytes(b"keep me")
    for args in (["copy", EVENTS, existing], ["merge", existing, EVENTS], ["recover", EVENTS, existing]):
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert (
            one_sentence(proc)
            == f"rntuple: {existing} already exists (not replaced); pass --force to replace it"
        )
        assert existing.read_bytes() == b"keep me"
    for args in (["copy", EVENTS, tmp_path], ["merge", tmp_path, EVENTS]):
        proc = run(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert one_sentence(proc) == f"rntuple: {tmp_path} is a directory, not a file to write"


def test_entries_past_the_end_say_so() -> None:
    proc = run("show", EVENTS, "--entries", "3000:")
    assert proc.returncode == 2
    assert one_sentence(proc) == (
        "rntuple: --entries 3000: starts past the end: the RNTuple has 2000 entries (0:2000)"
    )


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """TTree files written by uproot (``mktree``: assigning a dict writes an RNTuple):
    two of ``x``, one with a branch ``a.b`` (a name with a dot cannot be a field name),
    one with only that branch."""
    import numpy as np
    import uproot

    d = tmp_path_factory.mktemp("trees")
    paths = {}
    for name, branches in {
        "run1": {"x": np.arange(5, dtype=np.int32)},
        "run2": {"x": np.arange(5, 9, dtype=np.int32)},
        "dotted": {"k": np.arange(3, dtype=np.int32), "a.b": np.arange(3, dtype=np.float32)},
        "only_dotted": {"a.b": np.arange(3, dtype=np.float32)},
    }.items():
        paths[name] = d / f"{name}.root"
        with uproot.recreate(paths[name]) as f:
            f.mktree("t", {k: v.dtype for k, v in branches.items()}).extend(branches)
    return paths


def test_convert_many_files_expanded_by_the_shell_into_a_new_directory(
    trees: dict[str, Path], tmp_path: Path
) -> None:
    out_dir = tmp_path / "new" / "dir"
    proc = run("convert", trees["run1"], trees["run2"], "--out-dir", out_dir)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["run1.root", "run2.root"]
    dumped = run("dump", out_dir / "run2.root", "--jsonl")
    assert [line for line in dumped.stdout.splitlines()] == [f'{{"x":{i}}}' for i in range(5, 9)]
    # A run whose every conversion fails leaves no directory it made.
    not_made = tmp_path / "never" / "made"
    proc = run("convert", trees["only_dotted"], "--out-dir", not_made)
    assert proc.returncode == 1 and not (tmp_path / "never").exists(), proc.stderr
    # Without --out-dir, more than two paths point to it.
    proc = run("convert", trees["run1"], trees["run2"], tmp_path / "x.root")
    assert proc.returncode == 2
    both = f"{trees['run1']} {trees['run2']}"
    assert f"to convert many files give --out-dir DIR: rntuple convert {both} --out-dir DIR" in one_sentence(
        proc
    )


def test_an_unsupported_branch_names_the_option_that_leaves_it_out(
    trees: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out.root"
    proc = run("convert", trees["dotted"], out)
    assert proc.returncode == 1 and not out.exists()
    line = one_sentence(proc)
    assert 'branch "a.b"' in line and line.endswith(
        "; pass --skip-unsupported to convert the other branches without it"
    )
    proc = run("convert", trees["only_dotted"], out, "--skip-unsupported")
    assert proc.returncode == 1 and not out.exists()
    assert "nothing left to convert: every selected branch is of a type that cannot be converted" in (
        one_sentence(proc)
    )
    assert "Arrow error" not in proc.stderr


def test_a_copy_says_what_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "copy.root"
    proc = run("copy", EVENTS, out)
    assert proc.returncode == 0, proc.stderr
    size_in, size_out = EVENTS.stat().st_size / 1e6, out.stat().st_size / 1e6
    sizes = f"{EVENTS} ({size_in:.1f} MB) -> {out} ({size_out:.1f} MB, zstd level 5)"
    assert proc.stdout.startswith(f'copied 2000 entries of RNTuple "Events": {sizes} in '), proc.stdout


def test_a_fifo_is_refused_at_once_by_python_too(bad_inputs: dict[str, Path]) -> None:
    import rntuple

    with pytest.raises(OSError, match="FIFO"):
        rntuple.open(bad_inputs["fifo"])


def test_the_python_package_raises_file_exists_for_an_existing_output(tmp_path: Path) -> None:
    import errno

    import rntuple

    out = tmp_path / "merged.root"
    shutil.copy(EVENTS, out)
    with pytest.raises(FileExistsError) as raised:
        rntuple.merge([EVENTS], out)
    assert isinstance(raised.value, rntuple.OutputExistsError) and raised.value.errno == errno.EEXIST
    assert str(raised.value) == f"{out} already exists (not replaced); pass overwrite=True to replace it"
