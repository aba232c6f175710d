//! Arrow arrays that more than one layer assembles (the RNTuple reader `read`, the TTree
//! reader `ttree`, `schema`'s values): a bottom layer naming nothing of the crate but
//! its errors.

use crate::error::{Error, Result};
use arrow_array::{Array, ArrayRef, MapArray, StructArray, UnionArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, UnionFields};
use std::sync::Arc;

/// The Arrow map of `pairs` (a record array of key and value, whatever its members'
/// names) cut into entries by 64-bit `offsets` (one more than entries), its entries
/// named as `entries` (the map type's entries field: a struct of `key` and `value`).
pub(crate) fn map_array(
    entries: &FieldRef,
    pairs: &ArrayRef,
    offsets: &[i64],
    sorted: bool,
) -> Result<ArrayRef> {
    let DataType::Struct(members) = entries.data_type() else {
        return Err(Error::corrupt("schema", "map entries must be a struct"));
    };
    let pairs = pairs
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::corrupt("schema", "map item is not a record"))?;
    let pairs = StructArray::try_new(members.clone(), pairs.columns().to_vec(), None)?;
    // A map's offsets are 32-bit in Arrow.
    let offsets = offsets
        .iter()
        .map(|&o| i32::try_from(o))
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| {
            Error::Unsupported("a map column with more than 2^31 items in one read".into())
        })?;
    Ok(Arc::new(MapArray::try_new(
        entries.clone(),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        pairs,
        None,
        sorted,
    )?))
}

/// The dense union of `children` (one per member of `fields`, in order): entry `i` is
/// item `offsets[i]` of the child of type id `type_ids[i]`.
pub(crate) fn dense_union(
    fields: UnionFields,
    type_ids: Vec<i8>,
    offsets: Vec<i32>,
    children: Vec<ArrayRef>,
) -> Result<ArrayRef> {
    Ok(Arc::new(UnionArray::try_new(
        fields,
        type_ids.into(),
        Some(offsets.into()),
        children,
    )?))
}
