//! The vocabulary: token bytes ⇄ rank, for ordinary and special tokens.
//!
//! Invariant: every ordinary token's bytes map to exactly one rank and back; the
//! rank of a token is its merge priority (lower merges first). Special tokens
//! live in a separate table because they are never produced by BPE.
//! Decoding reads one flat byte buffer indexed by rank (`offsets`), which keeps
//! `decode_bytes` a sequence of `memcpy`s instead of hash look-ups; encoding looks tokens
//! up in a [`TokenTable`] over the same buffer, so each token's bytes are stored once.

pub mod blocked_bloom;
pub mod id_text;
pub mod mid_table;
pub mod pair_table;
pub mod short_table;
pub mod tiktoken_file;
pub mod token_table;

use crate::error::{Error, Result};
use crate::runtime::process_once::ProcessOnce;
use mid_table::MidTable;
use pair_table::PairTable;
use rustc_hash::FxHashMap;
use short_table::ShortTable;
use token_table::TokenTable;

pub type Rank = u32;

/// Sentinel rank: "this pair does not merge".
pub const NO_RANK: Rank = Rank::MAX;

/// Bytes in a `decode_slots` entry: tokens of up to one less are decoded by one copy.
const DECODE_SLOT: usize = 16;
/// Tokens `Vocab::copy_slotted` copies between checks of `out`'s capacity (4 KiB).
const DECODE_RUN: usize = 256;

pub struct Vocab {
    /// Ordinary tokens, bytes -> rank.
    table: TokenTable,
    /// Ordinary tokens of at most 8 bytes, bytes inline: one cache line per look-up.
    short: ShortTable,
    /// Tokens of 9-16 bytes, bytes in the slot.
    mid: MidTable,
    /// Ordinary tokens, (left rank, right rank) -> rank of the concatenation.
    pub pairs: PairTable,
    /// Number of ordinary tokens.
    n_ordinary: usize,
    /// Special tokens, text -> rank.
    pub specials: FxHashMap<String, Rank>,
    /// All token bytes (ordinary and special) laid end to end.
    bytes: Vec<u8>,
    /// `offsets[id]..offsets[id + 1]` is token `id` in `bytes`; empty range = no token.
    offsets: Vec<u32>,
    /// `true` where an id is a special token.
    is_special: Vec<bool>,
    /// Per id, a token of 1-15 bytes packed in one 16-byte slot for `decode_into`: the bytes
    /// from the start, the length in the last byte; all zero for anything else (longer
    /// tokens and holes go through `offsets`).
    decode_slots: Vec<[u8; DECODE_SLOT]>,
    /// Ordinary tokens' ranks in the order of their bytes (for `encode_with_unstable` and
    /// `token_byte_values`), built on first use: most programs never need it.
    sorted: ProcessOnce<Vec<Rank>>,
    /// Special tokens whose ids are past the flat table (rare: ids ≥ 2^21).
    far_specials: FxHashMap<Rank, Box<[u8]>>,
    /// The rank of each single byte, or `NO_RANK`: the BPE start state without hashing.
    pub byte_ranks: [Rank; 256],
}

