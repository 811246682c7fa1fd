//! Near-linear BPE for long pieces: greedy longest match, corrected by backtracking.
//!
//! Invariant: for a vocabulary that [`Backtrack::new`] accepts, [`Backtrack::encode`]
//! appends exactly the tokens of the merge-rank definition in `bpe.rs` (what
//! [`crate::encode::bpe::merge_heap`] computes), or returns `false` and appends nothing.
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
//! would have come before the merge just undone (`Backtrack::compatible`). That needs every
//! merge to join parts of lower rank than its result, as training always produces.
//!
//! A vocabulary not trained in rank order (Llama 3: 81 tokens whose last merge joins a part
//! ranked above them) is *guarded*: `encode` refuses (returns `false`) a piece that holds the
//! bytes of such a token, and the caller's heap takes it. Why the rest is still exact: a
//! token forms only from bytes of the piece, so in a piece holding none of these tokens'
//! bytes, no token holding them forms either, nor sits on either side of a pair the walk
//! asks about (each is a substring of the piece); every token the walk and the unwinding
//! touch is then one whose merges, down to its bytes, all rise in rank, and BPE of the piece
//! is what it would be in the vocabulary without the others. `new` returns `None` only where
//! more than [`MAX_GUARDED`] tokens would need the guard.
//!
//! Most pairs need neither the memo nor the unwinding: `Spines` settles them with one AND
//! of two words (see there).

use super::tables::BpeVocab;
use crate::encode::bpe::occurs::Occurs;
use crate::encode::bpe::pair_filter::PairFilter;
use crate::encode::bpe::pair_memo::PairMemo;
use crate::encode::bpe::prefix_trie::PrefixTrie;
use crate::vocab::blocked_bloom::BlockedBloom;
use crate::vocab::{Rank, Vocab, NO_RANK};
use rayon::prelude::*;

pub struct Backtrack {
    /// Every token at least this long is reachable (see [`Backtrack::returns_whole`]).
    whole_tokens_from: usize,
    /// The unreachable tokens, by [`ends_key`] (see [`Backtrack::returns_whole`]). Llama 3
    /// has 844, 308 of them longer than 16 bytes: a filter of 1 KiB stays in L1, where a
    /// look-up in the vocabulary's token table is a cache miss.
    unreached: BlockedBloom,
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
    /// Asked before the memo, on pieces where it pays (see [`Spines`]); `None` for large
    /// vocabularies.
    spines: Option<Spines>,
    /// The bytes of the tokens whose last merge joins a part ranked above them (see the
    /// module docs): a piece holding one is refused. `None` for a vocabulary trained in
    /// rank order (all of OpenAI's).
    guard: Option<Occurs>,
}

