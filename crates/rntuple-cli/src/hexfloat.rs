//! C99 hexadecimal floating point text, as glibc's `printf("%a")` writes a double.

/// Formats `x` like `printf("%a", x)`: `0x1.8p+3`, `-0x0p+0`, `0x0.0000000000001p-1022`,
/// `inf`, `-nan`.
pub fn format_hex_double(x: f64) -> String {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x.is_nan() {
        return format!("{sign}nan");
    }
    if x.is_infinite() {
        return format!("{sign}inf");
    }
    let bits = x.to_bits();
    let exponent_bits = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1u64 << 52) - 1);
    if exponent_bits == 0 && mantissa == 0 {
        return format!("{sign}0x0p+0");
    }
    let (lead, exponent) = if exponent_bits == 0 {
        (0, -1022)
    } else {
        (1, exponent_bits - 1023)
    };
    let digits = format!("{mantissa:013x}");
    let digits = digits.trim_end_matches('0');
    let fraction = if digits.is_empty() {
        String::new()
    } else {
        format!(".{digits}")
    };
    let exp_sign = if exponent < 0 { '-' } else { '+' };
    format!("{sign}0x{lead}{fraction}p{exp_sign}{}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::format_hex_double;

    #[test]
    fn matches_glibc_printf_a() {
        // Expected strings are what glibc's printf("%a") prints for these doubles.
        let cases: [(f64, &str); 12] = [
            (1.0, "0x1p+0"),
            (12.0, "0x1.8p+3"),
            (-0.0, "-0x0p+0"),
            (0.0, "0x0p+0"),
            (0.1, "0x1.999999999999ap-4"),
            (f64::MAX, "0x1.fffffffffffffp+1023"),
            (f64::MIN_POSITIVE, "0x1p-1022"),
            (f64::from_bits(1), "0x0.0000000000001p-1022"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f32::MAX as f64, "0x1.fffffep+127"),
            (f32::from_bits(1) as f64, "0x1p-149"),
        ];
        for (x, want) in cases {
            assert_eq!(format_hex_double(x), want, "for {x:e}");
        }
    }
}
