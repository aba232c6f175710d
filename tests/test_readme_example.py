"""The README's Python analysis example runs as written and fills the histogram an
independent reading (uproot) of the same file gives."""

from __future__ import annotations

import os
import re
from pathlib import Path

import awkward as ak
import hist
import numpy as np
import pytest
import uproot

REPO_ROOT = Path(__file__).resolve().parent.parent


def readme_python_block() -> str:
    """The one ```python block of the README's "Python" section."""
    text = (REPO_ROOT / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, f"expected one python block in the Python section, found {len(blocks)}"
    return blocks[0]


def test_readme_example(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code = readme_python_block()
    assert len(code.strip().splitlines()) <= 10
    monkeypatch.chdir(REPO_ROOT)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    h = namespace["h"]
    assert isinstance(h, hist.Hist)
    assert capsys.readouterr().out.strip(), "the example prints its histogram"

    events = uproot.open(os.fspath(REPO_ROOT / "examples" / "events.root"))["Events"].arrays(["Jet_pt"])
    leading = []
    for jets in ak.to_list(events.Jet_pt):
        good = [pt for pt in jets if pt > 30]
        if len(good) >= 2:
            leading.append(max(good))
    edges = np.linspace(0, 200, 21)
    expected, _ = np.histogram(np.array(leading), bins=edges)
    overflow = sum(1 for pt in leading if pt >= 200)
    assert len(leading) > 100
    np.testing.assert_array_equal(h.values(), expected)
    assert h.values(flow=True)[-1] == overflow
    assert h.sum(flow=True) == len(leading)
