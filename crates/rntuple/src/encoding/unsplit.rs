//! Byte-unsplit kernels: interleave `W` byte streams (byte `k` of every element, then
//! byte `k + 1`, ...) back into `W`-byte little-endian elements. On x86_64 (where SSE2 is
//! always present) 16 elements at a time go through byte/word/dword unpack shuffles; the
//! portable scalar version handles the tails and other targets.

use crate::memory::Pod;

/// The bytes of a slice of plain values, writable.
#[inline(always)]
pub(crate) fn as_bytes_mut<T: Pod>(s: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(s);
    // SAFETY: `s` is a valid, exclusively borrowed region of `len` bytes; `u8` has
    // alignment 1; `T: Pod` has no padding (every byte is initialised) and accepts any
    // bytes written through the view, which lives no longer than the borrow of `s`.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u8>(), len) }
}

/// Interleaves `W` streams of `m` bytes each (`streams[k][i]` is byte `k` of element `i`)
/// into `out` (`m * W` bytes: `out[i * W + k] = streams[k][i]`). Streams shorter than
/// `m = out.len() / W` leave `out` unchanged (callers pass matching lengths).
#[inline]
pub(crate) fn unsplit_bytes<const W: usize>(streams: [&[u8]; W], out: &mut [u8]) {
    let m = out.len() / W;
    if out.len() % W != 0 || streams.iter().any(|s| s.len() < m) {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    let done = sse2::unsplit(streams, out, m);
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    unsplit_scalar(streams, &mut out[done * W..], done, m);
}

/// The portable version: elements `from..to` of the streams into `out` (which starts at
/// element `from`).
#[inline]
pub(crate) fn unsplit_scalar<const W: usize>(
    streams: [&[u8]; W],
    out: &mut [u8],
    from: usize,
    to: usize,
) {
    for (i, o) in (from..to).zip(out.chunks_exact_mut(W)) {
        for (k, b) in o.iter_mut().enumerate() {
            *b = streams[k][i];
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    /// Unsplits the first `m - m % 16` elements with SSE2 (part of the x86_64 baseline, so
    /// no runtime detection is needed) for `W` = 2, 4, 8; returns how many it did (0 for
    /// other widths). `streams[k]` hold at least `m` bytes, `out` exactly `m * W`.
    #[inline]
    pub(super) fn unsplit<const W: usize>(streams: [&[u8]; W], out: &mut [u8], m: usize) -> usize {
        let blocks = m / 16;
        assert!(out.len() >= m * W && streams.iter().all(|s| s.len() >= m));
        let src: [*const u8; W] = std::array::from_fn(|k| streams[k].as_ptr());
        let dst = out.as_mut_ptr();
        // SAFETY: every load reads bytes `16 * b .. 16 * b + 16` of a stream with
        // `b < blocks = m / 16`, within its `m` bytes; every store writes bytes
        // `16 * W * b .. 16 * W * (b + 1)` of `out`, within its `m * W` bytes (asserted
        // above). Unaligned loads/stores (`loadu`/`storeu`) have no alignment needs, and
        // SSE2 is enabled on every x86_64 target.
        unsafe {
            match W {
                2 => {
                    for b in 0..blocks {
                        let at = |k: usize| _mm_loadu_si128(src[k].add(16 * b).cast());
                        let (s0, s1) = (at(0), at(1));
                        let o = dst.add(32 * b).cast::<__m128i>();
                        _mm_storeu_si128(o, _mm_unpacklo_epi8(s0, s1));
                        _mm_storeu_si128(o.add(1), _mm_unpackhi_epi8(s0, s1));
                    }
                }
                4 => {
                    for b in 0..blocks {
                        let at = |k: usize| _mm_loadu_si128(src[k].add(16 * b).cast());
                        let (s0, s1, s2, s3) = (at(0), at(1), at(2), at(3));
                        let al = _mm_unpacklo_epi8(s0, s1);
                        let ah = _mm_unpackhi_epi8(s0, s1);
                        let bl = _mm_unpacklo_epi8(s2, s3);
                        let bh = _mm_unpackhi_epi8(s2, s3);
                        let o = dst.add(64 * b).cast::<__m128i>();
                        _mm_storeu_si128(o, _mm_unpacklo_epi16(al, bl));
                        _mm_storeu_si128(o.add(1), _mm_unpackhi_epi16(al, bl));
                        _mm_storeu_si128(o.add(2), _mm_unpacklo_epi16(ah, bh));
                        _mm_storeu_si128(o.add(3), _mm_unpackhi_epi16(ah, bh));
                    }
                }
                8 => {
                    for b in 0..blocks {
                        let at = |k: usize| _mm_loadu_si128(src[k].add(16 * b).cast());
                        // Bytes 0-1, 2-3, 4-5, 6-7 of elements 0-7 (l) and 8-15 (h).
                        let (s0, s1) = (at(0), at(1));
                        let (t0l, t0h) = (_mm_unpacklo_epi8(s0, s1), _mm_unpackhi_epi8(s0, s1));
                        let (s2, s3) = (at(2), at(3));
                        let (t1l, t1h) = (_mm_unpacklo_epi8(s2, s3), _mm_unpackhi_epi8(s2, s3));
                        let (s4, s5) = (at(4), at(5));
                        let (t2l, t2h) = (_mm_unpacklo_epi8(s4, s5), _mm_unpackhi_epi8(s4, s5));
                        let (s6, s7) = (at(6), at(7));
                        let (t3l, t3h) = (_mm_unpacklo_epi8(s6, s7), _mm_unpackhi_epi8(s6, s7));
                        // Bytes 0-3 (u) and 4-7 (v) of elements 0-3, 4-7, 8-11, 12-15.
                        let u0 = _mm_unpacklo_epi16(t0l, t1l);
                        let u1 = _mm_unpackhi_epi16(t0l, t1l);
                        let u2 = _mm_unpacklo_epi16(t0h, t1h);
                        let u3 = _mm_unpackhi_epi16(t0h, t1h);
                        let v0 = _mm_unpacklo_epi16(t2l, t3l);
                        let v1 = _mm_unpackhi_epi16(t2l, t3l);
                        let v2 = _mm_unpacklo_epi16(t2h, t3h);
                        let v3 = _mm_unpackhi_epi16(t2h, t3h);
                        let o = dst.add(128 * b).cast::<__m128i>();
                        _mm_storeu_si128(o, _mm_unpacklo_epi32(u0, v0));
                        _mm_storeu_si128(o.add(1), _mm_unpackhi_epi32(u0, v0));
                        _mm_storeu_si128(o.add(2), _mm_unpacklo_epi32(u1, v1));
                        _mm_storeu_si128(o.add(3), _mm_unpackhi_epi32(u1, v1));
                        _mm_storeu_si128(o.add(4), _mm_unpacklo_epi32(u2, v2));
                        _mm_storeu_si128(o.add(5), _mm_unpackhi_epi32(u2, v2));
                        _mm_storeu_si128(o.add(6), _mm_unpacklo_epi32(u3, v3));
                        _mm_storeu_si128(o.add(7), _mm_unpackhi_epi32(u3, v3));
                    }
                }
                _ => return 0,
            }
        }
        blocks * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<const W: usize>() {
        for m in [0usize, 1, 15, 16, 17, 31, 32, 33, 100, 1000] {
            let data: Vec<u8> = (0..m * W).map(|i| (i * 131 + 7) as u8).collect();
            let streams: [&[u8]; W] = std::array::from_fn(|k| &data[k * m..(k + 1) * m]);
            let mut fast = vec![0u8; m * W];
            unsplit_bytes(streams, &mut fast);
            let mut slow = vec![0u8; m * W];
            unsplit_scalar(streams, &mut slow, 0, m);
            assert_eq!(fast, slow, "W={W} m={m}");
            for i in 0..m {
                for k in 0..W {
                    assert_eq!(slow[i * W + k], data[k * m + i]);
                }
            }
        }
    }

    /// The SSE2 kernels (x86_64) agree with the scalar version, tails included.
    #[test]
    fn simd_matches_scalar() {
        check::<2>();
        check::<4>();
        check::<8>();
        check::<3>();
    }

    #[test]
    fn bytes_view() {
        let mut v = [0u32; 2];
        as_bytes_mut(&mut v)[..4].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(v, [u32::from_ne_bytes([1, 2, 3, 4]), 0]);
    }
}
