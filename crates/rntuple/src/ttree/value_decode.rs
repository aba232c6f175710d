//! Decoding streamed values by their layouts ([`super::type_layout`]): a
//! [`StreamCursor`] over an entry's bytes fills a [`Builder`], column by column, whose
//! buffers become Arrow arrays.

use super::type_layout::{
    ClassKind, ClassLayout, Streamed, TOBJECT_ALLOCATION_BITS, TOBJECT_IS_REFERENCED,
};
use super::values::{leaf_array, LeafType};
use crate::arrow_map::map_array;
use crate::container::BeReader;
use crate::encoding::ColumnValues;
use crate::error::{Error, Result};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, LargeListArray, LargeStringArray, StructArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use std::sync::Arc;

/// Values decoded from streamed bytes, column by column, into Arrow-shaped buffers.
#[derive(Debug, Clone)]
pub enum Builder {
    /// Fundamentals: their type on disk and their values in memory.
    Prim(LeafType, ColumnValues),
    /// Strings: offsets (one more than strings) and bytes.
    Str(Vec<i64>, Vec<u8>),
    /// Variable-size lists: offsets (one more than lists) and items.
    List(Vec<i64>, Box<Builder>),
    /// Fixed-size lists of `n` items.
    Fixed(usize, Box<Builder>),
    /// Records: one builder per member, and the number of records.
    Struct(Vec<Builder>, usize),
}

impl Builder {
    /// An empty builder for values of type `t`.
    pub fn new(t: &Streamed) -> Builder {
        match t {
            Streamed::Prim(p) => {
                Builder::Prim(*p, p.values(0).unwrap_or(ColumnValues::U8(Vec::new())))
            }
            Streamed::String | Streamed::TString => Builder::Str(vec![0], Vec::new()),
            Streamed::Vector(_, item) => Builder::List(vec![0], Box::new(Builder::new(item))),
            Streamed::Array(item, n) => Builder::Fixed(*n, Box::new(Builder::new(item))),
            Streamed::Bitset(n) => {
                Builder::Fixed(*n, Box::new(Builder::new(&Streamed::Prim(LeafType::Bool))))
            }
            Streamed::Counted(t, _) => {
                Builder::List(vec![0], Box::new(Builder::new(&Streamed::Prim(*t))))
            }
            Streamed::Object(c) => Builder::Struct(
                c.bases
                    .iter()
                    .map(|b| Builder::new(&Streamed::Object(b.clone())))
                    .chain(c.members.iter().map(|(_, m)| Builder::new(m)))
                    .collect(),
                0,
            ),
        }
    }
}

/// What the header of a whole streamed value says ([`StreamCursor::entry_header`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryHeader {
    /// A collection streamed member-wise (version bit 0x4000).
    pub memberwise: bool,
    /// Where the content starts (after byte count, version and a checksum).
    pub content: usize,
    /// Whether the header had a byte count (else it was a bare version).
    pub byte_count: bool,
}

/// A reader of streamed bytes (one entry's, or a basket's run of them).
#[derive(Debug)]
pub struct StreamCursor<'a> {
    r: BeReader<'a>,
}

