//! StarCoder's pre-tokenizer in one scanner.
//!
//! The `Sequence`: 1. `Digits(individual_digits=true)`; 2. `ByteLevel` without prefix space,
//! with GPT-2's regex.
//!
//! Invariant: [`StarCoder::for_each_piece`] yields the pieces the generic interpreter makes
//! of a segment under this Sequence (see the parent module). Digits are `char::is_numeric`,
//! as the generic `Digits`.
//!
//! Proof: step 1 cuts around each numeric char (a char-local rule), leaving each numeric
//! char alone and the spans between them. Step 2 cannot cut a one-char piece, so a numeric
//! char is a piece as it is; each span between them is cut by GPT-2's regex, run by the
//! splitter the generic step builds (`Splitter::new(R50K_PATTERN)`), matches and the gaps
//! between them (none: the pattern matches every char; kept as the generic step keeps them).

use super::table::Classes;
use super::{is_byte_level, is_digits};
use crate::encode::pretok::{Splitter, R50K_PATTERN};
use crate::error::Result;
use serde_json::Value;
use std::sync::OnceLock;

/// Class bit: numeric.
const D: u8 = 1;

pub struct StarCoder {
    t: &'static Classes,
    gpt2: Splitter,
}

impl StarCoder {
    /// The scanner, if `steps` are exactly StarCoder's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<StarCoder>> {
        let [s1, s2] = steps else {
            return Ok(None);
        };
        if !(is_digits(s1, true) && is_byte_level(s2, true)) {
            return Ok(None);
        }
        static TABLE: OnceLock<Classes> = OnceLock::new();
        Ok(Some(StarCoder {
            t: TABLE.get_or_init(|| Classes::build(&[], &[(char::is_numeric, D)])),
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
        let mut pos = 0; // start of the span after the last numeric char
        let mut i = 0;
        while i < b.len() {
            let (c, n) = self.t.at(b, i);
            if c & D != 0 {
                if pos < i {
                    self.gpt2_pieces(seg, pos, i, &mut f)?;
                }
                f(i, i + n)?;
                pos = i + n;
            }
            i += n;
        }
        if pos < b.len() {
            self.gpt2_pieces(seg, pos, b.len(), &mut f)?;
        }
        Ok(())
    }

    /// Step 2 on piece `s..e`.
    #[inline(always)]
    fn gpt2_pieces<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        seg: &str,
        s: usize,
        e: usize,
        f: &mut F,
    ) -> Result<()> {
        let text = &seg[s..e];
        let base = text.as_ptr() as usize;
        let mut prev = s;
        self.gpt2.for_each_piece(text, |m| {
            let at = s + (m.as_ptr() as usize - base);
            if prev < at {
                f(prev, at)?;
            }
            prev = at + m.len();
            f(at, prev)
        })?;
        if prev < e {
            f(prev, e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::pre_tokenizers::PreTokenizer;
    use crate::pipeline::scanners::{assert_agree, assert_agree_on_random_texts};
    use serde_json::{json, Value};

    fn json() -> Value {
        json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
             "use_regex": true},
        ]})
    }

    #[test]
    fn recognised_and_named() {
        let pt = PreTokenizer::from_json(&json()).unwrap();
        assert_eq!(pt.splitter_kinds(), ["scan:starcoder"]);
        let mut other = json();
        other["pretokenizers"][1]["add_prefix_space"] = json!(true);
        let pt = PreTokenizer::from_json(&other).unwrap();
        assert!(!pt.splitter_kinds().contains(&"scan:starcoder"));
    }

    #[test]
    fn fused_equals_generic() {
        let fused = PreTokenizer::from_json(&json()).unwrap();
        let generic = PreTokenizer::from_json_generic(&json()).unwrap();
        let tricky = [
            "",
            "\n",
            "x = 12345 + 0.5;\n  return a1b2;",
            "½ ² ١٢٣ ① 〇 Ⅻ x\u{b2}y",
            "don't 'quote' it's 1's 2's",
            "   leading and trailing   ",
            "a  \n\n 9 \t 8\t\t",
            "中文123한국어 😀1😀",
        ];
        for t in tricky {
            assert_agree(&fused, &generic, t);
        }
        assert_agree_on_random_texts(
            &fused,
            &generic,
            &[
                "a", "Z", " ", "  ", "\t", "\n", "\r", "\u{a0}", "\u{3000}", "0", "1", "9", "12",
                "½", "²", "١", "①", "Ⅻ", ".", ",", "'", "'s", "'ll", "s", "t", "ve", "-", "_", "(",
                "中", "é", "😀", "\u{301}",
            ],
            257,
        );
    }
}
