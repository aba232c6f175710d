"""Files written with ``rntuple.recreate`` from Awkward, pandas, pyarrow, Polars and dicts
of NumPy arrays, read back by ROOT 6.40, uproot 5.7 and ``rntuple`` itself.

Every input is NanoAOD-like data made with a seeded NumPy generator: scalars of every
numeric dtype, jagged ``var * float32``/``var * int32`` jets, strings, option types,
``var * var * int``, records, collections of records and fixed-size 2-D arrays. Each file
spans several clusters (a 64 kB cluster size) and gets more entries through ``extend()``.
ROOT's reading (``tests/rootdump.py``: every float rendered exactly as a C99 hex float)
and uproot's must equal the input value for value, bit for bit for floats; the C++ types
ROOT reports must be the ones the data implies.

Also: each compression setting as ROOT's descriptor reports it, ``types`` overrides,
page and cluster sizes, and the errors the writer raises for bad input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import awkward as ak
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import uproot

import rntuple
import rootdump
import rootgen

NAME = "Events"
#: Entries of the first write and of the ``extend()`` that follows it.
N_FIRST = 6000
N_MORE = 2500
CLUSTER_SIZE = "64 kB"

NUMERIC_DTYPES = [
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "bool",
]
#: The C++ type ROOT must report for a scalar of each NumPy dtype.
CPP_SCALAR = {
    "int8": "std::int8_t",
    "int16": "std::int16_t",
    "int32": "std::int32_t",
    "int64": "std::int64_t",
    "uint8": "std::uint8_t",
    "uint16": "std::uint16_t",
    "uint32": "std::uint32_t",
    "uint64": "std::uint64_t",
    "float32": "float",
    "float64": "double",
    "bool": "bool",
}
WORDS = ["", "Muon", "Electron", "τ-lepton", "jet with a long name " * 3, "\u03b3\u03b3"]


# --- inputs --------------------------------------------------------------------------


def scalar(rng: np.random.Generator, dtype: str, n: int) -> np.ndarray:
    """``n`` random values of ``dtype`` spanning its range (floats with NaN, ±inf, -0)."""
    if dtype == "bool":
        return rng.random(n) < 0.3
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        values[:2] = [info.min, info.max]
        return values
    values = rng.normal(0, 1e3, n).astype(dtype)
    values[3::101] = np.nan
    values[5] = np.inf
    values[6] = -np.inf
    values[7] = -0.0
    values[8] = np.finfo(dtype).tiny
    return values


def jagged(rng: np.random.Generator, n: int, dtype: str, mean: float = 3.0) -> ak.Array:
    """A ``var * dtype`` array with Poisson counts (some entries empty)."""
    counts = rng.poisson(mean, n)
    total = int(counts.sum())
    if dtype.startswith("float"):
        flat = rng.exponential(40.0, total).astype(dtype)
    else:
        flat = rng.integers(-1000, 1000, total).astype(dtype)
    return ak.unflatten(flat, counts)


def nano_awkward(seed: int, n: int) -> ak.Array:
    """A NanoAOD-like Awkward Array of records with every kind of field."""
    rng = np.random.default_rng(seed)
    columns: dict[str, Any] = {f"s_{d}": scalar(rng, d, n) for d in NUMERIC_DTYPES}
    columns["Jet_pt"] = jagged(rng, n, "float32")
    columns["Jet_nConst"] = jagged(rng, n, "int32")
    columns["dataset"] = ak.Array([WORDS[i] for i in rng.integers(0, len(WORDS), n)])
    weight = rng.normal(1, 0.1, n)
    columns["weight_opt"] = ak.mask(ak.Array(weight), rng.random(n) > 0.2)
    outer = rng.poisson(2.0, n)
    inner = jagged(rng, int(outer.sum()), "int64", 2.0)
    columns["Jet_constIdx"] = ak.unflatten(inner, outer)
    columns["MET"] = ak.zip({"pt": rng.exponential(30.0, n), "phi": rng.uniform(-3, 3, n).astype("f4")})
    mu_counts = rng.poisson(1.5, n)
    mu_total = int(mu_counts.sum())
    muons = ak.zip(
        {
            "pt": rng.exponential(20.0, mu_total).astype("f4"),
            "eta": rng.uniform(-2.4, 2.4, mu_total).astype("f4"),
            "charge": rng.choice(np.array([-1, 1], dtype="i4"), mu_total),
        }
    )
    columns["Muon"] = ak.unflatten(muons, mu_counts)
    columns["cov"] = rng.normal(0, 1, (n, 3)).astype("f4")
    return ak.zip(columns, depth_limit=1)


#: The C++ type ROOT must report for each top-level field of :func:`nano_awkward`.
AWKWARD_TYPES = {
    **{f"s_{d}": CPP_SCALAR[d] for d in NUMERIC_DTYPES},
    "Jet_pt": "std::vector<float>",
    "Jet_nConst": "std::vector<std::int32_t>",
    "dataset": "std::string",
    "weight_opt": "std::optional<double>",
    "Jet_constIdx": "std::vector<std::vector<std::int64_t>>",
    "MET": "",
    "Muon": "",
    "cov": "std::array<float,3>",
}


def flat_columns(seed: int, n: int, *, nan: bool = True) -> dict[str, np.ndarray]:
    """Flat NumPy columns (every numeric dtype, strings) for the data-frame inputs."""
    rng = np.random.default_rng(seed)
    columns: dict[str, Any] = {f"s_{d}": scalar(rng, d, n) for d in NUMERIC_DTYPES}
    if not nan:
        for d in ("float32", "float64"):
            columns[f"s_{d}"] = rng.normal(0, 1, n).astype(d)
    columns["dataset"] = np.array([WORDS[i] for i in rng.integers(0, len(WORDS), n)], dtype=object)
    return columns


FLAT_TYPES = {**{f"s_{d}": CPP_SCALAR[d] for d in NUMERIC_DTYPES}, "dataset": "std::string"}


def arrow_table(seed: int, n: int) -> pa.Table:
    """A pyarrow Table: optional columns with nulls, nullable ones without, lists, structs."""
    rng = np.random.default_rng(seed)
    valid = rng.random(n) > 0.25
    x = rng.normal(0, 1, n)
    k = rng.integers(-50, 50, n).astype("i4")
    jets = jagged(rng, n, "float32")
    lists = [
        list(v) if ok else None for v, ok in zip(ak.to_list(jagged(rng, n, "int32")), valid, strict=True)
    ]
    return pa.table(
        {
            "x_opt": pa.array(x, mask=~valid),
            "k_opt": pa.array(k, mask=rng.random(n) < 0.1),
            "y": pa.array(rng.normal(0, 1, n)),
            "u64": pa.array(rng.integers(0, 2**64 - 1, n, dtype="u8", endpoint=True)),
            "flag": pa.array(rng.random(n) < 0.5),
            "Jet_pt": pa.array(ak.to_list(jets), type=pa.list_(pa.float32())),
            "ids_opt": pa.array(lists, type=pa.list_(pa.int32())),
            "name": pa.array([WORDS[i] for i in rng.integers(0, len(WORDS), n)]),
            "MET": pa.StructArray.from_arrays(
                [pa.array(rng.exponential(30.0, n)), pa.array(rng.integers(0, 9, n).astype("i2"))],
                names=["pt", "n"],
            ),
        }
    )


ARROW_TYPES = {
    "x_opt": "std::optional<double>",
    "k_opt": "std::optional<std::int32_t>",
    "y": "double",
    "u64": "std::uint64_t",
    "flag": "bool",
    "Jet_pt": "std::vector<float>",
    "ids_opt": "std::optional<std::vector<std::int32_t>>",
    "name": "std::string",
    "MET": "",
}


def polars_frame(seed: int, n: int) -> pl.DataFrame:
    """A Polars DataFrame: numbers, strings (large_string on export) and lists."""
    columns = flat_columns(seed, n)
    rng = np.random.default_rng(seed + 1000)
    frame = pl.DataFrame({k: (list(v) if v.dtype == object else v) for k, v in columns.items()})
    jets = ak.to_list(jagged(rng, n, "float32"))
    return frame.with_columns(pl.Series("Jet_pt", jets, dtype=pl.List(pl.Float32)))


POLARS_TYPES = {**FLAT_TYPES, "Jet_pt": "std::vector<float>"}


def numpy_dict(seed: int, n: int) -> dict[str, np.ndarray]:
    """A dict of NumPy arrays: every numeric dtype and fixed-size 2-D and 3-D arrays."""
    rng = np.random.default_rng(seed)
    columns: dict[str, np.ndarray] = {f"s_{d}": scalar(rng, d, n) for d in NUMERIC_DTYPES}
    columns["cov"] = rng.normal(0, 1, (n, 4))
    columns["hits"] = rng.integers(0, 1000, (n, 2, 3)).astype("u2")
    return columns


NUMPY_TYPES = {
    **{f"s_{d}": CPP_SCALAR[d] for d in NUMERIC_DTYPES},
    "cov": "std::array<double,4>",
    "hits": "std::array<std::array<std::uint16_t,3>,2>",
}


# --- comparing -----------------------------------------------------------------------


def first_difference(got: Any, expected: Any, where: str = "") -> str | None:
    """``None`` if ``got`` equals ``expected`` exactly, else where and how they differ.

    Floats must be the same double (NaN equals NaN, ``-0.0`` differs from ``0.0``); a
    string ``got`` for a float ``expected`` is read as ROOT's C99 hex rendering."""
    if isinstance(expected, float):
        if isinstance(got, str):
            got = float.fromhex(got)
        if not isinstance(got, float):
            return f"{where}: got {got!r}, expected the float {expected!r}"
        if math.isnan(expected) and math.isnan(got):
            return None
        if got != expected or math.copysign(1, got) != math.copysign(1, expected):
            return f"{where}: got {got!r}, expected {expected!r}"
        return None
    if isinstance(expected, bool):
        return (
            None if got in (0, 1) and bool(got) == expected else f"{where}: got {got!r}, expected {expected}"
        )
    if isinstance(expected, int):
        if isinstance(got, bool) or not isinstance(got, int) or got != expected:
            return f"{where}: got {got!r}, expected {expected!r}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"{where}: got {got!r}, expected the record {expected!r}"
        for key, value in expected.items():
            diff = first_difference(got[key], value, f"{where}.{key}")
            if diff:
                return diff
        return None
    if isinstance(expected, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(expected):
            return f"{where}: got {got!r}, expected {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            diff = first_difference(g, e, f"{where}[{i}]")
            if diff:
                return diff
        return None
    return None if got == expected else f"{where}: got {got!r}, expected {expected!r}"


def assert_same(got: list[dict[str, Any]], expected: list[dict[str, Any]], reader: str) -> None:
    """Every entry of ``got`` equals ``expected``'s (same entry count)."""
    assert len(got) == len(expected), f"{reader}: {len(got)} entries, expected {len(expected)}"
    diff = first_difference(got, expected, reader)
    assert diff is None, diff


def assert_read_by_root_and_uproot(path: Path, expected: list[dict[str, Any]]) -> None:
    """ROOT and uproot both read ``expected`` from the RNTuple ``NAME`` of ``path``."""
    assert_same(rootdump.dump(path, NAME), expected, "ROOT")
    with uproot.open(path) as f:
        assert_same(ak.to_list(f[NAME].arrays()), expected, "uproot")


def rows(columns: dict[str, Any]) -> list[dict[str, Any]]:
    """Entries (dicts of Python values) from columns of NumPy/Awkward/pyarrow values."""
    lists = {}
    for name, value in columns.items():
        if isinstance(value, np.ndarray):
            lists[name] = value.tolist()
        elif isinstance(value, pa.Array | pa.ChunkedArray):
            lists[name] = value.to_pylist()
        else:
            lists[name] = ak.to_list(value)
    n = len(next(iter(lists.values())))
    return [{name: values[i] for name, values in lists.items()} for i in range(n)]


# --- writing and reading -------------------------------------------------------------


@dataclass
class Written:
    """One file written from one kind of input, and its expected content."""

    path: Path
    expected: list[dict[str, Any]]
    types: dict[str, str]


def write_awkward(path: Path) -> Written:
    """Awkward Array of records, written inside a ``with`` block."""
    first, more = nano_awkward(1, N_FIRST), nano_awkward(2, N_MORE)
    with rntuple.recreate(path, cluster_size=CLUSTER_SIZE) as f:
        f[NAME] = first
        f[NAME].extend(more)
        assert f[NAME].num_entries == N_FIRST + N_MORE
    return Written(path, ak.to_list(first) + ak.to_list(more), AWKWARD_TYPES)


def write_pandas(path: Path) -> Written:
    """pandas DataFrame with NaN in its float columns (they stay NaN, not null)."""
    first, more = flat_columns(3, N_FIRST), flat_columns(4, N_MORE)
    f = rntuple.recreate(path, cluster_size=CLUSTER_SIZE)
    f.write(NAME, pd.DataFrame(first))
    f[NAME].extend(pd.DataFrame(more))
    f.close()
    return Written(path, rows(first) + rows(more), FLAT_TYPES)


def _write_then_extend(
    path: Path,
    first: Any,
    more: Any,
    entries: Callable[[Any], list[dict[str, Any]]],
    types: dict[str, str],
    extension: Callable[[Any], Any] = lambda more: more,
) -> Written:
    """``first`` written in a ``with`` block, then ``extension(more)`` appended;
    ``entries`` gives the expected entries of each."""
    with rntuple.recreate(path, cluster_size=CLUSTER_SIZE) as f:
        f[NAME] = first
        f[NAME].extend(extension(more))
    return Written(path, entries(first) + entries(more), types)


def write_arrow(path: Path) -> Written:
    """pyarrow Table; the extension is a RecordBatch."""
    first, more = arrow_table(5, N_FIRST), arrow_table(6, N_MORE)
    return _write_then_extend(
        path, first, more, pa.Table.to_pylist, ARROW_TYPES, extension=lambda t: t.to_batches()[0]
    )


def write_polars(path: Path) -> Written:
    """Polars DataFrame (strings and lists become large_string and large_list)."""
    first, more = polars_frame(7, N_FIRST), polars_frame(8, N_MORE)
    return _write_then_extend(path, first, more, lambda frame: frame.to_dicts(), POLARS_TYPES)


def write_numpy(path: Path) -> Written:
    """dict of NumPy arrays, including 2-D and 3-D fixed-size arrays."""
    first, more = numpy_dict(9, N_FIRST), numpy_dict(10, N_MORE)
    return _write_then_extend(path, first, more, rows, NUMPY_TYPES)


WRITERS: dict[str, Callable[[Path], Written]] = {
    "awkward": write_awkward,
    "pandas": write_pandas,
    "pyarrow": write_arrow,
    "polars": write_polars,
    "numpy": write_numpy,
}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Written]:
    """Every input kind written once per module."""
    outdir = tmp_path_factory.mktemp("python_write")
    return {kind: write(outdir / f"{kind}.root") for kind, write in WRITERS.items()}


