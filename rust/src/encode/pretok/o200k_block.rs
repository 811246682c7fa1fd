//! The o200k splitter's fast path: every piece boundary in 64 bytes of ASCII at once.
//!
//! Invariant: given a window `w` of 64 bytes of text that starts at a piece boundary,
//! [`boundaries`] returns `Some((starts, last))` where `starts` has bit `q` set iff a piece of
//! [`O200K_PATTERN`](super::O200K_PATTERN) starts at `w[q]`, for every `q <= last`, and
//! `last > 0`; or `None` when it cannot be sure of any boundary after 0. Which bytes follow
//! the window never changes a boundary at or before `last`.
//!
//! Why: as for cl100k (see `cl100k_block.rs`), a branch per piece on its first chars is
//! missed about once a piece; masks and shifts are not.
//!
//! The rules for ASCII, with `o200k.rs`'s names (`A1`-`A7`); bit `q` of a mask is `w[q]`,
//! `prev(m)` is `m << 1`, `U` = `A-Z`, `W` = `a-z`, `P` = not a letter, digit or space,
//! `X` = `P` or a space other than `\r\n`:
//! - A1/A2: a word is a run of `U` then a run of `W`, so a letter starts a piece where the
//!   char before is not a letter, or where it is a `W` and the letter a `U`; except that an
//!   `X` char that starts a piece takes the word after it, as in cl100k.
//! - C: a `'` right after a word's last letter, followed by `s t m d` / `re ve ll` (any case),
//!   belongs to that word with those letters, and the char after them starts a piece. The
//!   letters of a contraction end no word, so a `'` after them starts its own piece (and
//!   may take a word, then its own contraction): the `'`s are taken in order.
//! - A3: runs of digits split every three chars from their first.
//! - A4: a `P` char starts a piece unless the char before is in the same `P` run, or is a
//!   space (which takes the run). After the run, the run of `\r`, `\n` and `/` that begins
//!   with a `\r\n` belongs to the piece too.
//! - A5-A7: what is left of a whitespace run splits as in cl100k: at its start, after its last
//!   `\r\n`, and before its last char if at least two chars follow that `\r\n`.

use super::ascii_window::{classified_masks, digit_group_starts, space_run_starts, span, WINDOW};
use super::cl100k::contraction_ci;

/// Where pieces start in `w`, which must begin at a piece boundary (see the module docs).
#[inline(always)]
pub fn boundaries(w: &[u8; WINDOW]) -> Option<(u64, u32)> {
    boundaries_of::<true, 3, true>(w)
}

/// [`boundaries`] for Tekken's pattern: no `C`, and every digit a piece.
#[inline(always)]
pub fn boundaries_tekken(w: &[u8; WINDOW]) -> Option<(u64, u32)> {
    boundaries_of::<false, 1, true>(w)
}

/// [`boundaries`] for Kimi K2's pattern: A4's tail without `/` (its Han runs hold no ASCII).
#[inline(always)]
pub fn boundaries_kimi_k2(w: &[u8; WINDOW]) -> Option<(u64, u32)> {
    boundaries_of::<true, 3, false>(w)
}

/// The rules with `C` or not (`CONTRACTIONS`), digit pieces of at most `DIGITS` (3 or 1), and
/// A4's tail with `/` or not (`SLASH`).
#[inline(always)]
fn boundaries_of<const CONTRACTIONS: bool, const DIGITS: usize, const SLASH: bool>(
    w: &[u8; WINDOW],
) -> Option<(u64, u32)> {
    let (m, valid_len, valid) = classified_masks(w)?;
    let (letter, upper, digit) = (m.letter & valid, m.upper & valid, m.digit & valid);
    let (space, newline, blank) = (m.space & valid, m.newline & valid, m.blank & valid);
    let lower = letter & !upper;
    let punct = valid & !(letter | digit | space);
    let prev = |x: u64| x << 1;
    // Only the last classified byte can be a start that the bytes after decide nothing of;
    // a `'` near the end may be a contraction that needs them (see below).
    let mut sure = valid;

    // C, in order: `inside` marks each contraction's `'` and letters, `after` the char that
    // follows it.
    let (mut inside, mut after) = (0u64, 0u64);
    let mut quotes = if CONTRACTIONS {
        m.apostrophe & prev(letter) & valid
    } else {
        0
    };
    while quotes != 0 {
        let q = quotes.trailing_zeros();
        quotes &= quotes - 1;
        if inside >> (q - 1) & 1 == 1 {
            continue; // after a contraction's letter: no word ends here
        }
        if q + 2 >= valid_len {
            // `'ll` (or `'ſ`) may need a byte that is not classified.
            sure &= (1u64 << q) - 1;
            break;
        }
        if let Some(end) = contraction_ci(w, q as usize) {
            let end = end as u32; // <= q + 3 < 66
            inside |= span(q, end.min(63)) | if end >= 64 { 1 << 63 } else { 0 };
            if end < 64 {
                after |= 1 << end;
            }
        }
    }

    // A4's tail: from a `\r\n` right after a `P` char, the run of `\r\n/` (or `\r\n`).
    let tail_chars = if SLASH {
        newline | (m.slash & valid)
    } else {
        newline
    };
    let mut tail = 0u64;
    let mut seeds = newline & prev(punct);
    while seeds != 0 {
        let s = seeds.trailing_zeros();
        let end = s + (!(tail_chars >> s)).trailing_zeros();
        let run = if end >= 64 { !0u64 << s } else { span(s, end) };
        tail |= run;
        seeds &= !run;
    }

    // A4.
    let punct_run = punct & !tail & !inside;
    let punct_start = punct_run & !prev(punct_run) & !prev(blank);

    // A1/A2.
    let letter_start = letter
        & !inside
        & ((!prev(letter) & !prev(punct_start) & !prev(space & !newline)) | (upper & prev(lower)));

    // A3.
    let digit_start = if DIGITS == 3 {
        digit_group_starts(digit)
    } else {
        digit
    };

    // A5-A7.
    let rest = space & !tail;
    let space_start = space_run_starts(rest, newline, valid_len);

    let starts = (1 | punct_start | letter_start | digit_start | space_start | after) & sure;
    let last = 63 - starts.leading_zeros();
    (last > 0).then_some((starts, last))
}

