//! Falcon's pre-tokenizer in one scanner.
//!
//! The `Sequence`: 1. `Punctuation` (`Contiguous`); 2. `ByteLevel` without prefix space,
//! with GPT-2's regex; 3. `Digits(individual_digits=false)`; 4. `Split` `[0-9][0-9][0-9]`,
//! `Isolated`, not inverted. Steps 1 and 2 see the text's chars; steps 3 and 4 come after
//! `ByteLevel` and see HF's byte-level chars, one a byte (`char_of`), so byte 0xBD of `½`
//! (C2 BD) is the char `½`, a number, and a piece may end inside a multi-byte char.
//!
//! Invariant: [`Falcon::for_each_piece`] yields the pieces the generic interpreter makes of
//! a segment under this Sequence (see the parent module). The classes: Pu is the generic
//! step's own predicate (HF's `is_punc`); L, N, S are `\p{L}`, `\p{N}`, `\s` as the regex
//! path reads them (regex-syntax); P is every other char; a byte is numeric when its
//! byte-level char is `char::is_numeric`, a digit when that char is in step 4's class.
//! Checked at load (else not recognised): L, N, S and Pu are pairwise disjoint (so Pu ⊆ P);
//! `'` is Pu; the numeric bytes below 0x80 are exactly the digits `0-9`, and no lead byte
//! (0xC0 and up) is numeric; the ASCII classes are the ones the window path hard-codes.
//!
//! Every step isolates, so the pieces are the text cut at every boundary where some step
//! cuts, each step's cuts taken within the pieces of the steps before it. Below, boundary k
//! between chars lies between x = c(k-1) and y = c(k), z = c(k+1) (none past the end).
//! The scanner cuts at k iff `C12(k) ∨ C3(k) ∨ C4(k)`:
//!
//! - 1 cuts where Pu-ness changes; a Pu run is one piece, a piece Q of non-Pu chars holds
//!   no `'`.
//! - 2, GPT-2's regex `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` on
//!   each piece of 1 (the generic step runs tiktoken's spelling of it, `R50K_PATTERN`: possessive
//!   runs, and `\s++$|\s+(?!\S)|\s` for `\s+(?!\S)|\s+`, the same matches; see
//!   `encode/pretok/r50k.rs` for its rules). On a Pu run (all P, first char not a contraction's
//!   `'`, since no letter is Pu) ` ?[^\s\p{L}\p{N}]+` takes it whole: no cut inside. In a non-Pu
//!   piece Q no contraction matches (no `'`); every char starts a match; a match at an L, N or P
//!   char is its maximal run of that class; at an S char of a maximal S run [a, j): the run if j is
//!   Q's end, else the run but its last char if it has two or more, else the char; that last char,
//!   if it is the space U+0020 and is followed (in Q, not S) by an L, N or P char, takes that
//!   char's run (` ?X+`), else it is alone. So inside Q, k is cut iff: x, y ∉ S and their classes
//!   (L, N, P) differ; or x ∈ S, y ∉ S and x is not U+0020; or x ∉ S, y ∈ S; or x, y ∈ S and z
//!   exists, z ∉ S and z ∉ Pu (z in Q: the run does not reach Q's end, and y is its last char).
//!   `C12(k)`: Pu-ness changes, or both are non-Pu and the rule above cuts. (Both Pu: no cut; one
//!   Pu: cut.) It reads x, y, z only.
//! - 3 cuts between two bytes exactly where their numeric-ness changes (a byte-local rule,
//!   whatever the pieces): `C3(k)` for every byte boundary k, also inside a char.
//! - 4 on a piece R of 3: the leftmost non-overlapping `[0-9]{3}` of R. Digits are numeric
//!   bytes, so they lie in numeric pieces of 3. A maximal run of digit bytes [a, a+m) is
//!   never cut inside by 1-3 (digits are N, not Pu, one-byte chars), and the byte before a
//!   is not a digit, so the search finds the triples a, a+3, ... while they fit: `C4(k)`
//!   iff k = a + 3j, 0 ≤ j ≤ ⌊m/3⌋, m ≥ 3. (The run's end is also cut by 3: the byte after
//!   a digit is ASCII or a lead byte, never numeric.) From a piece start p at a digit (p
//!   is a or a cut a + 3j), the cuts after p in the run are at p + 3, p + 6, ... and the
//!   run's end: the next piece ends at p + min(3, run length from p).
//!
//! Two paths compute these cuts, from any piece start p (no cut at k > p reads a byte
//! before p, once 4's triples are counted from p when p is at a digit, as above; so each
//! path may hand over to the other at any piece start):
//! - [`Falcon::piece_end`], one char at a time: classes from the table (with a bit for
//!   chars holding a numeric byte, whose inner boundaries 3 may cut), the rules as written.
//!   Inside a run of one class with no S or numeric-byte bit nothing cuts, so such runs are
//!   only walked.
//! - [`Falcon::window`], 64 bytes at a time where they start with ASCII: one bit a byte a
//!   class (SSE2 compares of ranges hard-coded for ASCII, checked against the table at
//!   load), the rules as shifts and masks, 4 by a loop over the digit runs of three or more.
//!   It answers for boundaries 1 to `classified - 3` (x, y, z and the two bytes after y,
//!   which 4's run start reads, are classified), where `classified` counts the leading
//!   ASCII bytes of the window that lie in the text.