def written_types(path: Path, data: Any) -> dict[str, str]:
    """Writes ``data`` as the RNTuple ``NAME`` of ``path``; the C++ types ROOT reports
    for its top-level fields (:func:`root_types`)."""
    with rntuple.recreate(path) as f:
        f[NAME] = data
    return root_types(path)


def root_types(path: Path) -> dict[str, str]:
    """The C++ type of every top-level field, as ROOT's descriptor reports it."""
    ROOT = rootdump.load_root()
    desc = ROOT.RNTupleReader.Open(NAME, str(path)).GetDescriptor()
    return {str(f.GetFieldName()): str(f.GetTypeName()) for f in desc.GetTopLevelFields()}


@pytest.mark.parametrize("kind", list(WRITERS))
def test_root_reads_input(kind: str, written: dict[str, Written]) -> None:
    """ROOT 6.40 reads every value back; types and clusters are the expected ones."""
    w = written[kind]
    assert root_types(w.path) == w.types
    info = rootgen.describe(w.path, NAME)
    assert info["n_entries"] == N_FIRST + N_MORE
    assert info["n_clusters"] >= 3, info
    assert info["compression_settings"] == [505]
    assert_same(rootdump.dump(w.path, NAME), w.expected, "ROOT")


@pytest.mark.parametrize("kind", list(WRITERS))
def test_uproot_reads_input(kind: str, written: dict[str, Written]) -> None:
    """uproot 5.7 reads every value back."""
    w = written[kind]
    with uproot.open(w.path) as f:
        arrays = f[NAME].arrays()
    assert_same(ak.to_list(arrays), w.expected, "uproot")


