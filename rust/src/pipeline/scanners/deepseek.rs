//! DeepSeek LLM's pre-tokenizer in one scanner.
//!
//! The `Sequence` (all `Split`s `Isolated`, not inverted; no normalizer runs before):
//! 1. `[\r\n]`;
//! 2. `\s?[L]+` (L: a long list of letter ranges);
//! 3. `\s?[P]+` (P: ASCII `!-/` and `:-~`, fullwidth `！-／` and `：-～`, `‘-‟`,
//!    U+3000-U+3002);
//! 4. `\s+$` (Oniguruma's `$`: end of line, `\s+(?m:$)`);
//! 5. `[C]+` (C: `一-龥`, U+0800-U+4E00, `가`-U+D7FF);
//! 6. `Digits(individual_digits=true)`;
//! 7. `ByteLevel` without prefix space or regex (cuts nothing).
//!
//! Invariant: [`DeepSeek::for_each_piece`] yields the pieces the generic interpreter makes
//! of a segment under this Sequence (see the parent module). S, L, P, C are the classes of
//! the patterns' own syntax trees, N the newline class of step 1; digits (D) are
//! `char::is_numeric`, as the generic `Digits`. Checked at load: N is exactly {`\n`, `\r`}
//! and holds no L or P char; the ASCII classes are the ones the window path hard-codes.
//!
//! Every step isolates: it cuts each piece it is given at its matches' starts and ends, so
//! the pieces are the text cut at every boundary where some step cuts, each step's cuts
//! taken within the pieces of the steps before it. Below, boundary k lies between chars
//! x = c(k-1) and y = c(k), and z = c(k+1), w = c(k+2) (no class past the end); "xL" says
//! x ∈ L. The scanner cuts at k iff `F(k) ∨ T(k) ∨ G(k)`:
//!
//! - Lemma (steps 2 and 3): the leftmost-first matches of `S?X+` in a piece Q are, for each
//!   maximal X run [a, b) of Q, [a-1, b) if a-1 is in Q and c(a-1) ∈ S, else [a, b).
//!   Proof: let the search start at p, Q's start or the end of a match, which by induction
//!   is the end of a maximal X run, so c(p) ∉ X unless p is Q's start. Let [a, b) be the
//!   first maximal X run at or after p. A match starts at i iff c(i) ∈ X, or c(i) ∈ S and
//!   c(i+1) ∈ X; the least such i ≥ p is a-1 if a-1 ≥ p and c(a-1) ∈ S, else a (any X char
//!   at or after p is at or after a). From a-1 the match is c(a-1) and the X run from a;
//!   from a it is the X run from a either way; both end at b. And a-1 ≥ p holds whenever
//!   a-1 is in Q, since a > p when p ends a run. No match is empty; the search goes on at b.
//! - So inside Q (k not at Q's ends) `S?X+` cuts at k iff
//!   `cut_X(k) = (xX ∧ ¬yX) ∨ (¬xX ∧ ¬xS ∧ yX) ∨ (¬yX ∧ yS ∧ zX ∧ z in Q)`:
//!   a run's end; a run's start with no S char before it in Q; an S char before a run.
//! - 1 cuts around each N char: `cut1(k) = xN ∨ yN` (two ASCII bytes, which occur in UTF-8
//!   only as themselves).
//! - `F(k) = cut1 ∨ cut_L ∨ cut_P'`, the cuts of steps 1-3, where in `cut_L` "z in Q" is
//!   dropped (z is in the line unless zN, and N holds no L char) and in `cut_P'` it reads
//!   `¬cut_L(k+1)` (z in y's piece of step 2; a cut at k+1 by step 1 means zN, not P). Where
//!   k is not inside the piece of the step before, that step cuts at k anyway, so reading
//!   each step's formula everywhere changes nothing in the union.
//!   `cut_L(k+1)` needs w only through its third term.
//! - 4, `\s+(?m:$)` on a piece R of step 3 (cut at F): `$` holds at R's end and before a
//!   `\n`; R holds a `\n` only if it is that `\n` alone, which the match covers whole (or,
//!   if `\n` were not in S, does not match). Otherwise a match from i needs every char from
//!   i to R's end in S: the leftmost starts where R's maximal trailing S run does, the one
//!   cut if inside R. So `T(k) = ¬xS ∧ yS ∧ (p ≤ e)`, where p is the first F boundary (or the
//!   end) after k and e the end of the maximal S run from k: the run reaches R's end.
//! - 5 and 6 cut by neighbouring chars only, whatever the pieces: 5 between a C char and a
//!   non-C char (its matches are the maximal C runs), 6 around each numeric char:
//!   `G(k) = (xC ≠ yC) ∨ xD ∨ yD`.
//!
//! Two paths compute these cuts, from any piece start (no cut at k > i reads a char before
//! i, so each path may hand over to the other at any piece start):
//! - [`DeepSeek::piece_end`], one char at a time: classes from the table, the formulas as
//!   written (inside a run of one class with no S, D or N bit none can cut, so such runs
//!   are only walked); for `T` it walks the S run ahead until an F boundary or its end.
//! - [`DeepSeek::window`], 64 bytes at a time where they start with ASCII: one bit a byte
//!   for each class (SSE2 compares of ranges hard-coded for ASCII, checked against the
//!   table at load), the formulas as shifts and masks. It answers only for the boundaries
//!   whose inputs are all classified: `F(k)` reads up to w, so up to 3 bytes before the
//!   first byte not classified (non-ASCII, or past the window or the text), and `T(k)` only
//!   where an F boundary lies inside the run or the run ends within that reach.

