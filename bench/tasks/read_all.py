"""``read_all``: every field of the dataset into memory (see ``read.py`` for the tools)."""

from __future__ import annotations

from read import run

if __name__ == "__main__":
    run("read_all", None)
