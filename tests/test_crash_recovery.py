"""Crash safety: writers killed with SIGKILL, and unclosed files cut short, recovered by
``rntuple recover`` into files that ROOT 6.40 reads to exactly the committed entries.

The writers (the CLI's ``copy`` and the Python package, both with ``checkpoint_every``
1) are deterministic: a run killed at any moment has written a prefix of the bytes of a
run that completed with the same options and output name. The committed cluster groups
of a killed run are therefore those whose page list ends within the bytes it left,
read off ROOT's descriptor of the completed run (``tests/crash_check.py groups``): that
is the number of entries ``recover`` must give back, no more, no fewer. Every value of
every recovered file is then read by ROOT and compared with the function of the entry
number the writer used (``tests/crash_writer.py``).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
#: Entries the writers write: with clusters of CLUSTER_BYTES, a write of about 90 cluster
#: groups (each kill lands among them by the bytes written, not by the time), small
#: enough that ROOT reads every value of every recovered file in a few seconds.
ENTRIES = 500_000
BATCH = 50_000
CLUSTER_BYTES = 64 * 1024
KILLS = 30
CUTS = 50
SEED = 20261123


@dataclass
class Reference:
    """A completed write: its file, how long it took, its cluster groups (page list
    end, entry end) as ROOT reads them, and the command that wrote it."""

    path: Path
    seconds: float
    groups: list[tuple[int, int]]
    command: Callable[[Path], list[str]]


def root_groups(path: Path) -> list[tuple[int, int]]:
    """ROOT's cluster groups of ``path``, in file order: (byte after the page list, entry
    after the group)."""
    out = subprocess.run(
        [sys.executable, str(TESTS_DIR / "crash_check.py"), "groups", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # ROOT iterates cluster groups in no particular order: sort them by place in the file.
    return sorted((a, b) for a, b in json.loads(out.strip().splitlines()[-1]))


def root_check(paths: list[Path]) -> dict[str, dict]:
    """ROOT's reading of every value of each file (see tests/crash_check.py)."""
    if not paths:
        return {}
    proc = subprocess.run(
        [sys.executable, str(TESTS_DIR / "crash_check.py"), "check", *map(str, paths)],
        capture_output=True,
        text=True,
    )
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["file"]] = r
    assert len(results) == len(paths), (
        f"ROOT checked {len(results)} of {len(paths)} files:\n{proc.stderr[-3000:]}"
    )
    return results


def committed_entries(groups: list[tuple[int, int]], size: int) -> int:
    """Entries of the cluster groups whose page list lies within the first ``size`` bytes."""
    return max((entry_end for end, entry_end in groups if end <= size), default=0)


def start_writer(command: list[str]) -> subprocess.Popen[str]:
    """Starts a writer and returns once it writes: the Python writer says ``ready`` once
    its RNTuple is started (imports and first calls take a second or more); the CLI
    starts writing at once."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if command[0] == sys.executable and proc.stdout is not None:
        assert proc.stdout.readline().strip() == "ready"
    return proc


def kill_at_size(proc: subprocess.Popen[str], run_dir: Path, target: float, deadline: float) -> float:
    """Kills the writer with SIGKILL once its temporary file in ``run_dir`` holds
    ``target`` bytes (or when it ends, or after ``deadline`` seconds); returns the
    seconds it ran."""
    t0 = time.perf_counter()
    while proc.poll() is None and time.perf_counter() - t0 < deadline:
        partials = list(run_dir.glob("out.root.*.partial"))
        try:
            if partials and partials[0].stat().st_size >= target:
                break
        except FileNotFoundError:
            pass  # renamed to the output meanwhile: complete
        time.sleep(0.002)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    return time.perf_counter() - t0


def python_command(out: Path) -> list[str]:
    """The Python writer of ``out``."""
    return [
        sys.executable,
        str(TESTS_DIR / "crash_writer.py"),
        str(out),
        str(ENTRIES),
        str(BATCH),
        str(CLUSTER_BYTES),
    ]


@pytest.fixture(scope="module")
def references(
    tmp_path_factory: pytest.TempPathFactory, rntuple_bin: Callable[[], Path]
) -> dict[str, Reference]:
    """One completed write per writer; the CLI copies the Python writer's file."""
    base = tmp_path_factory.mktemp("crash-ref")

    def completed(name: str, command: Callable[[Path], list[str]]) -> Reference:
        """The writer ``command`` run to its end, into ``BASE/NAME/out.root``."""
        out = base / name / "out.root"
        out.parent.mkdir()
        proc = start_writer(command(out))
        t0 = time.perf_counter()
        assert proc.wait() == 0
        return Reference(out, time.perf_counter() - t0, root_groups(out), command)

    refs = {"python": completed("python", python_command)}
    source = refs["python"].path
    binary = rntuple_bin()

    def cli_command(out: Path) -> list[str]:
        return [
            str(binary),
            "copy",
            str(source),
            str(out),
            "--cluster-size",
            str(CLUSTER_BYTES),
            "--checkpoint-every",
            "1",
        ]

    refs["cli"] = completed("cli", cli_command)
    for name, ref in refs.items():
        print(
            f"\n[{name}] reference write: {ref.seconds:.2f} s, {len(ref.groups)} cluster groups, "
            f"{ref.path.stat().st_size} bytes"
        )
        assert len(ref.groups) >= 50, f"{name}: the reference write has only {len(ref.groups)} cluster groups"
        assert ref.groups[-1][1] == ENTRIES
    return refs


