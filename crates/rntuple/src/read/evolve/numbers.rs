//! The one rule of numbers: how the values of one number type read as another.

use crate::schema::PrimitiveType;

/// How every value of one number type reads as another ([`number_fit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fit {
    /// Every value reads (widening; any integer as `bool`, nonzero as true, as ROOT).
    Always,
    /// Some values may not: each is checked as it is read (integer narrowing and sign
    /// changes, `double` to `float`, an integer to a real too narrow to hold them all).
    PerValue,
    /// Refused before anything is read, for the reason given.
    Refused(&'static str),
}

/// The one rule of numbers, for a caller's `types=` and for [`crate::read::unify`] alike: how the
/// values of `from` read as `to`. Checked per value: an integer out of `to`'s range; a
/// `double` whose floating-point class changes as a `float` (ROOT's check: precision
/// may be lost, as ROOT reads it); an integer that does not read back exactly as the
/// real asked for (ROOT 6.40 refuses every integer as a real; uproot and NumPy promote
/// silently, losing digits past 2**53).
pub(super) fn number_fit(from: PrimitiveType, to: PrimitiveType) -> Fit {
    use PrimitiveType::*;
    let integral_or_bool = |p: PrimitiveType| is_integral(p) || p == Bool;
    if from == to || (matches!(from, Char | Int8) && matches!(to, Char | Int8)) {
        return Fit::Always;
    }
    if from == Byte || to == Byte {
        return Fit::Refused("std::byte reads only from std::byte");
    }
    match (from, to) {
        (f, Bool) if integral_or_bool(f) => Fit::Always,
        (f, t) if integral_or_bool(f) && is_integral(t) => {
            if fits_always(f, t) {
                Fit::Always
            } else {
                Fit::PerValue
            }
        }
        (Float32 | Float64, Float64) => Fit::Always,
        (Float64, Float32) => Fit::PerValue,
        (f, Float32 | Float64) if integral_or_bool(f) => {
            if exact_in_real(f, to) {
                Fit::Always
            } else {
                Fit::PerValue
            }
        }
        (Float32 | Float64, _) => Fit::Refused("a real number is not read as an integer or bool"),
        _ => Fit::Refused(""),
    }
}

/// Whether every integer of `from` is exactly a value of the real type `to` (its
/// significand holds 24 bits for `float`, 53 for `double`).
fn exact_in_real(from: PrimitiveType, to: PrimitiveType) -> bool {
    let bits = if to == PrimitiveType::Float32 { 24 } else { 53 };
    let (lo, hi) = int_range(from);
    -(1i128 << bits) <= lo && hi <= 1i128 << bits
}

fn is_integral(p: PrimitiveType) -> bool {
    use PrimitiveType::*;
    matches!(
        p,
        Char | Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64
    )
}

/// The range of an integral type (bool: 0..=1).
pub(super) fn int_range(p: PrimitiveType) -> (i128, i128) {
    use PrimitiveType::*;
    match p {
        Bool => (0, 1),
        Char | Int8 => (i8::MIN.into(), i8::MAX.into()),
        UInt8 | Byte => (0, u8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt64 | Float32 | Float64 => (0, u64::MAX.into()),
    }
}

/// Whether every value of `from` fits `to`.
fn fits_always(from: PrimitiveType, to: PrimitiveType) -> bool {
    let (a, b) = int_range(from);
    let (c, d) = int_range(to);
    c <= a && b <= d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_numbers() {
        use PrimitiveType::*;
        // Every value reads: widenings, and integers a real holds exactly.
        for (from, to) in [
            (Int32, Int64),
            (UInt32, Int64),
            (Float32, Float64),
            (Int32, Float64),
            (UInt32, Float64),
            (Int16, Float32),
            (Bool, Float64),
            (Int64, Bool),
        ] {
            assert_eq!(number_fit(from, to), Fit::Always, "{from:?} -> {to:?}");
        }
        // Some values may not: each is checked as it is read.
        for (from, to) in [
            (Int64, Int32),
            (UInt64, Int64),
            (Int64, UInt64),
            (Float64, Float32),
            (Int64, Float64),
            (UInt64, Float64),
            (Int32, Float32),
        ] {
            assert_eq!(number_fit(from, to), Fit::PerValue, "{from:?} -> {to:?}");
        }
        for (from, to) in [(Float64, Int64), (Float32, Bool), (Byte, UInt8)] {
            assert!(
                matches!(number_fit(from, to), Fit::Refused(_)),
                "{from:?} -> {to:?}"
            );
        }
    }

    #[test]
    fn integer_ranges_decide_what_may_overflow() {
        use PrimitiveType::*;
        assert!(fits_always(Int8, Int16));
        assert!(fits_always(UInt8, Int32));
        assert!(!fits_always(Int32, UInt32));
        assert!(!fits_always(UInt64, Int64));
        assert!(fits_always(Bool, UInt8));
    }
}
