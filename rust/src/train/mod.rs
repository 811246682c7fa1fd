//! Training: learning a byte-level BPE vocabulary from text.
//!
//! Invariant (the exact semantics; the tests hold both the fast trainer and the
//! brute-force reference in `reference.rs` to it, and it is what rustbpe 0.1.0 learns):
//!
//! 1. Ranks 0..=255 are the 256 single bytes, always present.
//! 2. Each document is split on the special tokens (leftmost-longest; a special token is
//!    never counted or merged), then each segment between them is cut into pieces by the
//!    pattern (the matches of its leftmost-first search). Distinct pieces are counted (u64).
//!    A file is one document, whatever the size of the blocks it is read in.
//! 3. The count of a pair of adjacent tokens is the sum over distinct pieces of
//!    piece count × occurrences of the pair in the piece's current tokens; overlaps count
//!    ("aaa" holds (a, a) twice).
//! 4. Each step merges the pair with the highest count; ties go to the smallest
//!    `(left_id, right_id)`. The new token gets the next rank (256, 257, ...), and in every
//!    piece the occurrences are replaced left to right without overlap.
//! 5. Training stops after the requested number of merges or when no pair occurs.
//!    Extensions, off by default: with `min_frequency` it also stops when the best count
//!    is below it; with `max_token_length` a pair whose token would be longer (in bytes)
//!    is never merged and the next best pair is taken instead.
//!
//! The result depends only on the multiset of pieces, so it is the same whatever the
//! number of threads, the order of the pieces, or how the input was chunked or sharded.
//!
//! [`count`] turns text into piece counts (parallel, streaming, exact at chunk edges) kept
//! in [`table`]s; [`merge`] learns the merges from the counts with a priority queue and
//! incremental pair-count updates.
//!
//! If two merges make the same bytes (e.g. `a`+`bc` and `ab`+`c`), both are kept in the
//! merge list; a bytes→rank map (tiktoken's `mergeable_ranks`) keeps the later rank, as
//! `dict(rustbpe.Tokenizer().get_mergeable_ranks())` does, and the earlier rank is unused.

pub mod count;
pub mod merge;
#[cfg(test)]
mod reference;
pub mod table;

pub use count::{Counter, PieceCounts};
pub use merge::{learn, Learned, MergeConfig};
pub use table::Piece;

/// What a long-running step reports to its caller, who may stop it by returning an error
/// (the binding layer returns [`crate::Error::Interrupted`] on Ctrl-C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Bytes of input counted so far, out of a total when known.
    Counting { done: u64, total: Option<u64> },
    /// Merges done so far, out of the number asked for.
    Merging { done: u64, total: u64 },
}

/// A callback for [`Progress`]; returning an error aborts the work promptly.
pub type Hook<'a> = &'a mut dyn FnMut(Progress) -> crate::Result<()>;
