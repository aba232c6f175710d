"""The README's table of settings (issue 47, item 2: "one table in the docs lists every
setting, its variable and its default") stays complete and true:

- every field of ``rntuple_io::SourceOptions`` (and of its nested ``NetworkOptions``,
  ``ReadAhead`` and ``CacheConfig``), read from the source, has a row;
- every field of Python's groups of settings (``RemoteOptions``, ``WriteOptions``,
  ``ConvertOptions``) and every keyword of ``rntuple.merge`` is named in the Python
  column (``name=``);
- every variable the table names is one the library reads (a constant of
  ``crates/rntuple-io/src``), and every one it defines is in the table;
- every option of the command line it names is one the command has (its ``--help``).
"""

from __future__ import annotations

import dataclasses
import inspect
import re

from conftest import REPO_ROOT, run_rntuple

import rntuple
from rntuple.options import RemoteOptions
from rntuple.ttree import ConvertOptions
from rntuple.writing import WriteOptions

IO_SOURCE = REPO_ROOT / "crates" / "rntuple-io" / "src"


def _table() -> list[dict[str, str]]:
    """The rows of the table under ``### Settings``, by column name."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme[readme.index("### Settings") :]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split(" | ")]
    assert header == ["setting (Rust)", "variable", "command line", "Python", "default"], header
    rows = []
    for line in lines[1:]:
        if not line.startswith("| `") and not line.startswith("| ("):
            break  # the next table
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == len(header), line
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _struct_fields(name: str) -> list[str]:
    """The public fields of the Rust struct ``name`` in ``crates/rntuple-io/src``."""
    for path in sorted(IO_SOURCE.rglob("*.rs")):
        found = re.search(rf"pub struct {name} \{{(.*?)\n\}}", path.read_text(), re.S)
        if found:
            return re.findall(r"^\s+pub (\w+):", found.group(1), re.M)
    raise AssertionError(f"no struct {name} in {IO_SOURCE}")


def test_the_table_has_a_row_for_every_field_of_the_source_options() -> None:
    settings = {re.sub(r"`([^`]*)`.*", r"\1", row["setting (Rust)"]) for row in _table()}
    nested = {"network": "NetworkOptions", "read_ahead": "ReadAhead", "cache": "CacheConfig"}
    expected = set()
    for field in _struct_fields("SourceOptions"):
        if field in nested:
            expected |= {f"SourceOptions.{field}.{sub}" for sub in _struct_fields(nested[field])}
        else:
            expected.add(f"SourceOptions.{field}")
    assert len(expected) >= 15, expected
    assert expected - settings == set(), "settings missing from the README's table"
    listed = {s for s in settings if s.startswith("SourceOptions.")}
    assert listed - expected == set(), "rows of settings SourceOptions does not have"


def test_the_python_column_names_every_keyword_of_the_settings_groups() -> None:
    python = " ".join(row["Python"] for row in _table())
    named = set(re.findall(r"`(?:rntuple\.Cache\()?(\w+)=", python))
    groups = [RemoteOptions, WriteOptions, ConvertOptions]
    keywords = {f.name for group in groups for f in dataclasses.fields(group)}
    merge = inspect.signature(rntuple.merge).parameters.values()
    keywords |= {p.name for p in merge if p.kind == p.KEYWORD_ONLY}
    # The cache's own settings are named as rntuple.Cache's (validate=, max_bytes=).
    assert keywords - named == set(), "keywords missing from the README's table"
    assert named - keywords - {"validate", "max_bytes"} == set(), "keywords Python does not take"


def test_the_table_names_only_variables_and_options_that_exist() -> None:
    rows = _table()
    variables = set(re.findall(r"`(RNTUPLE_\w+)`", " ".join(row["variable"] for row in rows)))
    defined = set()
    for path in IO_SOURCE.rglob("*.rs"):
        defined |= set(re.findall(r'pub const \w+_VARIABLE: &str = "(RNTUPLE_\w+)"', path.read_text()))
    assert variables == defined, variables ^ defined
    flags = set(re.findall(r"--[a-z][a-z-]+", " ".join(row["command line"] for row in rows)))
    helps = ""
    for command in ([], ["copy"], ["convert"], ["merge"]):
        done = run_rntuple(*command, "--help")
        assert done.returncode == 0, done.stderr
        helps += done.stdout
    offered = set(re.findall(r"--[a-z][a-z-]+", helps))
    assert flags - offered == set(), "options the command does not have"
