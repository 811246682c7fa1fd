//! DeepSeek V3's pre-tokenizer in one scanner.
//!
//! The `Sequence` (all `Split`s `Isolated`, not inverted):
//! 1. `\p{N}{1,3}`;
//! 2. `[K]+` (K: `一-龥`, hiragana U+3040-U+309F, katakana U+30A0-U+30FF);
//! 3. `A[A-Za-z]+|X?[LM]+| ?[PS]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+` (A: the 32 ASCII
//!    punctuation chars, X: `[^\r\n\p{L}\p{P}\p{S}]`, LM: `[\p{L}\p{M}]`, PS: `[\p{P}\p{S}]`);
//! 4. `ByteLevel` without prefix space or regex (cuts nothing).
//!
//! Invariant: [`DeepSeekV3::for_each_piece`] yields the pieces the generic interpreter makes
//! of a segment under this Sequence (see the parent module). Every class is read from the
//! patterns' own syntax trees (step 3's pieces are checked to spell the pattern string, so
//! they are its classes); checked at load: K and N share no char; no N char is in A, LM,
//! PS or `\s`, and the space is not N; the newline class is exactly {`\n`, `\r`} and lies in
//! `\s`; A and `[A-Za-z]` are ASCII.
//!
//! Why one pass makes the three steps' pieces:
//! - Step 1's matches are each maximal N run cut in chunks of three from its start (greedy,
//!   leftmost); its pieces are those chunks and the non-N gaps between them.
//! - Step 2 cuts each piece at its K runs' ends; as K holds no N char, a K run never meets
//!   an N chunk, so step 2's pieces are the N chunks, the maximal K runs, and the maximal
//!   runs of chars in neither N nor K ("other" runs): the *group* of a char (N, K or other)
//!   and N's chunks of three decide them, which the scanner reads first.
//! - Step 3 runs on each of these pieces alone, its end the end of the text the regex sees
//!   (so `(?!\S)` holds there). On an N chunk it matches nothing (no N char is in A, LM, PS,
//!   `\s` or is a space, and each alternative needs one of these first, or an X char then
//!   an LM char), so a chunk stays whole. On the other pieces [`DeepSeekV3::match_at`]
//!   emulates the regex (Oniguruma's leftmost-first alternation, greedy backtracking) at
//!   each position i, c(i) the char at i, alternatives in order:
//!   1. `A[A-Za-z]+`: c(i) ∈ A and c(i+1) an ASCII letter; the letter run is maximal (nothing
//!      follows it in the alternative).
//!   2. `X?[LM]+`: matches iff c(i) ∈ LM, or c(i) ∈ X and c(i+1) ∈ LM; either way c(i) is
//!      taken (by X or the run) and the LM run from i+1 is maximal: the match ends at the
//!      first char after i not in LM.
//!   3. ` ?[PS]+[\r\n]*`: with the space taken if c(i) is a space and c(i+1) ∈ PS; else
//!      (backtracked) it needs c(i) ∈ PS. Then the maximal PS run, then the maximal newline
//!      run (nothing after either to backtrack for).
//!   4. `\s*[\r\n]+`: `\s*` takes the maximal `\s` run [i, e) and gives back until a newline
//!      follows: the match ends after the last newline r in [i, e) (c(e) ∉ `\s`, so no
//!      newline, which lies in `\s`; and c(r+1) is no newline as r is the last). It matches
//!      iff the run holds a newline.
//!   5. `\s+(?!\S)`: [i, e) if e is the piece's end; else [i, e - 1 char) if the run holds
//!      two chars or more (the char given back is `\s`, so not `\S`); else no match.
//!   6. `\s+`: [i, e).
//!
//!   No alternative matches empty; where none matches at i, c(i) joins the gap before the
//!   next match, which `Isolated` keeps as a piece.
//!
//! Two paths find the pieces, from any piece start (a piece starts with an N chunk, a
//! match or a gap, and none of these reads a char before it), so each path may hand over to
//! the other at any piece start ([`super::window`]):
//! - [`DeepSeekV3::piece_end`], one char at a time: an N chunk, else the match at the start,
//!   else the gap up to the next position where one matches or the group ends.
//! - [`window`], 64 bytes at a time where they start with ASCII. In ASCII (checked at load)
//!   N is the digits (D), K is empty, A and PS are the 32 punctuation chars (P), AL and LM
//!   the letters (L), `\s` is `\t`-`\r` and the space (S; B the blanks, S without `\n` and
//!   `\r`), X is every char but the letters, P, `\n` and `\r`. So a char before a letter run
//!   is taken by the run (alternatives 1 and 2) iff it starts a match there and is a B char,
//!   a control char (neither L, D, P nor S), or a P char (alternative 1). Every char starts a
//!   match or a gap unless an earlier match takes it. Alternative 3 takes a whole maximal P
//!   run (so a P char after another is never the first of a match), the newline run after
//!   it, and the space before it: a space followed by a P char always starts a match (no
//!   match takes it but as its first). Alternatives 4-5 end a `\s` run after its last
//!   newline or give its last char back, so a B char before a letter starts a match too.
//!   The cuts at a boundary k, from these:
//!   - D: a D run's ends and every third char from its start (step 1); the group changes.
//!   - L: a run's end; its start j, or j - 1 if c(j-1) is B or a control char, or a P char
//!     with neither a P char nor the space before it (then the P run is that one char).
//!   - P (the runs not taken by a letter run): a run's start a, or a - 1 after a space; the
//!     end of the newline run from the run's end.
//!   - S, a run [a, e) (after a P run, from the end of the newlines that run took): its
//!     start; after its last newline; then if the rest [t, e) is not empty and c(e) is no
//!     D char (the group goes on: alternative 5 gives a char back), at e - 1 if the rest
//!     holds two chars or more, and at e unless c(e-1) joins what follows (a B char before a
//!     letter, a space before a P char).
//!   - A gap (control chars before no letter) adds no cut: its ends are the ends of the
//!     matches around it.
//!
//!   A cut at k reads chars up to k + 1, except that an S run's cuts read to its end: the
//!   window answers up to two bytes before its first byte not classified, and no further
//!   than the start of an S run of two chars or more that reaches that byte.

