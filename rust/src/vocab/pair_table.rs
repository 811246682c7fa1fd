//! Merge look-ups by rank: `(left, right) → rank of left's bytes ++ right's bytes`.
//!
//! Invariant: `get(a, b) == Some(r)` iff the concatenation of tokens `a` and `b` is the
//! ordinary token `r`. It is built from every split point of every token whose halves are
//! both tokens (found in time linear in the vocabulary's bytes), so it answers exactly what a
//! look-up of the concatenated bytes would, and BPE (whose parts are always
//! tokens) never has to slice, hash or compare bytes while merging. Single-byte pairs, the
//! first look-ups of every piece, go through a direct 256×256 array instead.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

const EMPTY: u64 = u64::MAX;
const K: u64 = 0x9E37_79B9_7F4A_7C15;
/// Ids are packed 21 bits each: `left | right << 21 | merged << 42` in one `u64` slot, so a
/// probe touches one cache line and the table is 8 bytes a slot (8 MB for o200k).
pub const MAX_IDS: usize = 1 << 21;
const ID_MASK: u64 = (1 << 21) - 1;
const KEY_MASK: u64 = (1 << 42) - 1;

pub struct PairTable {
    slots: Vec<u64>,
    shift: u32,
    /// Occupied slots, counted as they are filled (`Backtrack::new` sizes its filter by it).
    n_pairs: usize,
    /// `bytes[(a << 8) | b]`: the rank of the two-byte token `[a, b]`, or `u32::MAX`.
    bytes: Vec<u32>,
}

#[inline(always)]
fn key(a: u32, b: u32) -> u64 {
    (a as u64 & ID_MASK) | ((b as u64 & ID_MASK) << 21)
}

/// Tokens longer than this have their split points found by [`long_splits`].
const SHORT: usize = 32;

/// Tokens of more than [`SHORT`] bytes, by a trie. Nearly every node of long tokens has one
/// child (a long token is mostly a chain of its own), so each node keeps its first child
/// inline, and only the others go to a hash map: a walk down one token reads consecutive
/// nodes (they were made in its order) instead of probing a hash table per byte.
struct LongTrie {
    /// Per node: its first child (`NONE` if none) and the byte on the edge into it.
    child: Vec<u32>,
    byte: Vec<u8>,
    /// Whether the node has more children, in `more`.
    branches: Vec<bool>,
    more: FxHashMap<(u32, u8), u32>,
    /// Per node: the rank of the token that ends there, or `NONE`.
    rank: Vec<u32>,
}

const NONE: u32 = u32::MAX;

impl LongTrie {
    /// The trie of `tokens`' bytes, or of their bytes reversed.
    fn new(tokens: &[(&[u8], u32)], reversed: bool) -> Self {
        let mut t = LongTrie {
            child: vec![NONE],
            byte: vec![0],
            branches: vec![false],
            more: FxHashMap::default(),
            rank: vec![NONE],
        };
        for &(bytes, r) in tokens {
            let mut node = 0u32;
            if reversed {
                bytes.iter().rev().for_each(|&b| node = t.add(node, b));
            } else {
                bytes.iter().for_each(|&b| node = t.add(node, b));
            }
            t.rank[node as usize] = r;
        }
        t
    }

    #[inline]
    fn get(&self, node: u32, b: u8) -> Option<u32> {
        let n = node as usize;
        let c = self.child[n];
        if c != NONE && self.byte[n] == b {
            return Some(c);
        }
        if self.branches[n] {
            return self.more.get(&(node, b)).copied();
        }
        None
    }

    fn add(&mut self, node: u32, b: u8) -> u32 {
        if let Some(c) = self.get(node, b) {
            return c;
        }
        let fresh = self.rank.len() as u32;
        self.child.push(NONE);
        self.byte.push(0);
        self.branches.push(false);
        self.rank.push(NONE);
        let n = node as usize;
        if self.child[n] == NONE {
            self.child[n] = fresh;
            self.byte[n] = b;
        } else {
            self.branches[n] = true;
            self.more.insert((node, b), fresh);
        }
        fresh
    }

    /// `(depth, rank)` of each token on the path of `bytes` (in the order given), deeper
    /// than [`SHORT`].
    fn tokens_on(&self, bytes: impl Iterator<Item = u8>, out: &mut Vec<(usize, u32)>) {
        let mut node = 0u32;
        for (i, b) in bytes.enumerate() {
            match self.get(node, b) {
                Some(n) => node = n,
                None => return,
            }
            let r = self.rank[node as usize];
            if i + 1 > SHORT && r != NONE {
                out.push((i + 1, r));
            }
        }
    }
}

