//! DeepSeek LLM's pre-tokenizer in one scanner.
//!
//! The `Sequence` (all `Split`s `Isolated`, not inverted; no normalizer runs before):
//! 1. `[\r\n]`;
//! 2. `\s?[L]+` (L: a long list of letter ranges);
//! 3. `\s?[P]+` (P: ASCII `!-/` and `:-~`, fullwidth `！-／` and `：-～`, `‘-‟`,
//!    U+3000-U+3002);
//! 4. `\s+$` (Oniguruma's `$`: end of line, `\s+(?m:$)`);
//! 5. `[C]+` (C: `一-龥`, U+0800-U+4E00, `가`-U+D7FF);
//! 6. `Digits(individual_digits=true)`;
//! 7. `ByteLevel` without prefix space or regex (cuts nothing).
//!
//! Invariant: [`DeepSeek::for_each_piece`] yields the pieces the generic interpreter makes
//! of a segment under this Sequence (see the parent module). S, L, P, C are the classes of
//! the patterns' own syntax trees; digits are `char::is_numeric`, as the generic `Digits`.
//!
//! Proof, step by step (each isolating step cuts each piece it is given at its matches'
//! starts and ends; the steps are nested here in the same order):
//! - 1: the class is checked to be exactly {`\n`, `\r`}, two ASCII bytes that occur in UTF-8
//!   only as themselves: each is cut out alone.
//! - 2 and 3, `S?X+` on a piece: the leftmost-first search from p finds the least i ≥ p at
//!   which a match starts, and there the match greedy `S?` prefers. A match starts at i iff
//!   (c_i ∈ S and c_{i+1} ∈ X, inside the piece) or c_i ∈ X; in the first case it is c_i and
//!   the maximal X run after it, else the maximal X run from i (for c_i ∈ S ∩ X followed by
//!   an X char both read the same range). No match is empty, so the search goes on at the
//!   match's end.
//! - 4, `\s+(?m:$)`: `$` holds at the piece's end and before a `\n`; after step 1 a piece
//!   holds a `\n` only if it is that `\n` alone, which the match covers whole. Otherwise a
//!   match from i needs every char from i to the end in S: the leftmost is the start k of
//!   the piece's maximal trailing S run, the match [k, end). The only cut is k, if inside.
//! - 5 and 6 cut by neighbouring chars only: 5 between adjacent chars of which one is in C
//!   and the other not (its matches are the maximal C runs), 6 around each numeric char. So
//!   together they cut each piece of step 4 at the union of those places, in one pass.
//!
//! A shortcut: a match of step 2 whose run chars are all in P, whose last char is not in S
//! and which holds no C or numeric char is one piece. Step 3 matches it whole (its first
//! char starts a match: an S char followed by a P char, or a P char, and the P run then
//! reaches its end), step 4 finds no trailing S run, and steps 5 and 6 find nothing to cut.
//! Most words are such matches (ASCII letters are in P).

use super::table::{prev_start, ranges_of, Classes};
use super::{hir_of, is_byte_level, is_digits, is_isolating_split, opt_then_run, repeated_class};
use crate::error::Result;
use regex_syntax::hir::{HirKind, Look};
use serde_json::Value;
use std::sync::OnceLock;

