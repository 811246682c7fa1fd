//! The cl100k splitter.
//!
//! Invariant: `pieces(text)` are exactly the leftmost-first `find_iter`
//! matches of [`CL100K_PATTERN`](super::CL100K_PATTERN):
//!
//! ```text
//! '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//!   |\s++$|\s*[\r\n]|\s+(?!\S)|\s
//! ```
//!
//! Why. Every char is in exactly one of L, N, S = `\s`, P = `[^\s\p{L}\p{N}]`;
//! let X = `[^\r\n\p{L}\p{N}]` = P ∪ S \ {`\r`, `\n`}. Every char starts a match
//! (L by 2, N by 3, P by 4, S by 8), so matches are contiguous and each piece is
//! the match at its first char c (next char d), by the first alternative that
//! matches there:
//! 1. c = `'` and d.. is, case-insensitively, `s|d|m|t` → 2 chars, `ll|ve|re` →
//!    3 chars. The fold is regex-syntax's simple case folding, which adds only
//!    `ſ` (U+017F, folds to `s`) to the ASCII pairs of these letters (a unit test
//!    checks this against regex-syntax).
//! 2. c ∈ X and d ∈ L → c and the maximal L run after it; c ∈ L → the maximal L
//!    run. (`?+` takes c when c ∈ X and never gives it back, but without it
//!    `\p{L}` would fail at c anyway; `\p{L}++` ends the alternative.)
//! 3. c ∈ N → up to 3 N chars (greedy, nothing follows).
//! 4. c = ` ` and d ∈ P, or c ∈ P → c, the maximal P run after, then the
//!    maximal run of `\r`/`\n`.
//! 5. (to 8.) c ∈ S (and 2 did not take it): let [c, j) be the maximal S run.
//!    5: j = end of text → the whole run. 6: `\s*` backtracks from j to the
//!    last `\r`/`\n` in the run, if any → the run up to and including it.
//!    7: run of ≥ 2 chars → all but its last char. 8: the single char.

use super::ascii_window::splitter_type;
use super::cl100k_block;
use super::classes::{END, L, N, NL, S};

splitter_type!(
    /// The cl100k splitter.
    Cl100k,
    cl100k_block::boundaries
);

impl Cl100k {
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    pub(super) fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let t = self.t;
        let c0 = b[i];
        if c0 == b'\'' {
            if let Some(e) = contraction_ci(b, i) {
                return e;
            }
        }
        let (c, len) = t.at(b, i);
        if c & L != 0 {
            return self.t.run_end(b, i + len, L);
        }
        if c & N != 0 {
            // 3: up to three N chars.
            return t.digits3_end(b, i, len);
        }
        // c ∈ P ∪ S.
        let is_x = c & NL == 0;
        let (d, dlen) = t.at(b, i + len);
        if is_x && d & L != 0 {
            return self.t.run_end(b, i + len + dlen, L);
        }
        if c & S == 0 || (c0 == b' ' && d & (L | N | S | END) == 0) {
            // 4: P run (from c, or from d after a space), then [\r\n]*.
            let mut k = i + len;
            loop {
                let (e, l) = t.at(b, k);
                if e & (L | N | S | END) != 0 {
                    break;
                }
                k += l;
            }
            while matches!(b.get(k), Some(b'\r' | b'\n')) {
                k += 1;
            }
            return k;
        }
        // 5-8.
        let run = t.space_run(b, i);
        if run.end >= b.len() {
            run.end
        } else if let Some(e) = run.last_nl_end {
            e
        } else if run.count >= 2 {
            run.last
        } else {
            run.end
        }
    }
}

/// `'(?i:[sdmt]|ll|ve|re)` at `i` (where `b[i] == '\''`).
#[inline(always)]
pub(crate) fn contraction_ci(b: &[u8], i: usize) -> Option<usize> {
    let lower = |k: usize| b.get(k).map(|x| x.to_ascii_lowercase());
    match (lower(i + 1), lower(i + 2)) {
        (Some(b's' | b'd' | b'm' | b't'), _) => Some(i + 2),
        (Some(b'l'), Some(b'l')) | (Some(b'v'), Some(b'e')) | (Some(b'r'), Some(b'e')) => {
            Some(i + 3)
        }
        // ſ (U+017F LATIN SMALL LETTER LONG S) folds to s.
        (Some(0xC5), Some(0xBF)) => Some(i + 3),
        _ => None,
    }
}
