//! The cl100k splitter's fast path: every piece boundary in 64 bytes of ASCII at once.
//!
//! Invariant: given a window `w` of 64 bytes of text that starts at a piece boundary,
//! [`boundaries`] returns `Some((starts, last))` where `starts` has bit `q` set iff a piece of
//! [`CL100K_PATTERN`](super::CL100K_PATTERN) starts at `w[q]`, for every `q <= last`, and
//! `last > 0`; or `None` when it cannot be sure of any boundary after 0. Which bytes follow
//! the window never changes a boundary at or before `last`.
//!
//! Why: the scalar splitter (`cl100k.rs`) decides each piece by branching on the class of its
//! first chars, and those branches follow the text, so the predictor misses about once a
//! piece. Here the classes of 64 bytes come from a few vector compares, the boundaries from
//! shifts and masks, and what is left per piece is slicing. English and code are more than
//! 99.6% ASCII; anything else (and every case this file is not sure of) goes to the scalar
//! splitter.
//!
//! The rules, with `cl100k.rs`'s numbers; bit `q` of a mask is `w[q]`, `prev(m)` is `m << 1`
//! (bit 0 sees "no char", which is what a boundary at 0 means), `L N S` the classes, `NL`
//! `\r\n`, `SP` the space, `P` everything else, `X = P | S & !NL`:
//! - 4: a `P` char starts a piece unless the char before is `P` (same possessive run) or a
//!   space (a space before `P` is always the start of its own piece, and takes the run).
//! - 1: a `'` that starts a piece and is followed by `s d m t` / `ll ve re` (any case) is a
//!   2- or 3-char piece; the char after it starts a piece.
//! - 2: an `L` char starts a piece if the char before is not `L`, not `X` that starts a piece
//!   (that char takes the run), and not a non-`\r\n` space (always a start, see 5-8); and
//!   after a contraction (1).
//! - 3: runs of `N` split every three chars from their first.
//! - 5-8: `\r\n` right after a `P` run belong to its piece (`[\r\n]*+`). In what is left of a
//!   whitespace run `[s, r)`: `s` starts a piece, so does the char after its last `\r\n` (if
//!   inside the run), and, if at least two chars follow that last `\r\n` (or `s`), the run's
//!   last char (`\s+(?!\S)` gives it back). A run must end inside the window before any of
//!   this is sure; 5 (`\s++$`) cannot apply, since a char follows the run.

use super::cl100k::contraction_ci;

/// Window length: one bit of a `u64` per byte.
pub const WINDOW: usize = 64;

/// Class masks of a window (bit `q` = byte `q`); `non_ascii` marks bytes >= 0x80, for which
/// the other masks mean nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Masks {
    pub non_ascii: u64,
    pub letter: u64,
    pub digit: u64,
    pub space: u64,
    pub newline: u64,
    pub blank: u64,
    pub apostrophe: u64,
}

/// `\s` among ASCII bytes (Unicode White_Space: `\t \n \v \f \r` and the space).
#[inline(always)]
fn is_space(x: u8) -> bool {
    matches!(x, 0x09..=0x0D | b' ')
}

/// The masks, byte by byte (the reference for the vector version, and the path on targets
/// without SSE2).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(crate) fn masks_scalar(w: &[u8; WINDOW]) -> Masks {
    let mut m = Masks {
        non_ascii: 0,
        letter: 0,
        digit: 0,
        space: 0,
        newline: 0,
        blank: 0,
        apostrophe: 0,
    };
    for (q, &x) in w.iter().enumerate() {
        let bit = 1u64 << q;
        let set = |mask: &mut u64, on: bool| *mask |= if on { bit } else { 0 };
        set(&mut m.non_ascii, x >= 0x80);
        set(&mut m.letter, x.is_ascii_alphabetic());
        set(&mut m.digit, x.is_ascii_digit());
        set(&mut m.space, is_space(x));
        set(&mut m.newline, x == b'\r' || x == b'\n');
        set(&mut m.blank, x == b' ');
        set(&mut m.apostrophe, x == b'\'');
    }
    m
}

