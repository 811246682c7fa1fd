//! The o200k splitter.
//!
//! Invariant: `pieces(text)` are exactly the leftmost-first `find_iter`
//! matches of [`O200K_PATTERN`](super::O200K_PATTERN), the `|`-join of
//!
//! ```text
//! A1 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! A2 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! A3 \p{N}{1,3}
//! A4  ?[^\s\p{L}\p{N}]+[\r\n/]*
//! A5 \s*[\r\n]+
//! A6 \s+(?!\S)
//! A7 \s+
//! ```
//!
//! Why. Write U = `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`, W = `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`,
//! X = `[^\r\n\p{L}\p{N}]`, P = `[^\s\p{L}\p{N}]`, C = the optional contraction.
//! Every char starts a match (L and M by A1/A2, N by A3, other P by A4, S by
//! A7), so matches are contiguous and each piece is the match at its first
//! char c, by the first alternative that matches there, and within it the
//! first success in backtracking order (no possessives here, so backtracking
//! matters):
//! - A1 from p (after the optional prefix): `U*` greedy takes the maximal U run
//!   [p, a), then `W+` needs a W char where `U*` stopped. If `text[a]` ∈ W, `W+`
//!   takes the maximal W run [a, b) and C is tried at b (optional: always
//!   succeeds, so nothing is retried). Else `U*` gives back chars one by one
//!   until it stops before a W char: the last W char k in [p, a) (W chars in a
//!   U run are the Lm/Lo/M ones); `W+` then takes just k (the char after k is a
//!   U \ W char, or `text[a]` ∉ W) and C is tried after k. No W in [p, a] → fail.
//!   The prefix `X?` is greedy: first with c consumed (if c ∈ X: p = after c),
//!   then without (p = c).
//! - A2 from p: `U+` takes the maximal U run [p, a) (fails if empty), then `W*`
//!   the maximal W run from a, then C; nothing after can fail, so no retries.
//!   Same prefix order.
//! - A3: c ∈ N → up to 3 N chars. A4: c ∈ P, or c = ` ` followed by a P char →
//!   the maximal P run, then the maximal run of `\r`, `\n`, `/`.
//! - A5-A7 (c ∈ S): [c, j) the maximal S run. A5: `\s*` backtracks from j to the
//!   last `\r`/`\n` in the run; `[\r\n]+` takes that one char (the next one is
//!   not a newline) → run up to and including it. Else A6: j = end of text →
//!   all; run ≥ 2 chars → all but the last (`(?!\S)` holds before a S char).
//!   Else A7: the single char.
//!
//! C (`(?i:'s|'t|'re|'ve|'m|'ll|'d)`) uses regex-syntax's simple case folding,
//! which adds only `ſ` (U+017F) to the ASCII pairs of these letters.
//!
//! [`Tekken`] splits Mistral's Tekken pattern: A1 and A2 without C, and `\p{N}` for A3.
//! The argument above holds with C matching nothing (where it was tried, the piece ends)
//! and A3 taking one N char, and so do the fast path's rules (`o200k_block.rs`): a `'` is
//! then a P char like any other.
//!
//! [`KimiK2`] splits Kimi K2's pattern: A0 `[\p{Han}]+` before A1, U and W without the Han
//! chars (`&&[^\p{Han}]`), and `[\r\n]*` for A4's `[\r\n/]*`. It reads its classes from
//! [`CharClasses::han_apart`], where U and W hold no Han char and H marks them. A Han char c
//! starts no match of A1-A7 that A0 does not start first, so a piece starting at c is the
//! maximal H run. Elsewhere the argument above holds as it stands: Han chars keep their `\p{L}`
//! and `\p{N}` (the classes X and P read), so only as a U or W char does a Han char differ,
//! where the table has neither bit; and past a piece's first char A3 and A4 take Han chars
//! as they take any N or P char. No Han char is ASCII, so the fast path's rules are o200k's
//! with A4's tail of `\r` and `\n` only.
//!
//! [`Llama4`] splits Llama 4's pattern, o200k's written without `\p{Lu}` and its kin (as
//! llama.cpp's `gpt-4o` pre-tokenizer and Meta's `llama4` tokenizer write it):
//!
//! ```text
//! A1 [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?
//! A2 [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|...)?
//! ```
//!
//! then A3-A7 as in o200k. `(?=[\p{L}])([^a-z])` is one char, a letter but not `a-z`: U =
//! `[\p{L}&&[^a-z]]` and W = `[\p{L}&&[^A-Z]]`, which [`CharClasses::ascii_case`] holds.
//! The argument above reads no more of U and W than that a char in either is a letter or a
//! mark, and so holds for these sets too: every letter but `A-Z` and `a-z` is in both, and a
//! mark in neither (a mark is then an X and a P char, which A1/A2 never take past their
//! first char, and the table says so). C is written out in ASCII, so `ſ` ends no contraction
//! here. On ASCII U and W are o200k's, so the fast path's rules are o200k's; they leave any
//! `'` whose contraction could need a byte they do not classify to this code.
//!
//! One set of rules, `Family`, with C, A3's length, A0 and A4's `/` as parameters, serves
//! the four.

