//! HuggingFace `tokenizer.json` pipelines: normalizer → added tokens → pre-tokenizer →
//! model, each stage a module, as HuggingFace `tokenizers` 0.23 runs them.
//!
//! Invariant: for a file this module accepts, `Pipeline::encode_into` with every added token
//! active gives the ids of HF's `Tokenizer.encode(text, add_special_tokens=False)`, and
//! `encode_detail` also its offsets (char offsets into the original text, before any
//! post-processor trims them) and word indices. A file that asks for anything not
//! implemented here is refused at load with an error naming the component, never run
//! differently.
//!
//! Stages:
//! - [`normalizers`]: NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace (a string or a regex),
//!   Strip, Nmt, BertNormalizer (`unicode_classes`: the char classes it asks), Precompiled
//!   ([`precompiled`]: SentencePiece's rule table), Sequence, with HF's alignments;
//! - [`added_tokens`]: HF's `AddedVocabulary` (non-normalized tokens cut from the raw
//!   text first, normalized ones from the normalized text of each remaining part);
//! - [`pre_tokenizers`]: ByteLevel, Split, Digits, Punctuation, WhitespaceSplit, Whitespace,
//!   CharDelimiterSplit, FixedLength, BertPreTokenizer, Sequence (`onig_checks`: the patterns
//!   Oniguruma reads otherwise, refused by name); [`metaspace`] (SentencePiece's layout as a
//!   pre-tokenizer); [`scanners`]: whole pre-tokenizers of known models (DeepSeek LLM,
//!   Falcon, StarCoder, BERT) as one scanner each, the same pieces in one pass;
//! - the model, one of [`Model`]:
//!   - [`bpe_model`], byte-level BPE with HF's merge-pair rule, behind a ByteLevel
//!     pre-tokenizer;
//!   - [`sentencepiece_bpe`], BPE over chars with byte fallback, where there is no
//!     pre-tokenizer or only `Metaspace`; both BPE models merge through [`word`] (HF's `Word`);
//!   - [`wordpiece`], BERT's greedy longest-match model;
//!   - [`unigram`], SentencePiece's best-scoring segmentation;
//!   - [`wordlevel`], a vocabulary of whole words;
//!
//!   the last three behind any pre-tokenizer but ByteLevel.

pub mod added_tokens;
pub mod bpe_model;
pub mod byte_level;
mod merge_table;
pub mod metaspace;
pub mod normalizers;
mod onig_checks;
pub mod pre_tokenizers;
pub mod precompiled;
pub mod scanners;
pub mod sentencepiece_bpe;
pub mod splitters;
mod unicode_classes;
pub mod unigram;
mod word;
pub mod wordlevel;
pub mod wordpiece;

use crate::encode::bpe::piece_cache::Local;
use crate::encode::bpe::tables::BpeVocab;
use crate::encode::bpe::{short_home_in, PieceStep, ShortFirst};
use crate::encode::encoder::{Allowed, Encoder};
use crate::encode::pretok::file_cuts::last_file_cut;
use crate::error::{Error, Result};
use crate::vocab::{Rank, NO_RANK};
use added_tokens::{AddedVocab, Which};
use bpe_model::{BpeJson, HfBpe};
use metaspace::Metaspace;
use normalizers::{bad, unsupported, NString, Normalizer};
use pre_tokenizers::{Piece, PreTokenizer};
use rustc_hash::FxHashMap;
use sentencepiece_bpe::{decoded_byte, SentencePieceBpe};
use serde_json::Value;
use std::borrow::Cow;
use unigram::Unigram;
use wordlevel::WordLevel;
use wordpiece::WordPiece;

pub struct Pipeline {
    normalizer: Option<Normalizer>,
    added: AddedVocab,
    /// Per added token: its index in the encoder's special matcher if it is special.
    special_index: Vec<Option<usize>>,
    pretok: PreTokenizer,
    /// A `Metaspace` pre-tokenizer (SentencePiece models only; `pretok` then has no step, or
    /// the steps before it where `metaspace_per_piece`).
    metaspace: Option<Metaspace>,
    /// `Metaspace` after other steps (T5's files: `WhitespaceSplit`): it acts on each of
    /// their pieces.
    metaspace_per_piece: bool,
    model: Model,
    /// Whether a segment goes to the model raw, normalizing as it cuts words (see
    /// `SentencePieceBpe::encode_raw`).
    raw_sentencepiece: bool,
    /// How many spaces the decoder strips from the front of a decoded text (a `Strip`
    /// decoder after `Fuse`, SentencePiece's: it takes away the space `▁` stood for in front).
    pub decode_strip: usize,
    /// The ids whose text HF's decoder gives otherwise when the id comes first, where
    /// stripping `decode_strip` spaces does not give it: (id, its text first, the length of
    /// its bytes anywhere else). A WordPiece decoder keeps a first token's `##`; a Metaspace
    /// decoder drops every `▁` of a first token, not only one in front.
    pub decode_first: Vec<(u32, Vec<u8>, usize)>,
    /// The same for an id that comes last: a `BPEDecoder` makes its suffix a space in every
    /// token but the last, where it drops it.
    pub decode_last: Vec<(u32, Vec<u8>, usize)>,
    /// The file's `post_processor`, as JSON text (`null` if none): the Python layer reads
    /// the ids it puts around a text from it, without parsing the whole file.
    pub post_processor: String,
}

/// One token of [`Pipeline::encode_detail`]: id, char offsets, word index.
pub type Detail = (u32, usize, usize, u32);

/// The model stage: a word's ids.
pub enum Model {
    /// Byte-level BPE (a ByteLevel pre-tokenizer makes its words). Each model is boxed: they
    /// hold kilobytes of fixed tables, and a pipeline holds one.
    ByteLevel(Box<HfBpe>),
    /// SentencePiece BPE (no pre-tokenizer: a normalized segment is its text).
    SentencePiece(Box<SentencePieceBpe>),
    /// WordPiece (each pre-token read greedily, longest token first).
    WordPiece(Box<WordPiece>),
    /// Unigram (each pre-token's best-scoring segmentation).
    Unigram(Box<Unigram>),
    /// WordLevel (each pre-token its token, or the unknown token).
    WordLevel(Box<WordLevel>),
}

impl Model {
    fn cache(&self) -> crate::encode::bpe::piece_cache::Local<'_> {
        match self {
            Model::ByteLevel(m) => m.cache(),
            Model::SentencePiece(m) => m.cache(),
            Model::WordPiece(m) => m.cache(),
            Model::Unigram(m) => m.cache(),
            // One look-up a word: nothing to keep.
            Model::WordLevel(_) => Local::none(),
        }
    }
}

impl Pipeline {
    /// Whether added token `ti` may match under `allowed` (non-special ones always do).
    #[inline]
    fn active(&self, ti: usize, allowed: Allowed<'_>) -> bool {
        match self.special_index[ti] {
            None => true,
            Some(i) => allowed.admits(i),
        }
    }

    /// Whether the raw-text added tokens can match under `allowed`.
    #[inline]
    fn raw_matters(&self, allowed: Allowed<'_>) -> bool {
        self.added.has(Which::Raw) && (!allowed.is_none() || self.added.has_ordinary(Which::Raw))
    }

    #[inline]
    fn normalized_matters(&self, allowed: Allowed<'_>) -> bool {
        self.added.has(Which::Normalized)
            && (!allowed.is_none() || self.added.has_ordinary(Which::Normalized))
    }

    /// HF's ids for `text`, where only the special tokens `allowed` admits are matched.
    pub fn encode_into(
        &self,
        enc: &Encoder,
        text: &str,
        allowed: Allowed<'_>,
        out: &mut Vec<Rank>,
    ) -> Result<()> {
        self.encode_part_into(enc, text, allowed, false, out)
    }

