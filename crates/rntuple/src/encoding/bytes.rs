//! Byte-level building blocks: little-endian element access, split (byte transposition),
//! zigzag, and bit packing.

/// A fixed-width value stored little-endian.
pub(crate) trait Le: Copy + Default {
    /// The width in bytes.
    const W: usize;
    /// Reads from exactly `W` bytes.
    fn from_le(b: &[u8]) -> Self;
    /// Appends the `W` little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
}

macro_rules! impl_le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const W: usize = std::mem::size_of::<$t>();
            #[inline]
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline]
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
impl_le!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// Reads consecutive little-endian elements (`data.len()` is a multiple of `T::W`).
pub(crate) fn read_plain<T: Le>(data: &[u8]) -> Vec<T> {
    data.chunks_exact(T::W).map(T::from_le).collect()
}

/// Writes consecutive little-endian elements.
pub(crate) fn write_plain<T: Le>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::W);
    for &v in values {
        v.put_le(&mut out);
    }
    out
}

/// Undoes the split encoding of `n` elements of `w` bytes: the result holds the elements'
/// little-endian bytes consecutively. `data.len()` is `n * w`.
pub(crate) fn unsplit(data: &[u8], n: usize, w: usize) -> Vec<u8> {
    if n == 0 || w <= 1 {
        return data.to_vec();
    }
    let mut out = vec![0u8; data.len()];
    for (k, stream) in data.chunks_exact(n).enumerate() {
        for (elem, &byte) in out.chunks_exact_mut(w).zip(stream) {
            if let Some(slot) = elem.get_mut(k) {
                *slot = byte;
            }
        }
    }
    out
}

/// Split-encodes `n` consecutive little-endian elements of `w` bytes.
pub(crate) fn split(plain: &[u8], w: usize) -> Vec<u8> {
    if w <= 1 || plain.is_empty() {
        return plain.to_vec();
    }
    let n = plain.len() / w;
    let mut out = vec![0u8; plain.len()];
    for (k, stream) in out.chunks_exact_mut(n).enumerate() {
        for (slot, elem) in stream.iter_mut().zip(plain.chunks_exact(w)) {
            if let Some(&byte) = elem.get(k) {
                *slot = byte;
            }
        }
    }
    out
}

/// Reads `n` split-encoded elements.
pub(crate) fn read_split<T: Le>(data: &[u8], n: usize) -> Vec<T> {
    read_plain(&unsplit(data, n, T::W))
}

/// Writes elements split-encoded.
pub(crate) fn write_split<T: Le>(values: &[T]) -> Vec<u8> {
    split(&write_plain(values), T::W)
}

macro_rules! zigzag {
    ($enc:ident, $dec:ident, $s:ty, $u:ty) => {
        /// Zigzag encoding: 0, -1, 1, -2, ... map to 0, 1, 2, 3, ...
        #[inline]
        pub(crate) fn $enc(x: $s) -> $u {
            ((x << 1) ^ (x >> (<$s>::BITS - 1))) as $u
        }
        /// Zigzag decoding, the inverse of the encoding.
        #[inline]
        pub(crate) fn $dec(u: $u) -> $s {
            ((u >> 1) as $s) ^ -((u & 1) as $s)
        }
    };
}
zigzag!(zigzag_encode16, zigzag_decode16, i16, u16);
zigzag!(zigzag_encode32, zigzag_decode32, i32, u32);
zigzag!(zigzag_encode64, zigzag_decode64, i64, u64);

/// Unpacks `n` values of `nbits` (1..=32) bits from a little-endian, LSB-first bit stream:
/// value `i` occupies stream bits `[i * nbits, (i + 1) * nbits)`, stream bit `k` being bit
/// `k % 8` of byte `k / 8`. This is the layout of ROOT's BitPacking (64-bit words filled
/// from their least significant bit and stored little-endian). Missing bytes read as 0.
pub(crate) fn unpack_bits(data: &[u8], n: usize, nbits: u32) -> Vec<u32> {
    let mask: u64 = (1u64 << nbits) - 1;
    let mut out = Vec::with_capacity(n);
    let mut bytes = data.iter();
    let mut acc: u64 = 0;
    let mut have: u32 = 0;
    for _ in 0..n {
        while have < nbits {
            acc |= u64::from(bytes.next().copied().unwrap_or(0)) << have;
            have += 8;
        }
        // Masked to nbits <= 32 bits.
        #[allow(clippy::cast_possible_truncation)]
        out.push((acc & mask) as u32);
        acc >>= nbits;
        have -= nbits;
    }
    out
}

