//! The r50k / p50k / gpt2 splitter.
//!
//! Invariant: `pieces(text)` are exactly the leftmost-first `find_iter`
//! matches of [`R50K_PATTERN`](super::R50K_PATTERN):
//!
//! ```text
//! '(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s
//! ```
//!
//! Why. Every char is in exactly one of L = `\p{L}`, N = `\p{N}`, S = `\s`,
//! P = `[^\s\p{L}\p{N}]` (White_Space chars are never letters or numbers), and
//! every char starts a match (the last alternative takes any S char, the ones
//! before it any L, N or P char), so matches are contiguous and each piece is
//! the match at its first char c (next char d), taking the first alternative
//! that matches there:
//! 1. c = `'` and d.. is `s|d|m|t` → 2 chars, `ll|ve|re` → 3 chars (case-sensitive;
//!    the alternatives cannot both match).
//! 2. c = ` ` and d ∈ L, or c ∈ L → c and the maximal L run after it. (The
//!    possessive `++` gives nothing back, and nothing follows it anyway.)
//! 3. same with N; 4. same with P (`'` not starting a contraction is P).
//!    With c = ` ` and d ∈ S none of 2-4 match (` ?` only takes a literal space
//!    and ` ` ∉ L ∪ N ∪ P); with c ∈ S \ {` `} neither.
//! 5. (to 7.) c ∈ S: let [c, j) be the maximal S run. If j is the end of the text,
//!    `\s++$` takes it all. Otherwise `text[j]` ∉ S: `\s+(?!\S)` backtracks one
//!    char from j and succeeds iff the run has ≥ 2 chars, giving the run minus
//!    its last char; else `\s` takes the single char.
//!    (A run's last char, left over, then starts the next piece: glued to the
//!    following word by 2-4 if it is ` `, else alone by 7.)

use super::ascii_window::splitter_type;
use super::classes::{END, L, N, S};
use super::r50k_block;

splitter_type!(
    /// The r50k/p50k/gpt2 splitter.
    R50k,
    r50k_block::boundaries
);

impl R50k {
    /// End of the piece starting at char boundary `i < b.len()`; always `> i`.
    #[inline(always)]
    pub(super) fn piece_end(&self, b: &[u8], i: usize) -> usize {
        let t = self.t;
        let c0 = b[i];
        if c0 == b'\'' {
            if let Some(e) = contraction(b, i) {
                return e;
            }
        }
        let (c, _) = t.at(b, i);
        // 2.-4.: the class of the run, and where it starts.
        let (run, from) = if c & S == 0 {
            (c, i)
        } else if c0 == b' ' {
            let (d, _) = t.at(b, i + 1);
            if d & (S | END) == 0 {
                (d, i + 1)
            } else {
                return self.space_end(b, i);
            }
        } else {
            return self.space_end(b, i);
        };
        if run & L != 0 {
            self.t.run_end(b, from, L)
        } else if run & N != 0 {
            self.t.run_end(b, from, N)
        } else {
            // P: neither L, N nor S (nor the end).
            let mut k = from;
            loop {
                let (d, l) = t.at(b, k);
                if d & (L | N | S | END) != 0 {
                    return k;
                }
                k += l;
            }
        }
    }

    /// Rules 5-7 at an S char `i`.
    #[inline(always)]
    fn space_end(&self, b: &[u8], i: usize) -> usize {
        let run = self.t.space_run(b, i);
        if run.end >= b.len() || run.count < 2 {
            run.end
        } else {
            run.last
        }
    }
}

/// `'(?:[sdmt]|ll|ve|re)` at `i` (where `b[i] == '\''`).
#[inline(always)]
pub(super) fn contraction(b: &[u8], i: usize) -> Option<usize> {
    match (b.get(i + 1), b.get(i + 2)) {
        (Some(b's' | b'd' | b'm' | b't'), _) => Some(i + 2),
        (Some(b'l'), Some(b'l')) | (Some(b'v'), Some(b'e')) | (Some(b'r'), Some(b'e')) => {
            Some(i + 3)
        }
        _ => None,
    }
}
