//! Normalizers of a `tokenizer.json`, as HuggingFace `tokenizers` 0.23 applies them.
//!
//! Invariant: `Normalizer::apply` gives the text HuggingFace's normalizer gives, and, where
//! alignments are kept, the same alignment of every normalized byte to a byte range of the
//! original text: HF's `NormalizedString::transform` is followed step by step (a composed
//! char takes the alignment of the first char it replaces, an inserted char the one of the
//! char before it). The Unicode forms come from `unicode-normalization-alignments` 0.1.12,
//! the crate (and Unicode 9 tables) HuggingFace uses, so text normalizes exactly as there.

use crate::error::{Error, Result};
use crate::runtime::process_once::ProcessOnce;
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

    /// `s` normalized, without alignments.
    pub fn normalize(&self, s: &str) -> String {
        let mut ns = NString::identity(s, 0, false);
        self.apply(&mut ns, false);
        ns.text
    }

    /// Whether this normalizer leaves `s` as it is (a quick check: `false` may be wrong
    /// only the safe way, sending the text through `apply`).
    pub fn leaves(&self, s: &str) -> bool {
        if s.is_ascii() && !matches!(self, Normalizer::Lowercase | Normalizer::Sequence(_)) {
            return true;
        }
        match self {
            Normalizer::Nfc => nfc_quick_yes(s),
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
    fn nfc_composes_and_aligns_to_the_first_char() {
        let mut s = NString::identity("e\u{301}x", 0, true);
        Normalizer::Nfc.apply(&mut s, true);
        assert_eq!(s.text, "\u{e9}x");
        assert_eq!(s.align, vec![(0, 1), (0, 1), (3, 4)]);
    }
}
