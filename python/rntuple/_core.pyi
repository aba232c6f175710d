"""Type stubs of the ``rntuple._core`` extension module (the Rust core)."""

from typing import Any

import pyarrow as pa

__version__: str

def cache_stats(dir: str) -> dict[str, int]:
    """What the cache of remote reads in ``dir`` holds and did."""

def default_cache_dir(xdg_cache_home: str | None, home: str | None) -> str | None:
    """The per-user cache directory for these values of ``XDG_CACHE_HOME`` and ``HOME``."""

def is_object_layout(location: str) -> bool:
    """Whether ``location`` names an RNTuple stored as objects (``ntpl+s3+http(s)://``,
    ``ntpl+file://``: ROOT's S3 layout) rather than a file."""

def split_target(target: str) -> tuple[str, str | None]:
    """Splits ``TARGET[:NAME]`` into the file or URL and the RNTuple's name, by the
    command line's rule: the whole spec if it exists locally; in a URL only a colon after
    the start of its path begins a NAME."""

class RootFileHandle:
    """An open ROOT file: lists its RNTuples and opens them (or a dataset of objects,
    ``ntpl+s3+https://...``, ``ntpl+file://...``, holding one RNTuple)."""

    def __init__(
        self,
        path: str,
        network: dict[str, float] | None = None,
        cache: dict[str, str] | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        """Opens the ROOT file at ``path`` (a path or URL; or the DAOS container of a
        ``daos://POOL/CONTAINER`` URI); ``network`` sets some of the options of a remote
        file (``connect_timeout``, ``first_byte_timeout``, ``idle_timeout`` in seconds,
        ``retries``, ``bunch_bytes``, ``read_ahead_bytes``), the others are the
        environment's; ``cache`` the cache of remote reads (``{"dir": ""}``: none;
        ``{"dir": DIR}`` with ``validate`` and ``max_bytes``; ``None``: the
        environment's); ``settings`` the others (``direct_io``, ``huge_pages``,
        ``daos_dir``, ``daos_mapping``)."""
    @property
    def name(self) -> str:
        """The file's name as given when opening."""
    def rntuple_paths(self) -> list[str]:
        """Every RNTuple in the file (also in sub-directories) by path."""
    def open_rntuple(self, path: str | None = None) -> Reader:
        """Opens the RNTuple at ``path`` (or the only one, for ``None``)."""

class Reader:
    """An open RNTuple."""

    @property
    def num_entries(self) -> int:
        """Number of entries."""
    @property
    def path(self) -> str:
        """The RNTuple's path in its file."""
    @property
    def file_name(self) -> str:
        """The file's name."""
    @property
    def warnings(self) -> list[str]:
        """Why fields were skipped."""
    def metrics(self) -> dict[str, int | float]:
        """The I/O and decoding counters so far (see ``RNTuple.metrics``)."""
    def field_names(self) -> list[str]:
        """The readable top-level fields, in schema order."""
    def field_paths(self) -> list[FieldPath]:
        """``(path, C++ type, direct, qualified name)`` for every selectable field path."""
    def schema(self, fields: list[str] | None = None) -> pa.Schema:
        """The Arrow schema of the selected fields."""
    def clusters(self) -> list[tuple[int, int]]:
        """``(first_entry, n_entries)`` of each cluster."""
    def cluster_bytes(self, fields: list[str] | None = None) -> list[int]:
        """Uncompressed bytes of the selected fields in each cluster."""
    def compressed_bytes(self) -> int:
        """Compressed size of all pages."""
    def uncompressed_bytes(self) -> int:
        """Uncompressed size of all pages."""
    def schema_tree(self) -> str:
        """The schema tree as text."""
    def describe(self) -> str:
        """The whole description, as ``rntuple info`` prints it."""
    def metadata(self) -> dict[str, Any]:
        """The anchor, header, footer and page lists as plain dicts and lists."""
    def column_values(self, cluster: int, column: int) -> tuple[str, bytes]:
        """The decoded elements of a column in a cluster as ``(dtype, bytes)``."""
    def inspect(self) -> InspectionHandle:
        """Where the bytes go, from the page lists (GIL released)."""
    def read(self, fields: list[str] | None, start: int, stop: int) -> pa.RecordBatch:
        """Reads entries ``start..stop`` of the selected fields (GIL released)."""
    def stream(self, fields: list[str] | None, ranges: list[tuple[int, int]]) -> pa.RecordBatchReader:
        """A lazy stream of one record batch per entry range."""
    def detached(self) -> Reader:
        """This RNTuple's metadata alone (no file kept open): selects, plans and
        describes reads as this reader does, and reads no page."""

class FieldPath:
    """A selectable field path of an RNTuple."""

    #: The path as users name it (``Jet.pt``).
    path: str
    #: The field's C++ type.
    type_name: str
    #: Whether the path runs through records only (read as a column of its own).
    direct: bool
    #: The qualified name reads take (``Jet._0.pt``).
    qualified: str

class ReadTypesHandle:
    """``types=``, ``on_overflow=`` and ``defaults=`` parsed (see :func:`read_types`)."""

def read_types(
    types: dict[str, Any], on_overflow: str = "raise", defaults: dict[str, Any] | None = None
) -> ReadTypesHandle:
    """Parses ``types=`` (qualified field path -> C++ type name or dict of members),
    ``on_overflow=`` and ``defaults=``."""

class UnifiedField:
    """What :func:`unify_field` finds for a field of several files."""

    #: The type that reads the field of every file alike (None: as on disk).
    read_as: str | dict[str, Any] | None
    #: The files whose values it may not all hold (``field``, ``file``, ``from``, ``to``).
    inexact: list[dict[str, str]]

def unify_field(readers: list[Reader], path: str) -> UnifiedField:
    """The type that reads field ``path`` of every reader alike."""

class InspectionHandle:
    """The storage of an RNTuple (``rntuple inspect``)."""

    def figures(self) -> dict[str, int | float]:
        """The whole-RNTuple figures by name."""
    def table(self, by: str, sort: str | None = None, top: int | None = None) -> dict[str, list[Any]]:
        """The table per ``by`` (``"field"``, ``"column"``, ``"type"``) as column lists,
        sorted by ``sort``, with ``top`` only its first rows and one summing the rest."""
    def page_sizes(self) -> tuple[list[int], list[int]]:
        """Every page's physical column id and compressed size."""
    def histogram(self, columns: list[int] | None, bins: int) -> dict[str, Any]:
        """The pages of ``columns`` (all for ``None``) in ROOT's binning."""
    def type_histograms(self, bins: int) -> list[tuple[str, dict[str, Any]]]:
        """Per column type, its pages over bins common to all types."""
    def summary(self, columns: list[int] | None = None) -> dict[str, int | float]:
        """The page sizes of ``columns`` summarized (min, quantiles, max, mean)."""

class ReaderChain:
    """Readers read one after another, entries numbered globally."""

    def __init__(self, readers: list[Reader], types: list[ReadTypesHandle | None] | None = None) -> None: ...
    @property
    def num_entries(self) -> int: ...
    def describe(self) -> str: ...
    def friend_column(
        self, fields: list[str] | None, matches: Matches, all: bool, name: str
    ) -> pa.RecordBatch: ...

class KeyIndex:
    """A friend's entries by key tuple, from its key columns only (picklable)."""

    def __init__(self, chain: ReaderChain, keys: list[str]) -> None: ...
    @property
    def keys(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def check_unique(self, friend: str) -> None: ...
    def lookup(self, columns: list[pa.Array], duplicates: str, primary: str) -> Matches: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> KeyIndex: ...

class Matches:
    """The friend entries each primary row pairs with."""

    @staticmethod
    def aligned(entries: pa.Array, friend_entries: int) -> Matches: ...
    @property
    def rows(self) -> int: ...
    def entries(self) -> pa.Array: ...
    def offsets(self) -> pa.Array: ...
    def inner(self) -> tuple[pa.Array, Matches]: ...

class WriteOptionsHandle:
    """The write options of every writer, checked once."""

    def __init__(
        self,
        compression: str = "zstd:5",
        cluster_size: int | None = None,
        page_size: int | None = None,
        page_checksums: bool = True,
        checkpoint_every: int | None = 1,
    ) -> None: ...

class FileWriterHandle:
    """A ROOT file being written."""

    def __init__(self, path: str, options: WriteOptionsHandle) -> None: ...
    def create(
        self,
        name: str,
        data: Any,
        types: dict[str, str] | None = None,
    ) -> int:
        """Creates RNTuple ``name`` from an Arrow stream and writes its entries."""
    def extend(self, name: str, data: Any) -> int:
        """Appends the entries of an Arrow stream to RNTuple ``name``."""
    def num_entries(self, name: str) -> int:
        """Entries written so far into RNTuple ``name``."""
    def names(self) -> list[str]:
        """The RNTuples being written, in creation order."""
    def close(self) -> None:
        """Commits every RNTuple and completes the file (renamed over its path)."""
    def abort(self) -> None:
        """Abandons the file: the temporary file is removed, the path left as it was."""

class ObjectWriterHandle:
    """One RNTuple being written as objects (ROOT's S3 layout), with
    :class:`FileWriterHandle`'s methods; the anchor is written on :meth:`close`."""

    def __init__(self, url: str, options: WriteOptionsHandle) -> None: ...
    def create(
        self,
        name: str,
        data: Any,
        types: dict[str, str] | None = None,
    ) -> int:
        """Creates the dataset's RNTuple ``name`` from an Arrow stream (an existing
        dataset at the URL is removed first)."""
    def extend(self, name: str, data: Any) -> int:
        """Appends the entries of an Arrow stream to RNTuple ``name``."""
    def num_entries(self, name: str) -> int:
        """Entries written so far into RNTuple ``name``."""
    def names(self) -> list[str]:
        """The RNTuple being written (none before ``create``)."""
    def close(self) -> None:
        """Commits the RNTuple and writes the anchor, last."""
    def abort(self) -> None:
        """Removes the objects stored; no anchor is written."""

class ParallelWriterHandle:
    """One RNTuple in a new ROOT file, filled from several threads."""

    def __init__(
        self,
        path: str,
        name: str,
        schema: pa.Schema,
        options: WriteOptionsHandle,
        types: dict[str, str] | None = None,
    ) -> None: ...
    def fill_context(self) -> FillContextHandle:
        """A new fill context, for one thread."""
    def num_entries(self) -> int:
        """Entries in the clusters committed so far."""
    def close(self) -> None:
        """Completes the file (renamed over its path); every context must be closed."""
    def abort(self) -> None:
        """Abandons the file: the temporary file is removed, the path left as it was."""

class FillContextHandle:
    """One thread's fill context of a ``ParallelWriterHandle``."""

    @property
    def num_entries(self) -> int:
        """Entries written through this context."""
    def extend(self, data: Any) -> int:
        """Appends the entries of an Arrow stream (GIL released); returns the context's entries."""
    def flush_cluster(self) -> None:
        """Commits the open cluster now."""
    def close(self) -> None:
        """Commits the open cluster and ends the context."""
    def abandon(self) -> None:
        """Ends the context without committing its open cluster."""

def convert_ttree(
    input: str,
    output: str,
    tree: str | None = None,
    name: str | None = None,
    branches: list[str] | None = None,
    entries: tuple[int, int | None] | None = None,
    compression: str | None = None,
    skip_unsupported: bool = False,
    overwrite: bool = False,
    unsplit: list[str] | None = None,
    split_policy: str = "split",
    network: dict[str, float] | None = None,
    cache: dict[str, str] | None = None,
    settings: dict[str, str] | None = None,
) -> TreeConversion:
    """Converts a TTree (``input``: ``FILE`` or ``FILE:TREE``) to an RNTuple file
    (GIL released)."""

class TreeConversion:
    """What :func:`convert_ttree` did."""

    entries: int
    input_bytes: int
    skipped: list[str]
    #: ``(branch, sample entries, split bytes, unsplit bytes, stored unsplit)`` each.
    split_choices: list[tuple[str, int, int, int, bool]]
    #: Into an object store: the bytes of its objects, the anchor included (a file: None).
    output_bytes: int | None
    #: Into an object store: the warning when objects of the dataset replaced were left.
    warning: str | None

def merge_rntuples(
    inputs: list[str],
    output: str,
    mode: str = "filter",
    compression: str | None = None,
    keep_compression: bool = False,
    name: str | None = None,
    overwrite: bool = False,
    allow_disjoint: bool = False,
    network: dict[str, float] | None = None,
    cache: dict[str, str] | None = None,
    settings: dict[str, str] | None = None,
) -> MergeSummary:
    """Merges RNTuples (``FILE`` or ``FILE:NAME`` each) into a new file, a dataset of
    objects (``ntpl+s3+https://...``, ``ntpl+file://...``) or a DAOS container
    (``daos://POOL/CONTAINER[:NAME]``) (GIL released); ``network``, ``cache`` and
    ``settings`` as :class:`RootFileHandle` takes them, for the inputs and the output."""

class MergeSummary:
    """What :func:`merge_rntuples` did."""

    inputs: int
    entries: int
    clusters: int
    pages_copied: int
    pages_resealed: int
    zero_pages: int
    bytes_read: int
    bytes_written: int
    compression: int
    fields_added: list[str]
    fields_dropped: list[str]
    attribute_sets_dropped: list[str]
    #: ``(input, entries, fields)`` each.
    inputs_lacking: list[tuple[str, int, list[str]]]
    #: ``(field, type)`` each.
    fields_converted: list[tuple[str, str]]
    #: The bytes of the objects stored; ``None`` for a file.
    output_bytes: int | None
