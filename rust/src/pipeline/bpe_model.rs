//! The BPE model as HuggingFace defines it: merges are ranked pairs.
//!
//! Invariant: `encode_word(bytes)` returns HF's `BPE::tokenize` ids for the byte-level
//! string of `bytes`: with `ignore_merges`, a word that is a token is that token; else the
//! word starts as one symbol a byte (HF's unknown-token rules for a byte not in the
//! vocabulary; with an `end_of_word_suffix`, CLIP's `</w>`, the last symbol is the last byte
//! and the suffix, so the token a word ends in carries it) and the adjacent pair with the
//! lowest merge rank is merged, leftmost first among equal ranks, until no adjacent pair is
//! a listed merge. A token is reached only through its own listed merge (not through any
//! split of it, as in tiktoken), and merge priority is the merge's line, not the token's id.
//!
//! A word that is itself a token is that token only if BPE reaches it: that answer is kept
//! per token, computed at its first need (or for every token by `build_tables`), so later
//! words skip the merging; where `build_tables` finds that BPE reaches all tokens but a few
//! (as in every shared model: all but its special tokens), only those few are looked up.
//!
//! A long word of CJK chars is cut where no token of the vocabulary spans the boundary
//! (`encode/bpe/char_cuts.rs`, whose argument holds for any merge rule: every merge makes a
//! token, so none joins symbols across such a boundary, and each side merges as it would
//! alone), and each part is merged, and cached, on its own: parts repeat where sentences don't.

use super::byte_level::{char_of, token_bytes};
use super::merge_table::MergeTable;
use super::normalizers::{bad, unsupported};
use super::word::{scan_merge, Reached, Symbols};
use crate::encode::bpe::backtrack::last_merge;
use crate::encode::bpe::char_cuts::CharCuts;
use crate::encode::bpe::piece_cache::{Local, PieceCache};
use crate::encode::bpe::tables::BpeVocab;
use crate::encode::bpe::{encode_piece_in, encode_piece_keyed, ends_in_char_from_u1000};
use crate::error::{Error, Result};
use crate::runtime::process_once::ProcessOnce;
use crate::vocab::short_table::key_in;
use crate::vocab::token_table::hash_bytes;
use crate::vocab::Vocab;
use rustc_hash::FxHashMap;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

const NONE: u32 = u32::MAX;
/// At most this many unreached tokens are listed in `HfBpe::unreached` (a search of a few
/// cache lines); with more, `whole` answers.
const MAX_UNREACHED: usize = 256;

pub struct HfBpe {
    /// Token bytes -> id, for the tokens written in the byte-level alphabet.
    pub by_bytes: FxHashMap<Box<[u8]>, u32>,
    /// The id of each single byte, or `NONE`.
    byte_id: [u32; 256],
    /// `end_of_word_suffix`'s bytes (empty without one): the last symbol of a word is its
    /// last byte with these after it (CLIP's `</w>`), and so is every token a word ends in.
    suffix: Box<[u8]>,
    /// With a `suffix`, the id of each single byte followed by it, or `NONE`.
    suffix_id: [u32; 256],
    /// Per id, the byte count of its token in `by_bytes`: the bytes it stands for in a word.
    /// 0 where that is not known from the id alone: an id of no byte-level token, and the
    /// unknown token (which stands for the bytes it replaced).
    token_lens: Box<[u32]>,
    /// (left id, right id) -> (rank, merged id).
    merges: FxHashMap<u64, (u32, u32)>,
    /// `merges` laid out for the merging (see `merge_table.rs`).
    table: MergeTable,
    pub ignore_merges: bool,
    unk: Option<u32>,
    fuse_unk: bool,
    /// Per id: whether BPE of its bytes is the token itself.
    whole: Reached,
    cache: PieceCache,
    paths: Paths,
    /// The cuts of `paths.cuts` (see the module docs), built at the first word that needs them.
    cuts: ProcessOnce<Option<CharCuts>>,
    /// Set once [`HfBpe::build_tables`] has filled `whole` for every token.
    whole_built: AtomicBool,
    /// Set by [`HfBpe::build_tables`] when BPE reaches all but a few tokens of the vocabulary
    /// (every shared model: all but special tokens such as `<|endoftext|>`): those few ids,
    /// sorted. Then a word that is a token is that token unless its id is one of these, and
    /// `whole` (a byte a token, mostly out of L1) is not read.
    unreached: OnceLock<Box<[u32]>>,
}

