//! SentencePiece BPE as HuggingFace's `BPE` model runs it where no pre-tokenizer cuts the
//! text (Llama 2, Mistral 7B: the normalizers put `▁` for each space and in front of the
//! text, and the model merges chars, not bytes). The same model runs on each pre-token where
//! a pre-tokenizer without `ByteLevel` cuts the text (HF's quicktour: `Whitespace`); the
//! pipeline then hands it one pre-token at a time as the segment.
//!
//! Invariant: `encode_into(s)` appends HF's `BPE::tokenize(s)` ids for a whole normalized
//! segment `s`, and `encode_with_lens` each id's byte count in `s`: a symbol a char (its
//! token; else, with `byte_fallback`, its UTF-8 bytes' `<0xHH>` tokens if all exist; else the
//! unknown token, consecutive ones fused with `fuse_unk`; else nothing), merged by HF's pair
//! ranks (`word.rs`). With `ignore_merges`, a segment that is a token is that token. With a
//! `continuing_subword_prefix` every char but a word's first is looked up with it in front,
//! with an `end_of_word_suffix` the last with it after (and a word is then never cut).
//!
//! Why the segment is cut into words: HF merges the whole segment as one word, a heap over
//! every char of the text. But no merge joins two symbols across a boundary that no token
//! spans (every merge makes a token), and each side of such a boundary merges as it would
//! alone (the argument of `encode/bpe/char_cuts.rs`). Where no token holds a char other than
//! `▁` right before a `▁` (checked at load; so in every shared model), the boundary before
//! each `▁` that follows another char is such a boundary: no token spans it, and the last
//! symbol before it (a char's token, a `<0xHH>` or the unknown token) ends in a char other
//! than `▁`. The unknown token also waits for no symbol across it: `▁` is a token, and adds
//! the pending one. So the segment is cut there into words (`▁the`, `▁▁▁▁if`), each merged
//! once and then found in the piece cache, as a byte-level model's pre-tokens are.
//!
//! A word too long for the piece cache (a line of CJK text has no spaces), and one the cache
//! does not hold, is cut further, by the same argument, between two chars `a`, `b` that both
//! are tokens where no token holds `ab`: the symbols beside the cut are `a`'s and `b`'s
//! tokens, and a merge across it would make a token holding `ab`. (Next to a char that is no
//! token, whose bytes or unknown token stand for it, nothing is cut.) Its parts merge as it
//! would, and repeat where it does not (`▁word,` is `▁word` and `,`). A long word that starts
//! with `▁`s (code's indented words) is also cached whole, under a shorter key
//! ([`compact_key`]); whole-token words are cached too, so the cache answers most words.

use super::merge_table::{MergeTable, NONE};
use super::normalizers::bad;
use super::word::{Reached, Symbols};
use crate::encode::bpe::piece_cache::{Local, PieceCache, MAX_PIECE};
use crate::encode::pretok::classes::decode_multibyte;
use crate::error::Result;
use crate::runtime::process_once::ProcessOnce;
use crate::vocab::token_table::hash_bytes;
use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// SentencePiece's meta symbol for a space, `▁` (U+2581), as UTF-8.
const META: &[u8] = "\u{2581}".as_bytes();

#[inline]
fn pair_key(a: char, b: char) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// The piece cache's key for `w`, a word of over [`MAX_PIECE`] bytes that starts with `▁`:
/// a byte 0xFF, the count of `▁`s it starts with, then the rest, where that fits in
/// `MAX_PIECE` bytes (`buf`); else `None`.
///
/// Why: `▁` is three bytes, so code's indented words (`▁▁▁▁▁▁▁▁▁▁▁▁return`) are too long for
/// the cache by their text, and no token-free boundary cuts them: each was merged at every
/// meeting. In 0.5 MB of the shared code, 8,991 of 30,222 words are over 32 bytes, 5,752 of
/// them (2,018 distinct) with a key.
///
/// Distinct words have distinct keys, and no key is the text of a word: 0xFF is in no UTF-8
/// text, and a key gives back the count of `▁`s and the rest.
fn compact_key<'a>(w: &[u8], buf: &'a mut [u8; MAX_PIECE]) -> Option<&'a [u8]> {
    let mut k = 0;
    while w[k * META.len()..].starts_with(META) {
        k += 1;
    }
    let rest = &w[k * META.len()..];
    let n = 2 + rest.len();
    if k == 0 || n > MAX_PIECE {
        return None;
    }
    buf[0] = 0xFF;
    buf[1] = u8::try_from(k).ok()?;
    buf[2..n].copy_from_slice(rest);
    Some(&buf[..n])
}

