//! A blocked Bloom filter over 64-bit hashes: "might this key be in the set?", answered from
//! one `u64`.
//!
//! Invariant: `may_hold(h)` is `true` for every `h` that was inserted; for other hashes it is
//! usually `false`. A false positive only costs the look-up the filter stands in front of,
//! never a wrong answer.
//!
//! Why: the tables behind these filters (pair table, mid table) are megabytes of random
//! probes, a miss in L2 each, and on some text most of those probes find nothing. A filter of
//! 1/16 to 1/64 of the table's size stays in L1/L2 and settles most of those misses. The layout
//! is the blocked Bloom filter of Putze, Sanders and Singler, "Cache-, Hash- and
//! Space-Efficient Bloom Filters" (2007): a key sets three bits of one 64-bit word, so a query
//! reads one word.
//!
//! The caller's hash must be well mixed in both its high bits (they pick the word) and its low
//! 18 bits (they pick the three bits).

pub struct BlockedBloom {
    words: Box<[u64]>,
    shift: u32,
}

/// The three bits of a word that `h` sets: positions from three 6-bit fields of the low bits
/// (the word index comes from the high bits, so the two choices are independent).
#[inline(always)]
fn mask(h: u64) -> u64 {
    (1 << (h & 63)) | (1 << ((h >> 6) & 63)) | (1 << ((h >> 12) & 63))
}

impl BlockedBloom {
    /// An empty filter sized for `n` keys: at most 8 a word, so 8-16 bits a key as the word
    /// count is rounded up to a power of two (about 3% false positives).
    pub fn new(n: usize) -> BlockedBloom {
        let n_words = (n / 8).next_power_of_two().max(1);
        BlockedBloom {
            words: vec![0; n_words].into_boxed_slice(),
            shift: 64 - n_words.trailing_zeros(),
        }
    }

    #[inline(always)]
    fn index(&self, h: u64) -> usize {
        // `checked_shr`: a one-word filter has shift 64, which a plain `>>` rejects.
        h.checked_shr(self.shift).unwrap_or(0) as usize
    }

    pub fn insert(&mut self, h: u64) {
        let i = self.index(h);
        self.words[i] |= mask(h);
    }

    /// `false` only if `h` was never inserted.
    #[inline(always)]
    pub fn may_hold(&self, h: u64) -> bool {
        let m = mask(h);
        self.words[self.index(h)] & m == m
    }

    /// Heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A well-mixed 64-bit hash (splitmix64's finaliser), for the tests' keys.
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    #[test]
    fn holds_every_key_it_was_given_and_rejects_most_others() {
        let mut f = BlockedBloom::new(50_000);
        for k in 0..50_000 {
            f.insert(mix(k));
        }
        assert!((0..50_000).all(|k| f.may_hold(mix(k))));
        let false_pos = (50_000..100_000).filter(|&k| f.may_hold(mix(k))).count();
        assert!(
            false_pos < 50_000 / 20,
            "{false_pos} false positives of 50000"
        );
    }

    #[test]
    fn an_empty_or_one_word_filter_works() {
        let f = BlockedBloom::new(0);
        assert_eq!(f.memory_bytes(), 8);
        assert!(!f.may_hold(mix(1)));
        let mut f = BlockedBloom::new(1);
        f.insert(mix(1));
        assert!(f.may_hold(mix(1)));
    }
}
