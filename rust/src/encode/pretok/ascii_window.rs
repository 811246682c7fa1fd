//! Class masks of a 64-byte window of text, one bit a byte: what the splitters' ASCII fast
//! paths (`cl100k_block.rs`, `o200k_block.rs`, `r50k_block.rs`) compute their piece
//! boundaries from. Also here: the rules two patterns share (digit groups, whitespace runs)
//! as masks, and [`drive_windows`], which runs a window path with its scalar fallback and
//! hands the pieces to a [`Pieces`] sink, a window's at once.
//!
//! Invariant: for every byte `x < 0x80` at position `q`, bit `q` of each mask says whether `x`
//! is in that class, exactly as the patterns' classes ([`super::classes`]) have it; bytes
//! `>= 0x80` are marked in `non_ascii` and mean nothing in the other masks.
//!
//! Why: 64 bytes classified by a few SSE2 compares (part of every x86_64 target) cost less
//! than one table look-up a byte, and a `u64` per class lets a splitter find every boundary of
//! the window with shifts and masks instead of a branch a char.

use super::classes::{scanned_piece, HI};
use crate::error::Result;

/// Window length: one bit of a `u64` per byte.
pub const WINDOW: usize = 64;

/// Class masks of a window (bit `q` = byte `q`); `non_ascii` marks bytes >= 0x80, for which
/// the other masks mean nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Masks {
    pub non_ascii: u64,
    pub letter: u64,
    /// `A-Z` (o200k splits words where a lowercase letter meets an uppercase one).
    pub upper: u64,
    pub digit: u64,
    pub space: u64,
    pub newline: u64,
    pub blank: u64,
    pub apostrophe: u64,
    /// `/` (o200k's pieces of punctuation take it after their `\r\n`).
    pub slash: u64,
}

/// `\s` among ASCII bytes (Unicode White_Space: `\t \n \v \f \r` and the space).
#[inline(always)]
fn is_space(x: u8) -> bool {
    matches!(x, 0x09..=0x0D | b' ')
}

/// The masks, byte by byte (the reference for the vector version, and the path on targets
/// without SSE2).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(crate) fn masks_scalar(w: &[u8; WINDOW]) -> Masks {
    let mut m = Masks {
        non_ascii: 0,
        letter: 0,
        digit: 0,
        space: 0,
        newline: 0,
        blank: 0,
        apostrophe: 0,
        upper: 0,
        slash: 0,
    };
    for (q, &x) in w.iter().enumerate() {
        let bit = 1u64 << q;
        let set = |mask: &mut u64, on: bool| *mask |= if on { bit } else { 0 };
        set(&mut m.non_ascii, x >= 0x80);
        set(&mut m.letter, x.is_ascii_alphabetic());
        set(&mut m.digit, x.is_ascii_digit());
        set(&mut m.space, is_space(x));
        set(&mut m.newline, x == b'\r' || x == b'\n');
        set(&mut m.blank, x == b' ');
        set(&mut m.apostrophe, x == b'\'');
        set(&mut m.upper, x.is_ascii_uppercase());
        set(&mut m.slash, x == b'/');
    }
    m
}

