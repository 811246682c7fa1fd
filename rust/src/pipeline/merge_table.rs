//! HF's merge map, laid out for the merging hot path.
//!
//! Invariant: for ids `a`, `b`, `get(a, b)` is `NONE` if HF's merge map lacks the pair, else a
//! key `k` such that (1) keys compare as the pairs' ranks do (HF's rank is the line of the
//! pair's last listing: its map keeps the last insert), and (2) `merged(k)` is the id the
//! merge makes. `bytes(x, y)` is `get(byte_id[x], byte_id[y])` for bytes that both have ids.
//!
//! Why: a word's merging probes one pair per adjacent symbols and two after each merge, and on
//! text met once most probes miss the CPU caches, so the table is made small and each probe
//! one cache line: a pair and its key packed in one `u64` slot (open addressing, linear
//! probing), the first merges (the pairs most text meets) in a small table apart from the
//! rest, a Bloom filter in front of both for pairs that are no merge, and the pairs of two
//! single bytes (every word's first round) in a dense 256x256 array. Where each merged id
//! rises with the rank (every shared model: one merge per token, listed in id order) the key
//! is the merged id itself, so a merge needs no second lookup; else it is the rank, and
//! `merged` reads the id from an array. Ids or ranks of more than 21 bits (no packing) fall
//! back to a hash map.

use rustc_hash::FxHashMap;

pub const NONE: u32 = u32::MAX;
const EMPTY: u64 = u64::MAX;
/// Ids and keys of at most this many bits pack three to a slot (below `EMPTY`).
const MAX_BITS: u32 = 21;

/// An open-addressing table of packed pairs (see [`MergeTable`]), linear probing.
#[derive(Default)]
struct Slots {
    /// Packed `(a << 2*bits) | (b << bits) | key`, or `EMPTY`.
    slots: Box<[u64]>,
    mask: usize,
    /// 64 - log2(slots.len()): a pair's home slot is the top bits of its mix.
    shift: u32,
}

impl Slots {
    /// `pairs` (packed pair, key), first-inserted first: those sit in their home slots.
    fn new(pairs: &[(u64, u32)], bits: u32, load_num: usize, load_den: usize) -> Slots {
        let size = (pairs.len() * load_den / load_num + 1)
            .next_power_of_two()
            .max(8);
        let mask = size - 1;
        let shift = 64 - size.trailing_zeros();
        let mut slots = vec![EMPTY; size];
        for &(pair, key) in pairs {
            let mut i = (mix(pair) >> shift) as usize;
            while slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            slots[i] = (pair << bits) | u64::from(key);
        }
        Slots {
            slots: slots.into_boxed_slice(),
            mask,
            shift,
        }
    }