@pytest.mark.parametrize("kind", list(WRITERS))
def test_rntuple_reads_input(kind: str, written: dict[str, Written]) -> None:
    """Our own reader gives back the input; its clusters agree with ROOT's."""
    w = written[kind]
    with rntuple.open(w.path) as f:
        nt = f[NAME]
        assert nt.num_entries == N_FIRST + N_MORE
        ranges = rootgen.describe(w.path, NAME)["cluster_entry_ranges"]
        assert [(r.start, r.stop) for r in nt.clusters] == [tuple(r) for r in ranges]
        assert_same(ak.to_list(nt.arrays()), w.expected, "rntuple")


# --- options -------------------------------------------------------------------------


def small_input(n: int = 4000) -> dict[str, Any]:
    """Compressible data for the option tests: a float64, a jagged and a string column."""
    rng = np.random.default_rng(11)
    return {
        "x": np.round(rng.normal(0, 1, n), 2),
        "Jet_pt": jagged(rng, n, "float32"),
        "label": ak.Array([WORDS[i % 3] for i in range(n)]),
    }


@pytest.mark.parametrize(
    ("compression", "setting"),
    [("zstd:5", 505), ("lz4", 405), ("zlib:1", 101), ("lzma", 205), ("none", 0), (505, 505), ("lzma:9", 209)],
)
def test_compression(compression: str | int, setting: int, tmp_path: Path) -> None:
    """ROOT reads the file and its descriptor reports the compression asked for."""
    data = small_input()
    path = tmp_path / "c.root"
    with rntuple.recreate(path, compression=compression) as f:
        f[NAME] = data
    info = rootgen.describe(path, NAME)
    assert info["compression_settings"] == [setting]
    assert_same(rootdump.dump(path, NAME), rows(data), "ROOT")
    with rntuple.open(path) as f:
        nt = f[NAME]
        if setting == 0:
            assert nt.compressed_bytes == nt.uncompressed_bytes
        else:
            assert nt.compressed_bytes < 0.8 * nt.uncompressed_bytes, (
                nt.compressed_bytes,
                nt.uncompressed_bytes,
            )