impl Vocab {
    /// `specials` keeps the caller's order: where two special tokens share an id (o200k_harmony
    /// gives 200018 to both `<|endofprompt|>` and `<|reserved_200018|>`), the first one is what
    /// the id decodes to, as in tiktoken. An ordinary token's bytes win over a special token's.
    pub fn new(ranks: FxHashMap<Vec<u8>, Rank>, specials: Vec<(String, Rank)>) -> Result<Self> {
        let limit = pair_table::MAX_IDS as Rank;
        let max_rank = ranks.values().copied().max().unwrap_or(0);
        if max_rank >= limit {
            return Err(Error::Vocab(format!(
                "mergeable token rank {max_rank} is too large: ranks must be below {limit}"
            )));
        }
        // Special tokens may have any id (tiktoken allows it); those past the flat table's
        // range live in a small side map so the table stays sized by the vocabulary.
        let mut far_specials: FxHashMap<Rank, Box<[u8]>> = FxHashMap::default();
        for (text, rank) in &specials {
            if *rank == Rank::MAX {
                return Err(Error::Vocab(format!("special token id {rank} is reserved")));
            }
            if *rank >= limit {
                far_specials
                    .entry(*rank)
                    .or_insert_with(|| text.as_bytes().into());
            }
        }
        let max_rank = specials
            .iter()
            .map(|(_, r)| *r)
            .filter(|&r| r < limit)
            .chain([max_rank])
            .max()
            .unwrap_or(0);
        let n = max_rank as usize + 1;
        let mut entries: Vec<Option<&[u8]>> = vec![None; n];
        let mut is_special = vec![false; n];
        for (bytes, &rank) in &ranks {
            if bytes.is_empty() {
                return Err(Error::Vocab("a mergeable token has no bytes".into()));
            }
            if entries[rank as usize].is_some() {
                return Err(Error::Vocab(format!(
                    "rank {rank} is given to more than one token"
                )));
            }
            entries[rank as usize] = Some(bytes);
        }
        for (text, rank) in &specials {
            let rank = *rank;
            if text.is_empty() {
                return Err(Error::Vocab("a special token is empty".into()));
            }
            if rank >= limit || entries[rank as usize].is_some() {
                continue;
            }
            entries[rank as usize] = Some(text.as_bytes());
            is_special[rank as usize] = true;
        }
        let total: usize = entries.iter().flatten().map(|b| b.len()).sum();
        if total > u32::MAX as usize {
            return Err(Error::Vocab("token bytes exceed 4 GiB".into()));
        }
        let mut bytes = Vec::with_capacity(total);
        let mut offsets = Vec::with_capacity(n + 1);
        for e in &entries {
            offsets.push(bytes.len() as u32);
            if let Some(b) = e {
                bytes.extend_from_slice(b);
            }
        }
        offsets.push(bytes.len() as u32);
        let decode_slots = entries
            .iter()
            .map(|e| decode_slot(e.unwrap_or_default()))
            .collect();

        let mut byte_ranks = [NO_RANK; 256];
        for (b, slot) in byte_ranks.iter_mut().enumerate() {
            if let Some(&r) = ranks.get(&[b as u8][..]) {
                *slot = r;
            }
        }
        let n_ordinary = ranks.len();
        drop(entries);
        let specials = specials.into_iter().collect();
        let mut vocab = Vocab {
            table: TokenTable::new(std::iter::empty()),
            short: ShortTable::new(std::iter::empty()),
            mid: MidTable::new(std::iter::empty()),
            pairs: PairTable::empty(),
            n_ordinary,
            specials,
            bytes,
            offsets,
            is_special,
            decode_slots,
            sorted: ProcessOnce::new(),
            far_specials,
            byte_ranks,
        };
        // In rank order, so that the tables' open addressing gives the lowest ranks (BPE's
        // earliest merges, the most frequent tokens) their home slots: see `short_home`.
        let mut ordinary: Vec<Rank> = ranks.values().copied().collect();
        ordinary.sort_unstable();
        drop(ranks);
        vocab.table = TokenTable::new(
            ordinary
                .iter()
                .map(|&r| (vocab.token_bytes(r).unwrap_or_default(), r)),
        );
        vocab.short = ShortTable::new(
            ordinary
                .iter()
                .map(|&r| (vocab.token_bytes(r).unwrap_or_default(), r)),
        );
        vocab.mid = MidTable::new(
            ordinary
                .iter()
                .map(|&r| (vocab.token_bytes(r).unwrap_or_default(), r)),
        );
        vocab.pairs = PairTable::new(
            vocab.n_ids(),
            &|r| vocab.ordinary_bytes(r),
            &|b| vocab.rank(b),
            &vocab.byte_ranks,
        );
        Ok(vocab)
    }

    /// The bytes of any token (ordinary or special), or `None`.
    #[inline]
    pub fn token_bytes(&self, id: Rank) -> Option<&[u8]> {
        let i = id as usize;
        if i + 1 >= self.offsets.len() {
            return self.far_specials.get(&id).map(|b| &b[..]);
        }
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        if a == b {
            None
        } else {
            Some(&self.bytes[a..b])
        }
    }

    /// The bytes of an ordinary token only (special tokens give `None`).
    #[inline]
    pub fn ordinary_bytes(&self, id: Rank) -> Option<&[u8]> {
        if self.is_special.get(id as usize).copied().unwrap_or(false)
            || self.far_specials.contains_key(&id)
        {
            None
        } else {
            self.token_bytes(id)
        }
    }

