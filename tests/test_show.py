"""``rntuple show`` against ROOT 6.40's ``RNTupleReader::Show``, and ``rntuple dump --jsonl``
against ``rntuple dump --json``.

For every conformance case (but ``structure.feature_flag``, which nobody reads) and the
README's example file, ROOT's Show prints every entry (the first and last 100 of a case
with more than 1000) and so does ``rntuple show``. The two texts are parsed (records,
collections, strings, bare values) and compared, floats by value: ROOT writes 6
significant digits (``%g``), we write the shortest decimal that reads back exactly, so ours
must print as ROOT's under ``%g`` and be exactly the value ROOT reads (``rootdump``). An
entry without any other difference must be the same text token for token, whitespace
included.

Every other difference belongs to a class of :data:`EXPECTED`, which says why, in which
cases it appears, and how our value is checked instead (against ROOT's reading of the
same entries, ``rootdump.dump``); each case shows exactly the classes the table gives it.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import conformance_data
import pytest
from conftest import REPO_ROOT, TESTS_DIR, require_rntuple_bin

import rootdump
import rootgen

SHOWN = [c for c in conformance_data.cases() if c != "structure.feature_flag"]
#: The README's example file (written by this project), shown too.
EVENTS = "examples/events.root"
#: Cases with more entries than this are compared on their first and last 100 entries.
ALL_ENTRIES_UP_TO = 1000
EDGE = 100

# --- The expected differences ----------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """A class of differences from ROOT's Show: why, and in which cases it appears."""

    reason: str
    cases: frozenset[str]


_UNORDERED = frozenset(c for c in SHOWN if c.startswith("types.unordered_"))
_FLOATS = frozenset(
    {"types.fundamental.real", "types.fundamental.real32quant", "types.fundamental.real32trunc", EVENTS}
)
#: Cases with a char or string that holds a control character or a byte past ASCII.
_CONTROL_CHARS = frozenset({"types.atomic", "types.fundamental.misc", "types.user.enum"})
_VARIANTS = frozenset(
    {
        "types.array",
        "types.optional",
        "types.pair",
        "types.tuple",
        "types.unique_ptr",
        "types.user.class",
        "types.variant",
    }
)

#: Every way ``rntuple show`` may differ from ROOT's Show, and where it does.
EXPECTED: dict[str, Difference] = {
    "float digits": Difference(
        "floats are written with the shortest decimal that reads back to the same value "
        "(2.2755547, -3.4028235e+38), ROOT's stream with 6 significant digits (2.27555, "
        "-3.40282e+38); ours prints as ROOT's under %g and is the exact value",
        _FLOATS,
    ),
    "variant": Difference(
        "ROOT 6.40's Show cannot print a std::variant: it writes "
        '"<unsupported type: std::variant<...>>"; we print the active alternative (null '
        "when valueless), which must equal ROOT's reading",
        _VARIANTS,
    ),
    "cardinality": Difference(
        "ROOT 6.40's Show throws for a ROOT::RNTupleCardinality field (RPrintValueVisitor "
        "asks the value for std::uint32_t/std::uint64_t, the value is an "
        "RNTupleCardinality: 'type mismatch'), so it prints no entry of the file; we print "
        "the number, which must equal ROOT's reading",
        frozenset({"projections.cardinality"}),
    ),
    "escaped control characters": Difference(
        "ROOT writes a char or a string as its bytes, control characters included (they "
        "reach the terminal as commands); we write a control character or a char past "
        r"ASCII as a C escape (\0, \n, \x1b, \xff), which must be ROOT's byte",
        _CONTROL_CHARS,
    ),
    "unordered order": Difference(
        "ROOT lists an unordered container in the order of the hash table it re-inserts "
        "the elements into; we list them in the order stored; the elements are the same",
        _UNORDERED,
    ),
}


def expected_classes(case: str) -> set[str]:
    """The difference classes :data:`EXPECTED` gives ``case``."""
    return {name for name, d in EXPECTED.items() if case in d.cases}


