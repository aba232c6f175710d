"""The exceptions of :mod:`rntuple`.

Every error raised by the package for bad input, bad arguments or unsupported data is an
:class:`RNTupleError`; failures of the file system or the network are :class:`OSError`
(:class:`FileNotFoundError` for a missing file). Messages say what went wrong and where
(file, RNTuple, field, cluster, page, byte offset).
"""

from __future__ import annotations

import errno
from typing import Any


class RNTupleError(Exception):
    """Base class of the errors raised by :mod:`rntuple`."""


class FormatError(RNTupleError):
    """The data is not valid RNTuple data: truncated, corrupt, or it fails to decompress."""


class ChecksumError(FormatError):
    """A stored xxHash3 checksum does not match the data (names the envelope or page)."""


class UnsupportedError(RNTupleError):
    """Valid data that this implementation cannot handle (an unknown feature or type)."""


class NotFoundError(RNTupleError, KeyError):
    """No such RNTuple in the file, or no such field in the RNTuple."""

    def __str__(self) -> str:
        # KeyError quotes its message; these messages are sentences.
        return str(self.args[0]) if self.args else ""


class InvalidArgumentError(RNTupleError, ValueError):
    """A bad argument: an entry range outside the RNTuple, an unknown option, data that
    does not fit the declared types."""


class MissingDependencyError(RNTupleError, ImportError):
    """An optional dependency is not installed (pandas, Polars, Dask, coffea,
    matplotlib): the message names it and the command that installs it, such as
    ``pip install 'rntuple[pandas]'``."""


class RemoteError(RNTupleError, OSError):
    """A remote source (HTTP, XRootD, S3) failed after its retries, or the object changed
    while being read. The message names the URL without credentials."""


class OutputExistsError(RNTupleError, FileExistsError):
    """An output file exists and was not to be replaced: pass ``overwrite=True`` to
    replace it (it is replaced only once the new file is complete)."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EEXIST, f"{message}; pass overwrite=True to replace it")
        self.message = message

    def __str__(self) -> str:
        return str(self.args[1])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,))


class ConversionError(RNTupleError):
    """Some conversions of a batch failed (:func:`rntuple.dask.convert_files`): the
    message names every failed input with its error. ``failures`` maps each failed input
    to its exception; ``results`` holds the conversions that succeeded."""

    def __init__(self, failures: dict[str, BaseException], results: list[Any], total: int) -> None:
        lines = "\n".join(f"  {path}: {type(e).__name__}: {e}" for path, e in failures.items())
        super().__init__(f"{len(failures)} of {total} conversions failed:\n{lines}")
        self.failures = failures
        self.results = results

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.failures, self.results, len(self.failures) + len(self.results)))


__all__ = [
    "ChecksumError",
    "ConversionError",
    "FormatError",
    "InvalidArgumentError",
    "MissingDependencyError",
    "NotFoundError",
    "OutputExistsError",
    "RNTupleError",
    "RemoteError",
    "UnsupportedError",
]