/// The pairs of every token longer than [`SHORT`] bytes, added to `entries`, in time linear
/// in the long tokens' bytes.
///
/// Why: trying each split point with a look-up of both halves hashes the whole token at each
/// one, quadratic in its length (a 200 KB token took seconds to build a vocabulary with). A
/// split point `k` of token `t` makes a pair when `t[..k]` and `t[k..]` are both tokens: the
/// prefixes up to [`SHORT`] bytes are looked up directly, the longer ones (long tokens
/// themselves) are the tokens on `t`'s path down a trie of the long tokens; the suffixes
/// likewise, with a trie of the long tokens reversed.
fn long_splits<'v>(
    n_ids: usize,
    token_bytes: &(dyn Fn(u32) -> Option<&'v [u8]> + Sync),
    rank: &(dyn Fn(&[u8]) -> Option<u32> + Sync),
    entries: &mut Vec<(u64, u32)>,
) {
    let long: Vec<(&[u8], u32)> = (0..n_ids as u32)
        .filter_map(|r| token_bytes(r).filter(|t| t.len() > SHORT).map(|t| (t, r)))
        .collect();
    if long.is_empty() {
        return;
    }
    let forward = LongTrie::new(&long, false);
    let backward = LongTrie::new(&long, true);
    let (mut prefixes, mut suffixes) = (Vec::new(), Vec::new());
    for &(t, r) in &long {
        let n = t.len();
        // Prefixes: (length, rank), in increasing length.
        prefixes.clear();
        prefixes.extend((1..=SHORT).filter_map(|k| rank(&t[..k]).map(|a| (k, a))));
        forward.tokens_on(t.iter().copied(), &mut prefixes);
        // Suffixes: (length, rank), in increasing length.
        suffixes.clear();
        suffixes.extend((1..=SHORT).filter_map(|k| rank(&t[n - k..]).map(|b| (k, b))));
        backward.tokens_on(t.iter().rev().copied(), &mut suffixes);
        // Both in increasing length; a prefix of length k pairs with the suffix of n - k.
        let mut j = suffixes.len();
        for &(k, a) in &prefixes {
            if k >= n {
                break;
            }
            while j > 0 && suffixes[j - 1].0 > n - k {
                j -= 1;
            }
            if j > 0 && suffixes[j - 1].0 == n - k {
                entries.push((key(a, suffixes[j - 1].1), r));
            }
        }
    }
}

/// The slot count for `n` pairs: a power of two, at most 60% full. Probe runs stay short at
/// that load (a slot is 8 bytes, so a run of a few slots is one cache line), and the table is
/// not doubled just past a power of two, as `next_power_of_two(2n)` would: Llama 3's 280,147
/// pairs take 4 MiB at 53% instead of 8 MiB at 27%, less for a look-up to miss in the caches.
fn slots_for(n: usize) -> usize {
    let cap = n.next_power_of_two().max(16);
    if n * 5 > cap * 3 {
        cap * 2
    } else {
        cap
    }
}

impl PairTable {
    /// `n_ids` is one past the largest id (at most [`MAX_IDS`], checked by the caller);
    /// `token_bytes(id)` gives an ordinary token's bytes (or `None`); `rank(bytes)` looks
    /// bytes up.
    pub fn new<'v>(
        n_ids: usize,
        token_bytes: &(dyn Fn(u32) -> Option<&'v [u8]> + Sync),
        rank: &(dyn Fn(&[u8]) -> Option<u32> + Sync),
        byte_ranks: &[u32; 256],
    ) -> Self {
        // Short tokens: each split point looked up directly (at most SHORT^2 / 2 bytes
        // hashed a token). Long ones: see `long_splits`, linear in their bytes.
        let mut entries: Vec<(u64, u32)> = crate::runtime::pool::parallel(|| {
            (0..n_ids as u32)
                .into_par_iter()
                .flat_map_iter(|r| {
                    let t = token_bytes(r).unwrap_or_default();
                    let t = if t.len() > SHORT { &[][..] } else { t };
                    (1..t.len()).filter_map(move |k| {
                        let a = rank(&t[..k])?;
                        let b = rank(&t[k..])?;
                        Some((key(a, b), r))
                    })
                })
                .collect()
        });
        long_splits(n_ids, token_bytes, rank, &mut entries);
        let cap = slots_for(entries.len());
        debug_assert!(n_ids <= MAX_IDS);
        let mut table = PairTable {
            slots: vec![EMPTY; cap],
            shift: 64 - cap.trailing_zeros(),
            n_pairs: 0,
            bytes: vec![u32::MAX; 1 << 16],
        };
        for (k, r) in entries {
            let mut i = table.index(k);
            while table.slots[i] != EMPTY && table.slots[i] & KEY_MASK != k {
                i = (i + 1) & (cap - 1);
            }
            table.n_pairs += (table.slots[i] == EMPTY) as usize;
            table.slots[i] = k | ((r as u64) << 42);
        }
        for a in 0..256usize {
            for b in 0..256usize {
                let (ra, rb) = (byte_ranks[a], byte_ranks[b]);
                if ra != u32::MAX && rb != u32::MAX {
                    if let Some(r) = table.get(ra, rb) {
                        table.bytes[(a << 8) | b] = r;
                    }
                }
            }
        }
        table
    }

