"""Render an RNTuple as ROOT 6.40 reads it, as JSON per the conformance rules.

The rendering rules are those of ``../shared/conformance/README.md`` (beside the
repository): a JSON list
with one object per entry keyed by the top-level field names in schema order; floats
and doubles as C99 hex strings (``printf("%a")``); maps as objects; pairs/tuples as
lists; optionals as value or ``null``; variants as the active value; bitsets as
``"0101..."`` strings (MSB first); records/classes as objects (base class ``":_0"``).

The actual walk over the values is C++ (``tests/cxx/rootdump.hxx``), JIT-compiled
into ROOT's interpreter, so that float bits are formatted exactly by ``snprintf``.

Command line::

    python tests/rootdump.py FILE[:NAME] [--entries START:STOP] [--fields A,B]
    python tests/rootdump.py --validate [CONFORMANCE_DIR]
    python tests/rootdump.py --entry-references OUTDIR
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import conformance_data

CXX_DIR = Path(__file__).resolve().parent / "cxx"
#: ``../shared/conformance/rntuple-validation-1.0`` beside the repository, or
#: ``$RNTUPLE_CONFORMANCE_DIR`` (see ``conformance_data.py``).
DEFAULT_CONFORMANCE = conformance_data.root()
DEFAULT_NTUPLE = "ntpl"

#: The headers of ``tests/cxx/`` this process declared in cling (see :func:`declare_cxx`).
_declared_headers: set[str] = set()


def load_root() -> Any:
    """Import PyROOT quietly (the PyPI build warns that it is alpha) and return it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import ROOT

    ROOT.gROOT.SetBatch(True)
    _find_loaded_libraries(ROOT)
    return ROOT


def _find_loaded_libraries(ROOT: Any) -> None:
    """Let ROOT find pyarrow's Arrow libraries. ACLiC links a dictionary library against
    every library its process had loaded, so one built by a process that imported pyarrow
    (the cache is shared) needs ``libarrow*.so`` wherever it is loaded; cling looks for
    them in ROOT's dynamic path, which does not hold pyarrow's directory."""
    try:
        import pyarrow
    except ImportError:
        return
    known = str(ROOT.gSystem.GetDynamicPath()).split(":")
    for directory in pyarrow.get_library_dirs():
        if directory not in known:
            ROOT.gSystem.AddDynamicPath(directory)


def declare_cxx(*headers: str) -> Any:
    """JIT-compile each of ``headers`` (files of ``tests/cxx/``) in cling once per process
    and return the ROOT module."""
    ROOT = load_root()
    for name in headers:
        if name not in _declared_headers:
            if not ROOT.gInterpreter.Declare((CXX_DIR / name).read_text()):
                raise RuntimeError(f"failed to declare tests/cxx/{name} in cling")
            _declared_headers.add(name)
    return ROOT


def _declare() -> Any:
    """JIT-compile the C++ renderer once per process and return the ROOT module."""
    return declare_cxx("rootdump.hxx")


