//! The header envelope and the schema description records it shares with the footer's
//! schema extension: fields, columns, alias columns, extra type information.

use super::cursor::{u32_len, Cursor, Writer};
use crate::error::{Error, Result};

/// Field flag: repetitive field (fixed-size array, bitset); the array size follows.
pub const FIELD_FLAG_REPETITIVE: u16 = 0x01;
/// Field flag: projected field; the source field id follows.
pub const FIELD_FLAG_PROJECTED: u16 = 0x02;
/// Field flag: the ROOT type checksum follows.
pub const FIELD_FLAG_TYPE_CHECKSUM: u16 = 0x04;
/// Column flag: deferred column; the first element index follows.
pub const COLUMN_FLAG_DEFERRED: u16 = 0x01;
/// Column flag: the column has a value range (min, max) that follows.
pub const COLUMN_FLAG_RANGE: u16 = 0x02;

/// A field record as stored (the field's id is its position in the list).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldRecord {
    /// Field version (schema evolution).
    pub field_version: u32,
    /// Type version (schema evolution).
    pub type_version: u32,
    /// Parent field id; top-level fields name themselves.
    pub parent_id: u32,
    /// Structural role: 0 leaf, 1 collection, 2 record, 3 variant, 4 streamer.
    pub role: u16,
    /// Flags (`FIELD_FLAG_*`).
    pub flags: u16,
    /// Field name.
    pub name: String,
    /// Normalized C++ type name.
    pub type_name: String,
    /// Type alias (e.g. `Double32_t`), or empty.
    pub type_alias: String,
    /// Free-text description.
    pub description: String,
    /// Number of repetitions (fixed-size arrays, bitsets).
    pub array_size: Option<u64>,
    /// Source field of a projected field.
    pub source_field_id: Option<u32>,
    /// ROOT streamer-info checksum of the type.
    pub type_checksum: Option<u32>,
}

impl FieldRecord {
    fn read(c: &mut Cursor<'_>) -> Result<FieldRecord> {
        let frame = c.record_frame()?;
        let mut f = FieldRecord {
            field_version: c.u32()?,
            type_version: c.u32()?,
            parent_id: c.u32()?,
            role: c.u16()?,
            flags: c.u16()?,
            ..Default::default()
        };
        f.name = c.string()?;
        f.type_name = c.string()?;
        f.type_alias = c.string()?;
        f.description = c.string()?;
        if f.flags & FIELD_FLAG_REPETITIVE != 0 {
            f.array_size = Some(c.u64()?);
        }
        if f.flags & FIELD_FLAG_PROJECTED != 0 {
            f.source_field_id = Some(c.u32()?);
        }
        if f.flags & FIELD_FLAG_TYPE_CHECKSUM != 0 {
            f.type_checksum = Some(c.u32()?);
        }
        c.end_frame(&frame)?;
        Ok(f)
    }

    fn write(&self, w: &mut Writer) {
        let frame = w.begin_record();
        w.u32(self.field_version);
        w.u32(self.type_version);
        w.u32(self.parent_id);
        w.u16(self.role);
        w.u16(self.flags);
        w.string(&self.name);
        w.string(&self.type_name);
        w.string(&self.type_alias);
        w.string(&self.description);
        if let Some(n) = self.array_size {
            w.u64(n);
        }
        if let Some(id) = self.source_field_id {
            w.u32(id);
        }
        if let Some(sum) = self.type_checksum {
            w.u32(sum);
        }
        w.end_frame(frame);
    }
}

/// A column record as stored (the column's physical id is its position in the list).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColumnRecord {
    /// Column type code (see `encoding::ColumnType`).
    pub column_type: u16,
    /// Bits per element on storage.
    pub bits_on_storage: u16,
    /// The field the column belongs to.
    pub field_id: u32,
    /// Flags (`COLUMN_FLAG_*`).
    pub flags: u16,
    /// Which of the field's column representations this column belongs to.
    pub representation_index: u16,
    /// First element index of a deferred column (negative: deferred and suppressed).
    pub first_element_index: Option<i64>,
    /// Value range, e.g. of a quantized real column.
    pub value_range: Option<(f64, f64)>,
}

impl ColumnRecord {
    fn read(c: &mut Cursor<'_>) -> Result<ColumnRecord> {
        let frame = c.record_frame()?;
        let mut col = ColumnRecord {
            column_type: c.u16()?,
            bits_on_storage: c.u16()?,
            field_id: c.u32()?,
            flags: c.u16()?,
            representation_index: c.u16()?,
            ..Default::default()
        };
        if col.flags & COLUMN_FLAG_DEFERRED != 0 {
            col.first_element_index = Some(c.i64()?);
        }
        if col.flags & COLUMN_FLAG_RANGE != 0 {
            col.value_range = Some((c.f64()?, c.f64()?));
        }
        c.end_frame(&frame)?;
        Ok(col)
    }