use super::ascii_window::splitter_type;
use super::classes::{ascii_run_end, run3_end, AsciiRun, CharClasses, END, H, L, N, NL, S, U, W};
use super::o200k_block;

splitter_type!(
    /// The o200k splitter.
    O200k,
    o200k_block::boundaries
);

splitter_type!(
    /// The splitter of Mistral's Tekken pattern: o200k's rules with no contraction (`C`) and
    /// single digits (see the module docs).
    Tekken,
    o200k_block::boundaries_tekken
);

splitter_type!(
    /// The splitter of Llama 4's pattern: o200k's rules with letter classes by ASCII case and
    /// contractions without `ſ` (see the module docs), on [`CharClasses::ascii_case`].
    Llama4,
    o200k_block::boundaries,
    classes: CharClasses::ascii_case()
);

splitter_type!(
    /// The splitter of Kimi K2's pattern: o200k's rules with Han runs apart and A4's tail
    /// without `/` (see the module docs), on [`CharClasses::han_apart`].
    KimiK2,
    o200k_block::boundaries_kimi_k2,
    classes: CharClasses::han_apart()
);

impl O200k {
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    pub(super) fn piece_end(&self, b: &[u8], i: usize) -> usize {
        Family::<C_FOLDED, 3, false, true>(self.t).piece_end(b, i)
    }
}

impl Llama4 {
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    pub(super) fn piece_end(&self, b: &[u8], i: usize) -> usize {
        Family::<C_ASCII, 3, false, true>(self.t).piece_end(b, i)
    }
}

impl KimiK2 {
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    pub(super) fn piece_end(&self, b: &[u8], i: usize) -> usize {
        Family::<C_FOLDED, 3, true, false>(self.t).piece_end(b, i)
    }
}

impl Tekken {
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    pub(super) fn piece_end(&self, b: &[u8], i: usize) -> usize {
        Family::<NO_C, 1, false, true>(self.t).piece_end(b, i)
    }
}

/// No `C` (Tekken).
const NO_C: u8 = 0;
/// `C` as `(?i:'s|'t|'re|'ve|'m|'ll|'d)`, whose case folding adds `ſ` to `s` (o200k, Kimi K2).
const C_FOLDED: u8 = 1;
/// `C` as `'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]` (Llama 4).
const C_ASCII: u8 = 2;

/// The rules of the family: `CONTRACTIONS` how the letter alternatives end in `C` (`NO_C`,
/// `C_FOLDED`, `C_ASCII`),
/// `DIGITS` the longest `\p{N}` piece (3 in o200k, 1 in Tekken), `HAN` whether A0 takes Han
/// runs first (Kimi K2, on a table with [`H`]), `SLASH` whether A4's tail takes `/`.
#[derive(Clone, Copy)]
struct Family<const CONTRACTIONS: u8, const DIGITS: usize, const HAN: bool, const SLASH: bool>(
    &'static CharClasses,
);

