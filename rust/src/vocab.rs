//! The vocabulary: token bytes ⇄ rank, for ordinary and special tokens.
//!
//! Invariant: every ordinary token's bytes map to exactly one rank and back; the
//! rank of a token is its merge priority (lower merges first). Special tokens
//! live in a separate table because they are never produced by BPE.
//! Decoding reads one flat byte buffer indexed by rank (`offsets`), which keeps
//! `decode_bytes` a sequence of `memcpy`s instead of hash look-ups.

use crate::error::{Error, Result};
use rustc_hash::FxHashMap;

pub type Rank = u32;

/// Sentinel rank: "this pair does not merge".
pub const NO_RANK: Rank = Rank::MAX;

pub struct Vocab {
    /// Ordinary tokens, bytes -> rank.
    pub ranks: FxHashMap<Vec<u8>, Rank>,
    /// Special tokens, text -> rank.
    pub specials: FxHashMap<String, Rank>,
    /// All token bytes (ordinary and special) laid end to end.
    bytes: Vec<u8>,
    /// `offsets[id]..offsets[id + 1]` is token `id` in `bytes`; empty range = no token.
    offsets: Vec<u32>,
    /// `true` where an id is a special token.
    is_special: Vec<bool>,
    /// Ordinary token bytes in sorted order (for `encode_with_unstable` and `token_byte_values`).
    pub sorted_token_bytes: Vec<Vec<u8>>,
    /// The rank of each single byte, or `NO_RANK`: the BPE start state without hashing.
    pub byte_ranks: [Rank; 256],
}

impl Vocab {
    /// `specials` keeps the caller's order: where two special tokens share an id (o200k_harmony
    /// gives 200018 to both `<|endofprompt|>` and `<|reserved_200018|>`), the first one is what
    /// the id decodes to, as in tiktoken. An ordinary token's bytes win over a special token's.
    pub fn new(ranks: FxHashMap<Vec<u8>, Rank>, specials: Vec<(String, Rank)>) -> Result<Self> {
        let max_rank = ranks
            .values()
            .copied()
            .chain(specials.iter().map(|(_, r)| *r))
            .max()
            .unwrap_or(0);
        if max_rank == Rank::MAX {
            return Err(Error::Vocab(format!("rank {max_rank} is reserved")));
        }
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
            if entries[rank as usize].is_some() {
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

        let mut byte_ranks = [NO_RANK; 256];
        for (b, slot) in byte_ranks.iter_mut().enumerate() {
            if let Some(&r) = ranks.get(&[b as u8][..]) {
                *slot = r;
            }
        }
        let mut sorted_token_bytes: Vec<Vec<u8>> = ranks.keys().cloned().collect();
        sorted_token_bytes.sort_unstable();
        let specials = specials.into_iter().collect();
        Ok(Vocab {
            ranks,
            specials,
            bytes,
            offsets,
            is_special,
            sorted_token_bytes,
            byte_ranks,
        })
    }

    /// The bytes of any token (ordinary or special), or `None`.
    #[inline]
    pub fn token_bytes(&self, id: Rank) -> Option<&[u8]> {
        let i = id as usize;
        if i + 1 >= self.offsets.len() {
            return None;
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
        if self.is_special.get(id as usize).copied().unwrap_or(false) {
            None
        } else {
            self.token_bytes(id)
        }
    }

    #[inline]
    pub fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.ranks.get(bytes).copied()
    }

    /// Concatenated bytes of `ids`, failing on the first unknown id.
    pub fn decode_into(&self, ids: &[Rank], out: &mut Vec<u8>) -> Result<()> {
        for &id in ids {
            match self.token_bytes(id) {
                Some(b) => out.extend_from_slice(b),
                None => return Err(Error::UnknownToken(id)),
            }
        }
        Ok(())
    }

    /// One past the largest id.
    pub fn n_ids(&self) -> usize {
        self.offsets.len() - 1
    }
}
