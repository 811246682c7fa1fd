//! Differential fuzzing of the whole encoder against the merge-rank definition.
//!
//! `Encoder::encode_ordinary` takes many roads to a piece's ids: the short and mid tables, the
//! per-thread piece cache, cuts of long CJK pieces (`char_cuts.rs`), the backtracking walk
//! and the heap. Each must give what tiktoken gives: for every piece the reference regex cuts
//! out, its rank if the piece is a token, else BPE by merge ranks (`merge_heap`, which the
//! unit tests check against a plain quadratic merge).
//!
//! Input: the first byte picks how the rest becomes text: raw bytes (lossy UTF-8); each byte
//! a fragment from a list of scripts and edge cases; or each two bytes a token of the
//! vocabulary, glued (lossy UTF-8), which makes the long CJK pieces that get cut and the
//! near-token pieces that make BPE work. The text is encoded twice per call and the encoders
//! live across calls, so cached pieces are checked as well as fresh ones.
//!
//! Needs the OpenAI files: `FERROTOK_DATA_DIR`, else `shared/encodings` beside an ancestor
//! of the crate. Run: `cargo +nightly fuzz run encode` from `rust/`.
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ferrotok::internals::merge_heap;
use ferrotok::{parse_tiktoken, Encoder, Rank, CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN};
use libfuzzer_sys::fuzz_target;

// Kept on a few lines: rustfmt would give each wide (CJK) string a line of its own.
#[rustfmt::skip]
const FRAGMENTS: &[&str] = &[
    "的", "是", "一", "了", "不", "人", "上下", "中国", "日本語", "です", "ます", "する", "こと",
    "テスト", "ー", "、", "。", "「", "」", "한국어", "입니다", "는", "ภาษาไทย", "ที่", "हिन्दी",
    "का", "ि", "русский", "и", "العربية", "ال", "עברית", "😀", "👍🏽", "\u{200d}", "\u{fe0f}", "怐",
    "怑", "上下不", " ", "  ", "\n", "\r\n", "\t", "a", "the", " the", "ing", "HTTP", "'s",
    "'ll", "0", "123", "4567", ".", "!", "//", "é", "ß", "\u{301}", "\u{3000}", "\u{fffd}",
];

fn data_dir() -> PathBuf {
    if let Ok(d) = std::env::var("FERROTOK_DATA_DIR") {
        return PathBuf::from(d);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|dir| dir.join("shared").join("encodings"))
        .find(|p| p.join("cl100k_base.tiktoken").is_file())
        .expect("shared/encodings not found: set FERROTOK_DATA_DIR")
}

struct Case {
    name: &'static str,
    encoder: Encoder,
    reference: fancy_regex::Regex,
    /// The ordinary tokens' bytes, by rank (for the glued-token input).
    tokens: Vec<Vec<u8>>,
}

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        let dir = data_dir();
        [
            ("o200k_base", O200K_PATTERN),
            ("cl100k_base", CL100K_PATTERN),
            ("r50k_base", R50K_PATTERN),
        ]
        .into_iter()
        .map(|(name, pattern)| {
            let file = format!("{name}.tiktoken");
            let raw = std::fs::read(dir.join(&file)).expect("reading a .tiktoken file");
            let ranks = parse_tiktoken(&raw, &file).expect("a valid .tiktoken file");
            let mut tokens = vec![Vec::new(); ranks.len()];
            for (bytes, &rank) in &ranks {
                if let Some(slot) = tokens.get_mut(rank as usize) {
                    slot.clone_from(bytes);
                }
            }
            let encoder = Encoder::new(ranks, Vec::new(), pattern).expect("an encoder");
            // Built now: the backtracking and cut tables wait until long pieces add up to
            // 128 KiB (`BACKTRACK_AFTER`), thousands of the fuzzer's short inputs. The road
            // before them (the scan and the heap) is checked on the corpus by
            // `tests/test_parity.py::test_parity_before_and_after_the_walk_is_built`.
            let _ = encoder.vocab.backtrack();
            let _ = encoder.vocab.char_cuts();
            Case {
                name,
                encoder,
                reference: fancy_regex::RegexBuilder::new(pattern)
                    .backtrack_limit(10_000_000)
                    .build()
                    .expect("the pattern compiles"),
                tokens,
            }
        })
        .collect()
    })
}

fn text_for(mode: u8, rest: &[u8], case: &Case) -> String {
    match mode % 3 {
        0 => String::from_utf8_lossy(rest).into_owned(),
        1 => rest
            .iter()
            .map(|&b| FRAGMENTS[b as usize % FRAGMENTS.len()])
            .collect(),
        _ => {
            let glued: Vec<u8> = rest
                .chunks(2)
                .flat_map(|c| {
                    let i = c.iter().fold(0usize, |acc, &b| acc << 8 | b as usize);
                    // Low ranks are the common tokens; spread the pick over the whole vocabulary.
                    let r = i.wrapping_mul(40_503) % case.tokens.len();
                    case.tokens[r].iter().copied()
                })
                .collect();
            String::from_utf8_lossy(&glued).into_owned()
        }
    }
}

fn reference_ids(case: &Case, text: &str) -> Option<Vec<Rank>> {
    let vocab = &case.encoder.vocab;
    let mut ids = Vec::new();
    for m in case.reference.find_iter(text) {
        let piece = m.ok()?.as_str().as_bytes(); // None: the reference gave up
        match vocab.rank(piece) {
            Some(r) => ids.push(r),
            None => merge_heap(vocab, piece, &mut ids).expect("every byte is a token"),
        }
    }
    Some(ids)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    for case in cases() {
        let text = text_for(mode, rest, case);
        let Some(want) = reference_ids(case, &text) else {
            continue;
        };
        for round in 0..2 {
            let got = case
                .encoder
                .encode_ordinary(&text)
                .expect("encoding succeeds");
            assert_eq!(got, want, "{} (round {round}) on {text:?}", case.name);
        }
    }
});
