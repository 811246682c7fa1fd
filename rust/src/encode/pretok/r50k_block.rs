//! The r50k / p50k / gpt2 splitter's fast path: every piece boundary in 64 bytes of ASCII at
//! once.
//!
//! Invariant: given a window `w` of 64 bytes of text that starts at a piece boundary,
//! [`boundaries`] returns `Some((starts, last))` where `starts` has bit `q` set iff a piece of
//! [`R50K_PATTERN`](super::R50K_PATTERN) starts at `w[q]`, for every `q <= last`, and
//! `last > 0`; or `None` when it cannot be sure of any boundary after 0. Which bytes follow
//! the window never changes a boundary at or before `last`.
//!
//! Why: as for cl100k (see `cl100k_block.rs`), a branch per piece on its first chars is
//! missed about once a piece; masks and shifts are not.
//!
//! The rules for ASCII, with `r50k.rs`'s numbers; bit `q` of a mask is `w[q]`, `prev(m)` is
//! `m << 1`, `L` letters, `N` digits, `P` anything else but whitespace:
//! - 2-4: a letter, digit or `P` char starts a piece unless the char before is of the same
//!   class (the possessive run goes on) or a space (the last char of a whitespace run, always
//!   the start of a piece, takes the run after it).
//! - 1: a `'` that starts a piece, followed by `s d m t` / `ll ve re` (this case only), is a
//!   2- or 3-char piece; the char after it starts a piece.
//! - 5-7: a whitespace run starts a piece and, if it has at least two chars, so does its last
//!   char. A run must end inside the window before that is sure; 5 (`\s++$`) cannot apply,
//!   since a char follows the run.

use super::ascii_window::{boundaries_test, classified_masks, space_run_starts, WINDOW};
use super::r50k::contraction;

/// Where pieces start in `w`, which must begin at a piece boundary (see the module docs).
#[inline(always)]
pub fn boundaries(w: &[u8; WINDOW]) -> Option<(u64, u32)> {
    let (m, valid_len, valid) = classified_masks(w)?;
    let (letter, digit, space, blank) = (
        m.letter & valid,
        m.digit & valid,
        m.space & valid,
        m.blank & valid,
    );
    let punct = valid & !(letter | digit | space);
    let prev = |x: u64| x << 1;
    let mut sure = valid;

    // 2-4.
    let run_start = |class: u64| class & !prev(class) & !prev(blank);
    let punct_start = run_start(punct);

    // 1: the letters of a contraction start nothing; the char after it does.
    let (mut inside, mut after) = (0u64, 0u64);
    let mut quotes = punct_start & m.apostrophe;
    while quotes != 0 {
        let q = quotes.trailing_zeros();
        quotes &= quotes - 1;
        if q + 2 >= valid_len {
            // `'ll` may need a byte that is not classified.
            sure &= (1u64 << q) - 1;
            break;
        }
        let Some(end) = contraction(w, q as usize) else {
            continue;
        };
        let end = end as u32;
        inside |= ((1u64 << (end - q - 1)) - 1) << (q + 1);
        if end < 64 {
            after |= 1 << end;
        }
    }

    // 5-7: no `\r\n` rule here, so every run splits only at its start and its last char.
    let space_start = space_run_starts(space, 0, valid_len);

    let starts = ((1 | run_start(letter) | run_start(digit) | punct_start | space_start) & !inside
        | after)
        & sure;
    // A window starting with a `'` it cannot decide on gives no boundary at all.
    (starts > 1).then(|| (starts, 63 - starts.leading_zeros()))
}

boundaries_test!(
    super::super::r50k::R50k,
    parts: [
            "a", "Z", "s", "S", "t", "d", "m", "l", "L", "v", "e", "r", "'", " ", "  ", "\n", "\r",
            "\t", "\x0b", "1", "22", "4444", ".", "!?", "/", "\x00", "'s", "'ll", "'LL", "'ve",
            "'re", "'x", " '", "\n\n", " \n ", "    ", "don't", "x's's", " 1", " .",
        ],
    tails: [],
);
