//! The regex splitters of `Split` pre-tokenizers: ferrotok's own scanners where a pattern is
//! provably one of theirs up to a stated difference, else `Splitter::new`'s choice.
//!
//! Invariant: `PieceSplitter::for_each_piece` yields exactly the matches the pattern's
//! leftmost-first search yields (as `Splitter::for_each_piece` promises for its patterns).
//!
//! Llama 3's pattern is cl100k_base's but for one alternative: cl100k has `\s++$` first
//! among its whitespace alternatives, Llama 3 has not. They differ only on the whitespace
//! run that ends the text (pieces before it are the same: every alternative but the
//! whitespace ones needs a non-space char). On that run cl100k takes it whole; Llama 3 takes
//! it up to and including its last `\r`/`\n` (`\s*[\r\n]+`; `\s*[\r\n]` of cl100k is the
//! same), then the rest (`\s+(?!\S)` at the end of the text). So cl100k's scanner, with its
//! last piece cut after the last newline when whitespace follows that newline, is Llama 3's.
//! (`\s+(?!\S)|\s+` against cl100k's `\s+(?!\S)|\s`, and the possessives, give the same
//! matches: see `pretok/general.rs`.) Some files write Llama 3's pattern with `\s*[\r\n]` for
//! `\s*[\r\n]+`: the same matches, since `\s*` gives back the run only as far as its last
//! `\r`/`\n`, after which no `\r`/`\n` follows for `+` to take.
//!
//! Qwen2's pattern is Llama 3's with `\p{N}` for `\p{N}{1,3}`. No other alternative of
//! either consumes a `\p{N}` char (the optional first char of the letters alternative
//! excludes them, the others are letters, punctuation or whitespace), so a `\p{N}` char
//! only ever starts a numbers piece, which is 1-3 of them in Llama 3 and one in Qwen2:
//! Llama 3's pieces with each numbers piece cut into its chars are Qwen2's.
//!
//! Qwen3.5's pattern is Qwen2's with `[\p{L}\p{M}]` for the letters of its letters alternative
//! and `[^\s\p{L}\p{M}\p{N}]` for its punctuation, its optional first char
//! `[^\r\n\p{L}\p{N}]` unchanged. Read with L' = `[\p{L}\p{M}]` for `\p{L}`, that first char
//! loses the marks, and nothing else changes: a mark m that the pattern takes as the first
//! char needs an L' char after it, and then L' gives the same piece (m and the L' run after
//! it, as a run of L' from m); a mark with no L' char after it is, in the pattern, the letters
//! alternative's run by itself (the first char given back), as in L'. So Qwen2's pieces read
//! with L' (cl100k's scanner on [`CharClasses::marks_as_letters`]) are Qwen3.5's.
//!
//! Mistral's Tekken pattern is o200k_base's without the contraction that ends o200k's two
//! letter alternatives, and with `\p{N}` for `\p{N}{1,3}`: it runs on o200k's scanner with
//! those two rules switched (`pretok/o200k.rs` argues both). (Kimi K2's pattern, o200k's with
//! Han runs apart, and Llama 4's, o200k's with letter classes by ASCII case, are
//! `Splitter::new`'s own.) Tekken's pattern is also written with Llama 4's letter classes, a
//! look-ahead for a letter and a negated ASCII range each (llama.cpp's `tekken`, and the
//! tokenizers that GGUF converters such as mistral.rs's build from it): the same scanner on
//! the table of those classes (`CharClasses::ascii_case`; Tekken has no contraction, so
//! Llama 4's other difference, `ſ`, does not arise).
//!
//! cl100k_base's own pattern copied into a `Split` (as transformers' `TikTokenConverter` writes
//! it) is read by Oniguruma with `\p{N}{1,3}+` as `(?:\p{N}{1,3})+`, which takes a whole run
//! of `\p{N}` chars; its other possessives mean what they mean to fancy-regex, and `\s++$`
//! cannot match before a `\n` (the run would hold it), so `$` is the end of the text there as
//! in cl100k. As for Qwen2, a `\p{N}` char only ever starts a numbers piece, so a run of them
//! is one piece here where cl100k cuts it every three chars: cl100k's pieces with adjacent
//! numbers pieces joined are that reading's (`PieceSplitter::DigitRuns`).

