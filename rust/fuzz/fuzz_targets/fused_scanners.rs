//! Differential fuzzing of the fused scanners against the generic interpreter.
//!
//! Input: the first byte picks how the rest becomes text (raw UTF-8, lossy; or each byte
//! picks a fragment from a list of the scanners' edge cases). For every fused scanner
//! (BERT's, BLOOM's, DeepSeek LLM's and V3's, Falcon's, StarCoder's), the pieces of its
//! known `pre_tokenizer` object, both ways in (`pieces`, `for_each_piece`), must be the
//! pieces the generic interpreter makes step by step. Run: `cargo +nightly fuzz run
//! fused_scanners` from `rust/`.
#![no_main]

use std::sync::OnceLock;

use ferrotok::internals::{known_sequence, PreTokenizer, FUSED_SCANNERS};
use libfuzzer_sys::fuzz_target;

const FRAGMENTS: &[&str] = &[
    "'", "'s", "'t", "'ll", "'LL", "'re", "'ve", "'d", "'m", " ", "  ", "   ", "\t", "\n",
    "\r\n", "\r", "\u{a0}", "\u{3000}", "\u{85}", "\u{2028}", "\u{b}", "\u{c}", "\u{1c}", "a",
    "the", "Hello", "ǅ", "ʰ", "中文", "日本", "ひらがな", "カタ", "한국어", "〇", "ß", "é", "Ω",
    "\u{301}", "\u{20dd}", "ि", "\u{200d}", "0", "12", "123", "4567", "٣", "²", "½", "Ⅻ", "①",
    "!", ".", ",", "?", "(", ")", "|", "/", "-", "_", "\"", "…", "。", "，", "、", "।", "۔",
    "،", "“", "！", "€", "😀", "\u{0}", "\u{7f}", "\u{fffd}", "µ", "Ａ",
];

type Case = (&'static str, PreTokenizer, PreTokenizer);

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| {
        FUSED_SCANNERS
            .iter()
            .map(|&name| {
                let v = known_sequence(name).unwrap();
                let fused = PreTokenizer::from_json(&v).unwrap();
                assert_eq!(fused.splitter_kinds(), [name]);
                (name, fused, PreTokenizer::from_json_generic(&v).unwrap())
            })
            .collect()
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
    for (name, fused, generic) in cases() {
        let mut want = Vec::new();
        generic.pieces(&text, &mut want).unwrap();
        let mut got = Vec::new();
        fused.pieces(&text, &mut got).unwrap();
        assert_eq!(got, want, "{name}: {text:?}");
        let mut walked = Vec::new();
        fused
            .for_each_piece(&text, &mut |p| {
                walked.push(p);
                Ok(())
            })
            .unwrap();
        assert_eq!(walked, want, "{name}: {text:?}");
    }
});
