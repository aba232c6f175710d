"""Support for the writer's property test (``test_writer_properties.py``).

The Rust test tool ``propgen`` (``crates/rntuple-testkit/src/bin/propgen.rs``) writes, per
seed, a random RNTuple (``data.root``), the expected rendering of every entry
(``expected.json``, from the in-memory Arrow data) and ``manifest.json`` (field types and
shapes, write options, structure).  This module runs it, reads the file back with ROOT
6.40 (in a subprocess, with STL dictionaries built for the proxied collections), with
uproot 5.7 (converted to the same JSON conventions) and with ``rntuple dump --json``,
and compares.

Command line (used by the test for ROOT's reading, one process per file)::

    python tests/writer_props.py root-dump FILE NAME --dicts DIR > out.json
    python tests/writer_props.py build-dicts DIR TYPE...
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

from rootdump import PROXIED_CONTAINERS  # noqa: E402

#: Collections ROOT reads through a collection proxy: they need a dictionary (the PyPI
#: ROOT build ships none for most instantiations; emulated proxies abort).
PROXIED_PREFIXES = tuple(f"std::{c}<" for c in PROXIED_CONTAINERS)

Shape = dict[str, Any]


def propgen_bin() -> Path:
    """Path of the ``propgen`` binary (``$PROPGEN_BIN`` or the release build)."""
    env = os.environ.get("PROPGEN_BIN")
    return Path(env) if env else REPO_ROOT / "target" / "release" / "propgen"


def build_propgen() -> Path:
    """Build the generator (``cargo build --release -p rntuple-testkit --bin propgen``)
    unless given."""
    if not os.environ.get("PROPGEN_BIN"):
        subprocess.run(
            ["cargo", "build", "--release", "-q", "-p", "rntuple-testkit", "--bin", "propgen"],
            cwd=REPO_ROOT,
            check=True,
        )
    path = propgen_bin()
    if not path.is_file():
        raise FileNotFoundError(f"propgen binary not found at {path}")
    return path


def repro_command(seed: int) -> str:
    """Shell commands reproducing one seed."""
    out = f"/tmp/propgen-{seed}"
    return (
        f"cargo run --release -p rntuple-testkit --bin propgen -- --seed {seed} --out {out} && "
        f"python3 tests/writer_props.py compare {out}"
    )


def generate(seed: int, outdir: Path, binary: Path) -> dict[str, Any]:
    """Run the generator for ``seed`` into ``outdir``; return the manifest."""
    outdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [str(binary), "--seed", str(seed), "--out", str(outdir)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "RUST_BACKTRACE": "0"},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"propgen --seed {seed} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    manifest: dict[str, Any] = json.loads((outdir / "manifest.json").read_text())
    return manifest


def proxied_types(manifest: dict[str, Any]) -> list[str]:
    """The type names in the manifest ROOT reads through a collection proxy."""
    return [t for t in manifest["type_names"] if t.startswith(PROXIED_PREFIXES)]


# ------------------------------------------------------------------- ROOT side


def build_dictionaries(dict_dir: Path, types: list[str]) -> None:
    """Build (ACLiC) one dictionary library for ``types`` in ``dict_dir``."""
    import rootdump

    ROOT = rootdump.load_root()
    dict_dir.mkdir(parents=True, exist_ok=True)
    cwd = os.getcwd()
    try:
        os.chdir(dict_dir)
        includes = (
            "map;set;unordered_map;unordered_set;string;vector;variant;optional;memory;bitset;array;"
            "tuple;utility;atomic;cstddef;cstdint;ROOT/RVec.hxx"
        )
        ROOT.gInterpreter.GenerateDictionary(";".join(types), includes)
    finally:
        os.chdir(cwd)
    missing = [t for t in types if not ROOT.TClass.GetClass(t).HasDictionary()]
    if missing:
        raise RuntimeError(f"no dictionary generated for {missing}")


def build_dictionaries_robustly(dict_dir: Path, types: list[str]) -> list[str]:
    """Dictionary libraries for ``types`` under ``dict_dir``: one for all, or, when that
    fails, by bisection (each build in a subprocess), so that a type without a dictionary
    only affects the files that use it.  Returns the types without one."""
    proc = subprocess.run(
        [sys.executable, __file__, "build-dict-set", str(dict_dir), *types], capture_output=True, check=False
    )
    if proc.returncode == 0:
        return []
    for lib in dict_dir.glob("*.so"):
        lib.unlink()  # a partial library would clash with the ones built below
    if len(types) == 1:
        print(f"no dictionary for {types[0]}", file=sys.stderr)
        return list(types)
    half = len(types) // 2
    return build_dictionaries_robustly(dict_dir / "a", types[:half]) + build_dictionaries_robustly(
        dict_dir / "b", types[half:]
    )


def root_dump_text(path: str, name: str, dict_dir: str | None) -> str:
    """ROOT's reading of the whole RNTuple as JSON text, after loading the dictionaries."""
    import rootdump

    ROOT = rootdump.load_root()
    if dict_dir:
        for lib in sorted(glob.glob(os.path.join(dict_dir, "**", "*.so"), recursive=True)):
            if ROOT.gSystem.Load(lib) < 0:
                raise RuntimeError(f"cannot load {lib}")
    return rootdump.dump_text(path, name)


