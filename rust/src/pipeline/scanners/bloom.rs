//! BLOOM's pre-tokenizer in one scanner.
//!
//! The `Sequence`: 1. `Split` ` ?[^(\s|[.,!?…。，、।۔،])]+`, `Isolated`, not inverted (Oniguruma
//! reads the nested class as a union: X, the chars of a match's run, are every char but
//! `\s`, `(`, `|`, `)` and the ten punctuation chars listed); 2. `ByteLevel` without prefix
//! space or regex (cuts nothing).
//!
//! Invariant: [`Bloom::for_each_piece`] yields the pieces the generic interpreter makes of a
//! segment under this Sequence (see the parent module). X is the class of the pattern's own
//! syntax tree; checked at load: the pattern reads as ` ?X+` (greedy), and the ASCII part of
//! X is the one the window path hard-codes.
//!
//! Step 1's matches are, for each maximal X run [a, b), [a-1, b) if c(a-1) is the space
//! U+0020, else [a, b): the lemma of `deepseek.rs` for `S?X+` with S = {U+0020} (the space
//! is not X, as `\s` holds it). `Isolated` keeps the gaps between matches as pieces too, so
//! the pieces are the text cut at every match's start and end. For boundary k between
//! x = c(k-1) and y = c(k), z = c(k+1) (none past the end), the scanner cuts at k iff
//!
//! `(xX ∧ ¬yX) ∨ (¬xX ∧ x ≠ ' ' ∧ yX) ∨ (¬yX ∧ y = ' ' ∧ zX)`:
//!
//! a run's end; a run's start with no space before it; a space before a run (x is then no
//! X, or the first term cuts already: either way a piece ends there).
//!
//! Two paths compute these cuts, from any piece start (a cut at k > p reads no char before
//! p):
//! - [`Bloom::piece_end`], one char at a time: classes from the table, the rule as written.
//! - [`window`], 64 bytes at a time where they start with ASCII: one bit a byte a class
//!   (SSE2 compares hard-coded for ASCII, checked against the table at load), the rule as
//!   shifts and masks, for boundaries 1 to `classified - 2` (x, y and z classified), where
//!   `classified` counts the leading ASCII bytes of the window that lie in the text.
//!
//! BLOOM's gaps are runs of whitespace and punctuation (`"\n."` is one piece), so the file
//! cut rule does not hold for it (`Fused::keeps_file_cuts`).

use super::table::{ranges_of, Classes};
use super::{class, hir_of, is_byte_level, is_isolating_split};
use crate::encode::pretok::span;
use crate::error::Result;
use regex_syntax::hir::{Hir, HirKind};
use serde_json::Value;
use std::sync::OnceLock;

/// Step 1's pattern, as BLOOM's file writes it.
pub const PATTERN: &str =
    " ?[^(\\s|[.,!?\u{2026}\u{3002}\u{ff0c}\u{3001}\u{0964}\u{06d4}\u{060c}])]+";

/// Class bits: X (a match's run), the space U+0020; `END` stands for no char (past the end
/// of the text).
const X: u8 = 1;
const SP: u8 = 2;
const END: u8 = 64;

use super::window::{self, WINDOW};

pub struct Bloom {
    t: &'static Classes,
}

/// The module docs' rule for boundary k, from the class bits of x, y and (when y is the
/// space) z.
#[inline(always)]
fn cut(x: u8, y: u8, z: impl FnOnce() -> u8) -> bool {
    match (x & X != 0, y & X != 0) {
        (true, false) => true,
        (false, true) => x & SP == 0,
        (true, true) => false,
        (false, false) => y & SP != 0 && z() & X != 0,
    }
}

