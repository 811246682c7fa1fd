//! Tokens of 9 to 16 bytes, with their bytes in the slot.
//!
//! Invariant: `get(b)` is `Some(rank)` iff `9 <= b.len() <= 16` and `b` is an ordinary token.
//!
//! Why it exists: after the short tokens (see [`crate::short_table`]), the next most common
//! whole-token pieces are 9-16 bytes long (" information", " development", "constructor").
//! The general [`crate::token_table`] confirms a hit by reading the token's offsets and then
//! its bytes, three dependent cache misses and a `memcmp`; here a piece is its first and last
//! 8 bytes (overlapping when shorter than 16) and its length, all held in one 32-byte slot.

const EMPTY: u64 = u64::MAX;
const K: u64 = 0x9E37_79B9_7F4A_7C15;
pub const MIN_LEN: usize = 9;
pub const MAX_LEN: usize = 16;

pub struct MidTable {
    /// `[first 8 bytes, last 8 bytes, rank | len << 32, unused]`; the third word is `EMPTY`
    /// in a free slot. 32 bytes, so a slot never straddles a cache line.
    slots: Vec<[u64; 4]>,
    shift: u32,
}

/// `b`'s first and last 8 bytes as little-endian integers (`9 <= b.len() <= 16`).
#[inline(always)]
fn key(b: &[u8]) -> Option<(u64, u64)> {
    Some((
        u64::from_le_bytes(*b.first_chunk::<8>()?),
        u64::from_le_bytes(*b.last_chunk::<8>()?),
    ))
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
        };
        for (lo, hi, value) in mid {
            let mut i = t.index(lo, hi, value >> 32);
            while t.slots[i][2] != EMPTY {
                i = (i + 1) & (cap - 1);
            }
            t.slots[i] = [lo, hi, value, 0];
        }
        t
    }

    #[inline(always)]
    fn index(&self, lo: u64, hi: u64, len: u64) -> usize {
        ((lo ^ hi.rotate_left(29) ^ (len << 59)).wrapping_mul(K) >> self.shift) as usize
    }

    /// The rank of `b`, if it is a token of 9 to 16 bytes.
    #[inline(always)]
    pub fn get(&self, b: &[u8]) -> Option<u32> {
        if !(MIN_LEN..=MAX_LEN).contains(&b.len()) {
            return None;
        }
        let (lo, hi) = key(b)?;
        let len = b.len() as u64;
        let mask = self.slots.len() - 1;
        let mut i = self.index(lo, hi, len);
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
        self.slots.len() * 32
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
}