# --- Parsing Show's text ---------------------------------------------------------------


@dataclass(frozen=True)
class Bare:
    """A value written without quotes: a number, ``true``, ``null``, ``0x02``, a char."""

    text: str


@dataclass(frozen=True)
class Str:
    """A value in double quotes: a string, a bitset, ROOT's ``<unsupported type: ...>``."""

    text: str


@dataclass(frozen=True)
class Record:
    """``{"name": value, ...}``, members in order."""

    members: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Seq:
    """``[value, ...]``."""

    items: tuple[Any, ...]


class _Parser:
    """Parses Show's output: entries ``{...}\\n`` one after the other. Whitespace between
    tokens is skipped but kept in :attr:`tokens` (with every other token), so that two
    texts can also be compared token for token."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.tokens: list[tuple[str, str]] = []

    def fail(self, what: str) -> None:
        """Raise a ValueError naming the place."""
        raise ValueError(f"{what} at offset {self.i}: {self.s[self.i : self.i + 60]!r}")

    def take(self, kind: str, j: int) -> str:
        """Consume ``s[i:j]`` as a token of ``kind``."""
        text = self.s[self.i : j]
        self.tokens.append((kind, text))
        self.i = j
        return text

    def space(self) -> None:
        """Consume spaces and new lines."""
        j = self.i
        while j < len(self.s) and self.s[j] in " \n":
            j += 1
        if j > self.i:
            self.take("space", j)

    def punct(self, ch: str) -> None:
        """Consume ``ch``."""
        if not self.s.startswith(ch, self.i):
            self.fail(f"expected {ch!r}")
        self.take("punct", self.i + len(ch))

    def value(self) -> Any:
        """One value, starting right here (a char may be a space)."""
        if self.i >= len(self.s):
            self.fail("expected a value")
        c = self.s[self.i]
        if c == "{":
            return self.record()
        if c == "[":
            return self.seq()
        if c == '"':
            # Neither ROOT nor we escape quotes in strings: a string ends at the first
            # quote that a delimiter follows.
            match = re.compile(r'"(?=[,\]}\n]|$)').search(self.s, self.i + 1)
            if match is None:
                self.fail("unterminated string")
            return Str(self.take("str", match.end())[1:-1])
        # A bare value runs to the next delimiter; its first character is always its own
        # (a char field may hold a delimiter).
        j = self.i + 1
        while j < len(self.s) and self.s[j] not in ",]}\n":
            j += 1
        return Bare(self.take("bare", j))

    def record(self) -> Record:
        """``{...}`` over one line or several."""
        self.punct("{")
        self.space()
        members = []
        if self.s.startswith("}", self.i):
            self.punct("}")
            return Record(())
        while True:
            self.space()
            if not self.s.startswith('"', self.i):
                self.fail("expected a member name")
            end = self.s.find('": ', self.i + 1)
            name = self.take("name", end + 1)[1:-1]
            self.punct(": ")
            members.append((name, self.value()))
            self.space()
            if self.s.startswith(",", self.i):
                self.punct(",")
                continue
            self.punct("}")
            return Record(tuple(members))

    def seq(self) -> Seq:
        """``[a, b, ...]`` on one line."""
        self.punct("[")
        items = []
        if self.s.startswith("]", self.i):
            self.punct("]")
            return Seq(())
        while True:
            items.append(self.value())
            if self.s.startswith(", ", self.i):
                self.punct(", ")
                continue
            self.punct("]")
            return Seq(tuple(items))

    def entries(self) -> list[tuple[Record, list[tuple[str, str]]]]:
        """Every entry, each with its tokens."""
        out = []
        while self.i < len(self.s):
            self.tokens = []
            entry = self.record()
            self.punct("\n")
            out.append((entry, self.tokens))
        return out


def parse_show(text: str) -> list[tuple[Record, list[tuple[str, str]]]]:
    """The entries of Show's output, each as a :class:`Record` with its tokens."""
    return _Parser(text).entries()


