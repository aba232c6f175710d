//! The reduced-precision real encodings: Real16 (IEEE half), Real32Trunc and Real32Quant,
//! bit-exact with ROOT 6.34+.
//!
//! * **Real32Trunc** with `b` bits keeps the top `b` bits of the float32 bit pattern (sign,
//!   exponent, leading mantissa bits): the packed value is `bits >> (32 - b)`. ROOT truncates
//!   (no rounding) when writing; reading puts the `b` bits back at the top and fills the rest
//!   with zeros. Double fields are converted to float first when writing, and the float is
//!   widened when reading.
//! * **Real32Quant** with `b` bits and range `[min, max]` stores unsigned integers `q` of `b`
//!   bits. With `quant_max = 2^b - 1` (as a double), ROOT computes, all in double precision:
//!   - writing: `scale = quant_max / (max - min)`, `q = (u32)(0.5 + (x - min) * scale)`
//!     (truncating conversion; `x` is the float or double value widened to double; values
//!     outside `[min, max]`, and NaN, are an error);
//!   - reading: `scale = (max - min) / quant_max`, `e = q * scale + min` (a multiplication then an
//!     addition, each rounded; no fused multiply-add), then `e = min(e, max)`. A double field
//!     receives `e`; a float field receives `(float) e`. [`unquantize`] returns `e`.
//! * **Real16** is IEEE-754 binary16; reading widens exactly to float32 (and then to double
//!   for double fields); writing rounds to nearest, ties to even.

use crate::error::{Error, Result};

/// `2^bits - 1` as a double, for 1 <= bits <= 32.
fn quant_max(bits: u32) -> f64 {
    ((1u64 << bits) - 1) as f64
}

/// Maps quantized integers (already unpacked, in the low `bits` bits) back to reals, exactly
/// as ROOT: `min(q * ((max - min) / (2^bits - 1)) + min, max)`.
pub(crate) fn unquantize(q: &[u32], bits: u32, min: f64, max: f64) -> Vec<f64> {
    let scale = (max - min) / quant_max(bits);
    q.iter()
        .map(|&v| {
            let e = f64::from(v) * scale + min;
            if max < e {
                max
            } else {
                e
            }
        })
        .collect()
}

/// Quantizes reals as ROOT: `(u32)(0.5 + (x - min) * ((2^bits - 1) / (max - min)))`.
/// Values outside `[min, max]` (and NaN) are an error.
pub(crate) fn quantize(values: &[f64], bits: u32, min: f64, max: f64) -> Result<Vec<u32>> {
    let scale = quant_max(bits) / (max - min);
    let mut out = Vec::with_capacity(values.len());
    for (i, &x) in values.iter().enumerate() {
        if !(min <= x && x <= max) {
            return Err(Error::InvalidArgument(format!(
                "value {x} (element {i}) is outside the Real32Quant range [{min}, {max}]"
            )));
        }
        let e = 0.5 + (x - min) * scale;
        // `as` truncates toward zero like C++'s static_cast for in-range values (x in
        // [min, max] puts e in [0.5, 2^bits - 0.5]); with min == max the scale is infinite
        // or NaN and `as` saturates, which only happens for a degenerate range.
        #[allow(clippy::cast_possible_truncation)]
        out.push(e as u32);
    }
    Ok(out)
}

/// A double rounded to the nearest float (infinite if out of float range), the intended
/// lossy conversion when double values go to a float column or are read as `float`.
#[inline]
pub(crate) fn f64_to_f32(x: f64) -> f32 {
    // The narrowing is the point: IEEE round-to-nearest, as C++'s static_cast<float>.
    #[allow(clippy::cast_possible_truncation)]
    let y = x as f32;
    y
}

/// The packed Real32Trunc value of a float: its top `bits` bits.
#[inline]
pub(crate) fn truncate_f32(x: f32, bits: u32) -> u32 {
    x.to_bits() >> (32 - bits)
}

/// The float a packed Real32Trunc value stands for.
#[inline]
pub(crate) fn untruncate_f32(packed: u32, bits: u32) -> f32 {
    f32::from_bits(packed << (32 - bits))
}

/// IEEE half to float (exact).
#[inline]
pub(crate) fn half_to_f32(bits: u16) -> f32 {
    half::f16::from_bits(bits).to_f32()
}

/// Float to IEEE half (round to nearest, ties to even).
#[inline]
pub(crate) fn f32_to_half(x: f32) -> u16 {
    half::f16::from_f32(x).to_bits()
}
