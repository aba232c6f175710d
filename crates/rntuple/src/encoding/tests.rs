use super::*;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

const SIZES: [usize; 7] = [0, 1, 7, 8, 9, 100, 1000];

fn f32_edges() -> Vec<f32> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        f32::MIN,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]
}

fn f64_edges() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        f64::MIN,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ]
}

/// Values of the kind `t` decodes to: edges first, then random ones.
fn sample(t: ColumnType, n: usize, rng: &mut Rng) -> ColumnValues {
    use ColumnType::*;
    macro_rules! ints {
        ($variant:ident, $ty:ty) => {{
            let edges = [
                <$ty>::MIN,
                <$ty>::MAX,
                0 as $ty,
                1 as $ty,
                (0 as $ty).wrapping_sub(1),
            ];
            ColumnValues::$variant(
                (0..n)
                    .map(|i| edges.get(i).copied().unwrap_or(rng.next() as $ty))
                    .collect(),
            )
        }};
    }
    match t {
        Bit => ColumnValues::Bool((0..n).map(|_| rng.next() & 1 == 1).collect()),
        Byte | Char | UInt8 => ints!(U8, u8),
        Int8 => ints!(I8, i8),
        Int16 | SplitInt16 => ints!(I16, i16),
        UInt16 | SplitUInt16 => ints!(U16, u16),
        Int32 | SplitInt32 => ints!(I32, i32),
        UInt32 | SplitUInt32 => ints!(U32, u32),
        Int64 | SplitInt64 => ints!(I64, i64),
        UInt64 | SplitUInt64 => ints!(U64, u64),
        Real32 | SplitReal32 | Real16 | SplitReal16 | Real32Trunc => {
            let e = f32_edges();
            ColumnValues::F32(
                (0..n)
                    .map(|i| {
                        e.get(i)
                            .copied()
                            .unwrap_or(f32::from_bits(rng.next() as u32))
                    })
                    .collect(),
            )
        }
        Real64 | SplitReal64 => {
            let e = f64_edges();
            ColumnValues::F64(
                (0..n)
                    .map(|i| e.get(i).copied().unwrap_or(f64::from_bits(rng.next())))
                    .collect(),
            )
        }
        Real32Quant => ColumnValues::F64(
            (0..n)
                .map(|i| match i {
                    0 => -3.5,
                    1 => 10.25,
                    _ => -3.5 + (rng.next() % 1_000_000) as f64 * 13.75 / 1_000_000.0,
                })
                .collect(),
        ),
        Index32 | SplitIndex32 => {
            let mut acc = 0u64;
            ColumnValues::Index(
                (0..n)
                    .map(|_| {
                        acc += rng.next() % 1000;
                        acc
                    })
                    .collect(),
            )
        }
        Index64 | SplitIndex64 => {
            let mut acc = 0u64;
            ColumnValues::Index(
                (0..n)
                    .map(|i| {
                        acc += if i == 3 { 1 << 40 } else { rng.next() % 1000 };
                        acc
                    })
                    .collect(),
            )
        }
        Switch => ColumnValues::Switch {
            index: (0..n).map(|_| rng.next()).collect(),
            tag: (0..n).map(|_| rng.next() as u32).collect(),
        },
    }
}

fn encodings(t: ColumnType) -> Vec<ColumnEncoding> {
    match t {
        ColumnType::Real32Trunc => [10u16, 11, 16, 23, 31]
            .iter()
            .map(|&b| ColumnEncoding::new(t, b, None).unwrap())
            .collect(),
        ColumnType::Real32Quant => [1u16, 2, 7, 8, 13, 20, 31, 32]
            .iter()
            .map(|&b| ColumnEncoding::new(t, b, Some((-3.5, 10.25))).unwrap())
            .collect(),
        _ => vec![ColumnEncoding::of_type(t)],
    }
}