# --- Comparing -------------------------------------------------------------------------


def _as_float32(x: float) -> float | None:
    """``x`` rounded to a float, or None if it does not fit one."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return None


def float_agrees(ours: str, root: str) -> bool:
    """Whether our number prints as ROOT's under ``%g`` (6 digits), as a double or a float."""
    if ours == root:
        return True
    try:
        x = float(ours)
    except ValueError:
        return False
    return root in {f"{x:g}", f"{_as_float32(x):g}"}


def _canonical(v: Any) -> Any:
    """``v`` with every collection sorted (recursively), to compare as multisets."""
    if isinstance(v, Seq):
        return ("seq", tuple(sorted((_canonical(x) for x in v.items), key=repr)))
    if isinstance(v, Record):
        return ("rec", tuple((k, _canonical(x)) for k, x in v.members))
    return v


@dataclass(frozen=True)
class Found:
    """One difference found: its class, where (member names and indices), both values."""

    cls: str
    path: tuple[Any, ...]
    root: Any
    ours: Any


def compare(root: Any, ours: Any, path: tuple[Any, ...], found: list[Found]) -> None:
    """Append to ``found`` every difference between ROOT's value and ours, classified
    (``mismatch`` for one no class explains)."""
    if root == ours:
        return
    if isinstance(root, Str) and root.text.startswith("<unsupported type: std::variant<"):
        found.append(Found("variant", path, root, ours))
    elif (
        isinstance(root, Str) and root.text.startswith("<ROOT error: ") and "RNTupleCardinality" in root.text
    ):
        found.append(Found("cardinality", path, root, ours))
    elif type(root) is type(ours) and isinstance(root, Bare | Str) and unescaped(ours.text) == raw(root.text):
        found.append(Found("escaped control characters", path, root, ours))
    elif isinstance(root, Bare) and isinstance(ours, Bare) and float_agrees(ours.text, root.text):
        found.append(Found("float digits", path, root, ours))
    elif isinstance(root, Seq) and isinstance(ours, Seq):
        inside: list[Found] = []
        if len(root.items) == len(ours.items):
            for k, (r, o) in enumerate(zip(root.items, ours.items, strict=True)):
                compare(r, o, (*path, k), inside)
        if len(root.items) == len(ours.items) and all(f.cls != "mismatch" for f in inside):
            found.extend(inside)
        elif _canonical(root) == _canonical(ours):
            found.append(Found("unordered order", path, root, ours))
        else:
            found.append(Found("mismatch", path, root, ours))
    elif isinstance(root, Record) and isinstance(ours, Record):
        if [k for k, _ in root.members] != [k for k, _ in ours.members]:
            found.append(Found("mismatch", path, root, ours))
            return
        for (k, r), (_, o) in zip(root.members, ours.members, strict=True):
            compare(r, o, (*path, k), found)
    else:
        found.append(Found("mismatch", path, root, ours))


def raw(text: str) -> bytes:
    """The bytes of a shown value as the text was read (``surrogateescape``)."""
    return text.encode("utf-8", "surrogateescape")


#: The C escapes ``rntuple show`` writes: ``\0``, ``\n``, ``\t``, ``\r``, ``\xNN``, ``\u{N}``.
_ESCAPE = re.compile(r"\\(0|n|t|r|x[0-9a-f]{2}|u\{[0-9a-f]+\})")


def unescaped(text: str) -> bytes:
    """The bytes of a value we show with C escapes, the escapes decoded."""
    simple = {"0": b"\0", "n": b"\n", "t": b"\t", "r": b"\r"}
    out = bytearray()
    at = 0
    for m in _ESCAPE.finditer(text):
        out += raw(text[at : m.start()])
        body = m.group(1)
        if body in simple:
            out += simple[body]
        elif body.startswith("x"):
            out.append(int(body[1:], 16))
        else:
            out += chr(int(body[2:-1], 16)).encode()
        at = m.end()
    out += raw(text[at:])
    return bytes(out)


