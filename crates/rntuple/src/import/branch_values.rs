//! A field's values built from the chunks of its branches read over a range of
//! entries, as the plan's [`FieldSource`] says: leaves' values, C strings, leaf lists,
//! streamed values decoded (or kept whole, as a streamer field stores them), split
//! objects joined, and arrays sharing a count leaf gathered into collections.

use super::plan::*;
use crate::encoding::ColumnValues;
use crate::error::{Error, Result};
use crate::ttree::{
    encode, leaf_array, with_class_header, BranchChunk, Builder, LeafType, StreamCursor, Streamed,
    TOBJECT_ALLOCATION_BITS,
};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, LargeBinaryArray, LargeListArray, StructArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};
use std::sync::Arc;

/// Builds one field's array from the chunks read.
pub(super) fn fill(
    field_source: &FieldSource,
    chunks: &[BranchChunk],
    plan: &ConversionPlan,
    target: &Field,
) -> Result<ArrayRef> {
    let what = |branch: usize| format!("branch \"{}\"", plan.branches[branch].name);
    match field_source {
        FieldSource::Leaf { branch, values } => {
            let chunk = &chunks[*branch];
            if chunk.offsets.is_some() || chunk.data.len() != chunk.entries * values.bytes() {
                return Err(Error::corrupt(
                    what(*branch),
                    format!(
                        "{} bytes for {} entries of {} bytes",
                        chunk.data.len(),
                        chunk.entries,
                        values.bytes()
                    ),
                ));
            }
            shape(values.ty.decode(&chunk.data, &what(*branch))?, target)
        }
        FieldSource::CString { branch } => c_strings(&chunks[*branch], &what(*branch)),
        FieldSource::Streamed { .. }
        | FieldSource::Split(_)
        | FieldSource::SplitCollection { .. } => build(field_source, chunks, plan)?.finish(target),
        FieldSource::Restreamed {
            source,
            ty,
            collection,
        } => {
            let values = build(source, chunks, plan)?;
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i64);
            let mut bytes = Vec::new();
            for i in 0..values.len() {
                encode(ty, &values, i, !collection, &mut bytes)?;
                push_offset(&mut offsets, &bytes)?;
            }
            binary_column(offsets, bytes)
        }
        FieldSource::Opaque {
            branch,
            framing,
            named,
            ty,
        } => {
            let chunk = &chunks[*branch];
            let mut offsets = Vec::with_capacity(chunk.entries + 1);
            offsets.push(0i64);
            let mut bytes = Vec::new();
            for i in 0..chunk.entries {
                let at = |e: Error| e.at(entry_location(&what(*branch), i));
                let mut entry = chunk.entry(i);
                if let Some(class) = named {
                    entry = named_object(entry, class).map_err(at)?;
                }
                match framing {
                    Framing::Same => bytes.extend_from_slice(whole_object(entry).map_err(at)?),
                    Framing::CollectionHeader => {
                        collection_content(entry, ty.as_ref(), &mut bytes).map_err(at)?;
                    }
                    Framing::MembersOnly { version, checksum } => {
                        with_class_header(*version, *checksum, entry, &mut bytes).map_err(at)?;
                    }
                }
                push_offset(&mut offsets, &bytes)
                    .map_err(|e| e.at(entry_location(&what(*branch), i)))?;
            }
            binary_column(offsets, bytes)
        }
        FieldSource::LeafList { branch, members } => {
            let chunk = &chunks[*branch];
            let entry_bytes: usize = members.iter().map(|(_, v)| v.bytes()).sum();
            if chunk.offsets.is_some() || chunk.data.len() != chunk.entries * entry_bytes {
                return Err(Error::corrupt(
                    what(*branch),
                    format!(
                        "{} bytes for {} entries of {entry_bytes} bytes",
                        chunk.data.len(),
                        chunk.entries
                    ),
                ));
            }
            let DataType::Struct(fields) = target.data_type() else {
                return Err(Error::InvalidArgument("a leaf list is not a record".into()));
            };
            let mut at = 0;
            let mut arrays = Vec::with_capacity(members.len());
            for ((_, values), field) in members.iter().zip(fields.iter()) {
                // Each member decoded straight from its place in every entry.
                let size = values.bytes();
                let mut decoded = values.ty.values(chunk.entries * values.len)?;
                for entry in chunk.data.chunks_exact(entry_bytes) {
                    values.ty.append_be(&mut decoded, &entry[at..at + size]);
                }
                at += size;
                arrays.push(shape(leaf_array(decoded)?, field)?);
            }
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                arrays,
                None,
            )?))
        }
        FieldSource::Collection {
            count,
            count_type,
            arrays,
        } => {
            let counts = decode_counts(&chunks[*count], *count_type, &what(*count))?;
            let (offsets, _) = offsets_of(&counts, &what(*count))?;
            let DataType::LargeList(item) = target.data_type() else {
                return Err(Error::InvalidArgument("a collection is not a list".into()));
            };
            let DataType::Struct(fields) = item.data_type() else {
                return Err(Error::InvalidArgument(
                    "a collection item is not a record".into(),
                ));
            };
            let mut members = Vec::with_capacity(arrays.len());
            for ((_, branch, values), field) in arrays.iter().zip(fields.iter()) {
                let chunk = &chunks[*branch];
                check_array_sizes(chunk, &counts, values.bytes(), &what(*branch))?;
                members.push(shape(
                    values.ty.decode(&chunk.data, &what(*branch))?,
                    field,
                )?);
            }
            let items = StructArray::try_new(fields.clone(), members, None)?;
            Ok(Arc::new(LargeListArray::try_new(
                item.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Arc::new(items),
                None,
            )?))
        }
    }
}

