//! Byte-class masks of a 64-byte window, one bit a byte, 16 bytes a step with SSE2 (part of
//! every x86_64 target): the step the scanners' ASCII window paths share.
//!
//! Invariant: bit k of `masks64(w, classes)[i]` is set iff byte k of `w` is in the i-th byte
//! set that `classes` returns for the 16-byte part holding byte k (as `_mm_movemask_epi8`
//! reads it: the top bit of each byte).

use std::arch::x86_64::*;

/// The bytes of `x` in `lo..lo + n` (an ASCII range): the range shifted to the bottom of the
/// signed bytes and compared once. Bytes >= 0x80 may land anywhere: callers mask them with
/// the non-ASCII mask.
#[inline(always)]
pub fn in_range(x: __m128i, lo: u8, n: u8) -> __m128i {
    // SAFETY: SSE2 is part of every x86_64 target (this module is built only there); these
    // are register operations.
    unsafe {
        let shifted = _mm_add_epi8(x, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
        _mm_cmplt_epi8(shifted, _mm_set1_epi8((0x80u8 + n) as i8))
    }
}

/// The bytes of `x` equal to `c`.
#[inline(always)]
pub fn eq(x: __m128i, c: u8) -> __m128i {
    // SAFETY: as in `in_range`.
    unsafe { _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8)) }
}

/// The bytes in `x` or in `y`.
#[inline(always)]
pub fn or(x: __m128i, y: __m128i) -> __m128i {
    // SAFETY: as in `in_range`.
    unsafe { _mm_or_si128(x, y) }
}

/// `x` with ASCII letters folded to lower case (and other bytes changed: mask them).
#[inline(always)]
pub fn lower(x: __m128i) -> __m128i {
    // SAFETY: as in `in_range`.
    unsafe { _mm_or_si128(x, _mm_set1_epi8(0x20)) }
}

/// One `u64` a class over the window (see the module docs).
#[inline(always)]
pub fn masks64<const N: usize>(
    w: &[u8; 64],
    classes: impl Fn(__m128i) -> [__m128i; N],
) -> [u64; N] {
    let mut m = [0u64; N];
    for (part, chunk) in w.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is part of every x86_64 target; `chunk` is 16 readable bytes and
        // `_mm_loadu_si128` takes any alignment.
        let v = unsafe { _mm_loadu_si128(chunk.as_ptr().cast()) };
        for (mask, c) in m.iter_mut().zip(classes(v)) {
            // SAFETY: as in `in_range`.
            let bits = unsafe { _mm_movemask_epi8(c) };
            *mask |= ((bits as u32 & 0xFFFF) as u64) << (16 * part);
        }
    }
    m
}