use super::table::{ranges_of, Classes};
use super::{hir_of, is_byte_level, is_digits, is_isolating_split, opt_then_run, repeated_class};
use crate::encode::pretok::span;
use crate::error::Result;
use regex_syntax::hir::{HirKind, Look};
use serde_json::Value;
use std::sync::OnceLock;

/// The patterns of steps 1-5, as the file writes them.
pub const NEWLINE: &str = "[\r\n]";
pub const LETTERS: &str = "\\s?[A-Za-z\u{b5}\u{c0}-\u{d6}\u{d8}-\u{f6}\u{f8}-\u{1ba}\u{1bc}-\u{1bf}\u{1c4}-\u{293}\u{295}-\u{2af}\u{370}-\u{373}\u{376}\u{377}\u{37b}-\u{37d}\u{37f}\u{386}\u{388}-\u{38a}\u{38c}\u{38e}-\u{3a1}\u{3a3}-\u{3f5}\u{3f7}-\u{481}\u{48a}-\u{52f}\u{531}-\u{556}\u{10a0}-\u{10c5}\u{13a0}-\u{13f5}\u{13f8}-\u{13fd}\u{1c90}-\u{1cba}\u{1cbd}-\u{1cbf}\u{1d00}-\u{1d2b}\u{1d6b}-\u{1d77}\u{1d79}-\u{1d9a}\u{1e00}-\u{1f15}\u{1f18}-\u{1f1d}\u{1f20}-\u{1f45}\u{1f48}-\u{1f4d}\u{1f50}-\u{1f57}\u{1f59}\u{1f5b}\u{1f5d}\u{1f5f}-\u{1f7d}\u{1f80}-\u{1fb4}\u{1fb6}-\u{1fbc}\u{1fbe}\u{1fc2}-\u{1fc4}\u{1fc6}-\u{1fcc}\u{1fd0}-\u{1fd3}\u{1fd6}-\u{1fdb}\u{1fe0}-\u{1fec}\u{1ff2}-\u{1ff4}\u{1ff6}-\u{1ffc}\u{2102}\u{2107}\u{210a}-\u{2113}\u{2115}\u{2119}-\u{211d}\u{2124}\u{2126}\u{2128}\u{212a}-\u{212d}\u{212f}-\u{2134}\u{2139}\u{213c}-\u{213f}\u{2145}-\u{2149}\u{214e}\u{2183}\u{2184}\u{2c00}-\u{2c7b}\u{2c7e}-\u{2ce4}\u{2ceb}-\u{2cee}\u{2cf2}\u{2cf3}\u{a640}-\u{a66d}\u{a680}-\u{a69b}\u{a722}-\u{a76f}\u{a771}-\u{a787}\u{a78b}-\u{a78e}\u{ab70}-\u{abbf}\u{fb00}-\u{fb06}\u{fb13}-\u{fb17}\u{ff21}-\u{ff3a}\u{ff41}-\u{ff5a}\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+";
pub const PUNCT: &str =
    "\\s?[!-/:-~\u{ff01}-\u{ff0f}\u{ff1a}-\u{ff5e}\u{2018}-\u{201f}\u{3000}-\u{3002}]+";