pub struct SentencePieceBpe {
    /// Token text (UTF-8) -> id.
    by_text: FxHashMap<Box<[u8]>, u32>,
    /// The id of each ASCII char's token, or `NONE`.
    ascii_id: [u32; 256],
    /// The id of each other char that is a token.
    char_id: FxHashMap<char, u32>,
    /// With `byte_fallback`: the id of `<0xHH>` for each byte, or `NONE`.
    byte_tokens: Option<Box<[u32; 256]>>,
    unk: Option<u32>,
    fuse_unk: bool,
    ignore_merges: bool,
    table: MergeTable,
    /// Per id, the bytes of the normalized text its token stands for: its text's length, 1
    /// for a `<0xHH>` token, 0 for the unknown token (which stands for what it replaced) and
    /// for every token of a model with a subword prefix or suffix (0: found by merging).
    token_lens: Box<[u32]>,
    /// Per id: whether BPE on the token's text gives the token.
    whole: Reached,
    /// Set once [`SentencePieceBpe::build_tables`] has filled `whole` for every token.
    whole_built: AtomicBool,
    /// Whether the segment may be cut before each `▁` that follows another char (see the
    /// module docs).
    cut_at_meta: bool,
    /// Whether the pre-tokenizer cuts before every `▁` (`Metaspace` with `split`): HF's own
    /// pieces, each a word whatever the vocabulary.
    split_all: bool,
    /// Each pair of adjacent chars within a token, as `(a << 32) | b`: where a long word may
    /// not be cut. Built at the first word that may be cut, or by `build_tables`.
    pairs: ProcessOnce<rustc_hash::FxHashSet<u64>>,
    cache: PieceCache,
    /// `end_of_word_suffix` (HerBERT's and OpenAI GPT's `</w>`): the last char of a word is
    /// looked up with it after it, so the token a word ends in carries it. Words are then
    /// never cut (a part would end in a char without it), nor answered whole.
    suffix: Option<Box<str>>,
    /// `continuing_subword_prefix` (`##`): every char of a word but the first is looked up
    /// with it in front. Words are then never cut either (a part after the first would start
    /// with a char without it).
    prefix: Option<Box<str>>,
    /// Whether a newline's symbol (its token, else its `<0x0A>`) exists and is in no merge
    /// (see [`SentencePieceBpe::keeps_newline_cuts`]).
    newline_stays: bool,
}

