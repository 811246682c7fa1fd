//! Unicode classes the pre-tokenizers test chars against, from regex-syntax's tables.
//!
//! Invariant: `is_punctuation(c)` holds exactly for chars of general category P* (Pc, Pd,
//! Ps, Pe, Pi, Pf, Po) in regex-syntax's Unicode tables.

use regex_syntax::hir::{Class, HirKind};
use std::sync::OnceLock;

fn ranges(pattern: &str) -> Vec<(char, char)> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()
        .map(|h| h.into_kind());
    match hir {
        Some(HirKind::Class(Class::Unicode(c))) => {
            c.ranges().iter().map(|r| (r.start(), r.end())).collect()
        }
        _ => Vec::new(),
    }
}

/// The ranges of `\p{P}`, sorted.
pub fn punctuation_ranges() -> &'static [(char, char)] {
    static P: OnceLock<Vec<(char, char)>> = OnceLock::new();
    P.get_or_init(|| ranges(r"\p{P}"))
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
    }
}