/// The patterns of steps 1-5, as the file writes them.
pub const NEWLINE: &str = "[\r\n]";
pub const LETTERS: &str = "\\s?[A-Za-z\u{b5}\u{c0}-\u{d6}\u{d8}-\u{f6}\u{f8}-\u{1ba}\u{1bc}-\u{1bf}\u{1c4}-\u{293}\u{295}-\u{2af}\u{370}-\u{373}\u{376}\u{377}\u{37b}-\u{37d}\u{37f}\u{386}\u{388}-\u{38a}\u{38c}\u{38e}-\u{3a1}\u{3a3}-\u{3f5}\u{3f7}-\u{481}\u{48a}-\u{52f}\u{531}-\u{556}\u{10a0}-\u{10c5}\u{13a0}-\u{13f5}\u{13f8}-\u{13fd}\u{1c90}-\u{1cba}\u{1cbd}-\u{1cbf}\u{1d00}-\u{1d2b}\u{1d6b}-\u{1d77}\u{1d79}-\u{1d9a}\u{1e00}-\u{1f15}\u{1f18}-\u{1f1d}\u{1f20}-\u{1f45}\u{1f48}-\u{1f4d}\u{1f50}-\u{1f57}\u{1f59}\u{1f5b}\u{1f5d}\u{1f5f}-\u{1f7d}\u{1f80}-\u{1fb4}\u{1fb6}-\u{1fbc}\u{1fbe}\u{1fc2}-\u{1fc4}\u{1fc6}-\u{1fcc}\u{1fd0}-\u{1fd3}\u{1fd6}-\u{1fdb}\u{1fe0}-\u{1fec}\u{1ff2}-\u{1ff4}\u{1ff6}-\u{1ffc}\u{2102}\u{2107}\u{210a}-\u{2113}\u{2115}\u{2119}-\u{211d}\u{2124}\u{2126}\u{2128}\u{212a}-\u{212d}\u{212f}-\u{2134}\u{2139}\u{213c}-\u{213f}\u{2145}-\u{2149}\u{214e}\u{2183}\u{2184}\u{2c00}-\u{2c7b}\u{2c7e}-\u{2ce4}\u{2ceb}-\u{2cee}\u{2cf2}\u{2cf3}\u{a640}-\u{a66d}\u{a680}-\u{a69b}\u{a722}-\u{a76f}\u{a771}-\u{a787}\u{a78b}-\u{a78e}\u{ab70}-\u{abbf}\u{fb00}-\u{fb06}\u{fb13}-\u{fb17}\u{ff21}-\u{ff3a}\u{ff41}-\u{ff5a}\u{10400}-\u{1044f}\u{104b0}-\u{104d3}\u{104d8}-\u{104fb}\u{10c80}-\u{10cb2}\u{10cc0}-\u{10cf2}\u{118a0}-\u{118df}\u{1e900}-\u{1e943}]+";
pub const PUNCT: &str =
    "\\s?[!-/:-~\u{ff01}-\u{ff0f}\u{ff1a}-\u{ff5e}\u{2018}-\u{201f}\u{3000}-\u{3002}]+";
pub const TRAILING_SPACE: &str = "\\s+$";
pub const CJK: &str = "[\u{4e00}-\u{9fa5}\u{800}-\u{4e00}\u{ac00}-\u{d7ff}]+";

/// Class bits: `\s`, step 2's letters, step 3's punctuation, step 5's CJK, numeric.
const S: u8 = 1;
const L: u8 = 2;
const P: u8 = 4;
const C: u8 = 8;
const D: u8 = 16;

pub struct DeepSeek {
    t: &'static Classes,
}

impl DeepSeek {
    /// The scanner, if `steps` are exactly DeepSeek LLM's (see the module docs).
    pub fn recognise(steps: &[Value]) -> Result<Option<DeepSeek>> {
        let [s1, s2, s3, s4, s5, s6, s7] = steps else {
            return Ok(None);
        };
        let same = is_isolating_split(s1, NEWLINE)
            && is_isolating_split(s2, LETTERS)
            && is_isolating_split(s3, PUNCT)
            && is_isolating_split(s4, TRAILING_SPACE)
            && is_isolating_split(s5, CJK)
            && is_digits(s6, true)
            && is_byte_level(s7, false);
        if !same {
            return Ok(None);
        }
        static TABLE: OnceLock<Option<Classes>> = OnceLock::new();
        Ok(TABLE.get_or_init(table).as_ref().map(|t| DeepSeek { t }))
    }

    /// Calls `f(start, end)` with each piece of `seg` (see the module docs).
    #[inline]
    pub fn for_each_piece(
        &self,
        seg: &str,
        mut f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        let b = seg.as_bytes();
        let mut pos = 0;
        // Step 1's cuts, found many bytes at a time.
        for i in memchr::memchr2_iter(b'\n', b'\r', b) {
            if pos < i {
                self.words(b, pos, i, &mut f)?;
            }
            self.words(b, i, i + 1, &mut f)?;
            pos = i + 1;
        }
        if pos < b.len() {
            self.words(b, pos, b.len(), &mut f)?;
        }
        Ok(())
    }

