"""uproot's reading arguments: argument checks, name and type filters, expressions
with aliases and cuts, the grouping of the results (``how=``) and the NumPy form of
``library="np"``.

Expressions are Python expressions over field paths, evaluated on Awkward Arrays with
NumPy's functions as uproot evaluates them for TTrees: ``"Jet_pt * 2"``,
``"sqrt(MET_pt)"``, ``"Jet.pt"`` (a dotted path is one name), ``get("odd name")``.
"""

from __future__ import annotations

import ast
import fnmatch
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import awkward as ak
import numpy as np

from .errors import InvalidArgumentError

NameFilter = str | Callable[[str], bool] | Iterable[str | Callable[[str], bool]] | None

#: Canonical library names and the spellings accepted for each (uproot's included).
LIBRARIES: dict[str, str] = {
    "ak": "ak",
    "awkward": "ak",
    "np": "np",
    "numpy": "np",
    "pd": "pd",
    "pandas": "pd",
    "pl": "pl",
    "polars": "pl",
    "arrow": "arrow",
    "pa": "arrow",
    "pyarrow": "arrow",
}

_GLOB_CHARS = "*?["
_REGEX_FILTER = re.compile(r"^/(.*)/([iLmsux]*)$")
_REGEX_FLAGS = {"i": re.I, "L": re.L, "m": re.M, "s": re.S, "u": re.U, "x": re.X}

# -- argument checks ------------------------------------------------------------------


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def check_entry(name: str, value: Any) -> int | None:
    """``value`` as an entry number (``None`` kept): integers only, not Booleans."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise InvalidArgumentError(f"{name} must be an integer or None, not {_describe(value)}")
    return int(value)


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a Boolean option: ``True`` or ``False`` only (not 1, not "yes")."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be True or False, not {value!r}")
    return bool(value)


def check_library(library: Any) -> str:
    """The canonical name (``ak``, ``np``, ``pd``, ``pl``, ``arrow``) of ``library``."""
    if isinstance(library, str) and library.lower() in LIBRARIES:
        return LIBRARIES[library.lower()]
    raise InvalidArgumentError(
        f"library must be one of 'ak', 'np', 'pd', 'pl' or 'arrow', not {_describe(library)}"
    )


def check_how(how: Any, library: str) -> Any:
    """``how`` if it is valid for ``library``: ``None``, ``dict``, ``tuple``, ``list``
    (the types themselves, as uproot), or ``"zip"`` for ``library="ak"``."""
    if how is None or how is dict or how is tuple or how is list:
        return how
    if how == "zip" and library == "ak":
        return how
    allowed = "None, dict, tuple, list" + (" or 'zip'" if library == "ak" else "")
    raise InvalidArgumentError(f"how must be {allowed} for library={library!r}, not {_describe(how)}")


def _check_seconds(name: str, value: Any) -> float:
    """``value`` as a timeout in seconds: a number, more than 0 and at most a day."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgumentError(f"{name} must be a number of seconds or None, not {_describe(value)}")
    seconds = float(value)
    if not 0 < seconds <= 86400:
        raise InvalidArgumentError(f"{name} must be more than 0 and at most 86400 seconds, not {value!r}")
    return seconds


