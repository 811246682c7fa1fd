//! The encoder: special-token split → pre-tokenization → BPE on each piece.
//!
//! Invariant: for every `text` and set of allowed special tokens, `encode`
//! returns the ids tiktoken's `CoreBPE.encode` returns: segments between allowed
//! special tokens are split by the pattern on their own (pieces never cross a
//! special token), each piece is a whole token if it is one, else its BPE.
//! Decoding is the concatenation of token bytes.

use crate::encode::bpe::piece_cache::{Local, PieceCache};
use crate::encode::bpe::tables::BpeVocab;
use crate::encode::bpe::{encode_piece, encode_piece_in, encode_piece_keyed, ShortFirst};
use crate::encode::pretok::{file_cuts, Splitter};
use crate::encode::special::SpecialMatcher;
use crate::error::{Error, Result};
use crate::runtime::interrupt::Tick;
use crate::vocab::{Rank, Vocab};
use rustc_hash::{FxHashMap, FxHashSet};

pub struct Encoder {
    /// The vocabulary, with the tables BPE builds from it.
    pub vocab: BpeVocab,
    pub splitter: Splitter,
    pub specials: SpecialMatcher,
    /// Pattern index of the special matcher -> rank.
    special_ranks: Vec<Rank>,
    pub(crate) cache: PieceCache,
    /// A HuggingFace `tokenizer.json` pipeline: when set, it encodes (see [`crate::pipeline`])
    /// and the rest of the encoder decodes and keeps the special tokens.
    pub hf: Option<Box<crate::pipeline::Pipeline>>,
    /// Ids that decode to other bytes than the vocabulary holds for them (empty but for a
    /// few `tokenizer.json` added tokens: HF decodes a normalized one as its normalized
    /// text, while its id matches, and so is stored as, its content).
    pub(crate) decode_as: FxHashMap<Rank, Box<[u8]>>,
}

/// Which special tokens `encode` may produce.
#[derive(Clone, Copy)]
pub enum Allowed<'a> {
    None,
    All,
    /// Indexed by the special matcher's pattern index.
    Some(&'a [bool]),
}

impl Allowed<'_> {
    #[inline]
    pub(crate) fn admits(&self, idx: usize) -> bool {
        match self {
            Allowed::None => false,
            Allowed::All => true,
            Allowed::Some(mask) => mask.get(idx).copied().unwrap_or(false),
        }
    }
    #[inline]
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Allowed::None)
    }
}

impl Encoder {
    /// Builds now what encoding otherwise builds at its first need: the vocabulary's tables
    /// ([`BpeVocab::build_tables`]), for a pattern on the general path its splitter's DFA,
    /// and a `tokenizer.json` pipeline's own (`Pipeline::build_tables`).
    /// For a program that forks workers: done before the fork, the workers share them.
    pub fn build_tables(&self) {
        self.vocab.build_tables();
        if let Splitter::General(g) = &self.splitter {
            g.has_dfa();
        }
        if let Some(hf) = &self.hf {
            hf.build_tables(&self.vocab);
        }
    }

    /// Which of [`Encoder::build_tables`]'s tables are built, by name.
    pub fn tables_built(&self) -> Vec<(&'static str, bool)> {
        let mut built = self.vocab.tables_built().to_vec();
        if let Splitter::General(g) = &self.splitter {
            built.push(("dfa", g.dfa_tried()));
        }
        if let Some(hf) = &self.hf {
            built.extend(hf.tables_built());
        }
        built
    }

    /// An encoder from the contents of a `.tiktoken` file (see [`crate::vocab::tiktoken_file`]).
    pub fn from_tiktoken(
        contents: &[u8],
        source: &str,
        specials: Vec<(String, Rank)>,
        pattern: &str,
    ) -> Result<Self> {
        Self::new(
            crate::vocab::tiktoken_file::parse(contents, source)?,
            specials,
            pattern,
        )
    }

    pub fn new(
        ranks: FxHashMap<Vec<u8>, Rank>,
        specials: Vec<(String, Rank)>,
        pattern: &str,
    ) -> Result<Self> {
        Self::with_decode_only(ranks, specials, Vec::new(), pattern)
    }

