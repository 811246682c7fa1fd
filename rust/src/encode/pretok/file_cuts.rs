//! Where a file may be cut into parts that are encoded one by one: the rule the command line
//! (`encode`, `count`) and the trainer's measurement use, written once.
//!
//! Invariant: for a text split by any of the three OpenAI patterns ([`super::OPENAI_PATTERNS`]),
//! at every cut [`last_file_cut`] returns, the pieces of the whole text are the pieces of the
//! text before the cut followed by those of the text after it. So, when no special token
//! holds a `"\n"` ([`file_cuts_apply`]), the ids of the parts joined are the whole's ids. The
//! same holds for the other scanners of [`KEEPING_SPLITTERS`], whose pieces differ from the
//! OpenAI patterns' only where no cut falls.
//!
//! The rule: just after a `"\n"` that follows a char that is not whitespace, and before a
//! char that is neither whitespace nor `/`. Why that is a piece boundary for every OpenAI
//! pattern whatever follows: no alternative of r50k, cl100k or o200k that can hold such a
//! `"\n"` goes on past it into such a char (the letter runs cannot start with `"\n"` nor take
//! it as their one leading symbol; the punctuation runs take only newlines and, in o200k, `/`
//! after them; the whitespace run is the `"\n"` alone, as the char before it is not
//! whitespace), none starts at the `"\n"` and goes on past it (the punctuation runs may start
//! with a space only), and that `"\n"` is one piece whether the text goes on or ends there.
//! So a line may start with a letter, a digit, `{`, `<`, `#`, a mark...: JSON Lines and
//! markup are cut too. (A `"\r\n"` is not a cut: r50k splits it when a letter follows and not
//! at the end.)
//!
//! "Whitespace" is Python's `str.isspace`: the Unicode `White_Space` chars the patterns' `\s`
//! matches, and U+001C-U+001F besides, which only makes the rule stricter.

/// Python's `str.isspace` for one char: `White_Space` (the patterns' `\s`) and the four
/// information separators U+001C-U+001F.
fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The char whose UTF-8 starts at `data[i]`, if it is whole there.
fn char_at(data: &[u8], i: usize) -> Option<char> {
    let lead = data[i];
    let width = match lead {
        0..=0x7F => 1,
        0x80..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    };
    let bytes = data.get(i..i + width)?;
    std::str::from_utf8(bytes).ok()?.chars().next()
}

/// The char whose UTF-8 ends just before `data[i]`, if it is whole there.
fn char_before(data: &[u8], i: usize) -> Option<char> {
    let mut j = i - 1;
    while j > i.saturating_sub(4) && (0x80..0xC0).contains(&data[j]) {
        j -= 1;
    }
    let s = std::str::from_utf8(&data[j..i]).ok()?;
    let mut chars = s.chars();
    let c = chars.next()?;
    chars.next().is_none().then_some(c)
}

/// The last place in `data[start..]` where the UTF-8 text `data` may be cut (see the module's
/// rule), as an offset into `data`, or 0 if there is none. A `"\n"` at `data[0]` or at the
/// very end is no cut (what comes before or after it is unknown); the chars either side of
/// a `"\n"` must be whole UTF-8 in `data`. Searching only from `start` lets a caller that
/// appends to a buffer look at the new bytes only.
pub fn last_file_cut(data: &[u8], start: usize) -> usize {
    let n = data.len();
    if n < 3 {
        return 0;
    }
    let lo = start.max(1);
    // `"\n"` positions `i` with `lo <= i <= n - 2`, last first.
    let mut hi = n - 1;
    while hi > lo {
        let Some(k) = data[lo..hi].iter().rposition(|&b| b == b'\n') else {
            return 0;
        };
        let i = lo + k;
        let after = char_at(data, i + 1);
        let before = char_before(data, i);
        if let (Some(a), Some(b)) = (after, before) {
            if !is_space(a) && a != '/' && !is_space(b) {
                return i + 1;
            }
        }
        hi = i;
    }
    0
}

/// The splitters, by `kind()` (`Splitter`'s or the pipeline's `PieceSplitter`'s), whose
/// pieces every cut keeps: the OpenAI patterns' scanners, which the module docs argue for;
/// Llama 3's pieces are cl100k's but for a text's last whitespace run after a newline (a
/// part ends at a newline), Qwen2's and Qwen3.5's are Llama 3's with numbers cut or marks
/// read as letters (neither joins a newline to what follows it), Tekken's and Kimi K2's are
/// o200k's with alternatives that take fewer chars, and Llama 4's are o200k's with letters
/// told apart by ASCII case and marks as punctuation, whose runs take nothing after a newline
/// but newlines and `/` (`pipeline/splitters.rs`, `pretok/o200k.rs`).
pub const KEEPING_SPLITTERS: [&str; 9] = [
    "r50k", "cl100k", "o200k", "llama3", "qwen2", "qwen3.5", "tekken", "kimi-k2", "llama4",
];

