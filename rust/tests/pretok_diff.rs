//! Differential tests of the splitters against the reference (fancy-regex with
//! the exact pattern, as tiktoken runs it).
//!
//! - `corpus_sample`: the first part of each shared corpus file and of each
//!   adversarial file (every run; the corpus must be there).
//! - `corpus_full`: the whole corpus, when `FERROTOK_FULL_CORPUS=1` (run it in
//!   release: `FERROTOK_FULL_CORPUS=1 cargo test --release --test pretok_diff corpus_full -- --nocapture`).
//! - `random_edge_cases`: random text biased to the patterns' edge cases
//!   (`FERROTOK_RANDOM_ITERS` sets the number of strings per splitter).
//!
//! The corpus is found through `FERROTOK_CORPUS_DIR`, else by looking for
//! `shared/corpus` beside any ancestor of the crate directory.

use std::path::{Path, PathBuf};

use ferrotok::internals::{General, Splitter, KIMI_K2_PATTERN};
use ferrotok::{CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN};

/// Patterns that are not OpenAI's, for the general path (and Kimi K2's scanner); the first
/// three also run on the corpus.
const OTHER_PATTERNS: &[&str] = &[
    // GPT-2 as published (no possessives).
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    // Llama 3.
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    // Kimi K2 (o200k's scanner with Han runs apart).
    KIMI_K2_PATTERN,
    // Qwen2.
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    // Mistral's Tekken.
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    r"\w+|\s+",
    r"\p{L}++\p{N}|\s+(?!\S)|\s",
    r"[a-z]++[A-Z]|\d+|\s+(?!\S)|\s+",
    r"(?i)hello|\p{Lu}++\p{Ll}*+",
    r"a*",
    r"\b",
    r"x*|\s+(?!\S)|\s",
    r"(?m)^\s*\S",
    r"[^\s]++$|\S+",
    r"\s+(?!\S)|\s",
    // Patterns with no match at some chars, which the DFA passes over: CLIP's (nothing at
    // whitespace), HF's `Whitespace`, digits only, a match that needs the char before
    // (line start, word boundary), and a start that fails late (`a+b` on a run of `a`).
    r"'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+",
    r"\w+|[^\w\s]+",
    r"\d+",
    r"(?m)^\w+",
    r"\b\w",
    r"a+b|c",
];

/// The splitter `Splitter::new` picks, and the general path both ways (anchored searches on
/// the dense DFA, and on the meta regex alone) wherever the pattern can take it.
fn splitters_for(pattern: &str) -> Vec<(String, Splitter)> {
    let mut v = Vec::new();
    let fast = Splitter::new(pattern).unwrap();
    let kind = fast.kind();
    if kind != "general" {
        v.push((kind.to_string(), fast));
    }
    if let Some(g) = General::new(pattern).filter(General::has_dfa) {
        v.push(("general-dfa".to_string(), Splitter::General(Box::new(g))));
    }
    if let Some(g) = General::new(pattern).map(General::without_dfa) {
        v.push(("general-meta".to_string(), Splitter::General(Box::new(g))));
    }
    v
}

fn reference(pattern: &str) -> fancy_regex::Regex {
    fancy_regex::RegexBuilder::new(pattern)
        .backtrack_limit(10_000_000)
        .build()
        .unwrap()
}

/// Reference matches as (start, end) byte offsets: the non-empty ones, as the splitters
/// yield (an empty match has no tokens; see `Splitter::for_each_piece`).
fn reference_spans(re: &fancy_regex::Regex, text: &str) -> Vec<(u32, u32)> {
    re.find_iter(text)
        .map(|m| {
            let m = m.expect("reference regex failed");
            (m.start() as u32, m.end() as u32)
        })
        .filter(|(a, b)| a < b)
        .collect()
}

/// Checks `s` against the reference spans; panics with context on the first
/// difference. Returns the bytes compared.
fn check(s: &Splitter, name: &str, want: &[(u32, u32)], text: &str, label: &str) -> usize {
    let base = text.as_ptr() as usize;
    let mut k = 0usize;
    let mut bad: Option<String> = None;
    s.for_each_piece(text, |p| {
        let start = p.as_ptr() as usize - base;
        let got = (start as u32, (start + p.len()) as u32);
        if bad.is_none() && want.get(k) != Some(&got) {
            bad = Some(report(text, want, k, got));
        }
        k += 1;
        Ok(())
    })
    .unwrap();
    if bad.is_none() && k != want.len() {
        bad = Some(format!(
            "splitter yielded {k} pieces, reference {}",
            want.len()
        ));
    }
    if let Some(b) = bad {
        panic!("{name} differs from fancy-regex on {label}: {b}");
    }
    text.len()
}

