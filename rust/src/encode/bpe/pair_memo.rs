//! A small lossy memo of a yes/no answer about a pair of token ids, shared by threads.
//!
//! Invariant: `get(a, b)` is `Some(v)` only if some thread called `put(a, b, v)` before, and
//! the memo never answers for a pair it was not given: an entry names its pair exactly.
//! It may forget any pair at any time (a later `put` can evict it).
//!
//! Layout (why it holds twice the pairs of a table of `u64` keys in the same 512 KiB): a pair
//! `a | b << 21` (42 bits) goes through a bijection of the 42-bit numbers; the top 16 bits of
//! the result pick a set, and the other 26 are stored as the entry's tag. As the bijection
//! can be undone, set and tag together name the pair, so a 32-bit entry (tag, answer, valid)
//! is an exact key. A set is two entries in one `u64`: a new pair goes in front and the one
//! it displaces moves behind, so two pairs that share a set both stay (with one entry per
//! set, a megabyte of CJK text lost ~40% of its pairs to such collisions on every pass).
//! A set is read and written as one relaxed atomic `u64`: a racing write can lose an entry,
//! never mix two.

use std::sync::atomic::{AtomicU64, Ordering};

/// Ids are below 2^21, the pair table's limit.
const ID_BITS: u32 = crate::vocab::pair_table::MAX_IDS.trailing_zeros();
const KEY_BITS: u32 = 2 * ID_BITS;
const KEY_MASK: u64 = (1 << KEY_BITS) - 1;
const SET_BITS: u32 = 16;
const TAG_BITS: u32 = KEY_BITS - SET_BITS;
const TAG_MASK: u32 = (1 << TAG_BITS) - 1;
const YES: u32 = 1 << TAG_BITS;
const VALID: u32 = 1 << (TAG_BITS + 1);

pub struct PairMemo {
    sets: Box<[AtomicU64]>,
}

/// A bijection of `0..2^42` that spreads nearby pairs over the sets: multiplying by an odd
/// number can be undone modulo 2^42, and the product's top bits (the set) depend on every
/// bit of the key.
#[inline(always)]
fn mix(key: u64) -> u64 {
    key.wrapping_mul(0x9E37_79B9_7F4A_7C15) & KEY_MASK
}

impl Default for PairMemo {
    /// An empty memo.
    fn default() -> PairMemo {
        PairMemo {
            sets: (0..1usize << SET_BITS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl PairMemo {
    #[inline(always)]
    fn locate(&self, a: u32, b: u32) -> (&AtomicU64, u32) {
        debug_assert!(a < 1 << ID_BITS && b < 1 << ID_BITS);
        let h = mix(a as u64 | (b as u64) << ID_BITS);
        let set = &self.sets[(h >> TAG_BITS) as usize];
        (set, (h as u32 & TAG_MASK) | VALID)
    }

    /// The answer stored for `(a, b)`, if the memo still holds it.
    #[inline(always)]
    pub fn get(&self, a: u32, b: u32) -> Option<bool> {
        let (set, tag) = self.locate(a, b);
        let s = set.load(Ordering::Relaxed);
        for e in [s as u32, (s >> 32) as u32] {
            if e & !YES == tag {
                return Some(e & YES != 0);
            }
        }
        None
    }

    /// Remember `answer` for `(a, b)`, in front of the set's newer entry.
    #[inline]
    pub fn put(&self, a: u32, b: u32, answer: bool) {
        let (set, tag) = self.locate(a, b);
        let front = set.load(Ordering::Relaxed) as u32;
        let e = tag | if answer { YES } else { 0 };
        set.store(e as u64 | (front as u64) << 32, Ordering::Relaxed);
    }

    /// Heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.sets.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mix` must be one-to-one, or two pairs could share a set and a tag.
    #[test]
    fn mix_is_one_to_one_on_a_sample_and_can_be_undone() {
        // Undo it: the inverse of an odd multiplier modulo 2^42 by Newton's iteration.
        let inverse = |m: u64| {
            let mut x = m;
            for _ in 0..6 {
                x = x.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(x)));
            }
            x
        };
        let unmix = |h: u64| h.wrapping_mul(inverse(0x9E37_79B9_7F4A_7C15)) & KEY_MASK;
        let mut x: u64 = 1;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = x >> 22;
            assert_eq!(unmix(mix(key)), key);
        }
        for key in [0, 1, KEY_MASK, 1 << ID_BITS, (1 << ID_BITS) - 1] {
            assert_eq!(unmix(mix(key)), key);
        }
    }

    #[test]
    fn answers_only_what_it_was_told_and_keeps_two_pairs_a_set() {
        let memo = PairMemo::default();
        assert_eq!(memo.get(3, 4), None);
        memo.put(3, 4, true);
        memo.put(4, 3, false);
        assert_eq!(memo.get(3, 4), Some(true));
        assert_eq!(memo.get(4, 3), Some(false));
        assert_eq!(memo.get(3, 5), None);
        // Find two more pairs in the set of (3, 4): the set keeps the newest two.
        let set_of = |a: u32, b: u32| mix(a as u64 | (b as u64) << ID_BITS) >> TAG_BITS;
        let home = set_of(3, 4);
        let others: Vec<u32> = (5..).filter(|&b| set_of(3, b) == home).take(2).collect();
        memo.put(3, others[0], false);
        assert_eq!(memo.get(3, 4), Some(true), "the older pair moved behind");
        assert_eq!(memo.get(3, others[0]), Some(false));
        memo.put(3, others[1], true);
        assert_eq!(memo.get(3, 4), None, "the oldest of three is gone");
        assert_eq!(memo.get(3, others[0]), Some(false));
        assert_eq!(memo.get(3, others[1]), Some(true));
        // The largest ids fit.
        let top = (1 << ID_BITS) - 1;
        memo.put(top, top, true);
        assert_eq!(memo.get(top, top), Some(true));
        assert_eq!(memo.get(top, top - 1), None);
    }
}