/// The masks, 16 bytes per step with SSE2 (part of every x86_64 target).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn masks(w: &[u8; WINDOW]) -> Masks {
    use super::byte_masks::{eq, in_range, lower, masks64, or};
    let m = masks64(w, |v| {
        let blank = eq(v, b' ');
        [
            v,
            in_range(lower(v), b'a', 26),
            in_range(v, b'0', 10),
            or(in_range(v, 0x09, 5), blank),
            or(eq(v, b'\n'), eq(v, b'\r')),
            blank,
            eq(v, b'\''),
            in_range(v, b'A', 26),
            eq(v, b'/'),
        ]
    });
    let [non_ascii, letter, digit, space, newline, blank, apostrophe, upper, slash] = m;
    Masks {
        non_ascii,
        letter,
        upper,
        digit,
        space,
        newline,
        blank,
        apostrophe,
        slash,
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn masks(w: &[u8; WINDOW]) -> Masks {
    masks_scalar(w)
}

/// Bits `lo..hi` (`lo <= hi < 64`).
#[inline(always)]
pub(crate) fn span(lo: u32, hi: u32) -> u64 {
    ((1u64 << hi) - 1) & !((1u64 << lo) - 1)
}

/// How many leading bytes of the window are classified (those before the first non-ASCII
/// byte), and their mask.
#[inline(always)]
pub(crate) fn classified(m: &Masks) -> (u32, u64) {
    let len = m.non_ascii.trailing_zeros();
    (
        len,
        if len == 64 {
            u64::MAX
        } else {
            (1u64 << len) - 1
        },
    )
}

/// The window's masks, how many of its leading bytes are classified and their mask; `None`
/// when none is (the window starts with a non-ASCII byte). The first step of every
/// `*_block::boundaries`.
#[inline(always)]
pub(crate) fn classified_masks(w: &[u8; WINDOW]) -> Option<(Masks, u32, u64)> {
    let m = masks(w);
    let (valid_len, valid) = classified(&m);
    if valid_len == 0 {
        return None;
    }
    Some((m, valid_len, valid))
}

/// Bit `q` set iff `w[q]` is an ASCII digit, for every `q` before the first byte >= 0x80.
#[inline(always)]
pub(crate) fn ascii_digits(w: &[u8; WINDOW]) -> u64 {
    masks(w).digit
}

/// Where runs of digits split into `\p{N}{1,3}` pieces: at each run's first digit and every
/// third one after it (cl100k and o200k).
#[inline(always)]
pub(crate) fn digit_group_starts(digit: u64) -> u64 {
    let mut starts = 0u64;
    let mut runs = digit & !(digit << 1);
    while runs != 0 {
        let s = runs.trailing_zeros();
        runs &= runs - 1;
        let len = (!(digit >> s)).trailing_zeros();
        for k in (s..s + len).step_by(3) {
            starts |= 1 << k;
        }
    }
    starts
}

/// Where whitespace splits under cl100k's and o200k's rules (r50k's with `newline` = 0),
/// given `rest`, the whitespace no earlier piece took: each run of `rest` starts a piece, so does the char after its last
/// `\r\n` (if inside the run), and, if at least two chars follow that `\r\n` (or the run's
/// start), the run's last char (`\s+(?!\S)` gives it back). A run that reaches `valid_len` may
/// go on past what is classified (more spaces after the window, or a non-ASCII space), so
/// only its start is sure.
#[inline(always)]
pub(crate) fn space_run_starts(rest: u64, newline: u64, valid_len: u32) -> u64 {
    let run_start = rest & !(rest << 1);
    let mut starts = run_start;
    let mut long_runs = run_start & (rest >> 1);
    while long_runs != 0 {
        let s = long_runs.trailing_zeros();
        long_runs &= long_runs - 1;
        let r = s + (!(rest >> s)).trailing_zeros();
        if r >= valid_len {
            continue;
        }
        let nl = newline & span(s, r);
        let after_nl = if nl == 0 { s } else { 64 - nl.leading_zeros() };
        if after_nl < r {
            starts |= 1 << after_nl;
        }
        if r >= after_nl + 2 {
            starts |= 1 << (r - 1);
        }
    }
    starts
}

/// Continuations every pattern family's window must stop short of or handle: ASCII that
/// extends a piece, and non-ASCII spaces, letters, CJK, numbers and punctuation.
#[cfg(test)]
const COMMON_TAILS: &[&str] = &[
    "",
    " ",
    "  x",
    "a",
    "'",
    "ll",
    "e",
    "1",
    "\n",
    ".",
    "\u{a0}",
    "\u{3000}x",
    "é",
    "中",
    "\u{2028}",
    "²",
    "—",
];

/// Checks a `*_block.rs` invariant directly: on windows built from `parts` (edge-case ASCII),
/// sometimes with a tail (one of [`COMMON_TAILS`] or `extra_tails`) inside and always with
/// some after, each position up to the window's `last` is a start iff `piece_end` (the scalar
/// splitter), run from 0 over the whole text, starts a piece there.
#[cfg(test)]
pub(crate) fn check_against_scalar(
    parts: &[&str],
    extra_tails: &[&str],
    boundaries: fn(&[u8; WINDOW]) -> Option<(u64, u32)>,
    piece_end: impl Fn(&[u8], usize) -> usize,
) {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let tails = [COMMON_TAILS, extra_tails].concat();
    let mut checked = 0;
    for _ in 0..50_000 {
        let mut text = String::new();
        while text.len() < WINDOW {
            text.push_str(parts[next(parts.len())]);
        }
        if next(4) == 0 {
            let at = next(WINDOW);
            let rest = text.split_off(at);
            text.push_str(tails[next(tails.len())]);
            text.push_str(&rest);
        }
        for _ in 0..1 + next(3) {
            text.push_str(tails[next(tails.len())]);
        }
        let b = text.as_bytes();
        let Some(w) = b.first_chunk::<WINDOW>() else {
            continue;
        };
        if w[0] >= 0x80 {
            continue;
        }
        let mut want = 0u64;
        let mut i = 0;
        while i < WINDOW {
            want |= 1 << i;
            i = piece_end(b, i);
        }
        if let Some((starts, last)) = boundaries(w) {
            let upto = if last == 63 {
                u64::MAX
            } else {
                (2u64 << last) - 1
            };
            assert_eq!(starts, want & upto, "{text:?} (last {last})");
            assert!(starts >> last & 1 == 1);
            checked += 1;
        }
    }
    assert!(checked > 30_000, "only {checked} windows had boundaries");
}

/// The test of a `*_block.rs`: its `boundaries` against the scalar splitter `$splitter`
/// (whose `piece_end` is the reference) on windows made of `$parts` with the common tails and
/// `$tails` (see [`check_against_scalar`]).
macro_rules! boundaries_test {
    ($splitter:ty, parts: $parts:expr, tails: $tails:expr $(,)?) => {
        #[cfg(test)]
        mod tests {
            use super::*;

            /// The invariant, on the pattern's edge cases.
            #[test]
            fn boundaries_are_the_scalar_splitters_up_to_last() {
                const PARTS: &[&str] = &$parts;
                const TAILS: &[&str] = &$tails;
                let scalar = <$splitter>::new();
                $crate::encode::pretok::ascii_window::check_against_scalar(
                    PARTS,
                    TAILS,
                    boundaries,
                    |b, i| scalar.piece_end(b, i),
                );
            }
        }
    };
}
pub(crate) use boundaries_test;

/// The type of a hand-written splitter (`$name`, with the docs `$doc`): the char classes it
/// reads and its `for_each_piece`, which takes the pieces of 64 bytes of ASCII at a time from
/// `$boundaries` (its `*_block.rs`) where it can, and one by one from its own `piece_end`
/// elsewhere. One skeleton for r50k, cl100k and o200k; each file keeps its `piece_end`.
/// `new()` reads `CharClasses::get()`, or the table given as `classes`.
macro_rules! splitter_type {
    ($(#[$doc:meta])* $name:ident, $boundaries:path) => {
        $crate::encode::pretok::ascii_window::splitter_type!(
            $(#[$doc])*
            $name,
            $boundaries,
            classes: $crate::encode::pretok::classes::CharClasses::get()
        );
    };
    ($(#[$doc:meta])* $name:ident, $boundaries:path, classes: $classes:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name {
            t: &'static $crate::encode::pretok::classes::CharClasses,
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $name {
            pub fn new() -> Self {
                Self::with_classes($classes)
            }

            /// The splitter reading chars' classes from `t` (the pattern's own table but for
            /// what its classes stand for: see `CharClasses::marks_as_letters`).
            pub(crate) fn with_classes(
                t: &'static $crate::encode::pretok::classes::CharClasses,
            ) -> Self {
                $name { t }
            }

            /// Calls `f` with each piece of `text`, in order: where 64 bytes of ASCII lie
            /// ahead (or the last 24-63 bytes of the text), from the block rules all at once,
            /// else one by one.
            /// (`|w| boundaries(w)`, not `boundaries`: see `ascii_window::drive_windows`.)
            #[inline]
            pub fn for_each_piece<'t>(
                &self,
                text: &'t str,
                f: impl FnMut(&'t str) -> $crate::error::Result<()>,
            ) -> $crate::error::Result<()> {
                self.scan(text, &mut $crate::encode::pretok::ascii_window::EachPiece(f))
            }

            /// [`Self::for_each_piece`], handing a window's pieces to `sink` all at once.
            #[inline]
            #[allow(clippy::redundant_closure)]
            pub(crate) fn scan<'t>(
                &self,
                text: &'t str,
                sink: &mut impl $crate::encode::pretok::ascii_window::Pieces<'t>,
            ) -> $crate::error::Result<()> {
                $crate::encode::pretok::ascii_window::drive_windows(
                    text,
                    |w| $boundaries(w),
                    $boundaries,
                    |b, i| self.piece_end(b, i),
                    sink,
                )
            }
        }
    };
}
pub(crate) use splitter_type;

/// [`drive_windows`] tries a window only where its first `MIN_LEAD` bytes are ASCII; nearer
/// a non-ASCII byte, `piece_end` takes the one or two pieces before it.
///
/// Why: a window costs the same few dozen vector compares and mask operations however few
/// of its bytes come before the first non-ASCII one, and where scripts mix, most windows
/// held one or two pieces: in the Japanese man pages at the start of the shared multilingual
/// text, an indent, a space or an option name sits between sentences. With the check (three
/// loads and a branch a window) o200k splits that megabyte ~1.16x as fast; 24 suits Russian
/// and Korean better than 12 or 40 (see docs/engine.md).
const MIN_LEAD: usize = 24; // three words in `ascii_lead`

/// How many of the window's first [`MIN_LEAD`] bytes come before its first non-ASCII byte
/// (`MIN_LEAD` if none does). One branch for the common all-ASCII case.
#[inline(always)]
fn ascii_lead(w: &[u8; WINDOW]) -> usize {
    let high = |k: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&w[8 * k..8 * k + 8]);
        u64::from_le_bytes(x) & HI
    };
    if high(0) | high(1) | high(2) == 0 {
        return MIN_LEAD;
    }
    for k in 0..MIN_LEAD / 8 {
        let x = high(k);
        if x != 0 {
            return 8 * k + x.trailing_zeros() as usize / 8;
        }
    }
    MIN_LEAD
}

/// Hands each piece of `text` to `sink`, in order. Where a window of [`WINDOW`] bytes lies
/// ahead and starts with [`MIN_LEAD`] ASCII bytes, `window` gives its pieces (see the
/// `*_block.rs` invariants), handed over together ([`Pieces::window`]); everywhere else, and
/// wherever it gives none, `piece_end(bytes, i)` gives the end of the one piece that starts
/// at `i` ([`Pieces::piece`]).
///
/// Where fewer than [`WINDOW`] bytes are left, the window is the rest of the text followed
/// by bytes `0xFF` (tried once a text): a window that ends in a non-ASCII byte, as a window
/// in the middle of a text may. The blocks classify only the bytes before the first
/// non-ASCII one and give the boundaries up to `last` that no continuation of those bytes
/// changes; the end of the text changes none of them either, since every rule that looks
/// ahead (a contraction's letters, a whitespace run's end, `$`, `(?!\S)`) is left undecided
/// where it would look past the classified bytes, and at the end of the text it decides only
/// the last piece, which starts at or after `last`. (`scan_equals_the_patterns_on_short_texts`
/// holds every scanner to its pattern on such ends.) Why: a text cut at special tokens (a
/// chat's turns) or a short text met alone spent most of its bytes on the scalar path.
///
/// Pass `window` as a closure that calls the `*_block.rs` function, not as the function
/// itself: a function item passed as an `impl Fn` is called through its `Fn::call` shim,
/// which the extension's build (unlike a benchmark binary's) leaves out of line. `rest` is
/// that function, for the rest of the text.
#[inline(always)]
pub(crate) fn drive_windows<'t>(
    text: &'t str,
    window: impl Fn(&[u8; WINDOW]) -> Option<(u64, u32)>,
    rest: Block,
    mut piece_end: impl FnMut(&[u8], usize) -> usize,
    sink: &mut impl Pieces<'t>,
) -> Result<()> {
    let b = text.as_bytes();
    let mut i = 0;
    // Where to try a window again after one gave nothing (past it, so that text that is
    // mostly not ASCII pays for at most one failed window per 64 bytes), or after a non-ASCII
    // byte came too soon to try one (past that byte).
    let mut retry_at = 0;
    while i < b.len() {
        if i >= retry_at && b[i] < 0x80 {
            let found = match b.get(i..).and_then(|r| r.first_chunk::<WINDOW>()) {
                Some(w) => {
                    let lead = ascii_lead(w);
                    if lead < MIN_LEAD {
                        retry_at = i + lead;
                        // The scalar piece right here, not by falling through to the one
                        // below, which is ~5% slower on Japanese.
                        let end = piece_end(b, i);
                        sink.piece(scanned_piece(text, i, end)?)?;
                        i = end;
                        continue;
                    }
                    window(w)
                }
                None => {
                    // The rest of the text is tried once: after it, the scalar path takes the
                    // last piece and any other the window did not give.
                    retry_at = b.len();
                    rest_window(&b[i..], rest)
                }
            };
            match found {
                Some((starts, _)) => {
                    i = sink.window(text, i, starts & !1)?;
                    continue;
                }
                None => retry_at = i + WINDOW,
            }
        }
        let end = piece_end(b, i);
        sink.piece(scanned_piece(text, i, end)?)?;
        i = end;
    }
    Ok(())
}

