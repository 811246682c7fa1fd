//! BERT's pre-tokenizer (`BertPreTokenizer`) in one pass.
//!
//! Invariant: the pieces are the generic interpreter's for `BertPreTokenizer`, which is
//! `WhitespaceSplit` (each `char::is_whitespace` char removed) and then `Punctuation`
//! isolated (each ASCII or Unicode punctuation char a piece of its own): the maximal runs
//! of chars that are neither, and each punctuation char alone, in order.
//!
//! Why one pass is the same: both steps decide each char by its own class, so the second
//! step's cuts inside the first one's pieces are its cuts in the whole text, and a removed
//! whitespace char is no punctuation (no char is both: checked over every char in the tests).

use super::super::unicode_classes::{
    bert_class, bert_class_in, bert_table, BERT_PUNCT, BERT_SPACE,
};
use crate::encode::pretok::classes::decode_multibyte;
use crate::error::Result;
use serde_json::Value;

/// A char's class here.
const WORD: u8 = 0;
const SPACE: u8 = 1;
const PUNCT: u8 = 2;

pub struct Bert {
    /// Each ASCII byte's class.
    ascii: [u8; 128],
    /// [`bert_table`], once the first text that is not ASCII asks for it.
    table: std::sync::OnceLock<&'static [u8]>,
}

impl Bert {
    /// The scanner for a `BertPreTokenizer` object (alone, or alone in a `Sequence`).
    pub fn recognise(v: &Value) -> Option<Bert> {
        let kind = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_owned);
        let inner = match kind(v)?.as_str() {
            "Sequence" => match v.get("pretokenizers")?.as_array()?.as_slice() {
                [one] => one,
                _ => return None,
            },
            _ => v,
        };
        (kind(inner)?.as_str() == "BertPreTokenizer").then(Bert::new)
    }

    fn new() -> Bert {
        let mut ascii = [WORD; 128];
        for (b, class) in ascii.iter_mut().enumerate() {
            *class = class_of(char::from(b as u8));
        }
        Bert {
            ascii,
            table: std::sync::OnceLock::new(),
        }
    }

    /// Calls `f(start, end)` with each piece of `seg`, in order.
    #[inline]
    pub fn for_each_piece(
        &self,
        seg: &str,
        mut f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        let b = seg.as_bytes();
        // The start of the run of word chars before `i`, if any.
        let mut word: Option<usize> = None;
        let mut i = 0;
        while i < b.len() {
            let lead = b[i];
            let (class, len) = if lead < 0x80 {
                (self.ascii[lead as usize], 1)
            } else {
                // `i` is on a char boundary of the UTF-8 text `seg`.
                let (u, len) = decode_multibyte(b, i, lead);
                let table = *self.table.get_or_init(bert_table);
                let c = char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER);
                (class_in(bert_class_in(table, c)), len)
            };
            if class == WORD {
                word.get_or_insert(i);
            } else {
                if let Some(s) = word.take() {
                    f(s, i)?;
                }
                if class == PUNCT {
                    f(i, i + len)?;
                }
            }
            i += len;
        }
        if let Some(s) = word {
            f(s, b.len())?;
        }
        Ok(())
    }
}

fn class_of(c: char) -> u8 {
    class_in(bert_class(c))
}

/// This scanner's class of a char of [`bert_class`] `bits`.
#[inline]
fn class_in(bits: u8) -> u8 {
    if bits & BERT_SPACE != 0 {
        SPACE
    } else if bits & BERT_PUNCT != 0 {
        PUNCT
    } else {
        WORD
    }
}

#[cfg(test)]
mod tests {
    use crate::pipeline::pre_tokenizers::{is_punctuation, PreTokenizer};
    use crate::pipeline::scanners::{assert_agree, assert_agree_on_random_texts};
    use serde_json::json;

    #[test]
    fn no_char_is_both_whitespace_and_punctuation() {
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            assert!(!(c.is_whitespace() && is_punctuation(c)), "{c:?}");
        }
    }

    #[test]
    fn recognised_and_named() {
        for v in [
            json!({"type": "BertPreTokenizer"}),
            json!({"type": "Sequence", "pretokenizers": [{"type": "BertPreTokenizer"}]}),
        ] {
            let pt = PreTokenizer::from_json(&v).unwrap();
            assert_eq!(pt.splitter_kinds(), ["scan:bert"]);
        }
        let two = json!({"type": "Sequence", "pretokenizers": [
            {"type": "BertPreTokenizer"}, {"type": "Digits"}]});
        let pt = PreTokenizer::from_json(&two).unwrap();
        assert!(pt.splitter_kinds().is_empty());
    }

    #[test]
    fn fused_equals_generic() {
        let v = json!({"type": "BertPreTokenizer"});
        let fused = PreTokenizer::from_json(&v).unwrap();
        let generic = PreTokenizer::from_json_generic(&v).unwrap();
        let tricky = [
            "",
            " ",
            "Hello, world!  It's (x)\t\n\r\x0b\x0c",
            "a\u{a0}b\u{3000}c\u{2028}d\u{85}e",
            "¿Qué? «non» 「引用」—x… ‽ ՛ ٪",
            "\x00\x01\x7f \u{200b}\u{feff}",
            "中文한국어 😀 e\u{301}",
            "...!!!",
        ];
        for t in tricky {
            assert_agree(&fused, &generic, t);
        }
        assert_agree_on_random_texts(
            &fused,
            &generic,
            &[
                "a", "Z", " ", "  ", "\t", "\n", "\u{a0}", "\u{3000}", ".", ",", "'", "-", "_",
                "#", "$", "+", "中", "é", "😀", "«", "—", "\u{301}", "\x00", "\u{85}",
            ],
            211,
        );
    }
}