def test_compression_sizes_differ(tmp_path: Path) -> None:
    """Uncompressed files are the biggest; lzma:9 beats lz4 on this data."""
    data = small_input(20000)
    sizes = {}
    for compression in ("none", "lz4:4", "zstd:5", "lzma:9"):
        path = tmp_path / f"{compression.replace(':', '_')}.root"
        with rntuple.recreate(path, compression=compression) as f:
            f[NAME] = data
        sizes[compression] = path.stat().st_size
    assert sizes["none"] > sizes["lz4:4"] > sizes["lzma:9"], sizes
    assert sizes["none"] > sizes["zstd:5"], sizes


def test_types_override(tmp_path: Path) -> None:
    """``types`` makes a float64 column ``float`` (values rounded to float32) and an
    int64 column ``std::int16_t``."""
    rng = np.random.default_rng(12)
    x = rng.normal(0, 1, 1000)
    n = rng.integers(-100, 100, 1000)
    path = tmp_path / "t.root"
    with rntuple.recreate(path) as f:
        f.write(NAME, {"x": x, "n": n, "y": x}, types={"x": "float", "n": "std::int16_t"})
    assert root_types(path) == {"x": "float", "n": "std::int16_t", "y": "double"}
    expected = rows({"x": x.astype("f4"), "n": n, "y": x})
    assert_read_by_root_and_uproot(path, expected)