    /// A table with no pairs (a placeholder while a vocabulary is being built).
    pub fn empty() -> Self {
        PairTable {
            slots: vec![EMPTY; 16],
            shift: 60,
            n_pairs: 0,
            bytes: Vec::new(),
        }
    }

    #[inline(always)]
    fn index(&self, k: u64) -> usize {
        let h = (k ^ (k >> 29)).wrapping_mul(K);
        (h >> self.shift) as usize
    }

    /// The rank of token `a`'s bytes followed by token `b`'s, if that is a token.
    #[inline(always)]
    pub fn get(&self, a: u32, b: u32) -> Option<u32> {
        let k = key(a, b);
        let mask = self.slots.len() - 1;
        let mut i = self.index(k);
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if s & KEY_MASK == k {
                return Some((s >> 42) as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// The rank of the two-byte token `[a, b]`, or `u32::MAX`.
    #[inline(always)]
    pub fn byte_pair(&self, a: u8, b: u8) -> u32 {
        self.bytes[((a as usize) << 8) | b as usize]
    }

    /// Every `(left, right)` pair the table holds, in no particular order.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.slots
            .iter()
            .filter(|&&s| s != EMPTY)
            .map(|&s| ((s & ID_MASK) as u32, ((s >> 21) & ID_MASK) as u32))
    }

    /// How many pairs the table holds.
    pub fn n_pairs(&self) -> usize {
        self.n_pairs
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * 8 + self.bytes.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table holds exactly the pairs a look-up of every split point finds, for tokens
    /// either side of [`SHORT`] bytes (long runs of one byte: many long prefixes and
    /// suffixes), and builds a token of megabytes quickly (no split point is hashed whole).
    #[test]
    fn pairs_are_every_split_point_of_short_and_long_tokens() {
        let mut toks: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for n in 2..80 {
            toks.push(vec![b'a'; n]);
            if n % 3 == 0 {
                toks.push([vec![b'b'; n / 3], vec![b'a'; n]].concat());
                toks.push([vec![b'a'; n], vec![b'b'; n / 3]].concat());
            }
        }
        toks.push(vec![b'b'; 1]);
        toks.sort();
        toks.dedup();
        let by_bytes: FxHashMap<&[u8], u32> = toks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_slice(), i as u32))
            .collect();
        let token_bytes = |r: u32| toks.get(r as usize).map(|t| t.as_slice());
        let rank = |b: &[u8]| by_bytes.get(b).copied();
        let mut byte_ranks = [u32::MAX; 256];
        for (b, slot) in byte_ranks.iter_mut().enumerate() {
            *slot = rank(&[b as u8]).unwrap_or(u32::MAX);
        }
        let table = PairTable::new(toks.len(), &token_bytes, &rank, &byte_ranks);
        let mut want = 0;
        for (r, t) in toks.iter().enumerate() {
            for k in 1..t.len() {
                if let (Some(a), Some(b)) = (rank(&t[..k]), rank(&t[k..])) {
                    assert_eq!(table.get(a, b), Some(r as u32), "{t:?} at {k}");
                    want += 1;
                }
            }
        }
        assert_eq!(table.n_pairs(), want);
        for a in 0..toks.len() as u32 {
            for b in 0..toks.len() as u32 {
                let joined = [&toks[a as usize][..], &toks[b as usize][..]].concat();
                assert_eq!(table.get(a, b), rank(&joined));
            }
        }

        // One token of 4 MB: the old quadratic build would hash ~8 TB.
        let mut toks: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        toks.push(vec![b'q'; 4 << 20]);
        toks.push(vec![b'q'; 2]);
        let by_bytes: FxHashMap<&[u8], u32> = toks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.as_slice(), i as u32))
            .collect();
        let token_bytes = |r: u32| toks.get(r as usize).map(|t| t.as_slice());
        let rank = |b: &[u8]| by_bytes.get(b).copied();
        let table = PairTable::new(toks.len(), &token_bytes, &rank, &byte_ranks);
        assert_eq!(table.get(b'q' as u32, b'q' as u32), Some(257));
        assert_eq!(table.n_pairs(), 1);
    }
}
