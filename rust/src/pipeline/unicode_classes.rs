//! Unicode classes the pre-tokenizers test chars against.
//!
//! Invariant: `is_punctuation(c)` holds exactly where HF's `is_punctuation` does beyond
//! ASCII: the `unicode_categories` crate's (general category P*: Pc, Pd, Ps, Pe, Pi, Pf, Po)
//! in that crate's Unicode tables, which are older than regex-syntax's. HF's `Punctuation`
//! pre-tokenizer is `is_ascii_punctuation || is_punctuation` of that crate: a char made
//! punctuation by a later Unicode version (U+09FD BENGALI ABBREVIATION SIGN, U+2E4E) is
//! not punctuation to it, so the same crate answers here.
//!
//! `bert_class(c)` holds, as bits, what HF's `BertNormalizer` and `BertPreTokenizer` ask of a
//! char, each from the crate HF asks (see [`bert_class_of`]).

use std::sync::OnceLock;

/// The ranges of the chars `is_punctuation` holds for, sorted; found once a process by
/// asking the crate of every char (its answer is a binary search in each of seven tables;
/// these ranges make it one).
pub fn punctuation_ranges() -> &'static [(char, char)] {
    static P: OnceLock<Vec<(char, char)>> = OnceLock::new();
    P.get_or_init(|| {
        use unicode_categories::UnicodeCategories;
        let mut out: Vec<(char, char)> = Vec::new();
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            if !c.is_punctuation() {
                continue;
            }
            match out.last_mut() {
                Some((_, hi)) if *hi as u32 + 1 == c as u32 => *hi = c,
                _ => out.push((c, c)),
            }
        }
        out
    })
}

pub fn is_punctuation(c: char) -> bool {
    let p = punctuation_ranges();
    p.binary_search_by(|&(lo, hi)| {
        if hi < c {
            std::cmp::Ordering::Less
        } else if lo > c {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    })
    .is_ok()
}

/// `BertNormalizer`'s control chars (removed by `clean_text`): `unicode_categories`' "other"
/// (Cc, Cf, Co), but not `\t`, `\n`, `\r`.
pub const BERT_CONTROL: u8 = 1;
/// `char::is_whitespace` (made a space by `clean_text`, a cut for `BertPreTokenizer`).
pub const BERT_SPACE: u8 = 2;
/// `is_punctuation` or ASCII punctuation (isolated by `BertPreTokenizer`).
pub const BERT_PUNCT: u8 = 4;
/// `BertNormalizer`'s CJK ideographs (a space put each side).
pub const BERT_CHINESE: u8 = 8;
/// A char NFD leaves alone that is a starter (combining class 0) and no non-spacing mark:
/// accent stripping keeps it as it is, and no mark after it is reordered before it.
pub const BERT_PLAIN: u8 = 16;
/// `char::to_lowercase` leaves the char as it is.
pub const BERT_LOWER_SELF: u8 = 32;

/// The [`bert_class`] bits of `c`, asked of the crates HF uses.
pub fn bert_class_of(c: char) -> u8 {
    use unicode_categories::UnicodeCategories;
    use unicode_normalization_alignments::char::canonical_combining_class;
    use unicode_normalization_alignments::UnicodeNormalization;
    let mut bits = 0;
    if !matches!(c, '\t' | '\n' | '\r') && c.is_other() {
        bits |= BERT_CONTROL;
    }
    if c.is_whitespace() {
        bits |= BERT_SPACE;
    }
    if c.is_ascii_punctuation() || is_punctuation(c) {
        bits |= BERT_PUNCT;
    }
    if is_chinese_char(c) {
        bits |= BERT_CHINESE;
    }
    let mut nfd = std::iter::once(c).nfd().map(|(d, _)| d);
    if canonical_combining_class(c) == 0
        && !c.is_mark_nonspacing()
        && nfd.next() == Some(c)
        && nfd.next().is_none()
    {
        bits |= BERT_PLAIN;
    }
    let mut lower = c.to_lowercase();
    if lower.next() == Some(c) && lower.next().is_none() {
        bits |= BERT_LOWER_SELF;
    }
    bits
}

/// HF's `bert::is_chinese_char`: the CJK ideograph blocks.
pub fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

/// [`bert_class_of`] of every char of the Basic Multilingual Plane (64 KiB, built at the
/// first BERT text that is not ASCII), for [`bert_class_in`].
pub fn bert_table() -> &'static [u8] {
    use crate::runtime::process_once::ProcessOnce;
    static TABLE: ProcessOnce<Box<[u8]>> = ProcessOnce::new();
    TABLE.get_or_init(|| {
        (0..0x10000u32)
            .map(|u| char::from_u32(u).map_or(0, bert_class_of))
            .collect()
    })
}

/// [`bert_class_of`], from `table` ([`bert_table`]) for a char of the BMP.
#[inline]
pub fn bert_class_in(table: &[u8], c: char) -> u8 {
    match table.get(c as usize) {
        Some(&bits) => bits,
        None => bert_class_of(c),
    }
}

/// [`bert_class_of`], from the table for a char of the BMP.
#[inline]
pub fn bert_class(c: char) -> u8 {
    bert_class_in(bert_table(), c)
}

#[cfg(test)]
mod tests {
    #[test]
    fn punctuation() {
        assert!(super::is_punctuation('!'));
        assert!(super::is_punctuation('«'));
        assert!(!super::is_punctuation('a'));
        assert!(!super::is_punctuation('+')); // Sm, not P
                                              // Punctuation only from Unicode 10 and 12 on: not to HF (with `Punctuation`,
                                              // tokenizers 0.23 cuts "'\u{9fd}" into two pieces).
        assert!(!super::is_punctuation('\u{9fd}'));
        assert!(!super::is_punctuation('\u{2e4e}'));
    }

    #[test]
    fn bert_class_is_the_crates_answer_for_every_char() {
        for c in (0..=char::MAX as u32).step_by(7).filter_map(char::from_u32) {
            assert_eq!(super::bert_class(c), super::bert_class_of(c), "{c:?}");
        }
        use super::*;
        assert_eq!(bert_class('a'), BERT_PLAIN | BERT_LOWER_SELF);
        assert_eq!(bert_class('É'), 0); // NFD decomposes it; lowercasing changes it
        assert_eq!(bert_class('\u{301}'), BERT_LOWER_SELF); // a non-spacing mark
        assert_eq!(bert_class('é'), BERT_LOWER_SELF); // NFD decomposes it
        assert_eq!(
            bert_class('\u{3000}'),
            BERT_SPACE | BERT_PLAIN | BERT_LOWER_SELF
        );
        assert_eq!(
            bert_class('\u{200b}'),
            BERT_CONTROL | BERT_PLAIN | BERT_LOWER_SELF
        ); // Cf
        assert_eq!(
            bert_class('中'),
            BERT_CHINESE | BERT_PLAIN | BERT_LOWER_SELF
        );
        assert_eq!(bert_class('\u{f900}'), BERT_CHINESE | BERT_LOWER_SELF); // NFD maps it to U+8C48
        assert_eq!(bert_class('«'), BERT_PUNCT | BERT_PLAIN | BERT_LOWER_SELF);
    }

    #[test]
    fn the_ranges_are_the_crates_answer_for_every_char() {
        use unicode_categories::UnicodeCategories;
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            assert_eq!(super::is_punctuation(c), c.is_punctuation(), "{c:?}");
        }
    }
}