def root_dump(path: Path, name: str, dict_dir: Path | None, timeout: float = 600) -> tuple[Any, str]:
    """ROOT's reading in a subprocess: (parsed JSON or None, error text)."""
    cmd = [sys.executable, __file__, "root-dump", str(path), name]
    if dict_dir is not None:
        cmd += ["--dicts", str(dict_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        markers = ("RException:", "Fatal:", "Fatal in", "Error in", "Error:")
        err = next((ln for ln in lines if ln.startswith(markers) or "RException:" in ln), "")
        err = err or (lines[-1] if lines else "")
        return None, f"ROOT failed (exit {proc.returncode}): {err.strip()[:500]}"
    return json.loads(proc.stdout), ""


# ------------------------------------------------------------------- our reader


def rntuple_dump(binary: Path, path: Path, name: str) -> tuple[Any, str]:
    """``rntuple dump FILE:NAME --json``: (parsed JSON or None, error text)."""
    proc = subprocess.run(
        [str(binary), "dump", f"{path}:{name}", "--json"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return None, f"rntuple dump failed (exit {proc.returncode}): {proc.stderr.strip()[:500]}"
    return json.loads(proc.stdout), ""


# ------------------------------------------------------------------- uproot side


def c_hexfloat(x: float) -> str:
    """``printf("%a")`` of a finite double, as glibc writes it."""
    if x == 0.0:
        return "-0x0p+0" if math.copysign(1.0, x) < 0 else "0x0p+0"
    sign = "-" if x < 0 else ""
    h = float.hex(abs(x))  # '0x1.8000000000000p+3' or '0x0.0000000000001p-1022'
    mant, _, exp = h[2:].partition("p")
    lead, _, frac = mant.partition(".")
    frac = frac.rstrip("0")
    exp_i = int(exp)
    return f"{sign}0x{lead}{'.' + frac if frac else ''}p{'+' if exp_i >= 0 else '-'}{abs(exp_i)}"


def _pair_items(value: Any) -> list[Any]:
    """The members of a pair/tuple as uproot gives them (tuple, list or record dict)."""
    if isinstance(value, dict):
        return [value[k] for k in sorted(value, key=lambda k: int(k.lstrip("_")))]
    return list(value)


def from_uproot(value: Any, shape: Shape) -> Any:
    """Convert uproot's ``to_list()`` value of a field of ``shape`` to the JSON conventions."""
    kind = shape["kind"]
    if value is None and kind in ("optional", "variant"):
        return None
    if kind == "prim":
        if shape["float"]:
            return c_hexfloat(float(value))
        if shape["type"] == "char" and int(value) > 127:
            # uproot 5.7 reads the Char column unsigned; C++ char (and ROOT's reading) is signed.
            return int(value) - 256
        return int(value)
    if kind == "string":
        return value
    if kind in ("list", "set", "array"):
        return [from_uproot(v, shape["item"]) for v in value]
    if kind == "bitset":
        return "".join("1" if b else "0" for b in reversed(value))
    if kind == "map":
        out = {}
        for item in value:
            k, v = _pair_items(item)
            key = from_uproot(k, shape["key"])
            out[key if isinstance(key, str) else json.dumps(key)] = from_uproot(v, shape["value"])
        return out
    if kind == "optional":
        if shape["type"].startswith("std::unique_ptr<") and isinstance(value, list):
            # uproot reads std::unique_ptr<T> as a list of zero or one T.
            return from_uproot(value[0], shape["item"]) if value else None
        return from_uproot(value, shape["item"])
    if kind == "atomic":
        return from_uproot(value, shape["item"])
    if kind == "tuple":
        items = _pair_items(value)
        return [from_uproot(v, s) for v, s in zip(items, shape["items"], strict=True)]
    if kind == "variant":
        for alt in shape["items"]:
            if _matches(value, alt):
                return from_uproot(value, alt)
        raise ValueError(f"uproot value {value!r:.200} matches no alternative of {shape['type']}")
    raise ValueError(f"unknown shape kind {kind}")


def _matches(value: Any, shape: Shape) -> bool:
    """Whether a Python value from uproot can be a value of ``shape`` (variant alternatives)."""
    kind = shape["kind"]
    if kind == "prim":
        if shape["float"]:
            return isinstance(value, float)
        if shape["bool"]:
            return isinstance(value, bool)
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "optional":
        return value is None or _matches(value, shape["item"])
    if kind == "atomic":
        return _matches(value, shape["item"])
    if kind in ("list", "set", "array", "map", "bitset"):
        if not isinstance(value, list):
            return False
        if kind == "array" and len(value) != shape["n"]:
            return False
        if kind == "bitset":
            return len(value) == shape["n"] and all(isinstance(v, bool) for v in value)
        if kind == "map":
            return all(isinstance(v, tuple | dict) and len(_pair_items(v)) == 2 for v in value)
        return all(_matches(v, shape["item"]) for v in value)
    if kind == "tuple":
        if not isinstance(value, tuple | dict | list):
            return False
        items = _pair_items(value)
        return len(items) == len(shape["items"]) and all(
            _matches(v, s) for v, s in zip(items, shape["items"], strict=True)
        )
    if kind == "variant":
        return any(_matches(value, s) for s in shape["items"])
    return False


def contains_kind(shape: Shape, kind: str) -> bool:
    """Whether ``shape`` or any shape below it is of ``kind``."""
    if shape["kind"] == kind:
        return True
    subs = [shape[k] for k in ("item", "key", "value") if k in shape] + shape.get("items", [])
    return any(contains_kind(s, kind) for s in subs)


def uproot_skips(manifest: dict[str, Any]) -> dict[str, str]:
    """Fields whose uproot comparison is skipped, with the reason (known uproot 5.7 limits)."""
    skips: dict[str, str] = {}
    for f in manifest["fields"]:
        if manifest["split_blobs"] and not manifest.get("uproot_file"):
            skips[f["name"]] = (
                f"uproot 5.7 cannot read payloads split across keys (max_key_size="
                f"{manifest['options']['max_key_size']}, {manifest['split_blobs']} payload(s) split)"
            )
        elif contains_kind(f["shape"], "variant"):
            skips[f["name"]] = (
                "uproot 5.7 misreads std::variant (values after the first cluster; also alternative "
                "types, e.g. double read as float16 behind an extra 'unknown' alternative)"
            )
    return skips


def _variant_with_unordered_alternative(shape: Shape) -> bool:
    """Whether a variant below ``shape`` has an unordered set/map as a direct alternative."""
    if shape["kind"] == "variant" and any(
        a["kind"] in ("set", "map") and a["unordered"] for a in shape["items"]
    ):
        return True
    subs = [shape[k] for k in ("item", "key", "value") if k in shape] + shape.get("items", [])
    return any(_variant_with_unordered_alternative(s) for s in subs)


def _variant_with_array_alternative(shape: Shape) -> bool:
    """Whether a variant below ``shape`` has a ``std::array`` as a direct alternative."""
    if shape["kind"] == "variant" and any(a["kind"] == "array" for a in shape["items"]):
        return True
    subs = [shape[k] for k in ("item", "key", "value") if k in shape] + shape.get("items", [])
    return any(_variant_with_array_alternative(s) for s in subs)


def root_skips(manifest: dict[str, Any]) -> dict[str, str]:
    """Fields whose ROOT comparison is skipped, with the reason (ROOT 6.40 limits that its
    own files show too)."""
    skips: dict[str, str] = {}
    for f in manifest["fields"]:
        if _variant_with_array_alternative(f["shape"]):
            skips[f["name"]] = (
                "ROOT 6.40 (read through tests/rootdump.py) gives every value of a std::variant with a "
                "std::array alternative as null or 0, also from files ROOT wrote "
                "(variant<bool,array<int32_t,3>,int64_t,char>: every value null)"
            )
        elif _variant_with_unordered_alternative(f["shape"]):
            skips[f["name"]] = (
                "ROOT 6.40 cannot read back a std::variant with an unordered set/map alternative, "
                "also from files ROOT wrote (variant<int32_t, unordered_set<int32_t>>: every value "
                "null; variant<int32_t, unordered_multiset<string>>: garbage ints)"
            )
    return skips


def uproot_file(outdir: Path, manifest: dict[str, Any]) -> Path:
    """The file uproot reads: ``data.root``, or where it has payloads split across keys
    (which uproot 5.7 cannot read), the same writes with keys large enough."""
    return outdir / manifest.get("uproot_file", manifest["file"])


def uproot_rows(values: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """uproot's values ({field: values}) as rows ([{field: value}])."""
    return [dict(zip(values, vs, strict=True)) for vs in zip(*values.values(), strict=True)]


def uproot_read(
    path: Path, manifest: dict[str, Any], skips: dict[str, str]
) -> tuple[dict[str, list[Any]], str]:
    """uproot's reading of every non-skipped field, converted: ({field: values}, error)."""
    import uproot

    names = [f["name"] for f in manifest["fields"] if f["name"] not in skips]
    if not names:
        return {}, ""
    try:
        with uproot.open(path) as f:
            arrays = f[manifest["name"]].arrays(names)
            out = {}
            for fld in manifest["fields"]:
                if fld["name"] in names:
                    out[fld["name"]] = [from_uproot(v, fld["shape"]) for v in arrays[fld["name"]].to_list()]
            return out, ""
    except Exception as exc:
        return {}, f"uproot failed: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}"


# ------------------------------------------------------------------- comparison


def _sort_key(v: Any) -> tuple[int, Any]:
    return (1, v) if isinstance(v, str) else (0, v) if isinstance(v, int) else (2, json.dumps(v))


def canonical(value: Any, shape: Shape) -> Any:
    """``value`` with the elements of unordered sets sorted (ROOT iterates them in hash order)."""
    if value is None:
        return None
    kind = shape["kind"]
    if kind == "set":
        items = [canonical(v, shape["item"]) for v in value]
        return sorted(items, key=_sort_key) if shape["unordered"] else items
    if kind in ("list", "array"):
        return [canonical(v, shape["item"]) for v in value]
    if kind == "map":
        return {k: canonical(v, shape["value"]) for k, v in value.items()}
    if kind in ("optional", "atomic"):
        return canonical(value, shape["item"])
    if kind == "tuple":
        return [canonical(v, s) for v, s in zip(value, shape["items"], strict=False)]
    if kind == "variant":
        # The active alternative is not in the rendering: canonicalize as the first
        # alternative the value fits (done alike on both sides of a comparison).
        for alt in shape["items"]:
            if _fits_json(value, alt):
                return canonical(value, alt)
    return value


def _fits_json(value: Any, shape: Shape) -> bool:
    """Whether a rendered JSON value can be of ``shape``."""
    kind = shape["kind"]
    if kind == "prim":
        return isinstance(value, str) if shape["float"] else isinstance(value, int)
    if kind == "string":
        return isinstance(value, str)
    if kind == "bitset":
        return isinstance(value, str) and len(value) == shape["n"] and set(value) <= {"0", "1"}
    if kind == "map":
        return isinstance(value, dict)
    if kind in ("optional", "atomic"):
        return value is None or _fits_json(value, shape["item"])
    if kind in ("list", "set", "array"):
        return isinstance(value, list) and all(_fits_json(v, shape["item"]) for v in value)
    if kind == "tuple":
        return (
            isinstance(value, list)
            and len(value) == len(shape["items"])
            and all(_fits_json(v, s) for v, s in zip(value, shape["items"], strict=True))
        )
    if kind == "variant":
        return value is None or any(_fits_json(value, s) for s in shape["items"])
    return False


def first_difference(
    got: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    manifest: dict[str, Any],
    fields: list[str] | None = None,
) -> str | None:
    """Describe the first entry/field where ``got`` differs from ``expected`` (None: equal)."""
    shapes = {f["name"]: f for f in manifest["fields"]}
    names = fields if fields is not None else list(shapes)
    if len(got) != len(expected):
        return f"entry count: got {len(got)}, expected {len(expected)}"
    for name in names:
        shape = shapes[name]["shape"]
        bad = [
            i
            for i, (g, e) in enumerate(zip(got, expected, strict=True))
            if canonical(g.get(name), shape) != canonical(e[name], shape)
        ]
        if bad:
            i = bad[0]
            late = shapes[name]["late"]
            return (
                f"field {name} ({shapes[name]['type']}{', late' if late else ''}): {len(bad)} "
                f"entries differ, first entry {i}: got {json.dumps(got[i].get(name))[:300]} "
                f"expected {json.dumps(expected[i][name])[:300]}"
            )
    return None


@dataclass
class Comparison:
    """One reader's reading compared with ``expected.json``."""

    reader: str
    #: (entry, field) values compared.
    values: int = 0
    difference: str | None = None

    def problem(self) -> str | None:
        """What is wrong: a difference, or a comparison of nothing (no entry, or every
        field left out), which would pass whatever the reader gave."""
        if self.difference:
            return f"{self.reader}: {self.difference}"
        if self.values == 0:
            return f"{self.reader}: compared no value (no entry, or every field left out)"
        return None


def compare(
    reader: str,
    reading: tuple[Any, str],
    expected: list[dict[str, Any]],
    manifest: dict[str, Any],
    fields: list[str] | None = None,
) -> Comparison:
    """``reader``'s reading (its rows and its error, as ``root_dump`` gives them) against
    ``expected``, over ``fields`` (default all), counting the values compared."""
    got, error = reading
    if error:
        return Comparison(reader, 0, error)
    names = fields if fields is not None else [f["name"] for f in manifest["fields"]]
    diff = first_difference(got, expected, manifest, names)
    return Comparison(reader, 0 if diff else len(expected) * len(names), diff)


def describe(manifest: dict[str, Any]) -> str:
    """One paragraph: seed, types, options, structure (for failure messages)."""
    types = ", ".join(f"{f['name']}{'*' if f['late'] else ''}: {f['type']}" for f in manifest["fields"])
    return (
        f"seed {manifest['seed']}: {manifest['n_entries']} entries, late extension at "
        f"{manifest['extension_at']} (* = late field); fields: {types}; column overrides: "
        f"{manifest['column_overrides']}; options: {json.dumps(manifest['options'])}; "
        f"writes: {manifest['write_log']}"
    )


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    rd = sub.add_parser("root-dump", help="ROOT's reading as JSON on stdout")
    rd.add_argument("file")
    rd.add_argument("name")
    rd.add_argument("--dicts", help="directory of dictionary libraries to load first")
    bd = sub.add_parser("build-dicts", help="build one dictionary library for the given types")
    bd.add_argument("dir")
    bd.add_argument("types", nargs="+")
    bs = sub.add_parser("build-dict-set", help=argparse.SUPPRESS)
    bs.add_argument("dir")
    bs.add_argument("types", nargs="+")
    cmp_ = sub.add_parser("compare", help="compare ROOT, uproot and rntuple dump with expected.json")
    cmp_.add_argument("dir", help="propgen output directory")
    args = ap.parse_args(argv)
    if args.cmd == "root-dump":
        sys.stdout.write(root_dump_text(args.file, args.name, args.dicts))
        return 0
    if args.cmd == "build-dict-set":
        build_dictionaries(Path(args.dir), args.types)
        return 0
    if args.cmd == "build-dicts":
        missing = build_dictionaries_robustly(Path(args.dir), args.types)
        print(json.dumps(missing))
        return 0
    outdir = Path(args.dir)
    manifest = json.loads((outdir / "manifest.json").read_text())
    expected = json.loads((outdir / "expected.json").read_text())
    path = outdir / manifest["file"]
    print(describe(manifest))
    dict_dir = None
    types = proxied_types(manifest)
    if types:
        dict_dir = outdir / "dicts"
        if not glob.glob(str(dict_dir / "**" / "*.so"), recursive=True):
            build_dictionaries_robustly(dict_dir, types)
    comparisons = []
    rskips = root_skips(manifest)
    checked = [f["name"] for f in manifest["fields"] if f["name"] not in rskips]
    name = manifest["name"]
    comparisons.append(compare("ROOT", root_dump(path, name, dict_dir), expected, manifest, checked))
    rbin = Path(os.environ.get("RNTUPLE_BIN", REPO_ROOT / "target" / "release" / "rntuple"))
    comparisons.append(compare("rntuple dump", rntuple_dump(rbin, path, name), expected, manifest))
    skips = uproot_skips(manifest)
    values, err = uproot_read(uproot_file(outdir, manifest), manifest, skips)
    comparisons.append(compare("uproot", (uproot_rows(values), err), expected, manifest, list(values)))
    status = 0
    for c in comparisons:
        print(f"{c.reader}: {c.problem() or f'equal ({c.values} values)'}")
        status |= bool(c.problem())
    print(f"left out: ROOT {rskips or 'none'}; uproot {skips or 'none'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