    /// [`Encoder::new`], plus ids that only decode: each to its text, kept with the special
    /// tokens in the vocabulary but never matched in a text (a `tokenizer.json` id whose
    /// bytes another id holds, as GPT-NeoX's runs of spaces or Llama 2's `<0x41>` beside
    /// `A`). A special token of the same text keeps its id.
    pub fn with_decode_only(
        ranks: FxHashMap<Vec<u8>, Rank>,
        specials: Vec<(String, Rank)>,
        decode_only: Vec<(String, Rank)>,
        pattern: &str,
    ) -> Result<Self> {
        let splitter = Splitter::new(pattern)?;
        let by_text: FxHashMap<&str, Rank> =
            specials.iter().map(|(t, r)| (t.as_str(), *r)).collect();
        let mut tokens: Vec<String> = by_text.keys().map(|t| t.to_string()).collect();
        tokens.sort();
        let special_ranks = tokens.iter().map(|t| by_text[t.as_str()]).collect();
        // Specials last: where a text is both, the vocabulary's map keeps the special's id.
        let mut all = decode_only;
        all.extend(specials);
        let vocab = BpeVocab::new(Vocab::new(ranks, all)?);
        Ok(Encoder {
            vocab,
            splitter,
            specials: SpecialMatcher::new(tokens),
            special_ranks,
            cache: PieceCache::new(),
            hf: None,
            decode_as: FxHashMap::default(),
        })
    }