use crate::encode::pretok::cl100k::Cl100k;
use crate::encode::pretok::classes::{CharClasses, N};
use crate::encode::pretok::o200k::Tekken;
use crate::encode::pretok::{
    ascii_digits, EachPiece, Pieces, Splitter, CL100K_PATTERN, R50K_PATTERN,
};
use crate::error::Result;
use crate::pipeline::pre_tokenizers::onig_to_fancy;
use std::sync::OnceLock;

pub const LLAMA3_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// [`LLAMA3_PATTERN`] with `\s*[\r\n]` for `\s*[\r\n]+` (see the module docs).
pub const LLAMA3_PATTERN_ONE_NEWLINE: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"
);

pub const QWEN2_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

pub const QWEN35_PATTERN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|",
    r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

/// Tekken's pattern, and that pattern with Llama 4's letter classes: `Splitter::new`
/// recognises them too, so an `Encoding` made with either runs Tekken's scanner.
pub use crate::encode::pretok::{TEKKEN_ASCII_CASE_PATTERN, TEKKEN_PATTERN};

/// The `Split` regexes ferrotok's `Encoding.to_hf` writes for OpenAI's patterns
/// (`ferrotok.hf.regex.to_oniguruma` of each: possessives as atomic groups, `$` as `\z`), with
/// the pattern each stands for. `to_oniguruma` promises that Oniguruma splits a text with the
/// written regex as fancy-regex splits it with the pattern, so a `tokenizer.json` ferrotok
/// wrote runs on the pattern's own scanner (o200k's pattern has no possessive and is written
/// as it is). `test_hf_export.py` loads each encoding's export and checks that it runs on the
/// scanner, which holds only while these are the strings `to_oniguruma` writes.
pub const OPENAI_EXPORTS: [(&str, &str); 2] = [
    (
        concat!(
            r"'(?:[sdmt]|ll|ve|re)| ?(?>\p{L}+)| ?(?>\p{N}+)| ?(?>[^\s\p{L}\p{N}]+)|",
            r"(?>\s+)\z|\s+(?!\S)|\s"
        ),
        R50K_PATTERN,
    ),
    (
        concat!(
            r"'(?i:[sdmt]|ll|ve|re)|(?>[^\r\n\p{L}\p{N}]?)(?>\p{L}+)|(?>\p{N}{1,3})|",
            r" ?(?>[^\s\p{L}\p{N}]+)(?>[\r\n]*)|(?>\s+)\z|\s*[\r\n]|\s+(?!\S)|\s"
        ),
        CL100K_PATTERN,
    ),
];

pub enum PieceSplitter {
    Plain(Splitter),
    /// Llama 3's pattern, run by cl100k's scanner (see the module docs).
    Llama3(Splitter),
    /// Qwen2's pattern: Llama 3's pieces, numbers one char a piece (see the module docs).
    Qwen2(Splitter),
    /// Qwen3.5's pattern: Qwen2's, marks read as letters (see the module docs).
    Qwen35(Splitter),
    /// Tekken's pattern, by o200k's scanner without contractions, one digit a piece (in
    /// either of its spellings, each on its own table of classes).
    Tekken(Tekken),
    /// cl100k's pattern as Oniguruma reads it: cl100k's pieces, each run of numbers pieces
    /// one piece (see the module docs).
    DigitRuns(Splitter),
}

/// The pattern [`PieceSplitter::DigitRuns`] stands for: cl100k's as Oniguruma reads it,
/// in fancy-regex's syntax.
fn cl100k_as_oniguruma_reads_it() -> &'static str {
    static READING: OnceLock<String> = OnceLock::new();
    READING.get_or_init(|| onig_to_fancy(CL100K_PATTERN))
}