    /// [`Pipeline::encode_into`] of a part of a text cut where [`Pipeline::file_cuts_apply`]
    /// admits, where `continues` says the part is not the first: it gets no `▁` in front
    /// (the text's first part had it). Of the pipelines that admit cuts, only SentencePiece's
    /// layout puts anything in front.
    pub fn encode_part_into(
        &self,
        enc: &Encoder,
        text: &str,
        allowed: Allowed<'_>,
        continues: bool,
        out: &mut Vec<Rank>,
    ) -> Result<()> {
        if continues && !self.file_cuts_apply() {
            // Its parts would not encode as the whole does, whatever was put in front.
            return Err(Error::Input(
                "this tokenizer.json pipeline does not encode a text in parts".into(),
            ));
        }
        let mut cache = self.model.cache();
        let mut engine_cache = enc.cache.local();
        let mut buf = Vec::new();
        let active = |ti: usize| self.active(ti, allowed);
        let raw = self.raw_sentencepiece && !self.normalized_matters(allowed);
        let mut meta_buf = String::new();
        let mut prefixed = String::new();
        // `at_start`: whether the segment starts the text (Metaspace's `first` scheme).
        let mut segment = |s: &str, at_start: bool, out: &mut Vec<Rank>| -> Result<()> {
            if let (true, Model::SentencePiece(sp)) = (raw, &self.model) {
                // SentencePiece's normalizers put a `▁` in front of any text; Metaspace by
                // its scheme. The first segment of a part that continues a text does not start
                // one.
                let prefix = !(continues && at_start)
                    && self.metaspace.is_none_or(|m| m.prefix(s, at_start));
                sp.encode_raw(s, prefix, &mut cache, out);
                return Ok(());
            }
            let norm: Cow<'_, str> = match &self.normalizer {
                Some(n) if !n.leaves(s) => Cow::Owned(n.normalize(s)),
                _ => Cow::Borrowed(s),
            };
            // Metaspace's `first` asks where the normalized text starts in the original: a
            // normalizer that takes chars off its front (`Strip`) moves it. A part that
            // continues a text does not start one.
            let at_start = at_start
                && !continues
                && (!self.metaspace_first() || matches!(norm, Cow::Borrowed(_)) || {
                    self.normalized_starts_at_zero(s)
                });
            let mut model = |s: &str, at_start: bool, out: &mut Vec<Rank>| -> Result<()> {
                let model = match &self.model {
                    Model::ByteLevel(m) => m,
                    Model::Unigram(u) => {
                        let Some(m) = &self.metaspace else {
                            return self.pretok.for_each_piece(s, &mut |p| {
                                u.encode_word(&s[p.start..p.end], &mut cache, out)
                            });
                        };
                        if self.metaspace_per_piece {
                            // `WhitespaceSplit` first, then Metaspace on each of its pieces.
                            return self.pretok.for_each_piece(s, &mut |p| {
                                let first = at_start && p.start == 0;
                                m.apply_text(&s[p.start..p.end], first, &mut meta_buf);
                                let t = meta_buf.as_str();
                                metaspace::words(t, m.split, |a, b| {
                                    u.encode_word(&t[a..b], &mut cache, out)
                                })
                            });
                        }
                        m.apply_text(s, at_start, &mut meta_buf);
                        let t = meta_buf.as_str();
                        return metaspace::words(t, m.split, |a, b| {
                            u.encode_word(&t[a..b], &mut cache, out)
                        });
                    }
                    Model::WordPiece(wp) => {
                        // BERT's scanner called here, so the word step inlines into it.
                        if let Some(scanners::Fused::Bert(bert)) = self.pretok.fused() {
                            return bert.for_each_piece(s, |a, b| {
                                wp.encode_word(&s[a..b], &mut cache, out)
                            });
                        }
                        return self.pretok.for_each_piece(s, &mut |p| {
                            wp.encode_word(&s[p.start..p.end], &mut cache, out)
                        });
                    }
                    Model::WordLevel(wl) => {
                        return self
                            .pretok
                            .for_each_piece(s, &mut |p| wl.encode_word(&s[p.start..p.end], out));
                    }
                    Model::SentencePiece(sp) => {
                        return match &self.metaspace {
                            Some(m) => {
                                m.apply_text(s, at_start, &mut meta_buf);
                                sp.encode_into(&meta_buf, &mut cache, out)
                            }
                            None if self.pretok.is_none() => sp.encode_into(s, &mut cache, out),
                            // Each pre-token a word.
                            None => self.pretok.for_each_piece(s, &mut |p| {
                                sp.encode_into(&s[p.start..p.end], &mut cache, out)
                            }),
                        };
                    }
                };
                let scan = match self.pretok.prefixed_scan() {
                    // A prefix space and GPT-2's regex: the scan of the segment with its space.
                    Some(re) if !s.is_empty() && !s.starts_with(' ') => {
                        prefixed.clear();
                        prefixed.push(' ');
                        prefixed.push_str(s);
                        Some((re, prefixed.as_str()))
                    }
                    Some(re) if !s.is_empty() => Some((re, s)),
                    _ => self.pretok.single_scan().map(|re| (re, s)),
                };
                if let Some((re, s)) = scan {
                    // One isolating scan, then bytes: the pieces straight from the scanner, to
                    // the model's path chosen once a text, not once a word.
                    let text = s.as_bytes();
                    let vocab = &enc.vocab;
                    return if model.on_engine() && re.covers_text() {
                        re.scan(
                            s,
                            &mut engine_words(model, vocab, text, &mut engine_cache, out),
                        )
                    } else if model.on_engine() {
                        each_word(re, s, |w| {
                            model.encode_word_engine(vocab, text, w, &mut engine_cache, out)
                        })
                    } else if model.words_by_vocab() && re.covers_text() {
                        re.scan(s, &mut merged_words(model, vocab, text, &mut cache, out))
                    } else {
                        each_word(re, s, |w| {
                            model.encode_word_merging(vocab, text, w, &mut cache, out)
                        })
                    };
                }
                if let Some(fused) = self.pretok.fused() {
                    // One scanner for the whole Sequence: its pieces straight to the model.
                    let text = s.as_bytes();
                    let vocab = &enc.vocab;
                    // The model's path chosen once a text, as above.
                    return if model.on_engine() {
                        fused.scan(
                            s,
                            &mut engine_words(model, vocab, text, &mut engine_cache, out),
                        )
                    } else if model.words_by_vocab() {
                        fused.scan(s, &mut merged_words(model, vocab, text, &mut cache, out))
                    } else {
                        fused.for_each_piece(s, |a, b| {
                            model.encode_word_merging(vocab, text, &text[a..b], &mut cache, out)
                        })
                    };
                }
                self.pretok.for_each_piece(s, &mut |p| {
                    let (w, whole) = if p.space {
                        let w = piece_bytes(s, &p, &mut buf);
                        (w, w)
                    } else {
                        (&s.as_bytes()[p.start..p.end], s.as_bytes())
                    };
                    model.encode_word(&enc.vocab, whole, w, &mut cache, &mut engine_cache, out)
                })
            };
            if self.normalized_matters(allowed) && self.added.occurs_in(&norm, Which::Normalized) {
                for c in self.added.split(&norm, Which::Normalized, &active) {
                    match c.token {
                        Some(ti) => out.push(self.added.tokens[ti].id),
                        None => model(&norm[c.start..c.end], at_start && c.start == 0, out)?,
                    }
                }
                Ok(())
            } else {
                model(&norm, at_start, out)
            }
        };
        if self.raw_matters(allowed) && self.added.occurs_in(text, Which::Raw) {
            for c in self.added.split(text, Which::Raw, &active) {
                match c.token {
                    Some(ti) => out.push(self.added.tokens[ti].id),
                    None => segment(&text[c.start..c.end], c.start == 0, out)?,
                }
            }
            Ok(())
        } else {
            segment(text, true, out)
        }
    }

    /// HF's `encode(text, add_special_tokens=False)` as (id, char start, char end, word
    /// index) per token (see the module docs).
    pub fn encode_detail(&self, enc: &Encoder, text: &str) -> Result<Vec<Detail>> {
        self.encode_detail_with(enc, text, None)
    }

    /// [`Pipeline::encode_detail`], and where `texts` is given, the index and HF's token text
    /// of each token whose text is not its id's: a Unigram model's unknown pieces, whose
    /// token is the text they cover (normalized), not the unknown token's.
    pub fn encode_detail_with(
        &self,
        enc: &Encoder,
        text: &str,
        mut texts: Option<&mut Vec<(usize, String)>>,
    ) -> Result<Vec<Detail>> {
        let mut cache = self.model.cache();
        let mut engine_cache = enc.cache.local();
        // Room for a token every 2 bytes (code has about that many; prose fewer) and a piece
        // every 3, of at most 1 MB of the text: grown from empty, each list is copied at each
        // doubling (for a list of a 4 KB document, ~20,000 instructions a copy).
        let room = text.len().min(1 << 20);
        let mut out: Vec<(u32, usize, usize, u32)> = Vec::with_capacity(room / 2);
        let mut word = 0u32;
        let all = |_: usize| true;
        let mut pieces = Vec::with_capacity(room / 3);
        let mut buf = Vec::new();
        let (mut ids, mut lens, mut ends) = (Vec::new(), Vec::new(), Vec::new());
        let mut pieces_ids = Vec::new();
        for c in self.added.split(text, Which::Raw, &all) {
            if let Some(ti) = c.token {
                out.push((self.added.tokens[ti].id, c.start, c.end, word));
                word += 1;
                continue;
            }
            let seg = &text[c.start..c.end];
            // The normalized text with each byte's alignment, where normalizing changes the
            // text; where it leaves it as it is, byte `i` is aligned to its own char's range,
            // found from the bytes: no copy, no per-byte table.
            let normalized = match &self.normalizer {
                Some(n) if !n.leaves(seg) => {
                    let mut ns = NString::identity(seg, c.start, true);
                    n.apply(&mut ns, true);
                    Some(ns)
                }
                _ => None,
            };
            let norm: &str = normalized.as_ref().map_or(seg, |ns| &ns.text);
            let bytes = norm.as_bytes();
            let al = |i: usize| -> Option<(usize, usize)> {
                if let Some(ns) = &normalized {
                    ns.align.get(i).copied()
                } else {
                    let continues = |j: usize| bytes.get(j).is_some_and(|&x| x & 0xC0 == 0x80);
                    (i < bytes.len()).then(|| {
                        let (mut a, mut b) = (i, i + 1);
                        while a > 0 && continues(a) {
                            a -= 1;
                        }
                        while continues(b) {
                            b += 1;
                        }
                        (c.start + a, c.start + b)
                    })
                }
            };
            let span = |a: usize, b: usize| -> (usize, usize) {
                if a >= b {
                    let o = al(a).map_or(c.end, |x| x.0);
                    (o, o)
                } else {
                    let at = |i: usize| al(i).unwrap_or((c.end, c.end));
                    (at(a).0, at(b - 1).1)
                }
            };
            for nc in self.added.split(norm, Which::Normalized, &all) {
                if let Some(ti) = nc.token {
                    let (s, e) = span(nc.start, nc.end);
                    out.push((self.added.tokens[ti].id, s, e, word));
                    word += 1;
                    continue;
                }
                let sub = &norm[nc.start..nc.end];
                let model = match &self.model {
                    Model::ByteLevel(m) => m,
                    Model::Unigram(u) => {
                        // The pre-tokenizer's pieces, each a word (Metaspace's of its own
                        // text, aligned to `norm`'s bytes); its tokens' byte ranges through
                        // `span`. Metaspace's `first` asks where a piece starts in the original.
                        let starts_text = |at: usize| al(at).is_some_and(|x| x.0 == 0);
                        let mut word_of = |t: &str,
                                           align: Option<&[(usize, usize)]>,
                                           a: usize,
                                           b: usize|
                         -> Result<()> {
                            pieces_ids.clear();
                            u.encode_word_with_offsets(&t[a..b], &mut pieces_ids)?;
                            for &(id, x, y) in &pieces_ids {
                                if let Some(texts) = texts.as_deref_mut() {
                                    if Some(id) == u.unk_id() && t[a + x..a + y] != *u.unk_text() {
                                        texts.push((out.len(), t[a + x..a + y].to_owned()));
                                    }
                                }
                                let (s, e) = match align {
                                    Some(al) => span(al[a + x].0, al[a + y - 1].1),
                                    None => span(nc.start + a + x, nc.start + a + y),
                                };
                                out.push((id, s, e, word));
                            }
                            word += 1;
                            Ok(())
                        };
                        let mut metaspace_words = |m: &Metaspace, piece: &str, at: usize| {
                            let mut ns = NString::identity(piece, at, true);
                            m.apply(&mut ns, starts_text(at), true);
                            let t = ns.text.as_str();
                            metaspace::words(t, m.split, |a, b| word_of(t, Some(&ns.align), a, b))
                        };
                        match &self.metaspace {
                            Some(m) if self.metaspace_per_piece => {
                                pieces.clear();
                                self.pretok.pieces(sub, &mut pieces)?;
                                for p in &pieces {
                                    let piece = &sub[p.start..p.end];
                                    metaspace_words(m, piece, nc.start + p.start)?;
                                }
                            }
                            Some(m) if !sub.is_empty() => metaspace_words(m, sub, nc.start)?,
                            Some(_) => {}
                            None => {
                                pieces.clear();
                                self.pretok.pieces(sub, &mut pieces)?;
                                for p in &pieces {
                                    word_of(sub, None, p.start, p.end)?;
                                }
                            }
                        }
                        continue;
                    }
                    Model::WordPiece(wp) => {
                        // Each pre-token a word; its tokens' byte ranges in it, through
                        // `span` to the original.
                        pieces.clear();
                        self.pretok.pieces(sub, &mut pieces)?;
                        for p in &pieces {
                            pieces_ids.clear();
                            wp.encode_word_with_offsets(&sub[p.start..p.end], &mut pieces_ids)?;
                            for &(id, a, b) in &pieces_ids {
                                let (s, e) = span(nc.start + p.start + a, nc.start + p.start + b);
                                out.push((id, s, e, word));
                            }
                            word += 1;
                        }
                        continue;
                    }
                    Model::WordLevel(wl) => {
                        // Each pre-token a word and one token over the whole of it.
                        pieces.clear();
                        self.pretok.pieces(sub, &mut pieces)?;
                        for p in &pieces {
                            let id = wl.word_id(&sub[p.start..p.end])?;
                            let (s, e) = span(nc.start + p.start, nc.start + p.end);
                            out.push((id, s, e, word));
                            word += 1;
                        }
                        continue;
                    }
                    Model::SentencePiece(sp)
                        if self.metaspace.is_none() && !self.pretok.is_none() =>
                    {
                        // Each pre-token a word, its tokens' byte counts laid end to end over
                        // it, through `span` to the original.
                        pieces.clear();
                        self.pretok.pieces(sub, &mut pieces)?;
                        for p in &pieces {
                            ids.clear();
                            lens.clear();
                            ends.clear();
                            let piece = &sub[p.start..p.end];
                            sp.encode_with_lens(piece, &mut cache, &mut ids, &mut lens, &mut ends)?;
                            let mut k = nc.start + p.start;
                            for (&id, &len) in ids.iter().zip(&lens) {
                                let (s, e) = span(k, k + len as usize);
                                k += len as usize;
                                out.push((id, s, e, word));
                            }
                            word += 1;
                        }
                        continue;
                    }
                    Model::SentencePiece(sp) => {
                        // The sub-segment is one word (without Metaspace's split), its tokens'
                        // byte counts laid end to end over it. Metaspace's text is aligned to
                        // `norm`'s bytes, and so through `span` to the original.
                        ids.clear();
                        lens.clear();
                        ends.clear();
                        // Metaspace's `first`: the piece starts the original text.
                        let at_start = al(nc.start).is_some_and(|x| x.0 == 0);
                        let meta = self.metaspace.map(|m| {
                            let mut ns = NString::identity(sub, nc.start, true);
                            m.apply(&mut ns, at_start, true);
                            ns
                        });
                        let t = meta.as_ref().map_or(sub, |ns| ns.text.as_str());
                        sp.encode_with_lens(t, &mut cache, &mut ids, &mut lens, &mut ends)?;
                        let mut k = 0;
                        let mut next_end = ends.iter().copied().peekable();
                        for (i, (&id, &len)) in ids.iter().zip(&lens).enumerate() {
                            let (a, b) = (k, k + len as usize);
                            k = b;
                            let (s, e) = match &meta {
                                Some(ns) => span(ns.align[a].0, ns.align[b - 1].1),
                                None => span(nc.start + a, nc.start + b),
                            };
                            out.push((id, s, e, word));
                            if next_end.next_if_eq(&(i + 1)).is_some() {
                                word += 1;
                            }
                        }
                        // One word, unless the normalizer left nothing: HF drops an empty
                        // split, which then takes no word index (`Strip` of a "\t" between two
                        // added tokens).
                        if ends.is_empty() && !t.is_empty() {
                            word += 1;
                        }
                        continue;
                    }
                };
                pieces.clear();
                self.pretok.pieces(sub, &mut pieces)?;
                let on_engine = model.on_engine();
                for p in &pieces {
                    // A piece that is a token in its short-table home slot is that token on
                    // the engine, as `encode_into`'s `ShortFirst` takes it: one token over
                    // the whole piece (no virtual space, no byte without a token).
                    if on_engine && !p.space {
                        let r = short_home_in(
                            &enc.vocab,
                            sub.as_bytes(),
                            &sub.as_bytes()[p.start..p.end],
                        )
                        .1;
                        if r != NO_RANK {
                            let (s, e) = span(nc.start + p.start, nc.start + p.end);
                            out.push((r, s, e, word));
                            word += 1;
                            continue;
                        }
                    }
                    let w = piece_bytes(sub, p, &mut buf);
                    let whole = if p.space { w } else { sub.as_bytes() };
                    ids.clear();
                    lens.clear();
                    model.encode_word_with_lens(
                        &enc.vocab,
                        whole,
                        w,
                        &mut cache,
                        &mut engine_cache,
                        &mut ids,
                        &mut lens,
                    )?;
                    // Byte k of `w` is the virtual space if `p.space` and k = 0.
                    let sp = usize::from(p.space);
                    let mut k = 0usize;
                    let moved = model.hf_ranges_with_missing(w, &lens);
                    for (i, (&id, &len)) in ids.iter().zip(&lens).enumerate() {
                        let (a, b) = match &moved {
                            Some(r) => r[i],
                            None => (k, k + len as usize),
                        };
                        k = b;
                        let ra = nc.start + p.start + a.saturating_sub(sp);
                        let rb = nc.start + p.start + b.saturating_sub(sp);
                        let (s, e) = if a < sp {
                            // Starts at the virtual space. HF's `prepend` puts the space in
                            // place of the piece's first char (change 0) and re-inserts that
                            // char (change 1): both take the first char's alignment, so a lone
                            // space covers the first char's range, not an empty one.
                            let o = al(nc.start + p.start).unwrap_or((c.end, c.end));
                            let e = if rb > ra { span(ra, rb).1 } else { o.1 };
                            (o.0, e)
                        } else {
                            span(ra, rb)
                        };
                        out.push((id, s, e, word));
                    }
                    word += 1;
                }
            }
        }
        // Byte offsets into `text` -> char offsets, as HF's `BytesToCharOffsetConverter`
        // (the same numbers in ASCII text).
        if text.is_ascii() {
            return Ok(out);
        }
        let mut char_at = CharIndex::new(text.as_bytes());
        for t in &mut out {
            let (s, e) = (t.1, t.2);
            let conv = match (char_at.of(s), char_at.of(e)) {
                (Some(cs), Some(ce)) => Some((cs, ce)),
                (Some(cs), None) => {
                    let last = e.checked_sub(1).and_then(|i| char_at.of(i));
                    Some((cs, last.map_or(cs + 1, |x| x + 1)))
                }
                _ => None,
            };
            if let Some((cs, ce)) = conv {
                t.1 = cs;
                t.2 = ce;
            }
        }
        Ok(out)
    }
}