use super::table::{ranges_of, Classes};
use super::{class, hir_of, is_byte_level, is_digits, is_isolating_split, kind};
use crate::encode::pretok::span;
use crate::error::Result;
use crate::pipeline::byte_level::char_of;
use crate::pipeline::unicode_classes::punctuation_ranges;
use regex_syntax::hir::HirKind;
use serde_json::Value;
use std::sync::OnceLock;

/// Step 4's pattern, as the file writes it.
pub const THREE_DIGITS: &str = "[0-9][0-9][0-9]";

/// Class bits: `\p{L}`, `\p{N}`, `\s`, HF's punctuation, "its UTF-8 holds a numeric byte",
/// the space U+0020; `END` stands for no char (past the end of the text).
const L: u8 = 1;
const N: u8 = 2;
const S: u8 = 4;
const PU: u8 = 8;
const NB: u8 = 16;
const SP: u8 = 32;
const END: u8 = 64;

/// Window length: one bit of a `u64` per byte.
use super::window::{self, WINDOW};

/// Bits 0, 3, 6, ..., 63: the starts of consecutive triples.
const THIRDS: u64 = 0x9249_2492_4924_9249;

struct Tables {
    classes: Classes,
    /// By byte: its byte-level char is numeric.
    numeric: [bool; 256],
}

pub struct Falcon {
    t: &'static Tables,
}

/// `C12(k)` (module docs) of x, y and, when both are S, z.
#[inline(always)]
fn cut12(x: u8, y: u8, z: impl FnOnce() -> u8) -> bool {
    if (x ^ y) & PU != 0 {
        return true;
    }
    match (x & S != 0, y & S != 0) {
        // Both Pu: no L or N bit (checked at load), so no change.
        (false, false) => (x ^ y) & (L | N) != 0,
        (true, false) => x & SP == 0,
        (false, true) => true,
        (true, true) => z() & (S | PU | END) == 0,
    }
}

impl Falcon {
    /// The scanner, if `steps` are exactly Falcon's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<Falcon>> {
        let [s1, s2, s3, s4] = steps else {
            return Ok(None);
        };
        let same = kind(s1) == Some("Punctuation")
            && s1.get("behavior").and_then(Value::as_str) == Some("Contiguous")
            && is_byte_level(s2, true)
            && is_digits(s3, false)
            && is_isolating_split(s4, THREE_DIGITS);
        if !same {
            return Ok(None);
        }
        static TABLES: OnceLock<Option<Tables>> = OnceLock::new();
        Ok(TABLES.get_or_init(tables).as_ref().map(|t| Falcon { t }))
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

    /// The class bits and UTF-8 length of the char at byte `k` of `b`, `(END, 0)` past the
    /// end.
    #[inline(always)]
    fn at(&self, b: &[u8], k: usize) -> (u8, usize) {
        if k < b.len() {
            self.t.classes.at(b, k)
        } else {
            (END, 0)
        }
    }