def test_page_and_cluster_sizes(tmp_path: Path) -> None:
    """A smaller page size gives more pages and a smaller cluster size more clusters."""
    data = small_input(20000)
    layouts = {}
    for label, options in {
        "default": {},
        "pages": {"page_size": "4 KiB"},
        "clusters": {"cluster_size": 20_000},
    }.items():
        path = tmp_path / f"{label}.root"
        with rntuple.recreate(path, **options) as f:
            f[NAME] = data
        info = rootgen.describe(path, NAME)
        with rntuple.open(path) as f:
            clusters = f[NAME].clusters
        assert len(clusters) == info["n_clusters"]
        assert_same(rootdump.dump(path, NAME), rows(data), f"ROOT ({label})")
        layouts[label] = info
    assert layouts["default"]["n_clusters"] == 1
    assert layouts["pages"]["n_clusters"] == 1
    assert layouts["pages"]["n_pages"] > 4 * layouts["default"]["n_pages"], layouts
    assert layouts["clusters"]["n_clusters"] >= 4, layouts["clusters"]


def test_page_checksums_off(tmp_path: Path) -> None:
    """``page_checksums=False`` writes pages without checksums, which ROOT reads."""
    data = small_input(500)
    path = tmp_path / "nochk.root"
    with rntuple.recreate(path, page_checksums=False) as f:
        f[NAME] = data
    info = rootgen.describe(path, NAME)
    assert info["pages_with_checksum"] == 0 and info["pages_without_checksum"] > 0
    assert_same(rootdump.dump(path, NAME), rows(data), "ROOT")