/// Appends the end of the value just written to `bytes` to a binary column's offsets.
pub(super) fn push_offset(offsets: &mut Vec<i64>, bytes: &[u8]) -> Result<()> {
    offsets.push(
        i64::try_from(bytes.len())
            .map_err(|_| Error::InvalidArgument("more bytes than an offset holds".to_string()))?,
    );
    Ok(())
}

/// A binary column (a streamer field's values) of `offsets` into `bytes`.
pub(super) fn binary_column(offsets: Vec<i64>, bytes: Vec<u8>) -> Result<ArrayRef> {
    Ok(Arc::new(LargeBinaryArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        bytes.into(),
        None,
    )?))
}

/// The values of a field streamed in the TTree (`Streamed`, `Split`, `SplitCollection`),
/// decoded.
pub(super) fn build(
    field_source: &FieldSource,
    chunks: &[BranchChunk],
    plan: &ConversionPlan,
) -> Result<Builder> {
    let what = |branch: usize| format!("branch \"{}\"", plan.branches[branch].name);
    match field_source {
        FieldSource::Streamed {
            branch,
            ty,
            header,
            named,
        } => {
            let chunk = &chunks[*branch];
            let mut out = Builder::new(ty);
            for i in 0..chunk.entries {
                let entry = match named {
                    Some(class) => named_object(chunk.entry(i), class)
                        .map_err(|e| e.at(entry_location(&what(*branch), i)))?,
                    None => chunk.entry(i),
                };
                let mut cursor = StreamCursor::new(entry);
                cursor
                    .decode(ty, &mut out, *header)
                    .and_then(|()| entry_consumed(&cursor))
                    .map_err(|e| e.at(entry_location(&what(*branch), i)))?;
            }
            Ok(out)
        }
        FieldSource::Split(node) => {
            let entries = chunks.first().map_or(0, |c| c.entries);
            split_values(node, chunks, plan, None, entries)
        }
        FieldSource::SplitCollection { count, items } => {
            let counts = decode_counts(&chunks[*count], LeafType::Int, &what(*count))?;
            let (offsets, total) = offsets_of(&counts, &what(*count))?;
            let items = split_values(items, chunks, plan, Some(&counts), total)?;
            Ok(Builder::List(offsets, Box::new(items)))
        }
        _ => Err(Error::InvalidArgument(
            "a field whose values are not streamed".to_string(),
        )),
    }
}