def recover(binary: Path, broken: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """Runs ``rntuple recover BROKEN OUT``."""
    return subprocess.run([str(binary), "recover", str(broken), str(out)], capture_output=True, text=True)


def assert_clean_exit(proc: subprocess.CompletedProcess[str], what: str) -> None:
    """A result or a clear error: exit 0 or 1, never a panic or a signal."""
    assert proc.returncode in (0, 1), f"{what}: exit {proc.returncode}\n{proc.stderr}"
    assert "panicked" not in proc.stderr, f"{what}: {proc.stderr}"


@pytest.mark.parametrize("writer", ["cli", "python"])
def test_killed_writer_is_recovered_to_its_committed_groups(
    writer: str, references: dict[str, Reference], tmp_path: Path, rntuple_bin: Callable[[], Path]
) -> None:
    """30 writes killed with SIGKILL at random moments (a random share of the bytes
    written): ``recover`` gives, every time, a
    file ROOT reads to exactly the entries of the committed cluster groups, every value
    as written; or, when no group was committed yet, a clear error."""
    ref = references[writer]
    binary = rntuple_bin()
    rng = random.Random(SEED + (writer == "python"))
    rows = []
    to_check: dict[Path, int] = {}
    for k in range(KILLS):
        run_dir = tmp_path / f"run{k}"
        run_dir.mkdir()
        out = run_dir / "out.root"
        # A random moment of the write, by the bytes written rather than by the time
        # (which the machine's load stretches): the kill comes once the temporary file
        # holds a random share of the reference file's bytes.
        target = rng.uniform(0.02, 0.98) * ref.path.stat().st_size
        proc = start_writer(ref.command(out))
        delay = kill_at_size(proc, run_dir, target, deadline=5.0 + 3 * ref.seconds)
        partials = sorted(run_dir.glob("out.root.*.partial"))
        assert len(partials) <= 1, partials
        if not partials:
            # Killed before the file was created, or after it was complete and renamed.
            if out.exists():
                assert not list(run_dir.glob("*.partial"))
                rows.append((k, delay, "completed", ENTRIES, ENTRIES))
                result = recover(binary, out, run_dir / "rec.root")
                assert result.returncode == 0 and "needs no recovery" in result.stderr, result.stderr
            else:
                rows.append((k, delay, "not started", 0, 0))
            continue
        broken = partials[0]
        size = broken.stat().st_size
        expected = committed_entries(ref.groups, size)
        rec = run_dir / "rec.root"
        result = recover(binary, broken, rec)
        assert_clean_exit(result, f"run {k}")
        if "needs no recovery" in result.stderr:
            # Killed after the file was complete, before its rename (while syncing it to
            # disk): the temporary file is the whole output.
            assert result.returncode == 0 and not rec.exists(), result.stderr
            to_check[broken] = ENTRIES
            rows.append((k, delay, "complete, not yet renamed", ENTRIES, None))
            continue
        if expected == 0:
            assert result.returncode == 1, f"run {k}: nothing was committed, yet: {result.stderr}"
            assert "nothing to recover" in result.stderr, result.stderr
            assert not rec.exists()
        else:
            assert result.returncode == 0, (
                f"run {k} ({size} bytes, {expected} entries committed): {result.stderr}"
            )
            to_check[rec] = expected
        rows.append((k, delay, f"{size} bytes", expected, None))
    checked = root_check(list(to_check))
    print(f"\n[{writer}] killed {KILLS} writes of {ENTRIES} entries (reference {ref.seconds:.2f} s):")
    recovered_total = 0
    for k, delay, state, expected, done in rows:
        run_files = [p for p in to_check if p.parent.name == f"run{k}"]
        if run_files:
            rec = run_files[0]
            expected = to_check[rec]
            r = checked[str(rec)]
            assert "error" not in r, f"run {k}: ROOT cannot read the recovered file: {r['error']}"
            assert r["mismatches"] == 0, (
                f"run {k}: {r['mismatches']} wrong entries, first {r['first_mismatch']}"
            )
            assert r["entries"] == expected, f"run {k}: recovered {r['entries']}, committed {expected}"
            done = r["entries"]
        recovered_total += int(bool(done))
        print(
            f"  run {k:2d}: killed at {delay:5.2f} s, {state}: committed {expected}, "
            f"recovered {done or 0} of {ENTRIES} entries"
        )
    # The test means something only if most kills hit a write with groups committed.
    assert len(to_check) >= KILLS // 2, f"only {len(to_check)} of {KILLS} kills left something to recover"


def test_unclosed_file_cut_short_recovers_the_surviving_prefix(
    references: dict[str, Reference], tmp_path: Path, rntuple_bin: Callable[[], Path]
) -> None:
    """An unclosed file (everything up to its last page list, no footer, anchor or
    trailing records) cut at 50 points: each gives the committed groups that survive the
    cut, every value right, or a clear error when none does; never a panic."""
    ref = references["cli"]
    binary = rntuple_bin()
    unclosed_size = ref.groups[-1][0]
    data = ref.path.read_bytes()[:unclosed_size]
    rng = random.Random(SEED)
    cuts = sorted({rng.randrange(0, unclosed_size + 1) for _ in range(CUTS - 8)})
    # Points where the answer changes: around page list ends, the file header, the start.
    ends = [end for end, _ in ref.groups]
    cuts += [0, 3, 60, ends[0] - 1, ends[0], ends[len(ends) // 2] + 1, unclosed_size - 1, unclosed_size]
    cuts = sorted(set(cuts))
    to_check: dict[Path, int] = {}
    errors = 0
    for cut in cuts:
        broken = tmp_path / f"cut{cut}.root"
        broken.write_bytes(data[:cut])
        rec = tmp_path / f"rec{cut}.root"
        result = recover(binary, broken, rec)
        assert_clean_exit(result, f"cut at {cut}")
        expected = committed_entries(ref.groups, cut)
        if expected == 0:
            assert result.returncode == 1, f"cut at {cut}: {result.stderr}"
            assert "nothing to recover" in result.stderr or "not a ROOT file" in result.stderr, result.stderr
            errors += 1
        else:
            assert result.returncode == 0, f"cut at {cut}: {result.stderr}"
            to_check[rec] = expected
    checked = root_check(list(to_check))
    for rec, expected in to_check.items():
        r = checked[str(rec)]
        assert "error" not in r, f"{rec.name}: {r['error']}"
        assert (r["entries"], r["mismatches"]) == (expected, 0), f"{rec.name}: {r}"
    print(
        f"\n{len(cuts)} cuts of a {unclosed_size}-byte unclosed file: {len(to_check)} recovered, "
        f"{errors} clear errors"
    )
    assert len(cuts) >= CUTS


def test_unclosed_root_file_is_recovered(tmp_path: Path, rntuple_bin: Callable[[], Path]) -> None:
    """A file ROOT 6.40's own writer wrote, committing a cluster group per cluster, cut
    after its page lists (as if ROOT had died before its footer): ``recover`` finds
    ROOT's header and page lists and gives every committed entry, read back by ROOT."""
    written = tmp_path / "root.root"
    entries, per_cluster = 200_000, 20_000
    subprocess.run(
        [
            sys.executable,
            str(TESTS_DIR / "crash_check.py"),
            "write",
            str(written),
            str(entries),
            str(per_cluster),
        ],
        check=True,
        capture_output=True,
    )
    groups = root_groups(written)
    assert len(groups) == entries // per_cluster
    data = written.read_bytes()
    to_check = {}
    for end, entry_end in [*groups[:: len(groups) // 4], groups[-1]]:
        broken = tmp_path / f"root_cut{end}.root"
        broken.write_bytes(data[: end + 100])
        rec = tmp_path / f"root_rec{end}.root"
        result = recover(rntuple_bin(), broken, rec)
        assert result.returncode == 0, result.stderr
        to_check[rec] = entry_end
    checked = root_check(list(to_check))
    for rec, expected in to_check.items():
        assert (checked[str(rec)]["entries"], checked[str(rec)]["mismatches"]) == (expected, 0), checked[
            str(rec)
        ]
