"""Write TTree test files with ROOT 6.40 (PyROOT) for the TTree -> RNTuple converter.

One file per feature (see :data:`CASES`), each with a tree ``t`` (``a/b/t`` in
``subdir``, ``Events`` in ``nanoaod``).  The writing is C++ (``tests/cxx/ttreegen.hxx``)
JIT-compiled into ROOT's interpreter; every value is a deterministic function of the
entry number (:func:`mix` and friends mirror the C++ so tests can recompute values).
Baskets are small (512 bytes) and trees auto-flush every few hundred entries, so every
branch has several baskets of different sizes.

The user classes of the class cases (:data:`USER_CLASSES_CXX`) are compiled with ACLiC
into a dictionary library (cached); :func:`declare_user_classes` loads it, and any
process that reads those trees back (the oracle, the importer) must call it first.

Command line::

    python tests/ttreegen.py OUTDIR [CASE...]   # writes the files, prints their baskets
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rootdump
from rootdump import declare_cxx, load_root

TESTS_DIR = Path(__file__).resolve().parent
CXX_DIR = TESTS_DIR / "cxx"
BENCH_GENERATE = TESTS_DIR.parent / "bench" / "generate.py"

#: The C++ declaration of the user classes (TGNested, TGEvent, TGPlain, TGHit) with the
#: ``#pragma link`` lines for their dictionary (also std::vector<TGPlain>).
USER_CLASSES_CXX = (CXX_DIR / "ttreegen_classes.hxx").read_text()

#: Basket size (bytes) given to every branch of the nanoaod case.
NANOAOD_BASKET = 2000

COMPRESSIONS = {"zlib": 101, "lzma": 207, "lz4": 404, "zstd": 505, "none": 0}


@dataclass(frozen=True)
class Case:
    """One TTree test file."""

    description: str
    tree: str = "t"
    entries: int = 3000
    compression: int = 505
    #: the case whose writer makes it, when it is a variant of another
    base: str | None = None
    #: the tree written without a flush first: each branch's last basket is kept in the
    #: tree's metadata (``TBranch::fBaskets``), the others in keys of their own
    keep_last_baskets: bool = False


CASES: dict[str, Case] = {
    "fundamentals": Case(
        "one branch per leaf type: /O /B /b /S /s /I /i /L /l /F /D, Double32_t /d plain and "
        "d32r/d[0,1,16], Long_t /G, ULong_t /g"
    ),
    "float16": Case("Float16_t /f plain and f16r/f[0,1,12] next to I/I (the importer rejects Float16_t)"),
    "fixed_arrays": Case("x[3]/F, c[4]/B, i[2][3]/I (two dimensions), d[5]/D"),
    "count_arrays": Case(
        "count leaves nB/I, zN/b, nA/I, mS/s (branch order) with arrays b1[nB]/I, z1[zN]/S, "
        "a1[nA]/F, a2[nA]/D, m1[mS]/O, a3[nA]/L; lexicographic count-leaf order mS, nA, nB, zN"
    ),
    "leaflist": Case("leaf lists ll = a/F:b/I:c/D and lm = a/I:b[2]/I around a scalar x/I"),
    "cstring": Case("/C branches s1 (empty strings, strings > 255 characters) and s2, scalar k/I"),
    "stl": Case(
        "TBranchElement branches: vector<float>, vector<int>, vector<double>, vector<bool>, "
        "vector<vector<float>>, std::string, vector<string>"
    ),
    "stl_containers": Case(
        "set<int>, multiset<int>, unordered_set<int>, set<string>, vector<set<int>>, pair<int,float>, "
        "map<int,float>, multimap<int,double>, unordered_map<int,float>, map<string,vector<float>>, "
        "map<int,set<short>>; unsplit map<int,float>, map<int,string>; vector<map<int,float>>; and k/I",
        entries=2000,
    ),
    "tstring": Case("a TString branch ts next to k/I (the importer rejects TString)"),
    "stl_tstring": Case(
        "TStrings in STL collections: map<string,TString> split and unsplit, vector<TString>; k/I "
        "(the importer rejects TString)",
        entries=1500,
    ),
    "stl_array": Case(
        "a top-level std::array<float,3> branch arr (ROOT writes it with an InitializeOffsets error; "
        "RDataFrame cannot read it), a split vector<array<float,3>> varr (the same error: no values, "
        "ROOT reads zeros) and k/I"
    ),
    "stl_array_bitset": Case(
        "std::array and std::bitset in TBranchElement branches: vector<array<float,3>> and set<array<int,2>> "
        "unsplit, vector<bitset<8>>, map<int,array<int,2>> and map<int,bitset<12>> split and unsplit, "
        "vector<vector<array<short,2>>>, vector<vector<bitset<4>>>, bitset<20>; TGArrBits (array and "
        "bitset members) split, unsplit and in vectors; TGArrBitsC (ClassDef; vectors of arrays and "
        "bitsets) unsplit and in a vector; k/I",
        entries=1500,
    ),
    "split_class": Case(
        "ev (TGEvent, ClassDef), pl (TGPlain, no ClassDef), vec (std::vector<TGPlain>) at split "
        "level 99, scalar k/I; members: fundamentals, char, vector<float>, string, vector<string>, "
        "float f[3], nested struct with a vector<short>",
        entries=2000,
    ),
    "unsplit_class": Case("the split_class branches at split level 0", entries=2000),
    "clonesarray": Case("TClonesArray of TGHit (a TObject) at split level 99, scalar k/I", entries=2000),
    "streamer_objects": Case(
        "objects ROOT's RNTuple stores only whole: TLorentzVector, std::vector<TLorentzVector>, "
        "TVector3, a class with a counted C array (whole, split, in a split vector and in a whole "
        "vector streamed member-wise), a class with a streamer of its own, a TClonesArray at split "
        "level 0; scalar k/I",
        entries=2000,
    ),
    "tobject_classes": Case(
        "TObject-derived classes (TGHit; TGTrack: TGHit, two levels of bases) and a class with a "
        "plain base (TGDerived: TGBase), split and unsplit, alone and in vectors; unique ids and "
        "a user bit set",
        entries=2000,
    ),
    "aod_like": Case(
        "an AOD-like event of split products of nested classes: tracks (vector<AODTrack>), vertices "
        "(vector<AODVertex>), aux (AODEventAux), trigger (AODTriggerResults), met (AODMET)",
        entries=4000,
    ),
    "subdir": Case("the small tree in directory a/b", tree="a/b/t"),
    "cycles": Case(
        "the small tree written 3 times while filling and at the end (keys t;N with several cycles)",
        entries=4000,
    ),
    "nanoaod": Case(
        "bench/generate.py's NanoAOD-like tree Events (counts nJet, nElectron, ... and their arrays)",
        tree="Events",
        entries=3000,
    ),
    **{
        f"compression_{algo}": Case(
            f"small tree (i/I, x/F, d/D, n/I, arr[n]/F, vector<double> v) compressed {level}",
            entries=2000,
            compression=level,
        )
        for algo, level in COMPRESSIONS.items()
    },
    "many_baskets": Case(
        "x/D and y/I with hundreds of baskets, basket sizes changed twice while filling, no auto-flush",
        entries=20000,
    ),
}
#: Cases written again without a flush before the tree (``TDirectory::WriteTObject``):
#: every branch kind with its last basket kept in the tree's metadata (7 entries fewer,
#: so that the last auto-flush does not fall on the last entry).
KEPT_BASKETS_BASES = ("fundamentals", "count_arrays", "cstring", "stl", "split_class", "unsplit_class")
CASES.update(
    {
        f"{base}_kept_baskets": Case(
            f"{CASES[base].description}; each branch's last basket kept in the tree's metadata",
            tree=CASES[base].tree,
            entries=CASES[base].entries - 7,
            compression=CASES[base].compression,
            base=base,
            keep_last_baskets=True,
        )
        for base in KEPT_BASKETS_BASES
    }
)

#: Cases whose trees hold the user classes of :data:`USER_CLASSES_CXX`.
CLASS_CASES = (
    "split_class",
    "unsplit_class",
    "clonesarray",
    "tobject_classes",
    "streamer_objects",
    "stl_containers",
    "stl_tstring",
    "aod_like",
    "stl_array_bitset",
)

_nanoaod_declared = False
_classes_loaded = False


def user_classes_library() -> Path:
    """Build (ACLiC, cached per header content and ROOT version under ``rootdump``'s
    dictionary cache) the dictionary library of :data:`USER_CLASSES_CXX`; return its path."""
    ROOT = load_root()
    key = hashlib.sha1(USER_CLASSES_CXX.encode()).hexdigest()[:12]
    workdir = rootdump.dictionary_cache_dir() / f"ttreegen-classes-{key}"
    header = workdir / "ttreegen_classes.hxx"
    with rootdump._locked(workdir):
        libs = sorted(workdir.glob("ttreegen_classes_hxx*.so"))
        if not libs:
            header.write_text(USER_CLASSES_CXX)
            if not ROOT.gSystem.CompileMacro(str(header), "kO"):
                raise RuntimeError(f"ACLiC failed to compile {header}")
            libs = sorted(workdir.glob("**/ttreegen_classes_hxx*.so"))
        if not libs:
            raise RuntimeError(f"ACLiC left no library in {workdir}")
    return libs[0]


def declare_user_classes() -> Any:
    """Load the user classes' dictionary library (:func:`user_classes_library`) once per
    process and return ROOT; afterwards ``TGEvent`` etc. are known to TTree and RNTuple."""
    global _classes_loaded
    ROOT = load_root()
    if not _classes_loaded:
        lib = user_classes_library()
        if ROOT.gSystem.Load(str(lib)) < 0:
            raise RuntimeError(f"cannot load {lib}")
        for name in ("TGEvent", "TGPlain", "TGNested", "TGHit", "vector<TGPlain>"):
            cl = ROOT.TClass.GetClass(name)
            if not cl or not cl.HasDictionary():
                raise RuntimeError(f"no dictionary for {name} after loading {lib}")
        _classes_loaded = True
    return ROOT


def _declare() -> Any:
    """JIT-compile the C++ writers once per process and return the ROOT module."""
    declare_user_classes()
    return declare_cxx("ttreegen.hxx")


def _write_nanoaod(path: Path, entries: int, compression: int) -> None:
    """The TTree half of ``bench/generate.py`` (its C++, fixed seed 42, baskets of
    :data:`NANOAOD_BASKET` bytes)."""
    global _nanoaod_declared
    ROOT = load_root()
    if not _nanoaod_declared:
        spec = importlib.util.spec_from_file_location("bench_generate", BENCH_GENERATE)
        if spec is None or spec.loader is None:
            raise RuntimeError(f"cannot load {BENCH_GENERATE}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        # Smaller baskets than ROOT's default 32000 bytes: several per branch in a few thousand events.
        pattern = r'(tree->Branch\("[^"]+", [^;]*?, "[^"]+")\);'
        source = re.sub(pattern, rf"\1, {NANOAOD_BASKET});", module.cxx_source())
        if source.count(f", {NANOAOD_BASKET});") < 50:
            raise RuntimeError("bench/generate.py's branch calls changed: cannot set their basket size")
        if not ROOT.gInterpreter.Declare(source):
            raise RuntimeError("bench/generate.py's C++ did not compile")
        _nanoaod_declared = True
    ROOT.nanoaod_generate("", str(path), entries, compression, 42)


def _writer(name: str) -> Callable[[Any, str, int, int], None]:
    """The C++ writer of case ``name`` as ``fn(gen namespace, path, entries, compression)``."""
    simple = {
        "fundamentals": "WriteFundamentals",
        "fixed_arrays": "WriteFixedArrays",
        "count_arrays": "WriteCountArrays",
        "leaflist": "WriteLeafList",
        "cstring": "WriteCString",
        "stl": "WriteStl",
        "stl_array": "WriteStlArray",
        "tstring": "WriteTString",
        "stl_containers": "WriteStlContainers",
        "float16": "WriteFloat16",
        "clonesarray": "WriteClonesArray",
        "tobject_classes": "WriteTObjectClasses",
        "streamer_objects": "WriteStreamerObjects",
        "stl_tstring": "WriteStlTString",
        "aod_like": "WriteAodLike",
        "stl_array_bitset": "WriteStlArrayBitset",
        "subdir": "WriteSubdir",
        "many_baskets": "WriteManyBaskets",
    }
    if name in simple:
        return lambda gen, p, n, c: getattr(gen, simple[name])(p, n, c)
    if name == "split_class":
        return lambda gen, p, n, c: gen.WriteClasses(p, n, c, 99)
    if name == "unsplit_class":
        return lambda gen, p, n, c: gen.WriteClasses(p, n, c, 0)
    if name == "cycles":
        return lambda gen, p, n, c: gen.WriteCycles(p, n, c, 3)
    if name.startswith("compression_"):
        return lambda gen, p, n, c: gen.WriteSmall(p, n, c)
    raise KeyError(f"unknown ttreegen case {name!r}")


def write(name: str, outdir: Path) -> Path:
    """Write case ``name`` into ``outdir / f"{name}.root"``; return its path."""
    case = CASES[name]
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"{name}.root"
    if name == "nanoaod":
        _write_nanoaod(path, case.entries, case.compression)
    else:
        ROOT = _declare()
        ROOT.ttreegen.gKeepLastBaskets = case.keep_last_baskets
        try:
            _writer(case.base or name)(ROOT.ttreegen, str(path), case.entries, case.compression)
        finally:
            ROOT.ttreegen.gKeepLastBaskets = False
    return path


def generate(outdir: Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write the cases ``names`` (default: all of :data:`CASES`); return ``{name: path}``."""
    return {name: write(name, Path(outdir)) for name in (names or list(CASES))}