def outdir_parser(doc: str) -> argparse.ArgumentParser:
    """The command line of a script that writes files into ``OUTDIR``, described by the
    script's docstring ``doc``."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=Path)
    return ap


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


# --- Making ROOT able to read a file's types -------------------------------------------

#: The STL containers ROOT reads through a collection proxy (``RProxiedCollectionField``),
#: which needs a compiled dictionary: without one ROOT builds an emulated proxy and aborts
#: in ``TGenCollectionProxy`` (e.g. for a set of sets).
PROXIED_CONTAINERS = (
    "set",
    "multiset",
    "unordered_set",
    "unordered_multiset",
    "map",
    "multimap",
    "unordered_map",
    "unordered_multimap",
)
_PROXIED_RE = re.compile(r"^std::(?:" + "|".join(PROXIED_CONTAINERS) + ")<")
#: Integer types an enum's ``_0`` subfield can have (ROOT names an int8_t-based enum's one ``char``).
_ENUM_UNDERLYING = {
    "char",
    "signed char",
    "unsigned char",
    "bool",
    *(f"std::{s}int{n}_t" for s in ("", "u") for n in (8, 16, 32, 64)),
}
_HASH_HEADER_NAME = "rntuple_rootdump_hash.h"
#: ``std::hash`` for sets used as keys of unordered containers (the standard library has none).
_HASH_HEADER = CXX_DIR / "rootdump_hash.h"
_hash_declared = False


def schema(path: str | os.PathLike[str], name: str = DEFAULT_NTUPLE) -> list[dict[str, Any]]:
    """Every field of the RNTuple as ROOT's descriptor has it (depth first).

    Each is ``{"name", "type", "alias", "structure", "repetitions", "projected",
    "columns": [[type, representation index, bits on storage, [min, max] | None], ...],
    "children": [{"name", "type"}, ...]}``; no model is built, so this works for types
    ROOT cannot read yet.
    """
    ROOT = _declare()
    return json.loads(str(ROOT.rntuple_interop.SchemaJson(str(path), name)))


def template_args(type_name: str) -> list[str]:
    """The top-level template arguments of ``type_name`` (``[]`` if it is no template)."""
    start = type_name.find("<")
    if start < 0 or not type_name.endswith(">"):
        return []
    args, depth, cur = [], 0, ""
    for ch in type_name[start + 1 : -1]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    args.append(cur.strip())
    return args


def dictionary_cache_dir() -> Path:
    """Where generated dictionaries are built and kept: ``$RNTUPLE_ROOTDUMP_CACHE`` or a
    per-ROOT-version directory under ``~/.cache`` (a rebuild costs seconds per type)."""
    env = os.environ.get("RNTUPLE_ROOTDUMP_CACHE")
    if env:
        return Path(env)
    ROOT = load_root()
    version = str(ROOT.gROOT.GetVersion()).replace("/", "_")
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "rntuple-rootdump" / f"root-{version}-py{sys.version_info[0]}{sys.version_info[1]}"


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``directory``, creating it (parallel renderers share the cache)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _has_dictionary(ROOT: Any, type_name: str) -> bool:
    """Whether ROOT has a compiled dictionary (hence a real collection proxy) for a type."""
    cl = ROOT.TClass.GetClass(type_name)
    return bool(cl) and bool(cl.HasDictionary())


def _needs_hash(type_name: str) -> bool:
    """Whether an unordered container's key is a set (no ``std::hash`` in the standard)."""
    if not type_name.startswith("std::unordered_"):
        return False
    key = template_args(type_name)[:1]
    return bool(key) and re.match(r"^std::(unordered_)?(multi)?set<", key[0]) is not None


def ensure_stl_dictionaries(types: list[str]) -> list[str]:
    """Build (ACLiC via ``GenerateDictionary``, cached) and load dictionaries for ``types``.

    Only the types ROOT has no dictionary for are built; returns those.  If a set is the
    key of an unordered container, a ``std::hash`` for it (XOR of the element hashes) is
    declared first and compiled into the dictionary.
    """
    global _hash_declared
    ROOT = _declare()
    missing = sorted({t for t in types if not _has_dictionary(ROOT, t)})
    if not missing:
        return []
    cache = dictionary_cache_dir()
    headers = ["map", "set", "string", "unordered_map", "unordered_set", "vector"]
    if any(_needs_hash(t) for t in missing):
        header = cache / _HASH_HEADER_NAME
        with _locked(cache):
            text = _HASH_HEADER.read_text()
            if not header.exists() or header.read_text() != text:
                header.write_text(text)
        if not _hash_declared:
            if not ROOT.gInterpreter.Declare(f'#include "{header}"'):
                raise RuntimeError(f"failed to declare {header} in cling")
            _hash_declared = True
        headers.append(str(header))
    # One directory per set of types: GenerateDictionary names its files after the types
    # and ACLiC rebuilds only what is out of date.
    key = hashlib.sha1(";".join(missing + headers).encode()).hexdigest()[:16]
    workdir = cache / key
    cwd = os.getcwd()
    with _locked(workdir):  # (other type sets build in parallel)
        try:
            os.chdir(workdir)
            status = ROOT.gInterpreter.GenerateDictionary(";".join(missing), ";".join(headers))
        finally:
            os.chdir(cwd)
    still = [t for t in missing if not _has_dictionary(ROOT, t)]
    if still:  # (the status is CompileMacro's: 1 on success)
        raise RuntimeError(f"GenerateDictionary failed (status {status}) for {still} in {workdir}")
    return missing


