//! Cuts: the boundaries between two three-byte chars that no token spans. BPE of a piece falls
//! apart there into BPE of its parts.
//!
//! Invariant: `is_cut(c1, c2)` only if no token spans the boundary between `c1` and `c2` in
//! any text: no token has a split whose (up to three) bytes before it end the UTF-8 bytes of
//! `c1` and whose (up to three) bytes after it begin those of `c2`. Then [`CharCuts::encode`]
//! appends exactly the BPE tokens of the piece (the definition in `bpe.rs`), provided its
//! `part` callback appends those of each part.
//!
//! Why BPE falls apart at a cut: every merge joins two adjacent parts into a token made of
//! the bytes they cover. No token spans a cut, so no merge joins parts across it; the merges on
//! either side only ever see their own side's parts, and happen in the order they would if
//! that side were encoded alone (a tie between the two sides goes to the left one, which
//! changes nothing on the right). So the tokens of the piece are the tokens of the text before
//! the cut followed by those of the text after it.
//!
//! Why it pays: a Chinese or Japanese sentence is one piece of tens of bytes, met once, which
//! backtracking (`backtrack.rs`) would encode token by token with a pair check for each. Cut,
//! it is a run of parts of one or two chars, which repeat across texts as words do: a part
//! that is a token is one load of a table here, any other part one probe of the piece cache.
//! In o200k, 64% of the boundaries between such chars are cuts; the multilingual megabyte
//! encodes ~1.15x as fast (see docs/engine.md).
//!
//! Where it does not pay, and so is not done (see `bpe::encode_piece`):
//! - pieces whose last char is below U+1000 (Devanagari, Thai and the other scripts of lead
//!   byte 0xE0): their vowel signs join nearly every char to the next, few boundaries are cuts,
//!   and the look for them costs more than it saves;
//! - vocabularies with fewer than [`MIN_WHOLE_CHARS`] tokens that are one such char (r50k and
//!   p50k have 179): their parts are mostly not tokens and go the general way, slower than
//!   the backtracking they replace.

use super::tables::BpeVocab;
use crate::vocab::blocked_bloom::BlockedBloom;
use crate::vocab::{Rank, NO_RANK};

pub struct CharCuts {
    /// Per code point (the 16 bits a three-byte char carries), the token that is exactly that
    /// char, or `NO_RANK`. One load gives a part of one char its token.
    chars: Box<[Rank]>,
    /// Pairs of whole chars `(c1, c2)` that follow each other inside some token (64 KiB for
    /// o200k, 1 KiB for cl100k: small, as the question is asked at every boundary).
    pairs: BlockedBloom,
    /// The tokens that span a boundary with only part of a char on one side or both (o200k:
    /// 188 distinct cases), as what they need of `c1` and of `c2`, grouped by `c1`'s last byte and
    /// `c2`'s lead byte: `partly[partly_index[g]..partly_index[g + 1]]` is group `g` (see
    /// `group`). Asked at the boundaries the filter of pairs lets through; nearly all groups
    /// are empty.
    partly_index: Box<[u32]>,
    partly: Box<[Partial]>,
    /// Tokens that are exactly two three-byte chars: open addressing on `c1 << 16 | c2`,
    /// slots `[key, rank]` (rank `NO_RANK`: free), at most half full. Every `u32` is some
    /// pair's key, so the rank tells a free slot: with slots `[key + 1, rank]` and 0 for free,
    /// U+FFFF U+FFFF's key wrapped to 0 and read any free slot as its token.
    duos: Box<[[u32; 2]]>,
    duo_mask: usize,
    /// One bit per rank: does BPE of the token's bytes give the token back? A part of a cut
    /// piece is BPE proper, where a token no merge reaches never comes out (unlike a piece,
    /// which is its token if it is one, as in tiktoken). `chars` and `duos` hold only
    /// reachable tokens.
    reachable: Box<[u64]>,
}

/// What a token that spans a boundary needs: its 1-3 bytes before the boundary must end
/// `c1`, its 1-3 bytes after it begin `c2` (one side, at least, less than a whole char).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Partial {
    group: u16,
    left: [u8; 3],
    left_len: u8,
    right: [u8; 3],
    right_len: u8,
}