/// The index of the char that holds byte `i` of a UTF-8 text, for byte offsets asked near
/// each other (a text's tokens, in order; a token's start may lie a few bytes behind the
/// last end, at the first byte of a char that tokens split): the lead bytes (all but
/// `10xxxxxx`) between the last byte asked and `i` are counted, forward or back, so a text
/// costs about one pass and no table.
struct CharIndex<'a> {
    text: &'a [u8],
    /// Bytes `..pos` are counted: `leads` of them are lead bytes.
    pos: usize,
    leads: usize,
}

impl<'a> CharIndex<'a> {
    fn new(text: &'a [u8]) -> Self {
        CharIndex {
            text,
            pos: 0,
            leads: 0,
        }
    }

    /// The index of the char holding byte `i`; `None` past the text's last byte.
    fn of(&mut self, i: usize) -> Option<usize> {
        if i >= self.text.len() {
            return None;
        }
        let lead = |b: &&u8| (**b as i8) >= -0x40;
        if i < self.pos {
            self.leads -= self.text[i + 1..self.pos].iter().filter(lead).count();
        } else {
            self.leads += self.text[self.pos..=i].iter().filter(lead).count();
        }
        self.pos = i + 1;
        // Byte `i` is in the char whose lead byte is the last counted.
        Some(self.leads - 1)
    }
}

