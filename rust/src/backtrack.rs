//! Near-linear BPE for long pieces: greedy longest match, corrected by backtracking.
//!
//! Invariant: for a vocabulary that [`Backtrack::new`] accepts, [`Backtrack::encode`]
//! appends exactly the tokens of the merge-rank definition in `bpe.rs` (what
//! [`crate::bpe::merge_heap`] computes), or returns `false` and appends nothing.
//!
//! Why it works — the argument of github's `bpe` crate (rust-gems, `crates/bpe`), whose
//! design this follows: call a token *reachable* if BPE of its own bytes gives it back, and
//! two tokens *compatible* if BPE of their bytes laid end to end gives back the two tokens.
//! The BPE tokens of a text are then the one sequence of reachable tokens that spells the text
//! with every adjacent pair compatible. So instead of merging, walk the piece left to right,
//! taking the longest reachable token that is compatible with the one before; when no token
//! fits at a position, no BPE sequence has a boundary there: mark the position dead and take
//! back the previous token. Each position dies at most once, so the walk is O(n·L) probes for
//! tokens of at most L bytes, and a few probes per token on real text — against the heap's
//! O(n log n) pops, each a cache miss on a long piece.
//!
//! Compatibility never looks at bytes: it undoes the two tokens' merges (`split`, the last
//! merge that built each token) latest first and asks whether a merge across the boundary
//! would have come before the merge just undone ([`Backtrack::compatible`]). That needs every
//! merge to join parts of lower rank than its result, as training always produces; `new`
//! returns `None` for a vocabulary where that fails, and such vocabularies keep the heap.

use crate::pair_filter::PairFilter;
use crate::pair_memo::PairMemo;
use crate::prefix_trie::PrefixTrie;
use crate::vocab::{Rank, Vocab, NO_RANK};
use rayon::prelude::*;

pub struct Backtrack {
    /// Every token at least this long is reachable, so for a piece at least this long that
    /// is a whole token the walk itself returns that token: the caller may skip its separate
    /// whole-token look-up (tiktoken's rule) — a cache miss for nearly every long piece.
    pub whole_tokens_from: usize,
    /// Longest-prefix search over the reachable tokens' bytes.
    trie: PrefixTrie,
    /// Per rank: the longest reachable token that is a strict prefix of it, or `NO_RANK`.
    next_prefix: Vec<Rank>,
    /// Per rank: the two tokens its last merge joined; `(r, r)` for a single byte (or an
    /// unreachable token, which the walk never proposes).
    split: Vec<(Rank, Rank)>,
    /// Recent answers of `compatible` (512 KiB: stays in L2/L3, unlike the pair table).
    /// Text repeats its token pairs (a CJK run reuses the same few thousand characters), and
    /// one probe here replaces an unwinding that touches the pair table several times.
    memo: PairMemo,
    /// Which pairs might be in the pair table: `unwind` asks it before each table probe, as
    /// nearly every probe there finds no merge (see `pair_filter.rs`).
    filter: PairFilter,
}

/// The last merge BPE makes on `bytes`, if BPE turns them into one token (`Some(None)` for a
/// single byte); `None` if the bytes stay in several parts (the token is unreachable) or a
/// byte has no token. Quadratic, but only ever run on single tokens, once. Most of its
/// probes find no merge; `filter` settles those from L2 instead of the pair table.
fn last_merge(vocab: &Vocab, filter: &PairFilter, bytes: &[u8]) -> Option<Option<(Rank, Rank)>> {
    let mut parts: Vec<Rank> = Vec::with_capacity(bytes.len());
    for &b in bytes {
        match vocab.byte_ranks[b as usize] {
            NO_RANK => return None,
            r => parts.push(r),
        }
    }
    let mut last = None;
    while parts.len() > 1 {
        let best = (0..parts.len() - 1)
            .filter(|&i| filter.may_merge(parts[i], parts[i + 1]))
            .filter_map(|i| vocab.pairs.get(parts[i], parts[i + 1]).map(|r| (r, i)))
            .min();
        let Some((r, i)) = best else { break };
        last = Some((parts[i], parts[i + 1]));
        parts[i] = r;
        parts.remove(i + 1);
    }
    (parts.len() == 1).then_some(last)
}