def check_network(
    timeout: Any = None,
    connect_timeout: Any = None,
    retries: Any = None,
    speed_limit: Any = None,
    speed_time: Any = None,
    bunch_bytes: Any = None,
    read_ahead_bytes: Any = None,
) -> dict[str, float]:
    """The network options of a remote file as the core takes them. ``timeout``
    (seconds) is the longest wait for the first byte of an answer and the longest stall
    within one (the first-byte and idle timeouts), ``connect_timeout`` (seconds) the
    longest a new connection may take to set up, ``retries`` how often a request that
    failed for a reason that may pass is tried again; ``speed_limit`` (bytes a second, 0
    for none) and ``speed_time`` (seconds) the low-speed limit: an answer that brings
    fewer than ``speed_limit * speed_time`` bytes in any ``speed_time`` window is given
    up, however it keeps moving. ``None`` leaves a setting to the environment
    (``RNTUPLE_FIRST_BYTE_TIMEOUT``, ``RNTUPLE_IDLE_TIMEOUT``,
    ``RNTUPLE_CONNECT_TIMEOUT``, ``RNTUPLE_RETRIES``, ``RNTUPLE_SPEED_LIMIT``,
    ``RNTUPLE_SPEED_TIME``), else the default (30 s, 30 s, 10 s, 3, 1024, 10 s).
    ``bunch_bytes`` (the page bytes a planned read decodes together and fetches ahead
    as a unit) and ``read_ahead_bytes`` (the most it fetches ahead), bytes more than 0:
    ``None`` leaves them to ``RNTUPLE_BUNCH_BYTES`` and ``RNTUPLE_READ_AHEAD_BYTES``,
    else the defaults (the source's, 32 MiB remote; 512 MiB)."""
    options: dict[str, float] = {}
    if timeout is not None:
        options["first_byte_timeout"] = options["idle_timeout"] = _check_seconds("timeout", timeout)
    if connect_timeout is not None:
        options["connect_timeout"] = _check_seconds("connect_timeout", connect_timeout)
    if speed_time is not None:
        options["speed_time"] = _check_seconds("speed_time", speed_time)
    if speed_limit is not None:
        options["speed_limit"] = _check_count("speed_limit", speed_limit, "bytes a second (0 for no limit)")
    if retries is not None:
        options["retries"] = _check_count("retries", retries, "retries (0 or more)")
    for name, value in (("bunch_bytes", bunch_bytes), ("read_ahead_bytes", read_ahead_bytes)):
        if value is not None:
            options[name] = _check_count(name, value, "bytes, more than 0")
            if options[name] == 0:
                raise InvalidArgumentError(f"{name} must be more than 0 bytes, not {value!r}")
    return options


def _check_count(name: str, value: Any, of: str) -> int:
    """``value`` as a whole number of ``of``, 0 or more, within 32 bits."""
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, (int, np.integer))
        or not 0 <= value <= 0xFFFFFFFF
    ):
        raise InvalidArgumentError(f"{name} must be a whole number of {of} or None, not {_describe(value)}")
    return int(value)


def check_step_size(step_size: Any) -> int | str:
    """``step_size`` if it is a positive number of entries or a size string."""
    if isinstance(step_size, str):
        return step_size
    if isinstance(step_size, (bool, np.bool_)) or not isinstance(step_size, (int, np.integer)):
        raise InvalidArgumentError(
            "step_size must be a number of entries (an integer) or a memory size such as "
            f"'100 MB', not {_describe(step_size)}"
        )
    if step_size <= 0:
        raise InvalidArgumentError(f"step_size must be positive, not {step_size!r}")
    return int(step_size)


def check_expressions(expressions: Any) -> list[str] | None:
    """``expressions`` as a list of strings (``None`` kept)."""
    if expressions is None:
        return None
    if isinstance(expressions, str):
        return [expressions]
    if isinstance(expressions, (list, tuple)) and all(isinstance(e, str) for e in expressions):
        return list(expressions)
    raise InvalidArgumentError(
        f"expressions must be a string, a list of strings or None, not {_describe(expressions)}"
    )


def check_cut(cut: Any) -> str | None:
    """``cut`` if it is an expression string or ``None``."""
    if cut is None or isinstance(cut, str):
        return cut
    raise InvalidArgumentError(f"cut must be an expression string or None, not {_describe(cut)}")


