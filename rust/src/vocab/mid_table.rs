//! Tokens of 9 to 16 bytes, with their bytes in the slot.
//!
//! Invariant: `get(b)` is `Some(rank)` iff `9 <= b.len() <= 16` and `b` is an ordinary token.
//!
//! Why it exists: after the short tokens (see [`crate::vocab::short_table`]), the next most common
//! whole-token pieces are 9-16 bytes long (" information", " development", "constructor").
//! The general [`crate::vocab::token_table`] confirms a hit by reading the token's offsets and then
//! its bytes, three dependent cache misses and a `memcmp`; here a piece is its first and last
//! 8 bytes (overlapping when shorter than 16) and its length, all held in one 32-byte slot.
//!
//! A [`BlockedBloom`] filter of the tokens (11-13 bits a token) answers most misses before
//! the table is touched. Why: the table is 1-4 MB of random probes, a miss in L2 each, and on
//! text in scripts whose words BPE splits into several tokens most probes miss. In 1 MB of the
//! shared corpus's Korean, 40,837 pieces of 9-16 bytes are not tokens against 5,902 that are
//! (o200k); in 1 MB of its Arabic and Hindi, 24,131 against 16,599. The filter is 1/64 of the
//! table (16-64 KiB) and stays in L1/L2: o200k encodes that Korean ~1.33x as fast.

use crate::vocab::blocked_bloom::BlockedBloom;

const EMPTY: u64 = u64::MAX;
const K: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xD6E8_FEB8_6659_FD93;
pub const MIN_LEN: usize = 9;
pub const MAX_LEN: usize = 16;

pub struct MidTable {
    /// `[first 8 bytes, last 8 bytes, rank | len << 32, unused]`; the third word is `EMPTY`
    /// in a free slot. 32 bytes, so a slot never straddles a cache line.
    slots: Vec<[u64; 4]>,
    shift: u32,
    /// Holds `filter_hash` of every token's `hash`.
    filter: BlockedBloom,
}

/// `b`'s first and last 8 bytes as little-endian integers (`9 <= b.len() <= 16`).
#[inline(always)]
fn key(b: &[u8]) -> Option<(u64, u64)> {
    Some((
        u64::from_le_bytes(*b.first_chunk::<8>()?),
        u64::from_le_bytes(*b.last_chunk::<8>()?),
    ))
}

/// The table's hash of a piece (its slot is the top bits).
#[inline(always)]
fn hash(lo: u64, hi: u64, len: u64) -> u64 {
    (lo ^ hi.rotate_left(29) ^ (len << 59)).wrapping_mul(K)
}

/// The filter's hash, from the table's: remixed, so that the filter's word (its top bits) does
/// not follow the table's slot, and its low bits (which pick the word's bits) depend on every
/// bit of the key.
#[inline(always)]
fn filter_hash(h: u64) -> u64 {
    let g = (h ^ (h >> 29)).wrapping_mul(K2);
    g ^ (g >> 31)
}

impl MidTable {
    /// `tokens` yields `(bytes, rank)` with distinct bytes; those not 9-16 bytes long are
    /// skipped.
    pub fn new<'a>(tokens: impl Iterator<Item = (&'a [u8], u32)>) -> Self {
        let mid: Vec<(u64, u64, u64)> = tokens
            .filter(|(b, _)| (MIN_LEN..=MAX_LEN).contains(&b.len()))
            .filter_map(|(b, r)| key(b).map(|(lo, hi)| (lo, hi, r as u64 | (b.len() as u64) << 32)))
            .collect();
        let cap = (mid.len() * 2).next_power_of_two().max(16);
        let mut t = MidTable {
            slots: vec![[0, 0, EMPTY, 0]; cap],
            shift: 64 - cap.trailing_zeros(),
            filter: BlockedBloom::new(mid.len()),
        };
        for (lo, hi, value) in mid {
            let h = hash(lo, hi, value >> 32);
            t.filter.insert(filter_hash(h));
            let mut i = t.index(h);
            while t.slots[i][2] != EMPTY {
                i = (i + 1) & (cap - 1);
            }
            t.slots[i] = [lo, hi, value, 0];
        }
        t
    }

    #[inline(always)]
    fn index(&self, h: u64) -> usize {
        (h >> self.shift) as usize
    }

    /// The rank of `b`, if it is a token of 9 to 16 bytes.
    #[inline(always)]
    pub fn get(&self, b: &[u8]) -> Option<u32> {
        if !(MIN_LEN..=MAX_LEN).contains(&b.len()) {
            return None;
        }
        let (lo, hi) = key(b)?;
        let len = b.len() as u64;
        let h = hash(lo, hi, len);
        if !self.filter.may_hold(filter_hash(h)) {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.index(h);
        loop {
            let [k0, k1, v, _] = self.slots[i];
            if v == EMPTY {
                return None;
            }
            if k0 == lo && k1 == hi && v >> 32 == len {
                return Some(v as u32);
            }
            i = (i + 1) & mask;
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * 32 + self.filter.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exactly_the_tokens_of_9_to_16_bytes() {
        let toks: Vec<&[u8]> = vec![
            b"abcdefgh",
            b"abcdefghi",
            b"abcdefghij",
            b"\0bcdefghi",
            b"abcdefgh\0",
            b"0123456789abcdef",
            b"0123456789abcdefg",
            b"xxxxxxxxxxxx",
        ];
        let t = MidTable::new(toks.iter().enumerate().map(|(i, b)| (*b, i as u32)));
        for (i, b) in toks.iter().enumerate() {
            let want = (MIN_LEN..=MAX_LEN).contains(&b.len()).then_some(i as u32);
            assert_eq!(t.get(b), want, "{b:?}");
        }
        // Same first and last 8 bytes as a token but another length, or one byte changed in
        // the middle of a 16-byte token (covered by both halves), or in an 11-byte one.
        for miss in [
            &b"abcdefghiabcdefghi"[..],
            b"xxxxxxxxxxxxx",
            b"xxxxxxxxxxx",
            b"0123456789Xbcdef",
            b"abcdeXghij",
            b"abcdefgh",
            b"",
        ] {
            assert_eq!(t.get(miss), None, "{miss:?}");
        }
    }

    /// The filter settles most misses, and never hides a token.
    #[test]
    fn the_filter_rejects_most_pieces_that_are_not_tokens() {
        let mut x: u64 = 11;
        let mut piece = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = MIN_LEN + (x >> 60) as usize % (MAX_LEN - MIN_LEN + 1);
            (0..len)
                .map(|i| b'a' + ((x >> (4 * i % 56)) % 26) as u8)
                .collect::<Vec<u8>>()
        };
        let mut toks: Vec<Vec<u8>> = (0..5_000).map(|_| piece()).collect();
        toks.sort();
        toks.dedup();
        let t = MidTable::new(toks.iter().enumerate().map(|(i, b)| (&b[..], i as u32)));
        for (i, b) in toks.iter().enumerate() {
            assert_eq!(t.get(b), Some(i as u32), "{b:?}");
        }
        let (mut absent, mut past_filter) = (0, 0);
        for _ in 0..20_000 {
            let b = piece();
            if toks.binary_search(&b).is_ok() {
                continue;
            }
            absent += 1;
            assert_eq!(t.get(&b), None);
            let (lo, hi) = key(&b).expect("9-16 bytes");
            past_filter += t.filter.may_hold(filter_hash(hash(lo, hi, b.len() as u64))) as usize;
        }
        assert!(absent > 15_000, "{absent}");
        assert!(
            past_filter * 10 < absent,
            "{past_filter} of {absent} passed the filter"
        );
    }
}