def test_two_rntuples_in_one_file(tmp_path: Path) -> None:
    """Two RNTuples filled in turns; both read back by ROOT and uproot."""
    a, b = small_input(300), numpy_dict(13, 200)
    path = tmp_path / "two.root"
    with rntuple.recreate(path, cluster_size="8 kB") as f:
        f["A"] = a
        f["B"] = b
        f["A"].extend(small_input(300))
        assert f.keys() == ["A", "B"]
    assert_same(rootdump.dump(path, "A"), rows(a) * 2, "ROOT A")
    assert_same(rootdump.dump(path, "B"), rows(b), "ROOT B")
    with uproot.open(path) as f:
        assert_same(ak.to_list(f["B"].arrays()), rows(b), "uproot B")


# --- errors --------------------------------------------------------------------------


def test_nulls_in_non_optional_field(tmp_path: Path) -> None:
    """Nulls in a field whose type ``types`` declares non-optional are refused."""
    with rntuple.recreate(tmp_path / "e.root") as f:
        with pytest.raises(rntuple.RNTupleError, match=r"(?i)x.*null"):
            f.write(NAME, pa.table({"x": pa.array([1.0, None, 3.0])}), types={"x": "double"})


def test_nulls_appended_to_plain_field(tmp_path: Path) -> None:
    """A nullable column without nulls became ``double``: appending nulls is refused."""
    with rntuple.recreate(tmp_path / "e.root") as f:
        f[NAME] = pa.table({"x": pa.array([1.0, 2.0])})
        with pytest.raises(rntuple.RNTupleError, match=r"(?i)x.*null"):
            f[NAME].extend(pa.table({"x": pa.array([None, 2.0])}))


def test_columns_of_different_lengths(tmp_path: Path) -> None:
    """A dict whose columns differ in length is refused, naming the column."""
    with rntuple.recreate(tmp_path / "e.root") as f:
        with pytest.raises(rntuple.InvalidArgumentError, match="column 'b' has 3 entries but the columns"):
            f[NAME] = {"a": np.arange(2), "b": np.arange(3)}
        with pytest.raises(ValueError, match="'b' has 1 entries"):
            f[NAME] = {"a": ak.Array([[1], [2]]), "b": ak.Array([[3]])}