/// The values of a split object (or of the items of a split collection, `counts` per
/// entry): one builder per member branch.
pub(super) fn split_values(
    node: &SplitNode,
    chunks: &[BranchChunk],
    plan: &ConversionPlan,
    counts: Option<&[u64]>,
    len: usize,
) -> Result<Builder> {
    match node {
        SplitNode::Object(members) => {
            let mut built: Vec<Builder> = Vec::with_capacity(members.len());
            for m in members {
                let values = match m {
                    SplitNode::Leaf {
                        branch,
                        ty: Streamed::Counted(t, _),
                        length_member: Some(at),
                        ..
                    } => {
                        let lengths = built.get(*at).ok_or_else(|| {
                            Error::InvalidArgument(
                                "a counted array before its length member".to_string(),
                            )
                        })?;
                        counted_values(*t, &chunks[*branch], lengths, counts, plan, *branch)?
                    }
                    _ => split_values(m, chunks, plan, counts, len)?,
                };
                built.push(values);
            }
            Ok(Builder::Struct(built, len))
        }
        SplitNode::Leaf {
            branch,
            ty,
            tobject_bits,
            ..
        } => {
            let chunk = &chunks[*branch];
            let what = format!("branch \"{}\"", plan.branches[*branch].name);
            let mut out = Builder::new(ty);
            // Values without a header: fundamentals, arrays of them, TStrings.
            let is_prim = matches!(
                ty,
                Streamed::Prim(_) | Streamed::Array(..) | Streamed::TString
            );
            // A split std::array's element branch (`_M_elems[N]`), which ROOT 6.40 fills
            // with empty entries (it cannot find the member when it builds the branch).
            let std_array_elements = matches!(ty, Streamed::Array(..))
                && plan.branches[*branch].name.contains("_M_elems[");
            for i in 0..chunk.entries {
                let entry = chunk.entry(i);
                let expected = counts.map_or(1, |c| c[i]);
                if std_array_elements && entry.is_empty() && expected > 0 {
                    return Err(Error::corrupt(
                        "streamed value",
                        format!(
                            "no values for {expected} std::array(s): ROOT 6.40 writes a \
                             split std::array, or a split collection of them, without the \
                             values"
                        ),
                    )
                    .at(entry_location(&what, i)));
                }
                let mut cursor = StreamCursor::new(entry);
                let result = match counts {
                    None => cursor.decode(ty, &mut out, true),
                    Some(c) => {
                        let n = crate::error::to_usize(c[i], "items")?;
                        if is_prim {
                            cursor.items(ty, n, &mut out)
                        } else if n == 0 && cursor.remaining() == 0 {
                            Ok(())
                        } else {
                            cursor.items_with_header(ty, n, &mut out)
                        }
                    }
                };
                result
                    .and_then(|()| entry_consumed(&cursor))
                    .map_err(|e| e.at(entry_location(&what, i)))?;
            }
            if out.len() != len {
                return Err(Error::corrupt(
                    what,
                    format!("{} values where {len} were expected", out.len()),
                ));
            }
            if *tobject_bits {
                if let Builder::Prim(_, ColumnValues::U32(bits)) = &mut out {
                    for b in bits.iter_mut() {
                        *b &= !TOBJECT_ALLOCATION_BITS;
                    }
                }
            }
            Ok(out)
        }
    }
}