impl PieceSplitter {
    pub fn new(pattern: &str) -> Result<PieceSplitter> {
        if pattern == LLAMA3_PATTERN || pattern == LLAMA3_PATTERN_ONE_NEWLINE {
            return Ok(PieceSplitter::Llama3(Splitter::new(CL100K_PATTERN)?));
        }
        if pattern == QWEN2_PATTERN {
            return Ok(PieceSplitter::Qwen2(Splitter::new(CL100K_PATTERN)?));
        }
        if pattern == QWEN35_PATTERN {
            let marks_as_letters = Cl100k::with_classes(CharClasses::marks_as_letters());
            return Ok(PieceSplitter::Qwen35(Splitter::Cl100k(marks_as_letters)));
        }
        if pattern == TEKKEN_PATTERN {
            return Ok(PieceSplitter::Tekken(Tekken::new()));
        }
        if pattern == TEKKEN_ASCII_CASE_PATTERN {
            let ascii_case = Tekken::with_classes(CharClasses::ascii_case());
            return Ok(PieceSplitter::Tekken(ascii_case));
        }
        if pattern == cl100k_as_oniguruma_reads_it() {
            return Ok(PieceSplitter::DigitRuns(Splitter::new(CL100K_PATTERN)?));
        }
        Ok(PieceSplitter::Plain(Splitter::new(pattern)?))
    }

    /// Builds the general path's DFA, if the pattern runs there (see `Encoder::build_tables`).
    pub fn build_tables(&self) {
        if let PieceSplitter::Plain(Splitter::General(g)) = self {
            g.has_dfa();
        }
    }

    /// For a pattern on the general path, whether its DFA is built (`None` elsewhere).
    pub fn dfa_tried(&self) -> Option<bool> {
        match self {
            PieceSplitter::Plain(Splitter::General(g)) => Some(g.dfa_tried()),
            _ => None,
        }
    }

    /// Which path splits: the `Splitter` kind, or `"llama3"`, `"qwen2"`, `"qwen3.5"`,
    /// `"tekken"`, `"cl100k-digit-runs"`.
    pub fn kind(&self) -> &'static str {
        match self {
            PieceSplitter::Plain(s) => s.kind(),
            PieceSplitter::Llama3(_) => "llama3",
            PieceSplitter::Qwen2(_) => "qwen2",
            PieceSplitter::Qwen35(_) => "qwen3.5",
            PieceSplitter::Tekken(_) => "tekken",
            PieceSplitter::DigitRuns(_) => "cl100k-digit-runs",
        }
    }

    /// Whether the pieces cover the text, with no gap between them: true for the scanners'
    /// patterns (each has an alternative for every char: letters, numbers, any other
    /// non-space, whitespace), so a caller need not look for text between pieces.
    #[inline]
    pub fn covers_text(&self) -> bool {
        !matches!(
            self,
            PieceSplitter::Plain(Splitter::Regex(_) | Splitter::General(_))
        )
    }

    #[inline]
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        f: impl FnMut(&'t str) -> Result<()>,
    ) -> Result<()> {
        match self {
            PieceSplitter::Plain(s) => s.for_each_piece(text, f),
            PieceSplitter::Tekken(s) => s.for_each_piece(text, f),
            // `scan`'s sinks (`LastPieceCut`, `NumbersApart`) make them Llama 3's and Qwen2's
            // (and Qwen3.5's).
            PieceSplitter::Llama3(_) | PieceSplitter::Qwen2(_) | PieceSplitter::Qwen35(_) => {
                self.scan(text, &mut EachPiece(f))
            }
            PieceSplitter::DigitRuns(s) => digit_runs(s, text, f),
        }
    }

    /// [`PieceSplitter::for_each_piece`] into `sink`, which the OpenAI scanners hand the
    /// pieces of 64 bytes of ASCII at once (see [`Pieces`]).
    #[inline]
    pub(crate) fn scan<'t>(&self, text: &'t str, sink: &mut impl Pieces<'t>) -> Result<()> {
        match self {
            PieceSplitter::Plain(s) => s.scan(text, sink),
            PieceSplitter::Llama3(s) if !ends_in_space(text) => s.scan(text, sink),
            PieceSplitter::Llama3(s) => s.scan(text, &mut LastPieceCut::new(text, sink)),
            PieceSplitter::Tekken(s) => s.scan(text, sink),
            PieceSplitter::Qwen2(s) | PieceSplitter::Qwen35(s) => {
                // `N` is the same in both tables.
                let mut numbers = NumbersApart {
                    t: CharClasses::get(),
                    sink,
                };
                if ends_in_space(text) {
                    s.scan(text, &mut LastPieceCut::new(text, &mut numbers))
                } else {
                    s.scan(text, &mut numbers)
                }
            }
            PieceSplitter::DigitRuns(s) => digit_runs(s, text, |p| sink.piece(p)),
        }
    }
}