def test_extend_missing_column(tmp_path: Path) -> None:
    """``extend()`` without one of the RNTuple's columns names the missing column."""
    with rntuple.recreate(tmp_path / "e.root") as f:
        f[NAME] = {"a": np.arange(3), "b": np.arange(3.0)}
        with pytest.raises(rntuple.RNTupleError, match='no column "b"'):
            f[NAME].extend({"a": np.arange(2)})
        assert f[NAME].num_entries == 3


def test_unknown_compression(tmp_path: Path) -> None:
    """An unknown algorithm or level is refused with the choices."""
    with pytest.raises(rntuple.InvalidArgumentError, match=r'unknown algorithm "brotli" \(zstd, lz4'):
        rntuple.recreate(tmp_path / "e.root", compression="brotli")
    with pytest.raises(rntuple.InvalidArgumentError, match=r"level 12 is not in 1\.\.9"):
        rntuple.recreate(tmp_path / "e.root", compression="zstd:12")


def test_write_after_close(tmp_path: Path) -> None:
    """Writing, extending or reading sizes after ``close`` fails; closing again does not."""
    f = rntuple.recreate(tmp_path / "e.root")
    f[NAME] = {"a": np.arange(3)}
    nt = f[NAME]
    f.close()
    f.close()
    with pytest.raises(rntuple.InvalidArgumentError, match="is closed"):
        f["Other"] = {"a": np.arange(3)}
    with pytest.raises(rntuple.InvalidArgumentError, match="is closed"):
        nt.extend({"a": np.arange(3)})
    with rntuple.open(tmp_path / "e.root") as r:
        assert r[NAME].arrays()["a"].tolist() == [0, 1, 2]


def test_bad_names_and_inputs(tmp_path: Path) -> None:
    """Duplicate RNTuple names, unknown ``types`` keys, unknown C++ types, non-record
    Awkward Arrays and unknown RNTuples are refused with messages saying which."""
    with rntuple.recreate(tmp_path / "e.root") as f:
        f[NAME] = {"a": np.arange(3)}
        with pytest.raises(rntuple.InvalidArgumentError, match='already has an RNTuple named "Events"'):
            f[NAME] = {"a": np.arange(3)}
        with pytest.raises(rntuple.InvalidArgumentError, match='types names field "zz"'):
            f.write("T2", {"a": np.arange(3)}, types={"zz": "float"})
        with pytest.raises(rntuple.RNTupleError, match='field "a"'):
            f.write("T3", {"a": np.arange(3)}, types={"a": "NoSuchClass"})
        with pytest.raises(rntuple.InvalidArgumentError, match="array of records"):
            f["T4"] = ak.Array([1, 2, 3])
        with pytest.raises(KeyError, match="no RNTuple 'T5'"):
            f["T5"].extend({"a": np.arange(3)})
        with pytest.raises(rntuple.InvalidArgumentError, match="cannot write a list"):
            f["T6"] = [1, 2, 3]


def test_arrow_columns_in_dict(tmp_path: Path) -> None:
    """pyarrow arrays in a dict are optional only where they hold nulls, nested too."""
    data = {
        "plain": pa.array([[1.5], [], [2.5, 3.5]]),
        "items_opt": pa.array([[1.5, None], [], [2.5]]),
        "rec": pa.array([{"a": 1, "b": [1.0]}, {"a": 2, "b": []}, {"a": 3, "b": [0.5, 0.25]}]),
    }
    path = tmp_path / "d.root"
    assert written_types(path, data) == {
        "plain": "std::vector<double>",
        "items_opt": "std::vector<std::optional<double>>",
        "rec": "",
    }
    assert_read_by_root_and_uproot(path, rows(data))


