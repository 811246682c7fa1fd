//! The loop the fused scanners share: 64 bytes at a time where ASCII lies ahead, one piece
//! at a time from the char path elsewhere.
//!
//! Invariant: [`scan`] hands `sink` the pieces of `b` in order, none empty, a window's at once
//! ([`Cuts::window`]), given that each scanner's two paths are right from any piece start `i`:
//! - `window(w)`, for the `WINDOW` bytes `w` from `i` (past the text's end, `0x80`, which no
//!   window classifies), gives `(cuts, classified)`: bit `k` of `cuts` is set iff a piece of
//!   the text ends at `i + k`, for every `k` up to the highest bit set (0 if it decides no
//!   cut), and `classified` is how many leading bytes of `w` it could read;
//! - `piece_end(b, i)` is the end of the piece that starts at `i`.
//!
//! A window is tried only at an ASCII byte; after one that could not classify all its bytes,
//! not again before its first unclassified byte, so that text with little ASCII pays for
//! about one window a non-ASCII stretch.

use crate::encode::bpe::{PieceStep, ShortFirst};
use crate::error::Result;
use crate::vocab::Rank;

/// The bytes a window reads.
pub const WINDOW: usize = 64;

/// Where [`scan`] hands the pieces, as byte ranges of the text: one at a time, or a window's
/// all at once.
pub trait Cuts {
    /// Takes the piece `start..end` of the text.
    fn piece(&mut self, start: usize, end: usize) -> Result<()>;

    /// Takes the pieces from `i`: one ends at `i + k` for each set bit `k` of `cuts` (bit 0
    /// clear), each starting where the one before ended. Returns where the last ended.
    #[inline(always)]
    fn window(&mut self, i: usize, cuts: u64) -> Result<usize> {
        let mut rest = cuts;
        let mut from = i;
        while rest != 0 {
            let to = i + rest.trailing_zeros() as usize;
            rest &= rest - 1;
            self.piece(from, to)?;
            from = to;
        }
        Ok(from)
    }
}

/// A closure `f(start, end)` as [`Cuts`].
pub struct EachCut<F>(pub F);

impl<F: FnMut(usize, usize) -> Result<()>> Cuts for EachCut<F> {
    #[inline(always)]
    fn piece(&mut self, start: usize, end: usize) -> Result<()> {
        (self.0)(start, end)
    }
}

/// The fused scanners' pieces to BPE (see [`ShortFirst`]).
impl<W, R> Cuts for ShortFirst<'_, W, R>
where
    W: Fn(Rank) -> bool,
    R: PieceStep,
{
    #[inline(always)]
    fn piece(&mut self, start: usize, end: usize) -> Result<()> {
        self.take(start, end)
    }

    #[inline(always)]
    fn window(&mut self, i: usize, cuts: u64) -> Result<usize> {
        self.take_window(i, cuts)
    }
}

/// Hands `sink` each piece of `b` (see the module docs).
#[inline(always)]
pub fn scan(
    b: &[u8],
    window: impl Fn(&[u8; WINDOW]) -> (u64, u32),
    piece_end: impl Fn(&[u8], usize) -> usize,
    sink: &mut impl Cuts,
) -> Result<()> {
    let mut i = 0;
    let mut retry_at = 0;
    while i < b.len() {
        if i >= retry_at && b[i] < 0x80 {
            let (got, classified) = match b[i..].first_chunk::<WINDOW>() {
                Some(w) => window(w),
                None => {
                    // The text's end: the bytes after it read as not classified.
                    let mut w = [0x80u8; WINDOW];
                    w[..b.len() - i].copy_from_slice(&b[i..]);
                    window(&w)
                }
            };
            retry_at = i + classified as usize;
            if got != 0 {
                i = sink.window(i, got)?;
                if classified as usize == WINDOW {
                    retry_at = i;
                }
                continue;
            }
        }
        let end = piece_end(b, i);
        sink.piece(i, end)?;
        i = end;
    }
    Ok(())
}