use super::table::{ranges_of, Classes};
use super::window::{self, WINDOW};
use super::{class, hir_of, is_byte_level, is_isolating_split, repeated_class};
use crate::encode::pretok::span;
use crate::error::Result;
use serde_json::Value;
use std::sync::OnceLock;

/// The patterns of steps 1-3, as the file writes them.
pub const DIGITS: &str = "\\p{N}{1,3}";
pub const KANA_HAN: &str = "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+";
pub const WORDS: &str = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";

/// Step 3's classes, as its pattern spells them (checked at load to make up [`WORDS`]).
const A_CLASS: &str = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~]";
const ALPHA: &str = "[A-Za-z]";
const X_CLASS: &str = "[^\r\n\\p{L}\\p{P}\\p{S}]";
const LM_CLASS: &str = "[\\p{L}\\p{M}]";
const PS_CLASS: &str = "[\\p{P}\\p{S}]";
const NL_CLASS: &str = "[\r\n]";
const SPACE: &str = "\\s";

/// Class bits: step 1's N, step 2's K, step 3's A, ASCII letters, X, LM, PS and `\s`.
const N: u8 = 1;
const K: u8 = 2;
const A: u8 = 4;
const AL: u8 = 8;
const X: u8 = 16;
const LM: u8 = 32;
const PS: u8 = 64;
const S: u8 = 128;

pub struct DeepSeekV3 {
    t: &'static Classes,
}