/// A hash of `bytes`' length and its first and last (up to) 8 bytes: enough to tell a long
/// piece from the few unreachable tokens, without reading the piece's middle.
#[inline(always)]
fn ends_key(bytes: &[u8]) -> u64 {
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let n = bytes.len();
    let (first, last) = (word(&bytes[..n.min(8)]), word(&bytes[n - n.min(8)..]));
    let h = (first ^ (n as u64).rotate_left(56)).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ last;
    let h = (h ^ (h >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 32)
}

/// The most tokens out of rank order a vocabulary may have and still be backtracked (with
/// the guard); above it nearly every piece would be refused anyway.
const MAX_GUARDED: usize = 4096;

/// A test that proves most pairs of tokens in a run of CJK text compatible, with no memo
/// probe and no unwinding.
///
/// Invariant: if `proves(left, right)`, then `unwind(left, right)` returns true.
///
/// Why it holds: `unwind` only ever looks at pairs `(l, r)` with `l` on `left`'s right spine
/// (`left`, the right part of its last merge, that part's right part, ... down to a byte)
/// and `r` on `right`'s left spine, and returns false only on finding such a pair in the
/// pair table. Per rank, `partners` has bit `h(r)` set for every pair `(l, r)` in the table
/// with `l` on the rank's right spine, and `parts` has bit `h(r)` for every `r` on its left
/// spine. A pair the unwinding could find sets the same bit in both, so where the two words
/// share no bit there is none.
///
/// Why it pays: in 1 MB of the shared multilingual text it proves 87.5% of the
/// compatibility checks on cl100k and 84.3% on p50k. The bytes at the bottom of a CJK
/// char's spines are lead and continuation bytes, which few merges join across a char
/// boundary. On English and code it proves almost none (Latin letters merge with nearly
/// everything), so backtracking asks it only on pieces that end in a non-ASCII byte.
/// Backtracking alone on cl100k multilingual: ~1.16x as fast. On o200k its table is too big
/// for the loads to pay, hence [`SPINES_MAX_IDS`] (see docs/engine.md).
struct Spines {
    /// Per rank: `[partners, parts]`.
    words: Vec<[u64; 2]>,
}

/// Vocabularies with more ids than this (o200k) go without [`Spines`].
const SPINES_MAX_IDS: usize = 1 << 17;

impl Spines {
    /// Which bit stands for token `r`.
    #[inline(always)]
    fn bit(r: Rank) -> u64 {
        1 << ((r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58)
    }

    /// `split` as in [`Backtrack`]; `reachable` the ranks the walk can propose. Every other
    /// rank gets all bits set, so it is never proved anything.
    fn new(vocab: &Vocab, split: &[(Rank, Rank)], reachable: impl Iterator<Item = Rank>) -> Self {
        let n = split.len();
        let mut partners_of = vec![0u64; n];
        for (l, r) in vocab.pairs.pairs() {
            if let Some(p) = partners_of.get_mut(l as usize) {
                *p |= Self::bit(r);
            }
        }
        let mut words = vec![[u64::MAX; 2]; n];
        for t in reachable {
            let (mut partners, mut parts) = (0, 0);
            let mut l = t;
            loop {
                partners |= partners_of[l as usize];
                let next = split[l as usize].1;
                if next == l {
                    break;
                }
                l = next;
            }
            let mut r = t;
            loop {
                parts |= Self::bit(r);
                let next = split[r as usize].0;
                if next == r {
                    break;
                }
                r = next;
            }
            words[t as usize] = [partners, parts];
        }
        Spines { words }
    }

    #[inline(always)]
    fn proves(&self, left: Rank, right: Rank) -> bool {
        self.words[left as usize][0] & self.words[right as usize][1] == 0
    }

    fn memory_bytes(&self) -> usize {
        self.words.len() * 16
    }
}

/// The last merge BPE makes on `bytes`, if BPE turns them into one token (`Some(None)` for a
/// single byte); `None` if the bytes stay in several parts (the token is unreachable) or a
/// byte has no token. Only ever run on single tokens, once each, with `scratch` reused
/// (here and by `pipeline::bpe_model`'s choice of the engine).
///
/// The merges are `bpe::merge_scan`'s: the leftmost lowest-ranked pair each round, and after
/// a merge only the two pairs beside it looked up again (the first pairs of bytes from the
/// pair table's byte array), not every pair each round, which was most of `Backtrack::new`'s
/// time. Most look-ups find no merge; `filter` (where built) settles those from L2 instead
/// of the pair table.
pub(crate) fn last_merge(
    vocab: &Vocab,
    filter: Option<&PairFilter>,
    bytes: &[u8],
    scratch: &mut (Vec<Rank>, Vec<Rank>),
) -> Option<Option<(Rank, Rank)>> {
    if bytes.len() > LAST_MERGE_SCAN_MAX {
        return last_merge_heap(vocab, bytes);
    }
    let (tok, pair) = scratch;
    tok.clear();
    for &b in bytes {
        match vocab.byte_ranks[b as usize] {
            NO_RANK => return None,
            r => tok.push(r),
        }
    }
    pair.clear();
    pair.extend(bytes.windows(2).map(|w| vocab.pairs.byte_pair(w[0], w[1])));
    let lookup = |a: Rank, b: Rank| {
        if filter.is_none_or(|f| f.may_merge(a, b)) {
            vocab.pairs.get(a, b).unwrap_or(NO_RANK)
        } else {
            NO_RANK
        }
    };
    let mut last = None;
    while tok.len() > 1 {
        // Leftmost minimum: `min_by_key` keeps the first of equal keys.
        let Some((at, &best)) = pair.iter().enumerate().min_by_key(|&(_, &r)| r) else {
            break;
        };
        if best == NO_RANK {
            break;
        }
        last = Some((tok[at], tok[at + 1]));
        tok[at] = best;
        tok.remove(at + 1);
        pair.remove(at);
        if at + 1 < tok.len() {
            pair[at] = lookup(tok[at], tok[at + 1]);
        }
        if at > 0 {
            pair[at - 1] = lookup(tok[at - 1], tok[at]);
        }
    }
    (tok.len() == 1).then_some(last)
}

/// Tokens longer than this get their last merge from [`last_merge_heap`]: the scan above is
/// quadratic in a token's length (a 200 KB token took minutes).
const LAST_MERGE_SCAN_MAX: usize = 256;

/// [`last_merge`] by heap-driven merging (as `bpe::merge_heap`, O(m log m)), which makes the
/// same merges in the same order (the lowest rank first, ties to the leftmost pair), so its
/// last merge is the same.
fn last_merge_heap(vocab: &Vocab, bytes: &[u8]) -> Option<Option<(Rank, Rank)>> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    const DEAD: u32 = u32::MAX;
    let m = bytes.len();
    let mut tok: Vec<Rank> = Vec::with_capacity(m);
    for &b in bytes {
        match vocab.byte_ranks[b as usize] {
            NO_RANK => return None,
            r => tok.push(r),
        }
    }
    let pairs = &vocab.pairs;
    let mut next: Vec<u32> = (1..=m as u32).collect();
    let mut prev: Vec<u32> = (0..m as u32).map(|i| i.wrapping_sub(1)).collect();
    let mut heap: BinaryHeap<Reverse<(Rank, u32, u32, u32)>> = (0..m.saturating_sub(1))
        .filter_map(|s| {
            let r = pairs.byte_pair(bytes[s], bytes[s + 1]);
            (r != NO_RANK).then_some(Reverse((r, s as u32, s as u32 + 1, s as u32 + 2)))
        })
        .collect();
    let (mut parts, mut last) = (m, None);
    while let Some(Reverse((rank, s, mid, e))) = heap.pop() {
        let (su, mu) = (s as usize, mid as usize);
        if next[su] != mid || next[mu] != e {
            continue; // stale: a part it joins has changed
        }
        last = Some((tok[su], tok[mu]));
        parts -= 1;
        tok[su] = rank;
        next[su] = e;
        next[mu] = DEAD;
        if (e as usize) < m {
            prev[e as usize] = s;
            if let Some(r) = pairs.get(rank, tok[e as usize]) {
                heap.push(Reverse((r, s, e, next[e as usize])));
            }
        }
        let p = prev[su];
        if p != DEAD {
            if let Some(r) = pairs.get(tok[p as usize], rank) {
                heap.push(Reverse((r, p, s, e)));
            }
        }
    }
    (parts == 1).then_some(last)
}

/// Per rank: the two tokens the last merge of BPE on the token's bytes joins (`(r, r)` for
/// a single byte), or `None` for a token BPE does not reach and for a special token's id.
fn last_merges(vocab: &BpeVocab) -> Vec<Option<(Rank, Rank)>> {
    let filter = vocab.pair_filter();
    crate::runtime::pool::parallel(|| {
        (0..vocab.n_ids() as Rank)
            .into_par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |scratch, r| {
                    let bytes = vocab.ordinary_bytes(r)?;
                    let last = last_merge(vocab, Some(filter), bytes, scratch)?;
                    Some(last.unwrap_or((r, r)))
                },
            )
            .collect()
    })
}

