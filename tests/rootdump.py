"""Render an RNTuple as ROOT 6.40 reads it, as JSON per the conformance rules.

The rendering rules are those of ``/work/shared/conformance/README.md``: a JSON list
with one object per entry keyed by the top-level field names in schema order; floats
and doubles as C99 hex strings (``printf("%a")``); maps as objects; pairs/tuples as
lists; optionals as value or ``null``; variants as the active value; bitsets as
``"0101..."`` strings (MSB first); records/classes as objects (base class ``":_0"``).

The actual walk over the values is C++ (``tests/cxx/rootdump.hxx``), JIT-compiled
into ROOT's interpreter, so that float bits are formatted exactly by ``snprintf``.

Command line::

    python tests/rootdump.py FILE[:NAME] [--entries START:STOP] [--fields A,B]
    python tests/rootdump.py --validate [CONFORMANCE_DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

CXX_DIR = Path(__file__).resolve().parent / "cxx"
DEFAULT_CONFORMANCE = Path("/work/shared/conformance/rntuple-validation-1.0")
DEFAULT_NTUPLE = "ntpl"

_declared = False


def load_root() -> Any:
    """Import PyROOT quietly (the PyPI build warns that it is alpha) and return it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ROOT

    ROOT.gROOT.SetBatch(True)
    return ROOT


def _declare() -> Any:
    """JIT-compile the C++ renderer once per process and return the ROOT module."""
    global _declared
    ROOT = load_root()
    if not _declared:
        code = (CXX_DIR / "rootdump.hxx").read_text()
        if not ROOT.gInterpreter.Declare(code):
            raise RuntimeError("failed to declare tests/cxx/rootdump.hxx in cling")
        _declared = True
    return ROOT


def parse_target(target: str, default_name: str = DEFAULT_NTUPLE) -> tuple[str, str]:
    """Split ``FILE[:NAME]`` into (file, ntuple name)."""
    if ":" in target and not os.path.exists(target):
        path, name = target.rsplit(":", 1)
        return path, name
    return target, default_name


def parse_entries(spec: str | None) -> tuple[int, int]:
    """Parse ``START:STOP`` (either side may be empty) into (start, stop); stop -1 = end."""
    if not spec:
        return 0, -1
    start_s, _, stop_s = spec.partition(":")
    start = int(start_s) if start_s else 0
    stop = int(stop_s) if stop_s else -1
    return start, stop


def dump_text(path: str, name: str = DEFAULT_NTUPLE, start: int = 0, stop: int = -1) -> str:
    """Return ROOT's reading of entries ``[start, stop)`` as JSON text."""
    ROOT = _declare()
    return str(ROOT.rntuple_interop.DumpJson(str(path), name, start, stop, True))


def describe_streamed(class_name: str, data: list[int]) -> dict[str, Any]:
    """Deserialize bytes stored by an ``RStreamerField`` with ROOT and summarise the object.

    Supported: TH1 classes (name, title, nbins, entries, bin contents incl. under/overflow
    as hex floats) and TObjString (the string); ``consumed`` is how many bytes ROOT read.
    """
    ROOT = _declare()
    vec = ROOT.std.vector["unsigned char"]()
    for b in data:
        vec.push_back(b)
    return json.loads(str(ROOT.rntuple_interop.DescribeStreamed(class_name, vec)))


def restrict_fields(entries: list[dict[str, Any]], fields: list[str] | None) -> list[dict[str, Any]]:
    """Keep only the given top-level fields, in the order given."""
    if fields is None:
        return entries
    return [{f: e[f] for f in fields} for e in entries]


def dump(
    path: str | os.PathLike[str],
    name: str = DEFAULT_NTUPLE,
    entries: str | tuple[int, int] | None = None,
    fields: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Return ROOT's reading of an RNTuple as parsed JSON (a list of entry objects)."""
    if isinstance(entries, tuple):
        start, stop = entries
    else:
        start, stop = parse_entries(entries)
    data = json.loads(dump_text(str(path), name, start, stop))
    return restrict_fields(data, fields)


def _compare_case(root_file: Path, expected_file: Path) -> tuple[bool, str]:
    """Compare our rendering of one conformance case with its reference JSON."""
    expected = json.loads(expected_file.read_text())
    try:
        got: Any = dump(root_file, DEFAULT_NTUPLE)
    except Exception as exc:
        match = re.search(r"RException: (.*?) At:", " ".join(str(exc).split()))
        if not match:
            raise
        got = {"error": match.group(1)}
        return got == expected, f"error {match.group(1)!r}"
    if isinstance(expected, dict) and root_file.stem.startswith("compression."):
        # These reference files hold the sum of the single Int64 column, not the entries.
        (key,) = expected
        total = sum(e[key] for e in got)
        return total == expected[key], f"{len(got)} entries, sum {total}"
    if got == expected:
        return True, f"{len(got)} entries"
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            return False, f"entry {i}: got {json.dumps(g)[:300]} expected {json.dumps(e)[:300]}"
    return False, f"entry count: got {len(got)} expected {len(expected)}"


def validate(conformance_dir: Path = DEFAULT_CONFORMANCE) -> dict[str, tuple[str, str]]:
    """Check the renderer on every conformance case, each in its own process.

    A separate process per case isolates crashes (ROOT aborts on some files that need
    dictionaries it does not have).  Returns ``{case: (status, detail)}``.
    """
    results: dict[str, tuple[str, str]] = {}
    for root_file in sorted((conformance_dir / "write").glob("*.root")):
        case = root_file.stem
        expected_file = conformance_dir / "read" / f"{case}.json"
        proc = subprocess.run(
            [sys.executable, __file__, "--check-case", str(root_file), str(expected_file)],
            capture_output=True,
            text=True,
            check=False,
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("OK ", "DIFF ", "ERROR "))]
        if lines:
            status, _, detail = lines[-1].partition(" ")
        else:
            err = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            status, detail = "CRASH", f"exit {proc.returncode}: " + (err[0] if err else "")
        results[case] = (status, detail)
    return results


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", help="FILE[:NAME] (NAME defaults to 'ntpl')")
    ap.add_argument("--entries", help="START:STOP entry range (STOP exclusive)")
    ap.add_argument("--fields", help="comma-separated top-level fields to keep")
    ap.add_argument(
        "--validate", nargs="?", const=str(DEFAULT_CONFORMANCE), help="check against the conformance data"
    )
    ap.add_argument(
        "--stl-dicts",
        action="store_true",
        help="first build the STL dictionaries nested.root needs (rootgen)",
    )
    ap.add_argument("--check-case", nargs=2, metavar=("ROOT", "JSON"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.check_case:
        try:
            ok, detail = _compare_case(Path(args.check_case[0]), Path(args.check_case[1]))
        except Exception as exc:
            msg = " ".join(str(exc).split())
            print(f"ERROR {msg[:300]}")
            return 1
        print(("OK " if ok else "DIFF ") + detail)
        return 0 if ok else 1
    if args.validate:
        results = validate(Path(args.validate))
        for case, (status, detail) in results.items():
            print(f"{status:6} {case:45} {detail}")
        n_ok = sum(1 for s, _ in results.values() if s == "OK")
        print(f"{n_ok}/{len(results)} cases reproduced exactly")
        return 0
    if not args.target:
        ap.error("a target FILE[:NAME] is required")
    if args.stl_dicts:
        import rootgen

        rootgen.ensure_dictionaries()
    path, name = parse_target(args.target)
    fields = args.fields.split(",") if args.fields else None
    data = dump(path, name, args.entries, fields)
    json.dump(data, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
