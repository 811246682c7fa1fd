//! Normalizers of a `tokenizer.json`, as HuggingFace `tokenizers` 0.23 applies them.
//!
//! Invariant: `Normalizer::apply` gives the text HuggingFace's normalizer gives, and, where
//! alignments are kept, the same alignment of every normalized byte to a byte range of the
//! original text: HF's `NormalizedString::transform` is followed step by step (a composed
//! char takes the alignment of the first char it replaces, an inserted char the one of the
//! char before it). The Unicode forms come from `unicode-normalization-alignments` 0.1.12,
//! the crate (and Unicode 9 tables) HuggingFace uses, so text normalizes exactly as there.

use crate::error::{Error, Result};
use serde_json::Value;
use unicode_normalization_alignments::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick};
use unicode_normalization_alignments::{IsNormalized, UnicodeNormalization};

#[derive(Clone, Debug)]
pub enum Normalizer {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
    Lowercase,
    Sequence(Vec<Normalizer>),
}

/// A normalized text and, when kept, each of its bytes' original byte range.
pub struct NString {
    pub text: String,
    pub align: Vec<(usize, usize)>,
}

impl NString {
    /// `text` unchanged; each byte aligned to its char's range, shifted by `base`.
    pub fn identity(text: &str, base: usize, keep: bool) -> Self {
        let mut align = Vec::new();
        if keep {
            align.reserve(text.len());
            for (b, c) in text.char_indices() {
                let len = c.len_utf8();
                align.extend(std::iter::repeat_n((base + b, base + b + len), len));
            }
        }
        NString {
            text: text.to_owned(),
            align,
        }
    }

    /// HF's `transform` over the whole string with `initial_offset` 0.
    fn transform(&mut self, dest: impl Iterator<Item = (char, isize)>, keep: bool) {
        let mut text = String::with_capacity(self.text.len());
        if !keep {
            text.extend(dest.map(|(c, _)| c));
            self.text = text;
            return;
        }
        let old: Vec<char> = self.text.chars().collect();
        let mut old_i = 0;
        let mut offset = 0usize;
        let mut align = Vec::with_capacity(self.align.len());
        for (c, change) in dest {
            let a = if change > 0 {
                if offset < 1 {
                    (0, 0)
                } else {
                    self.align[offset - 1]
                }
            } else {
                self.align.get(offset).copied().unwrap_or((0, 0))
            };
            if change <= 0 {
                if let Some(r) = old.get(old_i) {
                    offset += r.len_utf8();
                    old_i += 1;
                }
            }
            if change < 0 {
                for _ in 0..(-change) {
                    if let Some(r) = old.get(old_i) {
                        offset += r.len_utf8();
                        old_i += 1;
                    }
                }
            }
            align.extend(std::iter::repeat_n(a, c.len_utf8()));
            text.push(c);
        }
        self.text = text;
        self.align = align;
    }
}

impl Normalizer {
    /// The normalizer a `tokenizer.json` asks for (`null`: none); any other kind is refused.
    pub fn from_json(v: &Value) -> Result<Option<Normalizer>> {
        if v.is_null() {
            return Ok(None);
        }
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("?");
        Ok(Some(match kind {
            "NFC" => Normalizer::Nfc,
            "NFD" => Normalizer::Nfd,
            "NFKC" => Normalizer::Nfkc,
            "NFKD" => Normalizer::Nfkd,
            "Lowercase" => Normalizer::Lowercase,
            "Sequence" => {
                let list = v
                    .get("normalizers")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("normalizer Sequence without a `normalizers` list"))?;
                let mut steps = Vec::new();
                for s in list {
                    if let Some(n) = Normalizer::from_json(s)? {
                        steps.push(n);
                    }
                }
                if steps.is_empty() {
                    return Ok(None);
                }
                Normalizer::Sequence(steps)
            }
            other => {
                return Err(unsupported(&format!("normalizer {other}")));
            }
        }))
    }

    /// Whether this normalizer leaves `s` as it is (a quick check: `false` may be wrong
    /// only the safe way, sending the text through `apply`).
    pub fn leaves(&self, s: &str) -> bool {
        if s.is_ascii() && !matches!(self, Normalizer::Lowercase | Normalizer::Sequence(_)) {
            return true;
        }
        match self {
            Normalizer::Nfc => is_nfc_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Nfd => is_nfd_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Nfkc => is_nfkc_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Nfkd => is_nfkd_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Lowercase => !s.chars().any(|c| c.is_uppercase() || !c.is_ascii()),
            Normalizer::Sequence(v) => v.iter().all(|n| n.leaves(s)),
        }
    }

    /// Normalizes `s` in place (alignments too when `keep`).
    pub fn apply(&self, s: &mut NString, keep: bool) {
        let src = std::mem::take(&mut s.text);
        s.text = src.clone();
        match self {
            Normalizer::Nfc => s.transform(src.as_str().nfc(), keep),
            Normalizer::Nfd => s.transform(src.as_str().nfd(), keep),
            Normalizer::Nfkc => s.transform(src.as_str().nfkc(), keep),
            Normalizer::Nfkd => s.transform(src.as_str().nfkd(), keep),
            Normalizer::Lowercase => s.transform(
                src.chars().flat_map(|c| {
                    c.to_lowercase()
                        .enumerate()
                        .map(|(i, c)| (c, isize::from(i > 0)))
                }),
                keep,
            ),
            Normalizer::Sequence(v) => {
                for n in v {
                    n.apply(s, keep);
                }
            }
        }
    }
}

pub fn bad(m: &str) -> Error {
    Error::Vocab(format!("tokenizer.json: {m}"))
}

pub fn unsupported(what: &str) -> Error {
    Error::Vocab(format!(
        "tokenizer.json: {what} is not supported by ferrotok (yet); refusing rather than \
         tokenizing differently from HuggingFace"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfc_composes_and_aligns_to_the_first_char() {
        let mut s = NString::identity("e\u{301}x", 0, true);
        Normalizer::Nfc.apply(&mut s, true);
        assert_eq!(s.text, "\u{e9}x");
        assert_eq!(s.align, vec![(0, 1), (0, 1), (3, 4)]);
    }
}