    fn write(&self, w: &mut Writer) {
        let frame = w.begin_record();
        w.u16(self.column_type);
        w.u16(self.bits_on_storage);
        w.u32(self.field_id);
        w.u16(self.flags);
        w.u16(self.representation_index);
        if let Some(first) = self.first_element_index {
            w.i64(first);
        }
        if let Some((min, max)) = self.value_range {
            w.f64(min);
            w.f64(max);
        }
        w.end_frame(frame);
    }
}

/// An alias column: a projected field's view of a physical column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AliasColumnRecord {
    /// The physical column it shows.
    pub physical_column_id: u32,
    /// The projected field it belongs to.
    pub field_id: u32,
}

/// The extra type information's content id of streamer infos (ROOT's `kStreamerInfo`):
/// a streamed `TList` of the `TStreamerInfo`s of the classes streamer fields store.
pub const EXTRA_TYPE_STREAMER_INFO: u32 = 0;

/// Extra type information (e.g. the streamer info of streamer fields).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExtraTypeInfoRecord {
    /// What the content is (0: serialized ROOT streamer info).
    pub content_id: u32,
    /// Type version it applies to.
    pub type_version: u32,
    /// Type name it applies to.
    pub type_name: String,
    /// The content (stored as a length-prefixed string of bytes).
    pub content: Vec<u8>,
}

/// The schema description: four list frames, in the header or the footer's extension.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SchemaDescription {
    /// Field records.
    pub fields: Vec<FieldRecord>,
    /// Column records.
    pub columns: Vec<ColumnRecord>,
    /// Alias column records.
    pub alias_columns: Vec<AliasColumnRecord>,
    /// Extra type information records.
    pub extra_type_infos: Vec<ExtraTypeInfoRecord>,
}

/// Reads a list frame, calling `item` for each entry, checking the frame's bounds.
pub(crate) fn read_list<T>(
    c: &mut Cursor<'_>,
    mut item: impl FnMut(&mut Cursor<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    // Each item takes at least 4 bytes.
    let frame = c.bounded_list_frame(4, "items")?;
    let mut out = Vec::with_capacity(frame.items as usize);
    for _ in 0..frame.items {
        out.push(item(c)?);
        if c.position() > frame.end {
            return Err(Error::corrupt(
                c.what(),
                format!("items overrun the list frame at offset {}", frame.start),
            ));
        }
    }
    c.end_frame(&frame)?;
    Ok(out)
}

impl SchemaDescription {
    /// Reads the four list frames at the cursor.
    pub fn read(c: &mut Cursor<'_>) -> Result<SchemaDescription> {
        let fields = read_list(c, FieldRecord::read)?;
        let columns = read_list(c, ColumnRecord::read)?;
        let alias_columns = read_list(c, |c| {
            let frame = c.record_frame()?;
            let a = AliasColumnRecord {
                physical_column_id: c.u32()?,
                field_id: c.u32()?,
            };
            c.end_frame(&frame)?;
            Ok(a)
        })?;
        let extra_type_infos = read_list(c, |c| {
            let frame = c.record_frame()?;
            let content_id = c.u32()?;
            let type_version = c.u32()?;
            let type_name = c.string()?;
            // A string of bytes (e.g. a streamed TList), not necessarily UTF-8.
            let len = c.u32()? as usize;
            let content = c.bytes(len)?.to_vec();
            c.end_frame(&frame)?;
            Ok(ExtraTypeInfoRecord {
                content_id,
                type_version,
                type_name,
                content,
            })
        })?;
        Ok(SchemaDescription {
            fields,
            columns,
            alias_columns,
            extra_type_infos,
        })
    }

    /// Errors if a list or string is too long for the format's 32-bit counts and lengths
    /// (a schema built in memory; one read from a file always fits).
    pub fn check_limits(&self) -> Result<()> {
        u32_len(self.fields.len(), || "schema description: fields".into())?;
        u32_len(self.columns.len(), || "schema description: columns".into())?;
        u32_len(self.alias_columns.len(), || {
            "schema description: alias columns".into()
        })?;
        u32_len(self.extra_type_infos.len(), || {
            "schema description: extra type information records".into()
        })?;
        for (id, f) in self.fields.iter().enumerate() {
            for (what, s) in [
                ("name", &f.name),
                ("type name", &f.type_name),
                ("type alias", &f.type_alias),
                ("description", &f.description),
            ] {
                u32_len(s.len(), || {
                    format!("schema description: {what} of field {id}")
                })?;
            }
        }
        for x in &self.extra_type_infos {
            u32_len(x.type_name.len(), || {
                "schema description: type name of extra type information".into()
            })?;
            u32_len(x.content.len(), || {
                "schema description: content of extra type information".into()
            })?;
        }
        Ok(())
    }

    /// Writes the four list frames. Counts and strings of 2^32 or more have no
    /// representation: check them first with [`SchemaDescription::check_limits`].
    pub fn write(&self, w: &mut Writer) {
        // The counts fit: check_limits (run by Descriptor::build, which every writer's
        // schema goes through) refuses lists of 2^32 records or more.
        #[allow(clippy::cast_possible_truncation)]
        let (n_fields, n_columns, n_aliases, n_extra) = (
            self.fields.len() as u32,
            self.columns.len() as u32,
            self.alias_columns.len() as u32,
            self.extra_type_infos.len() as u32,
        );
        let list = w.begin_list(n_fields);
        for f in &self.fields {
            f.write(w);
        }
        w.end_frame(list);
        let list = w.begin_list(n_columns);
        for col in &self.columns {
            col.write(w);
        }
        w.end_frame(list);
        let list = w.begin_list(n_aliases);
        for a in &self.alias_columns {
            let rec = w.begin_record();
            w.u32(a.physical_column_id);
            w.u32(a.field_id);
            w.end_frame(rec);
        }
        w.end_frame(list);
        let list = w.begin_list(n_extra);
        for x in &self.extra_type_infos {
            let rec = w.begin_record();
            w.u32(x.content_id);
            w.u32(x.type_version);
            w.string(&x.type_name);
            // Header::check_limits refuses contents of 4 GiB or more.
            #[allow(clippy::cast_possible_truncation)]
            w.u32(x.content.len() as u32);
            w.bytes(&x.content);
            w.end_frame(rec);
        }
        w.end_frame(list);
    }
}

/// Reads feature flags: 64-bit words, continued while the word's sign bit is set. Feature
/// number `n` is bit `n % 64` of word `n / 64`. This reader knows no feature, so any set
/// bit is refused with ROOT's wording.
pub fn read_feature_flags(c: &mut Cursor<'_>) -> Result<()> {
    let mut word_index: u32 = 0;
    loop {
        let word = c.u64()?;
        let bits = word & !(1u64 << 63);
        if bits != 0 {
            let bit = bits.trailing_zeros();
            return Err(Error::UnsupportedFeature(word_index * 64 + bit));
        }
        if word & (1u64 << 63) == 0 {
            return Ok(());
        }
        word_index = word_index.saturating_add(1);
    }
}

/// The header envelope's payload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Header {
    /// The RNTuple's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The writing library, e.g. "ROOT v6.40.00".
    pub writer: String,
    /// The schema.
    pub schema: SchemaDescription,
}

