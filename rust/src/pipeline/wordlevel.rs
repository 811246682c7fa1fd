//! WordLevel (a vocabulary of whole words: the models people train with `tokenizers`'
//! `WordLevelTrainer`, character-level and chemistry vocabularies) as HuggingFace's
//! `WordLevel` model runs it.
//!
//! Invariant: `encode_word(w)` appends HF's `WordLevel::tokenize(w)` id for a pre-token `w`:
//! its id if `w` is a token, else the unknown token's, covering the whole word; where the
//! vocabulary lacks the unknown token that word is an error, as HF's `MissingUnkToken` is.
//! A word is one look-up in the engine's [`TokenTable`] (through WordPiece's `Texts`), so no
//! word is cached.

use super::normalizers::bad;
use super::wordpiece::{vocab_object, Texts};
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;

pub struct WordLevel {
    words: Texts,
    /// The unknown token's id, if the vocabulary has it.
    unk: Option<u32>,
    unk_token: String,
}

impl WordLevel {
    /// The model of a `tokenizer.json`'s `model` object (`type` WordLevel), and its
    /// vocabulary (token text -> id).
    pub fn from_json(v: &serde_json::Value) -> Result<(Self, FxHashMap<String, u32>)> {
        use serde_json::Value;
        let vocab = vocab_object(v, "WordLevel")?;
        // HF's loader wants it, as a string, whether or not the vocabulary holds it.
        let unk_token = match v.get("unk_token") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(bad("WordLevel model without an `unk_token` string")),
        };
        Ok((Self::new(&vocab, unk_token), vocab))
    }

    pub fn new(vocab: &FxHashMap<String, u32>, unk_token: String) -> Self {
        // By id, so the table is the same from run to run.
        let mut by_id: Vec<(&[u8], u32)> =
            vocab.iter().map(|(t, &id)| (t.as_bytes(), id)).collect();
        by_id.sort_unstable_by_key(|&(_, id)| id);
        WordLevel {
            words: Texts::new(&by_id),
            unk: vocab.get(&unk_token).copied(),
            unk_token,
        }
    }

    /// The id of pre-token `w` (see the module docs).
    #[inline]
    pub fn word_id(&self, w: &str) -> Result<u32> {
        match self.words.get(w.as_bytes()).or(self.unk) {
            Some(id) => Ok(id),
            None => Err(Error::Input(format!(
                "WordLevel: {w:?} is no token and the unknown token {:?} is not in the \
                 vocabulary (HF fails the same word with MissingUnkToken)",
                self.unk_token
            ))),
        }
    }

    /// Appends the id of pre-token `w`.
    #[inline]
    pub fn encode_word(&self, w: &str, out: &mut Vec<u32>) -> Result<()> {
        out.push(self.word_id(w)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tokens: &[(&str, u32)], unk: &str) -> WordLevel {
        let vocab = tokens.iter().map(|&(t, id)| (t.to_string(), id)).collect();
        WordLevel::new(&vocab, unk.into())
    }

    #[test]
    fn a_word_is_its_token_or_the_unknown_token() {
        let m = model(
            &[("<unk>", 0), ("hello", 7), ("é", 3), ("big", 4_000_000_000)],
            "<unk>",
        );
        let mut out = Vec::new();
        for w in ["hello", "é", "hell", "helloo", "big", "ꙮ"] {
            m.encode_word(w, &mut out).unwrap();
        }
        assert_eq!(out, [7, 3, 0, 0, 4_000_000_000, 0]);
    }

    #[test]
    fn a_missing_unknown_token_is_an_error_only_where_needed() {
        let m = model(&[("a", 0), ("b", 0)], "[UNK]");
        assert_eq!(m.word_id("a").unwrap(), 0);
        assert_eq!(m.word_id("b").unwrap(), 0);
        let e = m.word_id("c").unwrap_err().to_string();
        assert!(e.contains("MissingUnkToken") && e.contains("[UNK]"), "{e}");
    }
}
