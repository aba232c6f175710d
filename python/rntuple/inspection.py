"""Where the bytes of an RNTuple go: :meth:`rntuple.RNTuple.inspect` returns an
:class:`Inspection`, the figures of ``rntuple inspect`` (and of ROOT's
``RNTupleInspector``) as Arrow and pandas tables, attributes and a bar chart."""

from __future__ import annotations

from typing import Any, NamedTuple

import pyarrow as pa

from . import _core
from ._extras import require
from .errors import InvalidArgumentError

#: The tables an inspection has: rows per field (subfields included), per physical
#: column, or per column type (ROOT's ``PrintColumnTypeInfo``).
BY = ("field", "column", "type")
#: The bins ROOT's ``RNTupleInspector::GetPageSizeDistribution`` uses.
ROOT_BINS = 64
#: The orders of :meth:`Inspection.table`'s ``sort``: compressed bytes (the largest
#: first), uncompressed bytes, compression factor (the worst first), pages, name (the
#: label of fields and columns, the column type).
SORT = ("size", "uncompressed", "compression", "pages", "name")


class PageSizeHistogram(NamedTuple):
    """Pages per bin of compressed size, binned as ROOT's
    ``RNTupleInspector::GetPageSizeDistribution``: equal bins from the smallest page
    to the largest plus one bin width (when all pages have one size, they are all in
    ``overflow``, as in ROOT)."""

    counts: list[int]
    low: float
    high: float
    underflow: int
    overflow: int

    @property
    def edges(self) -> list[float]:
        """The ``len(counts) + 1`` bin edges, in bytes."""
        n = len(self.counts)
        return [self.low + (self.high - self.low) * k / n for k in range(n + 1)]