#[cfg(test)]
mod o200k_rules {
    use super::boundaries;
    crate::encode::pretok::ascii_window::boundaries_test!(
        crate::encode::pretok::o200k::O200k,
        parts: [
                "a",
                "Z",
                "s",
                "S",
                "t",
                "d",
                "m",
                "l",
                "L",
                "v",
                "e",
                "E",
                "r",
                "'",
                " ",
                "  ",
                "\n",
                "\r",
                "\t",
                "\x0b",
                "1",
                "22",
                "4444",
                ".",
                "!?",
                "/",
                "//",
                "\x00",
                "'s",
                "'ll",
                "'VE",
                "'Re",
                "'x",
                " '",
                "\n\n",
                " \n ",
                "    ",
                "aB",
                "ABc",
                "HTTPServer",
                "camelCase",
                "don't",
                "IT'S",
                "x's's",
                ".\n/",
                "\n/\n",
                ";\n",
            ],
        tails: ["A", "/", "ſ", "É", "\u{301}", "ʰ"],
    );
}

#[cfg(test)]
mod llama4_rules {
    use super::boundaries;
    // Llama 4's scanner takes o200k's rules for ASCII: checked against its own char path,
    // with tails whose classes differ from o200k's (lower and upper case letters beyond ASCII,
    // marks, `ſ`).
    crate::encode::pretok::ascii_window::boundaries_test!(
        crate::encode::pretok::o200k::Llama4,
        parts: [
            "a", "Z", "s", "S", "t", "l", "L", "'", " ", "  ", "\n", "\r", "\t", "1", "22",
            "4444", ".", "!?", "/", "//", "'s", "'ll", "'VE", "'x", " '", "\n\n", " \n ", "aB",
            "ABc", "HTTPServer", "don't", "IT'S", "x's's", ".\n/", ";\n",
        ],
        tails: ["A", "/", "ſ", "É", "é", "\u{301}", "ʰ", "ǅ", "中"],
    );
}

#[cfg(test)]
mod kimi_k2_rules {
    use super::boundaries_kimi_k2 as boundaries;
    crate::encode::pretok::ascii_window::boundaries_test!(
        crate::encode::pretok::o200k::KimiK2,
        parts: [
            "a", "Z", "s", "t", "'", " ", "  ", "\n", "\r", "\t", "1", "22", "4444", ".", "!?",
            "/", "//", "'s", "'ll", "'VE", "'x", " '", "\n\n", " \n ", "aB", "ABc", "don't",
            "IT'S", "x's's", ".\n/", ";\n", "!\r\n/x",
        ],
        tails: ["A", "/", "ſ", "É", "\u{301}", "ʰ", "٣", "中", "〇", "\u{2e80}"],
    );
}

#[cfg(test)]
mod tekken_rules {
    use super::boundaries_tekken as boundaries;
    crate::encode::pretok::ascii_window::boundaries_test!(
        crate::encode::pretok::o200k::Tekken,
        parts: [
            "a", "Z", "s", "t", "'", " ", "  ", "\n", "\r", "\t", "1", "22", "4444", ".", "!?",
            "/", "//", "'s", "'ll", "'VE", "'x", " '", "\n\n", " \n ", "aB", "ABc", "don't",
            "IT'S", "x's's", ".\n/", ";\n",
        ],
        tails: ["A", "/", "ſ", "É", "\u{301}", "ʰ", "٣"],
    );
}
