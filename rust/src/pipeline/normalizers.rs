//! Normalizers of a `tokenizer.json`, as HuggingFace `tokenizers` 0.23 applies them.
//!
//! Invariant: `Normalizer::apply` gives the text HuggingFace's normalizer gives, and, where
//! alignments are kept, the same alignment of every normalized byte to a byte range of the
//! original text: HF's `NormalizedString::transform` is followed step by step (a composed
//! char takes the alignment of the first char it replaces, an inserted char the one of the
//! char before it; `Prepend`'s chars take the first char's, `Replace`'s new chars the last
//! replaced byte's, whether the pattern is a string or a regex; `BertNormalizer`'s removed
//! chars widen the kept char before them, as do `StripAccents`' marks; `Strip` and
//! `Precompiled` keep HF's quirks, named where they are done). A step whose text is already
//! in its form is skipped, as its transform would move no alignment. The Unicode forms come
//! from `unicode-normalization-alignments` 0.1.12, the crate (and Unicode 9 tables)
//! HuggingFace uses, and `BertNormalizer`'s classes from `unicode_categories` 0.1.1, HF's
//! too, so text normalizes exactly as there. A `Replace` regex is Oniguruma's pattern read
//! as Oniguruma reads it (`onig_to_fancy`), and refused by name where fancy-regex would
//! match otherwise or where it can match the empty string.

use super::unicode_classes::{bert_class, bert_class_in, bert_table, is_chinese_char};
use super::unicode_classes::{BERT_CHINESE, BERT_CONTROL, BERT_LOWER_SELF, BERT_PLAIN, BERT_SPACE};
use crate::encode::pretok::classes::decode_multibyte;
use crate::error::{Error, Result};
use crate::runtime::process_once::ProcessOnce;
use serde_json::Value;
use unicode_normalization_alignments::char::is_combining_mark;
use unicode_normalization_alignments::{is_nfc_quick, is_nfd_quick, is_nfkc_quick, is_nfkd_quick};
use unicode_normalization_alignments::{IsNormalized, UnicodeNormalization};

