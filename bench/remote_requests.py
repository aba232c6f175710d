"""The requests of remote reads, this checkout's build against another's:
``python3 bench/remote_requests.py --baseline DIR [--data DIR]``.

Serves the remote bench's file (``big.root``, 500 MB, written by ``tests/remote_data.py``)
over http:// (nginx), root:// (xrootd) and s3:// (moto), as ``remote.py`` does, and runs
``rntuple read-bench URL --json`` of both release builds on every field and on 5 of
them: the requests and bytes of opening and of reading must be the same (a change to
the code's shape must not change what it asks a server for). Prints one line per case
and exits with 1 if any differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

# First: it puts tests/, python/ and bench/tasks/ on sys.path.
from paths import RELEASE_CLI

# isort: split

from remote_data import write_big

FIVE = ["Jet_pt", "Jet_eta", "Muon_pt", "MET_pt", "PV_npvs"]
#: What ``read-bench --json`` says of the requests and bytes of a read.
KEYS = ["open_requests", "requests", "vector_requests", "open_bytes_read", "bytes_read", "bytes_used"]


def requests(cli: Path, url: str, env: dict[str, str], fields: list[str] | None) -> dict[str, int]:
    """The requests and bytes of one ``read-bench`` of ``url`` by the binary ``cli``."""
    cmd = [str(cli), "read-bench", url, "--json"] + (["--fields", ",".join(fields)] if fields else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    result = json.loads(out)
    return {k: result[k] for k in KEYS}


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout, built (release)")
    parser.add_argument("--data", type=Path, default=None, help="a directory to keep big.root in")
    args = parser.parse_args()
    baseline = args.baseline.resolve() / "target" / "release" / "rntuple"
    for cli in (RELEASE_CLI, baseline):
        if not cli.is_file():
            raise SystemExit(f"{cli} is missing: cargo build --release -p rntuple-cli there")
    data = args.data or Path(tempfile.mkdtemp(prefix="rntuple-requests-"))
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "big.root").exists():
        write_big(str(data / "big.root"))
    import server_http
    import server_s3
    import server_xrootd

    differ = 0
    for protocol, module in [("http", server_http), ("root", server_xrootd), ("s3", server_s3)]:
        server = module.start(data)
        env = {**os.environ, **(dict(server.env()) if hasattr(server, "env") else {})}
        try:
            for fields in [None, FIVE]:
                ours = requests(RELEASE_CLI, server.url("big.root"), env, fields)
                theirs = requests(baseline, server.url("big.root"), env, fields)
                verdict = "same" if ours == theirs else "DIFFERENT"
                differ += ours != theirs
                what = "every field" if fields is None else "5 fields"
                print(f"{protocol}://, {what}: {verdict}: this {json.dumps(ours)}", flush=True)
                if ours != theirs:
                    print(f"    baseline {json.dumps(theirs)}", flush=True)
        finally:
            server.stop()
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
