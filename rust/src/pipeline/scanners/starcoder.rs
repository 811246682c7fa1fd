//! StarCoder's pre-tokenizer in one scanner.
//!
//! The `Sequence`: 1. `Digits(individual_digits=true)`; 2. `ByteLevel` without prefix space,
//! with GPT-2's regex. Both steps see the text's chars.
//!
//! Invariant: [`StarCoder::for_each_piece`] yields the pieces the generic interpreter makes
//! of a segment under this Sequence (see the parent module). The classes: D is
//! `char::is_numeric`, as the generic `Digits`; L, N, S are `\p{L}`, `\p{N}`, `\s` as the
//! regex path reads them (regex-syntax); P is every other char. Checked at load (else not
//! recognised): L, N and S are pairwise disjoint; the ASCII classes are the ones the window
//! path hard-codes (so the letters of a contraction are L, not D, and `'` is P).
//!
//! Both steps isolate, so the pieces are the text cut at every boundary where step 1 cuts,
//! and where step 2 cuts inside the pieces of step 1. Below, boundary k lies between chars
//! x = c(k-1) and y = c(k), z = c(k+1) (none past the end).
//!
//! - 1 cuts around each D char: at k if xD or yD. Its other pieces are the maximal runs Q
//!   of non-D chars.
//! - 2, GPT-2's regex `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` on
//!   each Q (the generic step runs tiktoken's spelling of it, `R50K_PATTERN`: possessive runs, and
//!   `\s++$|\s+(?!\S)|\s` for `\s+(?!\S)|\s+`, the same matches; see `encode/pretok/r50k.rs` for
//!   its rules). Every char starts a match. Leaving contractions aside: a match at an L, N or P
//!   char is its maximal run of that class; at an S char of a maximal S run [a, j): the run if j is
//!   Q's end, else the run but its last char if it has two or more, else the char; that last char,
//!   if it is the space U+0020 (followed in Q by a non-S char), takes that char's run (` ?X+`),
//!   else it is alone. So for x, y in Q, the base rule `B(k)` cuts iff: x, y ∉ S and their classes
//!   (L, N, P) differ; or x ∈ S, y ∉ S and x is not U+0020; or x ∉ S, y ∈ S; or x, y ∈ S and z
//!   exists, z ∉ S and z ∉ D (z in Q: the run does not reach Q's end, and y is its last char).
//! - Contractions: the first alternative matches only at a piece start that is a `'`
//!   followed by `s`, `d`, `m`, `t` or `ll`, `ve`, `re` (ASCII letters, so in Q), and then
//!   makes that 2- or 3-char piece: no cut inside it, a cut after it (the next match starts
//!   there). Where it does not apply, the `'` is a P char like any other. A contraction ends
//!   in a letter and starts with a `'`, so it never changes whether a later `'` starts a
//!   piece (after a letter, a P char starts one by `B`).
//!
//! The scanner cuts at k iff xD, or yD, or (not inside a contraction) `B(k)`, or k ends a
//! contraction.
//!
//! Two paths compute these cuts, from any piece start (a cut at k > p reads no char before
//! p: `B` reads x, y, z, a contraction starts at a piece start; so each path may hand over
//! to the other at any piece start):
//! - [`StarCoder::piece_end`], one char at a time: classes from the table, the rules as
//!   written; a piece that starts at a contraction is that contraction. Inside a run of
//!   one class with no S or D bit nothing cuts, so such runs are only walked.
//! - [`StarCoder::window`], 64 bytes at a time where they start with ASCII: one bit a byte
//!   a class (SSE2 compares of ranges hard-coded for ASCII, checked against the table at
//!   load), `B` as shifts and masks, contractions by a loop over the `'` where a piece
//!   starts. It answers for boundaries 1 to `classified - 3` (x, y, z, and the two chars
//!   after a `'`, are classified), where `classified` counts the leading ASCII bytes of the
//!   window that lie in the text.

use super::table::{ranges_of, Classes};
use super::{class, hir_of, is_byte_level, is_digits};
use crate::encode::pretok::span;
use crate::error::Result;
use serde_json::Value;
use std::sync::OnceLock;