    /// Step 2 on piece `s..e`: `opt_space_run` with L, and the shortcut of the module docs.
    #[inline(always)]
    fn words<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        f: &mut F,
    ) -> Result<()> {
        let t = self.t;
        let mut pos = s; // start of the gap before the next match
        let mut i = s;
        while i < e {
            let (c, n) = t.at(b, i);
            // Where the L run of a match at i starts, and the bits of its S char before.
            let (run, lead) = if c & S != 0 && i + n < e && t.at(b, i + n).0 & L != 0 {
                (i + n, c)
            } else if c & L != 0 {
                (i, 0)
            } else {
                i += n;
                continue;
            };
            let mut j = run;
            let (mut any, mut all, mut last) = (lead, u8::MAX, 0u8);
            while j < e {
                let (c, n) = t.at(b, j);
                if c & L == 0 {
                    break;
                }
                any |= c;
                all &= c;
                last = c;
                j += n;
            }
            if pos < i {
                self.puncts(b, pos, i, f)?;
            }
            if all & P != 0 && any & (C | D) == 0 && last & S == 0 {
                f(i, j)?;
            } else {
                self.puncts(b, i, j, f)?;
            }
            pos = j;
            i = j;
        }
        if pos < e {
            self.puncts(b, pos, e, f)?;
        }
        Ok(())
    }

    /// Step 3 on piece `s..e`.
    #[inline(always)]
    fn puncts<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        f: &mut F,
    ) -> Result<()> {
        self.opt_space_run(b, s, e, P, &mut |s, e| self.trailing(b, s, e, f))
    }

    /// `S?X+` (X: bit `x`) on piece `s..e`: matches and the gaps between them to `g`.
    #[inline(always)]
    fn opt_space_run<G: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        x: u8,
        g: &mut G,
    ) -> Result<()> {
        let t = self.t;
        let mut pos = s; // start of the gap before the next match
        let mut i = s;
        while i < e {
            let (c, n) = t.at(b, i);
            let mut run = usize::MAX; // where the X run of a match at i starts
            if c & S != 0 && i + n < e && t.at(b, i + n).0 & x != 0 {
                run = i + n;
            } else if c & x != 0 {
                run = i;
            }
            if run == usize::MAX {
                i += n;
                continue;
            }
            let mut j = run;
            while j < e {
                let (c, n) = t.at(b, j);
                if c & x == 0 {
                    break;
                }
                j += n;
            }
            if pos < i {
                g(pos, i)?;
            }
            g(i, j)?;
            pos = j;
            i = j;
        }
        if pos < e {
            g(pos, e)?;
        }
        Ok(())
    }

    /// Step 4 on piece `s..e`: its trailing `\s` run cut off, if the piece has more.
    #[inline(always)]
    fn trailing<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        f: &mut F,
    ) -> Result<()> {
        let mut k = e;
        while k > s {
            let st = prev_start(b, k);
            if self.t.at(b, st).0 & S == 0 {
                break;
            }
            k = st;
        }
        if s < k && k < e {
            self.cjk_digits(b, s, k, f)?;
            self.cjk_digits(b, k, e, f)
        } else {
            self.cjk_digits(b, s, e, f)
        }
    }

    /// Steps 5 and 6 on piece `s..e`: cut between a C char and a non-C char, and around
    /// each numeric char.
    #[inline(always)]
    fn cjk_digits<F: FnMut(usize, usize) -> Result<()>>(
        &self,
        b: &[u8],
        s: usize,
        e: usize,
        f: &mut F,
    ) -> Result<()> {
        let t = self.t;
        let mut pos = s;
        let (c0, _) = t.at(b, s);
        let mut in_c = c0 & C != 0;
        let mut i = s;
        while i < e {
            let (c, n) = t.at(b, i);
            if (c & C != 0) != in_c {
                in_c = !in_c;
                if pos < i {
                    f(pos, i)?;
                    pos = i;
                }
            }
            if c & D != 0 {
                if pos < i {
                    f(pos, i)?;
                }
                f(i, i + n)?;
                pos = i + n;
            }
            i += n;
        }
        if pos < e {
            f(pos, e)?;
        }
        Ok(())
    }
}