/// The values of a split counted C array member (`T *x; //[n]`): per object (one per
/// entry, or `counts` per entry in a split collection) a byte saying whether values
/// follow, then as many as the object's length member (`lengths`) says.
pub(super) fn counted_values(
    t: LeafType,
    chunk: &BranchChunk,
    lengths: &Builder,
    counts: Option<&[u64]>,
    plan: &ConversionPlan,
    branch: usize,
) -> Result<Builder> {
    let what = format!("branch \"{}\"", plan.branches[branch].name);
    let mut out = Builder::new(&Streamed::Counted(t, 0));
    let mut object = 0usize;
    for i in 0..chunk.entries {
        let mut cursor = StreamCursor::new(chunk.entry(i));
        let objects = match counts {
            None => 1,
            Some(c) => crate::error::to_usize(c[i], "items")?,
        };
        for _ in 0..objects {
            let length = lengths.integer_at(object);
            cursor
                .counted_array(t, length, &mut out)
                .map_err(|e| e.at(entry_location(&what, i)))?;
            object += 1;
        }
        entry_consumed(&cursor).map_err(|e| e.at(entry_location(&what, i)))?;
    }
    Ok(out)
}

/// An object streamed whole by its class's streamer, checked as far as its bytes say:
/// a byte count, when it starts with one, must end where the entry ends.
pub(super) fn whole_object(entry: &[u8]) -> Result<&[u8]> {
    StreamCursor::entry_header(entry)?;
    Ok(entry)
}