def check_aliases(aliases: Any) -> dict[str, str]:
    """``aliases`` as a dict of names to expression strings (``None`` is empty)."""
    if aliases is None:
        return {}
    if isinstance(aliases, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        return dict(aliases)
    raise InvalidArgumentError(
        f"aliases must be a dict of names to expression strings, not {_describe(aliases)}"
    )


def make_filter(argument: str, value: Any) -> Callable[[str], bool] | None:
    """A predicate from uproot's filter forms: ``None`` (no filter), a glob pattern, a
    regular expression ``"/pattern/flags"``, a name, a function of the string, or an
    iterable of these (any matches)."""
    if value is None:
        return None
    if callable(value):
        return value
    if isinstance(value, str):
        regex = _REGEX_FILTER.match(value)
        if regex is not None:
            flags = 0
            for letter in regex.group(2):
                flags |= _REGEX_FLAGS[letter]
            try:
                compiled = re.compile(regex.group(1), flags)
            except re.error as err:
                raise InvalidArgumentError(f"{argument}: bad regular expression {value!r}: {err}") from None
            return lambda name: compiled.match(name) is not None
        if any(c in value for c in _GLOB_CHARS):
            return lambda name: fnmatch.fnmatchcase(name, value)
        return lambda name: name == value
    if isinstance(value, Iterable) and not isinstance(value, (bytes, Mapping)):
        parts = list(value)
        if all(isinstance(p, str) or callable(p) for p in parts):
            predicates = [make_filter(argument, p) for p in parts]
            return lambda name: any(p(name) for p in predicates if p is not None)
    raise InvalidArgumentError(
        f"{argument} must be None, a glob or name, a regular expression '/pattern/flags', "
        f"a function of the name, or a list of these, not {_describe(value)}"
    )


# -- expressions ----------------------------------------------------------------------


def _elementwise(function: Callable[[float], float]) -> Callable[[Any], Any]:
    """A NumPy/Awkward-aware form of a scalar function of the ``math`` module."""
    vectorized = np.vectorize(function, otypes=[np.float64])

    def apply(values: Any) -> Any:
        if isinstance(values, ak.Array):

            def leaf(layout: Any, **_: Any) -> Any:
                if layout.is_numpy:
                    return ak.contents.NumpyArray(vectorized(layout.data))
                return None

            return ak.transform(leaf, values)
        return vectorized(values)

    return apply


#: The functions an expression may call (the names uproot's Python language knows).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": np.absolute,
    "absolute": np.absolute,
    "acos": np.arccos,
    "arccos": np.arccos,
    "acosh": np.arccosh,
    "arccosh": np.arccosh,
    "asin": np.arcsin,
    "arcsin": np.arcsin,
    "asinh": np.arcsinh,
    "arcsinh": np.arcsinh,
    "atan": np.arctan,
    "arctan": np.arctan,
    "atan2": np.arctan2,
    "arctan2": np.arctan2,
    "atanh": np.arctanh,
    "arctanh": np.arctanh,
    "cbrt": np.cbrt,
    "ceil": np.ceil,
    "conj": np.conjugate,
    "conjugate": np.conjugate,
    "copysign": np.copysign,
    "cos": np.cos,
    "cosh": np.cosh,
    "erf": _elementwise(math.erf),
    "erfc": _elementwise(math.erfc),
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "fabs": np.fabs,
    "factorial": _elementwise(lambda x: float(math.factorial(round(x)))),
    "floor": np.floor,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "gamma": _elementwise(math.gamma),
    "tgamma": _elementwise(math.gamma),
    "lgamma": _elementwise(math.lgamma),
    "hypot": np.hypot,
    "imag": np.imag,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
    "isnan": np.isnan,
    "log": np.log,
    "log10": np.log10,
    "log1p": np.log1p,
    "log2": np.log2,
    "logical_and": np.logical_and,
    "logical_or": np.logical_or,
    "neg": np.negative,
    "nextafter": np.nextafter,
    "real": np.real,
    "rint": np.rint,
    "round": np.round,
    "signbit": np.signbit,
    "sin": np.sin,
    "sinh": np.sinh,
    "sqrt": np.sqrt,
    "tan": np.tan,
    "tanh": np.tanh,
    "trunc": np.trunc,
    "where": np.where,
}

