"""The exceptions of :mod:`rntuple`.

Every error raised by the package for bad input, bad arguments or unsupported data is an
:class:`RNTupleError`; failures of the file system or the network are :class:`OSError`
(:class:`FileNotFoundError` for a missing file). Messages say what went wrong and where
(file, RNTuple, field, cluster, page, byte offset).
"""

from __future__ import annotations


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


class RemoteError(RNTupleError, OSError):
    """A remote source (HTTP, XRootD, S3) failed after its retries, or the object changed
    while being read. The message names the URL without credentials."""


__all__ = [
    "ChecksumError",
    "FormatError",
    "InvalidArgumentError",
    "NotFoundError",
    "RNTupleError",
    "RemoteError",
    "UnsupportedError",
]
