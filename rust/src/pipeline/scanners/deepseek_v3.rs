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

use super::table::{ranges_of, Classes};
use super::{class, hir_of, is_byte_level, is_isolating_split, repeated_class};
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

    /// Calls `f(start, end)` with each piece of step 3 in the piece `[i, end)` of steps 1-2
    /// of group `g`.
    #[inline(always)]
    fn words(
        &self,
        b: &[u8],
        mut i: usize,
        g: u8,
        f: &mut impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<usize> {
        let mut gap = i;
        while let Some((x, n)) = self.in_piece(b, i, g) {
            match self.match_at(b, i, x, n, g) {
                Some(e) => {
                    if gap < i {
                        f(gap, i)?;
                    }
                    f(i, e)?;
                    i = e;
                    gap = e;
                }
                None => i += n,
            }
        }
        if gap < i {
            f(gap, i)?;
        }
        Ok(i)
    }

    /// Calls `f(start, end)` with each piece of `seg`, in order (see the module docs).
    #[inline]
    pub fn for_each_piece(
        &self,
        seg: &str,
        mut f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        let b = seg.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let (c, n) = self.t.at(b, i);
            if c & N != 0 {
                // An N chunk: up to three N chars, whole.
                let mut e = i + n;
                for _ in 0..2 {
                    if e >= b.len() {
                        break;
                    }
                    let (c, m) = self.t.at(b, e);
                    if c & N == 0 {
                        break;
                    }
                    e += m;
                }
                f(i, e)?;
                i = e;
            } else {
                i = self.words(b, i, c & K, &mut f)?;
            }
        }
        Ok(())
    }
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
    sound.then_some(t)
}

#[cfg(test)]
#[path = "deepseek_v3_tests.rs"]
mod tests;