impl DeepSeekV3 {
    /// The scanner, if `steps` are exactly DeepSeek V3's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<DeepSeekV3>> {
        let [s1, s2, s3, s4] = steps else {
            return Ok(None);
        };
        let same = is_isolating_split(s1, DIGITS)
            && is_isolating_split(s2, KANA_HAN)
            && is_isolating_split(s3, WORDS)
            && is_byte_level(s4, false);
        if !same {
            return Ok(None);
        }
        static TABLE: OnceLock<Option<Classes>> = OnceLock::new();
        Ok(TABLE.get_or_init(table).as_ref().map(|t| DeepSeekV3 { t }))
    }

    /// The class bits and UTF-8 length of the char at byte `i` of `b`, if `i` is inside
    /// `b` and the char is of group `g` (`0` other, `K`; see the module docs).
    #[inline(always)]
    fn in_piece(&self, b: &[u8], i: usize, g: u8) -> Option<(u8, usize)> {
        if i >= b.len() {
            return None;
        }
        let (c, n) = self.t.at(b, i);
        (c & (N | K) == g).then_some((c, n))
    }

    /// The end of the run from byte `i` of chars of group `g` with a bit of `bits`.
    #[inline(always)]
    fn run_end(&self, b: &[u8], mut i: usize, g: u8, bits: u8) -> usize {
        while let Some((c, n)) = self.in_piece(b, i, g) {
            if c & bits == 0 {
                break;
            }
            i += n;
        }
        i
    }

    /// The end of step 3's match at byte `i` (a char of class `x`, `n` bytes long) of the
    /// piece of group `g`, or `None` where no alternative matches (module docs, 1-6).
    #[inline(always)]
    fn match_at(&self, b: &[u8], i: usize, x: u8, n: usize, g: u8) -> Option<usize> {
        let y = self.in_piece(b, i + n, g).map_or(0, |(c, _)| c);
        // 1.
        if x & A != 0 && y & AL != 0 {
            return Some(self.run_end(b, i + n, g, AL));
        }
        // 2.
        if x & LM != 0 || (x & X != 0 && y & LM != 0) {
            return Some(self.run_end(b, i + n, g, LM));
        }
        // 3.
        let space_taken = b[i] == b' ' && y & PS != 0;
        if space_taken || x & PS != 0 {
            let e = self.run_end(b, i + n, g, PS);
            return Some(if g == 0 { newline_run_end(b, e) } else { e });
        }
        if x & S == 0 {
            return None;
        }
        // 4-6: the `\s` run [i, e), its last newline, its last char's start.
        let mut e = i;
        let mut after_newline = None;
        let mut last = i;
        while let Some((c, m)) = self.in_piece(b, e, g) {
            if c & S == 0 {
                break;
            }
            if matches!(b[e], b'\r' | b'\n') {
                after_newline = Some(e + 1);
            }
            last = e;
            e += m;
        }
        if let Some(r) = after_newline {
            return Some(r);
        }
        let piece_ends = self.in_piece(b, e, g).is_none();
        Some(if !piece_ends && last > i { last } else { e })
    }

    /// The end of the piece that starts at byte `i` (< `b.len()`) of `b`, a `str`'s bytes
    /// (see the module docs).
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let (c, n) = self.t.at(b, i);
        let mut e = i + n;
        if c & N != 0 {
            // An N chunk: up to three N chars, whole.
            for _ in 0..2 {
                match self.in_piece(b, e, N) {
                    Some((_, m)) => e += m,
                    None => break,
                }
            }
            return e;
        }
        let g = c & K;
        if let Some(end) = self.match_at(b, i, c, n, g) {
            return end;
        }
        // A gap: up to the next char where a match starts, or the group's end.
        while let Some((x, m)) = self.in_piece(b, e, g) {
            if self.match_at(b, e, x, m, g).is_some() {
                break;
            }
            e += m;
        }
        e
    }

    /// Calls `f(start, end)` with each piece of `seg`, in order (see the module docs).
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
}