/// A `*_block.rs` function: a window's piece boundaries.
pub(crate) type Block = fn(&[u8; WINDOW]) -> Option<(u64, u32)>;

/// `window` of `rest` (fewer than [`WINDOW`] bytes) followed by bytes `0xFF`, if it starts
/// with [`MIN_LEAD`] ASCII bytes (see [`drive_windows`]). Out of line, and `window` a pointer:
/// it runs once a text, and a second call of the loop's closure would take that out of the
/// loop (4% more instructions in the scan on 4 KB documents when it did).
#[inline(never)]
fn rest_window(rest: &[u8], window: Block) -> Option<(u64, u32)> {
    let mut w = [0xFFu8; WINDOW];
    w[..rest.len()].copy_from_slice(rest);
    if ascii_lead(&w) < MIN_LEAD {
        return None;
    }
    window(&w)
}

/// Where [`drive_windows`] hands its pieces: one at a time, or a window's all at once.
pub(crate) trait Pieces<'t> {
    /// Takes the next piece of the text.
    fn piece(&mut self, piece: &'t str) -> Result<()>;

    /// Takes the next pieces: from `i`, a piece ends at `i + q` for each set bit `q` of
    /// `ends` (bit 0 clear), each piece starting where the one before ended. Returns where
    /// the last ended. Every such end is a piece boundary of the text, so a char boundary.
    #[inline(always)]
    fn window(&mut self, text: &'t str, i: usize, ends: u64) -> Result<usize> {
        each_piece(self, text, i, ends)
    }
}