#[derive(Clone, Debug)]
pub enum Normalizer {
    Nfc,
    Nfd,
    Nfkc,
    Nfkd,
    Lowercase,
    /// HF's `StripAccents`: every mark (`General_Category=Mark`: Mn, Mc, Me) removed, as
    /// `unicode-normalization-alignments`' `is_combining_mark` says. It decomposes nothing:
    /// transformers' converters put `NFKD` before it (ALBERT, XLNet, RemBERT).
    StripAccents,
    /// HF's `Prepend`: the string in front of a text that is not empty (SentencePiece's
    /// dummy prefix `▁`).
    Prepend(String),
    /// HF's `Replace` with a string pattern: every match, left to right without overlap,
    /// by `content` (SentencePiece's `' '` → `▁`).
    Replace {
        pattern: String,
        content: String,
    },
    Sequence(Vec<Normalizer>),
    /// HF's `Replace` with a regex pattern (Oniguruma's syntax read as Oniguruma reads it):
    /// every match, left to right without overlap, by `content`.
    ReplaceRegex {
        re: Box<fancy_regex::Regex>,
        content: String,
        /// The pattern as runs of one char class, where it is one (see [`Runs`]).
        runs: Option<Runs>,
    },
    /// HF's `Strip`: whitespace (`char::is_whitespace`) taken off the left and/or right end.
    Strip {
        left: bool,
        right: bool,
    },
    /// SentencePiece's rule table (`Precompiled`).
    Precompiled(Box<super::precompiled::Precompiled>),
    /// HF's `Nmt` (the first half of SentencePiece's `nmt_nfkc` rule): some control chars
    /// removed, then some whitespace and invisible chars made `' '` (see [`nmt_removes`],
    /// [`nmt_space`]).
    Nmt,
    /// HF's `BertNormalizer` (BERT's "basic" cleaning), its steps in HF's order.
    Bert {
        /// Control chars, NUL and U+FFFD removed; whitespace made `' '`.
        clean_text: bool,
        /// A space each side of every CJK ideograph.
        chinese: bool,
        /// NFD, then non-spacing marks removed (the file's `null` means `lowercase`).
        strip_accents: bool,
        lowercase: bool,
    },
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
            let bytes = text.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                // An ASCII run in one go (each byte its own range), then one other char.
                let run = bytes[i..]
                    .iter()
                    .position(|&b| !b.is_ascii())
                    .map_or(bytes.len(), |k| i + k);
                align.extend((i..run).map(|b| (base + b, base + b + 1)));
                let Some(c) = text[run..].chars().next() else {
                    break;
                };
                let len = c.len_utf8();
                align.extend(std::iter::repeat_n((base + run, base + run + len), len));
                i = run + len;
            }
        }
        NString {
            text: text.to_owned(),
            align,
        }
    }

    /// HF's `transform` over the whole string with `initial_offset` 0.
    fn transform(&mut self, dest: impl Iterator<Item = (char, isize)>, keep: bool) {
        self.transform_from(dest, 0, keep);
    }

    /// HF's `transform` over the whole string, the first `initial` chars removed.
    fn transform_from(
        &mut self,
        dest: impl Iterator<Item = (char, isize)>,
        initial: usize,
        keep: bool,
    ) {
        let mut text = String::with_capacity(self.text.len());
        if !keep {
            text.extend(dest.map(|(c, _)| c));
            self.text = text;
            return;
        }
        let old: Vec<char> = self.text.chars().collect();
        let mut old_i = initial.min(old.len());
        let mut offset: usize = old[..old_i].iter().map(|c| c.len_utf8()).sum();
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

impl NString {
    /// HF's `NormalizedString::filter`: the chars `keep` holds for stay. Each run of removed
    /// chars is counted against the kept char before it (so that char's alignment does not
    /// move), a run at the very start against none (`initial_offset`).
    fn filter(&mut self, keep_char: impl Fn(char) -> bool, keep: bool) {
        if self.text.chars().all(&keep_char) {
            return;
        }
        let mut dest: Vec<(char, isize)> = Vec::with_capacity(self.text.len());
        let (mut removed, mut initial) = (0isize, 0usize);
        let mut last: Option<char> = None;
        for c in self.text.chars() {
            if keep_char(c) {
                match last {
                    Some(l) => dest.push((l, -removed)),
                    None => initial = removed.unsigned_abs(),
                }
                last = Some(c);
                removed = 0;
            } else {
                removed += 1;
            }
        }
        if let Some(l) = last {
            dest.push((l, -removed));
        }
        self.transform_from(dest.into_iter(), initial, keep);
    }

    /// HF's `NormalizedString::lrstrip`: the whitespace chars at the left end and/or the right
    /// end removed (the left ones as `initial_offset`). HF gives the right ones' count to the
    /// char whose index is the text's *byte* length less that count less one: the last kept
    /// char in ASCII text, no char elsewhere. Either way no kept char's alignment moves (the
    /// removed chars come after all of them), and the same rule is kept here.
    pub(super) fn lrstrip(&mut self, left: bool, right: bool, keep: bool) {
        let lead = if left {
            self.text.chars().take_while(|c| c.is_whitespace()).count()
        } else {
            0
        };
        let trail = if right {
            self.text
                .chars()
                .rev()
                .take_while(|c| c.is_whitespace())
                .count()
        } else {
            0
        };
        if lead == 0 && trail == 0 {
            return;
        }
        let count = self.text.chars().count();
        let bytes = self.text.len();
        let dest: Vec<(char, isize)> = self
            .text
            .chars()
            .enumerate()
            .filter_map(|(i, c)| {
                if i < lead || i >= count - trail {
                    None
                } else if bytes.checked_sub(trail + 1) == Some(i) {
                    Some((c, -(trail as isize)))
                } else {
                    Some((c, 0))
                }
            })
            .collect();
        self.transform_from(dest.into_iter(), lead, keep);
    }

    /// HF's `NormalizedString::prepend`: `p` in front of a text that is not empty. HF puts
    /// `p`'s first char in place of the text's first char (change 0) and inserts the rest and
    /// that char again (change 1), so all of them take the first char's alignment.
    pub(super) fn prepend(&mut self, p: &str, keep: bool) {
        if self.text.is_empty() || p.is_empty() {
            return;
        }
        if keep {
            let first = self.text.chars().next().map_or(0, char::len_utf8);
            let a = self.align[0];
            let mut align = Vec::with_capacity(p.len() + self.align.len());
            align.extend(std::iter::repeat_n(a, p.len() + first));
            align.extend_from_slice(&self.align[first..]);
            self.align = align;
        }
        self.text.insert_str(0, p);
    }

    /// HF's `NormalizedString::replace` with a string pattern: each match (left to right,
    /// not overlapping, as `str::match_indices` finds them) gives way to `content`, whose
    /// chars are all inserted after the match's chars are removed, so each takes the
    /// alignment of the match's last byte. An empty pattern matches nothing (HF's `Pattern`
    /// for an empty string).
    pub(super) fn replace(&mut self, pattern: &str, content: &str, keep: bool) {
        if pattern.is_empty() {
            return;
        }
        // Where the matches are: a one-byte pattern (SentencePiece's space) by `memchr`.
        let matches: Vec<(usize, usize)> = match pattern.as_bytes() {
            &[b] => memchr::memchr_iter(b, self.text.as_bytes())
                .map(|at| (at, at + 1))
                .collect(),
            _ => self
                .text
                .match_indices(pattern)
                .map(|(at, m)| (at, at + m.len()))
                .collect(),
        };
        self.replace_matches(&matches, content, keep);
    }

    /// HF's `replace` of the (non-empty, ordered, disjoint) byte ranges `matches` by
    /// `content` (see [`NString::replace`]).
    fn replace_matches(&mut self, matches: &[(usize, usize)], content: &str, keep: bool) {
        if matches.is_empty() {
            return;
        }
        // The most the text can grow to: each match replaced by `content`, none removed.
        let room = self.text.len() + matches.len() * content.len();
        let mut text = String::with_capacity(room);
        let mut align = Vec::new();
        if keep {
            align.reserve(room);
        }
        let mut last = 0;
        for &(at, end) in matches {
            text.push_str(&self.text[last..at]);
            text.push_str(content);
            if keep {
                align.extend_from_slice(&self.align[last..at]);
                let a = self.align[end - 1];
                align.extend(std::iter::repeat_n(a, content.len()));
            }
            last = end;
        }
        text.push_str(&self.text[last..]);
        if keep {
            align.extend_from_slice(&self.align[last..]);
            self.align = align;
        }
        self.text = text;
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
            "StripAccents" => Normalizer::StripAccents,
            "BertNormalizer" => {
                // Each flag a bool (HF's defaults where one is missing; `strip_accents` unset
                // follows `lowercase`).
                let field = |k: &str, default: bool| match v.get(k) {
                    None | Some(Value::Null) => Ok(default),
                    Some(Value::Bool(b)) => Ok(*b),
                    Some(_) => Err(bad(&format!("BertNormalizer: `{k}` is not a bool"))),
                };
                let lowercase = field("lowercase", true)?;
                Normalizer::Bert {
                    clean_text: field("clean_text", true)?,
                    chinese: field("handle_chinese_chars", true)?,
                    strip_accents: field("strip_accents", lowercase)?,
                    lowercase,
                }
            }
            "Prepend" => Normalizer::Prepend(
                v.get("prepend")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("normalizer Prepend without a `prepend` string"))?
                    .to_owned(),
            ),
            "Replace" => {
                let content = v
                    .get("content")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("normalizer Replace without a `content` string"))?
                    .to_owned();
                match v.get("pattern") {
                    Some(p) => match (p.get("String"), p.get("Regex")) {
                        (Some(Value::String(s)), None) => Normalizer::Replace {
                            pattern: s.clone(),
                            content,
                        },
                        (None, Some(Value::String(r))) => Normalizer::ReplaceRegex {
                            re: Box::new(replace_regex(r)?),
                            content,
                            runs: Runs::of(r),
                        },
                        _ => return Err(bad("normalizer Replace: `pattern` is not a String")),
                    },
                    None => return Err(unsupported("normalizer Replace without a pattern")),
                }
            }
            "Strip" => {
                let side = |k: &str| match v.get(k) {
                    None | Some(Value::Null) => Ok(true),
                    Some(Value::Bool(b)) => Ok(*b),
                    Some(_) => Err(bad(&format!("normalizer Strip: `{k}` is not a bool"))),
                };
                Normalizer::Strip {
                    left: side("strip_left")?,
                    right: side("strip_right")?,
                }
            }
            "Nmt" => Normalizer::Nmt,
            "Precompiled" => {
                Normalizer::Precompiled(Box::new(super::precompiled::Precompiled::from_json(v)?))
            }
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

    /// Whether this is SentencePiece's: `Prepend("▁")` then `Replace(" ", "▁")`.
    pub fn is_sentencepiece(&self) -> bool {
        match self {
            Normalizer::Sequence(v) => matches!(
                v.as_slice(),
                [Normalizer::Prepend(p), Normalizer::Replace { pattern, content }]
                    if p == "\u{2581}" && pattern == " " && content == "\u{2581}"
            ),
            _ => false,
        }
    }

    /// Whether a newline of the text stays whitespace in the normalized text, and the text
    /// either side of it normalizes as it would were the text cut just after it (but for the
    /// whitespace the newline became, at the cut): each step maps (or drops) a char alone, or
    /// a char with the non-starters after it (the Unicode forms, `StripAccents`), and a
    /// newline is a starter that composes with nothing; `Nmt` and `BertNormalizer` make it a
    /// space; a string `Replace` whose pattern holds no whitespace never matches it (nor the
    /// space it became), so no match spans it; a regex `Replace` of whitespace runs (`\s+`,
    /// ` {2,}`) by whitespace leaves whitespace there; `Precompiled` maps a grapheme cluster
    /// at a time, and a newline is a cluster of its own, so as the first step (before any
    /// other could make the newline a space, which a mark after it would join) where it maps
    /// a newline to whitespace. Not so: `Prepend` and `Strip`, which read where the text
    /// starts or ends, and other regex `Replace`s.
    pub fn keeps_newline_cuts(&self) -> bool {
        let mut steps = Vec::new();
        self.steps_into(&mut steps);
        steps.iter().enumerate().all(|(i, n)| {
            n.keeps_newline_cuts_alone() && (i == 0 || !matches!(n, Normalizer::Precompiled(_)))
        })
    }

    /// The steps of this normalizer in order, Sequences (at any depth) opened.
    fn steps_into<'a>(&'a self, out: &mut Vec<&'a Normalizer>) {
        match self {
            Normalizer::Sequence(v) => v.iter().for_each(|n| n.steps_into(out)),
            n => out.push(n),
        }
    }

    /// [`Normalizer::keeps_newline_cuts`] of one step (not a Sequence).
    fn keeps_newline_cuts_alone(&self) -> bool {
        let whitespace = |t: &str| !t.is_empty() && t.chars().all(char::is_whitespace);
        match self {
            Normalizer::Nfc
            | Normalizer::Nfd
            | Normalizer::Nfkc
            | Normalizer::Nfkd
            | Normalizer::Lowercase
            | Normalizer::StripAccents
            | Normalizer::Nmt
            | Normalizer::Bert { .. } => true,
            Normalizer::Replace { pattern, .. } => !pattern.chars().any(char::is_whitespace),
            Normalizer::ReplaceRegex { runs, content, .. } => runs.is_some() && whitespace(content),
            Normalizer::Precompiled(_) => whitespace(&self.normalize("\n")),
            Normalizer::Prepend(_) | Normalizer::Strip { .. } | Normalizer::Sequence(_) => false,
        }
    }

    /// `s` normalized, without alignments.
    pub fn normalize(&self, s: &str) -> String {
        let mut ns = NString::identity(s, 0, false);
        self.apply(&mut ns, false);
        ns.text
    }

    /// Whether this normalizer leaves `s` as it is (a quick check: `false` may be wrong
    /// only the safe way, sending the text through `apply`).
    pub fn leaves(&self, s: &str) -> bool {
        if s.is_ascii()
            && matches!(
                self,
                Normalizer::Nfc | Normalizer::Nfd | Normalizer::Nfkc | Normalizer::Nfkd
            )
        {
            return true;
        }
        match self {
            Normalizer::Nfc => nfc_quick_yes(s),
            Normalizer::Nfd => is_nfd_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Nfkc => is_nfkc_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Nfkd => is_nfkd_quick(s.chars()) == IsNormalized::Yes,
            Normalizer::Lowercase => !s.chars().any(|c| c.is_uppercase() || !c.is_ascii()),
            Normalizer::StripAccents => s.is_ascii() || !s.chars().any(is_combining_mark),
            Normalizer::Prepend(p) => s.is_empty() || p.is_empty(),
            Normalizer::Replace { pattern, content } => {
                pattern.is_empty() || pattern == content || !s.contains(pattern.as_str())
            }
            Normalizer::Sequence(v) => v.iter().all(|n| n.leaves(s)),
            Normalizer::ReplaceRegex { re, runs, .. } => match runs {
                Some(r) => r.first(s).is_none(),
                None => !re.is_match(s).unwrap_or(true),
            },
            Normalizer::Precompiled(p) => p.leaves(s),
            Normalizer::Nmt => !s.chars().any(|c| nmt_removes(c) || nmt_space(c)),
            Normalizer::Strip { left, right } => {
                !(*left && s.starts_with(char::is_whitespace)
                    || *right && s.ends_with(char::is_whitespace))
            }
            // Printable ASCII: no control char, no whitespace but ' ', nothing to lowercase.
            Normalizer::Bert { lowercase, .. } => s
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && !(*lowercase && b.is_ascii_uppercase())),
        }
    }

    /// Normalizes `s` in place (alignments too when `keep`).
    pub fn apply(&self, s: &mut NString, keep: bool) {
        match self {
            Normalizer::Prepend(p) => return s.prepend(p, keep),
            Normalizer::Replace { pattern, content } => return s.replace(pattern, content, keep),
            Normalizer::ReplaceRegex {
                runs: Some(r),
                content,
                ..
            } => {
                let matches = r.matches(&s.text);
                return s.replace_matches(&matches, content, keep);
            }
            Normalizer::ReplaceRegex { re, content, .. } => {
                // Matches found as fancy-regex finds them; a search that fails (its
                // backtracking limit) leaves the rest of the text as it is.
                let matches: Vec<(usize, usize)> = re
                    .find_iter(&s.text)
                    .map_while(|m| m.ok())
                    .map(|m| (m.start(), m.end()))
                    .filter(|(a, b)| a < b)
                    .collect();
                return s.replace_matches(&matches, content, keep);
            }
            Normalizer::Strip { left, right } => return s.lrstrip(*left, *right, keep),
            Normalizer::StripAccents => return s.filter(|c| !is_combining_mark(c), keep),
            Normalizer::Nmt => {
                // HF's `filter`, then its `map` (each char in place: no alignment moves).
                s.filter(|c| !nmt_removes(c), keep);
                if s.text.chars().any(nmt_space) {
                    let src = std::mem::take(&mut s.text);
                    s.text.clone_from(&src);
                    let dest = src.chars().map(|c| (if nmt_space(c) { ' ' } else { c }, 0));
                    s.transform(dest, keep);
                }
                return;
            }
            Normalizer::Precompiled(p) => {
                if let Some(dest) = p.dest(&s.text) {
                    s.transform(dest.into_iter(), keep);
                }
                return;
            }
            Normalizer::Bert {
                clean_text,
                chinese,
                strip_accents,
                lowercase,
            } => return bert(s, *clean_text, *chinese, *strip_accents, *lowercase, keep),
            // A text already in the form: HF's transform maps each char to itself, and no
            // alignment moves.
            Normalizer::Nfc | Normalizer::Nfd | Normalizer::Nfkc | Normalizer::Nfkd
                if self.leaves(&s.text) =>
            {
                return
            }
            // (The guard lowercases the text in place where it returns true.)
            Normalizer::Lowercase if lowercase_in_place(&mut s.text) => return,
            _ => {}
        }
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
            Normalizer::Prepend(_)
            | Normalizer::Replace { .. }
            | Normalizer::ReplaceRegex { .. }
            | Normalizer::Precompiled(_)
            | Normalizer::Strip { .. }
            | Normalizer::StripAccents
            | Normalizer::Nmt
            | Normalizer::Bert { .. } => {}
        }
    }
}