    /// A mask over the special matcher's patterns for the given token texts
    /// (texts that are not special tokens are ignored, as tiktoken ignores them).
    pub fn allowed_mask<'s>(&self, allowed: impl IntoIterator<Item = &'s str>) -> Vec<bool> {
        let mut mask = vec![false; self.specials.tokens.len()];
        for t in allowed {
            if let Ok(i) = self.specials.tokens.binary_search_by(|x| x.as_str().cmp(t)) {
                mask[i] = true;
            }
        }
        mask
    }

    /// Encode text that contains no special tokens (or whose special tokens are
    /// to be read as ordinary text).
    pub fn encode_ordinary_into(&self, text: &str, out: &mut Vec<Rank>) -> Result<()> {
        if let Some(hf) = &self.hf {
            return hf.encode_into(self, text, Allowed::None, out);
        }
        let mut cache = self.cache.local();
        let vocab = &self.vocab;
        self.splitter.scan(
            text,
            &mut ShortFirst::new(
                vocab,
                text.as_bytes(),
                out,
                |_| true,
                |piece, key, out| encode_piece_keyed(vocab, piece, key, &mut cache, out),
            ),
        )
    }

    pub fn encode_ordinary(&self, text: &str) -> Result<Vec<Rank>> {
        let mut out = Vec::with_capacity(text.len() / 4 + 1);
        self.encode_ordinary_into(text, &mut out)?;
        Ok(out)
    }

    /// Does the text of any special token occur in `text`? When none does, no special token
    /// can be allowed or disallowed there, and `encode` is `encode_ordinary`.
    pub fn holds_special_text(&self, text: &str) -> bool {
        self.specials.occurs_in(text)
    }

    /// `encode_ordinary(text)` if no special token's text occurs in it, else `None`: the
    /// default `encode` call (nothing allowed, everything disallowed) in one pass over the
    /// specials instead of a Python regex search, for the text that needs no more.
    pub fn encode_unless_special(&self, text: &str) -> Result<Option<Vec<Rank>>> {
        if self.holds_special_text(text) {
            return Ok(None);
        }
        self.encode_ordinary(text).map(Some)
    }

    /// Encode with special tokens: the text between allowed special tokens is split and
    /// encoded on its own, so pieces never cross a special token.
    pub fn encode_into(&self, text: &str, allowed: Allowed<'_>, out: &mut Vec<Rank>) -> Result<()> {
        if let Some(hf) = &self.hf {
            return hf.encode_into(self, text, allowed, out);
        }
        self.encode_segments(text, allowed, out, |segment, out| {
            self.encode_ordinary_into(segment, out).map(|()| 0)
        })
        .map(|_| ())
    }

    /// [`Encoder::encode_into`], also returning how many tokens the last ordinary piece
    /// produced (0 if the text ends in a special token), which `encode_bytes` and
    /// `encode_with_unstable` need. A path of its own because keeping that count after every
    /// piece made `encode` and `count` ~10% slower.
    pub fn encode_into_tracking_last(
        &self,
        text: &str,
        allowed: Allowed<'_>,
        out: &mut Vec<Rank>,
    ) -> Result<usize> {
        if self.hf.is_some() {
            return Err(Error::Input(
                "encode_with_unstable and encode_bytes are not available for a HuggingFace \
                 tokenizer.json encoding"
                    .into(),
            ));
        }
        self.encode_segments(text, allowed, out, |segment, out| {
            self.encode_tracking_last(segment, out)
        })
    }

    /// Cuts `text` at the allowed special tokens: pushes their ids and hands each segment
    /// between them to `ordinary`; returns what `ordinary` returned for the last segment if
    /// the text ends in one, else 0.
    fn encode_segments(
        &self,
        text: &str,
        allowed: Allowed<'_>,
        out: &mut Vec<Rank>,
        mut ordinary: impl FnMut(&str, &mut Vec<Rank>) -> Result<usize>,
    ) -> Result<usize> {
        if allowed.is_none() {
            return ordinary(text, out);
        }
        let mut start = 0;
        let mut last_piece_len = 0;
        loop {
            let next = self
                .specials
                .find_allowed(text, start, &|i| allowed.admits(i));
            let end = next.map_or(text.len(), |(s, _, _)| s);
            let n = ordinary(&text[start..end], out)?;
            if start < end {
                last_piece_len = n;
            }
            match next {
                Some((_, e, idx)) => {
                    out.push(self.special_ranks[idx]);
                    start = e;
                    last_piece_len = 0;
                }
                None => break,
            }
        }
        Ok(last_piece_len)
    }

    fn encode_tracking_last(&self, text: &str, out: &mut Vec<Rank>) -> Result<usize> {
        let (vocab, mut cache) = (&self.vocab, self.cache.local());
        let mut last = 0;
        let mut tick = Tick::default();
        self.splitter.for_each_piece(text, |piece| {
            tick.poll()?;
            let before = out.len();
            encode_piece_in(vocab, text.as_bytes(), piece.as_bytes(), &mut cache, out)?;
            last = out.len() - before;
            Ok(())
        })?;
        Ok(last)
    }

    pub fn encode(&self, text: &str, allowed: Allowed<'_>) -> Result<Vec<Rank>> {
        self.encode_part(text, allowed, false)
    }

    /// Whether a text cut where `encode::pretok::file_cuts` cuts encodes, a part at a time
    /// ([`Encoder::encode_part`]), as the whole does: the pipeline's answer
    /// (`Pipeline::file_cuts_apply`), else the splitter's and the special tokens'.
    pub fn file_cuts_apply(&self) -> bool {
        match &self.hf {
            Some(hf) => hf.file_cuts_apply(),
            None => file_cuts::file_cuts_apply(
                self.splitter.kind(),
                self.specials.tokens.iter().map(String::as_str),
            ),
        }
    }

    /// The last place in `data[start..]` where a file may be cut for
    /// [`Encoder::file_cuts_apply`]: `encode::pretok::file_cuts`'s rule, or the pipeline's
    /// (`Pipeline::last_file_cut`). 0 if there is none.
    pub fn last_file_cut(&self, data: &[u8], start: usize) -> usize {
        match &self.hf {
            Some(hf) => hf.last_file_cut(data, start),
            None => file_cuts::last_file_cut(data, start),
        }
    }

    /// [`Encoder::encode`] of a part of a text cut where `encode::pretok::file_cuts` cuts
    /// (the command line's parts of a file); `continues`: the part is not the text's first,
    /// which only a `tokenizer.json` pipeline tells apart (see `Pipeline::encode_part_into`).
    pub fn encode_part(
        &self,
        text: &str,
        allowed: Allowed<'_>,
        continues: bool,
    ) -> Result<Vec<Rank>> {
        let mut out = Vec::with_capacity(text.len() / 4 + 1);
        self.encode_part_into(text, allowed, continues, &mut out)?;
        Ok(out)
    }

    fn encode_part_into(
        &self,
        text: &str,
        allowed: Allowed<'_>,
        continues: bool,
        out: &mut Vec<Rank>,
    ) -> Result<()> {
        match &self.hf {
            Some(hf) if continues => hf.encode_part_into(self, text, allowed, true, out),
            _ => self.encode_into(text, allowed, out),
        }
    }

    /// Number of tokens `encode_into` would produce, without keeping them.
    pub fn count(&self, text: &str, allowed: Allowed<'_>) -> Result<usize> {
        self.count_part(text, allowed, false)
    }

    /// [`Encoder::count`] of a part of a text, as [`Encoder::encode_part`] reads it.
    pub fn count_part(&self, text: &str, allowed: Allowed<'_>, continues: bool) -> Result<usize> {
        thread_local! {
            static BUF: std::cell::RefCell<Vec<Rank>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        BUF.with(|buf| {
            let mut buf = buf
                .try_borrow_mut()
                .map_err(|_| Error::Regex("re-entrant count".into()))?;
            buf.clear();
            self.encode_part_into(text, allowed, continues, &mut buf)?;
            let n = buf.len();
            if buf.capacity() > 1 << 22 {
                *buf = Vec::new(); // don't keep a huge buffer alive after one large text
            }
            Ok(n)
        })
    }

    /// BPE on the given bytes as one piece, no splitting.
    pub fn encode_single_piece(&self, bytes: &[u8]) -> Result<Vec<Rank>> {
        if self.hf.is_some() {
            return Err(Error::Input(
                "encode_single_piece is not available for a HuggingFace tokenizer.json encoding"
                    .into(),
            ));
        }
        let mut out = Vec::new();
        if !bytes.is_empty() {
            encode_piece(&self.vocab, bytes, &mut Local::none(), &mut out)?;
        }
        Ok(out)
    }

    /// The id of bytes that are one token (ordinary first, then special).
    pub fn encode_single_token(&self, bytes: &[u8]) -> Result<Rank> {
        if let Some(r) = self.vocab.rank(bytes) {
            return Ok(r);
        }
        if let Ok(s) = std::str::from_utf8(bytes) {
            if let Some(&r) = self.vocab.specials.get(s) {
                return Ok(r);
            }
        }
        Err(Error::UnknownBytes(bytes.to_vec()))
    }

    /// Appends the bytes of `ids` to `out`, polling for Ctrl-C every [`DECODE_POLL`] ids.
    pub fn decode_into(&self, ids: &[Rank], out: &mut Vec<u8>) -> Result<()> {
        for chunk in ids.chunks(DECODE_POLL) {
            if self.decode_as.is_empty() {
                self.vocab.decode_into(chunk, out)?;
            } else {
                let mut rest = chunk;
                while let Some((at, bytes)) = rest
                    .iter()
                    .enumerate()
                    .find_map(|(at, id)| Some((at, self.decode_as.get(id)?)))
                {
                    self.vocab.decode_into(&rest[..at], out)?;
                    out.extend_from_slice(bytes);
                    rest = &rest[at + 1..];
                }
                self.vocab.decode_into(rest, out)?;
            }
            crate::runtime::interrupt::poll()?;
        }
        Ok(())
    }

    /// The bytes id `id` decodes to, `None` if it is no token's.
    pub fn token_bytes(&self, id: Rank) -> Option<&[u8]> {
        match self.decode_as.get(&id) {
            Some(b) => Some(b),
            None => self.vocab.token_bytes(id),
        }
    }

    pub fn decode_bytes(&self, ids: &[Rank]) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        self.decode_into(ids, &mut out)?;
        Ok(out)
    }

    /// tiktoken's `_increase_last_piece_token_len`: pre-tokenization splits
    /// around whitespace can disappear when text is appended (cl100k's
    /// `\s*[\r\n]+`), so trailing all-whitespace tokens count as unstable too.
    fn widen_last_piece(&self, tokens: &[Rank], mut last: usize) -> usize {
        let all_space = |t: Rank| {
            self.vocab
                .ordinary_bytes(t)
                .is_some_and(|b| b.iter().all(|c| matches!(c, b' ' | b'\n' | b'\t')))
        };
        if last > 0 && all_space(tokens[tokens.len() - last]) {
            while last < tokens.len() && all_space(tokens[tokens.len() - last - 1]) {
                last += 1;
            }
        }
        last
    }

    /// tiktoken's `_encode_bytes`: bytes that may not be UTF-8. Valid UTF-8 is
    /// encoded as text; otherwise the valid prefix is encoded as text and the
    /// last piece's bytes plus the invalid tail are BPE-encoded together.
    pub fn encode_bytes(&self, bytes: &[u8]) -> Result<Vec<Rank>> {
        match std::str::from_utf8(bytes) {
            Ok(text) => self.encode_ordinary(text),
            Err(e) => {
                let valid = e.valid_up_to();
                // The prefix is valid UTF-8 by construction.
                let text = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
                let mut tokens = Vec::new();
                let last = self.encode_into_tracking_last(text, Allowed::None, &mut tokens)?;
                let last = self.widen_last_piece(&tokens, last);
                let mut unstable = Vec::new();
                if !tokens.is_empty() && last > 0 {
                    self.vocab
                        .decode_into(&tokens[tokens.len() - last..], &mut unstable)?;
                    tokens.truncate(tokens.len() - last);
                }
                unstable.extend_from_slice(&bytes[valid..]);
                if !unstable.is_empty() {
                    encode_piece(&self.vocab, &unstable, &mut Local::none(), &mut tokens)?;
                }
                Ok(tokens)
            }
        }
    }

    /// tiktoken's `encode_with_unstable`: the stable tokens, and every token
    /// sequence the unstable tail could become once more text is appended.
    pub fn encode_with_unstable(
        &self,
        text: &str,
        allowed: Allowed<'_>,
    ) -> Result<(Vec<Rank>, FxHashSet<Vec<Rank>>)> {
        let mut tokens = Vec::new();
        let last = self.encode_into_tracking_last(text, allowed, &mut tokens)?;
        let mut completions = FxHashSet::default();
        if last == 0 {
            return Ok((tokens, completions));
        }
        let last = self.widen_last_piece(&tokens, last);
        let mut unstable = Vec::new();
        self.vocab
            .decode_into(&tokens[tokens.len() - last..], &mut unstable)?;
        tokens.truncate(tokens.len() - last);
        if unstable.is_empty() {
            return Ok((tokens, completions));
        }

        let vocab = &self.vocab;
        let sorted = vocab.sorted_ranks();
        let bytes_of = |i: usize| vocab.ordinary_bytes(sorted[i]).unwrap_or_default();
        if unstable.len() > 256 {
            // Shorter tails cannot pass the limit with any vocabulary tiktoken loads quickly.
            self.check_unstable_work(&unstable, sorted)?;
        }
        // Every single token that starts with the unstable bytes.
        let mut point = sorted.partition_point(|&r| {
            vocab.ordinary_bytes(r).unwrap_or_default() < unstable.as_slice()
        });
        while point < sorted.len() && bytes_of(point).starts_with(&unstable) {
            completions.insert(vec![sorted[point]]);
            point += 1;
        }
        // A token straddling each other split point: prefix + a token starting
        // with the suffix, re-encoded, cut once it covers the unstable bytes.
        for i in 1..unstable.len() {
            let (prefix, suffix) = unstable.split_at(i);
            let mut point =
                sorted.partition_point(|&r| vocab.ordinary_bytes(r).unwrap_or_default() < suffix);
            while point < sorted.len() && bytes_of(point).starts_with(suffix) {
                crate::runtime::interrupt::poll()?;
                let possibility = [prefix, bytes_of(point)].concat();
                let encoded = match std::str::from_utf8(&possibility) {
                    Ok(s) => self.encode_ordinary(s)?,
                    Err(_) => self.encode_single_piece(&possibility)?,
                };
                let mut seq = Vec::new();
                let mut seq_len = 0;
                for t in encoded {
                    seq.push(t);
                    seq_len += vocab.token_bytes(t).map_or(0, |b| b.len());
                    if seq_len >= unstable.len() {
                        break;
                    }
                }
                completions.insert(seq);
                point += 1;
            }
        }
        // A split before trailing whitespace may appear once text follows.
        if unstable.len() > 1 {
            if let Some((c, clen)) = last_char(&unstable) {
                if unstable.len() > clen && c.is_whitespace() {
                    let cut = unstable.len() - clen;
                    let mut re = self.encode_single_piece(&unstable[..cut])?;
                    re.extend(self.encode_single_piece(&unstable[cut..])?);
                    completions.insert(re);
                }
            }
        }
        Ok((tokens, completions))
    }
}