/// [`Pieces::window`] a piece at a time, through [`Pieces::piece`].
#[inline(always)]
fn each_piece<'t>(
    sink: &mut (impl Pieces<'t> + ?Sized),
    text: &'t str,
    i: usize,
    ends: u64,
) -> Result<usize> {
    let mut rest = ends;
    let mut from = i;
    while rest != 0 {
        let to = i + rest.trailing_zeros() as usize;
        rest &= rest - 1;
        sink.piece(scanned_piece(text, from, to)?)?;
        from = to;
    }
    Ok(from)
}

/// A closure as [`Pieces`]: called with each piece.
pub(crate) struct EachPiece<F>(pub F);

impl<'t, F: FnMut(&'t str) -> Result<()>> Pieces<'t> for EachPiece<F> {
    #[inline(always)]
    fn piece(&mut self, piece: &'t str) -> Result<()> {
        (self.0)(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::pretok::classes::{CharClasses, L, N, NL, S, U, W};

    #[test]
    fn ascii_classes_match_the_pattern_classes() {
        let t = CharClasses::get();
        for x in 0u8..0x80 {
            let mut w = [b'a'; WINDOW];
            w[5] = x;
            let c = t.ascii[x as usize];
            for m in [masks(&w), masks_scalar(&w)] {
                let bit = |mask: u64| mask >> 5 & 1 == 1;
                assert!(!bit(m.non_ascii), "{x:#x}");
                assert_eq!(bit(m.letter), c & L != 0, "{x:#x} letter");
                assert_eq!(bit(m.digit), c & N != 0, "{x:#x} digit");
                assert_eq!(bit(m.space), c & S != 0, "{x:#x} space");
                assert_eq!(bit(m.newline), c & NL != 0, "{x:#x} newline");
                assert_eq!(bit(m.blank), x == b' ', "{x:#x} blank");
                assert_eq!(bit(m.apostrophe), x == b'\'', "{x:#x} apostrophe");
                assert_eq!(bit(m.upper), c & U != 0 && c & W == 0, "{x:#x} upper");
                assert_eq!(bit(m.slash), x == b'/', "{x:#x} slash");
            }
        }
    }

    #[test]
    fn ascii_lead_counts_the_bytes_before_the_first_non_ascii_one() {
        for at in 0..WINDOW {
            let mut w = [b'a'; WINDOW];
            w[at] = 0xE3;
            w[WINDOW - 1] = 0x80; // only the first one counts
            assert_eq!(ascii_lead(&w), at.min(MIN_LEAD), "non-ASCII at {at}");
        }
        assert_eq!(ascii_lead(&[b' '; WINDOW]), MIN_LEAD);
    }

    #[test]
    fn vector_masks_equal_scalar_masks() {
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2000 {
            let mut w = [0u8; WINDOW];
            for x in &mut w {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                *x = rng as u8;
            }
            assert_eq!(masks(&w), masks_scalar(&w));
        }
    }
}
