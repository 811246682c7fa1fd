//! Tokens of at most 8 bytes, keyed by their bytes read as one integer.
//!
//! Invariant: `get(b)` is `Some(rank)` iff `1 <= b.len() <= 8` and `b` is an ordinary token.
//!
//! Why it exists: most pieces of real text are short whole tokens (" the", " of", "ing"), so
//! the first look-up of nearly every piece lands here. The general [`crate::vocab::token_table`]
//! keeps only a rank and a fingerprint per slot and must then read the token's offset and its
//! bytes to confirm a hit: three dependent cache misses. Here the slot holds the bytes
//! themselves, so a hit or a miss is decided by one 16-byte slot, one cache line.

const EMPTY: u64 = u64::MAX;
const K: u64 = 0x9E37_79B9_7F4A_7C15;
pub const MAX_LEN: usize = 8;

pub struct ShortTable {
    /// `[key, rank | len << 32]`, with [`DISPLACED`] set in a slot that is some other token's
    /// home; the second word is `EMPTY` in a free slot.
    slots: Vec<[u64; 2]>,
    shift: u32,
}

/// Set in a slot's value when a token whose home is this slot sits further on. A piece that
/// misses its home slot and finds this clear is no token: no probing.
///
/// Why: a quarter of the pieces of English miss their home slot, most of them no token (pieces
/// of several tokens), and the probe on to the next free slot cost them a mispredicted
/// branch or two. The bit is above the length byte, which the compares read as one byte.
const DISPLACED: u64 = 1 << 63;

/// `b`'s bytes as a little-endian integer (`1 <= b.len() <= 8`), from two overlapping loads
/// instead of a byte loop. Bytes past the end are zero; the length is compared separately.
#[inline(always)]
pub fn load(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!((1..=MAX_LEN).contains(&n));
    if n >= 4 {
        let lo = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64;
        let hi = u32::from_le_bytes([b[n - 4], b[n - 3], b[n - 2], b[n - 1]]) as u64;
        lo | (hi << (8 * (n - 4)))
    } else if n >= 2 {
        let lo = u16::from_le_bytes([b[0], b[1]]) as u64;
        let hi = u16::from_le_bytes([b[n - 2], b[n - 1]]) as u64;
        lo | (hi << (8 * (n - 2)))
    } else {
        b[0] as u64
    }
}

