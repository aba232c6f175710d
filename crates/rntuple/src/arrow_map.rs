//! Arrow arrays that both readers assemble, the RNTuple reader (`read`) and the TTree
//! reader (`ttree`): a bottom layer naming nothing of the crate but its errors.

use crate::error::{Error, Result};
use arrow_array::{Array, ArrayRef, MapArray, StructArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef};
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