def _enum_declaration(type_name: str, underlying: str) -> str:
    """C++ declaring enum ``type_name`` (namespaces allowed) with the given underlying type."""
    *scopes, base = type_name.split("::")
    code = f"enum {base} : {underlying} {{}};"
    for scope in reversed(scopes):
        code = f"namespace {scope} {{ {code} }}"
    return code


def declare_enums(fields: list[dict[str, Any]]) -> list[str]:
    """Declare to cling the enums of the schema that ROOT does not know; return their names.

    An enum field is a plain field of a non-``std::`` type with exactly one subfield ``_0``
    of an integer type, the enum's underlying type (as ROOT's ``REnumField`` writes it).
    """
    ROOT = _declare()
    declared: list[str] = []
    for f in fields:
        t, children = f["type"], f["children"]
        if t.startswith(("std::", "ROOT::")) or len(children) != 1 or children[0]["name"] != "_0":
            continue
        if children[0]["type"] not in _ENUM_UNDERLYING or t in declared:
            continue
        if ROOT.TEnum.GetEnum(t) or ROOT.TClass.GetClass(t):
            continue
        code = "#include <cstdint>\n" + _enum_declaration(t, children[0]["type"])
        if not ROOT.gInterpreter.Declare(code):
            raise RuntimeError(f"failed to declare enum {t}: {code}")
        declared.append(t)
    return declared


def prepare(path: str | os.PathLike[str], name: str = DEFAULT_NTUPLE) -> dict[str, list[str]]:
    """Make ROOT able to read every type of the RNTuple's schema, from the schema alone.

    Declares the unknown enums and builds dictionaries for proxied STL containers that
    have none.  User classes are left to ROOT's emulation.  Returns what was done.
    """
    fields = schema(path, name)
    enums = declare_enums(fields)
    stl = [f["type"] for f in fields if _PROXIED_RE.match(f["type"])]
    return {"enums": enums, "dictionaries": ensure_stl_dictionaries(stl)}


def dump_text(
    path: str, name: str = DEFAULT_NTUPLE, start: int = 0, stop: int = -1, prepare_types: bool = True
) -> str:
    """Return ROOT's reading of entries ``[start, stop)`` as JSON text.

    With ``prepare_types`` the file's unknown enums and missing STL dictionaries are
    first supplied (:func:`prepare`).
    """
    ROOT = _declare()
    if prepare_types:
        prepare(path, name)
    return str(ROOT.rntuple_interop.DumpJson(str(path), name, start, stop, True))


def entry_texts(text: str) -> list[str]:
    """The entries of a :func:`dump_text` rendering, one compact JSON text each.

    The renderer writes ``[``, the entries joined by ``,`` and a newline, then ``]``; an
    entry never holds a raw newline (strings escape them), so the split is exact.
    """
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise ValueError(f"not a rendering of entries: {body[:80]!r}")
    body = body[1:-1]
    return body.split(",\n") if body else []


def dump_entries(
    path: str | os.PathLike[str], name: str = DEFAULT_NTUPLE, start: int = 0, stop: int = -1
) -> list[str]:
    """ROOT's reading of entries ``[start, stop)``, one compact JSON text per entry (the
    form that keeps the 5 million entries of ``compression.block.big`` cheap)."""
    return entry_texts(dump_text(str(path), name, start, stop))


def dump_attributes(
    path: str | os.PathLike[str], name: str = DEFAULT_NTUPLE, attr_set: str = "Attributes"
) -> list[dict[str, Any]]:
    """ROOT's reading of an attribute set linked to the RNTuple (``OpenAttributeSet``).

    A list, in the order ROOT gives, of ``{"Value": v, "Range": [first, last]}`` (``v``
    the single attribute field's value; an empty range is ``null``), as
    ``rntuple dump FILE:NAME --json --attributes SET`` prints it.
    """
    ROOT = _declare()
    prepare(path, name)
    return json.loads(str(ROOT.rntuple_interop.DumpAttributesJson(str(path), name, attr_set)))


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


# --- Comparing with the conformance references --------------------------------------------


class _Map(tuple):
    """A JSON object kept as its sorted (key, value) pairs: duplicate keys survive."""


