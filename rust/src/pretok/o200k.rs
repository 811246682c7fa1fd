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
//!   [p, a), then `W+` needs a W char where `U*` stopped. If text[a] ∈ W, `W+`
//!   takes the maximal W run [a, b) and C is tried at b (optional: always
//!   succeeds, so nothing is retried). Else `U*` gives back chars one by one
//!   until it stops before a W char: the last W char k in [p, a) (W chars in a
//!   U run are the Lm/Lo/M ones); `W+` then takes just k (the char after k is a
//!   U \ W char, or text[a] ∉ W) and C is tried after k. No W in [p, a] → fail.
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

use super::classes::{piece, CharClasses, END, L, N, S, U, W};
use crate::error::Result;

/// The o200k splitter.
#[derive(Clone, Copy)]
pub struct O200k {
    t: &'static CharClasses,
}

impl Default for O200k {
    fn default() -> Self {
        Self::new()
    }
}

impl O200k {
    pub fn new() -> Self {
        O200k {
            t: CharClasses::get(),
        }
    }

    /// Calls `f` with each piece of `text`, in order.
    #[inline]
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str) -> Result<()>,
    ) -> Result<()> {
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let end = self.piece_end(b, i);
            f(piece(text, i, end)?)?;
            i = end;
        }
        Ok(())
    }

    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let t = self.t;
        let c0 = b[i];
        let (c, len) = t.at(b, i);
        let is_x = c & (L | N) == 0 && c0 != b'\r' && c0 != b'\n';
        if c & (U | W) != 0 || is_x {
            if let Some(e) = self.word(b, i, len, is_x) {
                return e;
            }
        }
        if c & N != 0 {
            let mut k = i + len;
            for _ in 0..2 {
                let (d, l) = t.at(b, k);
                if d & N == 0 {
                    break;
                }
                k += l;
            }
            return k;
        }
        let p_start = if c & (L | N | S) == 0 {
            Some(i + len)
        } else if c0 == b' ' {
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
            // A4: rest of the P run, then [\r\n/]*.
            loop {
                let (e, l) = t.at(b, k);
                if e & (L | N | S | END) != 0 {
                    break;
                }
                k += l;
            }
            while matches!(b.get(k), Some(b'\r' | b'\n' | b'/')) {
                k += 1;
            }
            return k;
        }
        // A5-A7 (c ∈ S here: every L/M char was taken by A1/A2, N by A3, P by A4).
        let mut k = i;
        let mut last = i;
        let mut last_nl_end = None;
        let mut count = 0usize;
        loop {
            let (e, l) = t.at(b, k);
            if e & S == 0 {
                break;
            }
            if matches!(b.get(k), Some(b'\r' | b'\n')) {
                last_nl_end = Some(k + 1);
            }
            last = k;
            count += 1;
            k += l;
        }
        if let Some(e) = last_nl_end {
            e
        } else if k >= b.len() || count < 2 {
            // A6 to the end of the text, or A7's single char. (`k > i` unless the
            // char at i were not S, which cannot happen; `max` keeps progress.)
            k.max(i + len)
        } else {
            last
        }
    }

    /// A1 then A2 at `i` (first char `len` bytes long, `is_x` if it is in X).
    #[inline(always)]
    fn word(&self, b: &[u8], i: usize, len: usize, is_x: bool) -> Option<usize> {
        if is_x {
            if let Some(e) = self.a1(b, i + len) {
                return Some(e);
            }
        }
        if let Some(e) = self.a1(b, i) {
            return Some(e);
        }
        if is_x {
            if let Some(e) = self.a2(b, i + len) {
                return Some(e);
            }
        }
        self.a2(b, i)
    }

    /// `U*W+C?` from `p`.
    #[inline(always)]
    fn a1(&self, b: &[u8], p: usize) -> Option<usize> {
        let t = self.t;
        let mut a = p;
        let mut last_w_end = None;
        loop {
            let (d, l) = t.at(b, a);
            if d & U == 0 {
                break;
            }
            a += l;
            if d & W != 0 {
                last_w_end = Some(a);
            }
        }
        let mut e = a;
        loop {
            let (d, l) = t.at(b, e);
            if d & W == 0 {
                break;
            }
            e += l;
        }
        if e > a {
            Some(contraction_end(b, e))
        } else {
            last_w_end.map(|k| contraction_end(b, k))
        }
    }

    /// `U+W*C?` from `p`.
    #[inline(always)]
    fn a2(&self, b: &[u8], p: usize) -> Option<usize> {
        let t = self.t;
        let mut a = p;
        loop {
            let (d, l) = t.at(b, a);
            if d & U == 0 {
                break;
            }
            a += l;
        }
        if a == p {
            return None;
        }
        loop {
            let (d, l) = t.at(b, a);
            if d & W == 0 {
                break;
            }
            a += l;
        }
        Some(contraction_end(b, a))
    }
}

/// End of `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` at `k`.
#[inline(always)]
fn contraction_end(b: &[u8], k: usize) -> usize {
    if b.get(k) != Some(&b'\'') {
        return k;
    }
    let lower = |j: usize| b.get(j).map(|x| x.to_ascii_lowercase());
    match (lower(k + 1), lower(k + 2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => k + 2,
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => k + 3,
        // ſ (U+017F) folds to s.
        (Some(0xC5), Some(0xBF)) => k + 3,
        _ => k,
    }
}