impl Pipeline {
    /// Whether a `Metaspace` step puts `▁` only in front of the text (`first`).
    fn metaspace_first(&self) -> bool {
        self.metaspace
            .is_some_and(|m| m.prepend == metaspace::Prepend::First)
    }

    /// Whether the normalized text of `s` starts at the original text's first byte (its
    /// first byte's alignment, as HF's `offsets_original` gives it).
    fn normalized_starts_at_zero(&self, s: &str) -> bool {
        match &self.normalizer {
            Some(n) if !n.leaves(s) => {
                let mut ns = NString::identity(s, 0, true);
                n.apply(&mut ns, true);
                ns.align.first().is_none_or(|a| a.0 == 0)
            }
            _ => true,
        }
    }

    /// `text` through the file's normalizer (as it is, without one).
    pub fn normalize(&self, text: &str) -> String {
        match &self.normalizer {
            Some(n) => n.normalize(text),
            None => text.to_owned(),
        }
    }

    /// The added tokens as HF numbers them: (text, id, special).
    pub fn added_tokens(&self) -> Vec<(String, u32, bool)> {
        self.added
            .tokens
            .iter()
            .map(|t| (t.content.clone(), t.id, t.special))
            .collect()
    }

    /// Builds now what the pipeline otherwise builds at its first need (see
    /// `Encoder::build_tables`): the model's tables and the pre-tokenizer's DFAs.
    pub fn build_tables(&self, vocab: &crate::encode::bpe::tables::BpeVocab) {
        match &self.model {
            Model::ByteLevel(m) => m.build_tables(vocab),
            Model::SentencePiece(m) => m.build_tables(),
            Model::WordPiece(_) | Model::Unigram(_) | Model::WordLevel(_) => {}
        }
        self.pretok.build_tables();
    }

    /// Which of [`Pipeline::build_tables`]'s tables apply here, and whether each is built.
    pub fn tables_built(&self) -> Vec<(&'static str, bool)> {
        let mut v = match &self.model {
            Model::ByteLevel(m) => m.tables_built(),
            Model::SentencePiece(m) => m.tables_built(),
            Model::WordPiece(_) | Model::Unigram(_) | Model::WordLevel(_) => Vec::new(),
        };
        v.extend(self.pretok.tables_built());
        v
    }

