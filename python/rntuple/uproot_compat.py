"""uproot's reading idioms that need more than a read: iteration reports, uproot's
meaning of ``step_size``, lazily read (virtual) Awkward arrays with an access log, and
field descriptions as Awkward parameters (``ak_add_doc``)."""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import awkward as ak

from .errors import InvalidArgumentError
from .libraries import indexed_options, to_awkward
from .metadata import FieldRole, RNTupleMetadata
from .plan import TableSource


class Report:
    """What one batch of an iteration covers (as uproot's ``Report``): the RNTuple it
    comes from, its entries in that RNTuple (``tree_entry_start``/``stop``) and over
    every file of the iteration (``global_entry_start``/``stop``, also ``start`` and
    ``stop``)."""

    def __init__(
        self, ntuple: TableSource, entry_start: int, entry_stop: int, global_offset: int = 0
    ) -> None:
        self._ntuple = ntuple
        self._start = entry_start
        self._stop = entry_stop
        self._offset = global_offset

    @property
    def source(self) -> TableSource:
        """The RNTuple the batch was read from."""
        return self._ntuple

    @property
    def tree(self) -> TableSource:
        """The RNTuple the batch was read from (uproot's name for it)."""
        return self._ntuple

    @property
    def file_path(self) -> str:
        """The path of the file the batch was read from."""
        return self._ntuple.file_path

    @property
    def tree_entry_start(self) -> int:
        """The batch's first entry in its RNTuple."""
        return self._start

    @property
    def tree_entry_stop(self) -> int:
        """One past the batch's last entry in its RNTuple."""
        return self._stop

    @property
    def global_offset(self) -> int:
        """The entries of the files before this one in the iteration."""
        return self._offset

    @property
    def global_entry_start(self) -> int:
        """The batch's first entry over all files of the iteration."""
        return self._start + self._offset

    @property
    def global_entry_stop(self) -> int:
        """One past the batch's last entry over all files of the iteration."""
        return self._stop + self._offset

    start = global_entry_start
    stop = global_entry_stop

    def to_global(self, offset: int) -> Report:
        """This report with the files before it holding ``offset`` entries."""
        return Report(self._ntuple, self._start, self._stop, offset)

    def __len__(self) -> int:
        return self._stop - self._start

    def __repr__(self) -> str:
        return (
            f"<Report start={self.global_entry_start} stop={self.global_entry_stop} "
            f"source={self._ntuple.file_path + ':' + self._ntuple.path!r}>"
        )


class Accessed(NamedTuple):
    """One buffer of a virtual array read on first access: the field it belongs to
    and Awkward's key of the buffer."""

    field: str
    buffer_key: str


def virtual_content(
    ntuple: TableSource,
    paths: list[str],
    name: str,
    entry_start: int,
    entry_stop: int,
    access_log: Any,
    select: Callable[[ak.Array], ak.Array] | None = None,
    types: Any = None,
) -> ak.contents.Content:
    """A virtual Awkward layout of the values ``select`` takes from the top-level record
    ``name`` holding ``paths`` over ``entry_start:entry_stop`` (read as ``types`` asks,
    ``RNTuple._read_types``): its form from the schema (no page read), its buffers read
    together, once, when one is first used; each buffer used is logged to ``access_log``
    (if not None) as :class:`Accessed`."""
    if select is None:
        select = _same
    empty = indexed_options(
        select(to_awkward(ntuple._read_table(paths, entry_start, entry_start, types))[name]).layout
    )
    form, _, _ = ak.to_buffers(ak.to_packed(empty))
    lock = threading.Lock()
    read: dict[str, Any] = {}

    def buffers() -> dict[str, Any]:
        with lock:
            if not read:
                values = select(to_awkward(ntuple._read_table(paths, entry_start, entry_stop, types))[name])
                values = indexed_options(values.layout)
                got_form, _, got = ak.to_buffers(ak.to_packed(values))
                if got_form != form:
                    raise InvalidArgumentError(
                        f"field {name!r} read as {got_form.type}, its schema says {form.type}"
                    )
                read.update(got)
            return read

    def generator(key: str) -> Callable[[], Any]:
        def materialize() -> Any:
            if access_log is not None:
                operator.iadd(access_log, [Accessed(name, key)])
            return buffers()[key]

        return materialize

    keys = ak.to_buffers(ak.to_packed(empty))[2].keys()
    return ak.from_buffers(
        form, entry_stop - entry_start, {key: generator(key) for key in keys}, highlevel=False
    )


def _same(values: ak.Array) -> ak.Array:
    return values


def check_virtual(virtual: Any, access_log: Any, **others: Any) -> bool:
    """Checks ``virtual`` and ``access_log`` against the other arguments of a read as
    uproot does: with ``virtual=True`` only Awkward records of fields (no ``how``,
    expressions, cut or aliases); ``access_log`` only with ``virtual=True``."""
    if not isinstance(virtual, bool):
        raise InvalidArgumentError(f"virtual must be True or False, not {virtual!r}")
    if virtual:
        for argument, value in others.items():
            if argument == "library" and value in ("ak", "awkward"):
                continue
            if value is not None:
                raise InvalidArgumentError(f"'{argument}' cannot be used with 'virtual=True'")
    elif access_log is not None:
        raise InvalidArgumentError("'access_log' cannot be used with 'virtual=False'")
    return virtual


def add_doc(
    layout: ak.contents.Content, meta: RNTupleMetadata, field_id: int, ak_add_doc: Any
) -> ak.contents.Content:
    """``layout`` (the values of field ``field_id``) with each field's description as its
    ``__doc__`` parameter (``ak_add_doc=True``) or, for a dict ``{parameter: attribute}``,
    the field's attributes (``"typename"``, ``"description"``, ``"name"``) as those
    parameters; subfields follow the layout down."""
    record = meta.field_records[field_id]
    parameters = dict(layout.parameters)
    if ak_add_doc is True:
        if record.field_desc:
            parameters["__doc__"] = record.field_desc
    else:
        attributes = {
            "typename": record.type_name,
            "description": record.field_desc,
            "name": record.field_name,
        }
        for key, attribute in ak_add_doc.items():
            if attribute not in attributes:
                raise InvalidArgumentError(
                    f"ak_add_doc: a field has no attribute {attribute!r} (it has "
                    f"{', '.join(map(repr, attributes))})"
                )
            parameters[key] = attributes[attribute]
    children = [
        i for i, r in enumerate(meta.field_records) if r.parent_field_id == field_id and i != field_id
    ]
    node = layout
    content = node
    while content.is_option or content.is_indexed:
        content = content.content
    if children and content.is_record and len(content.contents) == len(children):
        content = content.copy(
            contents=[
                add_doc(c, meta, i, ak_add_doc) for c, i in zip(content.contents, children, strict=True)
            ]
        )
    elif (
        len(children) == 1
        and (content.is_list or content.is_regular)
        and (record.struct_role == FieldRole.COLLECTION or record.repetition > 0)
    ):
        content = content.copy(content=add_doc(content.content, meta, children[0], ak_add_doc))
    if node is layout and not (layout.is_option or layout.is_indexed):
        return content.copy(parameters=parameters)
    return _replace_innermost(layout, content).copy(parameters=parameters)


def _replace_innermost(layout: ak.contents.Content, content: ak.contents.Content) -> ak.contents.Content:
    """``layout`` with the content under its option and index nodes replaced."""
    if layout.is_option or layout.is_indexed:
        return layout.copy(content=_replace_innermost(layout.content, content))
    return content
