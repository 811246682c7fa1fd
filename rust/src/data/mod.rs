//! Documents straight from the bytes of a data file, encoded on the batch threads: the
//! lines of a JSON Lines block ([`jsonl`]) and the values of an Arrow string column
//! ([`arrow`]), with no Python `str` per document.
//!
//! Invariant: [`encode_pieces`] returns either what the Python readers and
//! `encode_batch_to_numpy` give for the same records — the ids of every document one after
//! another, and offsets with `ids[offsets[i]..offsets[i + 1]]` the ids of document `i`, in
//! input order — or `None`, when any record is one the readers would treat in a way this
//! code does not repeat exactly (a record that is not a document, a value that needs
//! Python's rules, bytes that are not UTF-8). `None` is never a guess: the caller then reads
//! the same records the slow way, which names the bad one or replaces what needs replacing.
//!
//! Why: reading was as costly as encoding when each document became a Python `str` first,
//! and it ran on a core the encoder threads needed. Here each thread parses the records it
//! encodes, so reading costs a scan of the bytes, on the same cores, with nothing in
//! between.
//!
//! The work is cut into pieces of about [`PIECE_BYTES`] of whole records, run by
//! [`batch_map_until`] (the caller's thread from the front, helpers from the back), so
//! finding the records is shared by the threads too.

pub mod arrow;
pub mod jsonl;

use crate::error::Result;
use crate::runtime::batch::{batch_map_until, threads_for_text};
use crate::vocab::Rank;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes of records per piece: small enough for two threads to balance a block of a few
/// MB and to notice Ctrl-C within a millisecond or so, large enough that taking a piece
/// costs nothing beside encoding it.
pub const PIECE_BYTES: usize = 64 << 10;

/// Room for the ids of `bytes` of records, made when a piece starts: one id per two bytes,
/// more than text takes (a few bytes an id), so that the vector seldom grows, which copies
/// what it holds.
pub fn ids_room(bytes: usize) -> usize {
    bytes / 2
}

/// The ids of a piece's documents, one after another, and where each document ends.
#[derive(Default)]
pub struct Encoded {
    pub ids: Vec<Rank>,
    /// `ends[i]` is one past document `i`'s last id in `ids`.
    pub ends: Vec<usize>,
}

impl Encoded {
    /// Appends one document's ids by `encode`, which appends to the vector it is given.
    pub fn push(&mut self, encode: impl FnOnce(&mut Vec<Rank>) -> Result<()>) -> Result<()> {
        encode(&mut self.ids)?;
        self.ends.push(self.ids.len());
        Ok(())
    }
}

/// What a piece's worker says of it: encoded, or holding a record the caller must read
/// itself.
pub enum Piece {
    Done(Encoded),
    Fallback,
}

/// The encoded pieces of a batch, in order: document `i` of the batch is the `i`-th
/// document of the pieces taken one after another.
pub type Parts = Vec<Encoded>;

/// How many ids and documents `parts` hold.
pub fn sizes(parts: &[Encoded]) -> (usize, usize) {
    let ids = parts.iter().map(|e| e.ids.len()).sum();
    let docs = parts.iter().map(|e| e.ends.len()).sum();
    (ids, docs)
}

/// The offsets of the documents of `parts` in their ids joined: one more than documents,
/// starting at 0 (`ids[offsets[i]..offsets[i + 1]]` is document `i`). (The binding lays
/// the ids out itself, with any BOS/EOT: `py/data.rs`.)
#[cfg(test)]
pub fn offsets(parts: &[Encoded]) -> Vec<i64> {
    let mut out = Vec::with_capacity(sizes(parts).1 + 1);
    out.push(0i64);
    let mut base = 0;
    for e in parts {
        out.extend(e.ends.iter().map(|&end| (base + end) as i64));
        base += e.ids.len();
    }
    out
}