class Inspection:
    """The storage of one RNTuple, from its page lists (no page is read).

    The table of ``by`` (``"field"``, ``"column"`` or ``"type"``) is :meth:`to_arrow`
    and :meth:`to_pandas`: compressed and uncompressed bytes, compression factor,
    elements (columns and types), pages, average page size and share of the file
    (``share``: the compressed bytes over the whole file's) on every row; a field's row
    sums its subfields' columns. Fields and columns have a ``label`` next to the
    field's name: the name, or what the field holds where the name does not say it
    (``Jet_* (_collection8)`` for the collections ROOT's ``RNTupleImporter`` makes of
    a TTree's counted arrays ``Jet_pt[nJet]``, ...). The figures of the whole
    RNTuple are attributes (``header_bytes``, ``footer_bytes``, ``page_list_bytes``,
    ``metadata_data_ratio``, ``file_bytes``, ...; :attr:`figures` has them all), and
    :attr:`page_sizes` lists every page's compressed size."""

    #: Entries.
    entries: int
    #: Clusters.
    clusters: int
    #: Cluster groups (one page-list envelope each).
    cluster_groups: int
    #: Physical columns.
    physical_columns: int
    #: Pages of all columns.
    pages: int
    #: Compressed bytes of all pages (checksums not included), as ROOT's inspector.
    compressed: int
    #: Their uncompressed (in-memory) bytes, as ROOT's inspector counts them.
    uncompressed: int
    #: ``uncompressed / compressed`` (1 when nothing is stored).
    compression_factor: float
    #: Compressed bytes per page.
    average_page_size: float
    #: Bytes of the pages on storage, each stored page once (ROOT's same-page merging
    #: lets columns share a page, which the other figures count for each; zero pages
    #: are not stored).
    stored_page_bytes: int
    #: Pages that are a page stored for another column or cluster.
    shared_pages: int
    #: Bytes of the stored pages' checksums.
    checksum_bytes: int
    #: Pages ROOT synthesizes for the zeros of columns added by a late model extension
    #: before they existed (counted, as ROOT's inspector counts them; not on storage).
    zero_pages: int
    #: Their bytes as ROOT counts them.
    zero_page_bytes: int
    #: The header envelope on storage (ROOT's "Header size").
    header_bytes: int
    #: The header envelope decompressed.
    header_uncompressed: int
    #: The footer envelope on storage.
    footer_bytes: int
    #: The footer envelope decompressed.
    footer_uncompressed: int
    #: The page-list envelopes on storage (ROOT counts them into its "Footer size").
    page_list_bytes: int
    #: The page-list envelopes decompressed.
    page_list_uncompressed: int
    #: Header, footer and page lists on storage.
    metadata_bytes: int
    #: ``metadata_bytes / compressed`` (ROOT's "Metadata / data").
    metadata_data_ratio: float
    #: The whole file.
    file_bytes: int
    #: The file's bytes that are not this RNTuple's pages, checksums or envelopes.
    other_bytes: int

    def __init__(self, handle: _core.InspectionHandle, by: str = "field", name: str = "") -> None:
        if by not in BY:
            raise InvalidArgumentError(f"by must be one of {', '.join(map(repr, BY))}, not {by!r}")
        self._handle = handle
        self.by = by
        self.name = name
        self._figures: dict[str, int | float] = dict(handle.figures())
        for key, value in self._figures.items():
            setattr(self, key, value)
        self._tables: dict[str, pa.Table] = {}

    @property
    def figures(self) -> dict[str, int | float]:
        """The whole-RNTuple figures by name, as ``rntuple inspect --json`` has them."""
        return dict(self._figures)

    def table(self, by: str | None = None, *, sort: str | None = None, top: int | None = None) -> pa.Table:
        """The table per ``by`` (this inspection's own by default) as a
        ``pyarrow.Table``, in the file's order, or sorted by ``sort`` (one of
        :data:`SORT`: ``"size"`` puts the largest compressed first; per field,
        subfields stay under their parent). With ``top``, only the first ``top`` rows
        (by ``sort``, ``"size"`` by default; per field, top-level fields, their
        subfields' bytes included) and, when rows are left out, a last row summing
        them: its name and label say ``... 840 more fields``, its other texts and ids
        are null, so that the rows add up to the whole RNTuple (as ``rntuple inspect
        --sort KEY --top N``)."""
        by = self.by if by is None else by
        if by not in BY:
            raise InvalidArgumentError(f"by must be one of {', '.join(map(repr, BY))}, not {by!r}")
        if sort is not None and sort not in SORT:
            raise InvalidArgumentError(f"sort must be one of {', '.join(map(repr, SORT))}, not {sort!r}")
        if top is not None and (isinstance(top, bool) or int(top) != top or top < 0):
            raise InvalidArgumentError(f"top must be a whole number of rows, 0 or more, not {top!r}")
        if sort is not None or top is not None:
            return pa.table(self._handle.table(by, sort, None if top is None else int(top)))
        if by not in self._tables:
            self._tables[by] = pa.table(self._handle.table(by))
        return self._tables[by]

    def to_arrow(self, *, sort: str | None = None, top: int | None = None) -> pa.Table:
        """The table (per field, column or column type) as a ``pyarrow.Table``, sorted
        and cut as :meth:`table` does."""
        return self.table(sort=sort, top=top)

    def to_pandas(self, *, sort: str | None = None, top: int | None = None) -> Any:
        """The table as a ``pandas.DataFrame`` (pandas must be installed), sorted and
        cut as :meth:`table` does."""
        require("pandas", "Inspection.to_pandas()")
        return self.table(sort=sort, top=top).to_pandas()

    @property
    def page_sizes(self) -> pa.Table:
        """Every page, column by column: its physical ``column`` id, the column's
        ``field`` and ``type``, and its ``compressed`` size in bytes."""
        ids, sizes = self._handle.page_sizes()
        columns = self.table("column")
        fields = columns.column("field").to_pylist()
        types = columns.column("type").to_pylist()
        return pa.table(
            {
                "column": pa.array(ids, pa.uint32()),
                "field": pa.array([fields[i] for i in ids], pa.string()),
                "type": pa.array([types[i] for i in ids], pa.string()),
                "compressed": pa.array(sizes, pa.uint64()),
            }
        )

    def _column_ids(self, column: int | str | None) -> list[int] | None:
        """The physical column ids of ``column``: an id, a column type's name, or all."""
        if column is None:
            return None
        table = self.table("column")
        if isinstance(column, str):
            types = table.column("type").to_pylist()
            ids = [i for i, t in zip(table.column("id").to_pylist(), types, strict=True) if t == column]
            if not ids:
                raise InvalidArgumentError(f"the RNTuple has no column of type {column!r}")
            return ids
        if not 0 <= int(column) < table.num_rows:
            raise InvalidArgumentError(f"no physical column {column}: the RNTuple has {table.num_rows}")
        return [int(column)]

    def page_size_histogram(
        self, column: int | str | None = None, bins: int = ROOT_BINS
    ) -> PageSizeHistogram:
        """The compressed sizes of the pages of ``column`` (a physical column id, a
        column type such as ``"SplitReal32"``, or all pages for ``None``) over ``bins``
        bins, as ROOT's ``RNTupleInspector::GetPageSizeDistribution(column)`` fills
        its histogram."""
        if int(bins) < 1:
            raise InvalidArgumentError(f"bins must be positive, not {bins}")
        h = self._handle.histogram(self._column_ids(column), int(bins))
        return PageSizeHistogram(h["counts"], h["low"], h["high"], h["underflow"], h["overflow"])

    def page_size_histograms_by_type(self, bins: int = ROOT_BINS) -> dict[str, PageSizeHistogram]:
        """Per column type, its pages over bins common to all types (the histograms of
        ROOT's ``GetPageSizeDistribution()`` stack)."""
        if int(bins) < 1:
            raise InvalidArgumentError(f"bins must be positive, not {bins}")
        return {
            t: PageSizeHistogram(h["counts"], h["low"], h["high"], h["underflow"], h["overflow"])
            for t, h in self._handle.type_histograms(int(bins))
        }

    def page_size_summary(self, column: int | str | None = None) -> dict[str, int | float]:
        """The compressed page sizes of ``column`` (as in :meth:`page_size_histogram`)
        in a few numbers: ``pages``, ``min``, ``p10``, ``p25``, ``median``, ``p75``,
        ``p90``, ``max`` and ``mean``."""
        return dict(self._handle.summary(self._column_ids(column)))

    def plot(self, n: int = 20, ax: Any = None) -> Any:
        """Draws the compressed bytes of the ``n`` largest top-level fields as a
        horizontal bar chart, the largest on top, each bar named by the field's label
        (``Jet_* (_collection8)`` for a collection of a TTree's counted arrays) and
        labelled with its share of the file's bytes, with matplotlib (on ``ax``, or on
        a new figure); returns the axes."""
        plt = require("matplotlib.pyplot", "Inspection.plot()")
        fields = self.table("field")
        rows = [
            (label, size, share)
            for name, label, size, share in zip(
                fields.column("name").to_pylist(),
                fields.column("label").to_pylist(),
                fields.column("compressed").to_pylist(),
                fields.column("share").to_pylist(),
                strict=True,
            )
            if "." not in name
        ]
        rows.sort(key=lambda r: r[1], reverse=True)
        rows = rows[: max(int(n), 0)]
        if ax is None:
            _, ax = plt.subplots(figsize=(8, 0.6 + 0.3 * max(len(rows), 1)))
        names = [r[0] for r in rows][::-1]
        sizes = [r[1] for r in rows][::-1]
        bars = ax.barh(names, sizes)
        ax.bar_label(bars, labels=[f"{100 * r[2]:.1f}%" for r in rows][::-1], padding=3, fontsize="small")
        ax.set_xlabel(f"compressed bytes (%: of the file's {self.file_bytes:,} B)")
        title = f"{self.name}: " if self.name else ""
        ax.set_title(
            f"{title}{self.compressed:,} B in {self.pages} pages, factor {self.compression_factor:.2f}",
            fontsize="medium",
        )
        ax.margins(x=0.15)
        return ax

    def __repr__(self) -> str:
        return (
            f"<Inspection of {self.name!r} by {self.by}: {self.compressed} B compressed, "
            f"{self.uncompressed} B uncompressed (factor {self.compression_factor:.2f}), "
            f"{self.pages} pages, metadata {self.metadata_bytes} B, file {self.file_bytes} B>"
        )