/// Bytes `encode_with_unstable` may re-encode for its completions (see
/// [`Encoder::check_unstable_work`]).
pub const UNSTABLE_WORK_LIMIT: usize = 1 << 27;

impl Encoder {
    /// Refuses an unstable tail whose completions would take more than
    /// [`UNSTABLE_WORK_LIMIT`] bytes of re-encoding (each is the tail's prefix and a token,
    /// encoded whole), before any is encoded.
    ///
    /// Why: after `'x' + ' ' * 100000` the whole whitespace run is unstable, and each of the
    /// ~44,000 cl100k tokens that begin with a space completes it: 4.4 GB of encoding (21 s),
    /// and ~55 million ids of completions, over 1 GB as Python lists. tiktoken runs the same
    /// algorithm (75 s for 1,000 spaces); a tail past the limit is an error naming it.
    fn check_unstable_work(&self, unstable: &[u8], sorted: &[Rank]) -> Result<()> {
        let vocab = &self.vocab;
        let bytes_of = |i: usize| vocab.ordinary_bytes(sorted[i]).unwrap_or_default();
        let longest = (0..sorted.len())
            .map(|i| bytes_of(i).len())
            .max()
            .unwrap_or(0);
        let mut work = 0usize;
        for i in 1..unstable.len() {
            let suffix = &unstable[i..];
            if suffix.len() > longest {
                continue; // no token starts with it
            }
            let lo =
                sorted.partition_point(|&r| vocab.ordinary_bytes(r).unwrap_or_default() < suffix);
            let hi = lo
                + sorted[lo..].partition_point(|&r| {
                    vocab
                        .ordinary_bytes(r)
                        .unwrap_or_default()
                        .starts_with(suffix)
                });
            work = work.saturating_add((hi - lo).saturating_mul(i + longest));
        }
        if work > UNSTABLE_WORK_LIMIT {
            return Err(Error::Input(format!(
                "encode_with_unstable: the last {} bytes of the text are unstable, and their \
                 completions would take about {work} bytes of encoding, past the limit of \
                 {UNSTABLE_WORK_LIMIT}; end the text elsewhere (long runs of whitespace at the \
                 end are all unstable)",
                unstable.len()
            )));
        }
        Ok(())
    }
}