    /// Whether a text cut where `encode::pretok::file_cuts` cuts encodes as the whole does
    /// (the command line then reads a file in parts), the cut just after a newline between
    /// two chars that are not whitespace. The added tokens are found before the
    /// pre-tokenizer cuts the text between them, and none may span a cut (hold a newline) or
    /// take the newline before a part (`lstrip`); the rest depends on the model:
    ///
    /// - Byte-level BPE: no normalizer or NFC alone, and a pre-tokenizer that keeps the cuts
    ///   ([`PreTokenizer::keeps_file_cuts`]). NFC keeps the cut: the newline is a starter
    ///   that composes with nothing, so nothing after it reorders or composes with anything
    ///   before it, and no char's canonical decomposition is whitespace or `/` unless the
    ///   char is (NFKC's can be: `／`).
    /// - A model that encodes each pre-token alone (WordPiece, WordLevel, Unigram, BPE over
    ///   chars behind a pre-tokenizer): a normalizer that keeps the newline whitespace and
    ///   normalizes either side of it as each side alone ([`Normalizer::keeps_newline_cuts`]:
    ///   `BertNormalizer` among them), and a pre-tokenizer that keeps the cuts or starts by
    ///   cutting at whitespace and dropping it ([`PreTokenizer::cuts_at_whitespace`]): no
    ///   piece then holds the newline, and the pieces either side are those of each side
    ///   alone. No `Metaspace`, but on each piece after such a cut (T5's files): each piece
    ///   gets its `▁` alone (with `first`, the text's first piece, which a part after the
    ///   first does not hold: it goes as `continues`). But an added token matched on the
    ///   normalized text could take the space a newline became (`"a b"` in `"a\nb"`, after
    ///   `Nmt` or `BertNormalizer`), so no such (`normalized`) token may hold, once
    ///   normalized (as HF matches it), what the normalizer makes of a newline.
    /// - SentencePiece's layout keeps the cuts on its raw path (its normalizers, or Metaspace
    ///   alone), whatever special tokens are allowed (no `normalized` added token), where
    ///   the model merges the newline with nothing
    ///   ([`sentencepiece_bpe::SentencePieceBpe::keeps_newline_cuts`]): each part but the
    ///   first then goes without the `▁` in front ([`Pipeline::encode_part_into`]).
    /// - Unigram behind `Metaspace` alone, cut just before the newline instead
    ///   ([`Pipeline::file_cuts_before_newline`], [`Pipeline::last_file_cut`]).
    pub fn file_cuts_apply(&self) -> bool {
        let pipeline_keeps_cuts = match &self.model {
            Model::ByteLevel(_) => {
                matches!(self.normalizer, None | Some(Normalizer::Nfc))
                    && self.metaspace.is_none()
                    && self.pretok.keeps_file_cuts()
            }
            Model::SentencePiece(sp) if self.raw_sentencepiece => {
                !self.added.has(Which::Normalized) && sp.keeps_newline_cuts()
            }
            // Each pre-token encoded alone (a SentencePiece model off its raw path has a
            // pre-tokenizer here, or none: then a segment is one word, which is no cut).
            _ => {
                ((self.metaspace.is_none()
                    || self.metaspace_per_piece && self.pretok.cuts_at_whitespace())
                    && !self.pretok.is_none()
                    && self
                        .normalizer
                        .as_ref()
                        .is_none_or(Normalizer::keeps_newline_cuts)
                    && (self.pretok.keeps_file_cuts() || self.pretok.cuts_at_whitespace()))
                    || self.file_cuts_before_newline()
            }
        };
        // A normalized added token is matched on the normalized text: it must not hold what
        // a newline becomes there (a space, after `Nmt` or `BertNormalizer`).
        let newline = self.normalizer.as_ref().map(|n| n.normalize("\n"));
        let meets_newline = |t: &str| match (&self.normalizer, &newline) {
            (Some(n), Some(nl)) => nl.is_empty() || n.normalize(t).contains(nl.as_str()),
            _ => false,
        };
        pipeline_keeps_cuts
            && !self.added.tokens.iter().any(|t| {
                t.lstrip
                    || t.content.contains(['\n', '\r'])
                    || (t.normalized && meets_newline(&t.content))
            })
    }

    /// Whether a file is cut just before the `"\n"` of [`last_file_cut`]'s rule, not after
    /// it: Unigram behind `Metaspace` alone, cutting before each `▁`, behind a normalizer
    /// that keeps the newline cuts ([`Normalizer::keeps_newline_cuts`]) and makes a newline
    /// one space (`Precompiled`'s NMT maps). That space is the `▁` that starts the whole
    /// text's next piece, so a part that starts with the newline starts with that piece, and
    /// gets no other `▁` in front (Metaspace puts none before a `▁`, whatever its scheme); a
    /// part that ends before it ends with the whole's piece before, if its last line,
    /// normalized, does not end in whitespace ([`Pipeline::last_file_cut`] looks). No added
    /// token may take the newline after it (`rstrip`), which the part before no longer holds.
    pub fn file_cuts_before_newline(&self) -> bool {
        matches!(self.model, Model::Unigram(_))
            && !self.metaspace_per_piece
            && self.metaspace.as_ref().is_some_and(|m| m.split)
            && self.pretok.is_none()
            && self
                .normalizer
                .as_ref()
                .is_some_and(|n| n.keeps_newline_cuts() && n.normalize("\n") == " ")
            && !self.added.tokens.iter().any(|t| t.rstrip)
    }

    /// The last place in `data[start..]` where this pipeline's text may be cut, or 0: where
    /// [`last_file_cut`] cuts, or with [`Pipeline::file_cuts_before_newline`] at the newline
    /// before such a cut, of the last cut whose line before normalizes to text that ends in
    /// a char but whitespace. (Ending in a space, it would be a `▁` of its own in the part
    /// before, where the whole text has one space for it and the newline, after a `Replace`
    /// of space runs.) `data` starts a text or at a cut, so its lines start where the
    /// text's do.
    pub fn last_file_cut(&self, data: &[u8], start: usize) -> usize {
        let normalizer = self.normalizer.as_ref();
        let Some(n) = normalizer.filter(|_| self.file_cuts_before_newline()) else {
            return last_file_cut(data, start);
        };
        let ends_in_a_char = |line: &str| {
            let last = n.normalize(line).chars().next_back();
            last.is_some_and(|c| !c.is_whitespace())
        };
        let mut end = data.len();
        loop {
            let cut = last_file_cut(&data[..end], start);
            if cut == 0 {
                return 0;
            }
            let newline = cut - 1;
            let line_start = data[..newline]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            if std::str::from_utf8(&data[line_start..newline]).is_ok_and(ends_in_a_char) {
                return newline;
            }
            end = newline;
        }
    }

    /// The paths this pipeline runs on, for tests and benchmarks: the model's fast paths
    /// and each `Split` step's splitter.
    pub fn paths(&self) -> Vec<&'static str> {
        let mut v = match &self.model {
            Model::ByteLevel(m) => m.paths(),
            Model::SentencePiece(m) => m.paths(),
            Model::WordPiece(_) => vec!["wordpiece"],
            Model::Unigram(_) => vec!["unigram"],
            Model::WordLevel(_) => vec!["wordlevel"],
        };
        if self.raw_sentencepiece {
            v.push("raw_words");
        }
        if self.pretok.prefixed_scan().is_some() {
            v.push("scan:prefixed");
        }
        v.extend(self.pretok.splitter_kinds());
        v
    }
}

/// The pieces of `text` to `model`'s word step on ferrotok's engine, a short-table hit first
/// (see [`ShortFirst`]), then the word's key on to the step, which skips the home slot
/// `ShortFirst` found empty already.
fn engine_words<'a, 'c>(
    model: &'a HfBpe,
    vocab: &'a BpeVocab,
    text: &'a [u8],
    cache: &'a mut Local<'c>,
    out: &'a mut Vec<Rank>,
) -> ShortFirst<'a, impl Fn(Rank) -> bool, impl PieceStep + use<'a, 'c>> {
    ShortFirst::new(
        vocab,
        text,
        out,
        |_| true,
        move |w, key, out| model.encode_word_keyed(vocab, w, key, cache, out),
    )
}

/// The pieces of `text` to `model`'s word step by HF's merging, a short-table hit first where
/// the model takes a word that is a token as that token (see [`ShortFirst`]).
fn merged_words<'a, 'c>(
    model: &'a HfBpe,
    vocab: &'a BpeVocab,
    text: &'a [u8],
    cache: &'a mut Local<'c>,
    out: &'a mut Vec<Rank>,
) -> ShortFirst<'a, impl Fn(Rank) -> bool + 'a, impl PieceStep + use<'a, 'c>> {
    ShortFirst::new(
        vocab,
        text,
        out,
        |id| model.whole_word_is(id),
        move |w, _, out| model.encode_word_merging(vocab, text, w, cache, out),
    )
}