/// Does the rule of [`last_file_cut`] hold for an encoding whose splitter is `kind` with
/// these special tokens? Only for [`KEEPING_SPLITTERS`], and only when no special token
/// holds a `"\n"` (a special token across a cut would be split in two).
pub fn file_cuts_apply<'a>(kind: &str, mut specials: impl Iterator<Item = &'a str>) -> bool {
    KEEPING_SPLITTERS.contains(&kind) && !specials.any(|t| t.contains('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::pretok::{Splitter, LLAMA4_PATTERN, OPENAI_PATTERNS};

    #[test]
    fn cuts_follow_the_rule() {
        let cut = |s: &str| last_file_cut(s.as_bytes(), 0);
        assert_eq!(cut("a\nb"), 2);
        assert_eq!(cut("one\ntwo\nthree"), 8);
        assert_eq!(cut("a.\n{\"x\": 1}"), 3);
        assert_eq!(cut("é\n中"), 3);
        // Not cuts: whitespace either side, a "/" after, the ends of the data.
        for s in [
            "a\n b",
            "a\n\nb",
            "a\r\nb",
            "a \nb",
            "a\n/b",
            "a\n\u{1c}b",
            "a\n\u{3000}b",
        ] {
            assert_eq!(cut(s), 0, "{s:?}");
        }
        assert_eq!(cut("\nab"), 0);
        assert_eq!(cut("ab\n"), 0);
        // Chars that are not whole UTF-8 in the data are no cut.
        assert_eq!(last_file_cut(b"a\n\xe4\xb8", 0), 0);
        assert_eq!(last_file_cut(b"\xb8\nb", 0), 0);
        assert_eq!(last_file_cut(b"x\xe4\xb8\xad\nb", 0), 5);
        // Only `data[start..]` is searched, and the last cut there is the answer.
        assert_eq!(last_file_cut(b"a\nb c\nd", 3), 6);
        assert_eq!(last_file_cut(b"a\nb c d", 3), 0);
        assert_eq!(last_file_cut(b"a\nb c\nd", 100), 0);
    }

    #[test]
    fn cuts_apply_to_the_openai_patterns_without_newline_specials() {
        let kind = |p: &str| Splitter::new(p).unwrap().kind();
        for (_, p) in OPENAI_PATTERNS {
            assert!(file_cuts_apply(kind(p), ["<|endoftext|>"].into_iter()));
            assert!(!file_cuts_apply(kind(p), ["<|a\nb|>"].into_iter()));
        }
        assert!(!file_cuts_apply(kind(r"\w+|\s+"), std::iter::empty()));
        // The reference path of an OpenAI pattern is not argued for.
        let reference = Splitter::reference(OPENAI_PATTERNS[1].1).unwrap();
        assert!(!file_cuts_apply(reference.kind(), std::iter::empty()));
    }

    /// The module's invariant on text built to hold many cuts and near-cuts: every cut splits
    /// the pieces of the three patterns and of Llama 4's in two.
    #[test]
    fn pieces_split_at_every_cut() {
        let units = [
            "a", "Ab", "7", "123", " ", "  ", "\n", "\r\n", "\n\n", "/", "//", "{", "<", "#", "'s",
            "'ll", "é", "中", "\u{301}", "\t", "\u{a0}", "\u{1c}", ".", "!!", "\u{3000}", "-", "É",
            "'ſ",
        ];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut texts = Vec::new();
        for _ in 0..400 {
            let mut t = String::new();
            for _ in 0..40 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                t.push_str(units[(x % units.len() as u64) as usize]);
            }
            texts.push(t);
        }
        let pieces = |s: &Splitter, t: &str| {
            let mut v = Vec::new();
            s.for_each_piece(t, |p| {
                v.push(p.to_owned());
                Ok(())
            })
            .unwrap();
            v
        };
        let mut cuts = 0;
        for (name, pattern) in OPENAI_PATTERNS
            .into_iter()
            .chain([("llama4", LLAMA4_PATTERN)])
        {
            let s = Splitter::new(pattern).unwrap();
            assert_eq!(s.kind(), name);
            for t in &texts {
                let mut end = t.len();
                loop {
                    let c = last_file_cut(&t.as_bytes()[..end], 0);
                    if c == 0 {
                        break;
                    }
                    let whole = pieces(&s, &t[..end]);
                    let mut parts = pieces(&s, &t[..c]);
                    parts.extend(pieces(&s, &t[c..end]));
                    assert_eq!(parts, whole, "{name}: {:?} cut at {c}", &t[..end]);
                    cuts += 1;
                    end = c;
                }
            }
        }
        assert!(cuts > 500, "only {cuts} cuts tried");
    }
}
