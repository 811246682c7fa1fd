//! Differential fuzzing of the splitters against fancy-regex.
//!
//! Input: the first byte picks how the rest becomes text (raw UTF-8, lossy;
//! or each byte picks a fragment from a list of the patterns' edge cases).
//! Every splitter `Splitter::new` picks for the three OpenAI patterns (and for Kimi K2's), the
//! general path for them, and the general path for a few other patterns (each
//! both with its DFA and with the meta regex alone) must yield exactly the
//! reference's pieces. Run: `cargo +nightly fuzz run splitters`
//! from `rust/`.
#![no_main]

use std::sync::OnceLock;

use ferrotok::internals::{General, Splitter, KIMI_K2_PATTERN};
use ferrotok::{CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN};
use libfuzzer_sys::fuzz_target;

const OTHER: &[&str] = &[
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    // Kimi K2's, which `Splitter::new` runs on o200k's scanner with Han runs apart.
    KIMI_K2_PATTERN,
    r"x*|\s+(?!\S)|\s",
    r"[a-z]++[A-Z]|\d+|\s+(?!\S)|\s+",
];

const FRAGMENTS: &[&str] = &[
    "'", "'s", "'S", "'t", "'ll", "'LL", "'re", "'ve", "'VE", "'d", "'m", "’", "ſ", "'ſ", " ",
    "  ", "\t", "\n", "\r\n", "\r", "\u{a0}", "\u{2009}", "\u{3000}", "\u{85}", "\u{2028}",
    "\u{b}", "\u{c}", "a", "the", "Hello", "HTTP", "Server", "ǅ", "ʰ", "中", "〇", "\u{2e80}", "ß",
    "Ä", "é", "Ω", "ﬁ", "\u{301}", "\u{308}", "\u{20dd}", "ि", "\u{200d}", "\u{fe0f}", "0", "12",
    "123", "4567", "٣", "²", "Ⅻ", "!", ".", "/", "//", "-", "_", "(", "\"", "€", "😀", "\u{0}",
    "\u{7f}", "\u{fffd}", "A", "b", "Z", "z", "K", "\u{212a}",
];

type Case = (String, Splitter, fancy_regex::Regex);

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let mut v = Vec::new();
        for p in [R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN].iter().chain(OTHER) {
            let reference = || {
                fancy_regex::RegexBuilder::new(p)
                    .backtrack_limit(10_000_000)
                    .build()
                    .unwrap()
            };
            let fast = Splitter::new(p).unwrap();
            v.push((format!("{}:{p}", fast.kind()), fast, reference()));
            if let Some(g) = General::new(p) {
                v.push((format!("general:{p}"), Splitter::General(Box::new(g)), reference()));
            }
            // The general path with the meta regex alone, as where its DFA cannot be built.
            if let Some(g) = General::new(p).map(General::without_dfa) {
                v.push((format!("general-meta:{p}"), Splitter::General(Box::new(g)), reference()));
            }
        }
        v
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text: String = if mode & 1 == 0 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        rest.iter()
            .map(|&b| FRAGMENTS[b as usize % FRAGMENTS.len()])
            .collect()
    };
    for (name, s, re) in cases() {
        // The splitters yield the non-empty matches (an empty one has no tokens).
        let want: Result<Vec<(usize, usize)>, _> = re
            .find_iter(&text)
            .map(|m| m.map(|m| (m.start(), m.end())))
            .filter(|m| !matches!(m, Ok((a, b)) if a == b))
            .collect();
        let Ok(want) = want else {
            continue; // the reference gave up (backtrack limit): nothing to compare
        };
        let base = text.as_ptr() as usize;
        let mut got = Vec::new();
        s.for_each_piece(&text, |p| {
            let a = p.as_ptr() as usize - base;
            got.push((a, a + p.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, want, "{name} on {text:?}");
    }
});