/// The pieces `w` (64 bytes of text from a piece start) ends, and how many of its leading
/// bytes are ASCII: bit k of the first is set iff a piece starts at `w[k]`, for every k >= 1
/// up to the last set bit; none is set when no boundary after 0 is sure (module docs).
#[inline(always)]
fn window(w: &[u8; WINDOW]) -> (u64, u32) {
    let m = masks(w);
    let classified = m.non_ascii.trailing_zeros();
    if classified < 3 {
        return (0, classified);
    }
    // Boundaries up to `lim` read chars up to `lim + 1`, all classified.
    let mut lim = classified - 2;
    let valid = if classified == 64 {
        u64::MAX
    } else {
        (1u64 << classified) - 1
    };
    let (l, d, p) = (m.l & valid, m.d & valid, m.p & valid);
    let (s, nl, sp) = (m.s & valid, m.n & valid, m.sp & valid);
    let prev = |v: u64| v << 1;
    let next = |v: u64| v >> 1;
    let blank = s & !nl;
    let control = valid & !(l | d | p | s);
    // D: the runs' ends, then every third char from a run's start.
    let mut cuts = d ^ prev(d);
    let d4 = d & prev(d) & prev(prev(d)) & prev(prev(prev(d)));
    let mut chunk = d & !prev(d);
    while chunk != 0 {
        chunk = (chunk << 3) & d4;
        cuts |= chunk;
    }
    // L: a run's end; its start, or the char before it that its match takes.
    let taken = blank | control | (p & !prev(p) & !prev(sp));
    let l_start = l & !prev(l);
    cuts |= (prev(l) & !l) | (next(l_start) & taken) | (l_start & !prev(taken));
    // P: the runs no letter run takes; the space before one; the newlines after one.
    let p_lone = p & taken & next(l);
    let p_start = p & !prev(p) & !p_lone;
    let p_end = prev(p & !p_lone) & !p;
    cuts |= (next(p_start) & sp) | (p_start & !prev(sp));
    cuts |= (p_end & !nl) | (nl.wrapping_add(p_end & nl) & !nl);
    // S: a run's start (not a newline a P run took); a one-char run's end unless it joins.
    let eaten = nl & prev(p);
    let s_start = s & !prev(s);
    let joins = (blank & next(l)) | (sp & next(p));
    cuts |= (s_start & !eaten) | prev(s_start & !next(s) & !joins);
    // S runs of two chars or more, one at a time.
    let mut runs = s_start & next(s) & span(0, lim + 1);
    while runs != 0 {
        let a = runs.trailing_zeros();
        runs &= runs - 1;
        let e = a + (!(s >> a)).trailing_zeros();
        if e >= classified {
            // Where it ends, and so where its cuts lie, is past what the window read.
            lim = a;
            break;
        }
        let from = if eaten >> a & 1 != 0 {
            a + (!(nl >> a)).trailing_zeros()
        } else {
            a
        };
        let newlines = nl & span(from, e);
        let t = if newlines != 0 {
            64 - newlines.leading_zeros()
        } else {
            from
        };
        cuts |= 1 << t;
        if t < e && d >> e & 1 == 0 {
            if e - t >= 2 {
                cuts |= 1 << (e - 1);
            }
            if joins >> (e - 1) & 1 == 0 {
                cuts |= 1 << e;
            }
        } else {
            cuts |= 1 << e;
        }
    }
    (cuts & span(1, lim + 1), classified)
}

/// One bit a byte of a window, for each ASCII class the window reads; `non_ascii` marks
/// bytes >= 0x80, for which the other masks are clear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Masks {
    non_ascii: u64,
    l: u64,
    d: u64,
    p: u64,
    s: u64,
    n: u64,
    sp: u64,
}