/// The byte of a byte fallback token's text (`<0x0A>`: HF writes `format!("<{b:#04X}>")`).
pub fn fallback_byte(t: &str) -> Option<u8> {
    let hex = t.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2
        || !hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c))
    {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The byte HF's `ByteFallback` decoder reads from a token's text: 6 bytes, `<0x`, two that
/// `u8::from_str_radix(_, 16)` takes (either case, or `+` and a digit), `>`. Looser than
/// [`fallback_byte`], the spelling the model looks up.
pub fn decoded_byte(t: &str) -> Option<u8> {
    if t.len() != 6 || !t.starts_with("<0x") || !t.ends_with('>') {
        return None;
    }
    u8::from_str_radix(t.get(3..5)?, 16).ok()
}

impl SentencePieceBpe {
    /// The model of a BPE `tokenizer.json` with no pre-tokenizer (see [`super::bpe_model::BpeJson`]).
    /// `split_all`: the pre-tokenizer cuts before every `▁` (see the field). Returns the
    /// model and the file's vocabulary (token text -> id), as `HfBpe::new` does.
    pub(super) fn new(
        m: super::bpe_model::BpeJson,
        split_all: bool,
    ) -> Result<(SentencePieceBpe, FxHashMap<String, u32>)> {
        let super::bpe_model::BpeJson {
            vocab,
            max_id,
            merges,
            unk,
            fuse_unk,
            ignore_merges,
            byte_fallback,
            suffix,
            prefix,
        } = m;
        if suffix.is_some() && byte_fallback {
            // HF falls back to the bytes of the last char and the suffix, each counted a byte
            // of the word; no published model has both.
            return Err(super::normalizers::unsupported(
                "BPE end_of_word_suffix with byte_fallback",
            ));
        }
        if prefix.is_some() && byte_fallback {
            // The same with the prefix in front of a char.
            return Err(super::normalizers::unsupported(
                "BPE continuing_subword_prefix with byte_fallback",
            ));
        }
        // Words are cut, or answered by their parts, only where no affix is looked up.
        let affixed = suffix.is_some() || prefix.is_some();
        let mut ascii_id = [NONE; 256];
        let mut char_id = FxHashMap::default();
        let mut byte_tokens = byte_fallback.then(|| Box::new([NONE; 256]));
        let mut token_lens = vec![0u32; max_id as usize + 1].into_boxed_slice();
        let mut by_text = FxHashMap::default();
        by_text.reserve(vocab.len());
        // Whether a token holds a char other than `▁` right before a `▁`.
        let mut meta_after_other = false;
        for (t, &id) in &vocab {
            let mut chars = t.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                if c.is_ascii() {
                    ascii_id[c as usize] = id;
                } else {
                    char_id.insert(c, id);
                }
            }
            token_lens[id as usize] = t.len() as u32;
            if let (Some(bt), Some(b)) = (byte_tokens.as_deref_mut(), fallback_byte(t)) {
                bt[b as usize] = id;
                token_lens[id as usize] = 1;
            }
            let mut prev = None;
            for c in t.chars() {
                if c == '\u{2581}' && prev.is_some_and(|p| p != '\u{2581}') {
                    meta_after_other = true;
                }
                prev = Some(c);
            }
            if !t.is_empty() {
                by_text.insert(t.as_bytes().into(), id);
            }
        }
        if let Some(u) = unk {
            token_lens[u as usize] = 0;
        }
        if affixed {
            // A token's text is then not the text it stands for (`##a` and `a</w>` stand for
            // one byte): unknown here, so each word's lengths come from merging it again.
            // (Text lengths that summed to the word's by chance, `##A` for `\u{301}A`, once
            // placed a token where HF does not: after a dropped char, HF places it early.)
            token_lens.fill(0);
        }
        let unk_ends_in_meta = unk.is_some_and(|u| {
            vocab
                .iter()
                .any(|(t, &id)| id == u && t.ends_with('\u{2581}'))
        });
        let cut_at_meta =
            char_id.contains_key(&'\u{2581}') && !meta_after_other && !unk_ends_in_meta && !affixed;
        if vocab.is_empty() {
            return Err(bad("the BPE model's vocab is empty"));
        }
        if ignore_merges && split_all {
            // HF's whole-word look-up would be per piece, which no path here keeps apart.
            return Err(super::normalizers::unsupported(
                "BPE ignore_merges with a Metaspace pre-tokenizer that splits",
            ));
        }
        // A newline is its token, else its byte's token (HF looks the char up first); with
        // neither it would be the unknown token, which `fuse_unk` joins to its neighbours.
        let newline = vocab.get("\n").copied().or_else(|| {
            let b = byte_tokens.as_deref()?[usize::from(b'\n')];
            (b != NONE).then_some(b)
        });
        let newline_stays = newline.is_some_and(|n| {
            !merges
                .keys()
                .any(|&k| (k >> 32) as u32 == n || k as u32 == n)
        }) && !affixed;
        let table = MergeTable::new(&merges, &ascii_id);
        let model = SentencePieceBpe {
            by_text,
            ascii_id,
            char_id,
            byte_tokens,
            unk,
            fuse_unk,
            ignore_merges,
            table,
            token_lens,
            whole: Reached::new(max_id as usize + 1),
            whole_built: AtomicBool::new(false),
            cut_at_meta,
            split_all,
            pairs: ProcessOnce::new(),
            cache: PieceCache::new(),
            suffix: suffix.map(String::into_boxed_str),
            prefix: prefix.map(String::into_boxed_str),
            newline_stays,
        };
        Ok((model, vocab))
    }

    pub fn cache(&self) -> Local<'_> {
        self.cache.local()
    }

    /// Whether chars are looked up with an affix (a suffix or a prefix): words are then
    /// merged whole, never cut.
    #[inline]
    fn affixed(&self) -> bool {
        self.suffix.is_some() || self.prefix.is_some()
    }

    /// The paths on: `"cut_at_meta"` where segments are cut into words at `▁` after another
    /// char, `"split_all"` where the pre-tokenizer cuts before every `▁`.
    pub fn paths(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.cut_at_meta {
            v.push("cut_at_meta");
        }
        if self.split_all {
            v.push("split_all");
        }
        v
    }

    /// Builds now what encoding otherwise builds at its first need: the pairs of chars
    /// within tokens (where long words are cut) and, for every token, whether BPE on its
    /// text gives it (`whole`), in parallel. Like `HfBpe::build_tables`: for a program that
    /// forks workers, and for benchmarks that time encoding, not these first needs.
    pub fn build_tables(&self) {
        if self.affixed() {
            // Words are merged whole, then cached: neither is asked.
            return;
        }
        self.pairs();
        let tokens: Vec<(&[u8], u32)> = self.by_text.iter().map(|(t, &id)| (&t[..], id)).collect();
        crate::runtime::pool::parallel(|| {
            use rayon::prelude::*;
            tokens.par_iter().for_each(|&(t, id)| {
                self.reaches(id, t);
            });
        });
        self.whole_built.store(true, Ordering::Relaxed);
    }

    /// Which of [`SentencePieceBpe::build_tables`]'s tables are built.
    pub fn tables_built(&self) -> Vec<(&'static str, bool)> {
        if self.affixed() {
            return Vec::new();
        }
        vec![
            ("spm char pairs", self.pairs.get().is_some()),
            ("spm whole tokens", self.whole_built.load(Ordering::Relaxed)),
        ]
    }

    /// Each pair of adjacent chars within a token (see the field), built at its first need.
    fn pairs(&self) -> &rustc_hash::FxHashSet<u64> {
        self.pairs.get_or_init(|| {
            let mut set = rustc_hash::FxHashSet::default();
            for t in self.by_text.keys() {
                let t = std::str::from_utf8(t).unwrap_or_default();
                let mut prev: Option<char> = None;
                for c in t.chars() {
                    if let Some(p) = prev {
                        set.insert(pair_key(p, c));
                    }
                    prev = Some(c);
                }
            }
            set
        })
    }

    /// Calls `f` with each word of segment `s` (the whole segment if it may not be cut).
    #[inline]
    fn words(&self, s: &[u8], mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if !self.cut_at_meta && !self.split_all {
            return f(s);
        }
        let mut start = 0;
        for i in memchr::memchr_iter(META[0], s) {
            // A cut before this `▁` unless the char before it is `▁` too (which the
            // pre-tokenizer's own split cuts as well).
            if s[i..].starts_with(META) && i > start && (self.split_all || !s[..i].ends_with(META))
            {
                f(&s[start..i])?;
                start = i;
            }
        }
        if start < s.len() {
            f(&s[start..])?;
        }
        Ok(())
    }

    /// Appends the ids of normalized segment `s` (see the module docs).
    pub fn encode_into(&self, s: &str, cache: &mut Local<'_>, out: &mut Vec<u32>) -> Result<()> {
        if self.ignore_merges {
            if let Some(&id) = self.by_text.get(s.as_bytes()) {
                out.push(id);
                return Ok(());
            }
        }
        self.words(s.as_bytes(), |w| {
            self.encode_word(w, cache, out);
            Ok(())
        })
    }

    /// Whether [`SentencePieceBpe::encode_raw`] may serve: the segment is cut at `▁` and no
    /// whole-segment look-up (`ignore_merges`) needs the normalized text.
    pub fn raw_ok(&self) -> bool {
        (self.cut_at_meta || self.split_all) && !self.ignore_merges
    }

    /// Whether [`SentencePieceBpe::encode_raw`] of a segment cut just after a newline gives
    /// the ids of its two sides, the side after it without a `▁` in front: the newline's
    /// symbol is in no merge, so no merge joins it to a neighbour (a merge makes a token from
    /// two symbols side by side) and each side merges as it would alone (the argument of
    /// `encode/bpe/char_cuts.rs`). It is never the unknown token (which `fuse_unk` would
    /// join to an unknown char after it), and without `ignore_merges` (`raw_ok`) no look-up
    /// reads the whole segment. The raw path cuts words only at spaces and `▁`s, which the
    /// cut does not move.
    pub fn keeps_newline_cuts(&self) -> bool {
        self.newline_stays && self.raw_ok()
    }

    /// [`SentencePieceBpe::encode_into`] of segment `s` with each space made `▁` and, if
    /// `prefix`, a `▁` in front (SentencePiece's layout, by its normalizers or by `Metaspace`),
    /// where [`SentencePieceBpe::raw_ok`]: the words straight from `s`, without that copy. A
    /// `▁` of that text is the one in front, a space or a `▁` of `s`, so its words are cut
    /// before each space or `▁` of `s` that follows another char (or before every one, with
    /// `split_all`), and each is its text with spaces made `▁` (the first with the `▁` in
    /// front, if any).
    pub fn encode_raw(&self, s: &str, prefix: bool, cache: &mut Local<'_>, out: &mut Vec<u32>) {
        let b = s.as_bytes();
        let mut buf: Vec<u8> = Vec::new();
        // A word's spaces and `▁`s are a run at its start: the loop below cuts before any
        // that follows another char. So the run is rewritten and the rest copied as it is.
        let mut word = |start: usize, end: usize, buf: &mut Vec<u8>, out: &mut Vec<u32>| {
            buf.clear();
            if start == 0 && prefix {
                buf.extend_from_slice(META);
            }
            let mut i = start;
            while i < end {
                if b[i] == b' ' {
                    i += 1;
                } else if b[i..end].starts_with(META) {
                    i += META.len();
                } else {
                    break;
                }
                buf.extend_from_slice(META);
            }
            debug_assert!(!b[i..end].contains(&b' '), "a space after another char");
            buf.extend_from_slice(&b[i..end]);
            self.encode_word(buf, cache, out);
        };
        let (mut start, mut i) = (0, 0);
        // No cut comes before the first char (nor after a `▁` in front of it).
        let mut after_meta = true;
        while i < b.len() {
            let meta = match b[i] {
                b' ' => 1,
                0xE2 if b[i + 1..].starts_with(&META[1..]) => META.len(),
                _ => 0,
            };
            if meta == 0 {
                // On to the next byte that may start a space or a `▁`.
                after_meta = false;
                i = memchr::memchr2(b' ', META[0], &b[i + 1..]).map_or(b.len(), |k| i + 1 + k);
                continue;
            }
            if i > start && (self.split_all || !after_meta) {
                word(start, i, &mut buf, out);
                start = i;
            }
            after_meta = true;
            i += meta;
        }
        if start < b.len() {
            word(start, b.len(), &mut buf, out);
        }
    }

    /// [`SentencePieceBpe::encode_into`] with each id's byte count in `s` appended to `lens`,
    /// and with `split_all`, the number of ids at the end of each of HF's pieces to `pieces`.
    pub fn encode_with_lens(
        &self,
        s: &str,
        cache: &mut Local<'_>,
        out: &mut Vec<u32>,
        lens: &mut Vec<u32>,
        pieces: &mut Vec<usize>,
    ) -> Result<()> {
        if self.ignore_merges {
            if let Some(&id) = self.by_text.get(s.as_bytes()) {
                out.push(id);
                lens.push(s.len() as u32);
                return Ok(());
            }
        }
        self.words(s.as_bytes(), |w| {
            let (start, n) = (out.len(), lens.len());
            self.encode_word(w, cache, out);
            lens.extend(out[start..].iter().map(|&id| self.token_len(id)));
            let covered: usize = lens[n..].iter().map(|&l| l as usize).sum();
            if covered != w.len() || lens[n..].contains(&0) {
                // An unknown token (its length is what it replaced, which only merging
                // knows), or a token whose text is not what it stands for here (a
                // `<0xHH>` token's text met as text): merged again, lengths tracked.
                out.truncate(start);
                lens.truncate(n);
                self.merge(w, out, Some(lens));
            }
            if self.split_all {
                pieces.push(out.len());
            }
            Ok(())
        })
    }

    #[inline]
    fn token_len(&self, id: u32) -> u32 {
        self.token_lens.get(id as usize).copied().unwrap_or(0)
    }

    /// Appends the ids of word `w` (UTF-8, cut at `▁` as the module docs say); one too long
    /// for the cache is cut into parts first, and cached whole under its [`compact_key`]
    /// where it has one.
    #[inline]
    fn encode_word(&self, w: &[u8], cache: &mut Local<'_>, out: &mut Vec<u32>) {
        if w.len() <= MAX_PIECE || self.affixed() {
            return self.encode_part(w, cache, out);
        }
        let mut buf = [0u8; MAX_PIECE];
        let Some(key) = compact_key(w, &mut buf) else {
            return self.encode_long(w, cache, out);
        };
        let h = hash_bytes(key);
        if cache.get(key, h, out) {
            return;
        }
        let start = out.len();
        self.encode_long(w, cache, out);
        cache.put(key, h, &out[start..]);
    }

    /// Appends the ids of `w`, a word of over [`MAX_PIECE`] bytes: its parts between the
    /// boundaries no token spans, or the whole word, each as
    /// [`SentencePieceBpe::encode_uncut`].
    fn encode_long(&self, w: &[u8], cache: &mut Local<'_>, out: &mut Vec<u32>) {
        if !self.encode_cut(w, cache, out) {
            self.encode_uncut(w, cache, out);
        }
    }

    /// Appends the ids of `w`'s parts between the boundaries no token spans, each as
    /// [`SentencePieceBpe::encode_uncut`]; `false`, with nothing appended, where `w` has no
    /// such boundary.
    #[inline]
    fn encode_cut(&self, w: &[u8], cache: &mut Local<'_>, out: &mut Vec<u32>) -> bool {
        // No boundary comes before the first char, so `from` stays 0 only without one.
        let mut from = 0;
        self.each_cut(w, |i| {
            self.encode_uncut(&w[from..i], cache, out);
            from = i;
        });
        if from == 0 {
            return false;
        }
        self.encode_uncut(&w[from..], cache, out);
        true
    }

    /// Calls `cut` with each boundary of `w` (UTF-8) that no token spans, in order: between
    /// two chars that both are tokens where no token holds the two (see the module docs).
    #[inline]
    fn each_cut(&self, w: &[u8], mut cut: impl FnMut(usize)) {
        let pairs = self.pairs();
        let mut prev: Option<char> = None;
        let mut i = 0;
        while i < w.len() {
            // `w` is UTF-8 (see `merge`).
            let (c, len) = match w[i] {
                b0 if b0 < 0x80 => (char::from(b0), 1),
                b0 => {
                    let (u, len) = decode_multibyte(w, i, b0);
                    (
                        char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER),
                        len,
                    )
                }
            };
            let known = self.char_token(c) != NONE;
            if let Some(p) = prev {
                if known && !pairs.contains(&pair_key(p, c)) {
                    cut(i);
                }
            }
            prev = known.then_some(c);
            i += len;
        }
    }

    /// The id of char `c`'s token, or `NONE`.
    #[inline]
    fn char_token(&self, c: char) -> u32 {
        if c.is_ascii() {
            self.ascii_id[c as usize]
        } else {
            self.char_id.get(&c).copied().unwrap_or(NONE)
        }
    }

    /// Appends the ids of `w`, a word of at most [`MAX_PIECE`] bytes: a token BPE reaches is
    /// itself, else the cache's ids, else its parts between the boundaries no token spans
    /// (each as [`SentencePieceBpe::encode_uncut`]), or merged if it has none; then cached.
    ///
    /// Why cut a word the cache does not hold: with punctuation and brackets attached
    /// (`▁word,`, `▁(see`), words repeat less than their parts. In 0.5 MB of the shared
    /// English, Llama 2's words hold 12,565 distinct ones of several tokens, their parts 7,204
    /// (code 8,393 and 2,945; the multilingual text 13,531 and 10,184), and every one of those
    /// is merged at its first meeting.
    #[inline]
    fn encode_part(&self, w: &[u8], cache: &mut Local<'_>, out: &mut Vec<u32>) {
        if self.affixed() {
            return self.encode_uncut(w, cache, out);
        }
        let Some(h) = self.token_or_cached(w, cache, out) else {
            return;
        };
        let start = out.len();
        if !self.encode_cut(w, cache, out) {
            self.merge(w, out, None);
        }
        cache.put(w, h, &out[start..]);
    }

    /// Appends the ids of `w`, a word with no boundary that no token spans or a part of one
    /// between such boundaries: a token BPE reaches is itself, else the cache's ids, else
    /// merged and cached.
    #[inline]
    fn encode_uncut(&self, w: &[u8], cache: &mut Local<'_>, out: &mut Vec<u32>) {
        let Some(h) = self.token_or_cached(w, cache, out) else {
            return;
        };
        let start = out.len();
        self.merge(w, out, None);
        cache.put(w, h, &out[start..]);
    }

    /// Appends `w`'s ids if the cache holds it or `w` is a token BPE reaches (returns
    /// `None`), else appends nothing and returns `w`'s hash for the cache.
    ///
    /// Why the cache first, whole tokens cached too: most words are whole tokens, and the
    /// cache answers one from its entry's line (its tags in L1/L2), where the vocabulary's
    /// map reads a bucket and then the token's boxed text.
    #[inline(always)]
    fn token_or_cached(&self, w: &[u8], cache: &mut Local<'_>, out: &mut Vec<u32>) -> Option<u64> {
        let h = hash_bytes(w);
        if cache.get(w, h, out) {
            return None;
        }
        // (With a suffix the token a word may be whole is another: merged once, then cached.)
        if let Some(&id) = self.by_text.get(w).filter(|_| self.suffix.is_none()) {
            if self.reaches(id, w) {
                out.push(id);
                cache.put(w, h, &[id]);
                return None;
            }
        }
        Some(h)
    }

    /// Whether BPE on `w` (the text of token `id`) gives `id` alone; kept per token.
    fn reaches(&self, id: u32, w: &[u8]) -> bool {
        self.whole.get(id, |ids| self.merge(w, ids, None))
    }

    /// HF's `merge_word` + `Word::merge_all` on `w`, a symbol a char (see the module docs).
    /// `w` is UTF-8 (a slice of a `str`, or one with spaces made `▁`); its chars are read from
    /// the bytes, without validating it again.
    fn merge(&self, w: &[u8], out: &mut Vec<u32>, lens: Option<&mut Vec<u32>>) {
        let mut syms = Symbols::new();
        let mut affixed: Vec<u8> = Vec::new();
        let mut i = 0;
        while i < w.len() {
            let first = i == 0;
            let b0 = w[i];
            let (c, len) = if b0 < 0x80 {
                (char::from(b0), 1)
            } else {
                let (u, len) = decode_multibyte(w, i, b0);
                (
                    char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER),
                    len,
                )
            };
            let bytes = &w[i..(i + len).min(w.len())];
            i += len;
            // A char after the first with the prefix in front, the last with the suffix after.
            let prefix = self.prefix.as_deref().filter(|_| !first);
            let suffix = self.suffix.as_deref().filter(|_| i >= w.len());
            let id = if prefix.is_none() && suffix.is_none() {
                self.char_token(c)
            } else {
                affixed.clear();
                affixed.extend_from_slice(prefix.unwrap_or_default().as_bytes());
                affixed.extend_from_slice(bytes);
                affixed.extend_from_slice(suffix.unwrap_or_default().as_bytes());
                self.by_text.get(&affixed[..]).copied().unwrap_or(NONE)
            };
            if id != NONE {
                syms.known(id, len as u32);
                continue;
            }
            if let Some(bt) = &self.byte_tokens {
                if bytes.iter().all(|&b| bt[b as usize] != NONE) {
                    for &b in bytes {
                        syms.fallback(bt[b as usize]);
                    }
                    continue;
                }
            }
            if let Some(u) = self.unk {
                syms.unknown(u, len as u32, self.fuse_unk);
            }
        }
        syms.merge_into(&self.table, out, lens);
    }
}
