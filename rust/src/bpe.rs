//! Merge-rank byte-pair encoding of one piece.
//!
//! Invariant (the definition every implementation here must meet, and the one
//! tiktoken uses): start from the piece's single bytes; while some adjacent pair
//! of parts concatenates to a token, merge the pair whose concatenation has the
//! lowest rank, taking the leftmost such pair on ties; the parts left are the
//! tokens. Both functions below produce exactly this sequence.
//!
//! * [`merge_scan`] keeps the parts in a small vector and rescans it for the
//!   minimum after every merge: O(m²) in the worst case but with tiny constants,
//!   so it wins on the short pieces that make up almost all real text.
//! * [`merge_heap`] keeps candidate pairs in a binary heap keyed by
//!   `(rank, start)` over a doubly linked list of parts, with lazy deletion:
//!   O(m log m) for any piece, so 1 MB of `"a"` or base64 stays linear-ish.
//!   (The same idea as the "heap of candidate merges" in github's `bpe` crate
//!   and in HuggingFace tokenizers' word merging.)

use crate::error::{Error, Result};
use crate::vocab::{Rank, Vocab, NO_RANK};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Pieces longer than this use the heap; shorter ones the scan.
pub const HEAP_THRESHOLD: usize = 128;

/// Encode one piece, appending its tokens to `out`.
#[inline]
pub fn encode_piece(vocab: &Vocab, piece: &[u8], out: &mut Vec<Rank>) -> Result<()> {
    if piece.len() == 1 {
        let r = vocab.byte_ranks[piece[0] as usize];
        if r == NO_RANK {
            return Err(Error::MissingByte(piece[0]));
        }
        out.push(r);
        return Ok(());
    }
    if let Some(r) = vocab.rank(piece) {
        out.push(r);
        return Ok(());
    }
    if piece.len() <= HEAP_THRESHOLD {
        merge_scan(vocab, piece, out)
    } else {
        merge_heap(vocab, piece, out)
    }
}

#[inline]
fn final_rank(vocab: &Vocab, bytes: &[u8]) -> Result<Rank> {
    match vocab.rank(bytes) {
        Some(r) => Ok(r),
        // A part that never merged is a single byte: only a vocabulary without
        // that byte gets here.
        None => Err(Error::MissingByte(bytes[0])),
    }
}

/// Quadratic scan, fast for short pieces. `parts[i] = (start, rank of the pair
/// starting at part i)`; the two trailing entries are sentinels.
pub fn merge_scan(vocab: &Vocab, piece: &[u8], out: &mut Vec<Rank>) -> Result<()> {
    let pair_rank = |parts: &[(usize, Rank)], i: usize| -> Rank {
        if i + 3 < parts.len() {
            vocab
                .rank(&piece[parts[i].0..parts[i + 3].0])
                .unwrap_or(NO_RANK)
        } else {
            NO_RANK
        }
    };
    let mut parts: Vec<(usize, Rank)> = Vec::with_capacity(piece.len() + 1);
    for i in 0..piece.len() - 1 {
        parts.push((i, vocab.rank(&piece[i..i + 2]).unwrap_or(NO_RANK)));
    }
    parts.push((piece.len() - 1, NO_RANK));
    parts.push((piece.len(), NO_RANK));

    loop {
        // Leftmost minimum over the real pairs.
        let mut best = (NO_RANK, 0usize);
        for (i, &(_, r)) in parts[..parts.len() - 1].iter().enumerate() {
            if r < best.0 {
                best = (r, i);
            }
        }
        if best.0 == NO_RANK {
            break;
        }
        let i = best.1;
        parts[i].1 = pair_rank(&parts, i);
        if i > 0 {
            parts[i - 1].1 = pair_rank(&parts, i - 1);
        }
        parts.remove(i + 1);
    }
    out.reserve(parts.len() - 1);
    for w in parts.windows(2) {
        out.push(final_rank(vocab, &piece[w[0].0..w[1].0])?);
    }
    Ok(())
}