/// Calls `word` with the bytes of each piece `re` finds in `s` and of each gap between them
/// (text no match covers, a piece of its own under `Isolated`), in order.
#[inline(always)]
fn each_word(
    re: &splitters::PieceSplitter,
    s: &str,
    mut word: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    if re.covers_text() {
        return re.for_each_piece(s, |m| word(m.as_bytes()));
    }
    let text = s.as_bytes();
    let base = s.as_ptr() as usize;
    let mut prev = 0;
    re.for_each_piece(s, |m| {
        let at = m.as_ptr() as usize - base;
        if prev < at {
            word(&text[prev..at])?;
        }
        prev = at + m.len();
        word(m.as_bytes())
    })?;
    if prev < text.len() {
        word(&text[prev..])?;
    }
    Ok(())
}

/// The bytes of piece `p` of `s`: a slice, or in `buf` with the virtual space first.
fn piece_bytes<'a>(s: &'a str, p: &Piece, buf: &'a mut Vec<u8>) -> &'a [u8] {
    let b = &s.as_bytes()[p.start..p.end];
    if p.space {
        buf.clear();
        buf.push(b' ');
        buf.extend_from_slice(b);
        buf
    } else {
        b
    }
}

/// An encoder for a HuggingFace `tokenizer.json` (its text): the vocabulary for decoding and
/// special tokens as ferrotok's [`Encoder`] keeps them, and the pipeline that encodes.
/// Returns the encoder and the name the file gives its model, if any.
pub fn encoder_from_json(json: &str) -> Result<Encoder> {
    let root: Value =
        serde_json::from_str(json).map_err(|e| bad(&format!("not valid JSON: {e}")))?;
    if !root.is_object() {
        return Err(bad("the top level is not an object"));
    }
    let model_json = root.get("model").ok_or_else(|| bad("no `model`"))?;
    let normalizer = Normalizer::from_json(root.get("normalizer").unwrap_or(&Value::Null))?;
    let pre_json = root.get("pre_tokenizer").unwrap_or(&Value::Null);
    // SentencePiece's layout by a pre-tokenizer (`Metaspace`) rather than by normalizers:
    // alone, or after other steps, on each of their pieces (T5's files: `WhitespaceSplit`).
    let (metaspace, metaspace_per_piece, pretok) = match Metaspace::from_json(pre_json)? {
        Some(m) => (Some(m), false, PreTokenizer::from_json(&Value::Null)?),
        None => match Metaspace::after_steps(pre_json)? {
            Some((m, before)) => (Some(m), true, PreTokenizer::from_json(&before)?),
            None => (None, false, PreTokenizer::from_json(pre_json)?),
        },
    };
    if metaspace_per_piece && pretok.is_byte_level() {
        return Err(unsupported("Metaspace after a ByteLevel pre-tokenizer"));
    }
    let kind = model_json
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("BPE");
    let decoder = root.get("decoder").unwrap_or(&Value::Null);
    let (mut decode_strip, mut decode_bytes) = (0, false);
    let mut sp_replaces = meta_as_space();
    let mut wordpiece_decoder: Option<(String, bool)> = None;
    let mut metaspace_decoder = false;
    // No decoder: HF joins the tokens' texts with spaces.
    let mut join_decoder = false;
    // A `BPEDecoder`'s suffix: a space after a token, none after the last.
    let mut bpe_decoder: Option<String> = None;
    // HF's `Fuse` alone: the tokens' texts joined as they are.
    let mut fuse_decoder = false;
    let (model, vocab) = match kind {
        // The BPE family, from the pre-tokenizer: a ByteLevel step makes byte-level BPE;
        // none at all, BPE over the chars of each normalized segment (SentencePiece's); any
        // other, the same over the chars of each pre-token.
        "BPE" => {
            let parsed = BpeJson::parse(model_json)?;
            if pretok.is_byte_level() {
                check_decoder(decoder)?;
                let (m, vocab) = HfBpe::new(parsed)?;
                (Model::ByteLevel(Box::new(m)), vocab)
            } else if metaspace_per_piece {
                return Err(unsupported(
                    "a BPE model behind Metaspace after other pre-tokenizers (supported: \
                     Unigram)",
                ));
            } else {
                // BPE over the chars of each normalized segment (SentencePiece's: no
                // pre-tokenizer, or `Metaspace` alone), or of each pre-token (HF's quicktour:
                // `Whitespace`). No `Metaspace` is left among the steps: alone it leaves none,
                // after others it is per piece (above). Without `Metaspace`, the decoders of
                // HF's own BPE files too (a model trained without a pre-tokenizer has them).
                let kind = decoder.get("type").and_then(Value::as_str);
                if metaspace.is_some() {
                    let d = sentencepiece_decoder(decoder, parsed.byte_fallback)?;
                    (decode_strip, decode_bytes, sp_replaces) = (d.strip, d.bytes, d.replaces);
                } else if decoder.is_null() {
                    // Each token's bytes start with the space the join puts before it, and
                    // decoding strips the one in front.
                    join_decoder = true;
                    decode_strip = 1;
                } else if kind == Some("BPEDecoder") {
                    let suffix = decoder
                        .get("suffix")
                        .and_then(Value::as_str)
                        .unwrap_or("</w>");
                    if suffix.is_empty() {
                        return Err(unsupported("decoder BPEDecoder with an empty suffix"));
                    }
                    bpe_decoder = Some(suffix.to_owned());
                } else if kind == Some("WordPiece") {
                    // BPE trained with a `continuing_subword_prefix`: `##` tokens continue a
                    // word, as WordPiece's do.
                    wordpiece_decoder = Some(check_wordpiece_decoder(decoder)?);
                    decode_strip = 1;
                } else {
                    let d = sentencepiece_decoder(decoder, parsed.byte_fallback)?;
                    (decode_strip, decode_bytes, sp_replaces) = (d.strip, d.bytes, d.replaces);
                }
                let split_all = metaspace.is_some_and(|m| m.split);
                let (m, vocab) = SentencePieceBpe::new(parsed, split_all)?;
                (Model::SentencePiece(Box::new(m)), vocab)
            }
        }
        "WordPiece" => {
            if pretok.is_byte_level() || metaspace.is_some() {
                return Err(unsupported(
                    "a WordPiece model behind a ByteLevel or Metaspace pre-tokenizer",
                ));
            }
            wordpiece_decoder = Some(check_wordpiece_decoder(decoder)?);
            // The decoder puts a space before each token but the first: each token's
            // bytes start with it, and decoding strips the one in front.
            decode_strip = 1;
            let (m, vocab) = WordPiece::from_json(model_json)?;
            (Model::WordPiece(Box::new(m)), vocab)
        }
        "Unigram" => {
            if pretok.is_byte_level() {
                return Err(unsupported(
                    "a Unigram model behind a ByteLevel pre-tokenizer",
                ));
            }
            let byte_fallback = model_json
                .get("byte_fallback")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let d = unigram_decoder(decoder, byte_fallback)?;
            (decode_strip, decode_bytes, sp_replaces) = (d.strip, d.bytes, d.replaces);
            metaspace_decoder = decoder.get("type").and_then(Value::as_str) == Some("Metaspace");
            let (m, vocab) = Unigram::from_json(model_json)?;
            (Model::Unigram(Box::new(m)), vocab)
        }
        "WordLevel" => {
            if pretok.is_byte_level() || metaspace.is_some() {
                return Err(unsupported(
                    "a WordLevel model behind a ByteLevel or Metaspace pre-tokenizer",
                ));
            }
            match decoder.get("type").and_then(Value::as_str) {
                // HF joins the tokens' texts with spaces (see the BPE arm).
                None => {
                    join_decoder = true;
                    decode_strip = 1;
                }
                Some("WordPiece") => {
                    wordpiece_decoder = Some(check_wordpiece_decoder(decoder)?);
                    decode_strip = 1;
                }
                // `Fuse` joins the texts as they are; `ByteLevel` reads a text spelled in its
                // alphabet as those bytes (the last branch of `token_bytes`).
                Some("Fuse") => fuse_decoder = true,
                Some("ByteLevel") => {}
                Some(other) => {
                    return Err(unsupported(&format!(
                        "decoder {other} for a WordLevel model (supported: none, Fuse, \
                         ByteLevel, WordPiece)"
                    )))
                }
            }
            let (m, vocab) = WordLevel::from_json(model_json)?;
            (Model::WordLevel(Box::new(m)), vocab)
        }
        other => return Err(unsupported(&format!("model {other}"))),
    };
    // A token's bytes, as the model's decoder gives them.
    let spm = matches!(model, Model::SentencePiece(_) | Model::Unigram(_));
    let sp_replaced = |t: &str| -> String {
        sp_replaces.iter().fold(t.to_owned(), |text, (from, to)| {
            text.replace(from.as_str(), to)
        })
    };
    let token_bytes = |t: &str| -> Vec<u8> {
        if join_decoder {
            [b" ", t.as_bytes()].concat()
        } else if fuse_decoder {
            t.as_bytes().to_vec()
        } else if let Some(suffix) = &bpe_decoder {
            t.replace(suffix.as_str(), " ").into_bytes()
        } else if let Some((prefix, cleanup)) = &wordpiece_decoder {
            wordpiece_token_text(t, prefix, *cleanup).into_bytes()
        } else if spm {
            let text = sp_replaced(t);
            match decoded_byte(&text).filter(|_| decode_bytes) {
                Some(b) => vec![b],
                None => text.into_bytes(),
            }
        } else {
            byte_level::token_bytes(t).unwrap_or_else(|| t.as_bytes().to_vec())
        }
    };
    let post_processor = root.get("post_processor").unwrap_or(&Value::Null);
    check_post_processor(post_processor)?;
    let post_processor = post_processor.to_string();
    let added = AddedVocab::from_json(
        root.get("added_tokens").unwrap_or(&Value::Null),
        normalizer.as_ref(),
        &vocab,
    )?;

    // The ids' bytes: ordinary tokens from the vocab (byte-level strings), special added
    // tokens as their text; non-special added tokens outside the vocab as their text.
    // The ordinary tokens are the model's alone, so the engine's tables are built from the
    // model's vocabulary (`HfBpe::choose_paths` checks it).
    let special_ids: FxHashMap<u32, &str> = added
        .tokens
        .iter()
        .filter(|t| t.special)
        .map(|t| (t.id, t.content.as_str()))
        .collect();
    let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
    ranks.reserve(vocab.len());
    let mut entries: Vec<(&String, u32)> = vocab.iter().map(|(t, &id)| (t, id)).collect();
    // By id, but a byte fallback token (`<0x41>`) after the others: "A" keeps the bytes `A`.
    entries.sort_by_key(|&(t, id)| (decode_bytes && decoded_byte(t).is_some(), id));
    let mut seen_ids = rustc_hash::FxHashSet::default();
    for (t, id) in entries {
        if special_ids.contains_key(&id) {
            continue;
        }
        let bytes = token_bytes(t);
        if !bytes.is_empty() && !ranks.contains_key(&bytes) {
            ranks.insert(bytes, id);
            seen_ids.insert(id);
        }
    }
    // An id without bytes of its own (its text's bytes belong to another id: GPT-NeoX's
    // runs of spaces are both added tokens and byte-level tokens, Llama 2's `<0x41>` is `A`)
    // decodes to them, kept with the special tokens but never matched as one.
    let mut shared_bytes: Vec<(String, Rank)> = Vec::new();
    for (t, &id) in &vocab {
        if !seen_ids.contains(&id) && !special_ids.contains_key(&id) {
            let text = String::from_utf8(token_bytes(t)).unwrap_or_else(|_| t.clone());
            shared_bytes.push((text, id));
        }
    }
    // A non-special added token outside the vocab (Phi-2's runs of spaces, Whisper's
    // timestamps) is found by the added-token step, before the model, which cannot give its
    // id: it only decodes to its text. As an ordinary token the engine would merge into it.
    let model_ids: rustc_hash::FxHashSet<u32> = vocab.values().copied().collect();
    for t in added.tokens.iter().filter(|t| !t.special) {
        if !model_ids.contains(&t.id) {
            shared_bytes.push((t.content.clone(), t.id));
        }
    }
    let mut specials: Vec<(String, Rank)> = Vec::new();
    for t in added.tokens.iter().filter(|t| t.special) {
        if !specials.iter().any(|(s, _)| s == &t.content) {
            specials.push((t.content.clone(), t.id));
        }
    }
    shared_bytes.sort_by_key(|&(_, id)| id);
    let mut enc = Encoder::with_decode_only(
        ranks,
        specials,
        shared_bytes,
        crate::encode::pretok::R50K_PATTERN,
    )?;
    let mut model = model;
    if let Model::ByteLevel(m) = &mut model {
        m.choose_paths(&enc.vocab)?;
    }
    let special_index = added
        .tokens
        .iter()
        .map(|t| {
            if t.special {
                enc.specials
                    .tokens
                    .binary_search_by(|x| x.as_str().cmp(&t.content))
                    .ok()
            } else {
                None
            }
        })
        .collect();
    // An added token's text, as HF names its id: its normalized content if it is normalized
    // ("ﬁX" is "fix" under NFKC and Lowercase), but a verbatim one's content as it is.
    let added_text = |t: &added_tokens::AddedToken| -> String {
        match &normalizer {
            Some(n) if t.normalized && !t.verbatim => n.normalize(&t.content),
            _ => t.content.clone(),
        }
    };
    // HF decodes an id through its token text (`added_text`), and the ByteLevel decoder
    // reads a text spelled wholly in its alphabet as those bytes, any other as its UTF-8
    // (SentencePiece's: `▁` as a space, a byte fallback token as its byte).
    // Where that differs from the bytes the engine keeps for the id (its content, which
    // is what `encode` matches), the id decodes as HF decodes it.
    for t in &added.tokens {
        let text = added_text(t);
        let bytes = token_bytes(&text);
        if enc.vocab.token_bytes(t.id) != Some(&bytes[..]) {
            enc.decode_as.insert(t.id, bytes.into());
        }
    }
    // What HF's decoder makes of each id's text when the id comes first (the text HF names
    // an id by: an added token's, normalized if it is, else the vocabulary's).
    let first_text = |t: &str| -> Option<Vec<u8>> {
        match &wordpiece_decoder {
            Some((_, cleanup)) => Some(wordpiece_cleanup(t.to_owned(), *cleanup).into_bytes()),
            None if metaspace_decoder && decode_strip > 0 => {
                Some(t.replace('\u{2581}', "").into_bytes())
            }
            None => None,
        }
    };
    let mut decode_first = Vec::new();
    if wordpiece_decoder.is_some() || (metaspace_decoder && decode_strip > 0) {
        let mut texts: FxHashMap<u32, String> =
            vocab.iter().map(|(t, &id)| (id, t.clone())).collect();
        for t in &added.tokens {
            texts.insert(t.id, added_text(t));
        }
        for (id, t) in texts {
            let own = token_bytes(&t);
            let spaces = own
                .iter()
                .take(decode_strip)
                .take_while(|&&b| b == b' ')
                .count();
            if let Some(first) = first_text(&t).filter(|f| f[..] != own[spaces..]) {
                decode_first.push((id, first, own.len()));
            }
        }
        decode_first.sort_unstable();
    }
    let mut decode_last = Vec::new();
    if let Some(suffix) = &bpe_decoder {
        for (t, &id) in &vocab {
            if t.contains(suffix.as_str()) {
                decode_last.push((
                    id,
                    t.replace(suffix.as_str(), "").into_bytes(),
                    token_bytes(t).len(),
                ));
            }
        }
        decode_last.sort_unstable();
    }
    // The raw path makes each space `▁` and puts one in front: SentencePiece's normalizers
    // alone, or Metaspace without a normalizer.
    let raw_sentencepiece = match (&model, &normalizer, &metaspace) {
        (Model::SentencePiece(m), Some(n), None) => {
            m.raw_ok() && n.is_sentencepiece() && pretok.is_none()
        }
        (Model::SentencePiece(m), None, Some(_)) => m.raw_ok(),
        _ => false,
    };
    enc.hf = Some(Box::new(Pipeline {
        raw_sentencepiece,
        normalizer,
        added,
        special_index,
        pretok,
        metaspace,
        metaspace_per_piece,
        model,
        decode_strip,
        decode_first,
        decode_last,
        post_processor,
    }));
    Ok(enc)
}

