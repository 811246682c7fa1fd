//! The cl100k splitter's fast path: every piece boundary in 64 bytes of ASCII at once.
//!
//! Invariant: given a window `w` of 64 bytes of text that starts at a piece boundary,
//! [`boundaries`] returns `Some((starts, last))` where `starts` has bit `q` set iff a piece of
//! [`CL100K_PATTERN`](super::CL100K_PATTERN) starts at `w[q]`, for every `q <= last`, and
//! `last > 0`; or `None` when it cannot be sure of any boundary after 0. Which bytes follow
//! the window never changes a boundary at or before `last`.
//!
//! Why: the scalar splitter (`cl100k.rs`) decides each piece by branching on the class of its
//! first chars, and those branches follow the text, so the predictor misses about once a
//! piece. Here the classes of 64 bytes come from [`super::ascii_window`], the boundaries from
//! shifts and masks, and what is left per piece is slicing. English and code are more than
//! 99.6% ASCII; anything else (and every case this file is not sure of) goes to the scalar
//! splitter.
//!
//! The rules, with `cl100k.rs`'s numbers; bit `q` of a mask is `w[q]`, `prev(m)` is `m << 1`
//! (bit 0 sees "no char", which is what a boundary at 0 means), `L N S` the classes, `NL`
//! `\r\n`, `SP` the space, `P` everything else, `X = P | S & !NL`:
//! - 4: a `P` char starts a piece unless the char before is `P` (same possessive run) or a
//!   space (a space before `P` is always the start of its own piece, and takes the run).
//! - 1: a `'` that starts a piece and is followed by `s d m t` / `ll ve re` (any case) is a
//!   2- or 3-char piece; the char after it starts a piece.
//! - 2: an `L` char starts a piece if the char before is not `L`, not `X` that starts a piece
//!   (that char takes the run), and not a non-`\r\n` space (always a start, see 5-8); and
//!   after a contraction (1).
//! - 3: runs of `N` split every three chars from their first.
//! - 5-8: `\r\n` right after a `P` run belong to its piece (`[\r\n]*+`). In what is left of a
//!   whitespace run `[s, r)`: `s` starts a piece, so does the char after its last `\r\n` (if
//!   inside the run), and, if at least two chars follow that last `\r\n` (or `s`), the run's
//!   last char (`\s+(?!\S)` gives it back). A run must end inside the window before any of
//!   this is sure; 5 (`\s++$`) cannot apply, since a char follows the run.

use super::ascii_window::{
    boundaries_test, classified_masks, digit_group_starts, space_run_starts, WINDOW,
};
use super::cl100k::contraction_ci;

/// Where pieces start in `w`, which must begin at a piece boundary (see the module docs).
#[inline(always)]
pub fn boundaries(w: &[u8; WINDOW]) -> Option<(u64, u32)> {
    // Only bytes before the first non-ASCII one are classified.
    let (m, valid_len, valid) = classified_masks(w)?;
    let (letter, digit, space) = (m.letter & valid, m.digit & valid, m.space & valid);
    let (newline, blank) = (m.newline & valid, m.blank & valid);
    let punct = valid & !(letter | digit | space);
    let prev = |x: u64| x << 1;

    // 4 and 1.
    let punct_start = punct & !prev(punct) & !prev(blank);
    let mut after_contraction = 0u64;
    let mut quotes = punct_start & m.apostrophe;
    while quotes != 0 {
        let q = quotes.trailing_zeros() as usize;
        quotes &= quotes - 1;
        if let Some(end) = contraction_ci(w, q) {
            if end < WINDOW {
                after_contraction |= 1 << end;
            }
        }
    }

    // 2.
    let letter_start = letter & !prev(letter) & !prev(punct_start) & !prev(space & !newline);

    // 3.
    let digit_start = digit_group_starts(digit);

    // 5-8. `\r\n` runs right after a `P` char go with its piece: adding a run's first bit
    // carries through the run, so the xor marks exactly the run.
    let seeds = newline & prev(punct);
    let taken = (newline.wrapping_add(seeds) ^ newline) & newline;
    let rest = space & !taken;
    let space_start = space_run_starts(rest, newline, valid_len);

    // Every rule above decides a boundary from the chars before it, except the contraction
    // (up to two chars ahead) and the whitespace runs (their end and the char after it). A
    // contraction that would need a char past the window is not taken, and what the window
    // shows of it cannot be a boundary either way; a run that reaches past is skipped. So
    // every boundary up to the last classified byte is sure.
    let starts =
        (1 | punct_start | after_contraction | letter_start | digit_start | space_start) & valid;
    let last = 63 - starts.leading_zeros();
    (last > 0).then_some((starts, last))
}

boundaries_test!(
    super::super::cl100k::Cl100k,
    parts: [
            "a", "Z", "s", "S", "t", "d", "m", "l", "L", "v", "e", "E", "r", "'", " ", "  ", "\n",
            "\r", "\t", "\x0b", "\x0c", "1", "22", "333", "4444", ".", "!?", "\x00", "\x1f", "'s",
            "'ll", "'VE", "'Re", "'x", " '", "\n\n", " \n ", "    ",
        ],
    tails: ["ſ"],
);
