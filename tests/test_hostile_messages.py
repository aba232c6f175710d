"""Messages about hostile metadata say what is wrong, where, and with the right exit
status:

- an anchor that claims a 1 TiB header (the JSON anchor of an ``ntpl+file://`` dataset,
  the anchor key of a ROOT file, over HTTP too) is bad data: exit status 1 (not 2, a
  usage error), a message naming the file or dataset and the size; Python raises a
  :class:`rntuple.FormatError`, never an :class:`rntuple.InvalidArgumentError`;
- control characters in names and types (a NUL in a type, in a field name, an escape
  sequence) are shown escaped (``\\0``, ``\\x1b``) wherever they are printed: ``info``,
  ``ls``, ``inspect``, ``show``, warnings, errors, Python's messages. No raw control
  byte reaches the terminal.

The hostile files are made here from ``examples/events.root`` (checksums recomputed with
``xxhash``, so only the one field is wrong).
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import server_http
import uproot
import xxhash
from conftest import REPO_ROOT

import rntuple

EVENTS = REPO_ROOT / "examples" / "events.root"
TIB = 1 << 40


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command's result, its output as text (undecodable bytes kept as escapes)."""
    return subprocess.run(
        [str(binary), *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        timeout=120,
        check=False,
    )


def json_anchor_dataset(binary: Path, directory: Path, **fields: int) -> str:
    """An ``ntpl+file://`` dataset of ``examples/events.root`` whose JSON anchor has
    ``fields`` changed (its checksum recomputed); its URL."""
    url = f"ntpl+file://{directory / 'ds'}"
    copied = run(binary, "copy", f"{EVENTS}:Events", url)
    assert copied.returncode == 0, copied.stderr
    anchor_path = directory / "ds.obj"
    anchor = json.loads(anchor_path.read_text())
    anchor.update(fields)
    del anchor["checksum"]
    compact = json.dumps(anchor, sort_keys=True, separators=(",", ":"))
    anchor["checksum"] = xxhash.xxh3_64_intdigest(compact.encode())
    anchor_path.write_text(json.dumps(anchor, sort_keys=True, indent=2))
    return url


def file_anchor(directory: Path, name: str, **fields: int) -> Path:
    """A copy of ``examples/events.root`` whose anchor key has ``fields`` (``nbytes_header``,
    ``len_header``) changed, its checksum recomputed."""
    data = bytearray(EVENTS.read_bytes())
    m = uproot.open(EVENTS)["Events"].members
    order = ["fSeekHeader", "fNBytesHeader", "fLenHeader", "fSeekFooter", "fNBytesFooter", "fLenFooter"]
    values = [m[k] for k in order] + [m["fMaxKeySize"]]
    versions = [m["fVersionEpoch"], m["fVersionMajor"], m["fVersionMinor"], m["fVersionPatch"]]
    old = struct.pack(">4H7Q", *versions, *values)
    at = data.find(old)
    assert at > 0, "the anchor's fields are in the file"
    values[1] = fields.get("nbytes_header", values[1])
    values[2] = fields.get("len_header", values[2])
    new = struct.pack(">4H7Q", *versions, *values)
    data[at : at + len(new)] = new
    data[at + len(new) : at + len(new) + 8] = struct.pack(">Q", xxhash.xxh3_64_intdigest(new))
    path = directory / name
    path.write_bytes(bytes(data))
    return path


def test_a_json_anchor_claiming_a_1_tib_header_is_bad_data(
    rntuple_bin: Callable[[], Path], tmp_path: Path
) -> None:
    url = json_anchor_dataset(rntuple_bin(), tmp_path, nBytesHeader=TIB)
    for command in (["info", url], ["dump", "--json", url], ["verify", url]):
        result = run(rntuple_bin(), *command)
        assert result.returncode == 1, (command, result.stderr)
        # verify reports each input on standard output, the others on standard error.
        output = result.stdout + result.stderr
        assert url in output and str(TIB) in output, output
    with pytest.raises(rntuple.FormatError, match=str(TIB)):
        rntuple.open(url).arrays()


@pytest.mark.parametrize("field", ["nbytes_header", "len_header"])
def test_a_file_anchor_claiming_a_1_tib_header_is_bad_data_locally_and_over_http(
    rntuple_bin: Callable[[], Path], tmp_path: Path, field: str
) -> None:
    path = file_anchor(tmp_path, "hostile.root", **{field: TIB})
    with server_http.serving(tmp_path) as nginx:
        for target in (str(path), nginx.url("hostile.root")):
            result = run(rntuple_bin(), "info", target)
            assert result.returncode == 1, result.stderr
            assert target in result.stderr and str(TIB) in result.stderr, result.stderr
            with pytest.raises(rntuple.FormatError, match=str(TIB)):
                rntuple.open(f"{target}:Events")


def patched_type(binary: Path, directory: Path, old: bytes, new: bytes) -> Path:
    """An uncompressed copy of ``examples/events.root`` whose header has ``old`` (a field
    name or type) replaced by ``new`` of the same length; the header's checksum and every
    reference to it (footer, page lists) recomputed."""
    plain = directory / "plain.root"
    if not plain.exists():
        copied = run(binary, "copy", f"{EVENTS}:Events", str(plain), "--compression", "none")
        assert copied.returncode == 0, copied.stderr
    data = bytearray(plain.read_bytes())
    m = uproot.open(plain)["Events"].members
    sh, nh, sf, nf = m["fSeekHeader"], m["fNBytesHeader"], m["fSeekFooter"], m["fNBytesFooter"]
    header = data[sh : sh + nh]
    old_sum = bytes(header[-8:])
    at = header.find(old)
    assert at > 0 and len(old) == len(new)
    header[at : at + len(old)] = new
    new_sum = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(header[:-8])))
    header[-8:] = new_sum
    data[sh : sh + nh] = header

    def reseal(start: int) -> None:
        length = int.from_bytes(data[start + 2 : start + 8], "little")
        end = start + length
        data[end - 8 : end] = struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(data[start : end - 8])))

    at = data.find(old_sum)
    while at >= 0:
        data[at : at + 8] = new_sum
        # The footer names the header after its feature flags; a page list first.
        reseal(sf if sf <= at < sf + nf else at - 8)
        at = data.find(old_sum, at + 8)
    path = directory / f"patched_{len(list(directory.glob('patched_*')))}.root"
    path.write_bytes(bytes(data))
    return path