/// The control chars HF's `Nmt` removes (NUL, tab, the line breaks are not among them).
fn nmt_removes(c: char) -> bool {
    matches!(
        u32::from(c),
        0x01..=0x08 | 0x0B | 0x0E..=0x1F | 0x7F | 0x8F | 0x9F
    )
}

/// The chars HF's `Nmt` makes a space: tab, line feed, form feed, carriage return, the
/// Ogham space mark, the zero-width chars and marks U+200B-U+200F, the line and paragraph
/// separators, `▁`, the byte order mark and U+FFFD.
fn nmt_space(c: char) -> bool {
    let zero_width = ('\u{200b}'..='\u{200f}').contains(&c);
    let other = matches!(
        c,
        '\t' | '\n' | '\u{c}' | '\r' | '\u{1680}' | '\u{2028}' | '\u{2029}'
    );
    zero_width || other || matches!(c, '\u{2581}' | '\u{feff}' | '\u{fffd}')
}

/// Lowercases `text` in place if no char's lowercase is more than one char or another
/// number of bytes (all of ASCII, most cased scripts, every uncased one): then each byte
/// keeps its alignment, as HF's transform leaves it. `false` (`text` unchanged) otherwise.
fn lowercase_in_place(text: &mut String) -> bool {
    if text.is_ascii() {
        text.make_ascii_lowercase();
        return true;
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let mut lower = c.to_lowercase();
        match (lower.next(), lower.next()) {
            (Some(l), None) if l.len_utf8() == c.len_utf8() => out.push(l),
            _ => return false,
        }
    }
    *text = out;
    true
}