/// Class bits: `\p{L}`, `\p{N}`, `\s`, numeric (`char::is_numeric`), the space U+0020;
/// `END` stands for no char (past the end of the text).
const L: u8 = 1;
const N: u8 = 2;
const S: u8 = 4;
const D: u8 = 8;
const SP: u8 = 16;
const END: u8 = 64;

/// Window length: one bit of a `u64` per byte.
use super::window::{self, WINDOW};

pub struct StarCoder {
    t: &'static Classes,
}

/// `B(k)` (module docs) of non-D x and y and, when both are S, z.
#[inline(always)]
fn cut_base(x: u8, y: u8, z: impl FnOnce() -> u8) -> bool {
    match (x & S != 0, y & S != 0) {
        // Classes L, N or P (no bit).
        (false, false) => (x ^ y) & (L | N) != 0,
        (true, false) => x & SP == 0,
        (false, true) => true,
        (true, true) => z() & (S | D | END) == 0,
    }
}

/// `'(?:[sdmt]|ll|ve|re)` at byte `i` of `b` (where `b[i] == b'\''`): its end.
#[inline(always)]
fn contraction(b: &[u8], i: usize) -> Option<usize> {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b's' | b'd' | b'm' | b't'), _) => Some(i + 2),
        (Some(b'l'), Some(b'l')) | (Some(b'v'), Some(b'e')) | (Some(b'r'), Some(b'e')) => {
            Some(i + 3)
        }
        _ => None,
    }
}

impl StarCoder {
    /// The scanner, if `steps` are exactly StarCoder's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<StarCoder>> {
        let [s1, s2] = steps else {
            return Ok(None);
        };
        if !(is_digits(s1, true) && is_byte_level(s2, true)) {
            return Ok(None);
        }
        static TABLE: OnceLock<Option<Classes>> = OnceLock::new();
        Ok(TABLE.get_or_init(table).as_ref().map(|t| StarCoder { t }))
    }

    /// Calls `f(start, end)` with each piece of `seg`, in order: from [`Self::window`] where
    /// ASCII lies ahead, else from [`Self::piece_end`] (see the module docs).
    #[inline]
    pub fn for_each_piece(
        &self,
        seg: &str,
        f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        self.scan(seg, &mut window::EachCut(f))
    }

    /// [`Self::for_each_piece`] into `sink`, a window's pieces at once.
    #[inline]
    pub fn scan(&self, seg: &str, sink: &mut impl window::Cuts) -> Result<()> {
        window::scan(seg.as_bytes(), window, |b, i| self.piece_end(b, i), sink)
    }

    /// The class bits of the char at byte `k` of `b`, `END` past the end.
    #[inline(always)]
    fn class_at(&self, b: &[u8], k: usize) -> u8 {
        if k < b.len() {
            self.t.at(b, k).0
        } else {
            END
        }
    }

    /// The end of the piece that starts at byte `i` (< `b.len()`) of `b`, a `str`'s bytes:
    /// the first boundary after `i` where the module docs' rules cut.
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let (mut x, n) = self.t.at(b, i);
        if x & D != 0 {
            return i + n;
        }
        if b[i] == b'\'' {
            if let Some(e) = contraction(b, i) {
                return e;
            }
        }
        let mut k = i + n;
        while k < b.len() {
            let (y, ny) = self.t.at(b, k);
            // Inside a run of one class with no S or D bit nothing cuts (a `'` there starts
            // no piece, so no contraction).
            if y == x && x & (S | D) == 0 {
                k += ny;
                continue;
            }
            if y & D != 0 || cut_base(x, y, || self.class_at(b, k + ny)) {
                return k;
            }
            x = y;
            k += ny;
        }
        b.len()
    }
}

