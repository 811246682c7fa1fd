//! Falcon's pre-tokenizer in one scanner.
//!
//! The `Sequence`: 1. `Punctuation` (`Contiguous`); 2. `ByteLevel` without prefix space,
//! with GPT-2's regex; 3. `Digits(individual_digits=false)`; 4. `Split` `[0-9][0-9][0-9]`,
//! `Isolated`, not inverted. Steps 3 and 4 come after `ByteLevel`: they see HF's byte-level
//! chars, one a byte (`char_of`), so byte 0xBD of `½` is the char `½`, a number.
//!
//! Invariant: [`Falcon::for_each_piece`] yields the pieces the generic interpreter makes of
//! a segment under this Sequence (see the parent module). Punctuation is the generic step's
//! own predicate (HF's `is_punc`), digits `char::is_numeric` of each byte's char, and
//! `[0-9]` the class of the pattern's syntax tree, read on each byte's char.
//!
//! Proof, step by step (nested here in the same order):
//! - 1: `Contiguous` merges neighbouring parts of the same kind: the pieces are the maximal
//!   runs of punctuation chars and of other chars.
//! - 2: GPT-2's regex on each piece of 1, by the same splitter the generic step builds
//!   (`Splitter::new(R50K_PATTERN)`), matches and the gaps between them (there are none:
//!   the pattern matches every char, but they are kept as the generic step keeps them).
//!   A run of punctuation chars is one match when none of its chars is in `\s`, `\p{L}` or
//!   `\p{N}` (checked at load for every punctuation char): `'(?:[sdmt]|ll|ve|re)`,
//!   ` ?\p{L}++` and ` ?\p{N}++` cannot match at its start, and ` ?[^\s\p{L}\p{N}]++`
//!   takes it whole. Such runs skip the regex.
//! - 3: as 1, on bytes: the maximal runs of numeric-char bytes and of other bytes.
//! - 4: three consecutive `[0-9]` bytes, leftmost first, non-overlapping: a piece is cut
//!   before and after each. A run of non-numeric bytes holds no `[0-9]` byte when the class
//!   is within the numeric chars (checked at load), and is then passed on whole.

use super::table::{ranges_of, Classes};
use super::{class, hir_of, is_byte_level, is_digits, is_isolating_split, kind};
use crate::encode::pretok::{Splitter, R50K_PATTERN};
use crate::error::Result;
use crate::pipeline::byte_level::char_of;
use crate::pipeline::unicode_classes::punctuation_ranges;
use regex_syntax::hir::HirKind;
use serde_json::Value;
use std::sync::OnceLock;

/// Step 4's pattern, as the file writes it.
pub const THREE_DIGITS: &str = "[0-9][0-9][0-9]";

/// Class bits: punctuation; `[\s\p{L}\p{N}]`.
const PUNCT: u8 = 1;
const OTHER: u8 = 2;

struct Tables {
    punct: Classes,
    /// By byte: its byte-level char is numeric.
    numeric: [bool; 256],
    /// By byte: its byte-level char is in step 4's class.
    digit: [bool; 256],
    /// Every `digit` byte is `numeric`.
    digit_in_numeric: bool,
    /// No punctuation char is in `\s`, `\p{L}` or `\p{N}`.
    punct_outside_sln: bool,
}

pub struct Falcon {
    t: &'static Tables,
    gpt2: Splitter,
}