/// Which of ferrotok's fast paths give HF's ids for this model (decided at load).
struct Paths {
    /// The encoder's vocabulary table finds whole tokens (it holds exactly these tokens).
    vocab_lookup: bool,
    /// ferrotok's engine (tiktoken's rule) gives HF's merges (see [`HfBpe::choose_paths`]).
    engine: bool,
    /// With `vocab_lookup`: the model's tokens the encoder's table lacks (special added
    /// tokens that are also in the model's vocab).
    extra: FxHashMap<Box<[u8]>, u32>,
    /// The first bytes of the `extra` tokens.
    extra_first: [bool; 256],
    /// `extra` is not empty and a word that is a token is that token (`ignore_merges`): most
    /// models have no such token, one flag, not a table, per word.
    whole_extra: bool,
    /// Long CJK words may be cut (see the module docs): the encoder's table holds exactly
    /// the tokens merges make (`vocab_lookup`, and no merge makes an `extra` token), and
    /// every byte is a symbol (no unknown-token runs).
    cuts: bool,
}

impl Default for Paths {
    fn default() -> Self {
        Paths {
            vocab_lookup: false,
            engine: false,
            extra: FxHashMap::default(),
            extra_first: [false; 256],
            whole_extra: false,
            cuts: false,
        }
    }
}

/// Whether `id` is not among the sorted `ids` (most ids are below the first: the tokens BPE
/// does not reach are special tokens, which come last).
#[inline(always)]
fn not_among(ids: &[u32], id: u32) -> bool {
    ids.first().is_none_or(|&lo| id < lo) || ids.binary_search(&id).is_err()
}

#[inline]
fn key(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// What both BPE models read from a `tokenizer.json`'s `model` object.
pub(super) struct BpeJson {
    /// Token text -> id.
    pub vocab: FxHashMap<String, u32>,
    pub max_id: u32,
    /// (left id, right id) -> (rank, merged id); a pair listed twice keeps its last line,
    /// as HF's map keeps the last insert.
    pub merges: FxHashMap<u64, (u32, u32)>,
    pub unk: Option<u32>,
    pub fuse_unk: bool,
    pub ignore_merges: bool,
    pub byte_fallback: bool,
    /// `end_of_word_suffix` where it is not empty (CLIP's `</w>`).
    pub suffix: Option<String>,
    /// `continuing_subword_prefix` where it is not empty (`##`): every char of a word but the
    /// first is looked up with it in front.
    pub prefix: Option<String>,
}

impl BpeJson {
    /// The `model` object of a BPE `tokenizer.json`: dropout refused by name, the vocab,
    /// merges and unknown token checked.
    pub(super) fn parse(m: &Value) -> Result<BpeJson> {
        let kind = m.get("type").and_then(Value::as_str).unwrap_or("BPE");
        if kind != "BPE" {
            return Err(unsupported(&format!("model {kind}")));
        }
        // HF samples merges away with a dropout above 0 (0 is plain BPE).
        if m.get("dropout")
            .is_some_and(|d| !d.is_null() && d.as_f64() != Some(0.0))
        {
            return Err(unsupported("BPE dropout (non-deterministic ids)"));
        }
        let affix = |k: &str| m.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
        let prefix = affix("continuing_subword_prefix").map(str::to_owned);
        let suffix = affix("end_of_word_suffix").map(str::to_owned);
        let vocab_json = m
            .get("vocab")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("the BPE model has no vocab"))?;
        let mut vocab: FxHashMap<String, u32> = FxHashMap::default();
        vocab.reserve(vocab_json.len());
        let mut max_id = 0u32;
        for (t, id) in vocab_json {
            let id = id
                .as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .filter(|&i| i < NONE)
                .ok_or_else(|| bad(&format!("token {t:?} has no valid id")))?;
            max_id = max_id.max(id);
            vocab.insert(t.clone(), id);
        }
        let merges_json = m
            .get("merges")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("the BPE model has no merges list"))?;
        let mut merges: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
        merges.reserve(merges_json.len());
        let mut merged = String::new();
        for (rank, mv) in merges_json.iter().enumerate() {
            let (a, b) = match mv {
                Value::String(s) => s
                    .split_once(' ')
                    .ok_or_else(|| bad(&format!("merge {s:?} is not two tokens")))?,
                Value::Array(v) if v.len() == 2 => match (v[0].as_str(), v[1].as_str()) {
                    (Some(a), Some(b)) => (a, b),
                    _ => return Err(bad("a merge is not two strings")),
                },
                _ => return Err(bad("a merge is neither a string nor a pair")),
            };
            let look = |t: &str| {
                vocab
                    .get(t)
                    .copied()
                    .ok_or_else(|| bad(&format!("merge token {t:?} is not in the vocab")))
            };
            let (ia, ib) = (look(a)?, look(b)?);
            merged.clear();
            merged.push_str(a);
            // With a prefix HF makes `a` + `b` without its first `prefix.len()` bytes,
            // whether or not `b` starts with the prefix (and panics where `b` is shorter, or
            // the cut falls inside a char).
            let cut = prefix.as_ref().map_or(0, String::len);
            merged.push_str(b.get(cut..).ok_or_else(|| {
                bad(&format!(
                    "merge {a:?} {b:?}: {b:?} is shorter than the continuing_subword_prefix, or \
                     it ends inside a char of it"
                ))
            })?);
            let new_id = look(&merged)?;
            merges.insert(key(ia, ib), (rank as u32, new_id));
        }
        let unk = match m.get("unk_token").and_then(Value::as_str) {
            Some(u) => Some(
                vocab
                    .get(u)
                    .copied()
                    .ok_or_else(|| bad(&format!("unk_token {u:?} is not in the vocab")))?,
            ),
            None => None,
        };
        Ok(BpeJson {
            vocab,
            max_id,
            merges,
            unk,
            fuse_unk: m.get("fuse_unk").and_then(Value::as_bool) == Some(true),
            ignore_merges: m.get("ignore_merges").and_then(Value::as_bool) == Some(true),
            byte_fallback: m.get("byte_fallback").and_then(Value::as_bool) == Some(true),
            suffix,
            prefix,
        })
    }
}

