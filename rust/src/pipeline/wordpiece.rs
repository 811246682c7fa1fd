//! WordPiece (BERT and its kin: BGE, MiniLM, E5) as HuggingFace's `WordPiece` model runs it.
//!
//! Invariant: `encode_word(w)` appends HF's `WordPiece::tokenize(w)` ids for a pre-token `w`,
//! and `encode_word_with_offsets` also each id's byte range in `w`. A word of more than
//! `max_input_chars_per_word` chars is the unknown token. Otherwise it is read greedily from
//! the left: at each position the longest text that is a token (after the first position,
//! the continuing-subword prefix `##` and the text), and the position moves past it; if no
//! text at some position is a token, the whole word is the unknown token.
//!
//! Two things that change no id: the continuation tokens sit in a map of their own, keyed
//! without the prefix (`##ing` is a token iff `ing` is a key there), so no text is copied to
//! put the prefix in front; and the longest text tried at a position is no longer than the
//! longest token of its map that starts with the same two bytes (HF tries the whole rest of
//! the word first, and shortens it a char at a time: every text longer than that is no
//! token). A word read once is kept in the piece cache, as a BPE model's words are. The maps
//! are the engine's [`TokenTable`] (a fingerprint a slot, the texts in one buffer): a miss,
//! most of a long word's look-ups, is decided without reading a text.

use super::normalizers::bad;
use crate::encode::bpe::piece_cache::{Local, PieceCache};
use crate::error::{Error, Result};
use crate::vocab::token_table::{hash_bytes, TokenTable};
use rustc_hash::FxHashMap;

/// Texts -> ids: a [`TokenTable`] over the texts laid end to end, keyed by each text's
/// index here (so ids may repeat, or be far apart, as a file gives them). `WordLevel` keeps
/// its words in one too.
pub(super) struct Texts {
    table: TokenTable,
    /// Per text, its start and end in `bytes`, and its id.
    spans: Vec<(u32, u32)>,
    ids: Vec<u32>,
    bytes: Vec<u8>,
    /// The longest text, in bytes.
    longest: usize,
    /// Per first two bytes `(x << 8) | y`: the longest text of at least 2 bytes that starts
    /// with them (0 if none; [`UNBOUNDED`] if 255 bytes or more, then `longest` bounds it).
    longest_from: Box<[u8]>,
}

/// The `vocab` object (token text -> id) of a `model` of kind `model` (WordPiece's,
/// WordLevel's), each id a u32.
pub(super) fn vocab_object(v: &serde_json::Value, model: &str) -> Result<FxHashMap<String, u32>> {
    let vocab_json = v
        .get("vocab")
        .and_then(serde_json::Value::as_object)
        .ok_or_else(|| bad(&format!("{model} model without a `vocab` object")))?;
    let mut vocab: FxHashMap<String, u32> = FxHashMap::default();
    vocab.reserve(vocab_json.len());
    for (t, id) in vocab_json {
        let id = id
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .ok_or_else(|| bad(&format!("{model} vocab: the id of {t:?} is not a u32")))?;
        vocab.insert(t.clone(), id);
    }
    Ok(vocab)
}

/// A `longest_from` entry that does not fit a byte.
const UNBOUNDED: u8 = u8::MAX;

impl Texts {
    pub(super) fn new(entries: &[(&[u8], u32)]) -> Texts {
        let mut spans = Vec::with_capacity(entries.len());
        let mut bytes = Vec::new();
        for &(t, _) in entries {
            let start = bytes.len() as u32;
            bytes.extend_from_slice(t);
            spans.push((start, bytes.len() as u32));
        }
        let keys = entries.iter().enumerate().map(|(i, &(t, _))| (t, i as u32));
        Texts {
            table: TokenTable::new(keys),
            spans,
            ids: entries.iter().map(|&(_, id)| id).collect(),
            bytes,
            longest: entries.iter().map(|(t, _)| t.len()).max().unwrap_or(0),
            longest_from: {
                let mut l = vec![0u8; 1 << 16];
                for &(t, _) in entries {
                    if let [x, y, ..] = *t {
                        let e = &mut l[usize::from(x) << 8 | usize::from(y)];
                        *e = (*e).max(u8::try_from(t.len()).unwrap_or(UNBOUNDED));
                    }
                }
                l.into_boxed_slice()
            },
        }
    }

