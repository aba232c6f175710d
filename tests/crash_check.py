"""ROOT 6.40's reading of the files of tests/test_crash_recovery.py, in a process of its
own: ``python tests/crash_check.py groups FILE`` prints the cluster groups of FILE as
JSON (``[[page_list_end, entry_end], ...]``); ``python tests/crash_check.py check
FILE...`` reads every value of each FILE with ROOT and prints one JSON object per file
(``entries``, ``mismatches``, ``first_mismatch``, or ``error`` if ROOT cannot read it);
``python tests/crash_check.py write FILE ENTRIES CLUSTER`` writes the same values with
ROOT's own writer, a cluster group committed every CLUSTER entries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEADER = Path(__file__).resolve().parent / "cxx" / "crash_check.hxx"


def main(argv: list[str]) -> int:
    """Runs one of the two commands."""
    import ROOT

    if not ROOT.gInterpreter.Declare(f'#include "{HEADER}"'):
        print("cannot declare crash_check.hxx", file=sys.stderr)
        return 2
    command, files = argv[0], argv[1:]
    if command == "write":
        ROOT.rntuple_crash_check.Write(files[0], int(files[1]), int(files[2]))
        return 0
    if command == "groups":
        pairs = [p.split(":") for p in str(ROOT.rntuple_crash_check.Groups(files[0])).split()]
        print(json.dumps([[int(a), int(b)] for a, b in pairs]))
        return 0
    for path in files:
        try:
            entries, bad, first = (int(x) for x in str(ROOT.rntuple_crash_check.Check(path)).split())
            print(json.dumps({"file": path, "entries": entries, "mismatches": bad, "first_mismatch": first}))
        except Exception as e:
            print(json.dumps({"file": path, "error": str(e)}))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