/// The pieces `w` (64 bytes of text from a piece start) ends, and how many of its leading
/// bytes are ASCII: bit q of the first is set iff a piece starts at `w[q]`, for every
/// 1 ≤ q ≤ `classified - 3` (see the module docs).
#[inline(always)]
fn window(w: &[u8; WINDOW]) -> (u64, u32) {
    let m = masks(w);
    let classified = m.non_ascii.trailing_zeros();
    if classified < 4 {
        return (0, classified);
    }
    let lim = classified - 3;
    let valid = if classified == 64 {
        u64::MAX
    } else {
        (1u64 << classified) - 1
    };
    // D is N in ASCII: the digits (checked at load).
    let (s, sp, l, d) = (m.s & valid, m.sp & valid, m.l & valid, m.n & valid);
    let p = valid & !s & !l & !d;
    let prev = |v: u64| v << 1;
    let next = |v: u64| v >> 1;
    let base = (d | prev(d))
        | (((l ^ prev(l)) | (p ^ prev(p))) & !s & !prev(s))
        | (prev(s & !sp) & !s)
        | (s & !prev(s))
        | (prev(s) & s & next(valid & !s & !d));
    // Contractions, at the `'` where a piece starts (`base` has bit 0 at a non-S char: no
    // char before it reads as another class).
    let (mut inside, mut after) = (0u64, 0u64);
    let mut quotes = m.apostrophe & valid & base & span(0, lim + 1);
    while quotes != 0 {
        let q = quotes.trailing_zeros();
        quotes &= quotes - 1;
        // q + 2 < classified: both bytes read are in the window and ASCII.
        let Some(end) = contraction(w, q as usize) else {
            continue;
        };
        // Bits past `lim` are dropped below; `span` takes bits up to 63.
        let end = (end as u32).min(63);
        inside |= span(q + 1, end);
        after |= 1 << end;
    }
    (((base & !inside) | after) & span(1, lim + 1), classified)
}

/// One bit a byte of a window, for each class; `non_ascii` marks bytes >= 0x80, for which
/// the other masks mean nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Masks {
    non_ascii: u64,
    s: u64,
    sp: u64,
    l: u64,
    n: u64,
    apostrophe: u64,
}

/// The class bits of ASCII byte `x` as the window path reads them: S `\t`-`\r` and the
/// space, SP the space, L `A-Za-z`, N and D `0-9`. [`table`] checks that the table agrees
/// on every ASCII byte.
fn ascii_bits(x: u8) -> u8 {
    let mut bits = 0;
    for (on, bit) in [
        (matches!(x, 0x09..=0x0D | b' '), S),
        (x == b' ', SP),
        (x.is_ascii_alphabetic(), L),
        (x.is_ascii_digit(), N | D),
    ] {
        if on {
            bits |= bit;
        }
    }
    bits
}

/// The masks, byte by byte (the reference for the vector version, and the path on targets
/// without SSE2).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn masks_scalar(w: &[u8; WINDOW]) -> Masks {
    let (non_ascii, [s, sp, l, n, apostrophe]) = window::scalar_masks(w, |x| {
        let bits = ascii_bits(x);
        [
            bits & S != 0,
            bits & SP != 0,
            bits & L != 0,
            bits & N != 0,
            x == b'\'',
        ]
    });
    Masks {
        non_ascii,
        s,
        sp,
        l,
        n,
        apostrophe,
    }
}

/// The masks, 16 bytes per step with SSE2 (part of every x86_64 target).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    use crate::encode::pretok::byte_masks::{eq, in_range, lower, masks64, or};
    let [non_ascii, s, sp, l, n, apostrophe] = masks64(w, |v| {
        [
            v,
            or(in_range(v, 0x09, 5), eq(v, b' ')),
            eq(v, b' '),
            in_range(lower(v), b'a', 26),
            in_range(v, b'0', 10),
            eq(v, b'\''),
        ]
    });
    Masks {
        non_ascii,
        s,
        sp,
        l,
        n,
        apostrophe,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// The class table, from GPT-2's classes as its regex reads them and the generic `Digits`'
/// predicate; `None` if the classes are not of the shape the proof assumes.
fn table() -> Option<Classes> {
    let of = |p: &str| Some(ranges_of(class(&hir_of(p)?)?));
    let (l, n, s) = (of(r"\p{L}")?, of(r"\p{N}")?, of(r"\s")?);
    let sp = [(' ', ' ')];
    let t = Classes::build(
        &[(&l, L), (&n, N), (&s, S), (&sp, SP)],
        &[(char::is_numeric, D)],
    );
    let disjoint = (0..=char::MAX as u32).filter_map(char::from_u32).all(|c| {
        let bits = t.of_u32(c as u32) & (L | N | S);
        bits & bits.wrapping_sub(1) == 0
    });
    let ascii_ok = (0..0x80u8).all(|x| t.at(&[x], 0).0 == ascii_bits(x));
    (disjoint && ascii_ok).then_some(t)
}

#[cfg(test)]
#[path = "starcoder_tests.rs"]
mod tests;
