//! Pre-tokenization: cutting text into the pieces that BPE encodes one by one.
//!
//! Invariant: for a given pattern, `Splitter::for_each_piece` yields exactly the
//! matches that the pattern's leftmost-first regex search (`find_iter`, as
//! tiktoken runs it with fancy-regex) yields, in order. Text between matches is
//! dropped, as in tiktoken (the OpenAI patterns match every character).
//!
//! `Splitter::new` picks the fastest path that keeps this invariant:
//! - the three OpenAI patterns, recognised by exact string, get hand-written
//!   scanners ([`r50k`], [`cl100k`], [`o200k`]; each file argues its equivalence), and so
//!   do Kimi K2's ([`KIMI_K2_PATTERN`], on o200k's with Han runs apart), Llama 4's
//!   ([`LLAMA4_PATTERN`], on o200k's with letter classes by ASCII case) and Tekken's
//!   ([`TEKKEN_PATTERN`], on o200k's without contractions, one digit a piece).
//!   Where 64 bytes of ASCII lie ahead, each finds all their pieces at once from class
//!   masks (`ascii_window.rs`, with the rules per pattern in `*_block.rs`), and goes char by
//!   char only elsewhere;
//! - any other pattern that [`general`] can prove equivalent to a plain
//!   (non-backtracking) regex, possibly after rewriting the `\s+(?!\S)` idiom
//!   and harmless possessives, runs on regex-automata;
//! - everything else runs on fancy-regex, the reference.

mod ascii_window;
pub(crate) use ascii_window::{ascii_digits, span, EachPiece, Pieces};
#[cfg(target_arch = "x86_64")]
pub(crate) mod byte_masks;
pub mod cl100k;
mod cl100k_block;
pub(crate) mod classes;
pub mod file_cuts;
pub mod general;
pub mod o200k;
mod o200k_block;
pub mod r50k;
mod r50k_block;

use crate::error::{Error, Result};

/// The r50k_base / p50k_base / p50k_edit / gpt2 pattern (tiktoken 0.14).
pub const R50K_PATTERN: &str =
    r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";

/// The cl100k_base pattern (tiktoken 0.14).
pub const CL100K_PATTERN: &str = concat!(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+",
    r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
);

/// The o200k_base pattern (tiktoken 0.14).
pub const O200K_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|",
    r"\p{N}{1,3}",
    "|",
    r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
    "|",
    r"\s*[\r\n]+",
    "|",
    r"\s+(?!\S)",
    "|",
    r"\s+"
);

