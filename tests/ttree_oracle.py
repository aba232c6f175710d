"""The ROOT 6.40 side of the TTree -> RNTuple comparisons (``rntuple convert``).

- :func:`root_import`: ROOT's own converter, ``ROOT::Experimental::RNTupleImporter``, run
  in a subprocess (a crash or a rejection is captured, not fatal).  From PyROOT in 6.40::

      imp = ROOT.Experimental.RNTupleImporter.Create(src, tree, dst)  # dst opened UPDATE
      imp.SetNTupleName(name)                     # default: the tree name (``a/b/t`` -> dirs a, b)
      opts = imp.GetWriteOptions(); opts.SetCompression(404); imp.SetWriteOptions(opts)
      imp.SetIsQuiet(True)                        # else prints "Importing 'x' [type]" per field
      imp.Import()                                # raises cppyy's ROOT.RException on rejection

- :func:`rntuple_schema`: an RNTuple's schema from ROOT's descriptor, a JSON-able dict
  comparable with ``==`` (no ids, no contents, no cluster layout); :func:`rntuple_storage`
  the write-side facts (compression, clusters, pages).
- :func:`ttree_values` / :func:`rntuple_values`: the values ROOT reads through
  RDataFrame (an RNTuple with a ``std::bitset`` field, which ROOT 6.40's RDataFrame cannot
  open, or a map of ``std::array``, through ``RNTupleReader`` views of the same C++ types
  in a process of its own), per column, rendered by C++ (``tests/cxx/ttree_oracle.hxx``)
  as JSON:
  integers (``char`` too) as numbers, ``bool`` as true/false, floats as C99 hex strings
  (``%a``), strings as strings (a ``/C`` leaf too), arrays/vectors/RVecs as lists,
  classes as objects of their persistent data members (TClass walk, bases first,
  TObject's members left out).  Leaf-count arrays with a ``/b``, ``/B`` or ``/O`` count
  leaf, which RDataFrame cannot read (it crashes), are read with ``TBranch::GetEntry``.
  Leaf-list leaves are columns ``branch.leaf`` on both
  sides; RNTuple projected fields (the importer's ``a1``, ``nA``) are columns too.
- :func:`compare`: the differences between the two readings, human readable.

The trees' user classes (``ttreegen.USER_CLASSES_CXX``) are loaded before any reading.

Command line::

    python tests/ttree_oracle.py schema FILE NAME
    python tests/ttree_oracle.py storage FILE NAME
    python tests/ttree_oracle.py values FILE NAME [--tree] [--columns A,B] [--entries START:STOP]
    python tests/ttree_oracle.py import SRC TREE DST [--name N] [--compression C]
    python tests/ttree_oracle.py compare TTREE_FILE TREE RNTUPLE_FILE NAME [--columns A,B]
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ttreegen

import rootdump

CXX_DIR = Path(__file__).resolve().parent / "cxx"

_declared = False
#: Generated RDataFrame runners, by (column types, C-string flags).
_runners: dict[tuple[tuple[str, bool], ...], str] = {}


def _prepare() -> Any:
    """Load the user classes, JIT-compile ``ttree_oracle.hxx`` (on top of
    ``rootdump.hxx``, whose JSON helpers it uses) once; return ROOT."""
    global _declared
    ROOT = ttreegen.declare_user_classes()
    rootdump._declare()
    if not _declared:
        if not ROOT.gInterpreter.Declare((CXX_DIR / "ttree_oracle.hxx").read_text()):
            raise RuntimeError("failed to declare tests/cxx/ttree_oracle.hxx in cling")
        _declared = True
    return ROOT


# --- ROOT's importer -------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportResult:
    """Outcome of :func:`root_import`: ``ok``; on failure ``error`` (the RException's
    message, or how the process died); ``output`` is what the importer printed."""

    ok: bool
    error: str
    output: str
    returncode: int


def _import_in_process(src: str, tree: str, dst: str, name: str | None, compression: int | None) -> dict:
    """Run the importer in this process; ``{"ok", "error"}`` (exceptions caught)."""
    ROOT = ttreegen.declare_user_classes()
    try:
        imp = ROOT.Experimental.RNTupleImporter.Create(src, tree, dst)
        if name is not None:
            imp.SetNTupleName(name)
        if compression is not None:
            opts = imp.GetWriteOptions()
            opts.SetCompression(compression)
            imp.SetWriteOptions(opts)
        imp.Import()
        del imp  # closes the destination file
    except Exception as exc:
        text = str(exc)
        match = re.search(r"RException: (.*?)\s+At:", text, re.DOTALL)
        return {"ok": False, "error": " ".join((match.group(1) if match else text).split())}
    return {"ok": True, "error": ""}


def root_import(
    src: Path,
    tree: str,
    dst: Path,
    name: str | None = None,
    compression: int | None = None,
    fresh: bool = True,
    timeout: float = 600,
) -> ImportResult:
    """Convert TTree ``tree`` of ``src`` into an RNTuple in ``dst`` with ROOT 6.40's
    ``RNTupleImporter`` in a subprocess.

    ``name`` defaults to the tree name (``a/b/t`` makes directories ``a/b``);
    ``compression`` defaults to the importer's (``RNTupleWriteOptions``: 505).  With
    ``fresh`` an existing ``dst`` is removed first (the importer opens it ``UPDATE``).
    """
    dst = Path(dst)
    if fresh and dst.exists():
        dst.unlink()
    cmd = [sys.executable, str(Path(__file__).resolve()), "_import", str(src), tree, str(dst)]
    if name is not None:
        cmd += ["--name", name]
    if compression is not None:
        cmd += ["--compression", str(compression)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return ImportResult(False, f"timeout after {timeout:.0f}s", "", -1)
    result = None
    lines = []
    for line in proc.stdout.splitlines():
        if line.startswith("IMPORT_RESULT "):
            result = json.loads(line[len("IMPORT_RESULT ") :])
        else:
            lines.append(line)
    output = "\n".join(lines)
    if result is None:
        err = [ln for ln in proc.stderr.splitlines() if ln.strip() and "alpha stage" not in ln]
        fatal = [ln for ln in err if "Fatal" in ln or "Error" in ln or "abort" in ln.lower()]
        msg = (fatal or err or [""])[-1].strip()
        return ImportResult(
            False, f"importer process died (exit {proc.returncode}): {msg}", output, proc.returncode
        )
    return ImportResult(bool(result["ok"]), result["error"], output, proc.returncode)


# --- The RNTuple's schema and storage ------------------------------------------------------------


def rntuple_schema(path: Path, name: str) -> dict[str, Any]:
    """The schema of RNTuple ``name`` in ``path`` as ROOT's descriptor reports it.

    ``{"fields": [field, ...]}`` with the top-level fields in order, each ``{"name",
    "type", "alias", "role" (Plain/Collection/Record/Variant/Streamer), "type_version",
    "field_version", "type_checksum" (or None), "repetitions", "projected",
    "projection_source" (qualified name of the source field, or None), "columns": [{"type",
    "bits", "range" ([min, max] as hex floats, or None), "representation", "index"}, ...],
    "subfields": [field, ...]}``.  Projected fields list their alias columns.
    """
    ROOT = _prepare()
    return json.loads(str(ROOT.ttree_oracle.SchemaJson(str(path), name)))


def rntuple_streamer_infos(path: Path, name: str) -> list[str]:
    """The classes whose streamer infos RNTuple ``name`` carries in its extra type
    information, as ROOT parses them."""
    ROOT = _prepare()
    return json.loads(str(ROOT.ttree_oracle.StreamerInfosJson(str(path), name)))


def rntuple_storage(path: Path, name: str) -> dict[str, Any]:
    """Write-side facts of an RNTuple from ROOT's descriptor: entries, clusters, cluster
    groups, entries per cluster [min, max], compression settings of the pages, page count,
    elements and unzipped bytes per page [min, max], largest page on storage, checksummed
    pages, header and footer sizes."""
    ROOT = _prepare()
    return json.loads(str(ROOT.ttree_oracle.StorageJson(str(path), name)))


def schema_lines(schema: dict[str, Any]) -> list[str]:
    """A compact rendering of :func:`rntuple_schema`: one line per field,
    ``path : type [alias] (role) columns... (projected from X)``."""
    out: list[str] = []

    def walk(field: dict[str, Any], prefix: str) -> None:
        path = prefix + field["name"]
        text = f"{path} : {field['type'] or '(untyped)'}"
        if field["alias"]:
            text += f" [{field['alias']}]"
        if field["role"] != "Plain":
            text += f" ({field['role']})"
        if field["repetitions"]:
            text += f" x{field['repetitions']}"
        if field["type_version"]:
            text += f" v{field['type_version']}"
        cols = []
        for c in field["columns"]:
            col = f"{c['type']}"
            if c["range"]:
                col += f"{c['bits']}[{c['range'][0]},{c['range'][1]}]"
            cols.append(col)
        if cols:
            text += " " + " ".join(cols)
        if field["projected"]:
            text += f" (projected from {field['projection_source']})"
        out.append(text)
        for sub in field["subfields"]:
            walk(sub, path + ".")

    for f in schema["fields"]:
        walk(f, "")
    return out


# --- Values ----------------------------------------------------------------------------------------


#: The end of a JIT-compiled renderer: its per-column JSON lists ``outs`` joined into one.
_JOIN_OUTS = """   std::string out = "[";
   for (std::size_t k = 0; k < outs.size(); ++k) {
      if (k)
         out += ",\\n";
      out += outs[k];
      out += ']';
   }
   out += "]";
   return out;
}
"""


def _runner(ROOT: Any, signature: tuple[tuple[str, bool], ...]) -> str:
    """The name of a JIT-compiled function rendering RDataFrame columns of the given
    (type, is C string) signature: ``std::string f(RNode, vector<string> columns)``
    returning a JSON list with one list of values per column."""
    if signature in _runners:
        return _runners[signature]
    fname = "ttree_oracle_run_" + hashlib.sha1(repr(signature).encode()).hexdigest()[:16]
    params = ", ".join(f"const {t} &v{k}" for k, (t, _) in enumerate(signature))
    renders = "\n".join(
        f"      ttree_oracle::{'RenderCString' if cstr else 'Render'}(outs[{k}], v{k});"
        for k, (_, cstr) in enumerate(signature)
    )
    code = f"""
