"""The exceptions of :mod:`rntuple`.

Every error raised by the package for bad input, bad arguments or unsupported data is an
:class:`RNTupleError`; failures of the file system or the network are :class:`OSError`
of the subclass Python itself would raise, with its ``errno``: a missing file is a
:class:`FileNotFoundError` (``ENOENT``), a refused one a :class:`PermissionError`
(``EACCES``), a directory an :class:`IsADirectoryError` (``EISDIR``), locally as over
HTTP(S), XRootD and S3. A remote failure is also a :class:`RemoteError` (an
:class:`RNTupleError`): :class:`RemoteFileNotFoundError`, :class:`RemotePermissionError`,
:class:`RemoteIsADirectoryError`, :class:`RemoteTimeoutError`,
:class:`RemoteConnectionRefusedError`, :class:`RemoteConnectionResetError`,
:class:`RemoteConnectionError`, else :class:`RemoteError` itself (a TLS failure, a file
that changed while read, a server error); ``kind`` names the failure and ``filename`` the
URL (without credentials). Messages say what went wrong and where (file or URL, RNTuple,
field, cluster, page, byte offset).
"""

from __future__ import annotations

import errno as _errno
import os
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
    while being read. The message names the URL without credentials.

    Attributes:
        kind: what sort of failure: ``"not_found"``, ``"permission_denied"``,
            ``"is_a_directory"``, ``"timed_out"``, ``"connection_refused"``,
            ``"connection_reset"``, ``"connection"``, ``"tls"`` (the server's certificate
            is not trusted, or the handshake failed), ``"changed"`` (the file changed on
            the server while being read) or ``"other"``.
        errno: the ``errno`` value Python gives that failure (``ENOENT``, ``EACCES``,
            ``EISDIR``, ``ETIMEDOUT``, ``ECONNREFUSED``, ``ECONNRESET``), else ``None``.
        filename: the URL, without credentials.
    """

    kind: str = "other"

    def __str__(self) -> str:
        # The message as given: OSError would format errno, strerror and filename.
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[Any, ...]:
        # OSError pickles (errno, strerror, filename) as the arguments when a filename
        # is set; the message is the argument here, the rest is state.
        state = {**self.__dict__, "errno": self.errno, "strerror": self.strerror, "filename": self.filename}
        return (type(self), self.args, state)


class RemoteFileNotFoundError(RemoteError, FileNotFoundError):
    """No such file, bucket or key on the server: HTTP 404 or 410, XRootD
    ``kXR_NotFound``, S3 ``NoSuchKey`` or ``NoSuchBucket`` (``errno`` ``ENOENT``)."""


class RemotePermissionError(RemoteError, PermissionError):
    """The server refused access: HTTP 401 or 403, XRootD ``kXR_NotAuthorized`` or refused
    credentials, S3 ``AccessDenied``, ``InvalidAccessKeyId``, ``SignatureDoesNotMatch``
    (``errno`` ``EACCES``)."""


class RemoteIsADirectoryError(RemoteError, IsADirectoryError):
    """The URL names a directory (XRootD; ``errno`` ``EISDIR``)."""


class RemoteTimeoutError(RemoteError, TimeoutError):
    """A timeout (``timeout=``, ``connect_timeout=``, ``RNTUPLE_*_TIMEOUT``) or the
    low-speed limit (``speed_limit=``, ``speed_time=``) ran out on the last attempt; the
    message names it (``errno`` ``ETIMEDOUT``)."""


class SlowReadWarning(UserWarning):
    """A remote file is read, but more slowly than it could be, and the message says
    why and what would fix it (a server that ignores byte ranges has the whole file
    downloaded). Given once per server and process."""


class RemoteConnectionError(RemoteError, ConnectionError):
    """The connection could not be set up or broke (the host name does not resolve, the
    network is unreachable), on the last attempt."""


class RemoteConnectionRefusedError(RemoteConnectionError, ConnectionRefusedError):
    """Nothing listens at the server's port, on the last attempt (``errno``
    ``ECONNREFUSED``)."""


class RemoteConnectionResetError(RemoteConnectionError, ConnectionResetError):
    """The server reset or closed the connection before answering in full, on the last
    attempt (``errno`` ``ECONNRESET``)."""


#: The class and errno of each kind of remote failure (the library's ``RemoteKind``).
_REMOTE_KINDS: dict[str, tuple[type[RemoteError], int | None]] = {
    "not_found": (RemoteFileNotFoundError, _errno.ENOENT),
    "permission_denied": (RemotePermissionError, _errno.EACCES),
    "is_a_directory": (RemoteIsADirectoryError, _errno.EISDIR),
    "timed_out": (RemoteTimeoutError, _errno.ETIMEDOUT),
    "connection_refused": (RemoteConnectionRefusedError, _errno.ECONNREFUSED),
    "connection_reset": (RemoteConnectionResetError, _errno.ECONNRESET),
    "connection": (RemoteConnectionError, None),
}

#: The errno of a file system error that carries none, by its Rust ``io::ErrorKind``.
_IO_KIND_ERRNO: dict[str, int] = {
    "NotFound": _errno.ENOENT,
    "PermissionDenied": _errno.EACCES,
    "IsADirectory": _errno.EISDIR,
    "NotADirectory": _errno.ENOTDIR,
    "AlreadyExists": _errno.EEXIST,
    "TimedOut": _errno.ETIMEDOUT,
    "ConnectionRefused": _errno.ECONNREFUSED,
    "ConnectionReset": _errno.ECONNRESET,
    "StorageFull": _errno.ENOSPC,
    "ReadOnlyFilesystem": _errno.EROFS,
}


def _remote_error(kind: str, message: str, url: str | None) -> RemoteError:
    """The exception of a remote failure of ``kind`` (the extension raises it)."""
    cls, code = _REMOTE_KINDS.get(kind, (RemoteError, None))
    error = cls(message)
    error.kind = kind
    error.errno = code
    error.strerror = os.strerror(code) if code is not None else None
    error.filename = url
    return error


def _os_error(code: int | None, io_kind: str, message: str) -> OSError:
    """The :class:`OSError` of a file system failure, of the subclass Python gives its
    ``errno`` (``code``, else the one of ``io_kind``, the Rust ``io::ErrorKind``), with
    that ``errno`` (the extension raises it)."""
    if code is None:
        code = _IO_KIND_ERRNO.get(io_kind)
    if code is None:
        return OSError(message)
    # OSError(errno, ...) is the subclass Python gives that errno.
    cls = type(OSError(code, message))
    error = cls(message)
    error.errno = code
    return error


class OutputExistsError(RNTupleError, FileExistsError):
    """An output file exists and was not to be replaced: pass ``overwrite=True`` to
    replace it (it is replaced only once the new file is complete)."""

    def __init__(self, message: str) -> None:
        super().__init__(_errno.EEXIST, f"{message}; pass overwrite=True to replace it")
        self.message = message

    def __str__(self) -> str:
        return str(self.args[1])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.message,))


class IncompatibleTypeError(RNTupleError, TypeError):
    """A field cannot be read as the type asked for (``types=``): schema evolution's
    rules (ROOT's) refuse it. Raised before anything is read; the message names the field
    and both types."""


class ValueOutOfRangeError(RNTupleError, ValueError):
    """A value does not fit the type its field is read as (``types=``, or the one type of
    many files): out of its range, a ``double`` whose class changes as a ``float``, or an
    integer a real type does not hold exactly (``2**62 + 1`` as a ``double``). The message
    names the file, the field, the entry and the value. ``on_overflow="mask"`` reads such
    values as None instead."""


class PromotionWarning(UserWarning):
    """Files of a chain are read as one type that may not hold every value of some of
    them exactly (``std::int64_t`` and ``float`` files as ``double``, ``std::int64_t``
    and ``std::uint64_t`` files as ``std::int64_t``). Given once per field when the
    schema is unified, naming the field, the files and their types; each value is then
    checked as it is read (:class:`ValueOutOfRangeError`, or None with
    ``on_overflow="mask"``). ``types=`` chooses the type instead."""


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
    "IncompatibleTypeError",
    "InvalidArgumentError",
    "MissingDependencyError",
    "NotFoundError",
    "OutputExistsError",
    "PromotionWarning",
    "RNTupleError",
    "RemoteConnectionError",
    "RemoteConnectionRefusedError",
    "RemoteConnectionResetError",
    "RemoteError",
    "RemoteFileNotFoundError",
    "RemoteIsADirectoryError",
    "RemotePermissionError",
    "RemoteTimeoutError",
    "SlowReadWarning",
    "UnsupportedError",
    "ValueOutOfRangeError",
]