impl Falcon {
    /// The scanner, if `steps` are exactly Falcon's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<Falcon>> {
        let [s1, s2, s3, s4] = steps else {
            return Ok(None);
        };
        let same = kind(s1) == Some("Punctuation")
            && s1.get("behavior").and_then(Value::as_str) == Some("Contiguous")
            && is_byte_level(s2, true)
            && is_digits(s3, false)
            && is_isolating_split(s4, THREE_DIGITS);
        if !same {
            return Ok(None);
        }
        static TABLES: OnceLock<Option<Tables>> = OnceLock::new();
        let Some(t) = TABLES.get_or_init(tables).as_ref() else {
            return Ok(None);
        };
        Ok(Some(Falcon {
            t,
            gpt2: Splitter::new(R50K_PATTERN)?,
        }))
    }

    /// Calls `f(start, end)` with each piece of `seg` (see the module docs).
    #[inline]
    pub fn for_each_piece(
        &self,
        seg: &str,
        mut f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        let b = seg.as_bytes();
        if b.is_empty() {
            return Ok(());
        }
        let t = &self.t.punct;
        let mut pos = 0;
        let mut in_p = t.at(b, 0).0 & PUNCT != 0;
        let mut i = 0;
        while i < b.len() {
            let (c, n) = t.at(b, i);
            if (c & PUNCT != 0) != in_p {
                self.gpt2_pieces(seg, pos, i, in_p, &mut f)?;
                in_p = !in_p;
                pos = i;
            }
            i += n;
        }
        self.gpt2_pieces(seg, pos, b.len(), in_p, &mut f)
    }

    /// Step 2 on piece `s..e`, a punctuation run if `punct`.
    #[inline(always)]
    fn gpt2_pieces<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        seg: &str,
        s: usize,
        e: usize,
        punct: bool,
        f: &mut F,
    ) -> Result<()> {
        let b = seg.as_bytes();
        if punct && self.t.punct_outside_sln {
            return self.digit_runs(b, s, e, f);
        }
        let text = &seg[s..e];
        let base = text.as_ptr() as usize;
        let mut prev = s;
        self.gpt2.for_each_piece(text, |m| {
            let at = s + (m.as_ptr() as usize - base);
            if prev < at {
                self.digit_runs(b, prev, at, f)?;
            }
            prev = at + m.len();
            self.digit_runs(b, at, prev, f)
        })?;
        if prev < e {
            self.digit_runs(b, prev, e, f)?;
        }
        Ok(())
    }

    /// Steps 3 and 4 on piece `s..e` (not empty).
    #[inline(always)]
    fn digit_runs<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        f: &mut F,
    ) -> Result<()> {
        let t = self.t;
        let mut pos = s;
        let mut num = t.numeric[b[s] as usize];
        for i in s + 1..e {
            if t.numeric[b[i] as usize] != num {
                self.triples(b, pos, i, num, f)?;
                pos = i;
                num = !num;
            }
        }
        self.triples(b, pos, e, num, f)
    }

    /// Step 4 on piece `s..e`, a run of numeric bytes if `num`.
    #[inline(always)]
    fn triples<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        num: bool,
        f: &mut F,
    ) -> Result<()> {
        let t = self.t;
        if !num && t.digit_in_numeric {
            return f(s, e);
        }
        let d = |i: usize| t.digit[b[i] as usize];
        let mut pos = s;
        let mut i = s;
        while i + 3 <= e {
            if d(i) && d(i + 1) && d(i + 2) {
                if pos < i {
                    f(pos, i)?;
                }
                f(i, i + 3)?;
                i += 3;
                pos = i;
            } else {
                i += 1;
            }
        }
        if pos < e {
            f(pos, e)?;
        }
        Ok(())
    }
}

