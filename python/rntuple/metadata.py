"""An RNTuple's metadata as uproot names it: the anchor's members, the header, the
footer, the cluster summaries and the page list of every cluster, from what the core's
descriptor holds (``RNTuple.header``, ``.footer``, ``.page_link_list``, ...).

Attribute names follow uproot's metadata objects (``field_records``, ``type_name``,
``parent_field_id``, ``cluster_group_records``, ``num_clusters``, ``suppressed``, ...),
which follow the RNTuple specification's names of the same things."""

from __future__ import annotations

import enum
from types import SimpleNamespace
from typing import Any

import numpy as np


class FieldRole(enum.IntEnum):
    """A field's structural role (the specification's values)."""

    LEAF = 0
    COLLECTION = 1
    RECORD = 2
    VARIANT = 3
    STREAMER = 4


class MetaRecord(SimpleNamespace):
    """One metadata record: its values as attributes (``record.type_name``)."""


#: Column type code -> (the specification's name, NumPy dtype of one decoded element).
COLUMN_TYPES: dict[int, tuple[str, str]] = {
    0x00: ("Bit", "bool"),
    0x01: ("Byte", "uint8"),
    0x02: ("Char", "uint8"),
    0x03: ("Int8", "int8"),
    0x04: ("UInt8", "uint8"),
    0x05: ("Int16", "int16"),
    0x06: ("UInt16", "uint16"),
    0x07: ("Int32", "int32"),
    0x08: ("UInt32", "uint32"),
    0x09: ("Int64", "int64"),
    0x0A: ("UInt64", "uint64"),
    0x0B: ("Real16", "float16"),
    0x0C: ("Real32", "float32"),
    0x0D: ("Real64", "float64"),
    0x0E: ("Index32", "int32"),
    0x0F: ("Index64", "int64"),
    0x10: ("Switch", "int64,int32"),
    0x11: ("SplitInt16", "int16"),
    0x12: ("SplitUInt16", "uint16"),
    0x13: ("SplitInt32", "int32"),
    0x14: ("SplitUInt32", "uint32"),
    0x15: ("SplitInt64", "int64"),
    0x16: ("SplitUInt64", "uint64"),
    0x17: ("SplitReal16", "float16"),
    0x18: ("SplitReal32", "float32"),
    0x19: ("SplitReal64", "float64"),
    0x1A: ("SplitIndex32", "int32"),
    0x1B: ("SplitIndex64", "int64"),
    0x1C: ("Real32Trunc", "float32"),
    0x1D: ("Real32Quant", "float32"),
}

_ZIGZAG_TYPES = {0x11, 0x13, 0x15}


def column_dtype(code: int) -> np.dtype:
    """The NumPy dtype of one decoded element of column type ``code``."""
    return np.dtype(COLUMN_TYPES.get(code, ("", "uint8"))[1])


