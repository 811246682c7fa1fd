//! Unicode classes the pre-tokenizers test chars against.
//!
//! Invariant: `is_punctuation(c)` holds exactly where HF's `is_punctuation` does beyond
//! ASCII: the `unicode_categories` crate's (general category P*: Pc, Pd, Ps, Pe, Pi, Pf, Po)
//! in that crate's Unicode tables, which are older than regex-syntax's. HF's `Punctuation`
//! pre-tokenizer is `is_ascii_punctuation || is_punctuation` of that crate: a char made
//! punctuation by a later Unicode version (U+09FD BENGALI ABBREVIATION SIGN, U+2E4E) is
//! not punctuation to it, so the same crate answers here.

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
    fn the_ranges_are_the_crates_answer_for_every_char() {
        use unicode_categories::UnicodeCategories;
        for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
            assert_eq!(super::is_punctuation(c), c.is_punctuation(), "{c:?}");
        }
    }
}