/// Bitwise equality (NaN == NaN, 0.0 != -0.0).
fn same(a: &ColumnValues, b: &ColumnValues) -> bool {
    match (a, b) {
        (ColumnValues::F32(x), ColumnValues::F32(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        (ColumnValues::F64(x), ColumnValues::F64(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
        }
        _ => a == b,
    }
}

fn is_lossy(t: ColumnType) -> bool {
    matches!(
        t,
        ColumnType::Real16
            | ColumnType::SplitReal16
            | ColumnType::Real32Trunc
            | ColumnType::Real32Quant
    )
}

#[test]
fn column_type_codes_and_names() {
    for (i, t) in ColumnType::ALL.iter().enumerate() {
        assert_eq!(t.as_u16() as usize, i);
        assert_eq!(ColumnType::from_u16(t.as_u16()), Some(*t));
        assert_eq!(t.to_string(), t.name());
    }
    assert_eq!(ColumnType::from_u16(0x1E), None);
    assert_eq!(ColumnType::from_u16(0xFFFF), None);
    assert_eq!(
        ColumnType::from_u16(0x13).map(|t| t.name()),
        Some("SplitInt32")
    );
    assert_eq!(ColumnType::Real32Quant.name(), "Real32Quant");
    assert_eq!(ColumnType::Bit.fixed_bits(), Some(1));
    assert_eq!(ColumnType::Switch.fixed_bits(), Some(96));
    assert_eq!(ColumnType::Real32Trunc.fixed_bits(), None);
    assert!(ColumnType::Real32Trunc.validate_bits(10).is_ok());
    assert!(ColumnType::Real32Trunc.validate_bits(31).is_ok());
    assert!(ColumnType::Real32Trunc.validate_bits(9).is_err());
    assert!(ColumnType::Real32Trunc.validate_bits(32).is_err());
    assert!(ColumnType::Real32Quant.validate_bits(1).is_ok());
    assert!(ColumnType::Real32Quant.validate_bits(32).is_ok());
    assert!(ColumnType::Real32Quant.validate_bits(0).is_err());
    assert!(ColumnType::Real32Quant.validate_bits(33).is_err());
    assert!(ColumnType::Int32.validate_bits(32).is_ok());
    assert!(ColumnType::Int32.validate_bits(16).is_err());
    assert!(ColumnEncoding::new(ColumnType::Real32Quant, 8, None).is_err());
    assert!(ColumnEncoding::new(ColumnType::Real32Quant, 8, Some((1.0, 0.0))).is_err());
    assert!(ColumnEncoding::new(ColumnType::Real32Quant, 8, Some((0.0, f64::NAN))).is_err());
}

#[test]
fn page_bytes() {
    let e = ColumnEncoding::of_type;
    assert_eq!(e(ColumnType::Bit).page_bytes(0), Some(0));
    assert_eq!(e(ColumnType::Bit).page_bytes(9), Some(2));
    assert_eq!(e(ColumnType::Switch).page_bytes(3), Some(36));
    assert_eq!(e(ColumnType::SplitInt64).page_bytes(5), Some(40));
    let q = ColumnEncoding::new(ColumnType::Real32Quant, 7, Some((0.0, 1.0))).unwrap();
    assert_eq!(q.page_bytes(9), Some(8));
    assert_eq!(e(ColumnType::Int64).page_bytes(u64::MAX), None);
}

#[test]
fn round_trip_every_type() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for &t in &ColumnType::ALL {
        for enc in encodings(t) {
            for &n in &SIZES {
                let values = sample(t, n, &mut rng);
                let bytes = encode_page(&enc, &values).unwrap();
                assert_eq!(
                    Some(bytes.len() as u64),
                    enc.page_bytes(n as u64),
                    "{t} n={n}"
                );
                let decoded = decode_page(&enc, &bytes, n as u64).unwrap();
                assert_eq!(decoded.len(), n);
                if is_lossy(t) {
                    // Decoded values are fixed points of the encoding.
                    let again =
                        decode_page(&enc, &encode_page(&enc, &decoded).unwrap(), n as u64).unwrap();
                    assert!(
                        same(&again, &decoded),
                        "{t} bits {} n={n}",
                        enc.bits_on_storage
                    );
                } else {
                    assert!(same(&decoded, &values), "{t} n={n}");
                }
            }
        }
    }
}

#[test]
fn parts_of_pages_decode_as_slices_of_the_whole_page() {
    let mut rng = Rng(0x0dd_ba11_5eed);
    let n = 1000;
    for &t in &ColumnType::ALL {
        for enc in encodings(t) {
            let values = sample(t, n, &mut rng);
            let bytes = encode_page(&enc, &values).unwrap();
            let whole = decode_page(&enc, &bytes, n as u64).unwrap();
            for (first, len) in [
                (0, 1),
                (0, 999),
                (1, 999),
                (7, 9),
                (500, 500),
                (999, 1),
                (3, 0),
            ] {
                let mut part = ColumnValues::zeros(t, len);
                decode_page_into(&enc, &bytes, n as u64, first, part.as_values_mut()).unwrap();
                let expected = whole.slice(first, len).unwrap();
                assert!(same(&part, &expected), "{t} {first}+{len}");
            }
            // A part past the page's end is an error, not a panic.
            let mut past = ColumnValues::zeros(t, 2);
            assert!(decode_page_into(&enc, &bytes, n as u64, 999, past.as_values_mut()).is_err());
        }
    }
}

#[test]
fn lossy_precision() {
    // Real32Quant: error at most half a quantization step (plus rounding).
    let mut rng = Rng(42);
    for bits in [1u32, 4, 8, 16, 24, 32] {
        let enc =
            ColumnEncoding::new(ColumnType::Real32Quant, bits as u16, Some((-3.5, 10.25))).unwrap();
        let values = sample(ColumnType::Real32Quant, 500, &mut rng);
        let decoded = decode_page(&enc, &encode_page(&enc, &values).unwrap(), 500).unwrap();
        let (ColumnValues::F64(v), ColumnValues::F64(d)) = (&values, &decoded) else {
            panic!()
        };
        let step = 13.75 / ((1u64 << bits) - 1) as f64;
        for (a, b) in v.iter().zip(d) {
            assert!(
                (a - b).abs() <= step / 2.0 + 1e-12,
                "bits {bits}: {a} -> {b}"
            );
            assert!((-3.5..=10.25).contains(b));
        }
    }
    // Real32Trunc: truncation toward zero of the mantissa.
    let enc = ColumnEncoding::new(ColumnType::Real32Trunc, 16, None).unwrap();
    let v = ColumnValues::F32(vec![1.999, -1.999, 3.0e38]);
    let d = decode_page(&enc, &encode_page(&enc, &v).unwrap(), 3).unwrap();
    let ColumnValues::F32(d) = d else { panic!() };
    assert_eq!(d[0].to_bits(), 1.999f32.to_bits() & 0xFFFF_0000);
    assert_eq!(d[1].to_bits(), (-1.999f32).to_bits() & 0xFFFF_0000);
    assert!(d[0] <= 1.999 && d[1] >= -1.999);
}

#[test]
fn hand_computed_vectors() {
    let enc = ColumnEncoding::of_type;
    // Split u32 [1, 256].
    assert_eq!(
        encode_page(
            &enc(ColumnType::SplitUInt32),
            &ColumnValues::U32(vec![1, 256])
        )
        .unwrap(),
        vec![1, 0, 0, 1, 0, 0, 0, 0]
    );
    // Zigzag + split i32 [-1, 1] -> [1, 2].
    assert_eq!(
        encode_page(
            &enc(ColumnType::SplitInt32),
            &ColumnValues::I32(vec![-1, 1])
        )
        .unwrap(),
        vec![1, 2, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        decode_page(&enc(ColumnType::SplitInt16), &[1, 2, 0, 0], 2).unwrap(),
        ColumnValues::I16(vec![-1, 1])
    );
    // Delta + split index: offsets [3, 5, 10] -> deltas [3, 2, 5].
    let page = vec![3, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(
        encode_page(
            &enc(ColumnType::SplitIndex32),
            &ColumnValues::Index(vec![3, 5, 10])
        )
        .unwrap(),
        page
    );
    assert_eq!(
        decode_page(&enc(ColumnType::SplitIndex32), &page, 3).unwrap(),
        ColumnValues::Index(vec![3, 5, 10])
    );
    // Bits, LSB first: [1,0,1,1,0,0,0,0, 1] -> 0x0D, 0x01.
    let bools = vec![true, false, true, true, false, false, false, false, true];
    assert_eq!(
        encode_page(&enc(ColumnType::Bit), &ColumnValues::Bool(bools.clone())).unwrap(),
        vec![0x0D, 0x01]
    );
    assert_eq!(
        decode_page(&enc(ColumnType::Bit), &[0x0D, 0x01], 9).unwrap(),
        ColumnValues::Bool(bools)
    );
    // Real16: 0x3C00 = 1.0, 0xC000 = -2.0, 0x7C00 = inf.
    assert_eq!(
        decode_page(
            &enc(ColumnType::Real16),
            &[0x00, 0x3C, 0x00, 0xC0, 0x00, 0x7C],
            3
        )
        .unwrap(),
        ColumnValues::F32(vec![1.0, -2.0, f32::INFINITY])
    );
    // Switch: index 5, tag 2.
    assert_eq!(
        decode_page(
            &enc(ColumnType::Switch),
            &[5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0],
            1
        )
        .unwrap(),
        ColumnValues::Switch {
            index: vec![5],
            tag: vec![2]
        }
    );
    // Real32Trunc 12 bits: 1.0f = 0x3F800000 -> top 12 bits 0x3F8; two of them packed LSB-first.
    let t = ColumnEncoding::new(ColumnType::Real32Trunc, 12, None).unwrap();
    assert_eq!(
        encode_page(&t, &ColumnValues::F32(vec![1.0, 1.0])).unwrap(),
        vec![0xF8, 0x83, 0x3F]
    );
    assert_eq!(
        decode_page(&t, &[0xF8, 0x83, 0x3F], 2).unwrap(),
        ColumnValues::F32(vec![1.0, 1.0])
    );
    // Real32Quant: endpoints map to q = 0 and q = 2^b - 1, and back to min and max exactly.
    for bits in [1u16, 5, 8, 17, 32] {
        let (min, max) = (-0.1f32 as f64, 123.456f32 as f64);
        let q = ColumnEncoding::new(ColumnType::Real32Quant, bits, Some((min, max))).unwrap();
        let bytes = encode_page(&q, &ColumnValues::F64(vec![min, max])).unwrap();
        let packed = bytes::unpack_bits(&bytes, 2, u32::from(bits));
        assert_eq!(packed, vec![0, ((1u64 << bits) - 1) as u32]);
        assert_eq!(
            decode_page(&q, &bytes, 2).unwrap(),
            ColumnValues::F64(vec![min, max])
        );
    }
    // Out of range and NaN are errors.
    let q = ColumnEncoding::new(ColumnType::Real32Quant, 8, Some((0.0, 1.0))).unwrap();
    assert!(encode_page(&q, &ColumnValues::F64(vec![1.5])).is_err());
    assert!(encode_page(&q, &ColumnValues::F64(vec![f64::NAN])).is_err());
    // Index32 cannot hold offsets >= 2^32.
    assert!(encode_page(
        &enc(ColumnType::Index32),
        &ColumnValues::Index(vec![1 << 32])
    )
    .is_err());
    // Wrong value kind.
    assert!(encode_page(&enc(ColumnType::Int32), &ColumnValues::U32(vec![1])).is_err());
}

#[test]
fn wrong_lengths_are_errors() {
    let mut rng = Rng(7);
    for &t in &ColumnType::ALL {
        for enc in encodings(t) {
            for &n in &[0u64, 1, 7, 8, 9, 100] {
                let good = enc.page_bytes(n).unwrap() as usize;
                for len in [good.wrapping_sub(1), good + 1, good + 13] {
                    if len == usize::MAX {
                        continue;
                    }
                    let data: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    let r = decode_page(&enc, &data, n);
                    assert!(
                        matches!(r, Err(Error::Corrupt { .. })),
                        "{t} n={n} len={len}"
                    );
                }
                // Any bytes of the right length decode without panicking.
                let data: Vec<u8> = (0..good).map(|_| rng.next() as u8).collect();
                assert_eq!(decode_page(&enc, &data, n).unwrap().len() as u64, n);
            }
        }
    }
    let bad = ColumnEncoding {
        column_type: ColumnType::Real32Trunc,
        bits_on_storage: 40,
        value_range: None,
    };
    assert!(decode_page(&bad, &[0; 5], 1).is_err());
    let no_range = ColumnEncoding {
        column_type: ColumnType::Real32Quant,
        bits_on_storage: 8,
        value_range: None,
    };
    assert!(decode_page(&no_range, &[0; 1], 1).is_err());
    assert!(decode_page(&ColumnEncoding::of_type(ColumnType::Int64), &[], u64::MAX).is_err());
}

#[test]
fn values_helpers() {
    let mut a = ColumnValues::zeros(ColumnType::SplitReal32, 2);
    assert_eq!(a, ColumnValues::F32(vec![0.0, 0.0]));
    a.append(ColumnValues::F32(vec![1.0, 2.0])).unwrap();
    assert_eq!(a.len(), 4);
    assert_eq!(a.slice(1, 2), Some(ColumnValues::F32(vec![0.0, 1.0])));
    assert_eq!(a.slice(3, 2), None);
    assert!(a.append(ColumnValues::F64(vec![1.0])).is_err());
    assert_eq!(
        ColumnValues::zeros(ColumnType::Switch, 1),
        ColumnValues::Switch {
            index: vec![0],
            tag: vec![0]
        }
    );
    for &t in &ColumnType::ALL {
        let enc = encodings(t)[0];
        let z = ColumnValues::zeros(t, 3);
        // zeros() is of the kind decode_page yields.
        let d = decode_page(&enc, &vec![0u8; enc.page_bytes(3).unwrap() as usize], 3).unwrap();
        assert_eq!(z.kind(), d.kind(), "{t}");
        assert!(ColumnValues::empty(t).is_empty());
    }
}

/// Pages written by ROOT (rntuple-validation 1.0, `types.fundamental.{real,real32trunc,
/// real32quant}.root`) decode bit-exactly to the values ROOT reads from them
/// (`read/*.json`); see `tests/data/make_real_vectors.py`.
#[test]
fn root_written_real_pages() {
    let text = include_str!("../../tests/data/real_pages.txt");
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
        let parts: Vec<&str> = line.split(' ').collect();
        assert_eq!(parts.len(), 10, "{line}");
        let (field, cpp) = (parts[1], parts[2]);
        let t = ColumnType::from_u16(parts[3].parse().unwrap()).unwrap();
        let bits: u16 = parts[4].parse().unwrap();
        let min = f64::from_bits(u64::from_str_radix(parts[5], 16).unwrap());
        let max = f64::from_bits(u64::from_str_radix(parts[6], 16).unwrap());
        let n: u64 = parts[7].parse().unwrap();
        let page: Vec<u8> = (0..parts[8].len() / 2)
            .map(|i| u8::from_str_radix(&parts[8][2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let expected: Vec<u64> = parts[9]
            .split(',')
            .map(|h| u64::from_str_radix(h, 16).unwrap())
            .collect();
        let range = (t == ColumnType::Real32Quant).then_some((min, max));
        let enc = ColumnEncoding::new(t, bits, range).unwrap();
        let values = decode_page(&enc, &page, n).unwrap();
        // What ROOT gives the C++ field, as a double.
        let got: Vec<f64> = match (&values, cpp) {
            (ColumnValues::F32(v), _) => v.iter().map(|&x| f64::from(x)).collect(),
            (ColumnValues::F64(v), "float") => v.iter().map(|&x| f64::from(x as f32)).collect(),
            (ColumnValues::F64(v), _) => v.clone(),
            _ => panic!("{field}: unexpected {}", values.kind()),
        };
        let got_bits: Vec<u64> = got.iter().map(|x| x.to_bits()).collect();
        assert_eq!(got_bits, expected, "{field} ({t}, {bits} bits)");
        // And encoding ROOT's values reproduces ROOT's page.
        let input = match (t, cpp) {
            (ColumnType::Real32Quant, _) | (ColumnType::Real64 | ColumnType::SplitReal64, _) => {
                ColumnValues::F64(expected.iter().map(|&b| f64::from_bits(b)).collect())
            }
            _ => ColumnValues::F32(expected.iter().map(|&b| f64::from_bits(b) as f32).collect()),
        };
        assert_eq!(
            encode_page(&enc, &input).unwrap(),
            page,
            "{field}: re-encoding"
        );
        checked += 1;
    }
    assert_eq!(checked, 20);
}