/// The key of `b` (see [`load`]) where `text` holds `b` with at least 8 bytes from its start:
/// one 8-byte load from `text` with the bytes past `b` masked off, no branch on `b`'s length
/// (a word-by-word gathering mispredicts it). `None` if `b` is not 1 to 8 bytes or fewer than
/// 8 bytes of `text` start at it. The load comes before the length test: with the length
/// tested first, the compiled encoder mispredicted a third more branches.
#[inline(always)]
pub fn key_in(text: &[u8], b: &[u8]) -> Option<u64> {
    let off = (b.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    let word = text.get(off..)?.first_chunk::<8>()?;
    let len = b.len();
    if !(1..=MAX_LEN).contains(&len) {
        return None;
    }
    debug_assert_eq!(&word[..len], b, "`text` holds `b`");
    Some(u64::from_le_bytes(*word) & (u64::MAX >> (64 - 8 * len)))
}

/// Does the slot value `v` hold a token of `len` bytes? (Its length byte; an `EMPTY` slot's is
/// 0xFF.)
#[inline(always)]
fn is_len(v: u64, len: u64) -> bool {
    (v >> 32) as u8 == len as u8
}

impl ShortTable {
    /// `tokens` yields `(bytes, rank)` with distinct bytes; those longer than 8 are skipped.
    pub fn new<'a>(tokens: impl Iterator<Item = (&'a [u8], u32)>) -> Self {
        let short: Vec<(u64, u64)> = tokens
            .filter(|(b, _)| (1..=MAX_LEN).contains(&b.len()))
            .map(|(b, r)| (load(b), r as u64 | (b.len() as u64) << 32))
            .collect();
        let cap = (short.len() * 2).next_power_of_two().max(16);
        let mut t = ShortTable {
            slots: vec![[0, EMPTY]; cap],
            shift: 64 - cap.trailing_zeros(),
        };
        for (key, value) in short {
            let home = t.index(key, value >> 32);
            let mut i = home;
            while t.slots[i][1] != EMPTY {
                i = (i + 1) & (cap - 1);
            }
            t.slots[i] = [key, value];
            if i != home {
                t.slots[home][1] |= DISPLACED;
            }
        }
        t
    }

    #[inline(always)]
    fn index(&self, key: u64, len: u64) -> usize {
        ((key ^ (len << 59)).wrapping_mul(K) >> self.shift) as usize
    }

    /// The rank of `b` (which must be 1 to 8 bytes long), if it is a token.
    #[inline(always)]
    pub fn get(&self, b: &[u8]) -> Option<u32> {
        self.get_key(load(b), b.len() as u64)
    }

    /// [`ShortTable::get`] of the bytes whose [`load`] is `key`, of length `len` (1 to 8).
    #[inline(always)]
    pub fn get_key(&self, key: u64, len: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.index(key, len);
        let home = self.slots[i][1];
        if home & DISPLACED == 0 || home == EMPTY {
            return (self.slots[i][0] == key && is_len(home, len)).then_some(home as u32);
        }
        loop {
            let [k, v] = self.slots[i];
            if v == EMPTY {
                return None;
            }
            if k == key && is_len(v, len) {
                return Some(v as u32);
            }
            i = (i + 1) & mask;
        }
    }

    /// The rank of the token with this `key` (see [`load`]) and `len` if it sits in its home
    /// slot, else `u32::MAX`: one slot read, no probing. Tokens inserted first get their
    /// home slots, so the vocabulary inserts them in rank order.
    #[inline(always)]
    pub fn home(&self, key: u64, len: u64) -> u32 {
        let i = self.index(key, len);
        let [k, v] = self.slots[i];
        if k == key && is_len(v, len) {
            v as u32
        } else {
            u32::MAX
        }
    }

    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * 16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_in_is_the_load_of_the_bytes_where_eight_remain() {
        let text = b"\0ab\xffcdefghij\0";
        for s in 0..text.len() {
            for e in s..=text.len() {
                let b = &text[s..e];
                let want =
                    ((1..=MAX_LEN).contains(&b.len()) && s + 8 <= text.len()).then(|| load(b));
                assert_eq!(key_in(text, b), want, "{s}..{e}");
            }
        }
        // Bytes elsewhere in memory: never a key read from `text`.
        assert_eq!(key_in(text, &b"abcdefghijkl"[..3]), None);
    }

    #[test]
    fn finds_exactly_the_short_tokens_including_zero_bytes() {
        let toks: Vec<&[u8]> = vec![
            b"a",
            b"a\0",
            b"\0a",
            b"\0",
            b"\0\0",
            b"abc",
            b"abcd",
            b"abcde",
            b"abcdefgh",
            b"abcdefghi",
            b"\xff\xfe",
        ];
        let t = ShortTable::new(toks.iter().enumerate().map(|(i, b)| (*b, i as u32)));
        // `get` takes 1 to 8 bytes (its debug assertion says so), so the 9-byte token is
        // checked by what was stored: every other token, and nothing else.
        for (i, b) in toks.iter().enumerate().filter(|(_, b)| b.len() <= MAX_LEN) {
            assert_eq!(t.get(b), Some(i as u32), "{b:?}");
        }
        let stored = t.slots.iter().filter(|[_, v]| *v != EMPTY).count();
        assert_eq!(stored, toks.len() - 1);
        for miss in [&b"b"[..], b"\0\0\0", b"ab", b"abcdefgg", b"a\0\0", b"\xff"] {
            assert_eq!(t.get(miss), None, "{miss:?}");
        }
    }

    #[test]
    fn home_gives_a_token_in_its_home_slot_and_nothing_else() {
        // 64 tokens in a 128-slot table: some must share a home slot with an earlier one.
        let toks: Vec<Vec<u8>> = (0..64u32).map(|i| format!("t{i}").into_bytes()).collect();
        let t = ShortTable::new(toks.iter().enumerate().map(|(i, b)| (&b[..], i as u32)));
        let mut homed = 0;
        for (i, b) in toks.iter().enumerate() {
            match t.home(load(b), b.len() as u64) {
                u32::MAX => {}
                r => {
                    assert_eq!(r, i as u32, "{b:?}");
                    homed += 1;
                }
            }
        }
        assert!(homed > 32 && homed < 64, "{homed} of 64 at home");
        // Those away from home are found by probing past their home slot, whose `DISPLACED`
        // bit says to; and a miss is a miss whether its home slot has the bit or not.
        for (i, b) in toks.iter().enumerate() {
            assert_eq!(t.get(b), Some(i as u32), "{b:?}");
        }
        let displaced = t
            .slots
            .iter()
            .filter(|[_, v]| *v != EMPTY && v & DISPLACED != 0);
        assert!(displaced.count() > 0);
        let mut flagged_misses = 0;
        for n in 64..2000u32 {
            let miss = format!("t{n}").into_bytes();
            assert_eq!(t.get(&miss), None, "{miss:?}");
            let home = t.slots[t.index(load(&miss), miss.len() as u64)][1];
            flagged_misses += (home != EMPTY && home & DISPLACED != 0) as usize;
        }
        assert!(flagged_misses > 0);
        assert_eq!(
            t.home(load(b"t0"), 2),
            0,
            "the first token inserted is at home"
        );
        for miss in [&b"t64"[..], b"t", b"t1\0"] {
            assert_eq!(t.home(load(miss), miss.len() as u64), u32::MAX, "{miss:?}");
        }
        assert_eq!(t.home(load(b"t1"), 3), u32::MAX, "same key, other length");
    }

    #[test]
    fn load_is_the_little_endian_value() {
        for n in 1..=8 {
            let b: Vec<u8> = (1..=n as u8).collect();
            let want = b
                .iter()
                .enumerate()
                .fold(0u64, |acc, (i, &x)| acc | (x as u64) << (8 * i));
            assert_eq!(load(&b), want, "length {n}");
        }
    }
}