/// What SentencePiece's decoder chain makes of the tokens (see [`sentencepiece_decoder`]).
struct SpDecoder {
    /// How many leading spaces `Strip` takes off the text.
    strip: usize,
    /// Whether `ByteFallback` reads `<0xHH>` tokens as bytes.
    bytes: bool,
    /// The `Replace` steps, in order, each a string by a string in a token's text (`▁` by a
    /// space among them); any other than that one comes before `ByteFallback`.
    replaces: Vec<(String, String)>,
}

/// The decoder of a SentencePiece BPE model: a `Sequence` of `Replace` (`▁` by a space, and
/// others of a string by a string before `ByteFallback`: the unknown token's text by
/// sentencepiece's ` ⁇ `), `ByteFallback` (required with the model's byte fallback), `Fuse`
/// and a `Strip` of leading spaces after `Fuse`, which is how the shared models' files decode
/// (and how a token's bytes are read here). Anything else is refused by name.
fn sentencepiece_decoder(v: &Value, byte_fallback: bool) -> Result<SpDecoder> {
    let refuse = |what: &str| {
        Err(unsupported(&format!(
            "decoder {what} for SentencePiece BPE (supported: a Sequence of Replace('▁', ' '), \
             Replace of other strings before ByteFallback, ByteFallback, Fuse and \
             Strip(' ', n, 0) after Fuse)"
        )))
    };
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("none");
    if kind != "Sequence" {
        return refuse(kind);
    }
    let steps = v
        .get("decoders")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let (mut replace, mut fallback, mut fused, mut strip) = (false, false, false, 0);
    let mut replaces = Vec::new();
    for d in steps {
        let kind = d.get("type").and_then(Value::as_str).unwrap_or("?");
        match kind {
            "Replace" => {
                let from = d.get("pattern").and_then(|p| p.get("String"));
                let (Some(from), Some(to)) = (
                    from.and_then(Value::as_str),
                    d.get("content").and_then(Value::as_str),
                ) else {
                    return refuse("Replace other than of a string by a string");
                };
                if from == "\u{2581}" && to == " " {
                    replace = true;
                } else if from.is_empty() || fallback {
                    return refuse("Replace other than '▁' by ' ' after ByteFallback or of ''");
                }
                replaces.push((from.to_owned(), to.to_owned()));
            }
            "ByteFallback" => fallback = true,
            "Fuse" => fused = true,
            "Strip" => {
                let content = d.get("content").and_then(Value::as_str);
                let start = d.get("start").and_then(Value::as_u64);
                let stop = d.get("stop").and_then(Value::as_u64);
                match (content, start, stop) {
                    (Some(" "), Some(n), Some(0)) if fused && strip == 0 => {
                        strip = usize::try_from(n).unwrap_or(usize::MAX);
                    }
                    _ => return refuse("Strip other than of leading spaces after Fuse"),
                }
            }
            other => return refuse(other),
        }
    }
    if !replace {
        return refuse("Sequence without Replace('▁', ' ')");
    }
    if byte_fallback && !fallback {
        return refuse("Sequence without ByteFallback for a model with byte_fallback");
    }
    Ok(SpDecoder {
        strip,
        bytes: fallback,
        replaces,
    })
}