/// A `Replace` pattern that is one char class repeated: `\s+`, ` +`, ` {2,}`, `\s{2,}` (the
/// patterns of transformers' CLIP and SentencePiece converters). Its leftmost-first matches
/// are the maximal runs of the class's chars at least `min` long (a greedy repeat of one
/// class, with nothing around it, can neither stop inside a run nor start inside one), so
/// they are found by a scan rather than the regex engine's search a match. The class
/// `\s` is the regex's, Unicode's White_Space, which `char::is_whitespace` reads (a test
/// checks every char).
#[derive(Clone, Debug)]
pub struct Runs {
    /// `\s`, else `' '` alone.
    space: bool,
    min: usize,
}

impl Runs {
    /// The runs an Oniguruma pattern is, if it is one of the shapes above.
    fn of(onig: &str) -> Option<Runs> {
        let (space, rest) = if let Some(r) = onig.strip_prefix("\\s") {
            (true, r)
        } else {
            (false, onig.strip_prefix(' ')?)
        };
        let min = match rest {
            "+" => 1,
            _ => rest
                .strip_prefix('{')?
                .strip_suffix(",}")?
                .parse::<usize>()
                .ok()
                .filter(|&n| n >= 1)?,
        };
        Some(Runs { space, min })
    }

    /// The byte ranges of `text` the pattern matches, left to right.
    fn matches(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        self.scan(text, |m| {
            out.push(m);
            true
        });
        out
    }