impl Backtrack {
    /// Build the tables for `vocab`, or `None` if some token's last merge joins a part whose
    /// rank is not below the token's (then the unwinding in `compatible` would be wrong).
    pub fn new(vocab: &Vocab) -> Option<Backtrack> {
        let n = vocab.n_ids();
        let filter = PairFilter::new(vocab.pairs.n_pairs(), vocab.pairs.pairs());
        // Per rank: Some(split) for reachable ordinary tokens.
        let merges: Vec<Option<(Rank, Rank)>> = (0..n as Rank)
            .into_par_iter()
            .map(|r| {
                let bytes = vocab.ordinary_bytes(r)?;
                let last = last_merge(vocab, &filter, bytes)?;
                Some(last.unwrap_or((r, r)))
            })
            .collect();
        let mut split = vec![(NO_RANK, NO_RANK); n];
        let mut reachable: Vec<(&[u8], Rank)> = Vec::new();
        let mut whole_tokens_from = 1;
        for (r, m) in merges.iter().enumerate() {
            let r = r as Rank;
            let Some((a, b)) = *m else {
                if let Some(bytes) = vocab.ordinary_bytes(r) {
                    whole_tokens_from = whole_tokens_from.max(bytes.len() + 1);
                }
                continue;
            };
            if (a, b) != (r, r) && (a >= r || b >= r) {
                return None;
            }
            let bytes = vocab.ordinary_bytes(r)?;
            split[r as usize] = (a, b);
            reachable.push((bytes, r));
        }
        let (trie, shorter) = PrefixTrie::new(&reachable);
        let mut next_prefix = vec![NO_RANK; n];
        for (&(_, r), p) in reachable.iter().zip(shorter) {
            next_prefix[r as usize] = p;
        }
        Some(Backtrack {
            whole_tokens_from,
            trie,
            next_prefix,
            split,
            memo: PairMemo::default(),
            filter,
        })
    }

    /// The longest reachable token that `text` starts with, and its length.
    #[inline(always)]
    fn longest_match(&self, text: &[u8]) -> Option<(Rank, usize)> {
        self.trie.longest(text)
    }

    /// Does BPE of `left`'s bytes followed by `right`'s give back `[left, right]`? From the
    /// memo when it holds the pair, else by [`Backtrack::unwind`].
    #[inline]
    fn compatible(&self, vocab: &Vocab, left: Rank, right: Rank) -> bool {
        if let Some(yes) = self.memo.get(left, right) {
            return yes;
        }
        let yes = self.unwind(vocab, left, right);
        self.memo.put(left, right, yes);
        yes
    }

    /// `compatible` without the memo: walks the two merge trees back in time, always undoing
    /// the later merge (the higher rank; on equal ranks the right one, since ties merge
    /// leftmost first). After undoing a merge of rank `m`, the two parts now touching the
    /// boundary were both alive until `m` happened, so a token across the boundary with a rank
    /// below `m` (on the right side: at most `m`, as the boundary pair is further left and
    /// wins the tie) would have been merged first and the pair is not compatible.
    fn unwind(&self, vocab: &Vocab, mut left: Rank, mut right: Rank) -> bool {
        let mut limit = Rank::MAX;
        loop {
            if self.filter.may_merge(left, right) {
                if let Some(m) = vocab.pairs.get(left, right) {
                    if m < limit {
                        return false;
                    }
                }
            }
            if left > right {
                limit = left;
                left = self.split[left as usize].1;
                if left == limit {
                    // `left` is a single byte: only the right tree is left to undo.
                    limit = right + 1;
                    right = self.split[right as usize].0;
                    if right + 1 == limit {
                        return true;
                    }
                }
            } else {
                limit = right + 1;
                right = self.split[right as usize].0;
                if right + 1 == limit {
                    limit = left;
                    left = self.split[left as usize].1;
                    if left == limit {
                        return true;
                    }
                }
            }
        }
    }

    /// Append the BPE tokens of `piece` to `out`. Returns `false`, with `out` unchanged, if
    /// some byte has no token or the walk finds no sequence (impossible for a vocabulary that
    /// `new` accepted; the caller then falls back to the heap, which reports the error).
    pub fn encode(&self, vocab: &Vocab, piece: &[u8], out: &mut Vec<Rank>) -> bool {
        let n = piece.len();
        let base = out.len();
        // One bit per position: set = dead. On the stack for pieces up to 4 KiB.
        let words = n / 64 + 1;
        let mut small = [0u64; 64];
        let mut large = Vec::new();
        let dead: &mut [u64] = if words <= small.len() {
            &mut small[..words]
        } else {
            large.resize(words, 0);
            &mut large
        };
        let mut pos = 0usize;
        let mut next = self.longest_match(piece);
        while pos < n {
            let Some((mut t, mut len)) = next else {
                out.truncate(base);
                return false;
            };
            loop {
                let end = pos + len;
                let alive = dead[end / 64] & (1 << (end % 64)) == 0;
                if alive && (out.len() == base || self.compatible(vocab, out[out.len() - 1], t)) {
                    out.push(t);
                    pos = end;
                    next = if pos < n {
                        self.longest_match(&piece[pos..])
                    } else {
                        None
                    };
                    break;
                }
                let shorter = self.next_prefix[t as usize];
                if shorter != NO_RANK {
                    t = shorter;
                    len = vocab.token_len(t);
                    continue;
                }
                // No token starts here in any BPE sequence: retreat by one token.
                dead[pos / 64] |= 1 << (pos % 64);
                if out.len() == base {
                    return false;
                }
                let Some(last) = out.pop() else {
                    return false;
                };
                let last_len = vocab.token_len(last);
                pos -= last_len;
                next = Some((last, last_len));
                break;
            }
        }
        true
    }

    /// Approximate heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.trie.memory_bytes()
            + self.next_prefix.len() * 4
            + self.split.len() * 8
            + self.memo.memory_bytes()
            + self.filter.memory_bytes()
    }
}