def canonical(value: Any, unordered_lists: bool = False) -> Any:
    """A comparable form of parsed JSON: objects as :class:`_Map` (key order ignored).

    With ``unordered_lists`` every list is compared as a multiset (its canonical items,
    sorted), as ROOT lists unordered containers in hash-table order.
    """
    if isinstance(value, _Map | dict):
        pairs = value if isinstance(value, _Map) else list(value.items())
        return _Map(sorted(((k, canonical(v, unordered_lists)) for k, v in pairs), key=repr))
    if isinstance(value, list):
        items = [canonical(v, unordered_lists) for v in value]
        return sorted(items, key=repr) if unordered_lists else items
    return value


def load_json(text: str) -> Any:
    """Parse JSON keeping duplicate object keys (a multimap may render some)."""
    return json.loads(text, object_pairs_hook=_Map)


def _plain(value: Any) -> Any:
    """Parsed JSON with :class:`_Map` turned back into dicts (for messages; with
    duplicate keys, a list of ``[key, value]`` pairs)."""
    if isinstance(value, _Map):
        if len({k for k, _ in value}) < len(value):
            return [[k, _plain(v)] for k, v in value]
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(_plain(value))
    return text if len(text) <= limit else text[:limit] + "..."


def is_unordered_case(case: str) -> bool:
    """Cases whose lists come from unordered sets (compared as multisets)."""
    return case.startswith(("types.unordered_set.", "types.unordered_multiset."))


def holds_sums(case: str, reference: Any) -> bool:
    """Whether a case's parsed reference holds sums instead of entries: the suite's
    ``compression.*`` references are ``{field: sum over all entries}`` (its
    ``read_compression.hxx`` sums ``Int64``)."""
    return (
        case.startswith("compression.")
        and isinstance(reference, _Map)
        and [k for k, _ in reference] != ["error"]
    )


def _json_text(value: Any) -> str:
    """Compact JSON text of parsed JSON (:func:`load_json`), duplicate keys kept."""
    if isinstance(value, _Map):
        return "{" + ",".join(f"{json.dumps(k)}:{_json_text(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json_text(v) for v in value) + "]"
    return json.dumps(value)


def _sums(entries: list[str], fields: list[str], chunk: int = 100_000) -> dict[str, Any]:
    """Per field, the sum of its values over the entries (parsed a chunk at a time)."""
    sums: dict[str, Any] = dict.fromkeys(fields, 0)
    for start in range(0, len(entries), chunk):
        for entry in json.loads("[" + ",".join(entries[start : start + chunk]) + "]"):
            for field in fields:
                sums[field] += entry[field]
    return sums


def reference_entries(case: str, conformance_dir: Path = DEFAULT_CONFORMANCE) -> list[str]:
    """The entries of a case's reference, one compact JSON text each.

    ``read/<case>.json`` holds them, but for the ``compression.*`` cases, whose reference
    holds only sums (:func:`holds_sums`): their entries are ROOT's reading of
    ``write/<case>.root`` (:func:`dump_entries`), checked first to add up to the
    reference's sums, so that ROOT's reading here and the suite's own agree. Raises
    ``ValueError`` for a reference that holds no entries (an expected error) and when the
    sums differ.
    """
    reference = load_json((conformance_dir / "read" / f"{case}.json").read_text())
    if holds_sums(case, reference):
        entries = dump_entries(conformance_dir / "write" / f"{case}.root")
        expected = dict(reference)
        got = _sums(entries, list(expected))
        if got != expected:
            raise ValueError(
                f"{case}: ROOT's {len(entries)} entries sum to {got}, the reference to {expected}"
            )
        return entries
    if not isinstance(reference, list):
        raise ValueError(f"{case}: the reference holds no entries: {_short(reference)}")
    return [_json_text(entry) for entry in reference]


def render_case(case: str, root_file: str | os.PathLike[str], name: str = DEFAULT_NTUPLE) -> list[str]:
    """ROOT's reading of ``root_file`` as the case's reference holds it, one compact JSON
    text per entry: the entries (:func:`dump_entries`), or for ``structure.attributes``
    the attribute set ``Attributes`` (:func:`dump_attributes`)."""
    if case == "structure.attributes":
        attributes = dump_attributes(root_file, name, "Attributes")
        return [_json_text(load_json(json.dumps(a))) for a in attributes]
    return dump_entries(root_file, name)