    /// The first match, if any (the scan stops there).
    fn first(&self, text: &str) -> Option<(usize, usize)> {
        let mut first = None;
        self.scan(text, |m| {
            first = Some(m);
            false
        });
        first
    }

    /// Calls `f` with each match in turn while it returns true.
    fn scan(&self, text: &str, mut f: impl FnMut((usize, usize)) -> bool) {
        let bytes = text.as_bytes();
        let (mut i, mut start, mut n) = (0, 0, 0); // a run: its start and chars
        while i < bytes.len() {
            let b = bytes[i];
            // A char of the class, and its length (ASCII without decoding: its White_Space
            // chars are `\t`..`\r` and ' ').
            let (is, len) = if b < 0x80 {
                let space = b == b' ' || self.space && (b'\t'..=b'\r').contains(&b);
                (space, 1)
            } else {
                let c = text[i..].chars().next().unwrap_or(' ');
                (self.space && c.is_whitespace(), c.len_utf8())
            };
            if is {
                if n == 0 {
                    start = i;
                }
                n += 1;
            } else {
                if n >= self.min && !f((start, i)) {
                    return;
                }
                n = 0;
            }
            i += len;
        }
        if n >= self.min {
            f((start, bytes.len()));
        }
    }
}

/// A `Replace` normalizer's regex: Oniguruma's pattern as fancy-regex reads it the same way,
/// or refused by name where it would not be (see `onig_checks`).
fn replace_regex(onig: &str) -> Result<fancy_regex::Regex> {
    let fancy = super::pre_tokenizers::onig_to_fancy(onig);
    super::onig_checks::refuse_unsupported_in("Replace", onig, &fancy)?;
    fancy_regex::Regex::new(&fancy).map_err(|e| {
        bad(&format!(
            "normalizer Replace: pattern {onig:?} does not parse: {e}"
        ))
    })
}