    /// The key of packed `pair` (of mix `m`), or `NONE`.
    #[inline(always)]
    fn find(&self, pair: u64, m: u64, bits: u32) -> u32 {
        let mut i = (m >> self.shift) as usize;
        loop {
            let s = self.slots[i];
            if s >> bits == pair {
                return (s & ((1 << bits) - 1)) as u32;
            }
            if s == EMPTY {
                return NONE;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// The first merges (by rank) that go in the hot table: on text met once, ~70% of the pairs
/// found are among the first 16,384 merges of a 150,000-merge model.
const HOT: usize = 1 << 14;

pub struct MergeTable {
    /// The first [`HOT`] merges, half full (256 KiB): mostly in L2.
    hot: Slots,
    /// The other merges, at most ~60% full.
    cold: Slots,
    /// A blocked Bloom filter of all the pairs: two bits of one word a pair, >=12 bits a
    /// pair (256 KiB for 150,000 merges). About a third of the probes are for pairs that are
    /// no merge (every symbol's final neighbours): the filter answers most of them alone.
    filter: Box<[u64]>,
    /// 64 - log2(filter.len()).
    fshift: u32,
    bits: u32,
    /// The table when ids or ranks need more than `MAX_BITS` bits: `(a << 32 | b)` -> key.
    wide: Option<FxHashMap<u64, u32>>,
    /// Rank -> merged id; empty when keys are merged ids.
    merged_of_rank: Box<[u32]>,
    /// `(x << 8 | y)` -> the key of the pair of bytes x, y.
    byte_pairs: Box<[u32]>,
}

#[inline]
fn mix(k: u64) -> u64 {
    // Fibonacci hashing: the high bits of the product spread every bit of the key.
    k.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn bits_for(x: u64) -> u32 {
    64 - x.leading_zeros()
}

impl MergeTable {
    /// From HF's merge map (`(a << 32 | b)` -> (rank, merged id)) and each byte's id (or
    /// `NONE`).
    pub fn new(merges: &FxHashMap<u64, (u32, u32)>, byte_id: &[u32; 256]) -> MergeTable {
        let mut live: Vec<(u32, u32)> = merges.values().copied().collect();
        live.sort_unstable();
        // Keys may be the merged ids when ids rise strictly with ranks (then they order the
        // pairs as ranks do, and distinct pairs have distinct ids).
        let ids_are_keys = live.windows(2).all(|w| w[0].1 < w[1].1);
        let key_of = |rank: u32, id: u32| if ids_are_keys { id } else { rank };
        let merged_of_rank: Box<[u32]> = if ids_are_keys {
            Box::default()
        } else {
            let n = live.last().map_or(0, |&(r, _)| r as usize + 1);
            let mut m = vec![NONE; n];
            for &(r, id) in &live {
                m[r as usize] = id;
            }
            m.into_boxed_slice()
        };
        let max = merges
            .iter()
            .map(|(&k, &(r, id))| (k >> 32).max(k & 0xFFFF_FFFF).max(u64::from(key_of(r, id))))
            .max()
            .unwrap_or(0);
        let bits = bits_for(max).max(1);
        let mut t = MergeTable {
            hot: Slots::default(),
            cold: Slots::default(),
            filter: Box::default(),
            fshift: 63,
            bits,
            wide: None,
            merged_of_rank,
            byte_pairs: Box::default(),
        };
        if bits > MAX_BITS {
            t.wide = Some(
                merges
                    .iter()
                    .map(|(&k, &(r, id))| (k, key_of(r, id)))
                    .collect(),
            );
        } else {
            let mut by_rank: Vec<(u32, u64, u32)> = merges
                .iter()
                .map(|(&k, &(r, id))| (r, ((k >> 32) << bits) | (k & 0xFFFF_FFFF), key_of(r, id)))
                .collect();
            by_rank.sort_unstable();
            let pairs: Vec<(u64, u32)> = by_rank.iter().map(|&(_, p, k)| (p, k)).collect();
            let cut = pairs.len().min(HOT);
            t.hot = Slots::new(&pairs[..cut], bits, 1, 2);
            t.cold = Slots::new(&pairs[cut..], bits, 5, 8);
            // At least two words, so that the shift is below 64.
            let words = (pairs.len() * 12 / 64 + 1).next_power_of_two().max(2);
            t.fshift = 64 - words.trailing_zeros();
            let mut filter = vec![0u64; words];
            for &(pair, _) in &pairs {
                let (w, b) = t.filter_of(mix(pair));
                filter[w] |= b;
            }
            t.filter = filter.into_boxed_slice();
        }
        let mut byte_pairs = vec![NONE; 1 << 16];
        for x in 0..256 {
            for y in 0..256 {
                if byte_id[x] != NONE && byte_id[y] != NONE {
                    byte_pairs[x << 8 | y] = t.get(byte_id[x], byte_id[y]);
                }
            }
        }
        t.byte_pairs = byte_pairs.into_boxed_slice();
        t
    }

    /// The filter word of a pair (of mix `m`) and its two bits: the word from the top bits,
    /// the bits from the middle ones (a product's low bits mix only the key's low bits).
    #[inline(always)]
    fn filter_of(&self, m: u64) -> (usize, u64) {
        (
            (m >> self.fshift) as usize,
            (1 << ((m >> 20) & 63)) | (1 << ((m >> 26) & 63)),
        )
    }

    /// The key of the merge of (a, b), or `NONE` (see the module docs).
    #[inline(always)]
    pub fn get(&self, a: u32, b: u32) -> u32 {
        if let Some(wide) = &self.wide {
            return wide
                .get(&((u64::from(a) << 32) | u64::from(b)))
                .copied()
                .unwrap_or(NONE);
        }
        let bits = self.bits;
        if (a | b) >> bits != 0 {
            return NONE; // an id no merge names (say an added token's)
        }
        let pair = (u64::from(a) << bits) | u64::from(b);
        let m = mix(pair);
        let (w, fb) = self.filter_of(m);
        if self.filter[w] & fb != fb {
            return NONE;
        }
        let k = self.hot.find(pair, m, bits);
        if k != NONE {
            return k;
        }
        self.cold.find(pair, m, bits)
    }

    /// The key of the merge of the tokens of bytes `x` and `y` (both with ids), or `NONE`.
    #[inline]
    pub fn bytes(&self, x: u8, y: u8) -> u32 {
        self.byte_pairs[usize::from(x) << 8 | usize::from(y)]
    }

    /// The id merge `key` makes.
    #[inline]
    pub fn merged(&self, key: u32) -> u32 {
        if self.merged_of_rank.is_empty() {
            key
        } else {
            self.merged_of_rank[key as usize]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(rows: &[(u32, u32, u32, u32)]) -> FxHashMap<u64, (u32, u32)> {
        rows.iter()
            .map(|&(a, b, r, id)| ((u64::from(a) << 32) | u64::from(b), (r, id)))
            .collect()
    }

    fn byte_ids() -> [u32; 256] {
        let mut ids = [NONE; 256];
        for (i, id) in ids.iter_mut().enumerate() {
            *id = i as u32;
        }
        ids
    }

    /// Every listed pair is found with its merged id, keys order as ranks, unlisted pairs miss.
    fn check(rows: &[(u32, u32, u32, u32)]) {
        let m = map(rows);
        let t = MergeTable::new(&m, &byte_ids());
        for (&k, &(r, id)) in &m {
            let key = t.get((k >> 32) as u32, k as u32);
            assert_ne!(key, NONE);
            assert_eq!(t.merged(key), id);
            for (&k2, &(r2, _)) in &m {
                let key2 = t.get((k2 >> 32) as u32, k2 as u32);
                assert_eq!(r.cmp(&r2), key.cmp(&key2));
            }
        }
        for a in 0..300 {
            for b in [0, 1, 2, 7, 97, 98, 299, 5000] {
                let listed = m.get(&((u64::from(a) << 32) | u64::from(b)));
                assert_eq!(t.get(a, b) != NONE, listed.is_some());
                if a < 256 && b < 256 {
                    assert_eq!(t.bytes(a as u8, b as u8), t.get(a, b));
                }
            }
        }
        assert_eq!(t.get(u32::MAX - 1, 3), NONE);
    }

    #[test]
    fn ids_rising_with_ranks() {
        check(&[
            (97, 98, 0, 256),
            (256, 99, 1, 257),
            (1, 2, 2, 258),
            (97, 97, 3, 300),
        ]);
    }

    #[test]
    fn ids_not_rising_with_ranks() {
        // Two merges make token 258; ranks and ids disagree on order.
        check(&[
            (97, 98, 0, 300),
            (256, 99, 1, 257),
            (1, 2, 2, 258),
            (0, 258, 3, 258),
        ]);
    }

    #[test]
    fn wide_ids() {
        check(&[(97, 98, 0, 1 << 22), (1 << 22, 99, 1, 257), (2, 1, 2, 258)]);
    }

    #[test]
    fn many_pairs_probe_past_collisions() {
        // More than `HOT` pairs: some in each table.
        let rows: Vec<(u32, u32, u32, u32)> = (0..(HOT as u32 + 4000))
            .map(|i| (i % 300, i / 300 * 7, i, 1000 + i))
            .collect();
        let m = map(&rows);
        let t = MergeTable::new(&m, &byte_ids());
        for &(a, b, _, id) in &rows {
            assert_eq!(t.merged(t.get(a, b)), id);
        }
        for a in 0..300 {
            for b in [1, 2, 3, 8] {
                assert_eq!(t.get(a, b), NONE);
            }
        }
    }
}