def first_difference(got: Any, expected: Any, unordered_lists: bool = False) -> str | None:
    """``None`` if equal under the conventions, else a description of the first difference."""
    g, e = canonical(got, unordered_lists), canonical(expected, unordered_lists)
    if g == e:
        return None
    if isinstance(got, list) and isinstance(expected, list):
        for i, (ge, ee) in enumerate(zip(got, expected, strict=False)):
            if canonical(ge, unordered_lists) != canonical(ee, unordered_lists):
                return f"entry {i}: got {_short(ge)} expected {_short(ee)}"
        return f"entry count: got {len(got)} expected {len(expected)}"
    return f"got {_short(got)} expected {_short(expected)}"


def first_entry_difference(got: list[str], expected: list[str], unordered_lists: bool = False) -> str | None:
    """:func:`first_difference` of two lists of entries given as JSON texts, one entry at
    a time: equal texts are equal entries, others are parsed and compared (so millions of
    entries cost little where the same renderer wrote both)."""
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            diff = first_difference(load_json(g), load_json(e), unordered_lists)
            if diff is not None:
                return f"entry {i}: {diff}"
    if len(got) != len(expected):
        return f"entry count: got {len(got)} expected {len(expected)}"
    return None


def check_case(
    case: str, root_file: str | os.PathLike[str], expected_file: str | os.PathLike[str]
) -> tuple[bool, str]:
    """Render one case with ROOT and compare with its reference, entry by entry (a
    reference ``{"error": message}``: ROOT must refuse the file with that message);
    (ok, detail)."""
    expected_path = Path(expected_file)
    reference = load_json(expected_path.read_text())
    if isinstance(reference, _Map) and [k for k, _ in reference] == ["error"]:
        try:
            got = render_case(case, root_file)
        except Exception as exc:
            match = re.search(r"RException: (.*?) At:", " ".join(str(exc).split()))
            if not match:
                raise
            diff = first_difference(_Map([("error", match.group(1))]), reference)
            return diff is None, diff or f"refused: {match.group(1)}"
        return False, f"ROOT read {len(got)} entries where the reference expects {_short(reference)}"
    expected = reference_entries(case, expected_path.parent.parent)
    got = render_case(case, root_file)
    diff = first_entry_difference(got, expected, is_unordered_case(case))
    if diff is not None:
        return False, diff
    return True, f"{len(got)} entries"


# --- Running many cases: worker processes that survive crashes ---------------------------


@dataclass(frozen=True)
class Task:
    """One case to check: render ``root_file`` with ROOT and compare with ``expected_file``."""

    case: str
    root_file: str
    expected_file: str


def _worker(tasks: list[Task]) -> int:
    """Check cases one after the other, printing one ``RESULT`` line (flushed) per case."""
    for t in tasks:
        print(f"START\t{t.case}", flush=True)
        t0 = time.perf_counter()
        try:
            ok, detail = check_case(t.case, t.root_file, t.expected_file)
            status = "OK" if ok else "DIFF"
        except Exception as exc:
            status, detail = "ERROR", " ".join(str(exc).split())[:400]
        detail = " ".join(detail.split())
        print(f"RESULT\t{t.case}\t{status}\t{time.perf_counter() - t0:.2f}\t{detail}", flush=True)
    return 0


def _run_chunk(tasks: list[Task], timeout: float) -> dict[str, tuple[str, str]]:
    """Run ``tasks`` in worker processes; a crash costs only the case it happened in."""
    results: dict[str, tuple[str, str]] = {}
    todo = list(tasks)
    while todo:
        payload = json.dumps([t.__dict__ for t in todo])
        try:
            proc = subprocess.run(
                [sys.executable, __file__, "--worker"],
                input=payload,
                capture_output=True,
                text=True,
                check=False,
                timeout=timeout,
            )
            stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as exc:
            stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            stderr, rc = f"timeout after {timeout:.0f}s", None
        for line in stdout.splitlines():
            if line.startswith("RESULT\t"):
                _, case, status, _secs, detail = line.split("\t", 4)
                results[case] = (status, detail)
        remaining = [t for t in todo if t.case not in results]
        if remaining:
            # The worker died in the first case without a result: record it, go on after it.
            err = [ln for ln in stderr.splitlines() if ln.strip() and "alpha stage" not in ln]
            fatal = [ln for ln in err if "Fatal" in ln or "Error" in ln or "abort" in ln.lower()]
            msg = (fatal or err or [""])[0].strip()
            what = "TIMEOUT" if rc is None else "CRASH"
            results[remaining[0].case] = (what, f"exit {rc}: {msg}"[:400])
            remaining = remaining[1:]
        todo = remaining
    return results