/// The class table, from the patterns' syntax trees; `None` if one is not of the shape the
/// proof assumes.
fn table() -> Option<Classes> {
    let newline = hir_of(NEWLINE)?;
    let nl = super::class(&newline)?;
    if ranges_of(nl) != [('\n', '\n'), ('\r', '\r')] {
        return None;
    }
    let letters = hir_of(LETTERS)?;
    let (s, l) = opt_then_run(&letters)?;
    let punct = hir_of(PUNCT)?;
    let (s2, p) = opt_then_run(&punct)?;
    let trailing = hir_of(TRAILING_SPACE)?;
    let s3 = match trailing.kind() {
        HirKind::Concat(v) if v.len() == 2 => {
            if !matches!(v[1].kind(), HirKind::Look(Look::EndLF)) {
                return None;
            }
            repeated_class(&v[0], 1, None)?
        }
        _ => return None,
    };
    if s2 != s || s3 != s {
        return None;
    }
    let cjk = hir_of(CJK)?;
    let c = repeated_class(&cjk, 1, None)?;
    let (s, l, p, c) = (ranges_of(s), ranges_of(l), ranges_of(p), ranges_of(c));
    Some(Classes::build(
        &[(&s, S), (&l, L), (&p, P), (&c, C)],
        &[(char::is_numeric, D)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::pre_tokenizers::PreTokenizer;
    use crate::pipeline::scanners::{assert_agree, assert_agree_on_random_texts};
    use serde_json::json;

    pub(crate) fn json() -> Value {
        let split = |p: &str| {
            json!({"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated",
                   "invert": false})
        };
        json!({"type": "Sequence", "pretokenizers": [
            split(NEWLINE), split(LETTERS), split(PUNCT), split(TRAILING_SPACE), split(CJK),
            {"type": "Digits", "individual_digits": true},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
             "use_regex": false},
        ]})
    }

    const TRICKY: [&str; 22] = [
        "",
        "\n",
        "\r\n",
        "a\r\n  b \n",
        "Hello world!  \n\n  ",
        "trailing spaces   ",
        "\u{3000}\u{3000}x\u{3000}",
        " \u{3000}。，！（ok）",
        "“quoted” ‘single’ — dash",
        "中文测试，你好。한국어 텍스트\u{d7ff}",
        "\u{800}\u{4e00}\u{4e01}\u{9fa5}\u{9fa6}",
        "digits 123 ½ ² ١٢٣ ① 〇 Ⅻ ٣x",
        "héllo µ naïve Ωmega ǅ ﬁ Ａｂｃ",
        "\t\ttabs\t\u{a0}\u{a0}nbsp\u{2009}",
        "😀 emoji😀😀 \u{85}nel",
        "a1b2c3 x9 99 \u{661}\u{662}",
        "   ",
        " a",
        "a ",
        "!!! ?? ..",
        "\u{2028}line sep\u{2029}para",
        "mixed 中a1, 가b\u{3001}z  \r\n",
    ];

    #[test]
    fn recognised_and_named() {
        let pt = PreTokenizer::from_json(&json()).unwrap();
        assert_eq!(pt.splitter_kinds(), ["scan:deepseek-llm"]);
        let mut other = json();
        other["pretokenizers"][5]["individual_digits"] = json!(false);
        let pt = PreTokenizer::from_json(&other).unwrap();
        assert!(!pt.splitter_kinds().contains(&"scan:deepseek-llm"));
    }

    #[test]
    fn fused_equals_generic_on_tricky_text() {
        let fused = PreTokenizer::from_json(&json()).unwrap();
        let generic = PreTokenizer::from_json_generic(&json()).unwrap();
        for t in TRICKY {
            assert_agree(&fused, &generic, t);
        }
    }

    #[test]
    fn fused_equals_generic_on_random_text() {
        let fused = PreTokenizer::from_json(&json()).unwrap();
        let generic = PreTokenizer::from_json_generic(&json()).unwrap();
        assert_agree_on_random_texts(
            &fused,
            &generic,
            &[
                "a",
                "Z",
                "q",
                " ",
                "  ",
                "\t",
                "\n",
                "\r",
                "\u{3000}",
                "\u{a0}",
                "\u{2003}",
                "\u{85}",
                "\u{2028}",
                "！",
                "，",
                "。",
                "\u{3001}",
                "\u{3002}",
                "‘",
                "”",
                "\u{201f}",
                "\u{2020}",
                "é",
                "µ",
                "ß",
                "Ω",
                "ǅ",
                "ﬁ",
                "Ａ",
                "ｚ",
                "\u{ff5f}",
                "中",
                "一",
                "龥",
                "\u{9fa6}",
                "가",
                "힣",
                "\u{d7ff}",
                "\u{800}",
                "ก",
                "ー",
                "1",
                "9",
                "0",
                "½",
                "²",
                "١",
                "٣",
                "①",
                "〇",
                "Ⅻ",
                ".",
                ",",
                "!",
                "'",
                "-",
                "_",
                "$",
                "~",
                "/",
                ":",
                "@",
                "😀",
                "\u{301}",
                "𐐀",
                "𞤀",
                "\u{1e944}",
            ],
            331,
        );
    }
}