/// HF's `BertNormalizer::normalize`: its four steps, each a transform of the whole text as
/// there (so alignments move as there).
fn bert(s: &mut NString, clean: bool, chinese: bool, strip: bool, lower: bool, keep: bool) {
    if !keep {
        // Without alignments the four steps are one pass: the first two and the last two
        // act on each char alone, and NFD reorders marks only within a run of non-starters,
        // so the text is cut before and after each char NFD leaves alone that is a starter
        // (`BERT_PLAIN`, every ASCII char among them), and only the runs between such chars
        // go through NFD.
        let src = std::mem::take(&mut s.text);
        let bytes = src.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + bytes.len() / 8);
        let mut run = String::new();
        let push = |out: &mut Vec<u8>, c: char| {
            let mut buf = [0u8; 4];
            if lower && bert_class(c) & BERT_LOWER_SELF == 0 {
                for l in c.to_lowercase() {
                    out.extend_from_slice(l.encode_utf8(&mut buf).as_bytes());
                }
            } else {
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        };
        let flush = |run: &mut String, out: &mut Vec<u8>| {
            for (c, _) in run.nfd() {
                if !is_mark_nonspacing(c) {
                    push(out, c);
                }
            }
            run.clear();
        };
        let emit = |c: char, plain: bool, run: &mut String, out: &mut Vec<u8>| {
            if !strip {
                push(out, c);
            } else if plain {
                if !run.is_empty() {
                    flush(run, out);
                }
                push(out, c);
            } else {
                run.push(c);
            }
        };
        let table = if bytes.is_ascii() {
            &[][..]
        } else {
            bert_table()
        };
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] < 0x80 {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| b >= 0x80)
                    .map_or(bytes.len(), |k| i + k);
                if !run.is_empty() {
                    flush(&mut run, &mut out);
                }
                bert_ascii(&bytes[i..end], clean, lower, &mut out);
                i = end;
                continue;
            }
            // `i` is on a char boundary of the UTF-8 text `src`.
            let (u, len) = decode_multibyte(bytes, i, bytes[i]);
            i += len;
            let c = char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER);
            let bits = bert_class_in(table, c);
            if clean && (c == '\u{fffd}' || bits & BERT_CONTROL != 0) {
                continue;
            }
            if clean && bits & BERT_SPACE != 0 {
                emit(' ', true, &mut run, &mut out);
            } else if chinese && bits & BERT_CHINESE != 0 {
                emit(' ', true, &mut run, &mut out);
                emit(c, bits & BERT_PLAIN != 0, &mut run, &mut out);
                emit(' ', true, &mut run, &mut out);
            } else {
                emit(c, bits & BERT_PLAIN != 0, &mut run, &mut out);
            }
        }
        if !run.is_empty() {
            flush(&mut run, &mut out);
        }
        // Only whole chars were written.
        s.text = String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        return;
    }
    if clean {
        s.filter(
            |c| !(c == '\0' || c == '\u{fffd}' || is_bert_control(c)),
            keep,
        );
        // HF's `bert::is_whitespace` is `char::is_whitespace` (`\t`, `\n`, `\r` among them).
        if s.text.chars().any(|c| c != ' ' && c.is_whitespace()) {
            let src = std::mem::take(&mut s.text);
            s.text = src.clone();
            let mapped = src
                .chars()
                .map(|c| (if c.is_whitespace() { ' ' } else { c }, 0));
            s.transform(mapped, keep);
        }
    }
    if chinese && s.text.chars().any(is_chinese_char) {
        let src = std::mem::take(&mut s.text);
        s.text = src.clone();
        let spaced = src.chars().flat_map(|c| {
            let (first, n) = if is_chinese_char(c) {
                ([(' ', 0), (c, 1), (' ', 1)], 3)
            } else {
                ([(c, 0), (' ', 0), (' ', 0)], 1)
            };
            first.into_iter().take(n)
        });
        s.transform(spaced, keep);
    }
    if strip && !s.text.is_ascii() {
        Normalizer::Nfd.apply(s, keep);
        s.filter(|c| !is_mark_nonspacing(c), keep);
    }
    if lower {
        Normalizer::Lowercase.apply(s, keep);
    }
}

/// Appends ASCII text `run` as `BertNormalizer` makes it. The ASCII controls (Cc: below
/// 0x20, and 0x7F) but `\t`, `\n`, `\r` go; those three, ASCII's other whitespace, become a
/// space (0x0B and 0x0C are controls, and go); `A`-`Z` are lowercased. No char is added, so
/// without a control the run is copied and mapped in place, which vectorizes.
fn bert_ascii(run: &[u8], clean: bool, lower: bool, out: &mut Vec<u8>) {
    let control = |b: u8| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7F;
    let map = |b: u8| {
        let space = clean && matches!(b, b'\t' | b'\n' | b'\r');
        let upper = lower && b.wrapping_sub(b'A') < 26;
        if space {
            b' '
        } else {
            b | (u8::from(upper) << 5)
        }
    };
    if clean && run.iter().any(|&b| control(b)) {
        out.extend(run.iter().copied().filter(|&b| !control(b)).map(map));
        return;
    }
    let start = out.len();
    out.extend_from_slice(run);
    for b in &mut out[start..] {
        *b = map(*b);
    }
}

/// HF's `bert::is_control`: `unicode_categories`' "other" (Cc, Cf, Co; that crate leaves
/// out Cn and Cs), but not `\t`, `\n`, `\r`.
fn is_bert_control(c: char) -> bool {
    bert_class(c) & BERT_CONTROL != 0
}

fn is_mark_nonspacing(c: char) -> bool {
    use unicode_categories::UnicodeCategories;
    c.is_mark_nonspacing()
}

/// `is_nfc_quick(s.chars()) == Yes`, with the table look-ups of the crate skipped for most
/// chars.
///
/// The quick check reads each char's own NFC property and the combining class of the char
/// before it; it is Yes iff every char's property is Yes and no char of non-zero class
/// follows one of a higher class. For a char of [`nfc_starters`] (property Yes, class 0,
/// read from the same tables) only "its class is 0" matters, which needs no look-up.
fn nfc_quick_yes(s: &str) -> bool {
    use crate::encode::pretok::classes::decode_multibyte;
    use unicode_normalization_alignments::char::canonical_combining_class;
    let starters = nfc_starters();
    let b = s.as_bytes();
    let mut i = 0;
    let mut last = 0u8;
    while i < b.len() {
        let lead = b[i];
        if lead < 0x80 {
            // ASCII chars are such starters: eight at a time where eight are ASCII.
            i += match b[i..].first_chunk::<8>() {
                Some(w) if u64::from_le_bytes(*w) & 0x8080_8080_8080_8080 == 0 => 8,
                _ => 1,
            };
            last = 0;
            continue;
        }
        // `i` is on a char boundary (it moves by whole chars), and `s` is UTF-8: decoded
        // from the bytes, as `s[i..].chars()` would test the boundary and the end again.
        let (u, len) = decode_multibyte(b, i, lead);
        i += len;
        let w = u as usize;
        if starters
            .get(w >> 6)
            .is_some_and(|bits| bits >> (w & 63) & 1 == 1)
        {
            last = 0;
            continue;
        }
        let Some(c) = char::from_u32(u) else {
            return false; // not reached: `s` is UTF-8
        };
        let class = canonical_combining_class(c);
        if last > class && class != 0 {
            return false;
        }
        if is_nfc_quick(std::iter::once(c)) != IsNormalized::Yes {
            return false;
        }
        last = class;
    }
    true
}

