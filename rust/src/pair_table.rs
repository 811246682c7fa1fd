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

pub struct PairTable {
    keys: Vec<u64>,
    values: Vec<u32>,
    shift: u32,
    /// `bytes[(a << 8) | b]`: the rank of the two-byte token `[a, b]`, or `u32::MAX`.
    bytes: Vec<u32>,
}

#[inline(always)]
fn key(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

impl PairTable {
    /// `n_ids` is one past the largest id; `token_bytes(id)` gives an ordinary token's bytes
    /// (or `None`); `rank(bytes)` looks bytes up.
    pub fn new<'v>(
        n_ids: usize,
        token_bytes: &(dyn Fn(u32) -> Option<&'v [u8]> + Sync),
        rank: &(dyn Fn(&[u8]) -> Option<u32> + Sync),
        byte_ranks: &[u32; 256],
    ) -> Self {
        let entries: Vec<(u64, u32)> = (0..n_ids as u32)
            .into_par_iter()
            .flat_map_iter(|r| {
                let t = token_bytes(r).unwrap_or_default();
                (1..t.len()).filter_map(move |k| {
                    let a = rank(&t[..k])?;
                    let b = rank(&t[k..])?;
                    Some((key(a, b), r))
                })
            })
            .collect();
        let cap = (entries.len() * 2).next_power_of_two().max(16);
        let mut table = PairTable {
            keys: vec![EMPTY; cap],
            values: vec![0; cap],
            shift: 64 - cap.trailing_zeros(),
            bytes: vec![u32::MAX; 1 << 16],
        };
        for (k, r) in entries {
            let mut i = table.index(k);
            while table.keys[i] != EMPTY && table.keys[i] != k {
                i = (i + 1) & (cap - 1);
            }
            table.keys[i] = k;
            table.values[i] = r;
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
            keys: vec![EMPTY; 16],
            values: vec![0; 16],
            shift: 60,
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
        let mask = self.keys.len() - 1;
        let mut i = self.index(k);
        loop {
            let s = self.keys[i];
            if s == k {
                return Some(self.values[i]);
            }
            if s == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The rank of the two-byte token `[a, b]`, or `u32::MAX`.
    #[inline(always)]
    pub fn byte_pair(&self, a: u8, b: u8) -> u32 {
        self.bytes[((a as usize) << 8) | b as usize]
    }

    pub fn memory_bytes(&self) -> usize {
        self.keys.len() * 12 + self.bytes.len() * 4
    }
}
