#!/usr/bin/env python3
"""Prints what uproot finds in each ROOT file given: every RNTuple anchor (recursively,
highest cycle) with the anchor's fields, one tab-separated line per anchor:

  FILE  PATH  CLASS  fSeekHeader  fNBytesHeader  fLenHeader  fSeekFooter  fNBytesFooter
  fLenFooter  fMaxKeySize

An independent reference for the Rust container tests (crates/rntuple/tests/container.rs).
"""

import sys

import uproot

ANCHOR_CLASSES = ("ROOT::RNTuple", "ROOT::Experimental::RNTuple")
FIELDS = (
    "fSeekHeader",
    "fNBytesHeader",
    "fLenHeader",
    "fSeekFooter",
    "fNBytesFooter",
    "fLenFooter",
    "fMaxKeySize",
)


def main():
    for path in sys.argv[1:]:
        with uproot.open(path) as f:
            for name, cls in f.classnames(recursive=True, cycle=False).items():
                if cls not in ANCHOR_CLASSES:
                    continue
                members = f[name].all_members
                values = [str(int(members[field])) for field in FIELDS]
                print("\t".join([path, name, cls, *values]))


if __name__ == "__main__":
    main()
