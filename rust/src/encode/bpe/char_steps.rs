//! A table of trie steps one whole three-byte UTF-8 char long, for [`super::prefix_trie`].
//!
//! Invariant: `get(node, cp)` is the [`Step`] inserted for `(node, cp)`, and `None` for a
//! pair that was not inserted. What a step means is the trie's business (see
//! `PrefixTrie::build_char_tables`); this module only stores and finds them.
//!
//! Layout: open addressing with linear probing, at most half full, one 16-byte slot per
//! step (`[node, cp | best_len << 16, next, best]`), so a probe reads one slot and a miss
//! usually ends at the next, empty one.
//!
//! In front of the slots, a one-hash Bloom filter of the keys (8 bits a slot) answers most
//! misses from a table a sixteenth the size. Why: most probes miss (in 1 MB of the shared
//! multilingual text, 65% for cl100k, 56% for o200k, 86% for p50k), and a miss decides the
//! trie walk's next branch, so that branch waits on the probe's load. o200k has 17,105 steps in
//! 1 MiB of slots, mostly out of L2; its 64 KiB filter settles 96% of the misses. cl100k
//! (418 steps) and p50k (84) have tables small enough to stay cached either way.

use crate::vocab::Rank;

/// The walk one char further down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// The node after the char, with its flags; 0 if no token goes on below it.
    pub next: u32,
    /// The deepest token ending on the char's three bytes, or `NO_RANK`.
    pub best: Rank,
    /// How many of the three bytes `best` takes (0 with `NO_RANK`).
    pub best_len: u8,
}

/// No node is this: it marks a free slot.
const FREE: u32 = u32::MAX;

#[derive(Default)]
pub struct CharSteps {
    slots: Vec<[u32; 4]>,
    shift: u32,
    /// One bit per key, from the top bits of the key's hash (`index` takes the bits below
    /// them): clear means no such key.
    bloom: Vec<u64>,
    bloom_shift: u32,
}

impl CharSteps {
    /// `steps` are `(node, code point, step)` with distinct `(node, code point)` and nodes
    /// below `u32::MAX`.
    pub fn new(steps: Vec<(u32, u16, Step)>) -> CharSteps {
        let cap = (steps.len() * 2).next_power_of_two().max(16);
        let bloom_bits = cap * 8;
        let mut t = CharSteps {
            slots: vec![[FREE, 0, 0, 0]; cap],
            shift: 64 - cap.trailing_zeros(),
            bloom: vec![0; bloom_bits / 64],
            bloom_shift: 64 - bloom_bits.trailing_zeros(),
        };
        for (node, cp, step) in steps {
            let h = Self::hash(node, cp);
            let b = t.bloom_bit(h);
            t.bloom[b / 64] |= 1 << (b % 64);
            let mut i = t.index(h);
            while t.slots[i][0] != FREE {
                i = (i + 1) & (cap - 1);
            }
            t.slots[i] = [
                node,
                cp as u32 | (step.best_len as u32) << 16,
                step.next,
                step.best,
            ];
        }
        t
    }

    /// One product for both the filter and the slots: its top bits pick the filter bit, the
    /// bits below them the first slot (one multiply a probe, not two).
    #[inline(always)]
    fn hash(node: u32, cp: u16) -> u64 {
        ((node as u64) << 16 | cp as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    #[inline(always)]
    fn index(&self, h: u64) -> usize {
        h.wrapping_shl(64 - self.bloom_shift)
            .wrapping_shr(self.shift) as usize
    }

    /// The filter bit of a key's hash `h`.
    #[inline(always)]
    fn bloom_bit(&self, h: u64) -> usize {
        h.wrapping_shr(self.bloom_shift) as usize
    }

    /// The step stored for `(node, cp)`.
    #[inline(always)]
    pub fn get(&self, node: u32, cp: u16) -> Option<Step> {
        if self.slots.is_empty() {
            return None;
        }
        let h = Self::hash(node, cp);
        let b = self.bloom_bit(h);
        if self.bloom[b / 64] & (1 << (b % 64)) == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.index(h);
        loop {
            let [n, key, next, best] = self.slots[i];
            if n == node && key as u16 == cp {
                return Some(Step {
                    next,
                    best,
                    best_len: (key >> 16) as u8,
                });
            }
            if n == FREE {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * 16 + self.bloom.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_put_and_nothing_else() {
        let step = |i: u32| Step {
            next: i * 7,
            best: i,
            best_len: (i % 4) as u8,
        };
        // Nodes and code points that share low bits, so that probes collide.
        let steps: Vec<(u32, u16, Step)> = (0..500u32)
            .map(|i| (i % 37, (i * 64) as u16, step(i)))
            .collect();
        let t = CharSteps::new(steps.clone());
        for &(node, cp, s) in &steps {
            assert_eq!(t.get(node, cp), Some(s));
        }
        assert_eq!(t.get(37, 0), None);
        assert_eq!(t.get(0, 1), None);
        assert_eq!(CharSteps::default().get(0, 0), None);
        // Every key that was not put is a miss, whether the filter or the slots decide it,
        // and the filter decides most of them.
        let (mut absent, mut past_filter) = (0, 0);
        for node in 0..40u32 {
            for cp in (0..u16::MAX).step_by(61) {
                if steps.iter().any(|&(n, c, _)| (n, c) == (node, cp)) {
                    continue;
                }
                assert_eq!(t.get(node, cp), None, "({node}, {cp})");
                let b = t.bloom_bit(CharSteps::hash(node, cp));
                absent += 1;
                past_filter += (t.bloom[b / 64] >> (b % 64) & 1) as usize;
            }
        }
        assert!(
            past_filter * 5 < absent,
            "{past_filter} of {absent} got past the filter"
        );
    }
}