class RNTupleMetadata:
    """The metadata of one RNTuple, built from the core's ``Reader.metadata()``."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._field_paths: dict[str, int] | None = None
        #: The anchor's members by ROOT's names (``fVersionEpoch``, ``fSeekHeader``, ...).
        self.anchor: dict[str, int] = dict(raw["anchor"])
        fields = []
        for record in raw["fields"]:
            values = {k: v for k, v in record.items() if k != "from_extension"}
            values["struct_role"] = FieldRole(values["struct_role"])
            fields.append((MetaRecord(**values), record["from_extension"]))
        columns = []
        for idx, record in enumerate(raw["columns"]):
            values = {k: v for k, v in record.items() if k != "from_extension"}
            columns.append((MetaRecord(**values, idx=idx), record["from_extension"]))
        extra = [MetaRecord(**e) for e in raw["extra_type_infos"]]
        #: Every field record: the header's, then the schema extension's.
        self.field_records: list[MetaRecord] = [r for r, _ in fields]
        #: Every column record (``idx`` is its physical column id).
        self.column_records: list[MetaRecord] = [r for r, _ in columns]
        self.header = MetaRecord(
            ntuple_name=raw["name"],
            ntuple_description=raw["description"],
            writer_identifier=raw["writer"],
            field_records=[r for r, ext in fields if not ext],
            column_records=[r for r, ext in columns if not ext],
            alias_column_records=[],
            extra_type_infos=extra,
            checksum=raw["header_checksum"],
        )
        self.footer = MetaRecord(
            header_checksum=raw["header_checksum"],
            extension_links=MetaRecord(
                field_records=[r for r, ext in fields if ext],
                column_records=[r for r, ext in columns if ext],
                alias_column_records=[],
                extra_type_info=[],
            ),
            cluster_group_records=[
                MetaRecord(
                    min_entry_num=g["min_entry_num"],
                    entry_span=g["entry_span"],
                    num_clusters=g["num_clusters"],
                    page_list_link=MetaRecord(
                        env_uncomp_size=g["page_list_length"],
                        locator=MetaRecord(num_bytes=g["page_list_bytes"]),
                    ),
                )
                for g in raw["cluster_groups"]
            ],
            linked_attribute_sets=[
                MetaRecord(
                    schema_version_major=s["schema_version_major"],
                    schema_version_minor=s["schema_version_minor"],
                    anchor_uncompressed_size=s["anchor_uncompressed_size"],
                    locator=MetaRecord(num_bytes=s["num_bytes"], offset=s["offset"]),
                    name=s["name"],
                )
                for s in raw["attribute_sets"]
            ],
        )
        #: ``num_first_entry`` and ``num_entries`` of every cluster, in order.
        self.cluster_summaries: list[MetaRecord] = [
            MetaRecord(num_first_entry=c["num_first_entry"], num_entries=c["num_entries"])
            for c in raw["clusters"]
        ]
        #: Per cluster, per physical column (as the cluster's page list lists them):
        #: ``pages`` (``num_elements``, ``has_checksum``, ``locator``), ``element_offset``,
        #: ``suppressed``, ``compression_settings``.
        self.page_link_list: list[list[MetaRecord]] = [
            [
                MetaRecord(
                    pages=[
                        MetaRecord(
                            num_elements=n,
                            has_checksum=checksum,
                            locator=MetaRecord(num_bytes=size, offset=offset),
                        )
                        for n, checksum, offset, size in column["pages"]
                    ],
                    element_offset=column["element_offset"],
                    suppressed=column["element_offset"] is None,
                    compression_settings=column["compression"],
                )
                for column in cluster["columns"]
            ]
            for cluster in raw["clusters"]
        ]

    def column_metadata(self, ncol: int) -> MetaRecord:
        """How column ``ncol`` is stored and decoded: ``ncol``, ``dtype_byte`` (its type
        code), ``dtype_str`` (the specification's type name), ``dtype`` (NumPy, one
        decoded element), ``split``, ``zigzag``, ``delta``, ``isbit``, ``nbits``."""
        record = self.column_records[ncol]
        name, _ = COLUMN_TYPES.get(record.type, (f"unknown type {record.type:#x}", "uint8"))
        return MetaRecord(
            ncol=ncol,
            dtype_byte=record.type,
            dtype_str=name,
            dtype=column_dtype(record.type),
            split=name.startswith("Split"),
            zigzag=record.type in _ZIGZAG_TYPES,
            delta=record.type in {0x1A, 0x1B},
            isbit=record.type == 0x00,
            nbits=record.nbits,
        )

    def field_paths(self) -> dict[str, int]:
        """Field ids by the path the reader shows (``Jet.pt`` for a member of the
        records of collection ``Jet``: a collection's or array's item field adds no
        segment)."""
        if self._field_paths is None:
            self._field_paths = self._paths_of_fields()
        return self._field_paths

    def _paths_of_fields(self) -> dict[str, int]:
        records = self.field_records
        out: dict[str, int] = {}
        for i in range(len(records)):
            segments = []
            current = i
            while True:
                parent = records[current].parent_field_id
                parent_record = records[parent]
                hidden = parent != current and (
                    parent_record.struct_role == FieldRole.COLLECTION or parent_record.repetition > 0
                )
                if not hidden:
                    segments.append(records[current].field_name)
                if parent == current:
                    break
                current = parent
            out.setdefault(".".join(reversed(segments)), i)
        return out