impl HfBpe {
    /// The model of a `tokenizer.json` (`model` object). Only byte-level BPE without dropout,
    /// byte fallback or a subword prefix is accepted; anything else is refused by name.
    #[cfg(test)]
    pub fn from_json(m: &Value) -> Result<(HfBpe, FxHashMap<String, u32>)> {
        Self::new(BpeJson::parse(m)?)
    }

    /// [`HfBpe::from_json`] from the parsed model.
    pub(super) fn new(parsed: BpeJson) -> Result<(HfBpe, FxHashMap<String, u32>)> {
        let BpeJson {
            vocab,
            max_id,
            merges,
            unk,
            fuse_unk,
            ignore_merges,
            byte_fallback,
            suffix,
            prefix,
        } = parsed;
        if prefix.is_some() {
            return Err(unsupported(
                "BPE continuing_subword_prefix with a ByteLevel pre-tokenizer",
            ));
        }
        if byte_fallback {
            return Err(unsupported(
                "BPE byte_fallback with a ByteLevel pre-tokenizer (SentencePiece BPE has none)",
            ));
        }
        let mut by_bytes: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        by_bytes.reserve(vocab.len());
        let mut byte_id = [NONE; 256];
        for (t, &id) in &vocab {
            if let Some(b) = token_bytes(t) {
                if b.len() == 1 {
                    byte_id[b[0] as usize] = id;
                }
                if !b.is_empty() {
                    by_bytes.insert(b.into_boxed_slice(), id);
                }
            }
        }
        let suffix: Box<[u8]> = match &suffix {
            None => Box::default(),
            Some(s) => token_bytes(s)
                .ok_or_else(|| {
                    unsupported("BPE end_of_word_suffix outside the byte-level alphabet")
                })?
                .into_boxed_slice(),
        };
        let mut suffix_id = [NONE; 256];
        if !suffix.is_empty() {
            let mut t = vec![0u8; 1 + suffix.len()];
            t[1..].copy_from_slice(&suffix);
            for (b, id) in suffix_id.iter_mut().enumerate() {
                t[0] = b as u8;
                *id = by_bytes.get(&t[..]).copied().unwrap_or(NONE);
            }
        }
        let whole = Reached::new(max_id as usize + 1);
        let mut token_lens = vec![0u32; max_id as usize + 1].into_boxed_slice();
        for (b, &id) in &by_bytes {
            token_lens[id as usize] = b.len() as u32;
        }
        if let Some(u) = unk {
            token_lens[u as usize] = 0;
        }
        let table = MergeTable::new(&merges, &byte_id);
        Ok((
            HfBpe {
                by_bytes,
                byte_id,
                suffix,
                suffix_id,
                token_lens,
                merges,
                table,
                ignore_merges,
                unk,
                fuse_unk,
                whole,
                cache: PieceCache::new(),
                paths: Paths::default(),
                cuts: ProcessOnce::new(),
                whole_built: AtomicBool::new(false),
                unreached: OnceLock::new(),
            },
            vocab,
        ))
    }

