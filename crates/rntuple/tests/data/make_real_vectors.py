"""Regenerates real_pages.txt: the raw (uncompressed) pages of the floating-point fields in
the rntuple-validation 1.0 files types.fundamental.{real,real32trunc,real32quant}.root, with
ROOT's values for them from the matching read/*.json (C99 hex floats), via uproot.

One line per column page:
  <file> <field> <float|double> <column type> <bits> <min bits hex> <max bits hex> <n>
  <page hex> <expected f64 bits hex, comma-separated>
(all on one line).
"""

import json
import os
import struct
import sys
from pathlib import Path

import uproot


def bits(x: float) -> str:
    """The IEEE-754 bit pattern of the double ``x`` as 16 hex digits."""
    return f"{struct.unpack('<Q', struct.pack('<d', x))[0]:016x}"


#: ``../shared/conformance/rntuple-validation-1.0`` beside the repository, or
#: ``$RNTUPLE_CONFORMANCE_DIR``; a command-line argument overrides both.
REPO_ROOT = Path(__file__).resolve().parents[4]
DEFAULT = os.environ.get("RNTUPLE_CONFORMANCE_DIR") or str(
    REPO_ROOT.parent / "shared" / "conformance" / "rntuple-validation-1.0"
)
base = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
out = []
for name in ["types.fundamental.real", "types.fundamental.real32trunc", "types.fundamental.real32quant"]:
    nt = uproot.open(f"{base}/write/{name}.root")["ntpl"]
    expected = json.load(open(f"{base}/read/{name}.json"))
    raw = open(f"{base}/write/{name}.root", "rb").read()
    fields = nt.field_records
    for col in nt.column_records:
        field = fields[col.field_id]
        for cluster in nt.page_link_list:
            pages = cluster[col.idx]
            assert pages.compression_settings == 0 or True
            first = pages.element_offset
            for page in pages.pages:
                loc = page.locator
                data = raw[loc.offset : loc.offset + loc.num_bytes]
                n = page.num_elements
                vals = [float.fromhex(e[field.field_name]) for e in expected[first : first + n]]
                first += n
                lo = col.min_value if col.min_value is not None else 0.0
                hi = col.max_value if col.max_value is not None else 0.0
                out.append(
                    f"{name} {field.field_name} {field.type_name} {col.type} {col.nbits} "
                    f"{bits(lo)} {bits(hi)} {n} {data.hex()} {','.join(bits(v) for v in vals)}"
                )
(Path(__file__).resolve().parent / "real_pages.txt").write_text("\n".join(out) + "\n")
