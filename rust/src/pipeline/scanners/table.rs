//! A code point → class bits table for the fused scanners, and a UTF-8 cursor.
//!
//! Invariant: `Classes::build(sets, preds)` gives, for every char c, `of(c)` with bit `b` set
//! iff c lies in a range of a set given with bit `b`, or a predicate given with bit `b` holds
//! for c; `at(text, i)` is the bits and UTF-8 length of the char starting at byte `i`.
//!
//! Why this is what the regex path means: the ranges come from the Split pattern's own
//! syntax tree (regex-syntax, the parser regex-automata and fancy-regex use, so one Unicode
//! version), and the predicates are the very functions the generic pre-tokenizer steps call
//! (`char::is_numeric`, HF's `is_punc`), evaluated once for every char.

use crate::encode::pretok::classes::two_byte_cp;
use rustc_hash::FxHashMap;

const BLOCK_BITS: u32 = 8;
const BLOCK: usize = 1 << BLOCK_BITS;
const N_CHARS: usize = char::MAX as usize + 1;
/// Index entries for every 21-bit value (what a UTF-8 lead byte and its continuations can
/// spell), so that an index read needs no bounds check; those past `char::MAX` are never read.
const INDEX_LEN: usize = 1 << (21 - BLOCK_BITS);

/// Chars given by ranges (inclusive), with the bit they set.
pub type RangeSet<'a> = (&'a [(char, char)], u8);
/// Chars given by a predicate, with the bit they set.
pub type PredSet = (fn(char) -> bool, u8);

pub struct Classes {
    ascii: [u8; 128],
    /// The bits of every code point below U+0800 (ASCII and the two-byte chars), 2 KiB: a
    /// Cyrillic, Greek, Hebrew or Arabic char's bits are one load, not an index and a block.
    class2: Box<[u8; 0x800]>,
    /// The block number of each 256-code-point block (`INDEX_LEN` entries).
    index: Box<[u16; INDEX_LEN]>,
    /// The distinct blocks.
    blocks: Box<[[u8; BLOCK]]>,
}