fn report(text: &str, want: &[(u32, u32)], k: usize, got: (u32, u32)) -> String {
    let show = |(a, b): (u32, u32)| format!("{:?}@{a}", text.get(a as usize..b as usize));
    let ctx_from = want.get(k.saturating_sub(3)).map_or(0, |x| x.0 as usize);
    let ctx_to = want
        .get(k + 3)
        .map_or(text.len(), |x| x.1 as usize)
        .min(ctx_from + 300);
    format!(
        "piece #{k}: got {}, want {}; context {:?}",
        show(got),
        want.get(k).map_or("nothing".to_string(), |&w| show(w)),
        text.get(ctx_from..ctx_to)
    )
}

fn corpus_dir() -> PathBuf {
    if let Ok(d) = std::env::var("FERROTOK_CORPUS_DIR") {
        let p = PathBuf::from(d);
        assert!(
            p.join("english.txt").is_file(),
            "FERROTOK_CORPUS_DIR={} has no english.txt",
            p.display()
        );
        return p;
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in here.ancestors() {
        let p = dir.join("shared").join("corpus");
        if p.join("english.txt").is_file() {
            return p;
        }
    }
    panic!(
        "shared corpus not found: set FERROTOK_CORPUS_DIR or put shared/corpus beside an \
         ancestor of {}",
        here.display()
    );
}

/// (label, text) for every corpus file: the three big ones, then adversarial/*.
fn corpus_files() -> Vec<(String, String)> {
    let dir = corpus_dir();
    let mut out = Vec::new();
    for name in ["english.txt", "code.txt", "multilingual.txt"] {
        let t = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|e| panic!("reading {name}: {e}"));
        out.push((name.to_string(), t));
    }
    let adv = dir.join("adversarial");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&adv)
        .unwrap_or_else(|e| panic!("reading {}: {e}", adv.display()))
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(!names.is_empty(), "no adversarial corpus files");
    for p in names {
        let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        out.push((
            format!("adversarial/{}", p.file_name().unwrap().to_string_lossy()),
            t,
        ));
    }
    out
}

