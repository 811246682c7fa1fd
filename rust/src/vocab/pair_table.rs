//! Merge look-ups by rank: `(left, right) → rank of left's bytes ++ right's bytes`.
//!
//! Invariant: `get(a, b) == Some(r)` iff the concatenation of tokens `a` and `b` is the
//! ordinary token `r`. It is built by trying every split point of every token, so it answers
//! exactly what a look-up of the concatenated bytes would, and BPE (whose parts are always
//! tokens) never has to slice, hash or compare bytes while merging. Single-byte pairs, the
//! first look-ups of every piece, go through a direct 256×256 array instead.

use rayon::prelude::*;

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
        let entries: Vec<(u64, u32)> = crate::runtime::pool::parallel(|| {
            (0..n_ids as u32)
                .into_par_iter()
                .flat_map_iter(|r| {
                    let t = token_bytes(r).unwrap_or_default();
                    (1..t.len()).filter_map(move |k| {
                        let a = rank(&t[..k])?;
                        let b = rank(&t[k..])?;
                        Some((key(a, b), r))
                    })
                })
                .collect()
        });
        let cap = (entries.len() * 2).next_power_of_two().max(16);
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