impl Header {
    /// Parses the header payload (inside the envelope).
    pub fn read(payload: &[u8]) -> Result<Header> {
        let mut c = Cursor::new(payload, "header envelope");
        read_feature_flags(&mut c)?;
        let name = c.string()?;
        let description = c.string()?;
        let writer = c.string()?;
        let schema = SchemaDescription::read(&mut c)?;
        Ok(Header {
            name,
            description,
            writer,
            schema,
        })
    }

    /// Errors if a string or list is too long for the format's 32-bit lengths and counts
    /// (see [`SchemaDescription::check_limits`]).
    pub fn check_limits(&self) -> Result<()> {
        for (what, s) in [
            ("name", &self.name),
            ("description", &self.description),
            ("writer", &self.writer),
        ] {
            u32_len(s.len(), || format!("header: RNTuple {what}"))?;
        }
        self.schema.check_limits()
    }

    /// Serializes the header payload (to be sealed into an envelope); check it first
    /// with [`Header::check_limits`].
    pub fn write(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(0);
        w.string(&self.name);
        w.string(&self.description);
        w.string(&self.writer);
        self.schema.write(&mut w);
        w.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let h = Header {
            name: "Events".into(),
            description: "d".into(),
            writer: "rntuple".into(),
            schema: SchemaDescription {
                fields: vec![FieldRecord {
                    parent_id: 0,
                    name: "a".into(),
                    type_name: "std::array<float,3>".into(),
                    flags: FIELD_FLAG_REPETITIVE,
                    array_size: Some(3),
                    role: 0,
                    ..Default::default()
                }],
                columns: vec![ColumnRecord {
                    column_type: 0x1D,
                    bits_on_storage: 12,
                    flags: COLUMN_FLAG_RANGE | COLUMN_FLAG_DEFERRED,
                    first_element_index: Some(42),
                    value_range: Some((-1.0, 2.5)),
                    ..Default::default()
                }],
                alias_columns: vec![AliasColumnRecord {
                    physical_column_id: 0,
                    field_id: 0,
                }],
                extra_type_infos: vec![],
            },
        };
        assert_eq!(Header::read(&h.write()).unwrap(), h);
    }

    #[test]
    fn feature_flag_137_is_refused_with_its_number() {
        let mut w = Writer::new();
        w.u64(1 << 63);
        w.u64(1 << 63);
        w.u64(1 << 9);
        let b = w.into_bytes();
        let err = read_feature_flags(&mut Cursor::new(&b, "h")).unwrap_err();
        assert_eq!(err.to_string(), "unsupported format feature: 137");
    }

    #[test]
    fn list_with_absurd_item_count_is_refused_before_allocating() {
        let mut w = Writer::new();
        w.i64(-12);
        w.u32(u32::MAX);
        let b = w.into_bytes();
        assert!(read_list(&mut Cursor::new(&b, "h"), |c| c.u32()).is_err());
    }
}