    /// `C3` between bytes `k - 1` and `k` of `b`.
    #[inline(always)]
    fn cut3(&self, b: &[u8], k: usize) -> bool {
        self.t.numeric[b[k - 1] as usize] != self.t.numeric[b[k] as usize]
    }

    /// The first `C3` cut after byte `from` inside the char that ends at byte `e` of `b`.
    #[cold]
    #[inline(never)]
    fn inner_cut(&self, b: &[u8], from: usize, e: usize) -> Option<usize> {
        (from + 1..e).find(|&k| self.cut3(b, k))
    }

    /// The end of the piece that starts at byte `i` (< `b.len()`) of `b`, a `str`'s bytes
    /// (`i` may lie inside a char, after a cut of 3): the first boundary after `i` where the
    /// module docs' rules cut.
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        if b[i].is_ascii_digit() {
            // 4 from a piece start at a digit.
            return i + digit_run(b, i);
        }
        // The char holding byte i (a continuation byte follows a lead byte of its char).
        let mut s = i;
        while b[s] & 0xC0 == 0x80 {
            s -= 1;
        }
        let (mut x, n) = self.t.classes.at(b, s);
        let mut k = s + n;
        if x & NB != 0 {
            if let Some(c) = self.inner_cut(b, i, k) {
                return c;
            }
        }
        while k < b.len() {
            let (y, ny) = self.t.classes.at(b, k);
            // Inside a run of one class with no S or NB bit nothing cuts: not 1-2 (same
            // class, not S), not 3 (no numeric byte on either side, as y is no digit),
            // not 4 (no digit).
            if y == x && x & (S | NB) == 0 {
                k += ny;
                continue;
            }
            if self.cut3(b, k) || cut12(x, y, || self.at(b, k + ny).0) {
                return k;
            }
            if b[k].is_ascii_digit() {
                // A digit run starts at k after a numeric byte (no cut of 3): 4 cuts at k
                // if it holds three digits, else the run's end is the next cut.
                let m = digit_run(b, k);
                return if m == 3 { k } else { k + m };
            }
            if y & NB != 0 {
                if let Some(c) = self.inner_cut(b, k, k + ny) {
                    return c;
                }
            }
            x = y;
            k += ny;
        }
        b.len()
    }
}

/// The digits from byte `i` of `b`, up to three.
#[inline(always)]
fn digit_run(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .take(3)
        .take_while(|x| x.is_ascii_digit())
        .count()
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
    let (s, sp, l, n) = (m.s & valid, m.sp & valid, m.l & valid, m.n & valid);
    let pu = m.graph & valid & !l & !n;
    let prev = |v: u64| v << 1;
    let next = |v: u64| v >> 1;
    let c12 = (pu ^ prev(pu))
        | (((l ^ prev(l)) | (n ^ prev(n))) & !s & !prev(s))
        | (prev(s & !sp) & !s)
        | (s & !prev(s))
        | (prev(s) & s & next(valid & !s & !pu));
    // Numeric bytes are the digits in ASCII (checked at load).
    let c3 = n ^ prev(n);
    let mut c4 = 0;
    let mut runs = n & !prev(n) & next(n) & next(next(n));
    while runs != 0 {
        let a = runs.trailing_zeros();
        runs &= runs - 1;
        let end = a + (!(n >> a)).trailing_zeros();
        let upto = if end >= 63 {
            u64::MAX
        } else {
            (2u64 << end) - 1
        };
        c4 |= (THIRDS << a) & upto;
    }
    ((c12 | c3 | c4) & span(1, lim + 1), classified)
}

/// One bit a byte of a window, for each class; `non_ascii` marks bytes >= 0x80, for which
/// the other masks mean nothing. `graph` is `!`-`~` (Pu is `graph` but letters and digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Masks {
    non_ascii: u64,
    s: u64,
    sp: u64,
    l: u64,
    n: u64,
    graph: u64,
}