/// Ids decoded between two polls for Ctrl-C (~0.1 ms of decoding).
const DECODE_POLL: usize = 1 << 16;

/// The last UTF-8 character of `bytes` and its length, if the tail is valid UTF-8.
fn last_char(bytes: &[u8]) -> Option<(char, usize)> {
    let start = bytes.len().saturating_sub(4);
    for i in (start..bytes.len()).rev() {
        if let Ok(s) = std::str::from_utf8(&bytes[i..]) {
            let c = s.chars().next()?;
            return (c.len_utf8() == bytes.len() - i).then_some((c, bytes.len() - i));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    /// A long encode on each custom-pattern path and on the scanners' (the encoder's own
    /// poll) stops when the hook says so.
    #[test]
    fn a_long_encode_polls_the_hook() {
        use rustc_hash::FxHashMap;
        let ranks: FxHashMap<Vec<u8>, crate::Rank> =
            (0..=255u8).map(|b| (vec![b], b as crate::Rank)).collect();
        let text = "ab cd ".repeat(4 << 20);
        for pattern in [
            r"\S+|\s+",
            r"\S+(?=\s)|\s+|\S",
            crate::encode::pretok::CL100K_PATTERN,
        ] {
            let enc = crate::Encoder::new(ranks.clone(), Vec::new(), pattern).unwrap();
            let r = crate::runtime::interrupt::with_hook(|| true, || enc.encode_ordinary(&text));
            assert_eq!(r, Err(crate::Error::Interrupted), "{pattern}");
            let r = crate::runtime::interrupt::with_hook(|| false, || enc.encode_ordinary("ab cd"));
            assert_eq!(r.map(|ids| ids.len()), Ok(5), "{pattern}");
        }
    }
}