fn prefix(s: &str, max: usize) -> &str {
    let mut n = max.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

fn run_corpus(limit: Option<usize>) {
    let files = corpus_files();
    let mut total: Vec<(String, usize)> = Vec::new();
    let mut patterns: Vec<&str> = vec![R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN];
    patterns.extend(&OTHER_PATTERNS[..3]);
    for (pi, pattern) in patterns.iter().enumerate() {
        let re = reference(pattern);
        let splitters = splitters_for(pattern);
        for (label, text) in &files {
            let text = match limit {
                Some(n) => prefix(text, n),
                None => text.as_str(),
            };
            let t0 = std::time::Instant::now();
            let want = reference_spans(&re, text);
            let ref_secs = t0.elapsed().as_secs_f64();
            for (name, s) in &splitters {
                let name = format!("{name}[pattern {pi}]");
                let t0 = std::time::Instant::now();
                let n = check(s, &name, &want, text, label);
                eprintln!(
                    "{name:<22} {label:<36} {n:>10} bytes ok ({:.3}s; reference {:.3}s)",
                    t0.elapsed().as_secs_f64(),
                    ref_secs
                );
                match total.iter_mut().find(|(k, _)| *k == name) {
                    Some(e) => e.1 += n,
                    None => total.push((name, n)),
                }
            }
        }
    }
    for (name, n) in total {
        eprintln!("TOTAL {name:<22} {n:>11} bytes compared");
    }
}

#[test]
fn corpus_sample() {
    run_corpus(Some(if cfg!(debug_assertions) {
        200_000
    } else {
        4_000_000
    }));
}

#[test]
fn corpus_full() {
    if std::env::var("FERROTOK_FULL_CORPUS").as_deref() != Ok("1") {
        eprintln!("corpus_full: skipped (set FERROTOK_FULL_CORPUS=1, run with --release)");
        return;
    }
    run_corpus(None);
}

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const FRAGMENTS: &[&str] = &[
    // apostrophes and contractions
    "'",
    "'s",
    "'S",
    "'t",
    "'T",
    "'m",
    "'M",
    "'d",
    "'D",
    "'ll",
    "'LL",
    "'Ll",
    "'lL",
    "'re",
    "'RE",
    "'ve",
    "'Ve",
    "'l",
    "'r",
    "'v",
    "’",
    "’s",
    "’ll",
    "'ſ",
    "ſ",
    "'K",
    "'\u{212a}",
    "''", // whitespace
    " ",
    " ",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n",
    "\r\n",
    "\r",
    "\r\r\n",
    " \n",
    "\n ",
    "\u{a0}",
    "\u{2009}",
    "\u{3000}",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{b}",
    "\u{c}",
    "\u{1680}",
    "\u{200b}",
    "\u{feff}", // letters
    "a",
    "the",
    "word",
    "Hello",
    "HELLO",
    "HTTPServer",
    "camelCase",
    "XMLHttpRequest",
    "I",
    "A",
    "x",
    "ǅ",
    "ǅungla",
    "Dž",
    "ʰ",
    "ʰa",
    "Aʰ",
    "ˆ",
    "ー",
    "中",
    "中文",
    "〇",
    "々",
    "\u{2e80}",
    "\u{20000}",
    "ß",
    "Ä",
    "ä",
    "é",
    "Ω",
    "ω",
    "Привет",
    "мир",
    "ﬁ",
    "ǈ",
    "ᾈ",
    "ᾀ",
    "ⅰ",
    "Ⅻ",
    "ª",
    "º", // marks
    "\u{301}",
    "\u{308}",
    "\u{20dd}",
    "\u{93f}",
    "क्ष",
    "ि",
    "\u{300}\u{301}",
    "\u{200d}",
    "\u{fe0f}",
    "\u{e0100}", // digits and numbers
    "0",
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "123456",
    "1234567",
    "٣",
    "٣٤",
    "３",
    "²",
    "½",
    "𝟙",
    "߀", // punctuation and symbols
    "!",
    ".",
    ",",
    ";",
    ":",
    "?",
    "/",
    "//",
    "/\n",
    "-",
    "_",
    "(",
    ")",
    "\"",
    "#",
    "$",
    "€",
    "©",
    "+",
    "=",
    "<",
    ">",
    "@",
    "\\",
    "|",
    "~",
    "`",
    "^",
    "*",
    "&",
    "%",
    "{",
    "}",
    "[",
    "]",
    "😀",
    "👍🏽",
    "🇫🇷",
    "\u{0}",
    "\u{7f}",
    "\u{9f}",
    "\u{e000}",
    "\u{10ffff}",
    "\u{fffd}",
];

fn random_text(rng: &mut Rng) -> String {
    let mut s = String::new();
    // Every third string is long and every fifth all ASCII, so that the splitters' 64-byte
    // ASCII windows are exercised too.
    let most = if rng.below(3) == 0 { 160 } else { 24 };
    let n = 1 + rng.below(most);
    let ascii_only = rng.below(5) == 0;
    for _ in 0..n {
        if ascii_only {
            match rng.below(8) {
                0 => s.push(rng.below(0x80) as u8 as char),
                _ => loop {
                    let f = *rng.pick(FRAGMENTS);
                    if f.is_ascii() {
                        let repeats = 1 + rng.below(2) * rng.below(4);
                        for _ in 0..repeats {
                            s.push_str(f);
                        }
                        break;
                    }
                },
            }
            continue;
        }
        match rng.below(20) {
            0 => {
                // any char at all
                let c = loop {
                    let cp = match rng.below(3) {
                        0 => rng.below(0x80) as u32,
                        1 => rng.below(0x3000) as u32,
                        _ => rng.below(0x110000) as u32,
                    };
                    if let Some(c) = char::from_u32(cp) {
                        break c;
                    }
                };
                s.push(c);
            }
            1 => {
                // a run of one repeated fragment
                let f = *rng.pick(FRAGMENTS);
                for _ in 0..1 + rng.below(6) {
                    s.push_str(f);
                }
            }
            _ => {
                let frag = FRAGMENTS[rng.below(FRAGMENTS.len())];
                s.push_str(frag);
            }
        }
    }
    s
}

#[test]
fn random_edge_cases() {
    let iters: usize = std::env::var("FERROTOK_RANDOM_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) {
            3_000
        } else {
            100_000
        });
    let mut patterns: Vec<&str> = vec![R50K_PATTERN, CL100K_PATTERN, O200K_PATTERN];
    patterns.extend(OTHER_PATTERNS);
    for (pi, pattern) in patterns.iter().enumerate() {
        let re = reference(pattern);
        let splitters = splitters_for(pattern);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (pi as u64 + 1));
        let mut bytes = 0usize;
        for _ in 0..iters {
            let text = random_text(&mut rng);
            let want = reference_spans(&re, &text);
            for (name, s) in &splitters {
                bytes += check(
                    s,
                    &format!("{name}[{pattern}]"),
                    &want,
                    &text,
                    "random text",
                );
            }
        }
        eprintln!("random: pattern {pi}: {iters} strings, {bytes} bytes compared");
    }
}