/// Runs `work` over `pieces` on up to `num_threads` threads (one for less than
/// [`crate::runtime::batch::SHARED_MIN_BYTES`] of text in all: `bytes`), and returns the
/// results in order; `None` if any piece needs the slow path. They are not joined here: the
/// binding copies them into the array it returns, whose memory the Python allocator reuses
/// batch after batch (a joined `Vec` of megabytes would be a fresh mapping each time, see
/// `runtime/huge_pages.rs`, and clearing its pages cost as much as parsing). `stop` is asked after each
/// piece the calling thread runs (Ctrl-C: [`crate::error::Error::Interrupted`]). Once one
/// piece has asked for the slow path, the others are not encoded: the batch will be read
/// again anyway.
pub fn encode_pieces<P: Sync>(
    pieces: &[P],
    bytes: usize,
    num_threads: usize,
    work: impl Fn(&P) -> Result<Piece> + Sync + Send,
    stop: impl FnMut() -> bool,
) -> Result<Option<Parts>> {
    let fallback = AtomicBool::new(false);
    let run = |p: &P| -> Result<Option<Encoded>> {
        if fallback.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match work(p)? {
            Piece::Done(e) => Ok(Some(e)),
            Piece::Fallback => {
                fallback.store(true, Ordering::Relaxed);
                Ok(None)
            }
        }
    };
    let parts = batch_map_until(pieces, threads_for_text(bytes, num_threads), run, stop);
    // A piece that needs the slow path wins over an encoding error of a later piece: the
    // slow path meets the records in order and raises what comes first (the bad record, or
    // that same error). Ctrl-C is the caller's to raise (`stop` kept it).
    if fallback.load(Ordering::Relaxed) {
        return match parts {
            Err(crate::error::Error::Interrupted) => Err(crate::error::Error::Interrupted),
            _ => Ok(None),
        };
    }
    Ok(Some(parts?.into_iter().flatten().collect()))
}

/// `parts` joined: all ids and the [`offsets`] (for tests).
#[cfg(test)]
pub fn joined(parts: &[Encoded]) -> (Vec<Rank>, Vec<i64>) {
    let ids = parts.iter().flat_map(|e| e.ids.iter().copied()).collect();
    (ids, offsets(parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn lens(pieces: &[Vec<usize>], threads: usize) -> Result<Option<(Vec<Rank>, Vec<i64>)>> {
        // Each piece's documents are runs of their length's id.
        let parts = encode_pieces(
            pieces,
            1 << 20,
            threads,
            |p| {
                let mut e = Encoded::default();
                for &n in p {
                    if n == 99 {
                        return Ok(Piece::Fallback);
                    }
                    if n == 98 {
                        return Err(Error::Input("bad".into()));
                    }
                    e.push(|out| {
                        out.extend(std::iter::repeat_n(n as Rank, n));
                        Ok(())
                    })?;
                }
                Ok(Piece::Done(e))
            },
            || false,
        )?;
        Ok(parts.map(|p| joined(&p)))
    }

    #[test]
    fn joins_pieces_in_order() {
        let pieces: Vec<Vec<usize>> = (0..50).map(|i| vec![i % 3, i % 5, 0]).collect();
        for threads in [1, 2, 4] {
            let (ids, offsets) = lens(&pieces, threads).unwrap().unwrap();
            let docs: Vec<usize> = pieces.iter().flatten().copied().collect();
            assert_eq!(offsets.len(), docs.len() + 1);
            assert_eq!(offsets[0], 0);
            for (i, &n) in docs.iter().enumerate() {
                let doc = &ids[offsets[i] as usize..offsets[i + 1] as usize];
                assert_eq!(doc, vec![n as Rank; n].as_slice());
            }
            assert_eq!(*offsets.last().unwrap() as usize, ids.len());
        }
    }

    #[test]
    fn a_fallback_piece_wins_over_errors_and_an_empty_batch_is_empty() {
        let mut pieces: Vec<Vec<usize>> = (0..40).map(|_| vec![3, 4]).collect();
        pieces[10] = vec![1, 99];
        pieces[30] = vec![98];
        for threads in [1, 2] {
            assert!(lens(&pieces, threads).unwrap().is_none());
        }
        pieces[10] = vec![1];
        for threads in [1, 2] {
            assert!(lens(&pieces, threads).is_err());
        }
        let (ids, offsets) = lens(&[], 2).unwrap().unwrap();
        assert!(ids.is_empty());
        assert_eq!(offsets, vec![0]);
    }
}