    /// The longest text that may be a token at `b[start..]`: none is longer than the longest
    /// starting with the same two bytes (one byte is always tried).
    #[inline]
    fn longest_at(&self, b: &[u8], start: usize) -> usize {
        match b.get(start..start + 2) {
            Some(&[x, y]) => match self.longest_from[usize::from(x) << 8 | usize::from(y)] {
                UNBOUNDED => self.longest,
                n => usize::from(n).max(1),
            },
            _ => self.longest,
        }
    }

    /// The id of `text`, if it is one of the texts.
    #[inline]
    pub(super) fn get(&self, text: &[u8]) -> Option<u32> {
        let i = self.table.get(text, |i| {
            let (a, b) = self.spans[i as usize];
            &self.bytes[a as usize..b as usize]
        })?;
        Some(self.ids[i as usize])
    }
}

pub struct WordPiece {
    /// Token text -> id, for the text at a word's start.
    first: Texts,
    /// Continuation token text without its prefix -> id.
    cont: Texts,
    /// The unknown token's id, if the vocabulary has it (HF fails a word that needs it
    /// otherwise, and so does this).
    unk: Option<u32>,
    unk_token: String,
    max_chars: usize,
    cache: PieceCache,
}

impl WordPiece {
    /// The model of a `tokenizer.json`'s `model` object (`type` WordPiece), and its vocabulary
    /// (token text -> id).
    pub fn from_json(v: &serde_json::Value) -> Result<(Self, FxHashMap<String, u32>)> {
        use serde_json::Value;
        let vocab = vocab_object(v, "WordPiece")?;
        let text = |k: &str, default: &str| -> Result<String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(default.to_owned()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(bad(&format!("WordPiece `{k}` is not a string"))),
            }
        };
        let unk_token = text("unk_token", "[UNK]")?;
        let prefix = text("continuing_subword_prefix", "##")?;
        let max_chars = match v.get("max_input_chars_per_word") {
            None | Some(Value::Null) => 100,
            Some(x) => x
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad("WordPiece `max_input_chars_per_word` is not a count"))?,
        };
        Ok((Self::new(&vocab, unk_token, &prefix, max_chars), vocab))
    }

    pub fn new(
        vocab: &FxHashMap<String, u32>,
        unk_token: String,
        prefix: &str,
        max_chars: usize,
    ) -> Self {
        // By id, so the tables are the same from run to run.
        let mut by_id: Vec<(&[u8], u32)> =
            vocab.iter().map(|(t, &id)| (t.as_bytes(), id)).collect();
        by_id.sort_unstable_by_key(|&(_, id)| id);
        let cont: Vec<(&[u8], u32)> = by_id
            .iter()
            .filter_map(|&(t, id)| Some((t.strip_prefix(prefix.as_bytes())?, id)))
            .collect();
        WordPiece {
            first: Texts::new(&by_id),
            cont: Texts::new(&cont),
            unk: vocab.get(&unk_token).copied(),
            unk_token,
            max_chars,
            cache: PieceCache::new(),
        }
    }

    pub fn cache(&self) -> Local<'_> {
        self.cache.local()
    }

    fn unk(&self) -> Result<u32> {
        self.unk.ok_or_else(|| {
            Error::Input(format!(
                "WordPiece: the unknown token {:?} is not in the vocabulary (HF fails the same \
                 word with MissingUnkToken)",
                self.unk_token
            ))
        })
    }

    /// Appends the ids of pre-token `w` (see the module docs).
    #[inline]
    pub fn encode_word(&self, w: &str, cache: &mut Local<'_>, out: &mut Vec<u32>) -> Result<()> {
        let b = w.as_bytes();
        // Most words of real text are one token.
        let whole_tried = b.len() <= self.first.longest && w.len() <= self.max_chars;
        if whole_tried {
            if let Some(id) = self.first.get(b) {
                out.push(id);
                return Ok(());
            }
        }
        let h = hash_bytes(b);
        if cache.get(b, h, out) {
            return Ok(());
        }
        let at = out.len();
        self.greedy(w, whole_tried, |id, _, _| out.push(id))?;
        cache.put(b, h, &out[at..]);
        Ok(())
    }

    /// [`WordPiece::encode_word`] with each id's byte range in `w`.
    pub fn encode_word_with_offsets(
        &self,
        w: &str,
        out: &mut Vec<(u32, usize, usize)>,
    ) -> Result<()> {
        self.greedy(w, false, |id, a, b| out.push((id, a, b)))
    }

    /// HF's `WordPiece::tokenize`: calls `emit(id, start, end)` for each sub-token of `w`
    /// (`whole_tried`: `w` is known not to be a token, and is not looked up again).
    fn greedy(
        &self,
        w: &str,
        whole_tried: bool,
        mut emit: impl FnMut(u32, usize, usize),
    ) -> Result<()> {
        // A word longer than `max_chars` chars has more than `max_chars` bytes.
        if w.len() > self.max_chars && w.chars().count() > self.max_chars {
            emit(self.unk()?, 0, w.len());
            return Ok(());
        }
        let b = w.as_bytes();
        // The sub-tokens are found first and emitted after: a word with a position where no
        // text is a token is the unknown token alone.
        let mut found: Vec<(u32, usize, usize)> = Vec::new();
        let mut start = 0;
        while start < b.len() {
            let map = if start == 0 { &self.first } else { &self.cont };
            let mut end = b.len().min(start + map.longest_at(b, start));
            if whole_tried && start == 0 && end == b.len() {
                end -= 1;
            }
            while !w.is_char_boundary(end) {
                end -= 1;
            }
            let mut hit = None;
            while start < end {
                if let Some(id) = map.get(&b[start..end]) {
                    hit = Some(id);
                    break;
                }
                end -= 1;
                while !w.is_char_boundary(end) {
                    end -= 1;
                }
            }
            match hit {
                Some(id) => {
                    found.push((id, start, end));
                    start = end;
                }
                None => {
                    emit(self.unk()?, 0, b.len());
                    return Ok(());
                }
            }
        }
        for (id, a, e) in found {
            emit(id, a, e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tokens: &[&str], max_chars: usize) -> WordPiece {
        let vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        WordPiece::new(&vocab, "[UNK]".into(), "##", max_chars)
    }

    fn ids(m: &WordPiece, w: &str) -> Vec<(u32, usize, usize)> {
        let mut out = Vec::new();
        m.encode_word_with_offsets(w, &mut out).unwrap();
        let mut plain = Vec::new();
        m.encode_word(w, &mut Local::none(), &mut plain).unwrap();
        assert_eq!(plain, out.iter().map(|x| x.0).collect::<Vec<_>>());
        out
    }

    #[test]
    fn greedy_longest_first_with_the_prefix_after_the_start() {
        let m = model(
            &["[UNK]", "un", "##aff", "##able", "una", "##ffable", "a"],
            100,
        );
        // "una" is longer than "un" at the start, then "##ffable".
        assert_eq!(ids(&m, "unaffable"), [(4, 0, 3), (5, 3, 9)]);
        // No token at some position: the whole word is the unknown token.
        assert_eq!(ids(&m, "unax"), [(0, 0, 4)]);
        // A continuation is looked up with its prefix only after the start.
        assert_eq!(ids(&m, "aff"), [(0, 0, 3)]);
    }

    #[test]
    fn long_words_and_multibyte_chars() {
        let m = model(&["[UNK]", "é", "##é", "ab"], 3);
        assert_eq!(ids(&m, "ééé"), [(1, 0, 2), (2, 2, 4), (2, 4, 6)]);
        // Four chars are more than 3: unknown, though each char is a token.
        assert_eq!(ids(&m, "éééé"), [(0, 0, 8)]);
        // Four bytes in three chars: the bound counts chars.
        assert_eq!(ids(&m, "abé"), [(3, 0, 2), (2, 2, 4)]);
    }

    /// HF's search with no bound: the whole rest of the word first, a char shorter each time.
    fn plain_greedy(tokens: &[&str], w: &str) -> Vec<(u32, usize, usize)> {
        let id = |t: &str| tokens.iter().position(|&x| x == t).map(|i| i as u32);
        let (mut found, mut start) = (Vec::new(), 0);
        while start < w.len() {
            let hit = w[start..]
                .char_indices()
                .map(|(i, c)| start + i + c.len_utf8())
                .rev()
                .find_map(|end| {
                    let t = &w[start..end];
                    let t = if start == 0 {
                        t.to_owned()
                    } else {
                        format!("##{t}")
                    };
                    id(&t).map(|i| (i, start, end))
                });
            match hit {
                Some(h) => {
                    found.push(h);
                    start = h.2;
                }
                None => return vec![(0, 0, w.len())],
            }
        }
        found
    }

    /// The bound by first two bytes gives HF's sub-tokens: tokens of one, two and many chars,
    /// multibyte chars, and a token too long for the bound's byte (300 bytes).
    #[test]
    fn the_two_byte_bound_changes_no_token() {
        let long = "ab".repeat(150);
        let cont_long = format!("##{long}");
        let tokens = [
            "[UNK]", "a", "ab", "abab", "b", "##b", "##a", "##ba", "é", "##é", "éa", "##éab", "x",
            "##x", &long, &cont_long,
        ];
        let m = model(&tokens, 1000);
        let mut rng = crate::test_rng::Rng(0x9E37_79B9_7F4A_7C15);
        let alphabet = ["a", "b", "é", "x", "y"];
        for n in 0..3000 {
            let w: String = (0..1 + n % 40).map(|_| *rng.pick(&alphabet)).collect();
            assert_eq!(ids(&m, &w), plain_greedy(&tokens, &w), "{w:?}");
        }
        let w = format!("{long}{long}a");
        assert_eq!(ids(&m, &w), plain_greedy(&tokens, &w));
    }

    #[test]
    fn ids_may_repeat_or_lie_far_apart() {
        let vocab = [
            ("a", 5u32),
            ("b", 5),
            ("big", 4_000_000_000),
            ("##g", 7),
            ("[UNK]", 0),
        ]
        .into_iter()
        .map(|(t, id)| (t.to_string(), id))
        .collect();
        let m = WordPiece::new(&vocab, "[UNK]".into(), "##", 100);
        assert_eq!(ids(&m, "a"), [(5, 0, 1)]);
        assert_eq!(ids(&m, "b"), [(5, 0, 1)]);
        assert_eq!(ids(&m, "big"), [(4_000_000_000, 0, 3)]);
        assert_eq!(ids(&m, "bg"), [(5, 0, 1), (7, 1, 2)]);
    }

    #[test]
    fn a_missing_unknown_token_is_an_error_only_where_needed() {
        let vocab = [("a".to_string(), 0u32)].into_iter().collect();
        let m = WordPiece::new(&vocab, "[UNK]".into(), "##", 100);
        assert_eq!(ids(&m, "a"), [(0, 0, 1)]);
        let mut out = Vec::new();
        assert!(m.encode_word_with_offsets("b", &mut out).is_err());
    }
}