/// Per rank: does BPE of the token's bytes give the token back? From the tables where
/// [`Backtrack::new`] accepts `vocab`, else computed here (as `new` computes it).
pub fn reachable(vocab: &BpeVocab) -> Vec<bool> {
    match vocab.backtrack() {
        Some(bt) => (0..vocab.n_ids() as Rank)
            .map(|r| bt.is_reachable(r))
            .collect(),
        None => last_merges(vocab).iter().map(Option::is_some).collect(),
    }
}

impl Backtrack {
    /// Build the tables for `vocab`, with a guard against the tokens whose last merge joins
    /// a part ranked at or above them (for those the unwinding in `compatible` would be
    /// wrong: see the module docs); `None` if there are more than [`MAX_GUARDED`] of them.
    pub fn new(vocab: &BpeVocab) -> Option<Backtrack> {
        let n = vocab.n_ids();
        let merges = last_merges(vocab);
        let mut split = vec![(NO_RANK, NO_RANK); n];
        let mut reachable: Vec<(&[u8], Rank)> = Vec::new();
        let mut guarded: Vec<&[u8]> = Vec::new();
        let mut whole_tokens_from = 1;
        let mut unreached: Vec<u64> = Vec::new();
        for (r, m) in merges.iter().enumerate() {
            let r = r as Rank;
            let Some((a, b)) = *m else {
                if let Some(bytes) = vocab.ordinary_bytes(r) {
                    whole_tokens_from = whole_tokens_from.max(bytes.len() + 1);
                    unreached.push(ends_key(bytes));
                }
                continue;
            };
            let bytes = vocab.ordinary_bytes(r)?;
            if (a, b) != (r, r) && (a >= r || b >= r) {
                // Still reachable, and its split still true (cut tables ask): only the walk
                // must never meet it, which the guard sees to.
                guarded.push(bytes);
            }
            split[r as usize] = (a, b);
            reachable.push((bytes, r));
        }
        let guard = match guarded.len() {
            0 => None,
            k if k > MAX_GUARDED => return None,
            _ => Some(Occurs::new(&guarded)?),
        };
        let (trie, shorter) = PrefixTrie::new(&reachable);
        let mut next_prefix = vec![NO_RANK; n];
        for (&(_, r), p) in reachable.iter().zip(shorter) {
            next_prefix[r as usize] = p;
        }
        let spines = (n <= SPINES_MAX_IDS)
            .then(|| Spines::new(vocab, &split, reachable.iter().map(|&(_, r)| r)));
        let mut unreached_filter = BlockedBloom::new(unreached.len());
        for k in unreached {
            unreached_filter.insert(k);
        }
        Some(Backtrack {
            whole_tokens_from,
            unreached: unreached_filter,
            trie,
            next_prefix,
            split,
            memo: PairMemo::default(),
            spines,
            guard,
        })
    }