/// The decoder of a WordPiece model: HF's `WordPiece` decoder, as (prefix, cleanup).
/// Anything else is refused by name.
fn check_wordpiece_decoder(v: &Value) -> Result<(String, bool)> {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("none");
    if kind != "WordPiece" {
        return Err(unsupported(&format!(
            "decoder {kind} for a WordPiece model (supported: WordPiece)"
        )));
    }
    let prefix = match v.get("prefix") {
        None | Some(Value::Null) => "##".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(bad("decoder WordPiece: `prefix` is not a string")),
    };
    let cleanup = v.get("cleanup").and_then(Value::as_bool).unwrap_or(true);
    Ok((prefix, cleanup))
}

/// The text HF's `WordPiece` decoder makes of token `t` anywhere but first: `t` without
/// `prefix` if it starts with it, else a space and `t`; then `cleanup` (HF applies it to each
/// token on its own, so each token's text is fixed, and decoding joins them).
pub fn wordpiece_token_text(t: &str, prefix: &str, cleanup: bool) -> String {
    let text = match t.strip_prefix(prefix) {
        Some(rest) => rest.to_owned(),
        None => format!(" {t}"),
    };
    wordpiece_cleanup(text, cleanup)
}

/// HF's `WordPiece` decoder's `cleanup` of one token's text (a first token's text is `t`
/// itself, cleaned).
fn wordpiece_cleanup(text: String, cleanup: bool) -> String {
    if !cleanup {
        return text;
    }
    // HF's `decoders::wordpiece::cleanup`, in its order.
    text.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" do not", " don't")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

/// The decoder of a Unigram model: SentencePiece's chain (see [`sentencepiece_decoder`]) or
/// HF's `Metaspace` decoder (`▁` a space; the one in front of the text dropped unless its
/// `prepend_scheme` is `never`). Returns what [`sentencepiece_decoder`] returns.
fn unigram_decoder(v: &Value, byte_fallback: bool) -> Result<SpDecoder> {
    if v.get("type").and_then(Value::as_str) != Some("Metaspace") {
        return sentencepiece_decoder(v, byte_fallback);
    }
    if byte_fallback {
        return Err(unsupported(
            "decoder Metaspace for a model with byte_fallback (its bytes would not be read)",
        ));
    }
    let m = Metaspace::from_json(v)?.ok_or_else(|| bad("decoder Metaspace"))?;
    Ok(SpDecoder {
        strip: usize::from(m.prepend != metaspace::Prepend::Never),
        bytes: false,
        replaces: meta_as_space(),
    })
}

/// `▁` by a space: the one `Replace` of SentencePiece's decoders, and what `Metaspace`'s does.
fn meta_as_space() -> Vec<(String, String)> {
    vec![("\u{2581}".to_owned(), " ".to_owned())]
}

fn check_decoder(v: &Value) -> Result<()> {
    if v.is_null() {
        return Ok(());
    }
    match v.get("type").and_then(Value::as_str).unwrap_or("?") {
        "ByteLevel" => Ok(()),
        "Sequence" => {
            for d in v
                .get("decoders")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                check_decoder(d)?;
            }
            Ok(())
        }
        other => Err(unsupported(&format!("decoder {other}"))),
    }
}

fn check_post_processor(v: &Value) -> Result<()> {
    if v.is_null() {
        return Ok(());
    }
    // HF reads any object with `sep` and `cls` pairs as Bert's or Roberta's processor, whatever
    // its `type` (serde's untagged enum: the Python side, `hf/processors.py`, says which).
    let pair = |k: &str| {
        v.get(k).and_then(Value::as_array).is_some_and(|p| {
            p.len() == 2 && p[0].is_string() && p[1].as_u64().is_some_and(|i| i <= u32::MAX.into())
        })
    };
    if pair("sep") && pair("cls") {
        return Ok(());
    }
    match v.get("type").and_then(Value::as_str).unwrap_or("?") {
        "ByteLevel" | "TemplateProcessing" | "RobertaProcessing" | "BertProcessing" => Ok(()),
        "Sequence" => {
            for d in v
                .get("processors")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                check_post_processor(d)?;
            }
            Ok(())
        }
        other => Err(unsupported(&format!("post-processor {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::CharIndex;
    use crate::test_rng::Rng;

    /// `CharIndex::of` against a table of every byte's char, asked in rising order with
    /// repeats (as a text's tokens ask) and at random (steps back as well as forward).
    #[test]
    fn char_index_matches_a_table_in_any_order() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let chars = ['a', ' ', 'é', '€', '中', '😀', '\n'];
        for round in 0..200 {
            let text: String = (0..rng.below(40)).map(|_| *rng.pick(&chars)).collect();
            let bytes = text.as_bytes();
            let mut table = Vec::new();
            for (i, ch) in text.chars().enumerate() {
                table.extend(std::iter::repeat_n(i, ch.len_utf8()));
            }
            let mut asks: Vec<usize> = (0..30).map(|_| rng.below(bytes.len() + 2)).collect();
            if round % 2 == 0 {
                asks.sort_unstable();
            }
            let mut index = CharIndex::new(bytes);
            for i in asks {
                assert_eq!(index.of(i), table.get(i).copied(), "{text:?} byte {i}");
            }
        }
    }
}
