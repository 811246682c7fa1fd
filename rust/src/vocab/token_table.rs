//! A compact hash table from token bytes to rank, for the BPE hot path.
//!
//! Invariant: `get(bytes)` is `Some(rank)` iff `bytes` is an ordinary token of the vocabulary.
//! Slots hold `(rank, 32-bit fingerprint)`; the token's bytes are not stored here but read
//! from the vocabulary's flat byte buffer, so the table costs 8 bytes a slot (4 MB for o200k)
//! instead of a heap allocation per token. Why it is fast: almost every lookup is for 1-8
//! bytes, which hash from two overlapping loads without a loop; a miss (most pair lookups in
//! BPE are misses) is decided by the fingerprint without touching the token's bytes.

use super::short_table;

const EMPTY: u64 = u64::MAX;
const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Hash of a byte string; cheap for the short strings BPE looks up. For 1 to 8 bytes it is
/// [`hash_key`] of their [`short_table::load`], so a caller holding that key hashes with no
/// branch on the length.
#[inline(always)]
pub fn hash_bytes(b: &[u8]) -> u64 {
    let n = b.len();
    if n <= 8 {
        return if n == 0 {
            finish(0)
        } else {
            hash_key(short_table::load(b), n)
        };
    }
    let mut h = n as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ v).wrapping_mul(K).rotate_left(29);
    }
    let t = &b[n - 8..];
    let v = u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]]);
    finish(h ^ v)
}

/// [`hash_bytes`] of the 1 to 8 bytes whose [`short_table::load`] is `key`, `n` of them.
///
/// For a given `n` this is a bijection of `key` (an xor with a constant, then [`finish`],
/// whose steps are each invertible), so two such byte strings of one length have the same
/// hash only if they are the same bytes: a cache keyed by the hash and the length needs no
/// byte compare for them.
#[inline(always)]
pub fn hash_key(key: u64, n: usize) -> u64 {
    finish(key ^ (n as u64) << 59)
}

/// Multiply-xorshift finaliser: spreads every input bit into the high bits used for slots.
/// Each step (`x ^ x >> s`, a product with an odd constant) is invertible on `u64`.
#[inline(always)]
fn finish(x: u64) -> u64 {
    let y = (x ^ (x >> 31)).wrapping_mul(K);
    y ^ (y >> 29)
}

pub struct TokenTable {
    slots: Vec<u64>,
    shift: u32,
}

impl TokenTable {
    /// `tokens` yields `(bytes, rank)`; ranks must be distinct.
    pub fn new<'a>(tokens: impl ExactSizeIterator<Item = (&'a [u8], u32)>) -> Self {
        let cap = (tokens.len() * 2).next_power_of_two().max(16);
        let bits = cap.trailing_zeros();
        let mut t = TokenTable {
            slots: vec![EMPTY; cap],
            shift: 64 - bits,
        };
        for (bytes, rank) in tokens {
            let h = hash_bytes(bytes);
            let mut i = t.index(h);
            while t.slots[i] != EMPTY {
                i = (i + 1) & (cap - 1);
            }
            t.slots[i] = pack(rank, h);
        }
        t
    }

    #[inline(always)]
    fn index(&self, h: u64) -> usize {
        (h.wrapping_mul(K) >> self.shift) as usize
    }

    /// The rank of `bytes`, reading a candidate's bytes through `token_bytes(rank)`.
    #[inline(always)]
    pub fn get<'v>(&self, bytes: &[u8], token_bytes: impl Fn(u32) -> &'v [u8]) -> Option<u32> {
        self.get_hashed(bytes, hash_bytes(bytes), token_bytes)
    }

    /// `get` with `h == hash_bytes(bytes)` already computed.
    #[inline(always)]
    pub fn get_hashed<'v>(
        &self,
        bytes: &[u8],
        h: u64,
        token_bytes: impl Fn(u32) -> &'v [u8],
    ) -> Option<u32> {
        let fp = (h >> 32) as u32;
        let mask = self.slots.len() - 1;
        let mut i = self.index(h);
        loop {
            let s = self.slots[i];
            if s == EMPTY {
                return None;
            }
            if (s >> 32) as u32 == fp {
                let rank = s as u32;
                if bytes_eq(token_bytes(rank), bytes) {
                    return Some(rank);
                }
            }
            i = (i + 1) & mask;
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * 8
    }
}

/// Slice equality without a `memcmp` call for the short strings that dominate.
#[inline(always)]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (4..=8).contains(&n) {
        let ld = |s: &[u8]| {
            let lo = u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u64;
            let hi = u32::from_le_bytes([s[n - 4], s[n - 3], s[n - 2], s[n - 1]]) as u64;
            lo | (hi << 32)
        };
        return ld(a) == ld(b);
    }
    if n < 4 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    a == b
}

#[inline(always)]
fn pack(rank: u32, h: u64) -> u64 {
    ((h >> 32) << 32) | rank as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the piece cache relies on (`hash_key`): strings of 1 to 8 bytes and one length
    /// never share a hash. Every string of 1 and 2 bytes, and 200,000 draws of 3 to 8 bytes
    /// from four byte values (every string of 3 to 7 bytes of them, and most of 8).
    #[test]
    fn short_strings_of_one_length_never_share_a_hash() {
        let mut seen = std::collections::HashMap::new();
        let mut check = |b: &[u8]| {
            assert_eq!(hash_bytes(b), hash_key(short_table::load(b), b.len()));
            if let Some(other) = seen.insert((hash_bytes(b), b.len()), b.to_vec()) {
                assert_eq!(other, b, "two strings, one hash");
            }
        };
        for x in 0..=0xFFFFu32 {
            check(&[x as u8]);
            check(&x.to_le_bytes()[..2]);
        }
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly small bytes, so that strings share their leading and trailing zeros.
            check(&(x & 0x0303_0303_0303_0303).to_le_bytes()[..3 + i % 6]);
        }
    }

    #[test]
    fn finds_exactly_the_tokens() {
        let toks: Vec<Vec<u8>> = (0..5000u32)
            .map(|i| {
                let n = 1 + (i as usize * 7) % 19;
                (0..n)
                    .map(|j| (i.wrapping_mul(31).wrapping_add(j as u32 * 17) % 251) as u8)
                    .collect()
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let table = TokenTable::new(
            toks.iter()
                .enumerate()
                .map(|(i, t)| (t.as_slice(), i as u32)),
        );
        for (i, t) in toks.iter().enumerate() {
            assert_eq!(table.get(t, |r| &toks[r as usize]), Some(i as u32));
            let mut other = t.clone();
            other.push(255);
            if !toks.contains(&other) {
                assert_eq!(table.get(&other, |r| &toks[r as usize]), None);
            }
        }
        assert_eq!(table.get(b"", |r| &toks[r as usize]), None);
    }
}
