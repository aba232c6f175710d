"""``read_subset``: the 12 analysis fields (``schema.ANALYSIS_FIELDS``) into memory (see ``read.py``)."""

from __future__ import annotations

from read import run
from schema import ANALYSIS_FIELDS

if __name__ == "__main__":
    run("read_subset", list(ANALYSIS_FIELDS))