/// Llama 3's pieces from cl100k's scanner for a text that ends in whitespace other than a
/// newline (see [`ends_in_space`]): cl100k's pieces, the last one cut by
/// [`llama3_last_piece`]. A window's pieces go on as they are, so such a text keeps the
/// scanner's 64-byte path (a text cut at special tokens, a chat turn's, may end in one).
struct LastPieceCut<'s, S> {
    /// Where the text ends, as an address: the last piece is the one that ends there.
    end: usize,
    sink: &'s mut S,
}

impl<'s, S> LastPieceCut<'s, S> {
    fn new(text: &str, sink: &'s mut S) -> Self {
        LastPieceCut {
            end: text.as_ptr() as usize + text.len(),
            sink,
        }
    }
}

impl<'t, S: Pieces<'t>> Pieces<'t> for LastPieceCut<'_, S> {
    #[inline(always)]
    fn piece(&mut self, p: &'t str) -> Result<()> {
        if p.as_ptr() as usize + p.len() == self.end {
            return llama3_last_piece(p, &mut |q| self.sink.piece(q));
        }
        self.sink.piece(p)
    }

    /// A window's pieces go on as they are: each of its ends is where a piece the window saw
    /// starts (the blocks' `starts`), so none is the end of the text.
    #[inline(always)]
    fn window(&mut self, text: &'t str, i: usize, ends: u64) -> Result<usize> {
        self.sink.window(text, i, ends)
    }
}

/// Qwen2's pieces from Llama 3's ([`PieceSplitter::Qwen2`]): each char of a number its own
/// piece.
struct NumbersApart<'s, S> {
    t: &'static CharClasses,
    sink: &'s mut S,
}

impl<'t, S: Pieces<'t>> Pieces<'t> for NumbersApart<'_, S> {
    #[inline(always)]
    fn piece(&mut self, p: &'t str) -> Result<()> {
        if self.t.at(p.as_bytes(), 0).0 & N != 0 {
            return each_char(p, &mut |c| self.sink.piece(c));
        }
        self.sink.piece(p)
    }

    /// A window's pieces are ASCII, and `\p{N}` in ASCII is `0-9`. cl100k's pattern puts a
    /// digit in no piece but a number (`\p{N}{1,3}`), so cutting after each digit up to the
    /// window's last end cuts exactly its numbers into chars.
    #[inline(always)]
    fn window(&mut self, text: &'t str, i: usize, ends: u64) -> Result<usize> {
        // Bits up to the last end (`ends` is not empty: a window ends at least one piece).
        let upto = u64::MAX.checked_shr(ends.leading_zeros()).unwrap_or(0);
        let digits = match text.as_bytes().get(i..).and_then(|r| r.first_chunk()) {
            Some(w) => ascii_digits(w),
            // The rest of a text, under 64 bytes (`drive_windows`): its bytes up to the last
            // end, which are the window's pieces, so ASCII.
            None => rest_digits(&text.as_bytes()[i..], upto),
        };
        self.sink.window(text, i, ends | (digits << 1) & upto)
    }
}

/// Bit `q` set iff `rest[q]` is an ASCII digit, for the bits of `upto` (below `rest.len()`).
#[inline(never)]
fn rest_digits(rest: &[u8], upto: u64) -> u64 {
    let n = (64 - upto.leading_zeros() as usize).min(rest.len());
    rest[..n]
        .iter()
        .enumerate()
        .fold(0, |m, (q, b)| m | u64::from(b.is_ascii_digit()) << q)
}

