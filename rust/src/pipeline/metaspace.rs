//! HF's `Metaspace` pre-tokenizer, the newer way to write SentencePiece's layout (transformers'
//! `LlamaConverter` without `legacy`): no normalizer, and this step makes each space `▁`, puts
//! a `▁` in front of a piece, and (with `split`) cuts before every `▁`.
//!
//! Invariant: for a segment `s` (a part of the text between added tokens, after the
//! normalizer) that starts the whole text or not (`at_start`), [`Metaspace::apply`] gives HF's
//! text and alignments of `s` after this step: `' '` replaced by `▁` (`NormalizedString::
//! replace`), then a `▁` put in front (`prepend`) unless the text now starts with one, with
//! `prepend_scheme` `always`, or `first` and `at_start` (HF: the piece's original offset is
//! 0), never with `never`. With `split` HF then cuts before each `▁` (`MergedWithNext`): every
//! piece is a word of its own.

use super::normalizers::{bad, unsupported, NString};
use crate::error::Result;
use serde_json::Value;

/// The replacement char this supports (HF's default, and every SentencePiece model's).
pub const META: char = '\u{2581}';

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prepend {
    Always,
    First,
    Never,
}

#[derive(Clone, Copy, Debug)]
pub struct Metaspace {
    pub prepend: Prepend,
    /// Whether the piece is cut before each `▁`.
    pub split: bool,
}

impl Metaspace {
    /// The `Metaspace` of a `pre_tokenizer` object; `None` for any other pre-tokenizer.
    /// Refused by name: another replacement char, an unknown `prepend_scheme`.
    pub fn from_json(v: &Value) -> Result<Option<Metaspace>> {
        // A Sequence of it alone is it (DeBERTa-v2's converter writes one).
        if let Some([one]) = sequence_steps(v) {
            return Metaspace::from_json(one);
        }
        if v.get("type").and_then(Value::as_str) != Some("Metaspace") {
            return Ok(None);
        }
        let replacement = v
            .get("replacement")
            .and_then(Value::as_str)
            .unwrap_or("\u{2581}");
        if replacement != META.to_string() {
            return Err(unsupported(&format!(
                "pre-tokenizer Metaspace with replacement {replacement:?} (only '▁')"
            )));
        }
        // HF reads a legacy `add_prefix_space` as `always` / `never`.
        let legacy = v.get("add_prefix_space").and_then(Value::as_bool);
        let prepend = match v.get("prepend_scheme").and_then(Value::as_str) {
            Some("always") => Prepend::Always,
            Some("first") => Prepend::First,
            Some("never") => Prepend::Never,
            Some(other) => return Err(bad(&format!("Metaspace prepend_scheme {other:?}"))),
            None if legacy == Some(false) => Prepend::Never,
            None => Prepend::Always,
        };
        let split = v.get("split").and_then(Value::as_bool).unwrap_or(true);
        Ok(Some(Metaspace { prepend, split }))
    }

    /// The `Metaspace` that ends a `Sequence` of other steps (T5's files: `WhitespaceSplit`
    /// first; DeBERTa-v2's with `split_by_punct`: `Punctuation`), and a `Sequence` of those
    /// steps, which cut the text into pieces that it then acts on one by one; `None` for any
    /// other pre-tokenizer.
    pub fn after_steps(v: &Value) -> Result<Option<(Metaspace, Value)>> {
        match sequence_steps(v) {
            Some([before @ .., last]) if !before.is_empty() => {
                Ok(Metaspace::from_json(last)?.map(|m| {
                    let rest = serde_json::json!({"type": "Sequence", "pretokenizers": before});
                    (m, rest)
                }))
            }
            _ => Ok(None),
        }
    }

    /// Whether a `▁` goes in front of segment `s` (see the module docs).
    #[inline]
    pub fn prefix(&self, s: &str, at_start: bool) -> bool {
        let scheme = match self.prepend {
            Prepend::Always => true,
            Prepend::First => at_start,
            Prepend::Never => false,
        };
        // After the replacement, the text starts with `▁` iff it started with a space or `▁`.
        scheme && !s.is_empty() && !s.starts_with([' ', META])
    }

    /// `s` after this step into `out` (cleared first), without alignments.
    pub fn apply_text(&self, s: &str, at_start: bool, out: &mut String) {
        out.clear();
        if self.prefix(s, at_start) {
            out.push(META);
        }
        out.extend(s.chars().map(|c| if c == ' ' { META } else { c }));
    }

    /// `s` after this step, with alignments when `keep` (see the module docs).
    pub fn apply(&self, s: &mut NString, at_start: bool, keep: bool) {
        let prefix = self.prefix(&s.text, at_start);
        s.replace(" ", "\u{2581}", keep);
        if prefix {
            s.prepend("\u{2581}", keep);
        }
    }
}

/// Calls `f(start, end)` for each piece of `t`, a text after this step: the whole text, or
/// with `split` each part that starts at a `▁` (HF's split on `▁`, `MergedWithNext`: a `▁`
/// goes with what follows it, and a `▁` before another is a piece of its own).
pub fn words(t: &str, split: bool, mut f: impl FnMut(usize, usize) -> Result<()>) -> Result<()> {
    if t.is_empty() {
        return Ok(());
    }
    if !split {
        return f(0, t.len());
    }
    let mut start = 0;
    for (i, _) in t.match_indices(META) {
        if i > start {
            f(start, i)?;
            start = i;
        }
    }
    f(start, t.len())
}

/// The steps of a pre-tokenizer `Sequence`, `None` for any other pre-tokenizer.
fn sequence_steps(v: &Value) -> Option<&[Value]> {
    if v.get("type").and_then(Value::as_str) != Some("Sequence") {
        return None;
    }
    v.get("pretokenizers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
}