def test_arrow_nulls_only_in_a_later_chunk(tmp_path: Path) -> None:
    """A column whose nulls appear only in a later chunk of a Table is still optional."""
    first = pa.table({"x": pa.array([1.0, 2.0]), "n": pa.array([1, 2])})
    second = pa.table({"x": pa.array([None, 4.0]), "n": pa.array([3, 4])})
    table = pa.concat_tables([first, second])
    assert table.column("x").num_chunks == 2
    path = tmp_path / "chunks.root"
    assert written_types(path, table) == {"x": "std::optional<double>", "n": "std::int64_t"}
    expected = table.to_pylist()
    assert_read_by_root_and_uproot(path, expected)


def test_extend_with_other_input_kinds(tmp_path: Path) -> None:
    """An RNTuple created from one kind of input is extended with others, optional
    fields with or without nulls; ROOT and uproot read every entry."""
    created = pa.table({"x": pa.array([1.0, None]), "n": pa.array([1, 2], pa.int32())})
    more_pandas = pd.DataFrame({"x": np.array([3.0, np.nan]), "n": np.array([3, 4], "i4")})
    more_polars = pl.DataFrame({"x": [5.0, None], "n": pl.Series([5, 6], dtype=pl.Int32)})
    more_awkward = ak.Array({"x": ak.Array([7.0, None]), "n": np.array([7, 8], "i4")})
    more_dict = {"x": np.array([9.0]), "n": np.array([9], "i4")}
    path = tmp_path / "mixed.root"
    with rntuple.recreate(path) as f:
        f[NAME] = created
        for more in (more_pandas, more_polars, more_awkward, more_dict):
            f[NAME].extend(more)
        assert f[NAME].num_entries == 9
    xs = [1.0, None, 3.0, math.nan, 5.0, None, 7.0, None, 9.0]
    expected = [{"x": x, "n": i + 1} for i, x in enumerate(xs)]
    assert root_types(path) == {"x": "std::optional<double>", "n": "std::int32_t"}
    assert_read_by_root_and_uproot(path, expected)
    with rntuple.open(path) as f:
        assert_same(ak.to_list(f[NAME].arrays()), expected, "rntuple")


def test_pandas_masked_dtypes(tmp_path: Path) -> None:
    """pandas' nullable dtypes: pd.NA becomes a missing optional value, NaN in a NumPy
    float column stays NaN, and masked columns without NA are plain types."""
    df = pd.DataFrame(
        {
            "n": pd.array([1, None, -3], dtype="Int64"),
            "b": pd.array([True, None, False], dtype="boolean"),
            "k": pd.array([1, 2, 3], dtype="UInt16"),
            "s": pd.array(["x", None, "z"], dtype="string"),
            "f": np.array([0.5, np.nan, -0.0]),
        }
    )
    path = tmp_path / "masked.root"
    assert written_types(path, df) == {
        "n": "std::optional<std::int64_t>",
        "b": "std::optional<bool>",
        "k": "std::uint16_t",
        "s": "std::optional<std::string>",
        "f": "double",
    }
    expected = [
        {"n": 1, "b": True, "k": 1, "s": "x", "f": 0.5},
        {"n": None, "b": None, "k": 2, "s": None, "f": math.nan},
        {"n": -3, "b": False, "k": 3, "s": "z", "f": -0.0},
    ]
    assert_read_by_root_and_uproot(path, expected)


def test_refused_extend_leaves_rntuple_intact(tmp_path: Path) -> None:
    """After an ``extend()`` refused for nulls in a plain field, later entries are intact."""
    path = tmp_path / "refused.root"
    with rntuple.recreate(path) as f:
        f[NAME] = pa.table({"a": pa.array([1, 2]), "x": pa.array([1.0, 2.0])})
        with pytest.raises(rntuple.InvalidArgumentError, match=r'field "x" of type double holds 1 missing'):
            f[NAME].extend(pa.table({"a": pa.array([3, 4]), "x": pa.array([None, 4.0])}))
        assert f[NAME].num_entries == 2
        f[NAME].extend(pa.table({"a": pa.array([5]), "x": pa.array([5.0])}))
    expected = [{"a": 1, "x": 1.0}, {"a": 2, "x": 2.0}, {"a": 5, "x": 5.0}]
    assert_same(rootdump.dump(path, NAME), expected, "ROOT")