std::string {fname}(ROOT::RDF::RNode df, const std::vector<std::string> &cols)
{{
   std::vector<std::string> outs({len(signature)}, std::string("["));
   bool first = true;
   df.Foreach([&]({params}) {{
      if (!first)
         for (auto &s : outs)
            s += ',';
      first = false;
{renders}
   }}, cols);
{_JOIN_OUTS}"""
    if not ROOT.gInterpreter.Declare(code):
        raise RuntimeError(f"failed to compile the renderer for column types {signature}")
    _runners[signature] = fname
    return fname


def _reader_runner(ROOT: Any, types: tuple[str, ...]) -> str:
    """The name of a JIT-compiled function rendering top-level fields of the given C++
    types through ``RNTupleReader`` views: ``std::string f(path, name, vector<string>
    fields, start, stop)`` returning a JSON list with one list of values per field (the
    same rendering as :func:`_runner`'s, for RNTuples RDataFrame cannot open)."""
    key = (("reader", False), *((t, False) for t in types))
    if key in _runners:
        return _runners[key]
    fname = "ttree_oracle_read_" + hashlib.sha1(repr(key).encode()).hexdigest()[:16]
    views = "\n".join(f"   auto v{k} = reader->GetView<{t}>(fields[{k}]);" for k, t in enumerate(types))
    renders = "\n".join(f"      ttree_oracle::Render(outs[{k}], v{k}(i));" for k in range(len(types)))
    code = f"""
std::string {fname}(const std::string &path, const std::string &name, const std::vector<std::string> &fields,
                    long long start, long long stop)
{{
   auto reader = ROOT::RNTupleReader::Open(name, path);
{views}
   const long long n = reader->GetNEntries();
   if (stop < 0 || stop > n)
      stop = n;
   std::vector<std::string> outs({len(types)}, std::string("["));
   for (long long i = start; i < stop; ++i) {{
      if (i != start)
         for (auto &s : outs)
            s += ',';
{renders}
   }}
{_JOIN_OUTS}"""
    if not ROOT.gInterpreter.Declare(code):
        raise RuntimeError(f"failed to compile the RNTupleReader renderer for field types {types}")
    _runners[key] = fname
    return fname


def _read_apart(schema: dict[str, Any]) -> bool:
    """Whether an RNTuple is read through ``RNTupleReader`` views in a process of its own
    (:func:`_reader_values`): it has a ``std::bitset`` field (ROOT 6.40's RDataFrame
    cannot open it, ``vector::_M_range_check``, its importer's output included), or a
    ``std::pair`` holding a ``std::array`` (a map's item: once ROOT 6.40 has built such a
    field, its later reading of a split TTree branch of that map gives zeros for the
    arrays, so the reading must not happen in the process that reads the TTrees)."""

    def walk(f: dict[str, Any]) -> bool:
        t = f["type"]
        if t.startswith("std::bitset<") or (t.startswith("std::pair<") and "std::array<" in t):
            return True
        return any(walk(s) for s in f["subfields"])

    return any(walk(f) for f in schema["fields"])


def _reader_values(
    path: Path, name: str, columns: list[str], entries: tuple[int, int] | None
) -> dict[str, list[Any]]:
    """:func:`_render_reader` of ``columns`` in a child process (see :func:`_read_apart`)."""
    if not columns:
        return {}
    cmd = [sys.executable, str(Path(__file__).resolve()), "_reader", str(path), name]
    cmd += ["--columns", ",".join(columns)]
    if entries is not None:
        cmd += ["--entries", f"{entries[0]}:{entries[1]}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"reading RNTuple {name} of {path} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def _render_reader(
    ROOT: Any,
    path: Path,
    name: str,
    schema: dict[str, Any],
    columns: list[str],
    entries: tuple[int, int] | None,
) -> dict[str, list[Any]]:
    """Render the top-level fields ``columns`` of RNTuple ``name`` through
    ``RNTupleReader`` views of their types (entries ``[start, stop)`` if given)."""
    if not columns:
        return {}
    types = {f["name"]: f["type"] for f in schema["fields"]}
    missing = [c for c in columns if not types.get(c)]
    if missing:
        raise KeyError(f"RNTuple {name}: no typed top-level fields {missing} to read without RDataFrame")
    fn = getattr(ROOT, _reader_runner(ROOT, tuple(types[c] for c in columns)))
    start, stop = entries if entries is not None else (0, -1)
    data = json.loads(str(fn(str(path), name, ROOT.std.vector["std::string"](columns), start, stop)))
    return dict(zip(columns, data, strict=True))


def _render(
    ROOT: Any,
    df: Any,
    columns: list[str],
    cstrings: set[str],
    entries: tuple[int, int] | None,
) -> dict[str, list[Any]]:
    """Render ``columns`` of an RDataFrame (entries ``[start, stop)`` if given); the
    ``cstrings`` columns (RVec<char> of a ``/C`` leaf) as strings."""
    if not columns:
        return {}
    node = ROOT.RDF.AsRNode(df)
    if entries is not None:
        start, stop = entries
        node = ROOT.RDF.AsRNode(node.Range(start, stop))
    signature = tuple((str(df.GetColumnType(c)), c in cstrings) for c in columns)
    fn = getattr(ROOT, _runner(ROOT, signature))
    cols = ROOT.std.vector["std::string"](columns)
    data = json.loads(str(fn(node, cols)))
    return dict(zip(columns, data, strict=True))


#: Count-leaf types TTreeReader (hence RDataFrame) cannot size arrays with: it prints
#: "Unsupported size type for leaf" and crashes.  Such arrays are read with TBranch::GetEntry.
_UNSUPPORTED_COUNT_TYPES = ("UChar_t", "Char_t", "Bool_t")


def ttree_columns(path: Path, tree: str) -> tuple[list[str], set[str], set[str]]:
    """The default columns of a TTree: its top-level branches in order, a leaf list's
    leaves as ``branch.leaf``; the set of those that are C strings (``/C``); and the set
    of leaf-count arrays whose count leaf RDataFrame cannot use (``/b``, ``/B``, ``/O``)."""
    ROOT = _prepare()
    f = ROOT.TFile.Open(str(path))
    if not f or f.IsZombie():
        raise OSError(f"cannot open {path}")
    try:
        t = f.Get(tree)
        if not t:
            raise KeyError(f"no TTree {tree} in {path}")
        columns: list[str] = []
        cstrings: set[str] = set()
        direct: set[str] = set()
        for b in t.GetListOfBranches():
            leaves = list(b.GetListOfLeaves())
            bname = str(b.GetName())
            if len(leaves) > 1 and b.IsA() == ROOT.TBranch.Class():
                columns += [f"{bname}.{leaf.GetName()}" for leaf in leaves]
                continue
            columns.append(bname)
            leaf = leaves[0]
            # As the importer decides: a TLeafC without a counter and of length 1 is a C string.
            countval = ctypes.c_int(0)
            if (
                leaf.IsA() == ROOT.TLeafC.Class()
                and not leaf.GetLeafCounter(countval)
                and countval.value == 1
            ):
                cstrings.add(bname)
            count = leaf.GetLeafCount()
            if count and str(count.GetTypeName()) in _UNSUPPORTED_COUNT_TYPES:
                direct.add(bname)
        return columns, cstrings, direct
    finally:
        f.Close()


def rntuple_columns(path: Path, name: str) -> list[str]:
    """The default columns of an RNTuple: its top-level fields in order (projected ones
    included), an untyped record's subfields as ``record.sub``, fields named ``_...``
    (the importer's ``_collectionN``) left out."""
    columns: list[str] = []
    for f in rntuple_schema(path, name)["fields"]:
        if f["name"].startswith("_"):
            continue
        if f["type"] == "" and f["role"] == "Record":
            columns += [f"{f['name']}.{s['name']}" for s in f["subfields"]]
        else:
            columns.append(f["name"])
    return columns


def ttree_values(
    path: Path, tree: str, columns: list[str] | None = None, entries: tuple[int, int] | None = None
) -> dict[str, list[Any]]:
    """ROOT's reading of TTree ``tree`` through RDataFrame: ``{column: [value per entry]}``
    for ``columns`` (default :func:`ttree_columns`), entries ``[start, stop)`` if given."""
    ROOT = _prepare()
    default, cstrings, direct = ttree_columns(path, tree)
    cols = columns if columns is not None else default
    df = ROOT.RDataFrame(tree, str(path))
    read = [c for c in cols if c not in direct]
    start, stop = entries if entries is not None else (0, -1)
    try:
        out = _render(ROOT, df, read, cstrings, entries)
    except Exception:
        # A column RDataFrame cannot read (a split collection of a class with collection
        # members): each column alone, the failing ones as objects through TBranch::GetEntry.
        # (An interrupted event loop leaves its RDataFrame unusable: a fresh one each.)
        out = {}
        for c in read:
            try:
                out.update(_render(ROOT, ROOT.RDataFrame(tree, str(path)), [c], cstrings, entries))
            except Exception:
                out[c] = json.loads(str(ROOT.ttree_oracle.TTreeObjectJson(str(path), tree, c, start, stop)))
    for c in cols:
        if c in direct:
            out[c] = json.loads(str(ROOT.ttree_oracle.LeafArrayJson(str(path), tree, c, start, stop)))
    return {c: out[c] for c in cols}


def rntuple_values(
    path: Path, name: str, columns: list[str] | None = None, entries: tuple[int, int] | None = None
) -> dict[str, list[Any]]:
    """ROOT's reading of RNTuple ``name`` through RDataFrame: ``{column: [value per entry]}``
    for ``columns`` (default :func:`rntuple_columns`), entries ``[start, stop)`` if given;
    streamer fields (no RDataFrame columns) through ``RNTupleReader``, each object
    rendered through its class; every column of an RNTuple with a ``std::bitset`` field
    (which RDataFrame cannot open) or a map of ``std::array`` through ``RNTupleReader``
    views of its type, in a process of its own (:func:`_read_apart`)."""
    ROOT = _prepare()
    cols = columns if columns is not None else rntuple_columns(path, name)
    schema = rntuple_schema(path, name)
    # Streamer fields are no RDataFrame columns: read with RNTupleReader.
    streamers = {f["name"] for f in schema["fields"] if f["role"] == "Streamer"}
    plain = [c for c in cols if c not in streamers]
    if _read_apart(schema):
        out = _reader_values(path, name, plain, entries)
    else:
        out = _render(ROOT, ROOT.RDataFrame(name, str(path)), plain, set(), entries)
    start, stop = entries if entries is not None else (0, -1)
    for c in cols:
        if c in streamers:
            out[c] = json.loads(str(ROOT.ttree_oracle.StreamerFieldJson(str(path), name, c, start, stop)))
    return {c: out[c] for c in cols}


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."


def compare(
    ttree_file: Path,
    tree: str,
    rntuple_file: Path,
    name: str,
    columns: list[str] | None = None,
    entries: tuple[int, int] | None = None,
    max_per_column: int = 3,
) -> list[str]:
    """The differences between ROOT's readings of the TTree and of the RNTuple, for
    ``columns`` (default: the TTree's :func:`ttree_columns`); empty when equal."""
    cols = columns if columns is not None else ttree_columns(ttree_file, tree)[0]
    diffs: list[str] = []
    rnt_cols = set(rntuple_columns(rntuple_file, name))
    ROOT = _prepare()
    schema = rntuple_schema(rntuple_file, name)
    streamers = {f["name"] for f in schema["fields"] if f["role"] == "Streamer"}
    if _read_apart(schema):
        # Its top-level fields are read with RNTupleReader (in a process of its own).
        available = {f["name"] for f in schema["fields"]}
    else:
        df = ROOT.RDataFrame(name, str(rntuple_file))
        available = {str(c) for c in df.GetColumnNames()} | streamers
    missing = [c for c in cols if c not in available]
    for c in missing:
        diffs.append(f"{c}: no such column in RNTuple {name} (its columns: {sorted(rnt_cols)})")
    present = [c for c in cols if c in available]
    left = ttree_values(ttree_file, tree, present, entries)
    right = rntuple_values(rntuple_file, name, present, entries)
    for c in present:
        a, b = left[c], right[c]
        if len(a) != len(b):
            diffs.append(f"{c}: {len(a)} entries in the TTree, {len(b)} in the RNTuple")
        shown = 0
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                first = entries[0] if entries else 0
                diffs.append(f"{c}: entry {first + i}: TTree {_short(x)} RNTuple {_short(y)}")
                shown += 1
                if shown >= max_per_column:
                    break
    return diffs


# --- Command line ------------------------------------------------------------------------------


def _entries(spec: str | None) -> tuple[int, int] | None:
    if not spec:
        return None
    start, _, stop = spec.partition(":")
    return int(start or 0), int(stop) if stop else 2**62


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("schema", help="an RNTuple's schema (JSON)")
    p.add_argument("file", type=Path)
    p.add_argument("name")
    p.add_argument("--lines", action="store_true", help="one line per field")
    p = sub.add_parser("storage", help="an RNTuple's write-side facts (JSON)")
    p.add_argument("file", type=Path)
    p.add_argument("name")
    p = sub.add_parser("values", help="ROOT's reading (JSON {column: [values]})")
    p.add_argument("file", type=Path)
    p.add_argument("name")
    p.add_argument("--tree", action="store_true", help="NAME is a TTree (default: an RNTuple)")
    p.add_argument("--columns", help="comma-separated columns")
    p.add_argument("--entries", help="START:STOP")
    for cmd in ("import", "_import"):
        p = sub.add_parser(cmd, help="run ROOT's RNTupleImporter" if cmd == "import" else argparse.SUPPRESS)
        p.add_argument("src")
        p.add_argument("tree")
        p.add_argument("dst")
        p.add_argument("--name")
        p.add_argument("--compression", type=int)
    p = sub.add_parser("_reader", help=argparse.SUPPRESS)
    p.add_argument("file", type=Path)
    p.add_argument("name")
    p.add_argument("--columns", required=True)
    p.add_argument("--entries")
    p = sub.add_parser("compare", help="TTree vs RNTuple readings")
    p.add_argument("ttree_file", type=Path)
    p.add_argument("tree")
    p.add_argument("rntuple_file", type=Path)
    p.add_argument("name")
    p.add_argument("--columns")
    p.add_argument("--entries")
    args = ap.parse_args(argv)

    if args.cmd == "_import":
        result = _import_in_process(args.src, args.tree, args.dst, args.name, args.compression)
        sys.stdout.flush()
        print("IMPORT_RESULT " + json.dumps(result), flush=True)
        os._exit(0)  # (skip ROOT's teardown: the result is out)
    if args.cmd == "import":
        res = root_import(Path(args.src), args.tree, Path(args.dst), args.name, args.compression)
        print(json.dumps(asdict(res), indent=1))
        return 0 if res.ok else 1
    if args.cmd == "_reader":
        ROOT = _prepare()
        schema = rntuple_schema(args.file, args.name)
        columns = args.columns.split(",")
        values = _render_reader(ROOT, args.file, args.name, schema, columns, _entries(args.entries))
        sys.stdout.write(json.dumps(values))
        sys.stdout.flush()
        os._exit(0)  # (skip ROOT's teardown: the values are out)
    if args.cmd == "schema":
        schema = rntuple_schema(args.file, args.name)
        print("\n".join(schema_lines(schema)) if args.lines else json.dumps(schema, indent=1))
        return 0
    if args.cmd == "storage":
        print(json.dumps(rntuple_storage(args.file, args.name), indent=1))
        return 0
    columns = args.columns.split(",") if args.columns else None
    if args.cmd == "values":
        fn = ttree_values if args.tree else rntuple_values
        json.dump(fn(args.file, args.name, columns, _entries(args.entries)), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    diffs = compare(args.ttree_file, args.tree, args.rntuple_file, args.name, columns, _entries(args.entries))
    print("\n".join(diffs) if diffs else "equal")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