/// The group of [`Partial`]s a boundary looks in, from the last byte before it and the lead
/// byte after it: the low six bits of the one, the low four of the other.
#[inline(always)]
fn group(last: u8, lead: u8) -> usize {
    ((last & 0x3F) as usize) << 4 | (lead & 0xF) as usize
}

/// In [`CharCuts::encode`]: the char before is not a three-byte char (or there is none).
const NOT_A_CHAR: u32 = u32::MAX;

/// Vocabularies with fewer tokens that are one three-byte char from U+1000 up go without cuts.
pub const MIN_WHOLE_CHARS: usize = 512;

#[inline(always)]
fn pair_hash(c1: u32, c2: u32) -> u64 {
    let h = ((c1 as u64) << 16 | c2 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^ (h >> 29)
}

/// The 16 payload bits of the three-byte UTF-8 char `b` starts with, if it starts with one
/// (any lead byte 0xE0-0xEF and two continuation bytes: overlong and surrogate forms included,
/// so that the mapping is one to one on byte triples, whatever bytes a piece holds).
#[inline(always)]
pub fn char3(b: &[u8]) -> Option<u32> {
    match *b {
        [x @ 0xE0..=0xEF, y, z, ..] if y & 0xC0 == 0x80 && z & 0xC0 == 0x80 => {
            Some((x as u32 & 0x0F) << 12 | (y as u32 & 0x3F) << 6 | (z as u32 & 0x3F))
        }
        _ => None,
    }
}

/// The three bytes that [`char3`] reads as `cp` (for every `cp` below 2^16).
fn char3_bytes(cp: u32) -> [u8; 3] {
    [
        0xE0 | (cp >> 12) as u8,
        0x80 | (cp >> 6 & 0x3F) as u8,
        0x80 | (cp & 0x3F) as u8,
    ]
}

/// Is `b` a continuation byte?
fn cont(b: u8) -> bool {
    b & 0xC0 == 0x80
}

impl CharCuts {
    /// The tables for `vocab`, or `None` if it has fewer than [`MIN_WHOLE_CHARS`] tokens that
    /// are one three-byte char from U+1000 up. o200k: ~6 ms, at the first CJK piece.
    pub fn new(vocab: &BpeVocab) -> Option<CharCuts> {
        // The argument above needs no order of ranks, so a vocabulary that backtracking
        // refuses (Llama 3's: some merges join a part of higher rank than their result) is
        // cut too; only the reachability then comes from elsewhere.
        Self::build(vocab, || {
            let reach = super::backtrack::reachable(vocab);
            Some(move |r: Rank| reach.get(r as usize).copied().unwrap_or(false))
        })
    }

    /// The cuts alone, for a model whose merges are not tiktoken's rule (a HuggingFace model
    /// merges listed pairs only): whether a part that is a token is that token is then that
    /// model's question, so no part is answered here (`chars` and `duos` are left empty) and
    /// [`CharCuts::parts`] is the way in. `None` as for [`CharCuts::new`].
    pub fn cuts_only(vocab: &BpeVocab) -> Option<CharCuts> {
        Self::build(vocab, || Some(|_: Rank| false))
    }

    /// The tables, with `reach()` telling which tokens BPE reaches (asked only for a
    /// vocabulary with enough whole chars; `None` from it: no tables).
    fn build<R: Fn(Rank) -> bool>(
        vocab: &BpeVocab,
        reach: impl FnOnce() -> Option<R>,
    ) -> Option<CharCuts> {
        // Per code point, the token that is exactly that char, reachable or not.
        let mut chars: Box<[Rank]> = (0..=0xFFFFu32)
            .map(|cp| vocab.rank(&char3_bytes(cp)).unwrap_or(NO_RANK))
            .collect();
        if chars[0x1000..].iter().filter(|&&r| r != NO_RANK).count() < MIN_WHOLE_CHARS {
            return None;
        }
        let reach = reach()?;
        let mut reachable = vec![0u64; vocab.n_ids().div_ceil(64)].into_boxed_slice();
        for r in 0..vocab.n_ids() as Rank {
            if reach(r) {
                reachable[r as usize / 64] |= 1 << (r % 64);
            }
        }
        let is_reachable = |r: Rank| reachable[r as usize / 64] >> (r % 64) & 1 != 0;
        let mut partly: Vec<Partial> = Vec::new();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        let mut duo_tokens: Vec<(u32, Rank)> = Vec::new();
        for id in 0..vocab.n_ids() as Rank {
            let Some(t) = vocab.ordinary_bytes(id) else {
                continue;
            };
            if let (6, Some(a), Some(b)) = (t.len(), char3(t), char3(t.get(3..).unwrap_or(&[]))) {
                if is_reachable(id) {
                    duo_tokens.push((a << 16 | b, id));
                }
            }
            // Every place the token could span a boundary between three-byte chars: a
            // continuation byte (the end of `c1`), then a lead byte (the start of `c2`).
            for k in 1..t.len() {
                if !(0xE0..=0xEF).contains(&t[k]) || !cont(t[k - 1]) {
                    continue;
                }
                // What the token needs of `c1`: all of it, or (the token starts inside it) a
                // suffix of continuation bytes; anything else matches no `c1`.
                let left = match k {
                    3.. => match char3(&t[k - 3..]) {
                        Some(c) => Some(c),
                        None => continue,
                    },
                    _ if t[..k].iter().all(|&b| cont(b)) => None,
                    _ => continue,
                };
                let right = match t.len() - k {
                    3.. => match char3(&t[k..]) {
                        Some(c) => Some(c),
                        None => continue,
                    },
                    _ if t[k + 1..].iter().all(|&b| cont(b)) => None,
                    _ => continue,
                };
                if let (Some(a), Some(b)) = (left, right) {
                    pairs.push((a, b));
                    continue;
                }
                let (l, r) = (&t[k.saturating_sub(3)..k], &t[k..(k + 3).min(t.len())]);
                let mut p = Partial {
                    group: group(l[l.len() - 1], r[0]) as u16,
                    left: [0; 3],
                    left_len: l.len() as u8,
                    right: [0; 3],
                    right_len: r.len() as u8,
                };
                p.left[..l.len()].copy_from_slice(l);
                p.right[..r.len()].copy_from_slice(r);
                partly.push(p);
            }
        }
        let mut filter = BlockedBloom::new(pairs.len());
        for (a, b) in pairs {
            filter.insert(pair_hash(a, b));
        }
        partly.sort_unstable();
        partly.dedup();
        let mut partly_index = vec![0u32; (1 << 10) + 1].into_boxed_slice();
        for p in &partly {
            partly_index[p.group as usize + 1] += 1;
        }
        for g in 0..1 << 10 {
            partly_index[g + 1] += partly_index[g];
        }
        for r in chars
            .iter_mut()
            .filter(|r| **r != NO_RANK && !is_reachable(**r))
        {
            *r = NO_RANK;
        }
        let cap = (duo_tokens.len() * 2).next_power_of_two().max(16);
        let mut duos = vec![[0, NO_RANK]; cap].into_boxed_slice();
        for (key, rank) in duo_tokens {
            let mut i = Self::duo_slot(key, cap - 1);
            while duos[i][1] != NO_RANK {
                i = (i + 1) & (cap - 1);
            }
            duos[i] = [key, rank];
        }
        Some(CharCuts {
            chars,
            pairs: filter,
            partly_index,
            partly: partly.into_boxed_slice(),
            duos,
            duo_mask: cap - 1,
            reachable,
        })
    }

    /// Does BPE of token `r`'s bytes give `r` back?
    #[inline(always)]
    pub fn reachable(&self, r: Rank) -> bool {
        self.reachable
            .get(r as usize / 64)
            .is_some_and(|w| w >> (r % 64) & 1 != 0)
    }

    /// Is the boundary between chars `c1` and `c2` one that no token spans? `false` is not
    /// a promise that some token does.
    #[inline(always)]
    pub fn is_cut(&self, c1: u32, c2: u32) -> bool {
        if self.pairs.may_hold(pair_hash(c1, c2)) {
            return false;
        }
        // `c1`'s last byte carries its low six bits, `c2`'s lead byte its top four.
        let g = group(c1 as u8, (c2 >> 12) as u8);
        let (a, z) = (
            self.partly_index[g] as usize,
            self.partly_index[g + 1] as usize,
        );
        a == z || !self.spanned_partly(c1, c2, a..z)
    }

    /// Does one of `partly[range]` span the boundary between `c1` and `c2`?
    #[cold]
    #[inline(never)]
    fn spanned_partly(&self, c1: u32, c2: u32, range: std::ops::Range<usize>) -> bool {
        let (b1, b2) = (char3_bytes(c1), char3_bytes(c2));
        self.partly[range].iter().any(|p| {
            b1.ends_with(&p.left[..p.left_len as usize])
                && b2.starts_with(&p.right[..p.right_len as usize])
        })
    }

    #[inline(always)]
    fn duo_slot(key: u32, mask: usize) -> usize {
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask
    }

    /// The token that is exactly chars `c1` and `c2`.
    #[inline(always)]
    fn duo(&self, c1: u32, c2: u32) -> Option<Rank> {
        let key = c1 << 16 | c2;
        let mut i = Self::duo_slot(key, self.duo_mask);
        loop {
            match self.duos[i] {
                [_, NO_RANK] => return None,
                [k, r] if k == key => return Some(r),
                _ => i = (i + 1) & self.duo_mask,
            }
        }
    }

    /// Approximate heap memory, in bytes (o200k: 256 KiB of chars, 64 KiB of pairs, 128 KiB
    /// of two-char tokens, 25 KiB of reachability bits; 0.49 MB in all, cl100k 0.29 MB).
    pub fn memory_bytes(&self) -> usize {
        self.chars.len() * 4
            + self.pairs.memory_bytes()
            + self.duos.len() * 8
            + self.partly_index.len() * 4
            + self.partly.len() * std::mem::size_of::<Partial>()
            + self.reachable.len() * 8
    }

    /// Appends the tokens of `piece`, cut at the boundaries no token spans: a part that is one
    /// char or two that make a token is answered here, any other part by `part`. Returns
    /// `false`, with nothing appended, if no boundary is a cut.
    ///
    /// The filter of pairs is asked first: it is small and on most text says "in a token" for
    /// the boundaries that are not cuts, so `chars` (256 KiB) is read only at cuts.
    #[inline(always)]
    pub fn encode<E>(
        &self,
        piece: &[u8],
        out: &mut Vec<Rank>,
        mut part: impl FnMut(&[u8], &mut Vec<Rank>) -> Result<(), E>,
    ) -> Result<bool, E> {
        self.parts(piece, |bytes, c1, c2| {
            self.emit(bytes, c1, c2, out, &mut part)
        })
    }

    /// Calls `part` with each part of `piece` between its cuts, in order, and the part's last
    /// two chars (see [`CharCuts::emit`]). Returns `false`, having called nothing, if no
    /// boundary is a cut.
    #[inline(always)]
    pub fn parts<E>(
        &self,
        piece: &[u8],
        mut part: impl FnMut(&[u8], u32, u32) -> Result<(), E>,
    ) -> Result<bool, E> {
        let n = piece.len();
        let (mut start, mut i) = (0usize, 0usize);
        // The char before `i`, and the one before that if it is in the same part.
        let (mut prev, mut prev2) = (NOT_A_CHAR, NOT_A_CHAR);
        while i < n {
            let Some(c) = char3(&piece[i..]) else {
                (prev, prev2) = (NOT_A_CHAR, NOT_A_CHAR);
                i += 1;
                continue;
            };
            if prev != NOT_A_CHAR && self.is_cut(prev, c) {
                part(&piece[start..i], prev2, prev)?;
                (start, prev, prev2) = (i, c, NOT_A_CHAR);
            } else {
                (prev, prev2) = (c, prev);
            }
            i += 3;
        }
        if start == 0 {
            return Ok(false);
        }
        part(&piece[start..], prev2, prev)?;
        Ok(true)
    }

    /// Appends the tokens of the part `bytes`, whose last two chars are `c1`, `c2` (either
    /// `NOT_A_CHAR` where that is not a three-byte char of the part).
    #[inline(always)]
    fn emit<E>(
        &self,
        bytes: &[u8],
        c1: u32,
        c2: u32,
        out: &mut Vec<Rank>,
        part: &mut impl FnMut(&[u8], &mut Vec<Rank>) -> Result<(), E>,
    ) -> Result<(), E> {
        if bytes.len() == 3 && c2 != NOT_A_CHAR {
            let r = self.chars[c2 as usize];
            if r != NO_RANK {
                out.push(r);
                return Ok(());
            }
        }
        if bytes.len() == 6 && c1 != NOT_A_CHAR {
            if let Some(r) = self.duo(c1, c2) {
                out.push(r);
                return Ok(());
            }
        }
        part(bytes, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::bpe::backtrack::Backtrack;
    use crate::encode::bpe::piece_cache::PieceCache;
    use crate::encode::bpe::{encode_piece, merge_heap};
    use crate::vocab::Vocab;
    use rustc_hash::FxHashMap;

    fn utf8(c: char) -> Vec<u8> {
        c.to_string().into_bytes()
    }

    /// Every byte; the chars from U+4E00 on, [`MIN_WHOLE_CHARS`] of them, each a token (with
    /// its first two bytes, so that BPE can reach it); then `extra`.
    fn vocab(extra: &[Vec<u8>]) -> BpeVocab {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        let chars: Vec<Vec<u8>> = (0x4E00..0x4E00 + MIN_WHOLE_CHARS as u32)
            .map(|cp| utf8(char::from_u32(cp).expect("a CJK char")))
            .collect();
        for c in &chars {
            if !tokens.contains(&c[..2].to_vec()) {
                tokens.push(c[..2].to_vec());
            }
        }
        tokens.extend(chars);
        tokens.extend(extra.iter().cloned());
        let ranks: FxHashMap<Vec<u8>, Rank> = tokens.into_iter().zip(0..).collect();
        BpeVocab::new(Vocab::new(ranks, Vec::new()).expect("a valid vocabulary"))
    }

    /// Tokens across char boundaries of every kind `CharCuts::new` tells apart.
    fn spanning_tokens() -> Vec<Vec<u8>> {
        let cat = |parts: &[&[u8]]| parts.concat();
        vec![
            // Whole chars on both sides, also inside a longer token.
            cat(&[&utf8('一'), &utf8('丁')]),
            cat(&[&utf8('丁'), &utf8('七')]),
            cat(&[&utf8('上'), &utf8('下'), &utf8('不')]),
            // The last byte of 丂, then 万: a token that starts inside a char.
            cat(&[&utf8('丂')[2..], &utf8('万')]),
            // 丈, then the first byte of the next char: a token that ends inside one.
            cat(&[&utf8('丈'), &utf8('丈')[..1]]),
            // Inside a char on both sides: the last byte of 三 (0x89), then two bytes.
            cat(&[&utf8('三')[2..], &utf8('丁')[..2]]),
            // Bytes that cannot be the end of a three-byte char before a lead byte.
            cat(&[b"a", &utf8('与')]),
            // A char and two chars that are tokens no merge reaches (no token is part of
            // them).
            utf8('怐'),
            cat(&[&utf8('怐'), &utf8('怑')]),
        ]
    }

    /// Does some token of `vocab` span the boundary between `c1` and `c2`, in a text where
    /// one follows the other? Straight from the definition: a split of a token whose bytes
    /// before it (up to three) end `c1` and whose bytes after it (up to three) begin `c2`.
    fn spans(vocab: &Vocab, c1: char, c2: char) -> bool {
        let (b1, b2) = (utf8(c1), utf8(c2));
        (0..vocab.n_ids() as Rank)
            .filter_map(|id| vocab.ordinary_bytes(id))
            .any(|t| {
                (1..t.len()).any(|k| {
                    b1.ends_with(&t[k.saturating_sub(3)..k])
                        && b2.starts_with(&t[k..(k + 3).min(t.len())])
                })
            })
    }

    #[test]
    fn a_cut_is_a_boundary_no_token_spans() {
        let v = vocab(&spanning_tokens());
        let cuts = v.char_cuts().expect("enough whole chars");
        // The chars the tokens above are made of, their neighbours, and chars that end in the
        // byte 0x89 as 三 does.
        let mut chars: Vec<char> = ('\u{4DFE}'..='\u{4E12}').collect();
        chars.extend([
            '\u{4E49}', '\u{4E89}', '\u{4EC9}', '\u{6000}', '\u{6010}', '\u{6011}',
        ]);
        let (mut cut, mut spanned) = (0, 0);
        for &c1 in &chars {
            for &c2 in &chars {
                let s = spans(&v, c1, c2);
                spanned += s as usize;
                if cuts.is_cut(c1 as u32, c2 as u32) {
                    cut += 1;
                    assert!(!s, "{c1}{c2}: a token spans the boundary, but it is a cut");
                }
            }
        }
        assert!(
            spanned >= 4 && cut > chars.len(),
            "{cut} cuts, {spanned} spanned"
        );
    }

    /// Every `u32` is some pair's key, U+FFFF U+FFFF's included: all ones, which the table
    /// once stored as `key + 1`, wrapped to 0, and so read any free slot as its token.
    #[test]
    fn the_two_char_table_tells_free_slots_from_every_key() {
        let v = vocab(&[]);
        let cuts = v.char_cuts().expect("enough whole chars");
        assert_eq!(cuts.duo(0xFFFF, 0xFFFF), None);
        assert_eq!(cuts.duo(0, 0), None);
        // U+FFFF (EF BF BF) and U+FFFF twice, each reachable by merges; and 一一.
        let ffff = utf8('\u{FFFF}');
        let v = vocab(&[
            ffff[..2].to_vec(),
            ffff.clone(),
            ffff.repeat(2),
            utf8('一').repeat(2),
        ]);
        let cuts = v.char_cuts().expect("enough whole chars");
        for (c1, c2) in [('\u{FFFF}', '\u{FFFF}'), ('一', '一')] {
            let two = [utf8(c1), utf8(c2)].concat();
            let want = Some(v.rank(&two).expect("a token"));
            assert_eq!(cuts.duo(c1 as u32, c2 as u32), want, "{c1:?} {c2:?}");
        }
        assert_eq!(cuts.duo('一' as u32, 0xFFFF), None);
        assert_eq!(cuts.duo(0xFFFF, '一' as u32), None);
    }

    /// Pieces `k` of `1..n`: `k % max_len + 1` chars of `alphabet`, drawn by xorshift from `seed`.
    fn random_pieces(alphabet: &[char], seed: u64, n: usize, max_len: usize) -> Vec<String> {
        let mut x = seed;
        (1..n)
            .map(|k| {
                (0..k % max_len + 1)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        alphabet[(x % alphabet.len() as u64) as usize]
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn cut_pieces_encode_as_merging_does() {
        let v = vocab(&spanning_tokens());
        let cuts = v.char_cuts().expect("enough whole chars");
        // Chars that are tokens and chars that are not (U+6000 on), the byte 'a' and a
        // two-byte char between them.
        let alphabet: Vec<char> = "一丁七丂万丈三上下不与怐怑\u{6000}\u{6001}aé"
            .chars()
            .collect();
        let cache = PieceCache::new();
        let mut local = cache.local();
        let mut was_cut = 0;
        for piece in random_pieces(&alphabet, 0x9E37_79B9_7F4A_7C15, 400, 40) {
            let piece = piece.as_bytes();
            let mut expected = Vec::new();
            merge_heap(&v, piece, &mut expected).expect("every byte is a token");
            let as_piece = v.rank(piece).map_or_else(|| expected.clone(), |r| vec![r]);
            let mut parts = Vec::new();
            let cut = cuts
                .encode(piece, &mut parts, |part, out| merge_heap(&v, part, out))
                .expect("every byte is a token");
            if cut {
                was_cut += 1;
                assert_eq!(
                    parts,
                    expected,
                    "cut apart: {:?}",
                    String::from_utf8_lossy(piece)
                );
            } else {
                assert!(parts.is_empty());
            }
            for _ in 0..2 {
                let mut got = Vec::new();
                encode_piece(&v, piece, &mut local, &mut got).expect("every byte is a token");
                assert_eq!(got, as_piece, "{:?}", String::from_utf8_lossy(piece));
            }
        }
        assert!(was_cut > 100, "only {was_cut} pieces were cut");
    }

    /// A vocabulary whose token 一丁 ranks below its parts 一 and 丁 (Llama 3 has such
    /// tokens): backtracking guards it, and its CJK pieces are still cut, to the same tokens.
    #[test]
    fn a_vocabulary_backtracking_guards_is_cut_too() {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        tokens.push([utf8('一'), utf8('丁')].concat());
        let base = vocab(&[]);
        for id in 256..base.n_ids() as Rank {
            tokens.push(base.ordinary_bytes(id).expect("a token").to_vec());
        }
        let ranks: FxHashMap<Vec<u8>, Rank> = tokens.into_iter().zip(0..).collect();
        let v = BpeVocab::new(Vocab::new(ranks, Vec::new()).expect("a valid vocabulary"));
        v.build_tables();
        assert!(
            v.backtrack().is_some_and(Backtrack::is_guarded),
            "backtracking should guard this vocabulary"
        );
        let cuts = v.char_cuts_once_backtracking().expect("cut tables");
        let alphabet: Vec<char> = "一丁七万\u{6000}a".chars().collect();
        let mut was_cut = 0;
        let cache = PieceCache::new();
        let mut local = cache.local();
        for piece in random_pieces(&alphabet, 0x2545_F491_4F6C_DD1D, 300, 30) {
            let piece = piece.as_bytes();
            let mut expected = Vec::new();
            merge_heap(&v, piece, &mut expected).expect("every byte is a token");
            let expected = v.rank(piece).map_or(expected, |r| vec![r]);
            let mut parts = Vec::new();
            if cuts.encode(piece, &mut parts, |part, out| merge_heap(&v, part, out)) == Ok(true) {
                was_cut += 1;
            }
            let mut got = Vec::new();
            encode_piece(&v, piece, &mut local, &mut got).expect("every byte is a token");
            assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(piece));
        }
        assert!(was_cut > 100, "only {was_cut} pieces were cut");
    }

    /// 上下不, 怐 and 怐怑 are tokens no merge reaches (neither 上下 nor 下不 is one, and no
    /// token is part of 怐 or 怑). As a piece each is that token, as tiktoken has it; as a
    /// part of a cut piece it is what BPE makes of it.
    #[test]
    fn a_part_is_bpe_proper_even_where_it_spells_a_token() {
        let v = vocab(&spanning_tokens());
        let id = |s: &str| v.rank(s.as_bytes()).expect("a token");
        let cache = PieceCache::new();
        let mut local = cache.local();
        for _ in 0..2 {
            let mut alone = Vec::new();
            encode_piece(&v, "上下不".as_bytes(), &mut local, &mut alone).unwrap();
            assert_eq!(alone, [id("上下不")]);
            let mut cut = Vec::new();
            encode_piece(&v, "上下不一".as_bytes(), &mut local, &mut cut).unwrap(); // 12 bytes
            assert_eq!(cut, [id("上"), id("下"), id("不"), id("一")]);
            let bytes = |s: &str| -> Vec<Rank> { s.bytes().map(|b| b as Rank).collect() };
            for (whole, bpe) in [("怐", bytes("怐")), ("怐怑", bytes("怐怑"))] {
                let mut alone = Vec::new();
                encode_piece(&v, whole.as_bytes(), &mut local, &mut alone).unwrap();
                assert_eq!(alone, [id(whole)]);
                let mut cut = Vec::new();
                // Long enough to be cut (more than 8 bytes).
                let piece = format!("一一一{whole}");
                encode_piece(&v, piece.as_bytes(), &mut local, &mut cut).unwrap();
                assert_eq!(cut, [&[id("一"); 3][..], &bpe].concat(), "{piece}");
            }
        }
    }

    #[test]
    fn a_vocabulary_with_few_whole_chars_has_no_cuts() {
        let mut ranks: FxHashMap<Vec<u8>, Rank> =
            (0..=255u8).map(|b| (vec![b], b as Rank)).collect();
        for (i, cp) in (0x4E00..0x4E00 + MIN_WHOLE_CHARS as u32 - 1).enumerate() {
            ranks.insert(
                utf8(char::from_u32(cp).expect("a CJK char")),
                256 + i as Rank,
            );
        }
        let vocab = BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap());
        assert!(vocab.char_cuts().is_none());
    }
}
