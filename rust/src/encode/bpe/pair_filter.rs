//! A blocked Bloom filter over the pair table: "could tokens `a` and `b` merge?", answered
//! from one `u64` (see [`BlockedBloom`]).
//!
//! Invariant: `may_merge(a, b)` is `true` for every pair `(a, b)` that the vocabulary's
//! [`crate::vocab::pair_table::PairTable`] holds; for other pairs it is usually `false` (a false
//! positive only costs the table probe it would have cost anyway), never a wrong answer.
//!
//! Why: when the backtracking encoder checks that two tokens are compatible it asks the pair
//! table about several pairs, and almost every answer is "no merge". The table is 4 MB
//! (cl100k) to 8 MB (o200k) of random probes, each one a miss in L2; this filter is 1/16 of
//! that (256-512 KiB) and settles most of those "no"s without touching the table. On text
//! whose pairs are new (random letters, base64, identifiers) those probes were ~40% of
//! backtracking's time. `merge_scan` asks it too, for the pairs beside each merge (~5% on
//! text met for the first time). [`BpeVocab`](super::tables::BpeVocab) builds it at the
//! first BPE that needs it.

use crate::vocab::blocked_bloom::BlockedBloom;

const K: u64 = 0x9E37_79B9_7F4A_7C15;

pub struct PairFilter(BlockedBloom);

/// Hash of a pair of ids (each below 2^21, the pair table's limit).
#[inline(always)]
fn hash(a: u32, b: u32) -> u64 {
    let k = a as u64 | (b as u64) << 21;
    let h = (k ^ (k >> 29)).wrapping_mul(K);
    h ^ (h >> 31)
}

impl PairFilter {
    /// A filter holding `pairs`, sized for `n` of them. cl100k and o200k get ~9 bits a pair
    /// and 3.0% / 2.7% false positives on random id pairs.
    pub fn new(n: usize, pairs: impl Iterator<Item = (u32, u32)>) -> PairFilter {
        let mut f = BlockedBloom::new(n);
        for (a, b) in pairs {
            f.insert(hash(a, b));
        }
        PairFilter(f)
    }

    /// `false` only if `(a, b)` is not in the pair table.
    #[inline(always)]
    pub fn may_merge(&self, a: u32, b: u32) -> bool {
        self.0.may_hold(hash(a, b))
    }

    /// Heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_every_pair_it_was_given_and_rejects_most_others() {
        let mut x: u64 = 7;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (
                (x >> 33) as u32 & ((1 << 21) - 1),
                (x >> 11) as u32 & ((1 << 21) - 1),
            )
        };
        let given: Vec<(u32, u32)> = (0..50_000).map(|_| next()).collect();
        let f = PairFilter::new(given.len(), given.iter().copied());
        assert!(given.iter().all(|&(a, b)| f.may_merge(a, b)));
        let others: Vec<(u32, u32)> = (0..50_000).map(|_| next()).collect();
        let false_pos = others.iter().filter(|&&(a, b)| f.may_merge(a, b)).count();
        assert!(
            false_pos < 50_000 / 20,
            "{false_pos} false positives of 50000"
        );
    }

    #[test]
    fn an_empty_or_tiny_filter_works() {
        let f = PairFilter::new(0, std::iter::empty());
        assert_eq!(f.memory_bytes(), 8);
        assert!(!f.may_merge(1, 2));
        let f = PairFilter::new(1, [(1, 2)].into_iter());
        assert!(f.may_merge(1, 2));
    }
}