    /// Whether the walk gives `piece`, if it is a token, back as that one token, so that the
    /// caller may skip its own whole-token look-up (tiktoken's rule): a cache miss in the
    /// token table for nearly every long piece. True unless the piece may be a token the
    /// walk never proposes (an unreachable one); every reachable token is its own BPE.
    #[inline(always)]
    pub fn returns_whole(&self, piece: &[u8]) -> bool {
        piece.len() >= self.whole_tokens_from || !self.unreached.may_hold(ends_key(piece))
    }

    /// Whether some piece is refused: the vocabulary has tokens out of rank order.
    #[cfg(test)]
    pub fn is_guarded(&self) -> bool {
        self.guard.is_some()
    }

    /// Does BPE of token `r`'s bytes give `r` back? (Every byte token does; a few longer
    /// tokens of a trained vocabulary cannot be reached by any merge.)
    pub fn is_reachable(&self, r: Rank) -> bool {
        self.split.get(r as usize).is_some_and(|s| s.0 != NO_RANK)
    }

    /// The longest reachable token that `text` starts with, and its length.
    #[inline(always)]
    fn longest_match(&self, text: &[u8]) -> Option<(Rank, usize)> {
        self.trie.longest(text)
    }

    /// Does BPE of `left`'s bytes followed by `right`'s give back `[left, right]`? From
    /// `spines` if given and it proves so, else from the memo when it holds the pair, else by
    /// [`Backtrack::unwind`].
    #[inline]
    fn compatible(
        &self,
        vocab: &BpeVocab,
        spines: Option<&Spines>,
        left: Rank,
        right: Rank,
    ) -> bool {
        if spines.is_some_and(|s| s.proves(left, right)) {
            return true;
        }
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
    ///
    /// Nearly every pair it asks about does not merge: the vocabulary's pair filter settles
    /// those before the table is probed.
    fn unwind(&self, vocab: &BpeVocab, mut left: Rank, mut right: Rank) -> bool {
        let filter = vocab.pair_filter();
        let mut limit = Rank::MAX;
        loop {
            if filter.may_merge(left, right) {
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
    /// the piece holds a guarded token's bytes (see the module docs), some byte has no token
    /// or the walk finds no sequence (impossible for a vocabulary that `new` accepted); the
    /// caller then takes the heap, which gives the tokens or reports the error.
    pub fn encode(&self, vocab: &BpeVocab, piece: &[u8], out: &mut Vec<Rank>) -> bool {
        if self.guard.as_ref().is_some_and(|g| g.in_text(piece)) {
            return false;
        }
        let n = piece.len();
        let base = out.len();
        // One bit per position: set = dead. On the stack for pieces up to 511 bytes (nearly
        // all); room for 4 KiB of positions there (512 bytes to zero) was a `memset` call a
        // piece.
        let words = n / 64 + 1;
        let mut small = [0u64; 8];
        let mut large = Vec::new();
        let dead: &mut [u64] = if words <= small.len() {
            &mut small[..words]
        } else {
            large.resize(words, 0);
            &mut large
        };
        let spines = self
            .spines
            .as_ref()
            .filter(|_| piece.last().is_some_and(|&b| !b.is_ascii()));
        // Until some position dies (rare on real text), every end is alive: no bit to test.
        let mut any_dead = false;
        let mut pos = 0usize;
        let mut next = self.longest_match(piece);
        while pos < n {
            let Some((mut t, mut len)) = next else {
                out.truncate(base);
                return false;
            };
            loop {
                let end = pos + len;
                let alive = !any_dead || dead[end / 64] & (1 << (end % 64)) == 0;
                if alive
                    && (out.len() == base || self.compatible(vocab, spines, out[out.len() - 1], t))
                {
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
                any_dead = true;
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
            + self.spines.as_ref().map_or(0, Spines::memory_bytes)
            + self.guard.as_ref().map_or(0, Occurs::memory_bytes)
            + self.unreached.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::bpe::merge_heap;
    use crate::test_rng::Rng;
    use rustc_hash::FxHashMap;

    /// The last merge by the definition: every round, every pair looked up again, the lowest
    /// rank (leftmost on ties) merged.
    fn last_merge_by_rescan(vocab: &Vocab, bytes: &[u8]) -> Option<Option<(Rank, Rank)>> {
        let mut parts: Vec<Rank> = bytes
            .iter()
            .map(|&b| vocab.byte_ranks[b as usize])
            .collect();
        let mut last = None;
        while parts.len() > 1 {
            let best = (0..parts.len() - 1)
                .filter_map(|i| vocab.pairs.get(parts[i], parts[i + 1]).map(|r| (r, i)))
                .min();
            let Some((r, i)) = best else { break };
            last = Some((parts[i], parts[i + 1]));
            parts[i] = r;
            parts.remove(i + 1);
        }
        (parts.len() == 1).then_some(last)
    }

    #[test]
    fn last_merge_is_the_definitions() {
        // Ties ("aaa": "aa" then "a", not "a" then "aa"), a token made from the right ("abx":
        // "bx" before "ab"), a long one, and one no merge reaches ("pqrs": "qr" leaves "p",
        // "qr", "s", and neither "pqr" nor "qrs" is a token).
        let merged: [&[u8]; 13] = [
            b"aa", b"aaa", b"bx", b"ab", b"aaaa", b"abx", b"cd", b"bcd", b"abcd", b"aabcd",
            b"aaaabcd", b"qr", b"pqrs",
        ];
        let mut ranks: FxHashMap<Vec<u8>, Rank> =
            (0..=255u8).map(|b| (vec![b], b as Rank)).collect();
        for (i, t) in merged.iter().enumerate() {
            ranks.insert(t.to_vec(), 256 + i as Rank);
        }
        let vocab = BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap());
        let filter = vocab.pair_filter();
        let mut scratch = (Vec::new(), Vec::new());
        let mut unreachable = 0;
        for r in 0..vocab.n_ids() as Rank {
            let bytes = vocab.ordinary_bytes(r).unwrap();
            let want = last_merge_by_rescan(&vocab, bytes);
            assert_eq!(
                last_merge(&vocab, Some(filter), bytes, &mut scratch),
                want,
                "{bytes:?}"
            );
            unreachable += want.is_none() as usize;
        }
        assert_eq!(unreachable, 1, "pqrs is the one token no merge reaches");
        for text in [&b"aaaaaaabcdx"[..], b"abxabx", b"zz"] {
            let want = last_merge_by_rescan(&vocab, text);
            assert_eq!(
                last_merge(&vocab, Some(filter), text, &mut scratch),
                want,
                "{text:?}"
            );
        }
        // The heap that takes long tokens makes the same last merge, on every token and on
        // texts either side of the scan's limit.
        for r in 0..vocab.n_ids() as Rank {
            let bytes = vocab.ordinary_bytes(r).unwrap();
            assert_eq!(
                last_merge_heap(&vocab, bytes),
                last_merge_by_rescan(&vocab, bytes)
            );
        }
        for n in [LAST_MERGE_SCAN_MAX - 1, LAST_MERGE_SCAN_MAX + 7, 3000] {
            for text in [
                b"aaaabcdabx".repeat(n / 10 + 1),
                b"a".repeat(n),
                [b"p".repeat(n / 2), b"qrs".to_vec()].concat(),
            ] {
                let want = last_merge_by_rescan(&vocab, &text);
                assert_eq!(last_merge_heap(&vocab, &text), want);
                assert_eq!(last_merge(&vocab, Some(filter), &text, &mut scratch), want);
            }
        }
    }

    /// `returns_whole` is false for every unreachable token (the walk would split it, so the
    /// caller must look it up whole) and true for the long reachable ones.
    #[test]
    fn only_unreachable_tokens_need_a_whole_look_up() {
        let doubled: Vec<Vec<u8>> = (1..=5).map(|k| b"ab".repeat(1 << (k - 1))).collect();
        let long = [&b"x"[..], &b"qr".repeat(19), b"y"].concat();
        let unreached: [&[u8]; 3] = [b"pqrs", b"pqrqrqrqrqrqrqrqrs", &long];
        let mut ranks: FxHashMap<Vec<u8>, Rank> =
            (0..=255u8).map(|b| (vec![b], b as Rank)).collect();
        for t in doubled
            .iter()
            .map(|t| &t[..])
            .chain([&b"qr"[..]])
            .chain(unreached)
        {
            let r = ranks.len() as Rank;
            ranks.insert(t.to_vec(), r);
        }
        let vocab = BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap());
        let bt = Backtrack::new(&vocab).unwrap();
        for t in unreached {
            assert!(!bt.returns_whole(t), "{:?}", String::from_utf8_lossy(t));
        }
        // 32 bytes: shorter than the longest unreachable token, so the filter answers.
        assert!(bt.returns_whole(&doubled[4]));
        // Longer than every unreachable token: no look-up whatever the bytes.
        assert!(bt.returns_whole(&b"pq".repeat(21)));
    }

    /// Vocabularies with tokens out of rank order (each made by merging two earlier tokens,
    /// then a few ranks swapped): backtracking guards them, and every piece it takes gets the
    /// definition's tokens (the heap's); pieces holding a guarded token are refused.
    #[test]
    fn a_guarded_vocabulary_backtracks_exactly_or_refuses() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let (mut taken, mut refused, mut guarded_vocabs) = (0, 0, 0);
        for _ in 0..40 {
            let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
            let mut known: rustc_hash::FxHashSet<Vec<u8>> = tokens.iter().cloned().collect();
            // Merges over a four-letter alphabet, so that tokens overlap and pieces hold them.
            let mut pool: Vec<Vec<u8>> = b"abcd".iter().map(|&b| vec![b]).collect();
            while tokens.len() < 256 + 60 {
                let a = rng.pick(&pool);
                let b = rng.pick(&pool);
                let t = [a.as_slice(), b.as_slice()].concat();
                if t.len() <= 8 && known.insert(t.clone()) {
                    tokens.push(t.clone());
                    pool.push(t);
                }
            }
            for _ in 0..4 {
                let i = 256 + rng.below(60);
                let j = 256 + rng.below(60);
                tokens.swap(i, j);
            }
            let ranks: FxHashMap<Vec<u8>, Rank> = tokens.into_iter().zip(0..).collect();
            let vocab = BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap());
            let bt = Backtrack::new(&vocab).expect("a few tokens out of order are guarded");
            guarded_vocabs += usize::from(bt.is_guarded());
            for _ in 0..300 {
                let len = 1 + rng.below(40);
                let piece: Vec<u8> = (0..len).map(|_| b"abcd"[rng.below(4)]).collect();
                let mut want = Vec::new();
                merge_heap(&vocab, &piece, &mut want).unwrap();
                let mut got = vec![7];
                if bt.encode(&vocab, &piece, &mut got) {
                    taken += 1;
                    assert_eq!(got[1..], want[..], "{:?}", String::from_utf8_lossy(&piece));
                } else {
                    refused += 1;
                    assert_eq!(got, [7], "a refusal appends nothing");
                    assert!(bt.is_guarded(), "only a guard refuses here");
                }
            }
        }
        assert!(guarded_vocabs > 20, "{guarded_vocabs} of 40 were guarded");
        assert!(
            taken > 1000 && refused > 1000,
            "{taken} taken, {refused} refused"
        );
    }

    /// Every pair `Spines` proves compatible, `unwind` finds compatible, and the test is not
    /// empty either way: it proves some pairs and leaves others to the memo.
    #[test]
    fn spines_prove_only_compatible_pairs() {
        let (zh, wen) = ("中".as_bytes(), "文".as_bytes());
        let merged: [&[u8]; 16] = [
            b"ab",
            b"bc",
            b"abc",
            b"cd",
            b"abcd",
            b"de",
            b"bcde",
            b"xy",
            b"yx",
            b"xyx",
            b"yxy",
            &zh[..2],
            zh,
            &wen[1..],
            wen,
            "中文".as_bytes(),
        ];
        let mut ranks: FxHashMap<Vec<u8>, Rank> =
            (0..=255u8).map(|b| (vec![b], b as Rank)).collect();
        for (i, t) in merged.iter().enumerate() {
            ranks.insert(t.to_vec(), 256 + i as Rank);
        }
        let vocab = BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap());
        let bt = Backtrack::new(&vocab).expect("merges go up in rank");
        let spines = bt.spines.as_ref().expect("a small vocabulary has spines");
        let reachable: Vec<Rank> = (0..vocab.n_ids() as Rank)
            .filter(|&r| bt.split[r as usize].0 != NO_RANK)
            .collect();
        assert_eq!(reachable.len(), 256 + merged.len());
        let (mut proved, mut pairs) = (0, 0);
        for &l in &reachable {
            for &r in &reachable {
                pairs += 1;
                if spines.proves(l, r) {
                    proved += 1;
                    assert!(bt.unwind(&vocab, l, r), "proved {l} {r}, which do not fit");
                }
            }
        }
        assert!(proved > 0 && proved < pairs, "{proved} of {pairs} proved");
    }
}