pub const TRAILING_SPACE: &str = "\\s+$";
pub const CJK: &str = "[\u{4e00}-\u{9fa5}\u{800}-\u{4e00}\u{ac00}-\u{d7ff}]+";

/// Class bits: `\s`, step 2's letters, step 3's punctuation, step 5's CJK, numeric, step 1's
/// newlines.
const S: u8 = 1;
const L: u8 = 2;
const P: u8 = 4;
const C: u8 = 8;
const D: u8 = 16;
const N: u8 = 32;

/// Window length: one bit of a `u64` per byte.
use super::window::{self, WINDOW};

pub struct DeepSeek {
    t: &'static Classes,
}

/// `cut_L(k)` (module docs) of x, y, z.
#[inline(always)]
fn cut_l(x: u8, y: u8, z: u8) -> bool {
    (x & L != 0 && y & L == 0) | (x & (L | S) == 0 && y & L != 0) | (y & (L | S) == S && z & L != 0)
}

/// `F(k)` (module docs) of x, y, z: `Some(cut)`, or `None` when it is `w ∉ L`.
#[inline(always)]
fn cut_f(x: u8, y: u8, z: u8) -> Option<bool> {
    let run_p = (x & P != 0 && y & P == 0) | (x & (P | S) == 0 && y & P != 0);
    if (x | y) & N != 0 || cut_l(x, y, z) || run_p {
        return Some(true);
    }
    if !(y & (P | S) == S && z & P != 0) {
        return Some(false);
    }
    // An S char before a P run: a cut if z is in y's piece of step 2, i.e. no `cut_L(k+1)`.
    let near = (y & L != 0 && z & L == 0) | (y & (L | S) == 0 && z & L != 0);
    if near {
        Some(false)
    } else if z & (L | S) == S {
        None
    } else {
        Some(true)
    }
}

/// `G(k)` (module docs) of x, y.
#[inline(always)]
fn cut_g(x: u8, y: u8) -> bool {
    (x ^ y) & C != 0 || (x | y) & D != 0
}