/// [`PieceSplitter::DigitRuns`]'s pieces of `text`: cl100k's scanner's, a numbers piece held
/// back until the piece after it shows whether the run goes on.
fn digit_runs<'t>(
    s: &Splitter,
    text: &'t str,
    mut f: impl FnMut(&'t str) -> Result<()>,
) -> Result<()> {
    // `\p{N}` as the scanners' tables have it (regex-syntax's Unicode tables).
    let t = CharClasses::get();
    let base = text.as_ptr() as usize;
    // The run of numbers pieces not yet handed on, as a byte range of `text`.
    let mut run: Option<(usize, usize)> = None;
    s.for_each_piece(text, |p| {
        let start = p.as_ptr() as usize - base;
        if t.at(p.as_bytes(), 0).0 & N != 0 {
            if let Some((_, end)) = run.as_mut().filter(|(_, end)| *end == start) {
                *end = start + p.len();
                return Ok(());
            }
            if let Some((a, b)) = run.replace((start, start + p.len())) {
                f(&text[a..b])?;
            }
            return Ok(());
        }
        if let Some((a, b)) = run.take() {
            f(&text[a..b])?;
        }
        f(p)
    })?;
    match run {
        Some((a, b)) => f(&text[a..b]),
        None => Ok(()),
    }
}

/// Calls `f` with each char of `p`.
#[inline(never)]
fn each_char<'t>(p: &'t str, f: &mut impl FnMut(&'t str) -> Result<()>) -> Result<()> {
    for (i, c) in p.char_indices() {
        f(&p[i..i + c.len_utf8()])?;
    }
    Ok(())
}

/// Whether `text` ends in whitespace other than a newline: only such a text can end in a
/// whitespace run that Llama 3 cuts after its last newline (see the module docs); any other
/// text's pieces are cl100k's, with no look at each piece.
#[inline]
fn ends_in_space(text: &str) -> bool {
    let last = text.chars().next_back();
    last.is_some_and(|c| c.is_whitespace() && c != '\r' && c != '\n')
}