/// The class bits of ASCII byte `x` (module docs: N the digits, no K, A and PS the 32
/// punctuation chars, AL and LM the letters, `\s` `\t`-`\r` and the space, X all but the
/// letters, punctuation, `\n` and `\r`). [`table`] checks that the patterns' classes agree on
/// every ASCII byte.
fn ascii_bits(x: u8) -> u8 {
    let punct = x.is_ascii_punctuation();
    let letter = x.is_ascii_alphabetic();
    let mut bits = 0;
    for (on, bit) in [
        (x.is_ascii_digit(), N),
        (punct, A | PS),
        (letter, AL | LM),
        (!(letter || punct || matches!(x, b'\n' | b'\r')), X),
        (matches!(x, 0x09..=0x0D | b' '), S),
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
    let (non_ascii, [l, d, p, s, n, sp]) = window::scalar_masks(w, |x| {
        [
            x.is_ascii_alphabetic(),
            x.is_ascii_digit(),
            x.is_ascii_punctuation(),
            matches!(x, 0x09..=0x0D | b' '),
            matches!(x, b'\n' | b'\r'),
            x == b' ',
        ]
    });
    Masks {
        non_ascii,
        l,
        d,
        p,
        s,
        n,
        sp,
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
            in_range(lower(v), b'a', 26),
            in_range(v, b'0', 10),
            // `!`-`~`; the letters and digits are taken out below.
            in_range(v, b'!', 94),
            or(in_range(v, 0x09, 5), eq(v, b' ')),
            or(eq(v, b'\n'), eq(v, b'\r')),
            eq(v, b' '),
        ]
    });
    let [non_ascii, l, d, graph, s, n, sp] = m;
    Masks {
        non_ascii,
        l,
        d,
        p: graph & !l & !d,
        s,
        n,
        sp,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// The end of the run of `\r` and `\n` from byte `i` of `b` (in a piece of the other
/// group, to which both belong: checked at load).
#[inline(always)]
fn newline_run_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b'\r' | b'\n') {
        i += 1;
    }
    i
}

/// The class of a syntax tree that is one class.
fn class_of(pattern: &str) -> Option<Vec<(char, char)>> {
    Some(ranges_of(class(&hir_of(pattern)?)?))
}

/// The class table, from the patterns' syntax trees; `None` if one is not of the shape the
/// proof assumes.
fn table() -> Option<Classes> {
    let spelled = format!(
        "{A_CLASS}{ALPHA}+|{X_CLASS}?{LM_CLASS}+| ?{PS_CLASS}+{NL_CLASS}*|{SPACE}*{NL_CLASS}+\
         |{SPACE}+(?!\\S)|{SPACE}+"
    );
    if spelled != WORDS {
        return None;
    }
    let digits = hir_of(DIGITS)?;
    let n = ranges_of(repeated_class(&digits, 1, Some(3))?);
    let kana_han = hir_of(KANA_HAN)?;
    let k = ranges_of(repeated_class(&kana_han, 1, None)?);
    let (a, al) = (class_of(A_CLASS)?, class_of(ALPHA)?);
    let (x, lm, ps) = (class_of(X_CLASS)?, class_of(LM_CLASS)?, class_of(PS_CLASS)?);
    let (nl, s) = (class_of(NL_CLASS)?, class_of(SPACE)?);
    if nl != [('\n', '\n'), ('\r', '\r')] || a.iter().chain(&al).any(|&(_, hi)| !hi.is_ascii()) {
        return None;
    }
    let t = Classes::build(
        &[
            (&n, N),
            (&k, K),
            (&a, A),
            (&al, AL),
            (&x, X),
            (&lm, LM),
            (&ps, PS),
            (&s, S),
        ],
        &[],
    );
    let sound = (0..=char::MAX as u32).all(|cp| {
        let c = t.of_u32(cp);
        let n_ok = c & N == 0 || (c & (K | A | LM | PS | S) == 0 && cp != u32::from(b' '));
        let nl_ok = !(cp == 0x0A || cp == 0x0D) || c & (S | N | K) == S;
        n_ok && nl_ok
    });
    // The window path's ASCII classes.
    let ascii = (0..0x80u8).all(|x| t.of_u32(u32::from(x)) == ascii_bits(x));
    (sound && ascii).then_some(t)
}

#[cfg(test)]
#[path = "deepseek_v3_tests.rs"]
mod tests;