impl DeepSeek {
    /// The scanner, if `steps` are exactly DeepSeek LLM's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<DeepSeek>> {
        let [s1, s2, s3, s4, s5, s6, s7] = steps else {
            return Ok(None);
        };
        let same = is_isolating_split(s1, NEWLINE)
            && is_isolating_split(s2, LETTERS)
            && is_isolating_split(s3, PUNCT)
            && is_isolating_split(s4, TRAILING_SPACE)
            && is_isolating_split(s5, CJK)
            && is_digits(s6, true)
            && is_byte_level(s7, false);
        if !same {
            return Ok(None);
        }
        static TABLE: OnceLock<Option<Classes>> = OnceLock::new();
        Ok(TABLE.get_or_init(table).as_ref().map(|t| DeepSeek { t }))
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
        window::scan(
            seg.as_bytes(),
            |w| self.window(w),
            |b, i| self.piece_end(b, i),
            sink,
        )
    }

    /// The class bits and UTF-8 length of the char at byte `i` of `b`, `(0, 0)` past the end.
    #[inline(always)]
    fn at(&self, b: &[u8], i: usize) -> (u8, usize) {
        if i < b.len() {
            self.t.at(b, i)
        } else {
            (0, 0)
        }
    }

    /// The end of the piece that starts at byte `i` (< `b.len()`) of `b`, a `str`'s bytes:
    /// the first boundary after `i` where the module docs' formulas cut.
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let (mut x, n) = self.t.at(b, i);
        let mut k = i + n;
        let (mut y, mut ny) = self.at(b, k);
        while k < b.len() {
            // Between two chars of one class with no S, D or N bit, no formula cuts: F's
            // terms need a class change or yS, T needs yS, G a C change or a digit.
            if y == x && x & (S | D | N) == 0 {
                k += ny;
                (y, ny) = self.at(b, k);
                continue;
            }
            if cut_g(x, y) {
                return k;
            }
            let (z, nz) = self.at(b, k + ny);
            if self.f_at(b, k + ny + nz, x, y, z)
                || (x & S == 0 && y & S != 0 && self.run_reaches_cut(b, k, y, ny))
            {
                return k;
            }
            // z, read for F, is the next y.
            (x, y, k, ny) = (y, z, k + ny, nz);
        }
        b.len()
    }

    /// `F(k)` of classes x, y, z, where w starts at byte `at_w` of `b`.
    #[inline(always)]
    fn f_at(&self, b: &[u8], at_w: usize, x: u8, y: u8, z: u8) -> bool {
        match cut_f(x, y, z) {
            Some(cut) => cut,
            None => self.at(b, at_w).0 & L == 0,
        }
    }

    /// `p ≤ e` of `T(k)` (module docs): whether, from the S char at byte `k` (class `x`,
    /// `n` bytes long), the S run reaches an F boundary or the end.
    #[cold]
    #[inline(never)]
    fn run_reaches_cut(&self, b: &[u8], mut k: usize, mut x: u8, mut n: usize) -> bool {
        loop {
            // Boundary k + n, between x (an S char) and y.
            k += n;
            if k >= b.len() {
                return true;
            }
            let (y, ny) = self.t.at(b, k);
            let (z, nz) = self.at(b, k + ny);
            if self.f_at(b, k + ny + nz, x, y, z) {
                return true;
            }
            if y & S == 0 {
                return false;
            }
            (x, n) = (y, ny);
        }
    }

    /// The pieces `w` (64 bytes of text from a piece start) ends, and how many of its
    /// leading bytes are ASCII: bit q of the first is set iff a piece starts at `w[q]`, for
    /// every q ≥ 1 up to the last set bit; none is set when no boundary after 0 is sure
    /// (see the module docs).
    #[inline(always)]
    fn window(&self, w: &[u8; WINDOW]) -> (u64, u32) {
        let m = masks(w);
        let classified = m.non_ascii.trailing_zeros();
        if classified < 4 {
            return (0, classified);
        }
        // Boundaries 1..=lim have x, y, z and w classified.
        let mut lim = classified - 3;
        let valid = if classified == 64 {
            u64::MAX
        } else {
            (1u64 << classified) - 1
        };
        let (s, l, p, d, n) = (m.s & valid, m.l, m.p, m.d, m.n);
        let prev = |v: u64| v << 1;
        let next = |v: u64| v >> 1;
        let cut_l = (prev(l) & !l) | (!prev(l) & !prev(s) & l) | (s & !l & next(l));
        let cut_p = (prev(p) & !p) | (!prev(p) & !prev(s) & p) | (s & !p & next(p) & !next(cut_l));
        let f = n | prev(n) | cut_l | cut_p;
        // No ASCII char is in C (checked at load).
        let mut cuts = f | d | prev(d);
        // T: S runs after a non-S char where nothing else cuts.
        let mut runs = s & !prev(s) & !cuts & span(1, lim + 1);
        while runs != 0 {
            let k = runs.trailing_zeros();
            runs &= runs - 1;
            let e = k + (!(s >> k)).trailing_zeros();
            if f & span(k + 1, e.min(lim) + 1) != 0 {
                cuts |= 1 << k;
            } else if e > lim {
                // Neither an F boundary in reach nor the run's end: not sure from k on.
                lim = k - 1;
                break;
            }
        }
        (cuts & span(1, lim + 1), classified)
    }
}

/// One bit a byte of a window, for each class; `non_ascii` marks bytes >= 0x80, for which
/// the other masks mean nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Masks {
    non_ascii: u64,
    s: u64,
    l: u64,
    p: u64,
    d: u64,
    n: u64,
}