/// Heap-driven merging, O(m log m). Parts are identified by their start byte;
/// `next[s]` is the start of the part after the one at `s` (or `m`),
/// `prev[s]` the one before. A heap entry `(rank, start, mid, end)` is still
/// valid iff the part at `start` ends at `mid` and the part at `mid` ends at
/// `end`: boundaries are only ever removed, so then the pair's bytes, and
/// hence its rank, are unchanged.
pub fn merge_heap(vocab: &Vocab, piece: &[u8], out: &mut Vec<Rank>) -> Result<()> {
    let m = piece.len();
    const DEAD: u32 = u32::MAX;
    let mut next: Vec<u32> = (1..=m as u32).collect();
    let mut prev: Vec<u32> = Vec::with_capacity(m);
    prev.push(DEAD);
    prev.extend(0..m as u32 - 1);

    type Entry = Reverse<(Rank, u32, u32, u32)>;
    let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(m);
    for s in 0..m - 1 {
        if let Some(r) = vocab.rank(&piece[s..s + 2]) {
            heap.push(Reverse((r, s as u32, s as u32 + 1, s as u32 + 2)));
        }
    }
    let push = |heap: &mut BinaryHeap<Entry>, s: u32, mid: u32, e: u32| {
        if let Some(r) = vocab.rank(&piece[s as usize..e as usize]) {
            heap.push(Reverse((r, s, mid, e)));
        }
    };

    while let Some(Reverse((_, s, mid, e))) = heap.pop() {
        if next[s as usize] != mid || next[mid as usize] != e {
            continue; // stale
        }
        // Merge: the part at `mid` disappears into the one at `s`.
        next[s as usize] = e;
        next[mid as usize] = DEAD;
        if (e as usize) < m {
            prev[e as usize] = s;
            let ee = next[e as usize];
            push(&mut heap, s, e, ee);
        }
        let p = prev[s as usize];
        if p != DEAD {
            push(&mut heap, p, s, e);
        }
    }

    let mut s = 0u32;
    while (s as usize) < m {
        let e = next[s as usize];
        out.push(final_rank(vocab, &piece[s as usize..e as usize])?);
        s = e;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// A vocabulary with all 256 bytes plus the given merged tokens, in order.
    fn vocab(merged: &[&[u8]]) -> Vocab {
        let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
        for b in 0..=255u8 {
            ranks.insert(vec![b], b as Rank);
        }
        for (i, t) in merged.iter().enumerate() {
            ranks.insert(t.to_vec(), 256 + i as Rank);
        }
        Vocab::new(ranks, Vec::new()).unwrap()
    }

    fn both(v: &Vocab, piece: &[u8]) -> Vec<Rank> {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        merge_scan(v, piece, &mut a).unwrap();
        merge_heap(v, piece, &mut b).unwrap();
        assert_eq!(a, b, "scan and heap disagree on {piece:?}");
        a
    }

    #[test]
    fn lowest_rank_merges_first() {
        // "ab" has a lower rank than "bc", so "abc" -> [ab, c].
        let v = vocab(&[b"ab", b"bc"]);
        assert_eq!(both(&v, b"abc"), vec![256, b'c' as Rank]);
        let v = vocab(&[b"bc", b"ab"]);
        assert_eq!(both(&v, b"abc"), vec![b'a' as Rank, 256]);
    }

    #[test]
    fn ties_go_left_and_runs_merge_pairwise() {
        let v = vocab(&[b"aa", b"aaaa"]);
        // "aaaaa": aa at 0 first (leftmost), then aa at 2, then aaaa; last 'a' stays.
        assert_eq!(both(&v, b"aaaaa"), vec![257, b'a' as Rank]);
        assert_eq!(both(&v, b"aaa"), vec![256, b'a' as Rank]);
    }

    #[test]
    fn heap_equals_scan_on_pseudo_random_input() {
        let v = vocab(&[
            b"ab", b"ba", b"aab", b"abab", b"bb", b"bab", b"abba", b"aabab",
        ]);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 2..300 {
            let piece: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x & 1 == 0 {
                        b'a'
                    } else {
                        b'b'
                    }
                })
                .collect();
            both(&v, &piece);
        }
    }

    #[test]
    fn missing_byte_is_an_error_not_a_panic() {
        let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
        ranks.insert(b"a".to_vec(), 0);
        let v = Vocab::new(ranks, Vec::new()).unwrap();
        let mut out = Vec::new();
        assert_eq!(
            encode_piece(&v, b"ab", &mut out),
            Err(Error::MissingByte(b'b'))
        );
    }
}