def same_tokens(root: list[tuple[str, str]], ours: list[tuple[str, str]]) -> bool:
    """Whether two entries are the same text, token for token (whitespace included),
    numbers compared as ROOT prints them."""
    return len(root) == len(ours) and all(
        r == o or (r[0] == o[0] == "bare" and float_agrees(o[1], r[1]))
        for r, o in zip(root, ours, strict=True)
    )


def plain(v: Any) -> Any:
    """A shown value as the reference JSON has it (numbers, strings, lists; null)."""
    if isinstance(v, Seq):
        return [plain(x) for x in v.items]
    if isinstance(v, Str):
        return v.text
    if isinstance(v, Bare):
        if v.text == "null":
            return None
        return float(v.text) if re.search(r"[.eEna]", v.text) else int(v.text)
    return {k: plain(x) for k, x in v.members}


def reference_at(entry: Any, path: tuple[Any, ...]) -> Any:
    """The value at a Show path in an entry of the reference JSON: records are objects,
    pairs and tuples lists (member ``_N`` is item N)."""
    v = entry
    for step in path:
        if isinstance(v, list) and isinstance(step, str):
            step = int(step[1:])
        v = v[step]
    return v


def check_found(f: Found, ref_entry: dict[str, Any]) -> None:
    """Check our value where it differs from ROOT's Show, against ROOT's reading."""
    ref = reference_at(ref_entry, f.path)
    if f.cls == "float digits":
        x, want = float(f.ours.text), float.fromhex(ref)
        assert x == want or _as_float32(x) == want, f"{f.path}: {f.ours.text} is not {ref}"
    elif f.cls in ("variant", "cardinality"):
        assert plain(f.ours) == ref, f"{f.path}: {f.ours} is not ROOT's reading {ref!r}"
    elif f.cls == "unordered order":
        assert _canonical(f.root) == _canonical(f.ours)
    elif f.cls == "escaped control characters":
        # The reference has a char as its number, a string as its text.
        want = bytes([ref % 256]) if isinstance(ref, int) else str(ref).encode()
        assert unescaped(f.ours.text) == want, f"{f.path}: {f.ours.text} is not {ref!r}"


# --- Running both ----------------------------------------------------------------------

_declared = False


def root_show(path: Path, name: str, start: int, stop: int) -> str:
    """ROOT's Show of entries [start, stop) (``tests/cxx/rootshow.hxx``)."""
    global _declared
    ROOT = rootdump.load_root()
    if not _declared:
        assert ROOT.gInterpreter.Declare((TESTS_DIR / "cxx" / "rootshow.hxx").read_text())
        _declared = True
    rootdump.prepare(path, name)  # enums and STL dictionaries ROOT needs
    return str(ROOT.rntuple_show.ShowEntries(str(path), name, start, stop))


