"""``rntuple inspect`` against ROOT 6.40's ``RNTupleInspector``: for every conformance case
(but the unreadable ``structure.feature_flag``) and the README's example file, the
compressed size, uncompressed size and element count of every physical column, and the
compressed and uncompressed sizes of every field (its subfields included), are ROOT's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import conformance_data
import pytest
from conftest import REPO_ROOT, require_rntuple_bin

from rootdump import load_root

FILES = [c for c in conformance_data.cases() if c != "structure.feature_flag"]


def _ours(path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [str(require_rntuple_bin()), "inspect", f"{path}", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _roots(path: Path, name: str) -> dict[str, Any]:
    ROOT = load_root()
    insp = ROOT.Experimental.RNTupleInspector.Create(name, str(path))
    d = insp.GetDescriptor()
    columns = {}
    for c in d.GetColumnIterable():
        if c.IsAliasColumn():
            continue
        ci = insp.GetColumnInspector(c.GetPhysicalId())
        columns[int(c.GetPhysicalId())] = (
            int(ci.GetCompressedSize()),
            int(ci.GetUncompressedSize()),
            int(ci.GetNElements()),
        )
    fields = {}
    for f in d.GetFieldIterable(d.GetFieldZeroId()):
        stack = [f]
        while stack:
            g = stack.pop()
            if g.IsProjectedField():
                continue
            fi = insp.GetFieldTreeInspector(g.GetId())
            fields[str(d.GetQualifiedFieldName(g.GetId()))] = (
                int(fi.GetCompressedSize()),
                int(fi.GetUncompressedSize()),
            )
            stack.extend(d.GetFieldIterable(g.GetId()))
    return {
        "columns": columns,
        "fields": fields,
        "compressed": int(insp.GetCompressedSize()),
        "uncompressed": int(insp.GetUncompressedSize()),
    }


@pytest.mark.parametrize("case", [*FILES, "examples/events.root"])
def test_inspect_equals_roots_inspector(case: str) -> None:
    if case.endswith(".root"):
        path, name = REPO_ROOT / case, "Events"
    else:
        path, name = conformance_data.write_file(case), "ntpl"
    ours = _ours(path)
    theirs = _roots(path, name)
    got_columns = {c["id"]: (c["compressed"], c["uncompressed"], c["elements"]) for c in ours["columns"]}
    assert got_columns == theirs["columns"]
    got_fields = {f["name"]: (f["compressed"], f["uncompressed"]) for f in ours["fields"]}
    assert got_fields == theirs["fields"]
    assert (ours["compressed"], ours["uncompressed"]) == (theirs["compressed"], theirs["uncompressed"])
