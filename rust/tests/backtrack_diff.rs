//! Differential test of the backtracking encoder against the heap (the merge-rank
//! definition) on the OpenAI vocabularies.
//!
//! - `corpus_pieces`: every piece of the first 2 MB of each shared corpus file and every
//!   adversarial file, cut by the encoding's own splitter (the whole corpus with
//!   `FERROTOK_FULL_CORPUS=1`).
//! - `synthetic_pieces`: runs that make greedy matching backtrack — repeated characters,
//!   random bytes, random concatenations of tokens, mixed scripts.
//!
//! Needs `FERROTOK_DATA_DIR` (or `shared/encodings` beside an ancestor of the crate) and the
//! corpus (`FERROTOK_CORPUS_DIR`, or `shared/corpus`).

use std::path::{Path, PathBuf};

use ferrotok::internals::{merge_heap, Backtrack, BpeVocab, Splitter};
use ferrotok::{parse_tiktoken, Rank, Vocab, CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN};

fn shared(sub: &str, var: &str, probe: &str) -> PathBuf {
    if let Ok(d) = std::env::var(var) {
        return PathBuf::from(d);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in here.ancestors() {
        let p = dir.join("shared").join(sub);
        if p.join(probe).is_file() {
            return p;
        }
    }
    panic!("shared/{sub} not found: set {var}");
}

const ENCODINGS: &[(&str, &str)] = &[
    ("r50k_base", R50K_PATTERN),
    ("p50k_base", R50K_PATTERN),
    ("cl100k_base", CL100K_PATTERN),
    ("o200k_base", O200K_PATTERN),
];

fn load(name: &str) -> BpeVocab {
    let dir = shared("encodings", "FERROTOK_DATA_DIR", "cl100k_base.tiktoken");
    let file = format!("{name}.tiktoken");
    let raw = std::fs::read(dir.join(&file)).unwrap_or_else(|e| panic!("reading {file}: {e}"));
    let ranks = parse_tiktoken(&raw, &file).unwrap();
    BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap())
}

/// Compares the two encoders on one piece; returns the number of tokens.
fn check(vocab: &BpeVocab, bt: &Backtrack, piece: &[u8], name: &str) -> usize {
    let mut want = Vec::new();
    merge_heap(vocab, piece, &mut want).unwrap();
    let mut got: Vec<Rank> = Vec::new();
    assert!(
        bt.encode(vocab, piece, &mut got),
        "{name}: backtracking gave up on {:?}",
        String::from_utf8_lossy(piece)
    );
    assert_eq!(
        got,
        want,
        "{name}: backtracking differs from the heap on {:?}",
        String::from_utf8_lossy(piece)
    );
    want.len()
}

fn corpus_texts() -> Vec<String> {
    let dir = shared("corpus", "FERROTOK_CORPUS_DIR", "english.txt");
    let full = std::env::var("FERROTOK_FULL_CORPUS").is_ok_and(|v| v == "1");
    let mut texts = Vec::new();
    for name in ["english.txt", "code.txt", "multilingual.txt"] {
        let mut t = std::fs::read_to_string(dir.join(name)).unwrap();
        if !full {
            let mut end = (2 << 20).min(t.len());
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t.truncate(end);
        }
        texts.push(t);
    }
    let mut adv: Vec<_> = std::fs::read_dir(dir.join("adversarial"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    adv.sort();
    for p in adv {
        texts.push(std::fs::read_to_string(p).unwrap());
    }
    texts
}

#[test]
fn corpus_pieces() {
    let texts = corpus_texts();
    for &(name, pattern) in ENCODINGS {
        let vocab = load(name);
        let bt = vocab
            .backtrack()
            .expect("OpenAI vocabularies merge upward in rank");
        let splitter = Splitter::new(pattern).unwrap();
        let mut pieces = 0usize;
        for text in &texts {
            splitter
                .for_each_piece(text, |p| {
                    if p.len() > 1 {
                        check(&vocab, bt, p.as_bytes(), name);
                        pieces += 1;
                    }
                    Ok(())
                })
                .unwrap();
        }
        assert!(pieces > 100_000, "{name}: only {pieces} pieces compared");
    }
}

/// xorshift64: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn synthetic_pieces() {
    let units: &[&str] = &[
        "a", "b", "ab", " ", "  ", "\n", "=", "-", "0", "1", "é", "ü", "中", "文", "日本", "한",
        "ب", "ש", "й", "क", "ไ", "🙂", "👍🏽", "e\u{301}", "ing", "the", "ation", "//", "\t", "\r\n",
        "x", "y", "z",
    ];
    for &(name, _) in ENCODINGS {
        let vocab = load(name);
        let bt = vocab.backtrack().expect("OpenAI vocabularies merge upward");
        let n_ids = vocab.n_ids() as u64;
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..3000 {
            let len = 2 + rng.below(if round % 10 == 0 { 3000 } else { 120 });
            let piece: Vec<u8> = match round % 5 {
                // One or two units repeated: long runs of the same token.
                0 => {
                    let (u, v) = (units[rng.below(units.len())], units[rng.below(units.len())]);
                    let mut s = Vec::new();
                    while s.len() < len {
                        s.extend_from_slice(if rng.below(8) == 0 { v } else { u }.as_bytes());
                    }
                    s
                }
                // Any bytes, including invalid UTF-8.
                1 => (0..len).map(|_| rng.next() as u8).collect(),
                // Random tokens laid end to end.
                2 => {
                    let mut s = Vec::new();
                    while s.len() < len {
                        let id = (rng.next() % n_ids) as Rank;
                        s.extend_from_slice(vocab.ordinary_bytes(id).unwrap_or(b"?"));
                    }
                    s
                }
                // Mixed units.
                _ => {
                    let mut s = Vec::new();
                    while s.len() < len {
                        s.extend_from_slice(units[rng.below(units.len())].as_bytes());
                    }
                    s
                }
            };
            check(&vocab, bt, &piece, name);
        }
        // Every token encodes to itself.
        for id in 0..vocab.n_ids() as Rank {
            if let Some(b) = vocab.ordinary_bytes(id) {
                if b.len() > 1 {
                    check(&vocab, bt, b, name);
                }
            }
        }
    }
}

/// The pair filter may only ever say "no merge" for a pair the pair table does not hold: a
/// wrong "no" would let `Backtrack::unwind` accept an incompatible pair. Checked on every
/// pair of every OpenAI vocabulary, with its false-positive rate on random id pairs.
#[test]
fn pair_filter_keeps_every_pair_of_each_vocabulary() {
    use ferrotok::internals::PairFilter;
    for &(name, _) in ENCODINGS {
        let vocab = load(name);
        let pairs = &vocab.pairs;
        assert_eq!(pairs.n_pairs(), pairs.pairs().count(), "{name}: pair count");
        let filter = PairFilter::new(pairs.n_pairs(), pairs.pairs());
        assert!(
            pairs.n_pairs() > 40_000,
            "{name}: {} pairs",
            pairs.n_pairs()
        );
        for (a, b) in pairs.pairs() {
            assert!(
                filter.may_merge(a, b),
                "{name}: filter drops the pair ({a}, {b})"
            );
        }
        let n = vocab.n_ids();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut others, mut passed) = (0usize, 0usize);
        for _ in 0..200_000 {
            let (a, b) = (rng.below(n) as Rank, rng.below(n) as Rank);
            if pairs.get(a, b).is_none() {
                others += 1;
                passed += filter.may_merge(a, b) as usize;
            }
        }
        assert!(
            passed * 20 < others,
            "{name}: {passed} of {others} non-pairs pass the filter"
        );
    }
}
