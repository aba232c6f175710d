//! Converting decoded column values into a field's in-memory type, as ROOT does when a
//! field is stored in another (allowed) column type: integers are range-checked, reals
//! widened or narrowed like a C++ cast.

use crate::encoding::{f64_to_f32, ColumnValues};
use crate::error::{Error, Result};
use arrow_array::BooleanArray;
use arrow_buffer::BooleanBuffer;

fn mismatch(what: &str, values: &ColumnValues) -> Error {
    Error::corrupt(
        "column type",
        format!(
            "a {what} field cannot be read from a {} column",
            values.kind()
        ),
    )
}

/// Values of an integer column as `T`, each checked to fit.
pub(crate) fn to_ints<T>(values: &ColumnValues) -> Result<Vec<T>>
where
    T: TryFrom<i128> + Copy,
{
    fn conv<S: Copy + Into<i128>, T: TryFrom<i128>>(v: &[S]) -> Result<Vec<T>> {
        v.iter()
            .map(|&x| {
                let wide: i128 = x.into();
                T::try_from(wide).map_err(|_| {
                    Error::corrupt(
                        "column value",
                        format!("{wide} does not fit the field's integer type"),
                    )
                })
            })
            .collect()
    }
    match values {
        ColumnValues::Bool(v) => conv(&v.iter().map(|&b| b as u8).collect::<Vec<_>>()),
        ColumnValues::I8(v) => conv(v),
        ColumnValues::U8(v) => conv(v),
        ColumnValues::I16(v) => conv(v),
        ColumnValues::U16(v) => conv(v),
        ColumnValues::I32(v) => conv(v),
        ColumnValues::U32(v) => conv(v),
        ColumnValues::I64(v) => conv(v),
        ColumnValues::U64(v) => conv(v),
        other => Err(mismatch("integer", other)),
    }
}

/// Values of a Bit column (or an integer column, nonzero meaning true).
pub(crate) fn to_boolean(values: &ColumnValues) -> Result<BooleanArray> {
    match values {
        ColumnValues::Bool(v) => Ok(bool_array(v)),
        other => {
            let ints = to_ints::<i64>(other).map_err(|_| mismatch("bool", other))?;
            Ok(BooleanArray::new(
                BooleanBuffer::collect_bool(ints.len(), |i| ints[i] != 0),
                None,
            ))
        }
    }
}

/// A boolean array from booleans, packed 64 at a time (`BooleanArray::from` appends bit by
/// bit).
pub(crate) fn bool_array(v: &[bool]) -> BooleanArray {
    BooleanArray::new(BooleanBuffer::collect_bool(v.len(), |i| v[i]), None)
}

/// Values of a real column as `float`.
pub(crate) fn to_f32(values: &ColumnValues) -> Result<Vec<f32>> {
    match values {
        ColumnValues::F32(v) => Ok(v.clone()),
        ColumnValues::F64(v) => Ok(v.iter().map(|&x| f64_to_f32(x)).collect()),
        other => Err(mismatch("float", other)),
    }
}

/// Values of a real column as `double`.
pub(crate) fn to_f64(values: &ColumnValues) -> Result<Vec<f64>> {
    match values {
        ColumnValues::F32(v) => Ok(v.iter().map(|&x| x as f64).collect()),
        ColumnValues::F64(v) => Ok(v.clone()),
        other => Err(mismatch("double", other)),
    }
}

/// Values of an index column (cluster-local collection end offsets).
pub(crate) fn to_offsets(values: ColumnValues) -> Result<Vec<u64>> {
    match values {
        ColumnValues::Index(v) => Ok(v),
        other => Err(Error::corrupt(
            "column type",
            format!("a collection needs an index column, found {}", other.kind()),
        )),
    }
}