    /// The rank of an ordinary token's bytes.
    #[inline(always)]
    pub fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        match bytes.len() {
            0 => None,
            1..=short_table::MAX_LEN => self.short.get(bytes),
            _ => self.table.get(bytes, |r| self.token_bytes_unchecked(r)),
        }
    }

    /// `rank` for `1..=8` bytes (the common case of the BPE hot path).
    #[inline(always)]
    pub fn short_rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.short.get(bytes)
    }

    /// `short_rank` of the token whose [`short_table::load`] key is `key` and length `len`.
    #[inline(always)]
    pub fn short_rank_key(&self, key: u64, len: usize) -> Option<Rank> {
        self.short.get_key(key, len as u64)
    }

    /// The short table's home slot for `key` / `len` only: a rank or `NO_RANK`.
    #[inline(always)]
    pub fn short_home(&self, key: u64, len: usize) -> Rank {
        self.short.home(key, len as u64)
    }

    /// `rank` for 9 to 16 bytes (`None` for any other length).
    #[inline(always)]
    pub fn mid_rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.mid.get(bytes)
    }

    /// `rank` with the hash of `bytes` already computed.
    #[inline(always)]
    pub fn rank_hashed(&self, bytes: &[u8], h: u64) -> Option<Rank> {
        self.table
            .get_hashed(bytes, h, |r| self.token_bytes_unchecked(r))
    }

    /// Byte length of an id known to be in range (0 for an id with no token).
    #[inline(always)]
    pub fn token_len(&self, id: Rank) -> usize {
        let i = id as usize;
        (self.offsets[i + 1] - self.offsets[i]) as usize
    }

    /// Bytes of an id known to be in range (the table only holds valid ranks).
    #[inline(always)]
    fn token_bytes_unchecked(&self, id: Rank) -> &[u8] {
        let i = id as usize;
        &self.bytes[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Number of ordinary tokens.
    pub fn n_ordinary(&self) -> usize {
        self.n_ordinary
    }

    /// Ordinary tokens' ranks sorted by their bytes.
    pub fn sorted_ranks(&self) -> &[Rank] {
        self.sorted.get_or_init(|| {
            let mut v: Vec<Rank> = (0..self.n_ids() as Rank)
                .filter(|&r| self.ordinary_bytes(r).is_some())
                .collect();
            v.sort_unstable_by(|&a, &b| {
                self.token_bytes_unchecked(a)
                    .cmp(self.token_bytes_unchecked(b))
            });
            v
        })
    }

    /// The largest id of an ordinary token, if there is one.
    pub fn max_ordinary_id(&self) -> Option<Rank> {
        (0..self.n_ids() as Rank)
            .rev()
            .find(|&r| self.ordinary_bytes(r).is_some())
    }

    /// Approximate heap memory of the vocabulary, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.table.memory_bytes()
            + self.short.memory_bytes()
            + self.mid.memory_bytes()
            + self.pairs.memory_bytes()
            + self.bytes.len()
            + self.offsets.len() * 4
            + self.is_special.len()
            + self.decode_slots.len() * 16
    }

    /// Concatenated bytes of `ids`, failing on the first unknown id (`out` then holds the
    /// bytes of the ids before it).
    ///
    /// Tokens with a slot (1-15 bytes: nearly all) go through `Vocab::copy_slotted`; this
    /// loop only takes the others, one at a time, between its runs.
    pub fn decode_into(&self, ids: &[Rank], out: &mut Vec<u8>) -> Result<()> {
        let mut rest = ids;
        loop {
            rest = &rest[self.copy_slotted(rest, out)..];
            let Some((&id, tail)) = rest.split_first() else {
                return Ok(());
            };
            out.extend_from_slice(self.token_bytes(id).ok_or(Error::UnknownToken(id))?);
            rest = tail;
        }
    }

    /// Appends the bytes of the tokens at the start of `ids` that have a decode slot, up to
    /// the first that has none (a long token, a special one or an unknown id); returns how
    /// many it appended.
    ///
    /// Why it is fast: each token is one 16-byte read of its slot and one 16-byte store
    /// straight into `out`'s spare capacity, at a position kept in a register. The store may
    /// run past the token's end; the next token overwrites that tail, and the length set at
    /// the end of a run leaves the rest out. Keeping `out`'s length in memory (a push per
    /// token) would make every token wait on the store and reload of the previous one's; the
    /// slow path for long tokens is the caller's, so the table's address stays in a register
    /// (~1.25x as fast as either; see docs/engine.md).
    #[inline]
    fn copy_slotted(&self, ids: &[Rank], out: &mut Vec<u8>) -> usize {
        let slots = &self.decode_slots[..];
        let mut copied = 0;
        for run in ids.chunks(DECODE_RUN) {
            out.reserve(run.len() * DECODE_SLOT);
            let start = out.len();
            let dst = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
            let mut pos = 0;
            let mut n = 0;
            for &id in run {
                let Some(slot) = slots.get(id as usize) else {
                    break;
                };
                let len = slot[DECODE_SLOT - 1] as usize;
                if len == 0 {
                    break;
                }
                // SAFETY: `reserve` left at least `run.len() * DECODE_SLOT` bytes of spare
                // capacity from `dst`. Each of the `n` tokens before this one added at most
                // `DECODE_SLOT - 1` to `pos`, and `n < run.len()`, so
                // `pos + DECODE_SLOT <= (n + 1) * DECODE_SLOT <= run.len() * DECODE_SLOT`:
                // the 16 bytes written are inside that spare capacity, which `out` owns and
                // nothing else references. An unaligned write suits a `u8` buffer.
                unsafe {
                    dst.add(pos)
                        .cast::<[u8; DECODE_SLOT]>()
                        .write_unaligned(*slot)
                };
                pos += len;
                n += 1;
            }
            // SAFETY: the first `pos` bytes of the spare capacity were written (each token's
            // bytes at its position), so `start + pos` bytes are initialised, and
            // `pos <= run.len() * (DECODE_SLOT - 1)` is within the capacity `reserve` gave.
            unsafe { out.set_len(start + pos) };
            copied += n;
            if n < run.len() {
                break;
            }
        }
        copied
    }

    /// The largest id with bytes, of any kind (ordinary, special or decode-only).
    pub fn max_id(&self) -> Option<Rank> {
        let near = (0..self.n_ids() as Rank)
            .rev()
            .find(|&r| self.token_bytes(r).is_some());
        near.into_iter()
            .chain(self.far_specials.keys().copied())
            .max()
    }

    /// One past the largest id.
    pub fn n_ids(&self) -> usize {
        self.offsets.len() - 1
    }
}