    /// Which fast paths are on: `"vocab_lookup"`, `"engine"` (see [`Paths`]).
    pub fn paths(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.paths.vocab_lookup {
            v.push("vocab_lookup");
        }
        if self.paths.engine {
            v.push("engine");
        }
        v
    }

    /// Builds now what encoding otherwise builds at its first need: the cut tables (where
    /// words are cut) and, where a whole-token word must be reached by BPE (no
    /// `ignore_merges`), the answer for every token, in parallel.
    pub fn build_tables(&self, vocab: &BpeVocab) {
        if self.paths.cuts {
            self.cuts.get_or_init(|| CharCuts::cuts_only(vocab));
        }
        if self.asks_whole() {
            let tokens: Vec<(&[u8], u32)> =
                self.by_bytes.iter().map(|(t, &id)| (&t[..], id)).collect();
            crate::runtime::pool::parallel(|| {
                use rayon::prelude::*;
                let mut unreached: Vec<u32> = tokens
                    .par_iter()
                    .filter(|&&(t, id)| !self.reaches_one(id, t))
                    .map(|&(_, id)| id)
                    .collect();
                if unreached.len() <= MAX_UNREACHED {
                    unreached.sort_unstable();
                    let _ = self.unreached.set(unreached.into_boxed_slice());
                }
            });
            self.whole_built.store(true, Ordering::Relaxed);
        }
    }

    /// Which of [`HfBpe::build_tables`]'s tables apply here, and whether each is built.
    pub fn tables_built(&self) -> Vec<(&'static str, bool)> {
        let mut v = Vec::new();
        if self.paths.cuts {
            v.push(("hf cuts", self.cuts.get().is_some()));
        }
        if self.asks_whole() {
            v.push(("hf whole tokens", self.whole_built.load(Ordering::Relaxed)));
        }
        v
    }

    /// Whether encoding asks if BPE reaches a token from its own bytes (see `whole`): not
    /// with `ignore_merges` (a word that is a token is that token), nor with a suffix (a
    /// word is merged, then cached), but for the parts of cut words.
    fn asks_whole(&self) -> bool {
        !self.ignore_merges && self.suffix.is_empty() || self.paths.cuts
    }