impl<const CONTRACTIONS: u8, const DIGITS: usize, const HAN: bool, const SLASH: bool>
    Family<CONTRACTIONS, DIGITS, HAN, SLASH>
{
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        if let Some(e) = ascii_piece::<CONTRACTIONS, DIGITS, SLASH>(b, i) {
            return e;
        }
        let t = self.0;
        let (c, len) = t.at(b, i);
        if HAN && c & H != 0 {
            // A0.
            return t.run_end(b, i + len, H);
        }
        let is_x = c & (L | N | NL) == 0;
        // A1/A2 can only match if c ∈ U ∪ W, or c ∈ X is followed by a U ∪ W char
        // (with the prefix taken, both need a U or W char right after it).
        if c & (U | W) != 0 {
            if let Some(e) = self.word(b, i, len, c, is_x) {
                return e;
            }
        } else if is_x && t.at(b, i + len).0 & (U | W) != 0 {
            if let Some(e) = self.word(b, i, len, c, true) {
                return e;
            }
        }
        if c & N != 0 {
            return if DIGITS == 3 {
                t.digits3_end(b, i, len)
            } else {
                i + len
            };
        }
        let p_start = if c & (L | N | S) == 0 {
            Some(i + len)
        } else if b.get(i) == Some(&b' ') {
            let (d, l) = t.at(b, i + 1);
            if d & (L | N | S | END) == 0 {
                Some(i + 1 + l)
            } else {
                None
            }
        } else {
            None
        };
        if let Some(mut k) = p_start {
            // A4: rest of the P run, then [\r\n/]* (or [\r\n]*).
            loop {
                let (e, l) = t.at(b, k);
                if e & (L | N | S | END) != 0 {
                    break;
                }
                k += l;
            }
            return tail_end::<SLASH>(b, k);
        }
        // A5-A7 (c ∈ S here: every L/M char was taken by A1/A2, N by A3, P by A4).
        let run = t.space_run(b, i);
        if let Some(e) = run.last_nl_end {
            e
        } else if run.end >= b.len() || run.count < 2 {
            // A6 to the end of the text, or A7's single char. (`end > i` unless the
            // char at i were not S, which cannot happen; `max` keeps progress.)
            run.end.max(i + len)
        } else {
            run.last
        }
    }

    /// A1 then A2 at `i` (first char `len` bytes long, `is_x` if it is in X).
    #[inline(always)]
    fn word(&self, b: &[u8], i: usize, len: usize, c: u8, is_x: bool) -> Option<usize> {
        let (a1_prefixed, a2_prefixed) = if is_x {
            self.scan(b, i + len)
        } else {
            (None, None)
        };
        if a1_prefixed.is_some() {
            return a1_prefixed;
        }
        // Without the prefix, A1 and A2 need c ∈ U ∪ W.
        let (a1, a2) = if c & (U | W) != 0 {
            self.scan(b, i)
        } else {
            (None, None)
        };
        a1.or(a2_prefixed).or(a2)
    }

    /// The matches of A1's `U*W+C?` and A2's `U+W*C?` from `p`, from one scan:
    /// both start with the maximal U run [p, a) and the maximal W run [a, e).
    /// A1: `Some(C after e)` if e > a, else C after the last W char in [p, a),
    /// if any. A2: `Some(C after e)` if a > p.
    #[inline(always)]
    fn scan(&self, b: &[u8], p: usize) -> (Option<usize>, Option<usize>) {
        let t = self.0;
        // Three-byte chars in both U and W (CJK, kana, Hangul) by bitset; each is W, so the
        // last W char of that stretch ends where it ends.
        let mut a = run3_end(b, p, &t.upper_lower3);
        let mut last_w_end = (a > p).then_some(a);
        let (mut d, mut l) = t.at(b, a);
        while d & U != 0 {
            a += l;
            if d & W != 0 {
                last_w_end = Some(a);
            }
            (d, l) = t.at(b, a);
        }
        // (d, l) is the char at a: the W run starts there.
        let mut e = a;
        while d & W != 0 {
            e += l;
            (d, l) = t.at(b, e);
        }
        if e > a {
            let end = Some(c_end::<CONTRACTIONS>(b, e));
            (end, if a > p { end } else { None })
        } else {
            (
                last_w_end.map(|k| c_end::<CONTRACTIONS>(b, k)),
                if a > p {
                    Some(c_end::<CONTRACTIONS>(b, e))
                } else {
                    None
                },
            )
        }
    }
}

// ASCII kinds for the fast path.
const UP: u8 = 1; // A-Z: U, not W
const LO: u8 = 2; // a-z: W, not U
const DG: u8 = 4; // 0-9: N
const WS: u8 = 8; // \t \n \v \f \r ' ': S
const NLK: u8 = 16; // \r \n
const PU: u8 = 32; // the rest of ASCII: P (and X)
const MB: u8 = 64; // not ASCII

const fn ascii_kinds() -> [u8; 256] {
    let mut k = [MB; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        k[c] = if b.is_ascii_uppercase() {
            UP
        } else if b.is_ascii_lowercase() {
            LO
        } else if b.is_ascii_digit() {
            DG
        } else if b == b'\r' || b == b'\n' {
            WS | NLK
        } else if matches!(b, b'\t' | 0x0B | 0x0C | b' ') {
            WS
        } else {
            PU
        };
        c += 1;
    }
    k
}

static KIND: [u8; 256] = ascii_kinds();

/// Kind of the byte at `k`: `Some(0)` at the end, `None` for a non-ASCII byte.
#[inline(always)]
fn kind(b: &[u8], k: usize) -> Option<u8> {
    match b.get(k) {
        None => Some(0),
        Some(&x) => match KIND[x as usize] {
            MB => None,
            k => Some(k),
        },
    }
}