GETTER = "get"


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` of an attribute chain of names, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def parse_expression(argument: str, text: str) -> ast.expr:
    """The AST of one expression; a syntax error names the argument."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise InvalidArgumentError(f"{argument}: {text!r} is not a valid expression: {err.msg}") from None
    return tree.body


class _Rewriter(ast.NodeTransformer):
    """Rewrites field and alias names into ``__value__("path")`` and known functions
    into ``__function__["name"]``; collects the names used."""

    def __init__(self, is_name: Callable[[str], bool], unknown: Callable[[str], Exception]) -> None:
        self.is_name = is_name
        self.unknown = unknown
        self.used: list[str] = []

    def _value(self, name: str, like: ast.AST) -> ast.AST:
        if name not in self.used:
            self.used.append(name)
        call = ast.Call(ast.Name("__value__", ast.Load()), [ast.Constant(name)], [])
        return ast.copy_location(call, like)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if isinstance(node.func, ast.Name) and node.func.id == GETTER:
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant):
                raise InvalidArgumentError(f"{GETTER}() takes one constant string, the field's name")
            name = node.args[0].value
            if not isinstance(name, str) or not self.is_name(name):
                raise self.unknown(str(name))
            return self._value(name, node)
        if isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            # A name in call position is the function, even if a field shares it.
            func = ast.Subscript(ast.Name("__function__", ast.Load()), ast.Constant(node.func.id), ast.Load())
            node.func = ast.copy_location(func, node.func)
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            return node
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        dotted = _dotted(node)
        if dotted is None:
            return self.generic_visit(node)
        if self.is_name(dotted):
            return self._value(dotted, node)
        raise self.unknown(dotted)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.is_name(node.id):
            return self._value(node.id, node)
        if node.id in FUNCTIONS:
            func = ast.Subscript(ast.Name("__function__", ast.Load()), ast.Constant(node.id), ast.Load())
            return ast.copy_location(func, node)
        raise self.unknown(node.id)


@dataclass
class Compiled:
    """One expression rewritten for evaluation, with the field and alias names it uses."""

    text: str
    code: Any
    used: list[str] = field(default_factory=list)


def compile_expression(
    argument: str,
    text: str,
    is_name: Callable[[str], bool],
    unknown: Callable[[str], Exception],
) -> Compiled:
    """Compiles ``text``; ``is_name`` says which names are fields or aliases, ``unknown``
    builds the error for any other name."""
    body = parse_expression(argument, text)
    rewriter = _Rewriter(is_name, unknown)
    rewritten = rewriter.visit(body)
    tree = ast.fix_missing_locations(ast.Expression(rewritten))
    return Compiled(text, compile(tree, f"<{argument}>", "eval"), rewriter.used)


class Evaluator:
    """Evaluates compiled expressions over field values, aliases computed once each."""

    def __init__(self, values: dict[str, Any], aliases: dict[str, Compiled]) -> None:
        self.values = values
        self.aliases = aliases
        self._computing: list[str] = []

    def value(self, name: str) -> Any:
        """The value of a field path or alias (aliases evaluated once, in turn)."""
        if name in self.aliases and name not in self.values:
            if name in self._computing:
                cycle = " -> ".join([*self._computing, name])
                raise InvalidArgumentError(f"aliases refer to each other in a cycle: {cycle}")
            self._computing.append(name)
            try:
                self.values[name] = self.evaluate(self.aliases[name])
            finally:
                self._computing.pop()
        return self.values[name]

    def evaluate(self, compiled: Compiled) -> Any:
        """The value of one expression."""
        scope = {"__builtins__": {}, "__value__": self.value, "__function__": FUNCTIONS}
        with np.errstate(all="ignore"):
            return eval(compiled.code, scope)  # the user's own expression, as uproot's


def is_glob(text: str) -> bool:
    """Whether ``text`` holds glob characters."""
    return any(c in text for c in _GLOB_CHARS)


# -- grouping ---------------------------------------------------------------------------


def _is_jagged(array: Any) -> bool:
    return (
        isinstance(array, ak.Array)
        and array.ndim > 1
        and isinstance(ak.type(array).content, ak.types.ListType)
    )


def zip_jagged(columns: dict[str, ak.Array]) -> ak.Array:
    """``how="zip"``: jagged columns with the same counts are zipped into records of
    lists named by their common prefix up to ``_``/``.``/``/`` (``Jet_pt``, ``Jet_eta``
    -> ``Jet: [{pt, eta}]``), or ``jagged<N>`` when they share no prefix or the prefix
    is taken; the other columns stay as they are."""
    flat: dict[str, ak.Array] = {}
    groups: list[tuple[np.ndarray, list[str]]] = []
    for name, array in columns.items():
        if not _is_jagged(array):
            flat[name] = array
            continue
        counts = ak.to_numpy(ak.num(array, axis=1))
        for group_counts, names in groups:
            if np.array_equal(group_counts, counts):
                names.append(name)
                break
        else:
            groups.append((counts, [name]))
    out: dict[str, ak.Array] = dict(flat)
    for number, (_, names) in enumerate(groups):
        prefix = _common_prefix(names)
        common = prefix.strip("_./")
        if not prefix or common in flat:
            out[f"jagged{number}"] = ak.zip({n: columns[n] for n in names})
        else:
            out[common] = ak.zip({n[len(prefix) :].strip("_./"): columns[n] for n in names})
    return ak.Array(out) if out else ak.Array(ak.contents.RecordArray([], [], length=0))


def _common_prefix(names: Sequence[str]) -> str:
    """The longest prefix of all ``names`` ending with a separator (``_``, ``.``, ``/``)."""
    first = names[0]
    end = min(len(n) for n in names)
    while end > 0:
        candidate = first[:end]
        if candidate[-1] in "_./" and all(n.startswith(candidate) for n in names):
            return candidate
        end -= 1
    return ""


# -- the NumPy form ----------------------------------------------------------------------


def to_numpy_like_uproot(array: Any) -> Any:
    """One column as uproot 5.7 gives it for ``library="np"``: regular data as an
    ``ndarray`` (options as masked arrays, records as structured arrays, fixed-size
    arrays as more dimensions, strings as ``<U``); jagged data as an object array holding
    one array per entry, or an n-D array when every entry has the same shape."""
    if not isinstance(array, ak.Array):
        return np.asarray(array)
    layout = array.layout
    # (an optional list is never one block: NumPy would keep no None of an entry)
    if not (layout.is_option and layout.content.is_list):
        try:
            return ak.to_numpy(array)
        except (TypeError, ValueError):
            pass
    if isinstance(layout, ak.contents.RecordArray):
        names = array.fields
        parts = [to_numpy_like_uproot(array[name]) for name in names]
        dtypes = [p.dtype if p.ndim == 1 else np.dtype(object) for p in parts]
        out = np.empty(len(array), dtype=list(zip(names, dtypes, strict=True)))
        for name, part in zip(names, parts, strict=True):
            if part.ndim == 1:
                out[name] = part
            else:
                column = np.empty(len(part), dtype=object)
                column[:] = list(part)
                out[name] = column
        return out
    if len(array) == 0:
        return np.asarray(array)
    list_layout = layout
    if list_layout.is_list and not list_layout.is_option:
        counts = ak.to_numpy(ak.num(array, axis=1))
        content = to_numpy_like_uproot(ak.flatten(array, axis=1))
        pieces = np.split(content, np.cumsum(counts)[:-1])
        # uproot converts each entry on its own: an empty entry has no inner extent
        # (shape (0, 0) of the leaf type), and an entry whose items have one shape is
        # one n-D array even where other entries' items differ.
        pieces = [_per_entry(piece, array, i) for i, piece in enumerate(pieces)]
    else:
        pieces = [_item_to_numpy(item) for item in array]
    return _stack(pieces)


def _per_entry(piece: np.ndarray, array: ak.Array, entry: int) -> np.ndarray:
    if len(piece) == 0 and (piece.ndim > 1 or piece.dtype == object):
        try:
            return ak.to_numpy(array[entry])
        except (TypeError, ValueError):
            return piece
    if piece.dtype == object and piece.ndim == 1:
        return _stack(list(piece))
    return piece


def _item_to_numpy(item: Any) -> Any:
    if isinstance(item, str) or item is None:
        return item if isinstance(item, str) else np.asarray(item)
    if isinstance(item, ak.Array):
        return to_numpy_like_uproot(item)
    if isinstance(item, ak.Record):
        return to_numpy_like_uproot(ak.Array([item]))[0]
    return np.asarray(item)


def _stack(pieces: list[Any]) -> np.ndarray:
    shapes = {p.shape if isinstance(p, np.ndarray) else (1,) for p in pieces}
    if len(shapes) == 1:
        if any(isinstance(p, np.ma.MaskedArray) for p in pieces):
            return np.ma.stack(pieces)  # (np.array would drop the masks)
        return np.array(pieces)
    out = np.empty(len(pieces), dtype=object)
    out[:] = pieces
    return out