    pub fn cache(&self) -> Local<'_> {
        self.cache.local()
    }

    /// Decides, once the encoder's [`Vocab`] is built from the same vocabulary, which of
    /// ferrotok's fast paths give HF's ids here (see [`Paths`]).
    pub fn choose_paths(&mut self, vocab: &Vocab) -> Result<()> {
        // With a suffix a word's symbols are not its bytes' tokens: none of the paths apply.
        if !self.suffix.is_empty() {
            return Ok(());
        }
        // The vocab's ordinary tokens are the model's byte-level ones, same ids, but for the
        // model's tokens that are special added tokens (`extra`: looked up on their own).
        let mut extra: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        for (b, &id) in &self.by_bytes {
            match vocab.rank(b) {
                Some(r) if r == id => {}
                None => {
                    extra.insert(b.clone(), id);
                }
                Some(_) => return Ok(()),
            }
        }
        if vocab.n_ordinary() + extra.len() != self.by_bytes.len() {
            return Ok(());
        }
        let extra_ids: rustc_hash::FxHashSet<u32> = extra.values().copied().collect();
        for b in extra.keys() {
            self.paths.extra_first[b[0] as usize] = true;
        }
        self.paths.whole_extra = self.ignore_merges && !extra.is_empty();
        self.paths.extra = extra;
        self.paths.vocab_lookup = true;
        self.paths.cuts = self.byte_id.iter().all(|&id| id != NONE)
            && !self.merges.values().any(|(_, id)| extra_ids.contains(id));
        // The engine has no rule for a byte without a token (HF drops it, or gives the
        // unknown token): a word holding one is refused by the engine and merged HF's way
        // (`encode_word_engine`). No token holds such a byte, so the argument below, on
        // the words of the other bytes, is unchanged.
        // tiktoken's rule gives HF's merges on every word when (C2) merge ranks rise with
        // the merged token's id and (C1) for every token t that tiktoken's rule reaches from
        // t's bytes alone, its last merge there is a listed merge making t.
        //
        // Why: at any time, the bytes of two adjacent parts have been merged only inside,
        // each merge the lowest and leftmost among their own pairs when made; so they went
        // through tiktoken's rule on those bytes alone, and stand in its one state of two
        // parts. Hence every pair of parts making t at a time is that state's pair: tiktoken
        // only ever merges pairs that C1 lists, and all its pairs making t share one split.
        // HF's candidates are listed merges (each makes the token its parts spell, also a
        // candidate of tiktoken's), so in a state both have reached, tiktoken's lowest pair
        // (making the lowest id, t) is listed, HF ranks it below every merge making a higher
        // id (C2), and the pairs making t are one merge, of which both take the leftmost. By
        // induction on the merges, both make the same ones in the same order. (The splits of
        // a token may be ranked in any order among themselves:
        // `hf_merging_is_tiktokens_rule_where_c1_and_c2_hold`.)
        //
        // Without `ignore_merges` a word that is a token t is HF's merging of its bytes,
        // while the engine answers t: so every token must be reached (by either rule, the
        // same), but the extra tokens, which the engine does not know.
        let mut by_rank: Vec<(u32, u32)> = self.merges.values().copied().collect();
        by_rank.sort_unstable();
        if by_rank.windows(2).any(|w| w[1].1 < w[0].1) {
            return Ok(());
        }
        // The engine does not know the extra tokens: no merge may touch one.
        if self.merges.iter().any(|(&k, &(_, id))| {
            extra_ids.contains(&id)
                || extra_ids.contains(&((k >> 32) as u32))
                || extra_ids.contains(&(k as u32))
        }) {
            return Ok(());
        }
        // C1 (and reach), token by token, in parallel: the last merge of tiktoken's rule on
        // each token's bytes must be a listed merge making it; a token the rule does not
        // reach is allowed only with `ignore_merges`. (Without the pair filter: the tables
        // are built when encoding needs them, not at load.)
        let tokens: Vec<(&[u8], u32)> = self.by_bytes.iter().map(|(t, &id)| (&t[..], id)).collect();
        let c1 = crate::runtime::pool::parallel(|| {
            use rayon::prelude::*;
            tokens
                .par_iter()
                .map_init(
                    || (Vec::new(), Vec::new()),
                    |scratch, &(t, id)| {
                        if t.len() < 2 || extra_ids.contains(&id) {
                            return true;
                        }
                        match last_merge(vocab, None, t, scratch) {
                            Some(Some((a, b))) => self
                                .merges
                                .get(&key(a, b))
                                .is_some_and(|&(_, made)| made == id),
                            _ => self.ignore_merges,
                        }
                    },
                )
                .all(|listed| listed)
        });
        self.paths.engine = c1;
        Ok(())
    }

    /// Appends the ids of word `w` to `out` (see the module docs). `text` holds `w` (the
    /// engine reads ahead of a word in it); `cache` remembers words merged here,
    /// `engine_cache` those of ferrotok's engine.
    #[inline]
    pub fn encode_word(
        &self,
        vocab: &BpeVocab,
        text: &[u8],
        w: &[u8],
        cache: &mut Local<'_>,
        engine_cache: &mut Local<'_>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        if self.paths.engine {
            return self.encode_word_engine(vocab, text, w, engine_cache, out);
        }
        self.encode_word_merging(vocab, text, w, cache, out)
    }

    /// Whether [`HfBpe::encode_word`] takes the engine's path (see the module docs).
    #[inline]
    pub fn on_engine(&self) -> bool {
        self.paths.engine
    }

    /// [`HfBpe::encode_word`] off the engine: HF's merging, with this model's cache. `text`
    /// holds `w`.
    #[inline]
    pub fn encode_word_merging(
        &self,
        vocab: &BpeVocab,
        text: &[u8],
        w: &[u8],
        cache: &mut Local<'_>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let whole = if !self.suffix.is_empty() {
            // With `ignore_merges` HF looks the bare word up. Else a word that is a token
            // with the suffix is merged once, like any word, and then found in the cache.
            if self.ignore_merges {
                self.by_bytes.get(w).copied()
            } else {
                None
            }
        } else if self.paths.vocab_lookup {
            // A word of at most 8 bytes is keyed by one load from the text (no branch on its
            // length, which a word-by-word byte gathering mispredicts).
            let r = match key_in(text, w) {
                Some(key) => vocab.short_rank_key(key, w.len()),
                None => vocab.rank(w),
            };
            r.or_else(|| {
                if self.paths.extra_first[w[0] as usize] {
                    self.paths.extra.get(w).copied()
                } else {
                    None
                }
            })
        } else {
            self.by_bytes.get(w).copied()
        };
        if let Some(id) = whole {
            if self.ignore_merges || self.reaches(id, w) {
                out.push(id);
                return Ok(());
            }
        }
        let h = hash_bytes(w);
        if cache.get(w, h, out) {
            return Ok(());
        }
        if self.paths.cuts && w.len() > 8 && ends_in_char_from_u1000(w) {
            let cuts = self.cuts.get_or_init(|| CharCuts::cuts_only(vocab));
            if let Some(cuts) = cuts {
                // A cut word is seldom met again whole: its parts are cached, not it.
                let cut = cuts.parts(w, |part, _, _| {
                    self.encode_part(vocab, part, cache, out);
                    Ok::<(), ()>(())
                });
                if cut == Ok(true) {
                    return Ok(());
                }
            }
        }
        self.merge_into_cache(w, h, cache, out);
        Ok(())
    }

    /// Merges `w` (whose hash is `h`) onto `out` and keeps its ids in `cache`.
    #[inline]
    fn merge_into_cache(&self, w: &[u8], h: u64, cache: &mut Local<'_>, out: &mut Vec<u32>) {
        let start = out.len();
        self.merge(w, out, None);
        cache.put(w, h, &out[start..]);
    }

    /// Appends the ids of `part`, a part of a cut word: BPE proper (a part that is a token is
    /// that token only if BPE reaches it, `ignore_merges` or not: it is not a word).
    fn encode_part(
        &self,
        vocab: &BpeVocab,
        part: &[u8],
        cache: &mut Local<'_>,
        out: &mut Vec<u32>,
    ) {
        if let Some(id) = vocab.rank(part) {
            if self.reaches(id, part) {
                out.push(id);
                return;
            }
        }
        let h = hash_bytes(part);
        if !cache.get(part, h, out) {
            self.merge_into_cache(part, h, cache, out);
        }
    }

    /// [`HfBpe::encode_word`] where ferrotok's engine gives HF's ids (see
    /// [`HfBpe::choose_paths`]): with `ignore_merges` the model's extra tokens (without, HF
    /// merges such a word, as the engine does), then the engine with its cache; a word
    /// holding a byte with no token, which the engine refuses, by HF's merging.
    #[inline(always)]
    pub fn encode_word_engine(
        &self,
        vocab: &BpeVocab,
        text: &[u8],
        w: &[u8],
        engine_cache: &mut Local<'_>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        self.on_engine_or_merged(w, out, |out| {
            encode_piece_in(vocab, text, w, engine_cache, out)
        })
    }

    /// [`HfBpe::encode_word_engine`] for a word whose short-table home slot was looked at
    /// already and did not answer, with its key (`short_table::key_in` its text) if it has one.
    #[inline(always)]
    pub fn encode_word_keyed(
        &self,
        vocab: &BpeVocab,
        w: &[u8],
        key: Option<u64>,
        engine_cache: &mut Local<'_>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        self.on_engine_or_merged(w, out, |out| {
            encode_piece_keyed(vocab, w, key, engine_cache, out)
        })
    }

    /// `engine` (the engine's ids of `w`) around the word steps' common ends: an extra token
    /// first, and HF's merging for a word with a byte the engine has no token for.
    #[inline(always)]
    fn on_engine_or_merged(
        &self,
        w: &[u8],
        out: &mut Vec<u32>,
        engine: impl FnOnce(&mut Vec<u32>) -> Result<()>,
    ) -> Result<()> {
        if self.paths.whole_extra && self.paths.extra_first[w[0] as usize] {
            if let Some(&id) = self.paths.extra.get(w) {
                out.push(id);
                return Ok(());
            }
        }
        let start = out.len();
        match engine(out) {
            Err(Error::MissingByte(_)) => {
                out.truncate(start);
                self.merge(w, out, None);
                Ok(())
            }
            done => done,
        }
    }

    /// Whether [`HfBpe::encode_word_merging`] finds a word's whole token in the encoder's
    /// vocabulary (no suffix, and the vocabulary holds exactly the model's byte-level tokens:
    /// see [`Paths::vocab_lookup`]).
    #[inline]
    pub fn words_by_vocab(&self) -> bool {
        self.suffix.is_empty() && self.paths.vocab_lookup
    }

    /// Whether a word that is token `id` is that token, as far as known without its bytes:
    /// with `ignore_merges` always; else if BPE reaches `id`, by [`HfBpe::build_tables`]'s
    /// list or, before it, by the answer for `id` found at an earlier word (`false` where not
    /// known yet: the word step then finds it).
    #[inline(always)]
    pub fn whole_word_is(&self, id: u32) -> bool {
        self.ignore_merges
            || match self.unreached.get() {
                Some(ids) => not_among(ids, id),
                None => self.whole.known_yes(id),
            }
    }

    /// Whether BPE on `w` (the bytes of token `id`) gives `id` alone.
    #[inline]
    fn reaches(&self, id: u32, w: &[u8]) -> bool {
        match self.unreached.get() {
            Some(ids) => not_among(ids, id),
            None => self.reaches_one(id, w),
        }
    }

    /// [`HfBpe::reaches`] by the token's own answer in `whole`, computed at its first need.
    fn reaches_one(&self, id: u32, w: &[u8]) -> bool {
        self.whole.get(id, |ids| self.merge(w, ids, None))
    }

    /// [`HfBpe::encode_word`] with the byte length of each id (for offsets). An id's length
    /// is its token's (`token_lens`), so the fast paths and caches serve; a word holding an
    /// id whose length that does not tell (the unknown token, which stands for the bytes it
    /// replaced) is merged again by HF's merging, which tracks lengths itself. A byte that
    /// has no id and no unknown token is dropped by both, as HF drops it.
    #[allow(clippy::too_many_arguments)]
    pub fn encode_word_with_lens(
        &self,
        vocab: &BpeVocab,
        text: &[u8],
        w: &[u8],
        cache: &mut Local<'_>,
        engine_cache: &mut Local<'_>,
        out: &mut Vec<u32>,
        lens: &mut Vec<u32>,
    ) -> Result<()> {
        if !self.suffix.is_empty() {
            // A word's last token stands for its bytes less the suffix, but a token found
            // whole with `ignore_merges` has none: HF's merging counts them.
            self.merge_with_lens(w, out, lens);
            return Ok(());
        }
        let start = out.len();
        self.encode_word(vocab, text, w, cache, engine_cache, out)?;
        let n = lens.len();
        lens.extend(out[start..].iter().map(|&id| self.token_len(id)));
        if lens[n..].iter().all(|&l| l != 0) {
            return Ok(());
        }
        out.truncate(start);
        lens.truncate(n);
        self.merge_with_lens(w, out, lens);
        Ok(())
    }

    /// The byte count id `id` stands for in a word (see `token_lens`), 0 if not known.
    #[inline]
    fn token_len(&self, id: u32) -> u32 {
        self.token_lens.get(id as usize).copied().unwrap_or(0)
    }

    /// Where HF places each token of `w` (given by `lens`, the byte counts of
    /// [`HfBpe::encode_word_with_lens`]) when a byte of `w` has no id and no unknown token
    /// stands for it: as ranges of `w`'s bytes. HF drops such a byte's char from the word
    /// without counting its length, so every symbol after it sits that char's UTF-8 length
    /// (1 or 2 bytes in the byte-level alphabet) early in the byte-level string; a token's
    /// range there is read back to the bytes of `w` whose chars hold its first and last
    /// byte. `None` where the lengths are the places (every byte has an id, or an unknown
    /// token covers the others).
    pub fn hf_ranges_with_missing(&self, w: &[u8], lens: &[u32]) -> Option<Vec<(usize, usize)>> {
        // The ids cover every byte of `w` (the common case, told without a look at each
        // byte), or an unknown token stands for the others.
        let covered: usize = lens.iter().map(|&l| l as usize).sum();
        if self.unk.is_some() || covered == w.len() {
            return None;
        }
        let has = |b: u8| self.byte_id[b as usize] != NONE;
        let present: Vec<usize> = (0..w.len()).filter(|&j| has(w[j])).collect();
        if covered != present.len() || lens.contains(&0) {
            return None; // a whole-word token (its bytes need no single-byte ids)
        }
        let width = |b: u8| char_of(b).len_utf8();
        // The byte-level string's offset of each byte of `w`'s char, and its end.
        let mut starts = Vec::with_capacity(w.len() + 1);
        let mut at = 0;
        for &b in w {
            starts.push(at);
            at += width(b);
        }
        starts.push(at);
        let byte_at = |pos: usize| starts.partition_point(|&s| s <= pos) - 1;
        let (mut pos, mut k) = (0usize, 0usize);
        let mut out = Vec::with_capacity(lens.len());
        for &len in lens {
            let len = len as usize;
            let l: usize = present[k..k + len].iter().map(|&j| width(w[j])).sum();
            k += len;
            out.push((byte_at(pos), byte_at(pos + l - 1) + 1));
            pos += l;
        }
        Some(out)
    }

    /// The ids of `w` with the byte length of each, by HF's merging: no cache.
    fn merge_with_lens(&self, w: &[u8], out: &mut Vec<u32>, lens: &mut Vec<u32>) {
        if self.ignore_merges {
            if let Some(&id) = self.by_bytes.get(w) {
                out.push(id);
                lens.push(w.len() as u32);
                return;
            }
        }
        self.merge(w, out, Some(lens));
    }

    /// [`HfBpe::merge`] for a short word of bytes that are all in the vocabulary, without
    /// the heap: `word.rs`'s scan (the same merges in the same order as the heap's), its
    /// first keys from the dense table of byte pairs. `false` (nothing pushed) if a byte has
    /// no id or the word is too long.
    #[inline]
    fn merge_short(&self, w: &[u8], out: &mut Vec<u32>) -> bool {
        // Most words are short: their arrays are cheaper to set up.
        if w.len() <= 16 {
            self.merge_short_in::<16, 32>(w, out)
        } else {
            self.merge_short_in::<64, 128>(w, out)
        }
    }

    /// Words of at most `MAX` bytes, in arrays of `ROOM = 2 * MAX` (see `scan_merge`).
    #[inline(always)]
    fn merge_short_in<const MAX: usize, const ROOM: usize>(
        &self,
        w: &[u8],
        out: &mut Vec<u32>,
    ) -> bool {
        debug_assert_eq!(ROOM, 2 * MAX);
        let n = w.len();
        if n > MAX {
            return false;
        }
        let mut ids = [0u32; ROOM];
        for (slot, &b) in ids.iter_mut().zip(w) {
            let id = self.byte_id[b as usize];
            if id == NONE {
                return false;
            }
            *slot = id;
        }
        let t = &self.table;
        let mut keys = [NONE; ROOM];
        for (k, p) in keys.iter_mut().zip(w.windows(2)) {
            *k = t.bytes(p[0], p[1]);
        }
        let len = scan_merge::<MAX, ROOM>(t, &mut ids, &mut keys, None, n);
        out.extend_from_slice(&ids[..len]);
        true
    }

    /// HF's `merge_word` + `Word::merge_all` (see `word.rs`), a symbol a byte (the last
    /// one with the suffix after it, where there is one).
    fn merge(&self, w: &[u8], out: &mut Vec<u32>, lens: Option<&mut Vec<u32>>) {
        if lens.is_none() && self.suffix.is_empty() && self.merge_short(w, out) {
            return;
        }
        let mut syms = Symbols::new();
        let last = w.len().wrapping_sub(1);
        for (i, &b) in w.iter().enumerate() {
            let id = if i == last && !self.suffix.is_empty() {
                self.suffix_id[b as usize]
            } else {
                self.byte_id[b as usize]
            };
            if id != NONE {
                syms.known(id, 1);
            } else if let Some(u) = self.unk {
                syms.unknown(u, 1, self.fuse_unk);
            }
        }
        syms.merge_into(&self.table, out, lens);
    }
}

#[cfg(test)]
#[path = "bpe_model_tests.rs"]
mod tests;