def our_show(target: Path | str, *args: str) -> str:
    """``rntuple show TARGET ARGS...``'s output."""
    proc = subprocess.run(
        [str(require_rntuple_bin()), "show", str(target), *args], capture_output=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stderr == b""
    return proc.stdout.decode("utf-8", errors="surrogateescape")


def entry_ranges(n: int) -> list[tuple[int, int]]:
    """The entries compared: all, or the first and last :data:`EDGE` of a large case."""
    if n <= ALL_ENTRIES_UP_TO:
        return [(0, n)]
    return [(0, EDGE), (n - EDGE, n)]


#: Every case shown, and every case the table of differences names (a name there that is
#: not a case fails here, as does a difference no longer seen).
CASES_COMPARED = [*SHOWN, EVENTS, *sorted({c for d in EXPECTED.values() for c in d.cases} - {*SHOWN, EVENTS})]


@pytest.mark.parametrize("case", CASES_COMPARED)
def test_show_matches_roots_show(case: str) -> None:
    """Our Show equals ROOT's but for the differences :data:`EXPECTED` gives the case,
    each of which is seen and checked against ROOT's reading."""
    if case == EVENTS:
        path, name = REPO_ROOT / EVENTS, "Events"
    else:
        path, name = conformance_data.write_file(case), "ntpl"
    found_classes = differences_from_roots_show(path, name)
    assert found_classes == expected_classes(case), (
        f"differences from ROOT's Show: {sorted(found_classes)}, expected {sorted(expected_classes(case))}"
    )


def differences_from_roots_show(path: Path, name: str) -> set[str]:
    """Compare ``rntuple show`` with ROOT's Show entry by entry (:func:`entry_ranges`): no
    unexplained difference, the same tokens where only floats differ, every difference
    checked against ROOT's reading; return the classes of differences found."""
    n = int(rootdump.load_root().RNTupleReader.Open(name, str(path)).GetNEntries())
    found_classes: set[str] = set()
    compared = 0
    for start, stop in entry_ranges(n):
        theirs = parse_show(root_show(path, name, start, stop))
        args = [] if (start, stop) == (0, n) else ["--entries", f"{start}:{stop}"]
        ours = parse_show(our_show(f"{path}:{name}", *args))
        # ROOT's reading of the same entries, rendered as the conformance suite does.
        reference = rootdump.dump(path, name, (start, stop))
        assert len(ours) == len(theirs) == stop - start
        for k, ((r, r_tokens), (o, o_tokens)) in enumerate(zip(theirs, ours, strict=True)):
            found: list[Found] = []
            compare(r, o, (), found)
            mismatches = [f for f in found if f.cls == "mismatch"]
            assert not mismatches, f"entry {start + k}: unexplained difference {mismatches[0]}"
            if all(f.cls == "float digits" for f in found):
                assert same_tokens(r_tokens, o_tokens), f"entry {start + k}: layout differs"
            for f in found:
                check_found(f, reference[k])
            found_classes |= {f.cls for f in found}
            compared += 1
    assert compared == sum(stop - start for start, stop in entry_ranges(n))
    return found_classes


def test_show_of_streamer_fields_matches_roots_show(generated_extra: dict[str, Path]) -> None:
    """Objects ROOT's streamer wrote (a ``TH1F``, a ``TObjString``) show as ROOT shows
    them, ``<streamer mode>``, in every entry of rootgen's ``streamer.root``."""
    path = generated_extra["streamer.root"]
    assert differences_from_roots_show(path, rootgen.EXTRA_FILES["streamer.root"][0]) == set()
    first = parse_show(our_show(path, "--entries", "0:1"))[0][0]
    assert [v for _, v in first.members][:2] == [Bare("<streamer mode>")] * 2


def test_show_fields_and_entries() -> None:
    """``--fields`` and ``--entries`` select columns and entries of the full output."""
    path = conformance_data.write_file("types.variant")
    full = [e for e, _ in parse_show(our_show(path))]
    part = [e for e, _ in parse_show(our_show(path, "--fields", "Vector,f", "--entries", "1:3"))]
    assert len(full) == 5 and len(part) == 2
    for whole, some in zip(full[1:3], part, strict=True):
        members = dict(whole.members)
        assert some.members == (("Vector", members["Vector"]), ("f", members["f"]))
    path = conformance_data.write_file("types.user.class")
    nested = parse_show(our_show(path, "--fields", "f.fNested", "--entries", "0:1"))
    assert nested[0][0] == Record((("f.fNested", Record((("fInt", Bare("5")),))),))
    assert our_show(path, "--entries", "2:2") == ""


def test_show_refuses_what_it_cannot_read() -> None:
    """The unknown feature flag, an unknown field and a bad range are clear errors."""
    binary = str(require_rntuple_bin())
    bad = subprocess.run(
        [binary, "show", str(conformance_data.write_file("structure.feature_flag"))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "unsupported format feature: 137" in bad.stderr and bad.stdout == ""
    path = str(conformance_data.write_file("types.string"))
    nofield = subprocess.run(
        [binary, "show", path, "--fields", "nope"], capture_output=True, text=True, timeout=60
    )
    assert nofield.returncode == 2 and 'no field "nope"' in nofield.stderr and nofield.stdout == ""
    badrange = subprocess.run(
        [binary, "show", path, "--entries", "3:1"], capture_output=True, text=True, timeout=60
    )
    assert badrange.returncode == 2 and "start 3 is after stop 1" in badrange.stderr


@pytest.mark.parametrize("command", [["show"], ["dump", "--jsonl"], ["dump", "--json"]])
def test_closed_pipe_ends_quietly(command: list[str]) -> None:
    """``rntuple show BIG | head -1``: exit status 0, nothing on stderr."""
    path = conformance_data.write_file("compression.block.big")
    proc = subprocess.Popen(
        [str(require_rntuple_bin()), *command, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 0
    assert first and err == b""


# --- dump --jsonl ----------------------------------------------------------------------


def _dump(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(require_rntuple_bin()), "dump", str(path), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
    )


#: Lines checked for the compact form in a case: all up to this many, else a sample.
COMPACT_CHECKS = 10_000


@pytest.mark.parametrize("case", conformance_data.cases())
def test_dump_jsonl_equals_json(case: str) -> None:
    """One compact JSON entry a line: the entries ``--json`` prints, in order (with
    ``--floats hex``; by default floats are decimal numbers, see
    :func:`test_dump_jsonl_floats_are_numbers_that_read_back_exactly`)."""
    path = conformance_data.write_file(case)
    pretty, jsonl = _dump(path, "--json"), _dump(path, "--jsonl", "--floats", "hex")
    if case == "structure.feature_flag":
        assert (pretty.returncode, jsonl.returncode) == (1, 1)
        assert pretty.stdout == jsonl.stdout == ""
        assert pretty.stderr == jsonl.stderr and "unsupported format feature: 137" in pretty.stderr
        return
    assert (pretty.returncode, jsonl.returncode) == (0, 0), (pretty.stderr, jsonl.stderr)
    assert pretty.stderr == jsonl.stderr == ""
    entries = json.loads(pretty.stdout)
    lines = jsonl.stdout.splitlines()
    assert (
        len(lines) == len(entries) == rootdump.load_root().RNTupleReader.Open("ntpl", str(path)).GetNEntries()
    )
    assert jsonl.stdout.endswith("\n") or not lines
    values = json.loads("[" + ",".join(lines) + "]")
    assert values == entries
    # Every line compact (a sample of a huge case: the form does not depend on the entry).
    step = max(1, len(lines) // COMPACT_CHECKS)
    for k in [*range(0, len(lines), step), len(lines) - 1][: len(lines)]:
        assert lines[k] == json.dumps(values[k], ensure_ascii=False, separators=(",", ":")), f"line {k}"


_HEX_FLOAT = re.compile(r"-?0x[0-9a-f](\.[0-9a-f]+)?p[+-]\d+|-?(inf|nan)")


def _same_float(decimal: Any, hex_text: Any) -> bool:
    """Whether a ``--floats decimal`` value is the float a ``--floats hex`` value is
    (a float's shortest digits read back as a float, not as a double)."""
    if isinstance(hex_text, str) and _HEX_FLOAT.fullmatch(hex_text):
        exact = float.fromhex(hex_text) if "0x" in hex_text else float(hex_text)
        if exact != exact:
            return decimal == "nan"
        if exact in (float("inf"), float("-inf")):
            return decimal == ("inf" if exact > 0 else "-inf")
        if not isinstance(decimal, int | float) or isinstance(decimal, bool):
            return False
        as_float32 = struct.unpack("f", struct.pack("f", decimal))[0] if abs(decimal) < 3.5e38 else None
        return float(decimal) == exact or as_float32 == exact
    if isinstance(hex_text, list):
        same_length = isinstance(decimal, list) and len(decimal) == len(hex_text)
        return same_length and all(map(_same_float, decimal, hex_text))
    if isinstance(hex_text, dict):
        return (
            isinstance(decimal, dict)
            and decimal.keys() == hex_text.keys()
            and all(_same_float(decimal[k], v) for k, v in hex_text.items())
        )
    return decimal == hex_text


@pytest.mark.parametrize(
    "case",
    [
        "types.fundamental.real",
        "types.fundamental.real32quant",
        "types.fundamental.real32trunc",
        EVENTS,
    ],
)
def test_dump_jsonl_floats_are_numbers_that_read_back_exactly(case: str) -> None:
    """``dump --jsonl`` writes floats as JSON numbers (for ``jq``), each the shortest
    decimal that reads back to the float or double ROOT stored (its hex form)."""
    path = REPO_ROOT / EVENTS if case == EVENTS else conformance_data.write_file(case)
    decimal, hexed = _dump(path, "--jsonl"), _dump(path, "--jsonl", "--floats", "hex")
    assert decimal.returncode == hexed.returncode == 0, decimal.stderr
    numbers = [json.loads(line) for line in decimal.stdout.splitlines()]
    exact = [json.loads(line) for line in hexed.stdout.splitlines()]
    assert len(numbers) == len(exact) > 0
    floats_seen = 0
    for k, (d, h) in enumerate(zip(numbers, exact, strict=True)):
        assert _same_float(d, h), f"entry {k}: {d} is not {h}"
        floats_seen += json.dumps(h).count("0x")
    assert floats_seen > 0
    # --json takes --floats decimal too, to the same values.
    pretty = _dump(path, "--json", "--floats", "decimal")
    assert json.loads(pretty.stdout) == numbers


def test_dump_jsonl_floats_add_up_in_jq_as_uproot_reads_them() -> None:
    """The issue's reproducer: ``jq 'map(.MET_pt)|add'`` over ``dump --jsonl`` sums
    numbers (it concatenated hex strings), to uproot's sum of the same values."""
    import shutil

    import uproot

    jq = shutil.which("jq")
    assert jq, "jq is needed (apt-get install jq)"
    path = REPO_ROOT / EVENTS
    lines = _dump(path, "--jsonl", "--fields", "MET_pt")
    assert lines.returncode == 0, lines.stderr
    total = subprocess.run([jq, "-s", "map(.MET_pt)|add"], input=lines.stdout, capture_output=True, text=True)
    assert total.returncode == 0, total.stderr
    want = float(uproot.open(path)["Events"].arrays(["MET_pt"])["MET_pt"].to_numpy().astype("f8").sum())
    assert float(total.stdout) == pytest.approx(want, rel=1e-12)


def test_dump_jsonl_attributes() -> None:
    """``--attributes SET --jsonl``: the ``--json`` list's items, one a line."""
    path = conformance_data.write_file("structure.attributes")
    binary = str(require_rntuple_bin())
    args = [binary, "dump", str(path), "--attributes", "Attributes"]
    pretty = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True, check=True).stdout)
    lines = subprocess.run([*args, "--jsonl"], capture_output=True, text=True, check=True).stdout
    assert pretty and [json.loads(line) for line in lines.splitlines()] == pretty


def test_dump_needs_a_format() -> None:
    """``dump`` without ``--json``/``--jsonl`` is a usage error; both together too."""
    binary, path = str(require_rntuple_bin()), str(conformance_data.write_file("types.string"))
    neither = subprocess.run([binary, "dump", path], capture_output=True, text=True, timeout=60)
    assert neither.returncode == 2 and "--json or --jsonl" in neither.stderr
    both = subprocess.run(
        [binary, "dump", path, "--json", "--jsonl"], capture_output=True, text=True, timeout=60
    )
    assert both.returncode == 2 and both.stdout == ""