impl Classes {
    /// The table of `sets` (inclusive char ranges, with the bit each sets) and `preds` (a
    /// function of a char, with the bit it sets).
    pub fn build(sets: &[RangeSet<'_>], preds: &[PredSet]) -> Classes {
        let mut flat = vec![0u8; N_CHARS];
        for &(ranges, bit) in sets {
            for &(lo, hi) in ranges {
                for slot in &mut flat[lo as usize..=hi as usize] {
                    *slot |= bit;
                }
            }
        }
        if !preds.is_empty() {
            for (cp, slot) in flat.iter_mut().enumerate() {
                // Surrogates are not chars and never occur in a `str`.
                if let Some(c) = char::from_u32(cp as u32) {
                    for &(pred, bit) in preds {
                        if pred(c) {
                            *slot |= bit;
                        }
                    }
                }
            }
        }
        let mut ascii = [0u8; 128];
        ascii.copy_from_slice(&flat[..128]);
        let mut class2 = Box::new([0u8; 0x800]);
        class2.copy_from_slice(&flat[..0x800]);
        let mut seen: FxHashMap<&[u8; BLOCK], u16> = FxHashMap::default();
        let mut blocks: Vec<[u8; BLOCK]> = Vec::new();
        let mut index = Box::new([0u16; INDEX_LEN]);
        for (slot, chunk) in index.iter_mut().zip(flat.chunks_exact(BLOCK)) {
            let Ok(chunk) = <&[u8; BLOCK]>::try_from(chunk) else {
                unreachable!("chunks_exact gives BLOCK bytes")
            };
            let next = seen.len() as u16;
            *slot = *seen.entry(chunk).or_insert_with(|| {
                blocks.push(*chunk);
                next
            });
        }
        Classes {
            ascii,
            class2,
            index,
            blocks: blocks.into_boxed_slice(),
        }
    }

    /// The bits of code point `cp` (a char).
    #[inline(always)]
    pub fn of_u32(&self, cp: u32) -> u8 {
        let block = self.index[(cp >> BLOCK_BITS) as usize & (INDEX_LEN - 1)] as usize;
        self.blocks[block][cp as usize & (BLOCK - 1)]
    }

    /// The bits of `c`.
    #[cfg(test)]
    pub fn of(&self, c: char) -> u8 {
        let cp = c as u32;
        if cp < 128 {
            self.ascii[cp as usize]
        } else {
            self.of_u32(cp)
        }
    }

    /// The bits and UTF-8 length of the char that starts at byte `i` of `b`, a `str`'s
    /// bytes (so `i` is a char boundary below `b.len()` and the char's bytes are all there).
    #[inline(always)]
    pub fn at(&self, b: &[u8], i: usize) -> (u8, usize) {
        let b0 = b[i];
        if b0 < 0x80 {
            return (self.ascii[b0 as usize], 1);
        }
        if b0 < 0xE0 {
            // `decode`'s code point of two bytes, below U+0800 whatever they are.
            let cont = b.get(i + 1).copied().unwrap_or(0);
            return (self.class2[two_byte_cp(b0, cont)], 2);
        }
        let (cp, n) = decode(b, i, b0);
        (self.of_u32(cp), n)
    }
}

/// The code point and length of the multi-byte char starting at `i` (lead byte `b0`) of a
/// `str`'s bytes.
#[inline(always)]
fn decode(b: &[u8], i: usize, b0: u8) -> (u32, usize) {
    // One length check where four bytes remain (almost everywhere), not one a byte; the
    // char's own bytes are all there, so the zeros after a text's end are never read.
    match b[i..].first_chunk::<4>() {
        Some(w) => decode4(w, b0),
        None => {
            let mut w = [0u8; 4];
            w[..b.len() - i].copy_from_slice(&b[i..]);
            decode4(&w, b0)
        }
    }
}

/// [`decode`] on the char's first bytes `w` (lead byte `b0`), and maybe bytes after it.
#[inline(always)]
fn decode4(w: &[u8; 4], b0: u8) -> (u32, usize) {
    let cont = |k: usize| u32::from(w[k] & 0x3F);
    if b0 < 0xE0 {
        ((u32::from(b0 & 0x1F) << 6) | cont(1), 2)
    } else if b0 < 0xF0 {
        ((u32::from(b0 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            (u32::from(b0 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

/// The ranges of a Unicode class of a syntax tree, as chars.
pub fn ranges_of(c: &regex_syntax::hir::ClassUnicode) -> Vec<(char, char)> {
    c.ranges().iter().map(|r| (r.start(), r.end())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_equals_its_sources_everywhere() {
        let set = [('a', 'c'), ('\u{e9}', '\u{e9}'), ('\u{4e00}', '\u{9fa5}')];
        let t = Classes::build(&[(&set, 1)], &[(char::is_numeric, 2)]);
        let text: String = [
            'a',
            'z',
            '\u{e9}',
            '\u{bd}',
            '\u{4e00}',
            '\u{1f600}',
            '\u{661}',
        ]
        .iter()
        .collect();
        let b = text.as_bytes();
        let mut i = 0;
        for c in text.chars() {
            let want = u8::from(set.iter().any(|&(lo, hi)| lo <= c && c <= hi))
                | (u8::from(c.is_numeric()) << 1);
            assert_eq!(t.at(b, i), (want, c.len_utf8()), "{c:?}");
            assert_eq!(t.of(c), want);
            i += c.len_utf8();
        }
        // Every two-byte char, which `at` takes from its own table.
        let mut buf = [0u8; 4];
        for c in (0x80..0x800u32).filter_map(char::from_u32) {
            let want = u8::from(set.iter().any(|&(lo, hi)| lo <= c && c <= hi))
                | (u8::from(c.is_numeric()) << 1);
            assert_eq!(
                t.at(c.encode_utf8(&mut buf).as_bytes(), 0),
                (want, 2),
                "{c:?}"
            );
        }
        for cp in (0..=0x10FFFFu32).step_by(97) {
            if let Some(c) = char::from_u32(cp) {
                let want = u8::from(set.iter().any(|&(lo, hi)| lo <= c && c <= hi))
                    | (u8::from(c.is_numeric()) << 1);
                assert_eq!(t.of(c), want, "{c:?}");
            }
        }
    }
}