/// The masks, 16 bytes per step with SSE2 (part of every x86_64 target).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn masks(w: &[u8; WINDOW]) -> Masks {
    use std::arch::x86_64::*;
    let mut m = [0u64; 7];
    for (part, chunk) in w.chunks_exact(16).enumerate() {
        // SAFETY: SSE2 is enabled on every x86_64 target, `chunk` is 16 readable bytes and
        // `_mm_loadu_si128` takes any alignment; the rest are register operations.
        let bits = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            // `x` in `lo..lo + n` (ASCII): shift the range to the bottom of the signed bytes
            // and compare once. Bytes >= 0x80 may land anywhere; `non_ascii` masks them.
            let in_range = |x: __m128i, lo: u8, n: u8| {
                let shifted = _mm_add_epi8(x, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
                _mm_cmplt_epi8(shifted, _mm_set1_epi8((0x80u8 + n) as i8))
            };
            let eq = |x: __m128i, c: u8| _mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8));
            let lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
            let blank = eq(v, b' ');
            [
                _mm_movemask_epi8(v),
                _mm_movemask_epi8(in_range(lower, b'a', 26)),
                _mm_movemask_epi8(in_range(v, b'0', 10)),
                _mm_movemask_epi8(_mm_or_si128(in_range(v, 0x09, 5), blank)),
                _mm_movemask_epi8(_mm_or_si128(eq(v, b'\n'), eq(v, b'\r'))),
                _mm_movemask_epi8(blank),
                _mm_movemask_epi8(eq(v, b'\'')),
            ]
        };
        for (mask, b) in m.iter_mut().zip(bits) {
            *mask |= ((b as u32 & 0xFFFF) as u64) << (16 * part);
        }
    }
    let [non_ascii, letter, digit, space, newline, blank, apostrophe] = m;
    Masks {
        non_ascii,
        letter,
        digit,
        space,
        newline,
        blank,
        apostrophe,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// Bits `lo..hi` (`lo <= hi < 64`).
#[inline(always)]
fn span(lo: u32, hi: u32) -> u64 {
    ((1u64 << hi) - 1) & !((1u64 << lo) - 1)
}

/// Where pieces start in `w`, which must begin at a piece boundary (see the module docs).
#[inline(always)]
pub fn boundaries(w: &[u8; WINDOW]) -> Option<(u64, u32)> {
    let m = masks(w);
    // Only bytes before the first non-ASCII one are classified.
    let valid_len = m.non_ascii.trailing_zeros();
    if valid_len == 0 {
        return None;
    }
    let valid = if valid_len == 64 {
        u64::MAX
    } else {
        (1u64 << valid_len) - 1
    };
    let (letter, digit, space) = (m.letter & valid, m.digit & valid, m.space & valid);
    let (newline, blank) = (m.newline & valid, m.blank & valid);
    let punct = valid & !(letter | digit | space);
    let prev = |x: u64| x << 1;

    // 4 and 1.
    let punct_start = punct & !prev(punct) & !prev(blank);
    let mut after_contraction = 0u64;
    let mut quotes = punct_start & m.apostrophe;
    while quotes != 0 {
        let q = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if let Some(end) = contraction_ci(w, q) {
            if end < WINDOW {
                after_contraction |= 1 << end;
            }
        }
    }

    // 2.
    let letter_start = letter & !prev(letter) & !prev(punct_start) & !prev(space & !newline);

    // 3.
    let mut digit_start = 0u64;
    let mut runs = digit & !prev(digit);
    while runs != 0 {
        let s = runs.trailing_zeros();
        runs &= runs - 1;
        let len = (!(digit >> s)).trailing_zeros();
        for k in (s..s + len).step_by(3) {
            digit_start |= 1 << k;
        }
    }

    // 5-8. `\r\n` runs right after a `P` char go with its piece: adding a run's first bit
    // carries through the run, so the xor marks exactly the run.
    let seeds = newline & prev(punct);
    let taken = (newline.wrapping_add(seeds) ^ newline) & newline;
    let rest = space & !taken;
    let run_start = rest & !prev(rest);
    let mut space_start = run_start;
    let mut long_runs = run_start & (rest >> 1);
    while long_runs != 0 {
        let s = long_runs.trailing_zeros();
        long_runs &= long_runs - 1;
        let r = s + (!(rest >> s)).trailing_zeros();
        if r >= valid_len {
            // This run may go on past what is classified (more spaces after the window, or
            // a non-ASCII space), so only its start is sure.
            continue;
        }
        let nl = newline & span(s, r);
        let tail = if nl == 0 { s } else { 64 - nl.leading_zeros() };
        if tail < r {
            space_start |= 1 << tail;
        }
        if r >= tail + 2 {
            space_start |= 1 << (r - 1);
        }
    }

    // Every rule above decides a boundary from the chars before it, except the contraction
    // (up to two chars ahead) and the whitespace runs (their end and the char after it). A
    // contraction that would need a char past the window is not taken, and what the window
    // shows of it cannot be a boundary either way; a run that reaches past is skipped. So
    // every boundary up to the last classified byte is sure.
    let starts =
        (1 | punct_start | after_contraction | letter_start | digit_start | space_start) & valid;
    let last = 63 - starts.leading_zeros();
    (last > 0).then_some((starts, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretok::classes::{CharClasses, L, N, NL, S};

    #[test]
    fn ascii_classes_match_the_pattern_classes() {
        let t = CharClasses::get();
        for x in 0u8..0x80 {
            let mut w = [b'a'; WINDOW];
            w[5] = x;
            let c = t.ascii[x as usize];
            for m in [masks(&w), masks_scalar(&w)] {
                let bit = |mask: u64| mask >> 5 & 1 == 1;
                assert!(!bit(m.non_ascii), "{x:#x}");
                assert_eq!(bit(m.letter), c & L != 0, "{x:#x} letter");
                assert_eq!(bit(m.digit), c & N != 0, "{x:#x} digit");
                assert_eq!(bit(m.space), c & S != 0, "{x:#x} space");
                assert_eq!(bit(m.newline), c & NL != 0, "{x:#x} newline");
                assert_eq!(bit(m.blank), x == b' ', "{x:#x} blank");
                assert_eq!(bit(m.apostrophe), x == b'\'', "{x:#x} apostrophe");
            }
        }
    }

    /// The invariant, directly: on windows of edge-case ASCII followed by every kind of
    /// continuation, each position up to `last` is a start iff the scalar splitter, run on
    /// the whole text, starts a piece there.
    #[test]
    fn boundaries_are_the_scalar_splitters_up_to_last() {
        const PARTS: &[&str] = &[
            "a", "Z", "s", "S", "t", "d", "m", "l", "L", "v", "e", "E", "r", "'", " ", "  ", "\n",
            "\r", "\t", "\x0b", "\x0c", "1", "22", "333", "4444", ".", "!?", "\x00", "\x1f", "'s",
            "'ll", "'VE", "'Re", "'x", " '", "\n\n", " \n ", "    ",
        ];
        const TAILS: &[&str] = &[
            "",
            " ",
            "  x",
            "a",
            "'",
            "ll",
            "e",
            "1",
            "\n",
            ".",
            "\u{a0}",
            "\u{3000}x",
            "\u{17f}",
            "ſ",
            "é",
            "中",
            "\u{2028}",
            "²",
            "—",
        ];
        let scalar = super::super::cl100k::Cl100k::new();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let mut checked = 0;
        for _ in 0..50_000 {
            let mut text = String::new();
            while text.len() < WINDOW {
                text.push_str(PARTS[next(PARTS.len())]);
            }
            // Sometimes a non-ASCII char inside the window, too.
            if next(4) == 0 {
                let at = next(WINDOW);
                let tail = text.split_off(at);
                text.push_str(TAILS[next(TAILS.len())]);
                text.push_str(&tail);
            }
            for _ in 0..1 + next(3) {
                text.push_str(TAILS[next(TAILS.len())]);
            }
            let b = text.as_bytes();
            let Some(w) = b.first_chunk::<WINDOW>() else {
                continue;
            };
            if w[0] >= 0x80 {
                continue;
            }
            let mut want = 0u64;
            let mut i = 0;
            while i < WINDOW {
                want |= 1 << i;
                i = scalar.piece_end(b, i);
            }
            if let Some((starts, last)) = boundaries(w) {
                let upto = if last == 63 {
                    u64::MAX
                } else {
                    (2u64 << last) - 1
                };
                assert_eq!(starts, want & upto, "{text:?} (last {last})");
                assert!(starts >> last & 1 == 1);
                checked += 1;
            }
        }
        assert!(checked > 30_000, "only {checked} windows had boundaries");
    }

    #[test]
    fn vector_masks_equal_scalar_masks() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let mut w = [0u8; WINDOW];
            for x in &mut w {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                *x = rng as u8;
            }
            assert_eq!(masks(&w), masks_scalar(&w));
        }
    }
}