/// Kimi K2's pattern (its `tokenization_kimi.py`'s `pat_str`): o200k's with Han runs apart
/// and no `/` after a punctuation run (see [`o200k`]).
pub const KIMI_K2_PATTERN: &str = concat!(
    r"[\p{Han}]+|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*",
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+",
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|",
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// Llama 4's pattern (Meta's `llama4` tokenizer's `pat_str`, and its `tokenizer.json`'s
/// `Split`; llama.cpp's `gpt-4o`): o200k's with its letter classes by ASCII case, each a
/// look-ahead for a letter and a negated ASCII range, and contractions spelt out in ASCII
/// (see [`o200k`]).
pub const LLAMA4_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|",
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|",
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// Mistral's Tekken pattern (its `tekken.json`'s, its `tokenizer.json`'s `Split`): o200k's
/// without contractions and with one `\p{N}` a piece (see [`o200k`]).
pub const TEKKEN_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|",
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// [`TEKKEN_PATTERN`] with Llama 4's letter classes (llama.cpp's `tekken`, and the GGUF
/// converters' tokenizers), on the table of those classes.
pub const TEKKEN_ASCII_CASE_PATTERN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|",
    r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|",
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// The OpenAI patterns by name, for the bindings (`_core.OPENAI_PATTERNS`) and the file-cut
/// rule ([`file_cuts`]): `r50k` is also p50k_base's and p50k_edit's.
pub const OPENAI_PATTERNS: [(&str, &str); 3] = [
    ("r50k", R50K_PATTERN),
    ("cl100k", CL100K_PATTERN),
    ("o200k", O200K_PATTERN),
];

pub enum Splitter {
    /// The general path: any pattern, run by fancy-regex (backtracking, supports look-around).
    Regex(Box<fancy_regex::Regex>),
    /// [`R50K_PATTERN`], by a hand-written scanner.
    R50k(r50k::R50k),
    /// [`CL100K_PATTERN`], by a hand-written scanner.
    Cl100k(cl100k::Cl100k),
    /// [`O200K_PATTERN`], by a hand-written scanner.
    O200k(o200k::O200k),
    /// [`KIMI_K2_PATTERN`], by o200k's scanner with Han runs apart.
    KimiK2(o200k::KimiK2),
    /// [`LLAMA4_PATTERN`], by o200k's scanner with letter classes by ASCII case.
    Llama4(o200k::Llama4),
    /// [`TEKKEN_PATTERN`] (or [`TEKKEN_ASCII_CASE_PATTERN`]), by o200k's scanner without
    /// contractions, one digit a piece.
    Tekken(o200k::Tekken),
    /// A pattern proven equivalent to a plain regex (see [`general`]).
    General(Box<general::General>),
}

impl Splitter {
    /// The fastest splitter for `pattern` (see the module docs). Errors exactly
    /// when fancy-regex rejects the pattern.
    pub fn new(pattern: &str) -> Result<Self> {
        match pattern {
            R50K_PATTERN => return Ok(Splitter::R50k(r50k::R50k::new())),
            CL100K_PATTERN => return Ok(Splitter::Cl100k(cl100k::Cl100k::new())),
            O200K_PATTERN => return Ok(Splitter::O200k(o200k::O200k::new())),
            KIMI_K2_PATTERN => return Ok(Splitter::KimiK2(o200k::KimiK2::new())),
            LLAMA4_PATTERN => return Ok(Splitter::Llama4(o200k::Llama4::new())),
            TEKKEN_PATTERN => return Ok(Splitter::Tekken(o200k::Tekken::new())),
            TEKKEN_ASCII_CASE_PATTERN => {
                let ascii_case = classes::CharClasses::ascii_case();
                return Ok(Splitter::Tekken(o200k::Tekken::with_classes(ascii_case)));
            }
            _ => {}
        }
        let reference = Self::reference(pattern)?;
        match general::General::new(pattern) {
            Some(g) => Ok(Splitter::General(Box::new(g))),
            None => Ok(reference),
        }
    }

    /// The reference: `pattern` run by fancy-regex, as tiktoken runs it.
    pub fn reference(pattern: &str) -> Result<Self> {
        let re = fancy_regex::RegexBuilder::new(pattern)
            .backtrack_limit(10_000_000)
            .build()
            .map_err(|e| Error::Pattern(pattern_error(&e)))?;
        Ok(Splitter::Regex(Box::new(re)))
    }

    /// Which path this splitter takes: `"fancy-regex"`, `"r50k"`, `"cl100k"`,
    /// `"o200k"`, `"kimi-k2"`, `"llama4"`, `"tekken"` or `"general"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Splitter::Regex(_) => "fancy-regex",
            Splitter::R50k(_) => "r50k",
            Splitter::Cl100k(_) => "cl100k",
            Splitter::O200k(_) => "o200k",
            Splitter::KimiK2(_) => "kimi-k2",
            Splitter::Llama4(_) => "llama4",
            Splitter::Tekken(_) => "tekken",
            Splitter::General(_) => "general",
        }
    }

    /// [`Splitter::for_each_piece`] into `sink`, which the three families' splitters hand the
    /// pieces of 64 bytes of ASCII at once ([`Pieces::window`]).
    #[inline]
    pub(crate) fn scan<'t>(&self, text: &'t str, sink: &mut impl Pieces<'t>) -> Result<()> {
        match self {
            Splitter::R50k(s) => s.scan(text, sink),
            Splitter::Cl100k(s) => s.scan(text, sink),
            Splitter::O200k(s) => s.scan(text, sink),
            Splitter::KimiK2(s) => kimi_k2_scan(s, text, sink),
            Splitter::Llama4(s) => llama4_scan(s, text, sink),
            Splitter::Tekken(s) => tekken_scan(s, text, sink),
            Splitter::General(_) | Splitter::Regex(_) => {
                self.for_each_piece(text, |p| sink.piece(p))
            }
        }
    }

    /// Calls `f` with each piece of `text`, in order: each non-empty match. A pattern that can
    /// match the empty string (`a*`) has empty matches between its others; they have no bytes
    /// and so no tokens, and are skipped here (tiktoken panics on one). Only the general path
    /// and fancy-regex can yield them: the three families' patterns never match empty.
    #[inline]
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str) -> Result<()>,
    ) -> Result<()> {
        match self {
            Splitter::R50k(s) => s.for_each_piece(text, f),
            Splitter::Cl100k(s) => s.for_each_piece(text, f),
            Splitter::O200k(s) => s.for_each_piece(text, f),
            Splitter::KimiK2(s) => kimi_k2_scan(s, text, &mut EachPiece(f)),
            Splitter::Llama4(s) => llama4_scan(s, text, &mut EachPiece(f)),
            Splitter::Tekken(s) => tekken_scan(s, text, &mut EachPiece(f)),
            Splitter::General(g) => g.for_each_piece(text, f),
            Splitter::Regex(re) => {
                // One search may scan to the end of the text, which the backtrack limit
                // does not count (it counts the VM's steps, not its delegates'): the budget
                // turns a quadratic split into an error, and Ctrl-C is noticed meanwhile.
                let mut budget = crate::runtime::interrupt::PatternBudget::new(text.len(), 64);
                for m in re.find_iter(text) {
                    budget.spend()?;
                    let m = m.map_err(|e| Error::Regex(e.to_string()))?;
                    if !m.as_str().is_empty() {
                        f(m.as_str())?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// fancy-regex's message for a pattern it cannot compile, with what is wrong and where:
/// alone it says only "error parsing pattern 0" when the regex engine inside refuses it.
fn pattern_error(e: &fancy_regex::Error) -> String {
    let syntax = match e {
        fancy_regex::Error::CompileError(c) => match c.as_ref() {
            fancy_regex::CompileError::InnerError(b) => b.syntax_error(),
            _ => None,
        },
        _ => None,
    };
    let (kind, span, pattern) = match syntax {
        Some(regex_syntax::Error::Parse(p)) => (p.kind().to_string(), p.span(), p.pattern()),
        Some(regex_syntax::Error::Translate(t)) => (t.kind().to_string(), t.span(), t.pattern()),
        _ => return e.to_string(),
    };
    let at = pattern
        .get(span.start.offset..span.end.offset)
        .unwrap_or("");
    format!("{e}: {kind} at `{at}`")
}

/// Kimi K2's scan, out of line and marked cold: inlined into [`Splitter::scan`] beside the
/// others, its copy of o200k's scanner changed how the compiler laid out the callers' loops
/// (callgrind: Tekken's encode +0.7% instructions). It is one call a text.
#[cold]
#[inline(never)]
fn kimi_k2_scan<'t>(s: &o200k::KimiK2, text: &'t str, sink: &mut impl Pieces<'t>) -> Result<()> {
    s.scan(text, sink)
}

/// Llama 4's scan, out of line and cold for the reason [`kimi_k2_scan`] is.
#[cold]
#[inline(never)]
fn llama4_scan<'t>(s: &o200k::Llama4, text: &'t str, sink: &mut impl Pieces<'t>) -> Result<()> {
    s.scan(text, sink)
}

/// Tekken's scan on the tiktoken face, out of line and cold for the reason [`kimi_k2_scan`]
/// is (the `tokenizer.json` pipeline runs it from its own splitter).
#[cold]
#[inline(never)]
fn tekken_scan<'t>(s: &o200k::Tekken, text: &'t str, sink: &mut impl Pieces<'t>) -> Result<()> {
    s.scan(text, sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(s: &Splitter, text: &str) -> Vec<String> {
        let mut v = Vec::new();
        s.for_each_piece(text, |p| {
            v.push(p.to_string());
            Ok(())
        })
        .unwrap();
        v
    }

    /// A variant of o200k's pattern on its scanner (`kind`) against the pattern on the
    /// reference engine, on `rounds` random texts of 1-60 chars of `alphabet`; then on each of
    /// `apart`, texts whose pieces are `want` where o200k's differ.
    fn o200k_variant_equals_its_pattern(
        pattern: &str,
        kind: &str,
        alphabet: &str,
        (seed, rounds): (u64, usize),
        apart: &[(&str, &[&str])],
    ) {
        let alphabet: Vec<char> = alphabet.chars().collect();
        let fast = Splitter::new(pattern).unwrap();
        assert_eq!(fast.kind(), kind);
        let reference = Splitter::reference(pattern).unwrap();
        let mut rng = crate::test_rng::Rng(seed);
        for round in 0..rounds {
            let text: String = (0..1 + round % 60).map(|_| *rng.pick(&alphabet)).collect();
            assert_eq!(pieces(&fast, &text), pieces(&reference, &text), "{text:?}");
        }
        let o200k = Splitter::new(O200K_PATTERN).unwrap();
        for &(t, want) in apart {
            assert_eq!(pieces(&fast, t), want, "{t:?}");
            assert_ne!(pieces(&o200k, t), want, "{t:?}");
        }
    }

    /// Tekken's splitter, in both spellings, on random texts of letters of each case (and
    /// non-ASCII ones, where the spellings part), marks, digits, apostrophes, punctuation, `/`
    /// and newlines. Apart from o200k: one digit a piece, no contractions; with the ASCII
    /// case classes, a non-ASCII upper-case letter goes on in a lower-case run.
    #[test]
    fn tekken_equals_its_pattern_in_both_spellings() {
        let alphabet = "aZs1 '\n\r\t./!\u{c9}\u{e9}e\u{301}\u{1c5}\u{2b0}\u{4e2d}²٣\u{a0}";
        o200k_variant_equals_its_pattern(
            TEKKEN_PATTERN,
            "tekken",
            alphabet,
            (0x7E44_E2B1_0C4F_9A65, 6000),
            &[("123", &["1", "2", "3"]), ("it's", &["it", "'s"])],
        );
        o200k_variant_equals_its_pattern(
            TEKKEN_ASCII_CASE_PATTERN,
            "tekken",
            alphabet,
            (0x51C3_0F6B_9E27_D4A8, 6000),
            &[("a\u{c9}b", &["a\u{c9}b"]), ("12", &["1", "2"])],
        );
    }

    /// Kimi K2's splitter, on random texts of Han chars (letters, the numerals 〇 and 〡,
    /// radicals, which are symbols, the iteration mark 々, one beyond the BMP) beside kana,
    /// Hangul, Latin letters and marks, digits, apostrophes, punctuation, `/` and newlines.
    /// Apart from o200k: Han runs apart, where o200k's letter runs take them; no `/` after
    /// punctuation.
    #[test]
    fn kimi_k2_equals_its_pattern_on_texts_with_han() {
        o200k_variant_equals_its_pattern(
            KIMI_K2_PATTERN,
            "kimi-k2",
            "aZs1 '\n\r\t./!中文〇々\u{2e80}\u{2f00}\u{3021}\u{20000}あア한é\u{301}²٣\u{a0}",
            (0xD1B5_4A32_D192_ED03, 6000),
            &[
                ("a中文b", &["a", "中文", "b"]),
                (" 中x", &[" ", "中", "x"]),
                ("!\n/x", &["!\n", "/x"]),
            ],
        );
    }

    /// Llama 4's splitter, on random texts of letters of every case kind (ASCII and not:
    /// upper, lower, title, modifier, other), marks, `ſ`, apostrophes, digits, punctuation,
    /// `/`, spaces and newlines. Apart from o200k: a non-ASCII lower-case letter continues an
    /// upper-case run, marks are punctuation, and `'ſ` is no contraction.
    #[test]
    fn llama4_equals_its_pattern() {
        o200k_variant_equals_its_pattern(
            LLAMA4_PATTERN,
            "llama4",
            "aZsStTlLdD1 '\n\r\t./!ÉéΣσǅʰ中あſ\u{301}\u{94d}²٣\u{a0}\u{10400}\u{10428}",
            (0x6C6C_616D_6134_0001, 8000),
            &[
                ("aÉb", &["aÉb"]),
                ("e\u{301}x", &["e", "\u{301}x"]),
                ("x'ſ", &["x", "'ſ"]),
            ],
        );
    }

    /// The message says what is wrong, not only fancy-regex's "error parsing pattern 0".
    #[test]
    fn a_bad_pattern_says_what_is_wrong() {
        for (pattern, says) in [
            (r"\p{Foo}", "Unicode property not found at `\\p{"),
            ("(a", "Opening parenthesis without closing"),
            ("[z-a]", "invalid character class range"),
        ] {
            match Splitter::new(pattern) {
                Err(Error::Pattern(m)) => assert!(m.contains(says), "{pattern}: {m}"),
                Err(e) => panic!("{pattern}: {e}"),
                Ok(_) => panic!("{pattern} compiled"),
            }
        }
    }

    #[test]
    fn openai_patterns_take_the_scanners() {
        assert_eq!(Splitter::new(R50K_PATTERN).unwrap().kind(), "r50k");
        assert_eq!(Splitter::new(CL100K_PATTERN).unwrap().kind(), "cl100k");
        assert_eq!(Splitter::new(O200K_PATTERN).unwrap().kind(), "o200k");
    }

    /// A pattern that can match the empty string: its empty matches have no tokens, so they
    /// are not pieces (BPE assumes at least one byte), on the general path or fancy-regex's.
    #[test]
    fn empty_matches_are_not_pieces() {
        for (pattern, kind) in [(r"a*", "general"), (r"a*|(?=b)", "fancy-regex")] {
            let s = Splitter::new(pattern).unwrap();
            assert_eq!(s.kind(), kind);
            assert_eq!(pieces(&s, "aab ba"), ["aa", "a"], "{pattern}");
            assert!(pieces(&s, "").is_empty() && pieces(&s, "bcd").is_empty());
        }
    }

    #[test]
    fn bad_pattern_is_an_error() {
        assert!(matches!(Splitter::new("(a"), Err(Error::Pattern(_))));
    }

    #[test]
    fn handpicked_cases_agree_with_reference() {
        let cases = [
            "",
            "Hello world",
            "I'm here, isn't it? We'LL see 'S ſ'ſ 'ſ x'ſ",
            "  leading and trailing  ",
            "a\r\nb\rc\n\nd \n e\t\tf   \n",
            "123 4567 89012345 ١٢٣٤",
            "HTTPServer XMLHttpRequest camelCase DŽungla ǅungla",
            "e\u{301}\u{301} \u{301}x \u{301}\u{301} ʰʰA ʰa Aʰ Aʰ's",
            "tab\there\u{a0}nbsp\u{2009}thin\u{3000}ideo\u{85}nel",
            "path/to/file.rs\n//comment\n!!\n/\n",
            "   ",
            "x  ",
            "😀😀 😀 a😀",
            "''s ' 's",
            "ÀB'S ÀB'sx",
        ];
        for p in [R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN, LLAMA4_PATTERN] {
            let fast = Splitter::new(p).unwrap();
            let slow = Splitter::reference(p).unwrap();
            for c in cases {
                assert_eq!(
                    pieces(&fast, c),
                    pieces(&slow, c),
                    "{} on {c:?}",
                    fast.kind()
                );
            }
        }
    }
}