def write_variant(name: str, path: Path, entries: int, compression: int) -> Path:
    """Write case ``name``'s tree with ``entries`` entries and ``compression`` (ROOT's
    number) into ``path``: several distinct files of one case; return ``path``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if name == "nanoaod":
        _write_nanoaod(Path(path), entries, compression)
    else:
        case = CASES[name]
        ROOT = _declare()
        ROOT.ttreegen.gKeepLastBaskets = case.keep_last_baskets
        try:
            _writer(case.base or name)(ROOT.ttreegen, str(path), entries, compression)
        finally:
            ROOT.ttreegen.gKeepLastBaskets = False
    return Path(path)


def describe(path: Path, tree: str) -> dict[str, Any]:
    """The tree's layout as ROOT reports it: entries, keys (name;cycle) of the file's top
    directory, and per top-level branch (and sub-branch) its number of baskets, the
    distinct basket sizes on storage and the branch's compression setting."""
    ROOT = declare_user_classes()
    f = ROOT.TFile.Open(str(path))
    try:
        t = f.Get(tree)
        if not t:
            raise KeyError(f"no tree {tree} in {path}")
        branches: dict[str, Any] = {}

        def walk(b: Any) -> None:
            n = int(b.GetWriteBasket())
            sizes = sorted({int(b.GetBasketBytes()[k]) for k in range(n)})
            branches[str(b.GetFullName())] = {
                "baskets": n,
                "basket_bytes": [sizes[0], sizes[-1]] if sizes else [],
                "distinct_sizes": len(sizes),
                "compression": int(b.GetCompressionSettings()),
            }
            for sub in b.GetListOfBranches():
                walk(sub)

        for b in t.GetListOfBranches():
            walk(b)
        keys = [f"{k.GetName()};{k.GetCycle()}" for k in f.GetListOfKeys()]
        return {
            "entries": int(t.GetEntries()),
            "keys": keys,
            "file_compression": int(f.GetCompressionSettings()),
            "branches": branches,
        }
    finally:
        f.Close()