/// Packs values of `nbits` (1..=32) bits into the bit stream [`unpack_bits`] reads; the
/// last byte is padded with zero bits. Bits above `nbits` in the values are ignored.
pub(crate) fn pack_bits(values: impl ExactSizeIterator<Item = u32>, nbits: u32) -> Vec<u8> {
    let mask: u64 = (1u64 << nbits) - 1;
    // A capacity hint: saturating is harmless.
    let capacity = values.len().saturating_mul(nbits as usize).div_ceil(8);
    let mut out = Vec::with_capacity(capacity);
    let mut acc: u64 = 0;
    let mut have: u32 = 0;
    for v in values {
        acc |= (u64::from(v) & mask) << have;
        have += nbits;
        while have >= 8 {
            // The low byte of the accumulator is the next byte of the stream.
            #[allow(clippy::cast_possible_truncation)]
            out.push(acc as u8);
            acc >>= 8;
            have -= 8;
        }
    }
    if have > 0 {
        // Fewer than 8 bits are left in the accumulator.
        #[allow(clippy::cast_possible_truncation)]
        out.push(acc as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_vectors() {
        // i32/u32 [1, 256]: LE bytes 01 00 00 00 | 00 01 00 00, transposed.
        let plain = write_plain(&[1u32, 256]);
        assert_eq!(split(&plain, 4), vec![1, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(
            read_split::<u32>(&[1, 0, 0, 1, 0, 0, 0, 0], 2),
            vec![1, 256]
        );
        assert_eq!(unsplit(&split(&plain, 4), 2, 4), plain);
    }

    #[test]
    fn zigzag_vectors() {
        assert_eq!(zigzag_encode32(0), 0);
        assert_eq!(zigzag_encode32(-1), 1);
        assert_eq!(zigzag_encode32(1), 2);
        assert_eq!(zigzag_encode32(-2), 3);
        assert_eq!(zigzag_encode32(i32::MAX), u32::MAX - 1);
        assert_eq!(zigzag_encode32(i32::MIN), u32::MAX);
        for v in [0i64, 1, -1, i64::MIN, i64::MAX, 12345, -98765] {
            assert_eq!(zigzag_decode64(zigzag_encode64(v)), v);
        }
        for v in [0i16, 1, -1, i16::MIN, i16::MAX] {
            assert_eq!(zigzag_decode16(zigzag_encode16(v)), v);
        }
    }

    #[test]
    fn bit_packing_vectors() {
        // Three 3-bit values 5, 3, 7: bits 101 | 011 | 111 LSB-first -> 0b11_011_101, 0b1.
        assert_eq!(
            pack_bits([5u32, 3, 7].into_iter(), 3),
            vec![0b1101_1101, 0b1]
        );
        assert_eq!(unpack_bits(&[0b1101_1101, 0b1], 3, 3), vec![5, 3, 7]);
        // 32-bit values are plain little-endian u32s.
        assert_eq!(
            pack_bits([0x0403_0201u32].into_iter(), 32),
            vec![1, 2, 3, 4]
        );
        for nbits in 1..=32u32 {
            let vals: Vec<u32> = (0..77u32)
                .map(|i| i.wrapping_mul(2_654_435_761) & ((1u64 << nbits) - 1) as u32)
                .collect();
            let packed = pack_bits(vals.iter().copied(), nbits);
            assert_eq!(packed.len(), (77 * nbits as usize).div_ceil(8));
            assert_eq!(unpack_bits(&packed, 77, nbits), vals);
        }
    }
}
