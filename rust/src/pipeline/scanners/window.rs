//! The loop the fused scanners share: 64 bytes at a time where ASCII lies ahead, one piece
//! at a time from the char path elsewhere.
//!
//! Invariant: [`for_each_piece`] calls `f(start, end)` with the pieces of `b` in order, none
//! empty, given that each scanner's two paths are right from any piece start `i`:
//! - `window(w)`, for the `WINDOW` bytes `w` from `i` (past the text's end, `0x80`, which no
//!   window classifies), gives `(cuts, classified)`: bit `k` of `cuts` is set iff a piece of
//!   the text ends at `i + k`, for every `k` up to the highest bit set (0 if it decides no
//!   cut), and `classified` is how many leading bytes of `w` it could read;
//! - `piece_end(b, i)` is the end of the piece that starts at `i`.
//!
//! A window is tried only at an ASCII byte; after one that could not classify all its bytes,
//! not again before its first unclassified byte, so that text with little ASCII pays for
//! about one window a non-ASCII stretch.

use crate::error::Result;

/// The bytes a window reads.
pub const WINDOW: usize = 64;

/// Calls `f(start, end)` with each piece of `b` (see the module docs).
#[inline(always)]
pub fn for_each_piece(
    b: &[u8],
    window: impl Fn(&[u8; WINDOW]) -> (u64, u32),
    piece_end: impl Fn(&[u8], usize) -> usize,
    mut f: impl FnMut(usize, usize) -> Result<()>,
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
                let mut rest = got;
                let mut from = i;
                while rest != 0 {
                    let to = i + rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    f(from, to)?;
                    from = to;
                }
                i = from;
                if classified as usize == WINDOW {
                    retry_at = i;
                }
                continue;
            }
        }
        let end = piece_end(b, i);
        f(i, end)?;
        i = end;
    }
    Ok(())
}