/// The piece at `i` when the decision needs only ASCII bytes; `None` (use the
/// general code) as soon as a byte it would look at is not ASCII.
///
/// Same rules as the general code, with ASCII classes (a unit test checks
/// `KIND` against the class table): A-Z are U and not W, a-z W and not U,
/// 0-9 N, the six ASCII `\s` chars S, every other ASCII char P, and ASCII has
/// no marks. Letters (the first char, or the char after an X prefix): with
/// [p, a) the upper-case run and [a, e) the lower-case run after it, both
/// stopping at an ASCII byte (or the end) makes them the maximal U and W runs;
/// e > a: A1 matches up to e; e = a (so a > p): A1 fails with and without the
/// prefix (no W char, and an ASCII prefix is no mark), and A2 matches up to a.
/// Either way C follows at e. Other kinds follow A3-A7 as in the general code.
#[inline(always)]
fn ascii_piece<const CONTRACTIONS: u8, const DIGITS: usize, const SLASH: bool>(
    b: &[u8],
    i: usize,
) -> Option<usize> {
    let c = kind(b, i)?;
    let d = kind(b, i + 1)?;
    let p = if c & (UP | LO) != 0 {
        i
    } else if c & (DG | NLK) == 0 && d & (UP | LO) != 0 {
        i + 1
    } else if c & DG != 0 {
        // A3: up to `DIGITS` digits.
        let mut k = i + 1;
        while k < i + DIGITS {
            let e = kind(b, k)?;
            if e & DG == 0 {
                break;
            }
            k += 1;
        }
        return Some(k);
    } else if c & PU != 0 || (b[i] == b' ' && d & PU != 0) {
        // A4: P run, then [\r\n/]* (or [\r\n]*).
        let mut k = if c & PU != 0 { i + 1 } else { i + 2 };
        loop {
            let e = kind(b, k)?;
            if e & PU == 0 {
                break;
            }
            k += 1;
        }
        return Some(tail_end::<SLASH>(b, k));
    } else {
        // A5-A7: c is S.
        let mut k = i;
        let mut last_nl_end = None;
        loop {
            let e = kind(b, k)?;
            if e & WS == 0 {
                break;
            }
            if e & NLK != 0 {
                last_nl_end = Some(k + 1);
            }
            k += 1;
        }
        return Some(if let Some(e) = last_nl_end {
            e
        } else if k >= b.len() || k - i < 2 {
            k
        } else {
            k - 1
        });
    };
    // The SWAR skips only ASCII letters of the run's case; the byte loops finish the run
    // (and give up at a non-ASCII byte, as before).
    let mut a = ascii_run_end(b, p, AsciiRun::Upper);
    while kind(b, a)? & UP != 0 {
        a += 1;
    }
    let mut e = ascii_run_end(b, a, AsciiRun::Lower);
    while kind(b, e)? & LO != 0 {
        e += 1;
    }
    Some(c_end::<CONTRACTIONS>(b, e))
}

/// End of A4's tail from `k`: the run of `\r`, `\n` and, if `SLASH`, `/`.
#[inline(always)]
fn tail_end<const SLASH: bool>(b: &[u8], mut k: usize) -> usize {
    while let Some(&x) = b.get(k) {
        if !(x == b'\r' || x == b'\n' || (SLASH && x == b'/')) {
            break;
        }
        k += 1;
    }
    k
}

/// End of `C?` at `k`: [`contraction_end`] where the family has `C`, else `k`.
#[inline(always)]
fn c_end<const CONTRACTIONS: u8>(b: &[u8], k: usize) -> usize {
    match CONTRACTIONS {
        NO_C => k,
        C_FOLDED => contraction_end::<true>(b, k),
        _ => contraction_end::<false>(b, k),
    }
}

/// End of `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `k` (`'ſ` a contraction iff `LONG_S`).
#[inline(always)]
fn contraction_end<const LONG_S: bool>(b: &[u8], k: usize) -> usize {
    if b.get(k) != Some(&b'\'') {
        return k;
    }
    let lower = |j: usize| b.get(j).map(|x| x.to_ascii_lowercase());
    match (lower(k + 1), lower(k + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => k + 2,
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => k + 3,
        // ſ (U+017F) folds to s.
        (Some(0xC5), Some(0xBF)) if LONG_S => k + 3,
        _ => k,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::pretok::classes::CharClasses;

    #[test]
    fn ascii_kinds_agree_with_the_class_table() {
        let t = CharClasses::get();
        for x in 128..=255u8 {
            assert_eq!(KIND[x as usize], MB);
        }
        for x in 0u8..128 {
            let k = KIND[x as usize];
            let (c, _) = t.at(&[x], 0);
            assert_eq!(k & UP != 0, c & U != 0, "{x}");
            assert_eq!(k & LO != 0, c & W != 0, "{x}");
            assert_eq!(k & DG != 0, c & N != 0, "{x}");
            assert_eq!(k & WS != 0, c & S != 0, "{x}");
            assert_eq!(k & NLK != 0, c & NL != 0, "{x}");
            assert_eq!(k & PU != 0, c & (L | N | S) == 0, "{x}");
            assert_eq!(c & (U | W) != 0, c & L != 0, "ASCII has no marks: {x}");
        }
    }
}