/// `bytes` packed for `Vocab::decode_slots`: 1-15 bytes from the start and the length in
/// the last byte, or all zero when the token does not fit.
fn decode_slot(bytes: &[u8]) -> [u8; DECODE_SLOT] {
    let mut slot = [0u8; DECODE_SLOT];
    if !bytes.is_empty() && bytes.len() < DECODE_SLOT {
        slot[..bytes.len()].copy_from_slice(bytes);
        slot[DECODE_SLOT - 1] = bytes.len() as u8;
    }
    slot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_copies_short_and_long_tokens_and_rejects_unknown_ids() {
        let long = b"a token much longer than one sixteen-byte slot".to_vec();
        let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
        for b in 0..=255u8 {
            ranks.insert(vec![b], b as Rank);
        }
        ranks.insert(b"xy".to_vec(), 256);
        ranks.insert(long.clone(), 257);
        ranks.insert(b"exactly 16 bytes".to_vec(), 258);
        // Either side of the packed word's 7 bytes.
        ranks.insert(b"7 bytes".to_vec(), 259);
        ranks.insert(b"8 bytes!".to_vec(), 260);
        ranks.insert(b"fifteen bytes!!".to_vec(), 261);
        let v = Vocab::new(
            ranks,
            vec![("<|near|>".into(), 300), ("<|far|>".into(), 5_000_000)],
        )
        .unwrap();
        let ids = [
            257, 256, 258, 7, 259, 300, 260, 257, 256, 5_000_000, 0, 259, 256,
        ];
        let mut want = Vec::new();
        for &id in &ids {
            want.extend_from_slice(v.token_bytes(id).unwrap());
        }
        let mut got = b"prefix".to_vec();
        v.decode_into(&ids, &mut got).unwrap();
        assert_eq!(&got[..6], b"prefix");
        assert_eq!(&got[6..], &want[..]);
        // The last token is a short one: nothing of the 16-byte slot's excess remains.
        let mut end = Vec::new();
        v.decode_into(&[256], &mut end).unwrap();
        assert_eq!(end, b"xy");
        for bad in [299, 1_000_000, Rank::MAX] {
            let mut out = Vec::new();
            assert_eq!(
                v.decode_into(&[256, bad], &mut out),
                Err(Error::UnknownToken(bad))
            );
        }
        // Many runs of `copy_slotted`: long tokens either side of each run boundary, and the
        // most a run can write (every token 15 bytes, so each store reaches the 16th byte).
        let mut ids = Vec::new();
        for i in 0..3 * DECODE_RUN + 7 {
            ids.push(match i % 97 {
                0 | 1 => 257,
                _ if i % DECODE_RUN >= DECODE_RUN - 2 || i % DECODE_RUN < 2 => 257,
                n if n % 3 == 0 => 261,
                n => n as Rank,
            });
        }
        let want: Vec<u8> = ids
            .iter()
            .flat_map(|&id| v.token_bytes(id).unwrap().to_vec())
            .collect();
        let mut got = Vec::new();
        v.decode_into(&ids, &mut got).unwrap();
        assert_eq!(got, want);
        let fifteen = vec![261; 2 * DECODE_RUN + 1];
        let mut got = Vec::new();
        v.decode_into(&fifteen, &mut got).unwrap();
        assert_eq!(got, b"fifteen bytes!!".repeat(2 * DECODE_RUN + 1));
        // An unknown id after a full run: the error names it.
        let mut late = vec![259; DECODE_RUN + 3];
        late.push(299);
        late.push(259);
        let mut out = Vec::new();
        assert_eq!(
            v.decode_into(&late, &mut out),
            Err(Error::UnknownToken(299))
        );
        // What came before it was written, and nothing after it.
        assert_eq!(out, b"7 bytes".repeat(DECODE_RUN + 3));
    }
}