/// A `TBranchObject` entry's object: after its class name (a length byte, the name, a
/// NUL). A missing object (no name) or an object of another class than the branch's is
/// refused.
pub(super) fn named_object<'a>(entry: &'a [u8], class: &str) -> Result<&'a [u8]> {
    let bad = |why: &str| Error::corrupt("object entry", why.to_string());
    let (&n, rest) = entry.split_first().ok_or_else(|| bad("an empty entry"))?;
    let n = usize::from(n);
    let name = rest
        .get(..n)
        .ok_or_else(|| bad("its class name runs past the entry"))?;
    if n == 0 || rest.get(n) != Some(&0) {
        return Err(bad("no class name before the object"));
    }
    if name != class.as_bytes() {
        return Err(Error::Unsupported(format!(
            "an object of class {} in a branch of class {class}",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(&rest[n + 1..])
}

/// Appends a whole STL collection's streamed bytes without their header (byte count,
/// version, checksum after version 0): the count and the items, as ROOT's streamer field
/// stores a collection. One streamed member-wise (items' members in turn) is decoded by
/// its layout `ty` and streamed again object-wise, as ROOT's streamer field reads
/// collections.
pub(super) fn collection_content(
    entry: &[u8],
    ty: Option<&Streamed>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let header = StreamCursor::entry_header(entry)?;
    if !header.byte_count {
        return Err(Error::corrupt(
            "streamed collection",
            "no byte count before the collection",
        ));
    }
    if !header.memberwise {
        out.extend_from_slice(&entry[header.content..]);
        return Ok(());
    }
    let ty = ty.ok_or_else(|| {
        Error::Unsupported(
            "a collection streamed member-wise, of classes the file does not describe".to_string(),
        )
    })?;
    let mut values = Builder::new(ty);
    let mut cursor = StreamCursor::new(entry);
    cursor.decode(ty, &mut values, true)?;
    entry_consumed(&cursor)?;
    encode(ty, &values, 0, false, out)
}

pub(super) fn entry_consumed(cursor: &StreamCursor<'_>) -> Result<()> {
    if cursor.remaining() != 0 {
        return Err(Error::corrupt(
            "streamed value",
            format!("{} bytes are left after the value", cursor.remaining()),
        ));
    }
    Ok(())
}

pub(super) fn entry_location(what: &str, entry: usize) -> crate::error::Location {
    crate::error::Location {
        structure: Some(format!("{what}, entry {entry} of the chunk")),
        ..Default::default()
    }
}

/// Wraps flat values into the fixed-size lists `target` has (`std::array` fields).
pub(super) fn shape(values: ArrayRef, target: &Field) -> Result<ArrayRef> {
    match target.data_type() {
        DataType::FixedSizeList(item, n) => {
            let inner = shape(values, item)?;
            let n_usize = usize::try_from(*n).unwrap_or(0).max(1);
            if inner.len() % n_usize != 0 {
                return Err(Error::InvalidArgument(format!(
                    "{} values do not fill arrays of {n}",
                    inner.len()
                )));
            }
            Ok(Arc::new(FixedSizeListArray::try_new(
                item.clone(),
                *n,
                inner,
                None,
            )?))
        }
        _ => {
            if !values.is_empty() && values.data_type() != target.data_type() {
                return Err(Error::InvalidArgument(format!(
                    "values of type {} for a field of type {}",
                    values.data_type(),
                    target.data_type()
                )));
            }
            Ok(values)
        }
    }
}

/// List offsets (from 0) and the number of items of lists of `counts` items.
pub(super) fn offsets_of(counts: &[u64], what: &str) -> Result<(Vec<i64>, usize)> {
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    offsets.push(0i64);
    let mut total = 0u64;
    for &c in counts {
        total += c;
        offsets.push(
            i64::try_from(total)
                .map_err(|_| Error::corrupt(what.to_string(), "counts add up past 2^63"))?,
        );
    }
    Ok((
        offsets,
        crate::error::to_usize(total, "items of a collection")?,
    ))
}

/// Element counts from a count leaf's values.
pub(super) fn decode_counts(chunk: &BranchChunk, ty: LeafType, what: &str) -> Result<Vec<u64>> {
    let size = ty.disk_size();
    // (A split collection's count branch has an entry-offset table, of equal entries.)
    if chunk.data.len() != chunk.entries * size {
        return Err(Error::corrupt(
            what.to_string(),
            format!("{} bytes for {} counts", chunk.data.len(), chunk.entries),
        ));
    }
    let signed = matches!(
        ty,
        LeafType::Char | LeafType::Short | LeafType::Int | LeafType::Long64
    );
    chunk
        .data
        .chunks_exact(size)
        .map(|c| {
            let mut v: i128 = 0;
            for &b in c {
                v = (v << 8) | i128::from(b);
            }
            if signed && c[0] & 0x80 != 0 {
                v -= 1i128 << (8 * size);
            }
            u64::try_from(v)
                .ok()
                .filter(|&n| n <= u64::from(u32::MAX))
                .ok_or_else(|| Error::corrupt(what.to_string(), format!("a count of {v}")))
        })
        .collect()
}

/// Checks that each entry of an array branch holds `count × bytes` bytes.
pub(super) fn check_array_sizes(
    chunk: &BranchChunk,
    counts: &[u64],
    bytes: usize,
    what: &str,
) -> Result<()> {
    let bytes = bytes as u64;
    let sizes_match = match &chunk.offsets {
        Some(o) => counts
            .iter()
            .enumerate()
            .all(|(i, &c)| (o[i + 1] - o[i]) as u64 == c * bytes),
        None => counts.iter().all(|&c| c * bytes == 0),
    };
    if !sizes_match || counts.len() != chunk.entries {
        return Err(Error::corrupt(
            what.to_string(),
            "its entries' sizes disagree with its count leaf",
        ));
    }
    Ok(())
}

/// C strings (`/C` leaves): per entry a one-byte length (or 255 and a four-byte length),
/// then the characters; nothing for an empty string.
pub(super) fn c_strings(chunk: &BranchChunk, what: &str) -> Result<ArrayRef> {
    let mut offsets = Vec::with_capacity(chunk.entries + 1);
    let mut values = Vec::with_capacity(chunk.data.len());
    offsets.push(0i64);
    for i in 0..chunk.entries {
        let entry = chunk.entry(i);
        // ROOT stores an empty string as no bytes at all.
        if !entry.is_empty() {
            let mut cursor = StreamCursor::new(entry);
            let body = cursor
                .string()
                .and_then(|b| entry_consumed(&cursor).map(|()| b))
                .map_err(|e| e.at(entry_location(what, i)))?;
            values.extend_from_slice(body);
        }
        offsets.push(values.len() as i64);
    }
    Ok(Arc::new(LargeBinaryArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values.into(),
        None,
    )?))
}