/// The last piece `p` of a text, as cl100k's scanner gives it, as Llama 3's pieces.
#[cold]
#[inline(never)]
fn llama3_last_piece<'t>(p: &'t str, f: &mut impl FnMut(&'t str) -> Result<()>) -> Result<()> {
    if p.chars().all(char::is_whitespace) {
        if let Some(k) = p.rfind(['\r', '\n']) {
            if k + 1 < p.len() {
                f(&p[..k + 1])?;
                return f(&p[k + 1..]);
            }
        }
    }
    f(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::pretok::KIMI_K2_PATTERN;
    use crate::test_rng::Rng;

    fn pieces(s: &PieceSplitter, text: &str) -> Vec<String> {
        let mut v = Vec::new();
        s.for_each_piece(text, |p| {
            v.push(p.to_string());
            Ok(())
        })
        .unwrap();
        v
    }

    #[test]
    fn llama3_equals_its_pattern_on_the_reference_engine() {
        let fast = PieceSplitter::new(LLAMA3_PATTERN).unwrap();
        assert_eq!(fast.kind(), "llama3");
        let reference = PieceSplitter::Plain(Splitter::reference(LLAMA3_PATTERN).unwrap());
        for t in [
            "hello world\n  ",
            "x\n\n \t",
            "a \n",
            "  ",
            "\n",
            "it's 2024!!\r\n  done \u{3000}\n\u{a0}",
            "tabs\t\t\n\t",
            "1234567 don't\n\n\nWE'LL",
        ] {
            assert_eq!(pieces(&fast, t), pieces(&reference, t), "{t:?}");
        }
    }

    #[test]
    fn tekken_equals_its_pattern_on_the_reference_engine() {
        tekken_form_equals_its_pattern(TEKKEN_PATTERN);
    }

    /// Tekken's pattern with Llama 4's letter classes, where they part from o200k's: a
    /// non-ASCII lower-case letter goes on from an upper-case run, a mark is punctuation.
    #[test]
    fn tekken_with_letter_classes_by_ascii_case_equals_its_pattern() {
        tekken_form_equals_its_pattern(TEKKEN_ASCII_CASE_PATTERN);
        let fast = PieceSplitter::new(TEKKEN_ASCII_CASE_PATTERN).unwrap();
        let o200k_classes = PieceSplitter::new(TEKKEN_PATTERN).unwrap();
        for (t, want) in [("aÉb", vec!["aÉb"]), ("e\u{301}x", vec!["e", "\u{301}x"])] {
            assert_eq!(pieces(&fast, t), want, "{t:?}");
            assert_ne!(pieces(&o200k_classes, t), want, "{t:?}");
        }
    }

    fn tekken_form_equals_its_pattern(pattern: &str) {
        let fast = PieceSplitter::new(pattern).unwrap();
        assert_eq!(fast.kind(), "tekken");
        let reference = PieceSplitter::Plain(Splitter::reference(pattern).unwrap());
        for t in [
            "don't DON'T x's's it'll WE'VE ſ'ſ",
            "year 2024, 1234567 and \u{661}\u{662}\u{663} \u{bd}x\u{b2}",
            "HTTPServer camelCase ABc aB a\u{301}b \u{2b0}x",
            "a/b\n/\n;\n  \t\n \n",
        ] {
            assert_eq!(pieces(&fast, t), pieces(&reference, t), "{t:?}");
        }
        // Pseudo-random texts over the chars where the rules turn, long enough for the
        // 64-byte windows of the fast path.
        let alphabet: Vec<char> = "aZsStTdmlLvVeErR'’ \n\r\t\u{b}19/.!?-_\u{301}\u{2b0}\u{1c5}ſÉé\u{661}\u{bd}中한\u{a0}\u{3000}"
            .chars()
            .collect();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for round in 0..3000 {
            let len = 1 + round % 160;
            let mut t = String::new();
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly ASCII letters, so whole windows are ASCII.
                let k = (x >> 32) as usize;
                if k % 4 != 0 {
                    t.push((b'a' + (k / 4 % 3) as u8) as char);
                    if k % 7 == 0 {
                        t.push('A');
                    }
                } else {
                    t.push(alphabet[k / 4 % alphabet.len()]);
                }
            }
            assert_eq!(pieces(&fast, &t), pieces(&reference, &t), "{t:?}");
        }
    }

    /// cl100k's pattern as Oniguruma reads it (`onig_to_fancy`), run by the reference engine,
    /// against cl100k's scanner with its numbers pieces joined: digit runs of every length
    /// beside the chars where the rules turn (`\u{661}` and `\u{bd}` are `\p{N}`), texts
    /// ending in whitespace with and without newlines.
    #[test]
    fn digit_runs_equal_cl100ks_pattern_as_oniguruma_reads_it() {
        let reading = onig_to_fancy(CL100K_PATTERN);
        assert_ne!(
            reading, CL100K_PATTERN,
            "Oniguruma reads `{{1,3}}+` otherwise"
        );
        let fast = PieceSplitter::new(&reading).unwrap();
        assert_eq!(fast.kind(), "cl100k-digit-runs");
        assert!(fast.covers_text());
        let reference = PieceSplitter::Plain(Splitter::reference(&reading).unwrap());
        assert_eq!(
            pieces(&fast, " 2021 1234567x"),
            [" ", "2021", " ", "1234567", "x"]
        );
        let alphabet: Vec<char> = "ab1234 '\n\r\t\u{a0}\u{661}\u{bd}x.!é中".chars().collect();
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..3000 {
            let text = random_text(&alphabet, 1 + round % 70, &mut rng);
            assert_eq!(pieces(&fast, &text), pieces(&reference, &text), "{text:?}");
        }
    }

    /// `len` chars of `alphabet`, drawn by `rng`.
    fn random_text(alphabet: &[char], len: usize, rng: &mut Rng) -> String {
        (0..len).map(|_| *rng.pick(alphabet)).collect()
    }

    /// The splitters that claim to cover the text do, on texts mixing every class of char.
    #[test]
    fn the_scanners_pieces_cover_the_text() {
        let alphabet: Vec<char> =
            "aZ'’ \n\r\t\u{b}19/.!?-_\u{301}\u{2b0}\u{1c5}ÉĀ\u{661}\u{bd}中한\u{a0}\u{3000}\u{85}"
                .chars()
                .collect();
        let splitters = [
            LLAMA3_PATTERN,
            QWEN2_PATTERN,
            TEKKEN_PATTERN,
            TEKKEN_ASCII_CASE_PATTERN,
            KIMI_K2_PATTERN,
            crate::encode::pretok::LLAMA4_PATTERN,
            crate::encode::pretok::R50K_PATTERN,
            CL100K_PATTERN,
            crate::encode::pretok::O200K_PATTERN,
        ]
        .map(|p| PieceSplitter::new(p).unwrap());
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..2000 {
            let text = random_text(&alphabet, 1 + round % 90, &mut rng);
            for s in &splitters {
                assert!(s.covers_text(), "{}", s.kind());
                assert_eq!(pieces(s, &text).concat(), text, "{}", s.kind());
            }
        }
        let general = PieceSplitter::new(r"\p{L}+").unwrap();
        assert!(!general.covers_text());
    }

    /// Llama 3's and Qwen2's scanners against their patterns on random texts, many ending
    /// in whitespace runs with and without newlines (where Llama 3's last piece differs
    /// from cl100k's).
    #[test]
    fn llama3_and_qwen2_equal_their_patterns_on_random_texts() {
        let alphabet: Vec<char> = "ab1 '\n\r\t\u{a0}\u{3000}\u{85}x.!é中".chars().collect();
        let cases = [LLAMA3_PATTERN, LLAMA3_PATTERN_ONE_NEWLINE, QWEN2_PATTERN].map(|p| {
            (
                PieceSplitter::new(p).unwrap(),
                PieceSplitter::Plain(Splitter::reference(p).unwrap()),
            )
        });
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..3000 {
            let text = random_text(&alphabet, 1 + round % 40, &mut rng);
            for (fast, reference) in &cases {
                assert_eq!(pieces(fast, &text), pieces(reference, &text), "{text:?}");
            }
        }
    }

    /// The pieces `scan` hands a sink, a window's at once where 64 bytes of ASCII lie ahead
    /// (or a text's ASCII rest).
    fn scanned(s: &PieceSplitter, text: &str) -> Vec<String> {
        struct Collect(Vec<String>);
        impl Pieces<'_> for Collect {
            fn piece(&mut self, p: &str) -> Result<()> {
                self.0.push(p.to_string());
                Ok(())
            }
        }
        let mut sink = Collect(Vec::new());
        s.scan(text, &mut sink).unwrap();
        sink.0
    }

    /// The nine scanned patterns' splitters, each with its pattern on the reference engine.
    fn scanners_and_references() -> [(PieceSplitter, PieceSplitter); 9] {
        [
            LLAMA3_PATTERN,
            LLAMA3_PATTERN_ONE_NEWLINE,
            QWEN2_PATTERN,
            QWEN35_PATTERN,
            TEKKEN_PATTERN,
            KIMI_K2_PATTERN,
            CL100K_PATTERN,
            crate::encode::pretok::O200K_PATTERN,
            crate::encode::pretok::R50K_PATTERN,
        ]
        .map(|p| {
            (
                PieceSplitter::new(p).unwrap(),
                PieceSplitter::Plain(Splitter::reference(p).unwrap()),
            )
        })
    }

    /// `scan` against each pattern's reference, on texts long and ASCII enough for windows,
    /// numbers among them (Qwen2 cuts a window's numbers into digits).
    #[test]
    fn scan_equals_the_patterns_on_texts_with_windows() {
        let alphabet: Vec<char> = "ab 12345 x'sY.\n\t\r!?é中".chars().collect();
        let cases = scanners_and_references();
        let mut rng = Rng(0x5851_F42D_4C95_7F2D);
        for round in 0..600 {
            // Mostly ASCII: a non-ASCII char is 2 in 16 of the alphabet, and every other
            // round has none.
            let ascii = &alphabet[..alphabet.len() - 2 * (round % 2)];
            let text = random_text(ascii, 60 + round % 200, &mut rng);
            // And the text ending in whitespace after a newline, where Llama 3's and Qwen2's
            // last piece is not cl100k's (a window may end just before it).
            for text in [
                text.clone(),
                format!("{text}\n \t"),
                format!("{text}.\n\n  "),
            ] {
                for (fast, reference) in &cases {
                    let want = pieces(reference, &text);
                    assert_eq!(scanned(fast, &text), want, "{} {text:?}", fast.kind());
                }
            }
        }
    }

    /// `scan` against each pattern's reference on texts of under 64 bytes and on what is
    /// left of longer ones after their last full window: the rest of a text goes to the
    /// blocks followed by bytes that are not the text's, whose boundaries must be the
    /// pattern's at the end of the text (a contraction cut short, a whitespace run or a
    /// number that ends it, a letter run that reaches it).
    #[test]
    fn scan_equals_the_patterns_on_short_texts() {
        let alphabet: Vec<char> = "ab's ltdmrevLLVE' 12345 \n\t\r.!?é中".chars().collect();
        let cases = scanners_and_references();
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..3000 {
            // Every third text has no non-ASCII char, so whole rests go to the blocks.
            let ascii = &alphabet[..alphabet.len() - 2 * usize::from(round % 3 == 0)];
            let text = random_text(ascii, 20 + round % 110, &mut rng);
            for (fast, reference) in &cases {
                let want = pieces(reference, &text);
                assert_eq!(scanned(fast, &text), want, "{} {text:?}", fast.kind());
                assert_eq!(pieces(fast, &text), want, "{} {text:?}", fast.kind());
            }
        }
    }

    /// Qwen3.5's scanner against its pattern on random texts of letters, marks (combining
    /// accents, Devanagari and Thai vowel signs and viramas, Arabic harakat) and what stands
    /// beside them: spaces, punctuation, digits, newlines.
    #[test]
    fn qwen35_equals_its_pattern_on_texts_with_marks() {
        let alphabet: Vec<char> =
            "aZ1 '\n\r\t.!-é\u{301}\u{323}\u{93f}\u{94d}\u{939}\u{e31}\u{e01}\u{64e}\u{628}\u{20db}\u{a0}²中"
                .chars()
                .collect();
        let fast = PieceSplitter::new(QWEN35_PATTERN).unwrap();
        assert_eq!(fast.kind(), "qwen3.5");
        let reference = PieceSplitter::Plain(Splitter::reference(QWEN35_PATTERN).unwrap());
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..4000 {
            let text = random_text(&alphabet, 1 + round % 50, &mut rng);
            assert_eq!(pieces(&fast, &text), pieces(&reference, &text), "{text:?}");
            assert_eq!(scanned(&fast, &text), pieces(&reference, &text), "{text:?}");
        }
        // Marks split Qwen2's words and punctuation runs, not Qwen3.5's.
        let qwen2 = PieceSplitter::new(QWEN2_PATTERN).unwrap();
        for (t, want) in [
            ("हिन्दी", vec!["हिन्दी"]),
            ("cafe\u{301}!\u{301}", vec!["cafe\u{301}", "!\u{301}"]),
            (" \u{301}x..", vec![" \u{301}x", ".."]),
        ] {
            assert_eq!(pieces(&fast, t), want, "{t:?}");
            assert_ne!(pieces(&qwen2, t), want, "{t:?}");
        }
    }

    #[test]
    fn qwen2_equals_its_pattern_on_the_reference_engine() {
        let fast = PieceSplitter::new(QWEN2_PATTERN).unwrap();
        assert_eq!(fast.kind(), "qwen2");
        let reference = PieceSplitter::Plain(Splitter::reference(QWEN2_PATTERN).unwrap());
        for t in [
            "year 2024, 1234567 and \u{661}\u{662}\u{663} \u{bd}x\u{b2}",
            "a1b22c333 x\n\n \t",
            "it's 42!!\r\n  done",
        ] {
            assert_eq!(pieces(&fast, t), pieces(&reference, t), "{t:?}");
        }
    }
}