def run_tasks(tasks: list[Task], jobs: int | None = None, timeout: float = 600) -> dict[str, tuple[str, str]]:
    """Check ``tasks`` in ``jobs`` parallel worker processes; ``{case: (status, detail)}``.

    Status is ``OK``, ``DIFF``, ``ERROR`` (an exception), ``CRASH`` (the process died; the
    other cases run on in a new process) or ``TIMEOUT``.  Each worker pays ROOT's start-up
    once instead of once per case.
    """
    if jobs is None:
        jobs = int(os.environ.get("RNTUPLE_ROOTDUMP_JOBS", "0")) or min(4, max(2, os.cpu_count() or 1))
    # Biggest files first, dealt round-robin, so that the workers finish together.
    ordered = sorted(
        tasks, key=lambda t: -Path(t.root_file).stat().st_size if Path(t.root_file).exists() else 0
    )
    chunks = [ordered[k::jobs] for k in range(jobs)]
    results: dict[str, tuple[str, str]] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for part in pool.map(lambda c: _run_chunk(c, timeout), [c for c in chunks if c]):
            results.update(part)
    return {t.case: results[t.case] for t in sorted(tasks, key=lambda t: t.case)}


def conformance_tasks(
    conformance_dir: Path = DEFAULT_CONFORMANCE, files: dict[str, Path] | None = None
) -> list[Task]:
    """One task per conformance case: ``write/<case>.root`` (or ``files[case]``) vs ``read/<case>.json``."""
    cases = sorted(p.stem for p in (conformance_dir / "write").glob("*.root"))
    tasks = []
    for case in cases:
        if files is not None and case not in files:
            continue
        root_file = files[case] if files is not None else conformance_dir / "write" / f"{case}.root"
        tasks.append(
            Task(case, str(Path(root_file).resolve()), str(conformance_dir / "read" / f"{case}.json"))
        )
    return tasks


def validate(
    conformance_dir: Path = DEFAULT_CONFORMANCE, jobs: int | None = None
) -> dict[str, tuple[str, str]]:
    """Check the renderer on every conformance case (ROOT's own files).

    Worker processes isolate crashes (ROOT aborts on some files it cannot read).
    Returns ``{case: (status, detail)}``.
    """
    return run_tasks(conformance_tasks(conformance_dir), jobs)


def write_entry_references(outdir: Path, conformance_dir: Path = DEFAULT_CONFORMANCE) -> dict[str, int]:
    """For every case whose reference holds sums (:func:`holds_sums`), write its entries
    (:func:`reference_entries`) to ``outdir/<case>.json``: a JSON list, an entry a line.
    Returns ``{case: number of entries}``."""
    outdir.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for path in sorted((conformance_dir / "read").glob("*.json")):
        case = path.name[: -len(".json")]
        if not holds_sums(case, load_json(path.read_text())):
            continue
        entries = reference_entries(case, conformance_dir)
        (outdir / f"{case}.json").write_text("[" + ",\n".join(entries) + "]\n")
        counts[case] = len(entries)
    return counts


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
    ap.add_argument("--jobs", type=int, help="parallel worker processes for --validate")
    ap.add_argument("--attributes", metavar="SET", help="print the linked attribute set SET instead")
    ap.add_argument(
        "--entry-references",
        metavar="OUTDIR",
        help="write OUTDIR/<case>.json: the entries of each case whose reference holds sums (compression.*)",
    )
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        return _worker([Task(**t) for t in json.loads(sys.stdin.read())])
    if args.validate:
        t0 = time.perf_counter()
        results = validate(Path(args.validate), args.jobs)
        for case, (status, detail) in results.items():
            print(f"{status:7} {case:45} {detail}")
        n_ok = sum(1 for s, _ in results.values() if s == "OK")
        print(f"{n_ok}/{len(results)} cases reproduced exactly ({time.perf_counter() - t0:.1f}s)")
        return 0 if n_ok == len(results) else 1
    if args.entry_references:
        for case, n in write_entry_references(Path(args.entry_references)).items():
            print(f"{case}: {n} entries")
        return 0
    if args.attributes:
        path, name = parse_target(args.target)
        json.dump(dump_attributes(path, name, args.attributes), sys.stdout, indent=1)
        sys.stdout.write("\n")
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