/// A window's class masks byte by byte (the scanners' reference for their SSE2 masks, and
/// their path on other targets): bit `q` of the first mask is set iff byte `q` of `w` is not
/// ASCII, and bit `q` of `masks[k]` iff it is ASCII and `classes(byte)[k]` holds.
pub fn scalar_masks<const N: usize>(
    w: &[u8; WINDOW],
    classes: impl Fn(u8) -> [bool; N],
) -> (u64, [u64; N]) {
    let mut non_ascii = 0u64;
    let mut masks = [0u64; N];
    for (q, &x) in w.iter().enumerate() {
        if x >= 0x80 {
            non_ascii |= 1 << q;
            continue;
        }
        for (mask, on) in masks.iter_mut().zip(classes(x)) {
            *mask |= u64::from(on) << q;
        }
    }
    (non_ascii, masks)
}

/// The checks every window scanner's tests run on its two paths.
#[cfg(test)]
pub mod checks {
    use super::WINDOW;
    use crate::test_rng::Rng;

    /// `n` texts of up to 300 bytes, of `parts` repeated, mostly the ASCII ones (so that
    /// windows are taken).
    pub fn long_texts(parts: &[&str], seed: u64, n: usize) -> Vec<String> {
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let len = rng.below(300);
                let mut s = String::new();
                while s.len() < len {
                    let part = *rng.pick(parts);
                    if !part.is_ascii() && rng.below(3) != 0 {
                        continue;
                    }
                    for _ in 0..1 + rng.below(2) * rng.below(6) {
                        s.push_str(part);
                    }
                }
                s
            })
            .collect()
    }

    /// The `reach` of a window that answers for all its classified bytes but the last `k`
    /// (it reads that many chars past a boundary), and for none when it classified no more.
    pub fn all_but(k: u32) -> impl Fn(u64, u32) -> Option<u32> {
        move |got, classified| {
            if classified <= k {
                assert_eq!(got, 0);
                return None;
            }
            Some(classified - k)
        }
    }

    /// From every piece start `i` of each text (the starts `piece_end` gives) at an ASCII
    /// byte, `window` classifies exactly the leading ASCII bytes, and its cuts are exactly
    /// `piece_end`'s in `(i, i + reach]`, where `reach(cuts, classified)` is how far the
    /// scanner's window answers (`None`: it answers nothing, and the test is its own).
    /// Returns how many windows were compared.
    pub fn windows_equal_piece_end(
        texts: &[String],
        window: impl Fn(&[u8; WINDOW]) -> (u64, u32),
        piece_end: impl Fn(&[u8], usize) -> usize,
        reach: impl Fn(u64, u32) -> Option<u32>,
    ) -> usize {
        let mut windows = 0;
        for t in texts {
            let b = t.as_bytes();
            let mut starts = vec![0];
            while let Some(&s) = starts.last().filter(|&&s| s < b.len()) {
                starts.push(piece_end(b, s));
            }
            for &i in &starts[..starts.len() - 1] {
                let mut w = [0x80u8; WINDOW];
                let n = (b.len() - i).min(WINDOW);
                w[..n].copy_from_slice(&b[i..i + n]);
                if w[0] >= 0x80 {
                    continue;
                }
                let (got, classified) = window(&w);
                let ascii = w.iter().take_while(|&&x| x < 0x80).count();
                assert_eq!(classified as usize, ascii, "{t:?} from {i}");
                let Some(last) = reach(got, classified) else {
                    continue;
                };
                windows += 1;
                let want: u64 = starts
                    .iter()
                    .filter(|&&s| s > i && s <= i + last as usize)
                    .map(|&s| 1u64 << (s - i))
                    .sum();
                assert_eq!(got, want, "{t:?} from {i}");
            }
        }
        windows
    }

    /// The reach of a window whose cuts are all sure up to its last (for
    /// [`windows_equal_piece_end`]).
    pub fn up_to_last_cut(got: u64, _classified: u32) -> Option<u32> {
        (got != 0).then(|| 63 - got.leading_zeros())
    }

    /// `masks` (the SSE2 path) equals `masks_scalar` on windows of every byte value, then on
    /// random ones.
    pub fn vector_masks_equal_scalar<M: PartialEq + std::fmt::Debug>(
        masks: impl Fn(&[u8; WINDOW]) -> M,
        masks_scalar: impl Fn(&[u8; WINDOW]) -> M,
    ) {
        let mut rng = Rng(7);
        for round in 0..20_000 {
            let mut w = [0u8; WINDOW];
            for (q, x) in w.iter_mut().enumerate() {
                *x = if round < 4 {
                    (round * 64 + q) as u8
                } else {
                    rng.next() as u8
                };
            }
            assert_eq!(masks(&w), masks_scalar(&w), "{w:?}");
        }
    }
}