impl<'a> StreamCursor<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        StreamCursor {
            r: BeReader::new(data, 0, "streamed value"),
        }
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.r.remaining()
    }

    /// A value running past the entry's end is corrupt data (the entry's size is known).
    fn past_end(&self, n: usize) -> Error {
        Error::corrupt(
            "streamed value",
            format!(
                "{n} bytes wanted at byte {} of an entry of {} bytes",
                self.r.pos(),
                self.r.pos() + self.r.remaining()
            ),
        )
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.r.remaining() {
            return Err(self.past_end(n));
        }
        self.r.bytes(n)
    }

    fn u32(&mut self) -> Result<u32> {
        if self.r.remaining() < 4 {
            return Err(self.past_end(4));
        }
        self.r.u32()
    }

    /// A string's bytes: a one-byte length (or 255 and a four-byte length), then the
    /// characters (`std::string`, `TString` and `/C` leaves share this layout).
    pub fn string(&mut self) -> Result<&'a [u8]> {
        let at = self.r.pos();
        self.r.tstring_bytes().map_err(|_| {
            Error::corrupt(
                "streamed value",
                format!("a string at byte {at} runs past the entry's end"),
            )
        })
    }

    fn count(&mut self) -> Result<usize> {
        let n = self.u32()?;
        let n = i32::from_be_bytes(n.to_be_bytes());
        usize::try_from(n)
            .map_err(|_| Error::corrupt("streamed value", format!("a collection of {n} items")))
    }

    /// A header: byte count and version (and checksum after version 0). Returns where the
    /// value ends, if the byte count said so. A collection streamed member-wise is refused.
    fn header(&mut self) -> Result<Option<usize>> {
        let (end, memberwise) = self.header_of_collection()?;
        if memberwise {
            return Err(Error::Unsupported(
                "an object streamed member-wise outside a collection".to_string(),
            ));
        }
        Ok(end)
    }

    /// The header of the whole object or collection an entry holds (a byte count, then
    /// a version, checksum or member-wise mark, as a collection's header); its byte count, if it has
    /// one, must end with the entry. Returns whether it is streamed member-wise, where
    /// its content starts and whether it had a byte count.
    pub fn entry_header(entry: &[u8]) -> Result<EntryHeader> {
        let mut cursor = StreamCursor::new(entry);
        let (end, memberwise) = cursor.header_of_collection()?;
        if let Some(end) = end.filter(|&e| e != entry.len()) {
            return Err(Error::corrupt(
                "streamed value",
                format!("its byte count ends at {end}, the entry at {}", entry.len()),
            ));
        }
        Ok(EntryHeader {
            memberwise,
            content: cursor.r.pos(),
            byte_count: end.is_some(),
        })
    }

    /// Like [`header`](Self::header), also saying whether the collection that follows is
    /// streamed member-wise (version bit 0x4000: its items' class version and checksum
    /// follow, then the count, then each member for all items in turn).
    fn header_of_collection(&mut self) -> Result<(Option<usize>, bool)> {
        let first = self.u32()?;
        if first & 0x4000_0000 == 0 {
            // No byte count: a bare version.
            self.r.set_pos(self.r.pos() - 4)?;
            let v = self.take(2)?;
            if v == [0, 0] {
                self.u32()?;
            }
            return Ok((None, false));
        }
        let count = (first & !0x4000_0000) as usize;
        let end = self.r.pos() + count;
        if count > self.r.remaining() {
            return Err(Error::corrupt(
                "streamed value",
                format!("a byte count of {count} runs past the entry's end"),
            ));
        }
        let v = self.take(2)?;
        let memberwise = v[0] & 0x40 != 0;
        if v == [0, 0] {
            self.u32()?;
        }
        Ok((Some(end), memberwise))
    }

    fn check_end(&self, end: Option<usize>) -> Result<()> {
        match end {
            Some(e) if e != self.r.pos() => Err(Error::corrupt(
                "streamed value",
                format!(
                    "its byte count ends at {e}, its content at {}",
                    self.r.pos()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Decodes one value of type `t` into `out` (see the module documentation for when a
    /// header is present).
    pub fn decode(&mut self, t: &Streamed, out: &mut Builder, header: bool) -> Result<()> {
        match (t, out) {
            (Streamed::Prim(p), out) => self.prims(*p, 1, out),
            (Streamed::TString, Builder::Str(offsets, bytes)) => {
                bytes.extend_from_slice(self.string()?);
                offsets.push(bytes.len() as i64);
                Ok(())
            }
            (Streamed::String, Builder::Str(offsets, bytes)) => {
                let end = if header { self.header()? } else { None };
                bytes.extend_from_slice(self.string()?);
                offsets.push(bytes.len() as i64);
                self.check_end(end)
            }
            (Streamed::Vector(_, item), Builder::List(offsets, items)) => {
                let (end, memberwise) = if header {
                    self.header_of_collection()?
                } else {
                    (None, false)
                };
                let n = if memberwise {
                    self.memberwise(item, items)?
                } else {
                    let n = self.count()?;
                    match item.as_ref() {
                        // Objects of a class (or std::arrays) streamed object-wise: each
                        // by its class's streamer, behind its header.
                        Streamed::Object(c)
                            if matches!(c.kind, ClassKind::Class | ClassKind::StdArray) =>
                        {
                            if n > self.remaining() {
                                return Err(Error::corrupt(
                                    "streamed value",
                                    format!("{n} items in {} bytes", self.remaining()),
                                ));
                            }
                            for _ in 0..n {
                                self.decode(item, items, true)?;
                            }
                        }
                        _ => self.items(item, n, items)?,
                    }
                    n
                };
                let last = offsets.last().copied().unwrap_or(0);
                offsets.push(last + n as i64);
                self.check_end(end)
            }
            (Streamed::Array(item, n), Builder::Fixed(_, items)) => self.items(item, *n, items),
            (Streamed::Bitset(bits), Builder::Fixed(_, values)) => {
                let end = if header { self.header()? } else { None };
                let n = self.count()?;
                if n != *bits {
                    return Err(Error::corrupt(
                        "streamed value",
                        format!("a std::bitset<{bits}> streamed with {n} bits"),
                    ));
                }
                self.prims(LeafType::Bool, n, values)?;
                self.check_end(end)
            }
            (Streamed::Object(c), Builder::Struct(fields, len)) if c.kind == ClassKind::TObject => {
                self.tobject(fields)?;
                *len += 1;
                Ok(())
            }
            (Streamed::Object(c), Builder::Struct(fields, len)) => {
                let end = if header { self.header()? } else { None };
                let mut i = 0;
                for b in &c.bases {
                    self.decode(&Streamed::Object(b.clone()), &mut fields[i], true)?;
                    i += 1;
                }
                let first_member = i;
                for (_, m) in &c.members {
                    if let Streamed::Counted(t, count) = m {
                        let at = fields[first_member + count].len().checked_sub(1);
                        let n = at.and_then(|k| fields[first_member + count].integer_at(k));
                        self.counted_array(*t, n, &mut fields[i])?;
                    } else {
                        self.decode(m, &mut fields[i], true)?;
                    }
                    i += 1;
                }
                *len += 1;
                self.check_end(end)
            }
            (Streamed::Counted(..), _) => Err(Error::InvalidArgument(
                "a counted array outside its class".to_string(),
            )),
            _ => Err(Error::InvalidArgument(
                "a builder of another shape than its type".to_string(),
            )),
        }
    }

    /// A counted array of `n` values of `t` (`n` from its length member): a byte saying
    /// whether the array follows (0 for a null pointer), then the values.
    pub fn counted_array(&mut self, t: LeafType, n: Option<i64>, out: &mut Builder) -> Result<()> {
        let Builder::List(offsets, items) = out else {
            return Err(Error::InvalidArgument(
                "a counted array's builder is no list".to_string(),
            ));
        };
        let n = n.and_then(|n| usize::try_from(n).ok()).ok_or_else(|| {
            Error::corrupt(
                "streamed value",
                "a counted array's length is negative or missing",
            )
        })?;
        let present = self.take(1)?[0] != 0;
        let n = if present { n } else { 0 };
        self.prims(t, n, items)?;
        let last = offsets.last().copied().unwrap_or(0);
        offsets.push(last + n as i64);
        Ok(())
    }

    /// A `TObject` (its own streamer: always its version, then `fUniqueID` and `fBits`).
    fn tobject(&mut self, fields: &mut [Builder]) -> Result<()> {
        let end = self.header()?;
        let unique_id = self.u32()?;
        let bits = self.u32()?;
        if bits & TOBJECT_IS_REFERENCED != 0 {
            return Err(Error::Unsupported(
                "a referenced TObject (kIsReferenced, as TRef makes it): ROOT's RNTuple does \
                 not store its process id"
                    .to_string(),
            ));
        }
        let [id_out, bits_out] = fields else {
            return Err(Error::InvalidArgument(
                "a TObject builder without its two members".to_string(),
            ));
        };
        append_prims(LeafType::UInt, &unique_id.to_be_bytes(), id_out)?;
        append_prims(
            LeafType::UInt,
            &(bits & !TOBJECT_ALLOCATION_BITS).to_be_bytes(),
            bits_out,
        )?;
        self.check_end(end)
    }

    /// The items of a collection of objects streamed member-wise: the items' class version
    /// (and checksum after version 0), the count, then each member of every item in turn
    /// (fundamentals back to back; strings and collections behind one header; objects each
    /// with its header).
    fn memberwise(&mut self, item: &Streamed, out: &mut Builder) -> Result<usize> {
        let (Streamed::Object(c), Builder::Struct(fields, len)) = (item, out) else {
            return Err(Error::corrupt(
                "streamed value",
                "a collection of no objects streamed member-wise",
            ));
        };
        if self.take(2)? == [0, 0] {
            self.u32()?;
        }
        let n = self.count()?;
        if n == 0 {
            // No items: no members follow (not even the collections' headers).
            return Ok(0);
        }
        if n > self.remaining() {
            return Err(Error::corrupt(
                "streamed value",
                format!("{n} items in {} bytes", self.remaining()),
            ));
        }
        self.members_of_items(c, n, fields)?;
        *len += n;
        Ok(n)
    }

    /// The members of `n` objects of class `c` streamed member-wise, into one builder per
    /// base and member. A base's members come member-wise too (no header of its own),
    /// but `TObject`'s streamer streams each item whole.
    fn members_of_items(
        &mut self,
        c: &ClassLayout,
        n: usize,
        fields: &mut [Builder],
    ) -> Result<()> {
        let mut i = 0;
        for b in &c.bases {
            match (&mut fields[i], b.kind) {
                (Builder::Struct(base_fields, base_len), ClassKind::TObject) => {
                    for _ in 0..n {
                        self.tobject(base_fields)?;
                    }
                    *base_len += n;
                }
                (Builder::Struct(base_fields, base_len), _) => {
                    self.members_of_items(b, n, base_fields)?;
                    *base_len += n;
                }
                _ => {
                    return Err(Error::InvalidArgument(
                        "a base class's builder is no record".to_string(),
                    ))
                }
            }
            i += 1;
        }
        let first_member = i;
        for (_, m) in &c.members {
            match m {
                // Each item's flag and values, its length from the item's length member.
                Streamed::Counted(t, count) => {
                    for j in 0..n {
                        let lengths = &fields[first_member + count];
                        let at = (lengths.len() + j).checked_sub(n);
                        let len = at.and_then(|k| lengths.integer_at(k));
                        self.counted_array(*t, len, &mut fields[i])?;
                    }
                }
                // Fundamentals and arrays of them, TStrings: back to back.
                Streamed::Prim(_) | Streamed::Array(..) | Streamed::TString => {
                    self.items(m, n, &mut fields[i])?;
                }
                // Strings, collections and bitsets: one header, then the items' values.
                Streamed::String | Streamed::Vector(..) | Streamed::Bitset(_) => {
                    self.items_with_header(m, n, &mut fields[i])?;
                }
                // Objects: each with its header.
                Streamed::Object(_) => {
                    for _ in 0..n {
                        self.decode(m, &mut fields[i], true)?;
                    }
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// `n` values of type `t` back to back without headers (vector items, array elements,
    /// the elements of a split collection member).
    pub fn items(&mut self, t: &Streamed, n: usize, out: &mut Builder) -> Result<()> {
        if let Streamed::Prim(p) = t {
            return self.prims(*p, n, out);
        }
        if n > self.remaining() {
            return Err(Error::corrupt(
                "streamed value",
                format!("{n} items in {} bytes", self.remaining()),
            ));
        }
        for _ in 0..n {
            self.decode(t, out, false)?;
        }
        Ok(())
    }

    /// Like [`items`](Self::items) behind one header (a split collection's STL member, a
    /// member of the items of a collection streamed member-wise). Behind a header marked
    /// member-wise, collections of objects come member-wise: the items' class version
    /// once, then each collection's count and its items' members in turn.
    pub fn items_with_header(&mut self, t: &Streamed, n: usize, out: &mut Builder) -> Result<()> {
        let (end, memberwise) = self.header_of_collection()?;
        if memberwise {
            self.memberwise_collections(t, n, out)?;
        } else {
            self.items(t, n, out)?;
        }
        self.check_end(end)
    }

    /// `n` collections of objects streamed member-wise behind one header (a collection
    /// member of the items of a collection streamed member-wise, such as
    /// `std::vector<std::array<short,2>>` in `std::vector<C>`): the items' class version
    /// (and checksum after version 0) once, then each collection's count and its items'
    /// members in turn.
    fn memberwise_collections(&mut self, t: &Streamed, n: usize, out: &mut Builder) -> Result<()> {
        let (Streamed::Vector(_, item), Builder::List(offsets, items)) = (t, out) else {
            return Err(Error::corrupt(
                "streamed value",
                "values of no collection streamed member-wise",
            ));
        };
        let (Streamed::Object(c), Builder::Struct(fields, len)) = (item.as_ref(), items.as_mut())
        else {
            return Err(Error::corrupt(
                "streamed value",
                "a collection of no objects streamed member-wise",
            ));
        };
        if self.take(2)? == [0, 0] {
            self.u32()?;
        }
        if n > self.remaining() {
            return Err(Error::corrupt(
                "streamed value",
                format!("{n} collections in {} bytes", self.remaining()),
            ));
        }
        for _ in 0..n {
            let count = self.count()?;
            if count > self.remaining() {
                return Err(Error::corrupt(
                    "streamed value",
                    format!("{count} items in {} bytes", self.remaining()),
                ));
            }
            if count > 0 {
                self.members_of_items(c, count, fields)?;
                *len += count;
            }
            let last = offsets.last().copied().unwrap_or(0);
            offsets.push(last + count as i64);
        }
        Ok(())
    }

    fn prims(&mut self, p: LeafType, n: usize, out: &mut Builder) -> Result<()> {
        let size = p.disk_size();
        let bytes = self.take(
            n.checked_mul(size)
                .ok_or_else(|| Error::corrupt("streamed value", "a huge array"))?,
        )?;
        append_prims(p, bytes, out)
    }
}

/// Appends big-endian values of `p` to a builder.
fn append_prims(p: LeafType, bytes: &[u8], out: &mut Builder) -> Result<()> {
    match out {
        Builder::Prim(_, v) => {
            p.append_be(v, bytes);
            Ok(())
        }
        _ => Err(Error::InvalidArgument(
            "numbers for a builder of another shape".to_string(),
        )),
    }
}

impl Builder {
    /// The number of values built.
    pub fn len(&self) -> usize {
        match self {
            Builder::Prim(_, v) => v.len(),
            Builder::Str(o, _) | Builder::List(o, _) => o.len() - 1,
            Builder::Fixed(n, items) => items.len() / (*n).max(1),
            Builder::Struct(_, n) => *n,
        }
    }

    /// Whether no value was built.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The integer value at `index` of a builder of integers.
    pub fn integer_at(&self, index: usize) -> Option<i64> {
        let Builder::Prim(_, values) = self else {
            return None;
        };
        match values {
            ColumnValues::I8(v) => v.get(index).map(|&x| i64::from(x)),
            ColumnValues::U8(v) => v.get(index).map(|&x| i64::from(x)),
            ColumnValues::I16(v) => v.get(index).map(|&x| i64::from(x)),
            ColumnValues::U16(v) => v.get(index).map(|&x| i64::from(x)),
            ColumnValues::I32(v) => v.get(index).map(|&x| i64::from(x)),
            ColumnValues::U32(v) => v.get(index).map(|&x| i64::from(x)),
            ColumnValues::I64(v) => v.get(index).copied(),
            ColumnValues::U64(v) => v.get(index).and_then(|&x| i64::try_from(x).ok()),
            _ => None,
        }
    }

    /// The Arrow array of the values, shaped like `target` (whose child fields name the
    /// items and members).
    pub fn finish(self, target: &Field) -> Result<ArrayRef> {
        let mismatch = || {
            Error::InvalidArgument(format!(
                "values built for field \"{}\" do not have its type {}",
                target.name(),
                target.data_type()
            ))
        };
        Ok(match (self, target.data_type()) {
            (Builder::Prim(_, v), _) => {
                let a = leaf_array(v)?;
                if a.data_type() != target.data_type() {
                    return Err(mismatch());
                }
                a
            }
            (Builder::Str(offsets, bytes), DataType::LargeUtf8) => Arc::new(
                LargeStringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    bytes.into(),
                    None,
                )
                .map_err(|e| {
                    Error::Unsupported(format!(
                        "strings of field \"{}\" that are not UTF-8: {e}",
                        target.name()
                    ))
                })?,
            ),
            (Builder::List(offsets, items), DataType::LargeList(item)) => {
                let values = items.finish(item)?;
                Arc::new(LargeListArray::try_new(
                    item.clone(),
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    values,
                    None,
                )?)
            }
            (Builder::List(offsets, items), DataType::Map(entries, sorted)) => {
                map_array(entries, &items.finish(entries)?, &offsets, *sorted)?
            }
            (Builder::Fixed(n, items), DataType::FixedSizeList(item, size)) => {
                if usize::try_from(*size).ok() != Some(n) {
                    return Err(mismatch());
                }
                let values = items.finish(item)?;
                Arc::new(FixedSizeListArray::try_new(
                    item.clone(),
                    *size,
                    values,
                    None,
                )?)
            }
            // A std::array object (its one member, `_M_elems`): the array itself.
            (Builder::Struct(mut members, n), DataType::FixedSizeList(..))
                if members.len() == 1 && matches!(members[0], Builder::Fixed(..)) =>
            {
                let elems = members.remove(0);
                if elems.len() != n {
                    return Err(mismatch());
                }
                elems.finish(target)?
            }
            (Builder::Struct(members, n), DataType::Struct(fields)) => {
                if members.len() != fields.len() {
                    return Err(mismatch());
                }
                let arrays = members
                    .into_iter()
                    .zip(fields.iter())
                    .map(|(b, f)| b.finish(f))
                    .collect::<Result<Vec<_>>>()?;
                if arrays.is_empty() {
                    Arc::new(StructArray::new_empty_fields(n, None))
                } else {
                    Arc::new(StructArray::try_new(fields.clone(), arrays, None)?)
                }
            }
            _ => return Err(mismatch()),
        })
    }
}