/// The tables, from the generic steps' predicates and step 4's syntax tree; `None` if the
/// pattern is not three copies of one class.
fn tables() -> Option<Tables> {
    let hir = hir_of(THREE_DIGITS)?;
    let digit_class = match hir.kind() {
        HirKind::Concat(v) if v.len() == 3 => {
            let c = class(&v[0])?;
            if class(&v[1])? != c || class(&v[2])? != c {
                return None;
            }
            ranges_of(c)
        }
        _ => return None,
    };
    let mut numeric = [false; 256];
    let mut digit = [false; 256];
    for b in 0..=255u8 {
        let c = char_of(b);
        numeric[b as usize] = c.is_numeric();
        digit[b as usize] = digit_class.iter().any(|&(lo, hi)| lo <= c && c <= hi);
    }
    let digit_in_numeric = (0..256).all(|b| !digit[b] || numeric[b]);
    // `[\s\p{L}\p{N}]` as GPT-2's regex reads it (regex-syntax's tables).
    let other = hir_of(r"[\s\p{L}\p{N}]")?;
    let other = ranges_of(class(&other)?);
    // HF's `is_punc` (`is_punctuation`): ASCII punctuation or `\p{P}`.
    let ascii: Vec<(char, char)> = (0..128u8)
        .map(char::from)
        .filter(char::is_ascii_punctuation)
        .map(|c| (c, c))
        .collect();
    let p = punctuation_ranges();
    let punct = Classes::build(&[(&other, OTHER), (&ascii, PUNCT), (p, PUNCT)], &[]);
    let punct_outside_sln = (0..=char::MAX as u32)
        .filter_map(char::from_u32)
        .all(|c| punct.of_u32(c as u32) != PUNCT | OTHER);
    Some(Tables {
        punct,
        numeric,
        digit,
        digit_in_numeric,
        punct_outside_sln,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::pre_tokenizers::PreTokenizer;
    use crate::pipeline::scanners::{assert_agree, assert_agree_on_random_texts};
    use serde_json::json;

    fn json() -> Value {
        json!({"type": "Sequence", "pretokenizers": [
            {"type": "Punctuation", "behavior": "Contiguous"},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
             "use_regex": true},
            {"type": "Digits", "individual_digits": false},
            {"type": "Split", "pattern": {"Regex": THREE_DIGITS}, "behavior": "Isolated",
             "invert": false},
        ]})
    }

    /// The shortcuts' conditions hold for the Unicode tables in use (else they would be
    /// skipped, and the scanner slower).
    #[test]
    fn shortcuts_apply() {
        let t = tables().unwrap();
        assert!(t.punct_outside_sln && t.digit_in_numeric);
        assert!(t.numeric[0xBD] && !t.digit[0xBD] && t.digit[b'7' as usize]);
    }

    /// The punctuation bit is the generic step's predicate, for every char.
    #[test]
    fn punctuation_is_the_generic_predicate() {
        let t = tables().unwrap();
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            let want = crate::pipeline::pre_tokenizers::is_punctuation(c);
            assert_eq!(t.punct.of(c) & PUNCT != 0, want, "{c:?}");
        }
    }

    #[test]
    fn recognised_and_named() {
        let pt = PreTokenizer::from_json(&json()).unwrap();
        assert_eq!(pt.splitter_kinds(), ["scan:falcon"]);
        let mut other = json();
        other["pretokenizers"][0]["behavior"] = json!("Isolated");
        let pt = PreTokenizer::from_json(&other).unwrap();
        assert!(!pt.splitter_kinds().contains(&"scan:falcon"));
    }

    #[test]
    fn fused_equals_generic() {
        let fused = PreTokenizer::from_json(&json()).unwrap();
        let generic = PreTokenizer::from_json_generic(&json()).unwrap();
        let tricky = [
            "",
            "\n",
            "a\r\n  b \n",
            "12345 1234567 x12y 3.14159 1,000,000",
            "4 \u{bd} 12\u{b2}345 \u{bc}\u{be}\u{b9}\u{b3}",
            "\u{661}\u{662}\u{663}4 ① 〇 Ⅻ",
            "Hello, world... don't 'quote' \"x\" -- (a)[b]{c}",
            "«guillemets» ¿qué? ¡sí! — – ‘’ “” …",
            "中文，测试。한국어！",
            "tabs\t\tand  spaces   \n\n ",
            "😀 emoji😀😀 \u{85}nel \u{a0}",
            "ĲĳĴ ¼ƀ ÀÁÂ \u{2032}\u{2033}",
            "1'000 12.345,67 $100 50% #1 @2",
        ];
        for t in tricky {
            assert_agree(&fused, &generic, t);
        }
        assert_agree_on_random_texts(
            &fused,
            &generic,
            &[
                "a", "Z", " ", "  ", "\t", "\n", "\r", "\u{a0}", "\u{3000}", "0", "1", "9", "12",
                "345", "½", "¼", "¾", "²", "³", "¹", "١", "①", ".", ",", "!", "'", "'s", "-", "_",
                "$", "(", "«", "¿", "—", "…", "，", "。", "中", "가", "é", "Ĳ", "ƀ", "😀",
                "\u{301}",
            ],
            211,
        );
    }
}