/// The class bits of ASCII byte `x` as the window path reads them: S `\t`-`\r` and the
/// space, SP the space, L `A-Za-z`, N and NB `0-9`, Pu the other chars of `!`-`~`.
/// [`tables`] checks that the table agrees on every ASCII byte.
fn ascii_bits(x: u8) -> u8 {
    let mut bits = 0;
    for (on, bit) in [
        (matches!(x, 0x09..=0x0D | b' '), S),
        (x == b' ', SP),
        (x.is_ascii_alphabetic(), L),
        (x.is_ascii_digit(), N | NB),
        (x.is_ascii_graphic() && !x.is_ascii_alphanumeric(), PU),
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
    let (non_ascii, [s, sp, l, n, graph]) = window::scalar_masks(w, |x| {
        let bits = ascii_bits(x);
        [
            bits & S != 0,
            bits & SP != 0,
            bits & L != 0,
            bits & N != 0,
            x.is_ascii_graphic(),
        ]
    });
    Masks {
        non_ascii,
        s,
        sp,
        l,
        n,
        graph,
    }
}

/// The masks, 16 bytes per step with SSE2 (part of every x86_64 target).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    use crate::encode::pretok::byte_masks::{eq, in_range, lower, masks64, or};
    let [non_ascii, s, sp, l, n, graph] = masks64(w, |v| {
        [
            v,
            or(in_range(v, 0x09, 5), eq(v, b' ')),
            eq(v, b' '),
            in_range(lower(v), b'a', 26),
            in_range(v, b'0', 10),
            in_range(v, b'!', 94),
        ]
    });
    Masks {
        non_ascii,
        s,
        sp,
        l,
        n,
        graph,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// Whether the UTF-8 of `c` holds a byte whose byte-level char is numeric.
fn has_numeric_byte(c: char) -> bool {
    let mut buf = [0u8; 4];
    c.encode_utf8(&mut buf)
        .bytes()
        .any(|x| char_of(x).is_numeric())
}

/// The tables, from the generic steps' predicates and the patterns' syntax trees; `None` if
/// the classes are not of the shape the proof assumes (see the module docs).
fn tables() -> Option<Tables> {
    let hir = hir_of(THREE_DIGITS)?;
    let digit_class = match hir.kind() {
        HirKind::Concat(v) if v.len() == 3 => {
            let c = class(&v[0])?;
            if class(&v[1])? != c || class(&v[2])? != c {
                return None;
            }
            ranges_of(c)
        }
        _ => return None,
    };
    let mut numeric = [false; 256];
    for x in 0..=255u8 {
        let c = char_of(x);
        numeric[x as usize] = c.is_numeric();
        let digit = digit_class.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        // Digits (step 4's class) are exactly the ASCII digits, the numeric ASCII bytes too;
        // no lead byte is numeric.
        if digit != x.is_ascii_digit()
            || (x < 0x80 && numeric[x as usize] != x.is_ascii_digit())
            || (x >= 0xC0 && numeric[x as usize])
        {
            return None;
        }
    }
    // GPT-2's classes as its regex reads them (regex-syntax's tables).
    let of = |p: &str| Some(ranges_of(class(&hir_of(p)?)?));
    let (l, n, s) = (of(r"\p{L}")?, of(r"\p{N}")?, of(r"\s")?);
    let sp = [(' ', ' ')];
    // HF's `is_punc` (`is_punctuation`): ASCII punctuation or `\p{P}`.
    let ascii: Vec<(char, char)> = (0..128u8)
        .map(char::from)
        .filter(char::is_ascii_punctuation)
        .map(|c| (c, c))
        .collect();
    let classes = Classes::build(
        &[
            (&l, L),
            (&n, N),
            (&s, S),
            (&sp, SP),
            (&ascii, PU),
            (punctuation_ranges(), PU),
        ],
        &[(has_numeric_byte, NB)],
    );
    let disjoint = (0..=char::MAX as u32).filter_map(char::from_u32).all(|c| {
        let bits = classes.of_u32(c as u32) & (L | N | S | PU);
        bits & bits.wrapping_sub(1) == 0
    });
    let ascii_ok = (0..0x80u8).all(|x| classes.at(&[x], 0).0 == ascii_bits(x));
    (disjoint && ascii_ok && classes.of_u32('\'' as u32) & PU != 0)
        .then_some(Tables { classes, numeric })
}

#[cfg(test)]
#[path = "falcon_tests.rs"]
mod tests;
