"""The README's Python install lines, run as written in a fresh virtual environment
(``python3 -m venv``, without ``--system-site-packages``), then the AGC example
(``examples/agc/agc.py``) in it: coffea on our reader and on uproot, eagerly and on a
2-process ``distributed.LocalCluster``. Every run's histogram must equal one computed
here, in the test's own environment, from uproot's reading of the file with Awkward and
NumPy alone (no coffea, no dask, no rntuple), bin by bin.

It checks what the issue found broken: the pins of the ``dask`` and ``coffea`` extras
(``python/pyproject.toml``) keep pip off the dask / dask-awkward combination whose
graphs all fail, and ``tests/requirements.txt`` (the main test environment) agrees with
them. Nothing is skipped: without the network or a wheel, the install fails and so does
the test. The build reuses the checkout's ``target/`` (the pyo3 build does not depend on
the interpreter's path, ``[tool.maturin] config`` in pyproject), so after ``.ci/run``'s
``pip install ./python`` it compiles nothing; pip's downloads (about 270 MB) and unpacking
take most of the time.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pytest
import tomllib
import uproot
from conftest import REPO_ROOT
from packaging.requirements import Requirement
from packaging.version import Version

# the packages the extras pin, and the bound that keeps dask-awkward working
PINNED = ("dask", "distributed", "dask-awkward", "coffea")
DASK_BREAKS = Version("2025.4")
# the AGC example's histogram (examples/agc/agc.py: BINS, LO, HI, B_TAG)
BINS, LO, HI, B_TAG = 25, 50.0, 550.0, 0.5
RUNS = ("rntuple eager", "uproot eager", "rntuple dask", "uproot dask")


def readme_install_lines(readme: Path = REPO_ROOT / "README.md") -> list[str]:
    """The ``pip install`` lines of the fenced ``sh`` blocks of the README's ``## Python``
    section (up to the next ``## `` heading), in order."""
    text = readme.read_text()
    start = text.index("\n## Python\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end != -1 else len(text)]
    lines = []
    for block in re.findall(r"^```sh\n(.*?)^```", section, flags=re.M | re.S):
        lines += [line.strip() for line in block.splitlines() if line.strip().startswith("pip install")]
    return lines


def requirements(lines: list[str]) -> dict[str, Requirement]:
    """Requirement lines (comments and blanks left out) by package name."""
    parsed = (Requirement(line.split("#")[0].strip()) for line in lines if line.split("#")[0].strip())
    return {r.name.lower(): r for r in parsed}


def test_readme_install_lines() -> None:
    """The install section has the package's line and the coffea extra's, with ``-v`` (the
    build shows cargo's progress)."""
    lines = readme_install_lines()
    assert lines == ["pip install -v ./python", "pip install -v './python[coffea]' hist"]


def test_requirements_agree_with_extras() -> None:
    """``tests/requirements.txt`` pins dask, distributed, dask-awkward and coffea as the
    extras do, and the main environment has versions inside the pins."""
    from importlib.metadata import version

    extras = tomllib.loads((REPO_ROOT / "python" / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    coffea_extra = requirements(extras["coffea"])
    assert requirements(extras["dask"]) == {
        name: coffea_extra[name] for name in ("dask", "distributed", "dask-awkward")
    }
    everything = requirements(extras["all"])
    assert all(everything[name] == r for name, r in coffea_extra.items())
    tests = requirements((REPO_ROOT / "tests" / "requirements.txt").read_text().splitlines())
    for name in PINNED:
        assert tests[name].specifier == coffea_extra[name].specifier, name
        assert version(name) in coffea_extra[name].specifier, (name, version(name))
    for name in ("dask", "distributed"):
        assert not coffea_extra[name].specifier.contains(DASK_BREAKS), name
    assert not coffea_extra["dask-awkward"].specifier.contains("2025.3.0")


def independent_histograms(path: Path) -> dict[str, list[float]]:
    """The AGC histogram of ``path`` (see examples/agc/agc.py's docstring) from uproot's
    reading of the RNTuple, with Awkward and NumPy: bin counts of each region."""
    events = uproot.open(path)["Events"].arrays(
        [
            *(f"Electron_{f}" for f in ("pt", "eta", "cutBased", "sip3d")),
            *(f"Muon_{f}" for f in ("pt", "eta", "tightId", "sip3d", "pfRelIso04_all")),
            *(f"Jet_{f}" for f in ("pt", "eta", "phi", "mass", "jetId", "btagCSVV2")),
        ]
    )
    e = events
    n_el = ak.sum(
        (e.Electron_pt > 30)
        & (abs(e.Electron_eta) < 2.1)
        & (e.Electron_cutBased == 4)
        & (e.Electron_sip3d < 4),
        axis=1,
    )
    n_mu = ak.sum(
        (e.Muon_pt > 30)
        & (abs(e.Muon_eta) < 2.1)
        & e.Muon_tightId
        & (e.Muon_sip3d < 4)
        & (e.Muon_pfRelIso04_all < 0.15),
        axis=1,
    )
    jets = ak.zip({f: e[f"Jet_{f}"] for f in ("pt", "eta", "phi", "mass", "btagCSVV2", "jetId")})
    # coffea's Jet.isTightLeptonVeto: bit 2 of jetId
    jets = jets[(jets.pt > 30) & (abs(jets.eta) < 2.4) & ((jets.jetId & 4) != 0)]
    nb = ak.sum(jets.btagCSVV2 >= B_TAG, axis=1)
    selected = (n_el + n_mu == 1) & (ak.num(jets) >= 4) & (nb >= 1)
    jets, nb = jets[selected], nb[selected]

    ht = ak.to_numpy(ak.sum(jets[nb == 1].pt, axis=1))

    trijet = ak.combinations(jets[nb >= 2], 3, fields=["j1", "j2", "j3"])
    parts = [trijet[j] for j in ("j1", "j2", "j3")]
    px = sum(p.pt * np.cos(p.phi) for p in parts)
    py = sum(p.pt * np.sin(p.phi) for p in parts)
    pz = sum(p.pt * np.sinh(p.eta) for p in parts)
    energy = sum(np.sqrt((p.pt * np.cosh(p.eta)) ** 2 + p.mass**2) for p in parts)
    pt = np.hypot(px, py)
    mass = np.sqrt(np.maximum(energy**2 - px**2 - py**2 - pz**2, 0))
    tagged = np.maximum(np.maximum(parts[0].btagCSVV2, parts[1].btagCSVV2), parts[2].btagCSVV2) > B_TAG
    pt, mass = pt[tagged], mass[tagged]
    best = ak.drop_none(ak.flatten(mass[ak.argmax(pt, axis=1, keepdims=True)]))

    def counts(values: Any) -> list[float]:
        histogram, _ = np.histogram(np.asarray(values, dtype=np.float64), bins=BINS, range=(LO, HI))
        return [float(c) for c in histogram]

    return {"4j1b": counts(ht), "4j2b": counts(ak.to_numpy(best))}


def run_line(line: str, env: dict[str, str], timeout: float, timings: dict[str, Any]) -> tuple[str, str]:
    """Runs ``line`` in bash from the repository's top directory, as a person would in the
    activated venv of ``env``; returns its standard output and error (its seconds into
    ``timings[line]``), failing the test with them if it fails."""
    began = time.perf_counter()
    proc = subprocess.run(
        ["bash", "-c", line], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    timings[line] = round(time.perf_counter() - began, 1)
    assert proc.returncode == 0, (
        f"`{line}` failed (exit status {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    )
    return proc.stdout, proc.stderr


def memory_dir() -> Path | None:
    """``/dev/shm`` if it is a place for a venv (executable, 4 GiB free), else None."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    if st.f_flag & os.ST_NOEXEC or st.f_bavail * st.f_frsize < 4 << 30:
        return None
    return Path("/dev/shm")


@pytest.fixture
def venv(tmp_path: Path) -> Iterator[Path]:
    """A fresh venv's directory, in memory (``/dev/shm``) where it can be, and removed
    afterwards. coffea and its dependencies take 1.1 GB: on this machine's disk pip took
    60-70 s to unpack them and removing them 62 s, in memory 30 s and under a second
    (and pytest's kept temporary directories would otherwise hold them)."""
    parent = Path(tempfile.mkdtemp(prefix="rntuple-install-", dir=memory_dir() or tmp_path))
    yield parent / "venv"
    shutil.rmtree(parent, ignore_errors=True)


def test_readme_install_then_agc_on_local_cluster(
    nanoaod_like: dict[str, Path], venv: Path, tmp_path: Path
) -> None:
    """The README's install lines in a fresh venv, then the AGC example on a 2-process
    LocalCluster: all four runs equal the independent histograms, bin by bin."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")}
    env = {k: v for k, v in env.items() if not k.startswith("PYO3_")}
    env |= {"VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    timings: dict[str, Any] = {}
    for line in readme_install_lines():
        output = "".join(run_line(line, env, 1800, timings))
        assert "Successfully installed" in output, output[-3000:]
        # -v shows cargo's progress: the crates it compiles (none when target/ is up to date)
        cargo = re.findall(r"Finished `release` profile .* in (\S+)", output)
        assert cargo, f"no cargo output from `{line}`:\n{output[-3000:]}"
        timings[f"{line}: cargo"] = [cargo[-1], *re.findall(r"^\s*Compiling (\S+)", output, flags=re.M)]

    # the environment's own packages, inside the pins; rntuple from the venv, not the checkout
    probe = (
        "import json, importlib.metadata as m, rntuple; "
        f"print(json.dumps({{**{{p: m.version(p) for p in {PINNED!r}}}, 'rntuple': rntuple.__file__}}))"
    )
    versions = json.loads(run_line(f"python -c {shlex.quote(probe)}", env, 120, {})[0].splitlines()[-1])
    assert Path(versions.pop("rntuple")).is_relative_to(venv), versions
    assert Version(versions["dask"]) < DASK_BREAKS and versions["distributed"] == versions["dask"], versions
    assert Version(versions["dask-awkward"]) >= Version("2025.5"), versions

    result = tmp_path / "agc.json"
    command = (
        f"python examples/agc/agc.py {shlex.quote(str(nanoaod_like['rntuple']))} "
        f"--workers 2 --step-size 5000 --json {shlex.quote(str(result))}"
    )
    output, _ = run_line(command, env, 900, timings)
    print(f"fresh venv {versions}: seconds {timings}", file=sys.stderr)
    assert output.splitlines()[-1] == "histograms equal: True", output

    expected = independent_histograms(nanoaod_like["rntuple"])
    assert sum(expected["4j1b"]) > 100 and sum(expected["4j2b"]) > 100, expected  # not an empty selection
    runs = json.loads(result.read_text())
    assert sorted(runs) == sorted(RUNS)
    for name, histogram in runs.items():
        assert np.allclose(histogram["edges"], np.linspace(LO, HI, BINS + 1)), name
        assert {region: histogram[region] for region in ("4j1b", "4j2b")} == expected, name
