"""Checks a ROOT file written by rntuple's ``container::FileWriter`` with ROOT 6.40 and uproot.

Usage::

    python tests/container/check_written.py NEW_FILE NAME=ORIG_FILE:ORIG_NAME [...] [--multikey=NAME,...]

For the file ``NEW_FILE`` it checks that

* ROOT opens it (``TFile.Open``, not a zombie, no recovery), its keys list holds exactly
  the ``ROOT::RNTuple`` keys ``NAME...``, and its StreamerInfo list describes
  ``ROOT::RNTuple``;
* ROOT reads each RNTuple ``NAME`` with every value equal to ROOT's reading of
  ``ORIG_NAME`` in ``ORIG_FILE`` (``tests/rootdump.py``'s rendering, via
  ``ROOT.RNTupleReader``);
* uproot lists the same anchors and reads ``arrays()`` of each equal to the original's,
  except for the RNTuples named with ``--multikey``: uproot (5.7) does not follow the
  chunk offsets of payloads split over several keys (it reads ``fMaxKeySize`` but
  ignores it), so for those its result is only reported, not checked.

Prints one line per check and exits with status 0 only if all pass.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rootdump


def main(argv: list[str]) -> int:
    new = argv[0]
    expect: dict[str, tuple[str, str]] = {}
    multikey: set[str] = set()
    for spec in argv[1:]:
        if spec.startswith("--multikey="):
            multikey.update(spec.split("=", 1)[1].split(","))
            continue
        name, orig = spec.split("=", 1)
        path, orig_name = orig.rsplit(":", 1)
        expect[name] = (path, orig_name)
    failures = 0

    def check(ok: bool, what: str) -> None:
        nonlocal failures
        print(("OK   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            failures += 1

    ROOT = rootdump.load_root()
    f = ROOT.TFile.Open(new)
    check(bool(f) and not f.IsZombie() and not f.TestBit(ROOT.TFile.kRecovered), f"ROOT TFile.Open({new})")
    keys = [(k.GetClassName(), k.GetName()) for k in f.GetListOfKeys()]
    anchors = sorted(n for c, n in keys if c == "ROOT::RNTuple")
    check(anchors == sorted(expect), f"ROOT keys list: {keys}")
    infos = [i.GetName() for i in f.GetStreamerInfoList()]
    check("ROOT::RNTuple" in infos, f"ROOT streamer infos: {infos}")
    f.Close()
    for name, (orig, orig_name) in expect.items():
        ours = rootdump.dump(new, name)
        theirs = rootdump.dump(orig, orig_name)
        check(ours == theirs, f"ROOT reads {name}: {len(ours)} entries, equal to {orig}:{orig_name}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import awkward as ak
        import uproot

    with uproot.open(new) as u:
        classes = u.classnames()
        listed = sorted(k.split(";")[0] for k, c in classes.items() if c == "ROOT::RNTuple")
        check(listed == sorted(expect), f"uproot classnames: {classes}")
        for name, (orig, orig_name) in expect.items():
            if name in multikey:
                try:
                    n = len(u[name].arrays())
                    print(f"NOTE uproot reads multi-key {name}: {n} entries (not checked)")
                except Exception as exc:
                    print(f"NOTE uproot cannot read multi-key {name}: {type(exc).__name__} (not checked)")
                continue
            ours = u[name].arrays()
            with uproot.open(orig) as o:
                theirs = o[orig_name].arrays()
            same = ak.to_list(ours) == ak.to_list(theirs)
            check(same, f"uproot reads {name}: {len(ours)} entries, equal to {orig}:{orig_name}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