def test_control_characters_in_types_and_names_are_shown_escaped(
    rntuple_bin: Callable[[], Path], tmp_path: Path
) -> None:
    binary = rntuple_bin()
    shutil.copy(EVENTS, tmp_path / "events.root")
    nul_type = patched_type(binary, tmp_path, b"std::int32_t", b"std::int\x002_t")
    nul_leaf = patched_type(binary, tmp_path, b"double", b"dou\x00le")
    nul_name = patched_type(binary, tmp_path, b"MET_pt", b"MET\x00pt")
    escape_type = patched_type(binary, tmp_path, b"float", b"\x1b[31m")

    info = run(binary, "info", str(nul_type))
    assert info.returncode == 0, info.stderr
    assert "std::vector<std::pair<float,std::int\\02_t>>" in info.stdout, info.stdout
    info = run(binary, "info", str(nul_leaf))
    assert "MET_pt : dou\\0le" in info.stdout, info.stdout
    assert 'warning: skipping field "MET_pt": unknown leaf type (type "dou\\0le")' in info.stdout
    info = run(binary, "info", str(escape_type))
    assert "\\x1b[31m" in info.stdout and "\x1b" not in info.stdout, info.stdout
    dumped = run(binary, "dump", "--json", str(nul_leaf), "--fields", "run")
    assert dumped.returncode == 0
    assert 'warning: skipping field "MET_pt": unknown leaf type (type "dou\\0le")' in dumped.stderr
    missing = run(binary, "dump", "--json", str(nul_name), "--fields", "MET_ptx")
    assert missing.returncode == 2, missing.stderr
    assert 'did you mean "MET\\0pt"?' in missing.stderr, missing.stderr
    listed = run(binary, "ls", str(nul_name))
    assert "MET\\0pt" in listed.stdout, listed.stdout
    inspected = run(binary, "inspect", str(nul_name))
    assert "MET\\0pt" in inspected.stdout, inspected.stdout
    shown = run(binary, "show", str(nul_name), "--entries", "0:1")
    assert '"MET\\0pt": ' in shown.stdout, shown.stdout
    for result in (info, dumped, missing, listed, inspected, shown):
        assert "\x00" not in result.stdout + result.stderr

    assert rntuple.open(f"{nul_leaf}:Events").warnings == [
        'skipping field "MET_pt": unknown leaf type (type "dou\\0le")'
    ]
    with pytest.raises(rntuple.NotFoundError) as caught:
        rntuple.open(f"{nul_name}:Events").arrays(["MET_ptx"])
    assert "\x00" not in str(caught.value) and "MET\\x00pt" in str(caught.value), caught.value