/// One bit per char of the Basic Multilingual Plane: set if its NFC quick-check property is
/// Yes and its combining class 0 (8 KiB, built at the first NFC text that is not ASCII).
fn nfc_starters() -> &'static [u64] {
    use unicode_normalization_alignments::char::canonical_combining_class;
    static STARTERS: ProcessOnce<Box<[u64]>> = ProcessOnce::new();
    STARTERS.get_or_init(|| {
        let mut bits = vec![0u64; 0x10000 / 64];
        for c in (0..0x10000u32).filter_map(char::from_u32) {
            if canonical_combining_class(c) == 0
                && is_nfc_quick(std::iter::once(c)) == IsNormalized::Yes
            {
                let u = c as usize;
                bits[u >> 6] |= 1 << (u & 63);
            }
        }
        bits.into_boxed_slice()
    })
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
    /// `Precompiled` keeps the cut only as the first step of the whole normalizer, nested
    /// Sequences opened: after `Nmt` the newline is a space, which a mark after it would join.
    #[test]
    fn precompiled_keeps_newline_cuts_only_first() {
        use serde_json::json;
        // An empty table (a trie of no units) maps nothing: a newline stays a newline.
        let pc = json!({"type": "Precompiled", "precompiled_charsmap": "AAAAAA=="});
        let seq = |steps: Vec<serde_json::Value>| json!({"type": "Sequence", "normalizers": steps});
        let keeps = |v: serde_json::Value| {
            super::Normalizer::from_json(&v)
                .unwrap()
                .is_some_and(|n| n.keeps_newline_cuts())
        };
        assert!(keeps(pc.clone()));
        assert!(keeps(seq(vec![pc.clone(), json!({"type": "NFKC"})])));
        assert!(!keeps(seq(vec![json!({"type": "Nmt"}), pc.clone()])));
        assert!(!keeps(seq(vec![
            json!({"type": "Nmt"}),
            seq(vec![pc.clone()])
        ])));
        assert!(!keeps(seq(vec![
            json!({"type": "Strip"}),
            json!({"type": "NFC"})
        ])));
    }

    use super::*;

    #[test]
    fn nfc_quick_yes_equals_the_whole_text_check() {
        // Chars from the ranges where the answer turns: Latin-1, combining marks, Hangul
        // jamo and syllables, CJK, composition exclusions, kana voicing marks, other scripts
        // and a char beyond the BMP.
        let pool: Vec<char> = "ж\u{5d0}\u{5b4}\u{627}\u{654}\u{915}\u{93c}\u{e01}\u{e48}\u{3001}\u{ff21}\u{1f600}\u{2f800}\u{1109a}aZ é\u{e9}e\u{301}\u{301}\u{316}\u{340}\u{344}\u{958}\u{2000}\u{2126}\u{212b}\u{1100}\u{1161}\u{11a8}\u{ac00}\u{3099}\u{304b}\u{4e2d}\u{f900}\u{1d15e}’"
            .chars()
            .collect();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = (x % 9) as usize;
            let t: String = (0..n)
                .map(|i| pool[((x >> (6 * i + 3)) % pool.len() as u64) as usize])
                .collect();
            assert_eq!(
                nfc_quick_yes(&t),
                is_nfc_quick(t.chars()) == IsNormalized::Yes,
                "{t:?}"
            );
        }
    }

    #[test]
    fn prepend_and_replace_align_as_hf() {
        // SentencePiece's pair: `▁` in front takes the first char's range, and each space's
        // `▁` the space's own.
        let n = Normalizer::Sequence(vec![
            Normalizer::Prepend("\u{2581}".into()),
            Normalizer::Replace {
                pattern: " ".into(),
                content: "\u{2581}".into(),
            },
        ]);
        let mut s = NString::identity("é a", 0, true);
        n.apply(&mut s, true);
        assert_eq!(s.text, "\u{2581}é\u{2581}a");
        // `▁` (3 bytes) and `é` (2) take é's range, the space's `▁` (3) the space's.
        let want: Vec<(usize, usize)> = [vec![(0, 2); 5], vec![(2, 3); 3], vec![(3, 4)]].concat();
        assert_eq!(s.align, want);
        assert_eq!(n.normalize("é a"), s.text);
        // An empty text gets no prefix; a replacement of several chars takes the last's range.
        let mut e = NString::identity("", 0, true);
        n.apply(&mut e, true);
        assert_eq!(e.text, "");
        let r = Normalizer::Replace {
            pattern: "ab".into(),
            content: "XYZ".into(),
        };
        let mut t = NString::identity("cabab", 10, true);
        r.apply(&mut t, true);
        assert_eq!(t.text, "cXYZXYZ");
        assert_eq!(t.align[..4], [(10, 11), (12, 13), (12, 13), (12, 13)]);
        assert_eq!(t.align[4..], [(14, 15); 3]);
        assert!(!n.leaves("x") && n.leaves(""));
        assert!(r.leaves("a b") && !r.leaves("xab"));
    }

    #[test]
    fn bert_without_alignments_is_the_text_of_the_steps_with_them() {
        // The one-pass text (no alignments) against HF's four transforms one after another,
        // for every setting of the flags, on random texts over the chars each step acts on.
        let pool = [
            "a",
            "Z",
            " ",
            "\t",
            "\n",
            "\r",
            "\x00",
            "\x01",
            "\x0b",
            "\x7f",
            "\u{85}",
            "\u{a0}",
            "\u{3000}",
            "\u{200b}",
            "\u{feff}",
            "\u{fffd}",
            "\u{e000}",
            "é",
            "É",
            "e\u{301}",
            "\u{301}\u{316}",
            "\u{1e9b}\u{323}",
            "ß",
            "İ",
            "Σ",
            "ǅ",
            "ﬁ",
            "中",
            "\u{f900}",
            "\u{20000}",
            "か",
            "한",
            "😀",
            "\u{1d15e}",
            "\u{0f73}",
        ];
        let mut rng = crate::test_rng::Rng(0xB1E2_7000_0000_0001);
        for bits in 0..16u32 {
            let f = |k: u32| bits >> k & 1 == 1;
            let n = Normalizer::Bert {
                clean_text: f(0),
                chinese: f(1),
                strip_accents: f(2),
                lowercase: f(3),
            };
            for _ in 0..400 {
                let text: String = (0..rng.below(12)).map(|_| *rng.pick(&pool)).collect();
                let mut with = NString::identity(&text, 0, true);
                n.apply(&mut with, true);
                assert_eq!(n.normalize(&text), with.text, "{text:?} {bits}");
                assert_eq!(with.align.len(), with.text.len());
                assert!(!n.leaves(&text) || with.text == text, "{text:?} {bits}");
            }
        }
    }

    #[test]
    fn runs_are_the_regexs_matches() {
        for (onig, runs) in [
            ("\\s+", true),
            (" +", true),
            (" {2,}", true),
            ("\\s{3,}", true),
        ]
        .into_iter()
        .chain([
            (" {0,}", false),
            ("\\s*", false),
            ("a+", false),
            ("\\s+x", false),
        ]) {
            assert_eq!(Runs::of(onig).is_some(), runs, "{onig}");
        }
        // The class: the regex's `\s` on every char.
        let re = replace_regex("\\s").unwrap();
        let mut buf = [0u8; 4];
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let one = c.encode_utf8(&mut buf);
            assert_eq!(re.is_match(one).unwrap(), c.is_whitespace(), "{c:?}");
        }
        let alphabet = [
            " ", "  ", "a", "\t", "\n", "\u{b}", "\u{c}", "\r", "\u{1c}", "\u{a0}", "\u{3000}",
            "\u{85}", "é", "\u{200b}",
        ];
        let mut rng = crate::test_rng::Rng(0x5EED_0000_0000_0042);
        for onig in ["\\s+", " +", " {2,}", "\\s{2,}", "\\s{3,}"] {
            let (runs, re) = (Runs::of(onig).unwrap(), replace_regex(onig).unwrap());
            for _ in 0..500 {
                let n = rng.below(12);
                let text: String = (0..n).map(|_| *rng.pick(&alphabet)).collect();
                let want: Vec<(usize, usize)> = re
                    .find_iter(&text)
                    .map(|m| m.unwrap())
                    .map(|m| (m.start(), m.end()))
                    .collect();
                assert_eq!(runs.matches(&text), want, "{onig} {text:?}");
                assert_eq!(runs.first(&text), want.first().copied(), "{onig} {text:?}");
            }
        }
    }

    #[test]
    fn lowercase_in_place_is_hfs_transform_where_it_applies() {
        // Chars whose lowercase is one char of the same length, and those it is not:
        // 'İ' (two chars), 'Ω' OHM and 'K' KELVIN (fewer bytes), 'ẞ' (fewer bytes).
        let alphabet = [
            "a", "Q", " ", "É", "é", "Σ", "Ж", "東", "İ", "\u{2126}", "\u{212a}", "ẞ",
        ];
        let mut rng = crate::test_rng::Rng(0x5EED_1234_ABCD_0001);
        let (mut fast, mut slow) = (0, 0);
        for _ in 0..2000 {
            let n = rng.below(8);
            let text: String = (0..n).map(|_| *rng.pick(&alphabet)).collect();
            let mut want = NString::identity(&text, 3, true);
            want.transform(
                text.chars().flat_map(|c| {
                    c.to_lowercase()
                        .enumerate()
                        .map(|(i, c)| (c, isize::from(i > 0)))
                }),
                true,
            );
            let mut probe = text.clone();
            if lowercase_in_place(&mut probe) {
                fast += 1;
            } else {
                slow += 1;
                assert_eq!(probe, text, "left as it was when it does not apply");
            }
            let mut got = NString::identity(&text, 3, true);
            Normalizer::Lowercase.apply(&mut got, true);
            assert_eq!(
                (&got.text, &got.align),
                (&want.text, &want.align),
                "{text:?}"
            );
        }
        assert!(fast > 100 && slow > 100, "{fast} {slow}");
    }

    #[test]
    fn a_text_in_a_form_keeps_its_alignments() {
        for (n, text) in [
            (Normalizer::Nfc, "caf\u{e9} \u{c5} \u{fb01}"),
            (Normalizer::Nfkc, "caf\u{e9} \u{c5} fi"),
            (Normalizer::Nfd, "cafe\u{301}"),
            (Normalizer::Nfkd, "e\u{301}\u{301}x"),
        ] {
            assert!(n.leaves(text), "{n:?} {text:?}");
            let mut s = NString::identity(text, 5, true);
            n.apply(&mut s, true);
            let want = NString::identity(text, 5, true);
            assert_eq!((&s.text, &s.align), (&want.text, &want.align));
        }
    }

    #[test]
    fn nfc_composes_and_aligns_to_the_first_char() {
        let mut s = NString::identity("e\u{301}x", 0, true);
        Normalizer::Nfc.apply(&mut s, true);
        assert_eq!(s.text, "\u{e9}x");
        assert_eq!(s.align, vec![(0, 1), (0, 1), (3, 4)]);
    }
}