# --- The generating functions, mirrored from tests/cxx/ttreegen.hxx ---------------------------

_M64 = (1 << 64) - 1


def mix(i: int, salt: int) -> int:
    """``ttreegen::Mix``: splitmix64 of (entry, salt)."""
    z = (i * 0x9E3779B97F4A7C15 + salt * 0xD1B54A32D192ED03 + 0x632BE59BD9B4E019) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def int_value(i: int, salt: int, bits: int, signed: bool) -> int:
    """``ttreegen::IntValue<T>`` for a ``bits``-bit (un)signed T."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    k = i % 61
    if k == 0:
        return lo
    if k == 1:
        return hi
    if k == 2:
        return 0
    v = mix(i, salt) & ((1 << bits) - 1)
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def bool_value(i: int, salt: int) -> bool:
    """``ttreegen::BoolValue``."""
    return bool((mix(i, salt) >> 7) & 1)


def float_value(i: int, salt: int) -> float:
    """``ttreegen::FloatValue`` (as a Python float; every value is exact in binary32)."""
    k = i % 61
    if k == 0:
        return -0.0
    if k == 1:
        return struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
    if k == 2:
        return struct.unpack("<f", struct.pack("<I", 1))[0]
    return float((mix(i, salt) >> 40) - (1 << 23)) / 1024.0


def double_value(i: int, salt: int) -> float:
    """``ttreegen::DoubleValue``."""
    k = i % 61
    if k == 0:
        return -0.0
    if k == 1:
        return sys.float_info.max
    if k == 2:
        return 5e-324
    return (float(mix(i, salt) >> 11) * 2.0**-53 - 0.5) * 1e6


def length(i: int, salt: int, max_len: int) -> int:
    """``ttreegen::Length``."""
    if i % 7 == 0:
        return 0
    return mix(i, salt + 1000) % (max_len + 1)


def fundamentals_expected(entry: int) -> dict[str, Any]:
    """The values of the ``fundamentals`` tree's exactly stored branches at ``entry``
    (Python ints, bools, floats; not the quantized Double32_t/Float16_t ones)."""
    e = entry
    return {
        "o": bool_value(e, 1),
        "B": int_value(e, 2, 8, True),
        "b": int_value(e, 3, 8, False),
        "S": int_value(e, 4, 16, True),
        "s": int_value(e, 5, 16, False),
        "I": int_value(e, 6, 32, True),
        "i": int_value(e, 7, 32, False),
        "L": int_value(e, 8, 64, True),
        "l": int_value(e, 9, 64, False),
        "F": float_value(e, 10),
        "D": double_value(e, 11),
        "d32": 1.5 if e % 61 == 1 else float(struct.unpack("<f", struct.pack("<f", double_value(e, 12)))[0]),
        "G": int_value(e, 16, 64, True),
        "g": int_value(e, 17, 64, False),
    }


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: write the cases into OUTDIR and print their layout."""
    ap = rootdump.outdir_parser(__doc__)
    ap.add_argument("cases", nargs="*", help=f"cases to write (default all): {', '.join(CASES)}")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    paths = generate(args.outdir, args.cases or None)
    print(f"generated {len(paths)} files in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    for name, path in paths.items():
        info = describe(path, CASES[name].tree)
        summary = {b: (v["baskets"], v["distinct_sizes"]) for b, v in info["branches"].items()}
        print(name, json.dumps({k: v for k, v in info.items() if k != "branches"}), json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