/// The class bits of ASCII byte `x` as the window path reads them: `\s` is `\t`-`\r` and the
/// space, L `A-Za-z`, P `!-/` and `:-~`, D `0-9`, N `\n` and `\r`, no C. [`table`] checks
/// that the patterns' classes agree on every ASCII byte.
fn ascii_bits(x: u8) -> u8 {
    let mut bits = 0;
    for (on, bit) in [
        (matches!(x, 0x09..=0x0D | b' '), S),
        (x.is_ascii_alphabetic(), L),
        (matches!(x, b'!'..=b'/' | b':'..=b'~'), P),
        (x.is_ascii_digit(), D),
        (matches!(x, b'\n' | b'\r'), N),
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
    let (non_ascii, [s, l, p, d, n]) = window::scalar_masks(w, |x| {
        let bits = ascii_bits(x);
        [S, L, P, D, N].map(|bit| bits & bit != 0)
    });
    Masks {
        non_ascii,
        s,
        l,
        p,
        d,
        n,
    }
}

/// The masks, 16 bytes per step with SSE2 (part of every x86_64 target).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    use crate::encode::pretok::byte_masks::{eq, in_range, lower, masks64, or};
    let m = masks64(w, |v| {
        [
            v,
            or(in_range(v, 0x09, 5), eq(v, b' ')),
            in_range(lower(v), b'a', 26),
            // `!`-`~`; the digits are taken out below.
            in_range(v, b'!', 94),
            in_range(v, b'0', 10),
            or(eq(v, b'\n'), eq(v, b'\r')),
        ]
    });
    let [non_ascii, s, l, graph, d, n] = m;
    Masks {
        non_ascii,
        s,
        l,
        p: graph & !d,
        d,
        n,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// The class table, from the patterns' syntax trees; `None` if one is not of the shape the
/// proof assumes.
fn table() -> Option<Classes> {
    let newline = hir_of(NEWLINE)?;
    let nl = super::class(&newline)?;
    if ranges_of(nl) != [('\n', '\n'), ('\r', '\r')] {
        return None;
    }
    let letters = hir_of(LETTERS)?;
    let (s, l) = opt_then_run(&letters)?;
    let punct = hir_of(PUNCT)?;
    let (s2, p) = opt_then_run(&punct)?;
    let trailing = hir_of(TRAILING_SPACE)?;
    let s3 = match trailing.kind() {
        HirKind::Concat(v) if v.len() == 2 => {
            if !matches!(v[1].kind(), HirKind::Look(Look::EndLF)) {
                return None;
            }
            repeated_class(&v[0], 1, None)?
        }
        _ => return None,
    };
    if s2 != s || s3 != s {
        return None;
    }
    let cjk = hir_of(CJK)?;
    let c = repeated_class(&cjk, 1, None)?;
    let (n, s, l, p, c) = (
        ranges_of(nl),
        ranges_of(s),
        ranges_of(l),
        ranges_of(p),
        ranges_of(c),
    );
    let t = Classes::build(
        &[(&n, N), (&s, S), (&l, L), (&p, P), (&c, C)],
        &[(char::is_numeric, D)],
    );
    // The window path's ASCII classes (which also keep N out of L and P).
    (0..0x80u8)
        .all(|x| t.at(&[x], 0).0 == ascii_bits(x))
        .then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::pre_tokenizers::PreTokenizer;
    use crate::pipeline::scanners::window::checks;
    use crate::pipeline::scanners::{
        assert_agree_on, assert_agree_on_random_texts, fused_and_generic,
    };
    use serde_json::json;

    pub(crate) fn json() -> Value {
        crate::pipeline::scanners::known_sequence("scan:deepseek-llm").unwrap()
    }

    const TRICKY: [&str; 22] = [
        "",
        "\n",
        "\r\n",
        "a\r\n  b \n",
        "Hello world!  \n\n  ",
        "trailing spaces   ",
        "\u{3000}\u{3000}x\u{3000}",
        " \u{3000}。，！（ok）",
        "“quoted” ‘single’ — dash",
        "中文测试，你好。한국어 텍스트\u{d7ff}",
        "\u{800}\u{4e00}\u{4e01}\u{9fa5}\u{9fa6}",
        "digits 123 ½ ² ١٢٣ ① 〇 Ⅻ ٣x",
        "héllo µ naïve Ωmega ǅ ﬁ Ａｂｃ",
        "\t\ttabs\t\u{a0}\u{a0}nbsp\u{2009}",
        "😀 emoji😀😀 \u{85}nel",
        "a1b2c3 x9 99 \u{661}\u{662}",
        "   ",
        " a",
        "a ",
        "!!! ?? ..",
        "\u{2028}line sep\u{2029}para",
        "mixed 中a1, 가b\u{3001}z  \r\n",
    ];

    /// Edge-case fragments for long texts: mostly ASCII, as windows see them, with the
    /// non-ASCII chars that stop a window or change a class right after one.
    /// A control char is the one ASCII char in none of S, L, P, D: an S run after it is
    /// where `T` cuts, and the window must see where that run ends.
    const PARTS: [&str; 53] = [
        "a",
        "Zq",
        "word",
        " ",
        "  ",
        "    ",
        "\t",
        "\n",
        "\r\n",
        "\x0b",
        "\x0c",
        "\x00",
        "\x1f",
        "\x7f",
        "1",
        "42",
        " 7",
        ".",
        ",",
        "!?",
        "(",
        ")",
        "_",
        "~",
        "'",
        "-",
        " .",
        ". ",
        " x",
        "x ",
        "\u{a0}",
        "\u{3000}",
        "\u{2003}",
        "\u{85}",
        "é",
        "µ",
        "Ω",
        "中文",
        "가",
        "，",
        "。",
        "“",
        "‘",
        "½",
        "١",
        "😀",
        "\u{301}",
        "Ａ",
        "\x00 ",
        "\x01   ",
        "\x7f \u{a0}",
        "\x00\u{3000}",
        "\x1f  \u{2003}\n",
    ];

    fn long_texts(n: usize) -> Vec<String> {
        checks::long_texts(&PARTS, 0x5EED_D5D5_0000_0001, n)
    }

    #[test]
    fn fused_equals_generic_on_long_mostly_ascii_text() {
        assert_agree_on("scan:deepseek-llm", long_texts(6000));
    }

    /// The two paths agree: each window's boundaries, from any piece start, are the ones
    /// `piece_end` finds, up to the window's last.
    #[test]
    fn windows_equal_piece_end() {
        let d = DeepSeek::recognise(json()["pretokenizers"].as_array().unwrap())
            .unwrap()
            .unwrap();
        let n = checks::windows_equal_piece_end(
            &long_texts(3000),
            |w| d.window(w),
            |b, i| d.piece_end(b, i),
            checks::up_to_last_cut,
        );
        assert!(n > 50_000, "only {n} windows");
    }

    #[test]
    fn vector_masks_equal_scalar_masks() {
        checks::vector_masks_equal_scalar(masks, masks_scalar);
    }

    #[test]
    fn ascii_classes_are_the_patterns() {
        let t = table().expect("the window's ASCII classes are the patterns'");
        assert_eq!(t.of('\n'), S | N);
        assert_eq!(t.of('a'), L | P);
        assert_eq!(t.of('\u{3000}'), S | P | C);
    }

    #[test]
    fn recognised_and_named() {
        let pt = PreTokenizer::from_json(&json()).unwrap();
        assert_eq!(pt.splitter_kinds(), ["scan:deepseek-llm"]);
        let mut other = json();
        other["pretokenizers"][5]["individual_digits"] = json!(false);
        let pt = PreTokenizer::from_json(&other).unwrap();
        assert!(!pt.splitter_kinds().contains(&"scan:deepseek-llm"));
    }

    #[test]
    fn fused_equals_generic_on_tricky_text() {
        assert_agree_on("scan:deepseek-llm", TRICKY);
    }

    #[test]
    fn fused_equals_generic_on_random_text() {
        let (fused, generic) = fused_and_generic("scan:deepseek-llm");
        assert_agree_on_random_texts(
            &fused,
            &generic,
            &[
                "a",
                "Z",
                "q",
                " ",
                "  ",
                "\t",
                "\n",
                "\r",
                "\u{3000}",
                "\u{a0}",
                "\u{2003}",
                "\u{85}",
                "\u{2028}",
                "！",
                "，",
                "。",
                "\u{3001}",
                "\u{3002}",
                "‘",
                "”",
                "\u{201f}",
                "\u{2020}",
                "é",
                "µ",
                "ß",
                "Ω",
                "ǅ",
                "ﬁ",
                "Ａ",
                "ｚ",
                "\u{ff5f}",
                "中",
                "一",
                "龥",
                "\u{9fa6}",
                "가",
                "힣",
                "\u{d7ff}",
                "\u{800}",
                "ก",
                "ー",
                "1",
                "9",
                "0",
                "½",
                "²",
                "١",
                "٣",
                "①",
                "〇",
                "Ⅻ",
                ".",
                ",",
                "!",
                "'",
                "-",
                "_",
                "$",
                "~",
                "/",
                ":",
                "@",
                "😀",
                "\u{301}",
                "𐐀",
                "𞤀",
                "\u{1e944}",
            ],
            331,
        );
    }
}