impl Bloom {
    /// The scanner, if `steps` are exactly BLOOM's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<Bloom>> {
        let [s1, s2] = steps else {
            return Ok(None);
        };
        if !(is_isolating_split(s1, PATTERN) && is_byte_level(s2, false)) {
            return Ok(None);
        }
        static TABLE: OnceLock<Option<Classes>> = OnceLock::new();
        Ok(TABLE.get_or_init(table).as_ref().map(|t| Bloom { t }))
    }

    /// Calls `f(start, end)` with each piece of `seg`, in order: from [`window`] where ASCII
    /// lies ahead, else from [`Self::piece_end`] (see the module docs).
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

    /// The end of the piece that starts at byte `i` (< `b.len()`) of `b`, a `str`'s bytes:
    /// the first boundary after `i` where the module docs' rule cuts.
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let (mut x, n) = self.t.at(b, i);
        let mut k = i + n;
        while k < b.len() {
            let (y, ny) = self.t.at(b, k);
            // Inside an X run, and inside a gap before a char that is not the space, nothing
            // cuts.
            if y & X == x & X && y & SP == 0 {
                x = y;
                k += ny;
                continue;
            }
            let z = || {
                if k + ny < b.len() {
                    self.t.at(b, k + ny).0
                } else {
                    END
                }
            };
            if cut(x, y, z) {
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
/// 1 ≤ q ≤ `classified - 2` (see the module docs).
#[inline(always)]
fn window(w: &[u8; WINDOW]) -> (u64, u32) {
    let m = masks(w);
    let classified = m.non_ascii.trailing_zeros();
    if classified < 3 {
        return (0, classified);
    }
    let lim = classified - 2;
    let valid = if classified == 64 {
        u64::MAX
    } else {
        (1u64 << classified) - 1
    };
    let (x, sp) = (valid & !m.not_x, m.sp & valid);
    let gap = valid & !x;
    let prev = |v: u64| v << 1;
    let next = |v: u64| v >> 1;
    let cuts = (prev(x) & gap) | (prev(gap & !sp) & x) | (sp & next(x));
    (cuts & span(1, lim + 1), classified)
}

/// One bit a byte of a window, for each class; `non_ascii` marks bytes >= 0x80, for which
/// the other masks mean nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Masks {
    non_ascii: u64,
    not_x: u64,
    sp: u64,
}

/// The class bits of ASCII byte `b` as the window path reads them: not X `\t`-`\r`, the
/// space and `(|).,!?`; SP the space. [`table`] checks that the table agrees on every ASCII
/// byte.
fn ascii_bits(b: u8) -> u8 {
    let x = !matches!(
        b,
        0x09..=0x0D | b' ' | b'(' | b'|' | b')' | b'.' | b',' | b'!' | b'?'
    );
    (u8::from(x) * X) | (u8::from(b == b' ') * SP)
}

/// The masks, byte by byte (the reference for the vector version, and the path on targets
/// without SSE2).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn masks_scalar(w: &[u8; WINDOW]) -> Masks {
    let (non_ascii, [not_x, sp]) = window::scalar_masks(w, |b| {
        let bits = ascii_bits(b);
        [bits & X == 0, bits & SP != 0]
    });
    Masks {
        non_ascii,
        not_x,
        sp,
    }
}

/// The masks, 16 bytes per step with SSE2 (part of every x86_64 target).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    use crate::encode::pretok::byte_masks::{eq, in_range, masks64, or};
    let [non_ascii, not_x, sp] = masks64(w, |v| {
        let punct = or(
            or(or(eq(v, b'('), eq(v, b'|')), or(eq(v, b')'), eq(v, b'.'))),
            or(eq(v, b','), or(eq(v, b'!'), eq(v, b'?'))),
        );
        [
            v,
            or(or(in_range(v, 0x09, 5), eq(v, b' ')), punct),
            eq(v, b' '),
        ]
    });
    Masks {
        non_ascii,
        not_x,
        sp,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// X of a pattern read as ` ?X+` (greedy), the optional part the space alone.
fn space_then_run(h: &Hir) -> Option<&regex_syntax::hir::ClassUnicode> {
    let HirKind::Concat(v) = h.kind() else {
        return None;
    };
    let [opt, run] = v.as_slice() else {
        return None;
    };
    match (opt.kind(), run.kind()) {
        (HirKind::Repetition(o), HirKind::Repetition(r))
            if (o.min, o.max, o.greedy) == (0, Some(1), true)
                && (r.min, r.max, r.greedy) == (1, None, true)
                && matches!(o.sub.kind(), HirKind::Literal(l) if &*l.0 == b" ") =>
        {
            class(&r.sub)
        }
        _ => None,
    }
}

/// The class table, from the pattern's own syntax tree; `None` if it is not of the shape the
/// proof assumes.
fn table() -> Option<Classes> {
    let h = hir_of(PATTERN)?;
    let x = ranges_of(space_then_run(&h)?);
    let sp = [(' ', ' ')];
    let t = Classes::build(&[(&x, X), (&sp, SP)], &[]);
    let ascii_ok = (0..0x80u8).all(|b| t.at(&[b], 0).0 == ascii_bits(b));
    ascii_ok.then_some(t)
}

#[cfg(test)]
#[path = "bloom_tests.rs"]
mod tests;
