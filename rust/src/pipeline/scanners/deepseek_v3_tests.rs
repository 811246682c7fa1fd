//! DeepSeek V3's scanner against the generic interpreter.

use super::*;
use crate::pipeline::pre_tokenizers::PreTokenizer;
use crate::pipeline::scanners::window::checks;
use crate::pipeline::scanners::{
    assert_agree, assert_agree_on, assert_agree_on_random_texts, fused_and_generic, random_texts,
};
use serde_json::json;

fn json() -> Value {
    crate::pipeline::scanners::known_sequence("scan:deepseek-v3").unwrap()
}

const TRICKY: [&str; 40] = [
    "",
    "1",
    "12",
    "123",
    "1234",
    "12345",
    "123456",
    "1234567",
    "\u{661}\u{662}\u{663}\u{664} \u{bd}\u{bd}1 \u{2460}\u{2461}\u{2462}\u{2463}x",
    "日本語123テスト。ひらがな、カタカナ・ー",
    "中文abc中文1中文!中文 中文\u{9fa6}\u{3040}\u{309b}\u{30a0}\u{30fb}",
    "漢字\u{3099}a\u{301}",
    "!abc .Foo ,x ;;bar !!Baz (x) [y] {z} _a -b 'c \"d",
    "e\u{301}\u{301} \u{301}x \u{301} \u{301}\u{301}",
    "trailing   ",
    "a  b   c\td \t e",
    "x \n y \r\n z\n\n\n w  \n",
    "\r\n",
    "\r\n\r\n  \r\n",
    " \r\n",
    "a\u{a0}b \u{a0}\u{a0}c\u{a0}",
    "\u{3000}x\u{3000}\u{3000}日本\u{3000}",
    "😀 emoji😀😀 \u{1f600}x",
    "$100 €5 ¥3 £2 $ € ++ -- => !== ... ?!",
    " $€ x$ .. ,\n",
    "?\r\n!\n\n",
    "\x00\x01abc\x00 \x7f\u{200d}x\u{ad}y\u{e000}z",
    "\u{200d}\u{200d}a \u{200d}",
    "   ",
    " a",
    "a ",
    " ",
    "a1b2c3 x99y 3.14159 1,000,000",
    "\u{2028}line\u{2029}para\u{85}nel",
    "Hello, world! It's a \"test\".",
    "\t\tindent\n\t\tmore\n",
    "ｆｕｌｌ　ｗｉｄｔｈ！１２３",
    "한국어 텍스트 ก ไทย",
    "x\u{301}1\u{301}日\u{301}",
    "!\u{3042} .\u{4e00} a\u{30a2}",
];

#[test]
fn recognised_and_named() {
    let (fused, generic) = fused_and_generic("scan:deepseek-v3");
    assert!(fused.fused().is_some());
    assert!(generic.fused().is_none());
    for (path, value) in [
        ("/pretokenizers/0/behavior", json!("Removed")),
        ("/pretokenizers/1/invert", json!(true)),
        (
            "/pretokenizers/2/pattern/Regex",
            json!(WORDS.replace("|\\s+(?!\\S)", "")),
        ),
        ("/pretokenizers/0/pattern/Regex", json!("\\p{N}{1,2}")),
        ("/pretokenizers/3/add_prefix_space", json!(true)),
        ("/pretokenizers/3/use_regex", json!(true)),
    ] {
        let mut other = json();
        *other.pointer_mut(path).unwrap() = value;
        assert_ne!(other, json(), "{path}");
        let pt = PreTokenizer::from_json(&other).unwrap();
        assert!(!pt.splitter_kinds().contains(&"scan:deepseek-v3"), "{path}");
    }
    let mut fewer = json();
    fewer["pretokenizers"].as_array_mut().unwrap().remove(3);
    let pt = PreTokenizer::from_json(&fewer).unwrap();
    assert!(!pt.splitter_kinds().contains(&"scan:deepseek-v3"));
}

#[test]
fn table_has_the_assumed_shape() {
    let t = table().expect("DeepSeek V3's classes have the shape the proof assumes");
    assert_eq!(t.of('7'), N | X);
    assert_eq!(t.of('\u{661}'), N | X);
    assert_eq!(t.of('日'), K | LM);
    assert_eq!(t.of('\u{30fb}'), K | PS);
    assert_eq!(t.of('!'), A | PS);
    assert_eq!(t.of('a'), AL | LM);
    assert_eq!(t.of(' '), X | S);
    assert_eq!(t.of('\n'), S);
    assert_eq!(t.of('\u{301}'), X | LM);
    assert_eq!(t.of('€'), PS);
}

#[test]
fn fused_equals_generic_on_tricky_text() {
    assert_agree_on("scan:deepseek-v3", TRICKY);
}

const CHARS: [&str; 62] = [
    "a", "Z", "q", "Foo", " ", "  ", "\t", "\n", "\r", "\r\n", "\x0b", "\x00", "\x7f", "\u{a0}",
    "\u{3000}", "\u{2003}", "\u{85}", "\u{2028}", "0", "1", "9", "42", "\u{661}", "\u{bd}",
    "\u{b2}", "\u{2460}", "〇", "Ⅻ", "日", "本", "\u{9fa5}", "\u{9fa6}", "\u{3042}", "\u{3099}",
    "\u{309b}", "\u{30a2}", "\u{30a0}", "\u{30fb}", "\u{30fc}", "ー", "!", ".", ",", "'", "-", "_",
    "$", "€", "+", "(", "，", "。", "é", "\u{301}", "Ω", "가", "😀", "\u{200d}", "\u{ad}",
    "\u{e000}", "ｆ", "！",
];

#[test]
fn fused_equals_generic_on_random_text() {
    let (fused, generic) = fused_and_generic("scan:deepseek-v3");
    assert_agree_on_random_texts(&fused, &generic, &CHARS, 307);
}

/// Longer texts (up to 120 chars, most past 64 bytes) over the same classes.
#[test]
fn fused_equals_generic_on_long_random_text() {
    let (fused, generic) = fused_and_generic("scan:deepseek-v3");
    let texts = random_texts(&CHARS, 20000, 120);
    assert!(texts.iter().filter(|t| t.len() > 64).count() > 10000);
    for t in texts {
        assert_agree(&fused, &generic, &t);
    }
}

/// Edge-case fragments for long texts: mostly ASCII, as windows see them, with the non-ASCII
/// chars that stop a window or would change what its last bytes do (a letter or mark after a
/// blank or punctuation, `\s` that lengthens a run, K and N chars that end a group).
const PARTS: [&str; 60] = [
    "a",
    "Zq",
    "word",
    " ",
    "  ",
    "    ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    "\x0b",
    "\x0c",
    "\x00",
    "\x1f",
    "\x7f",
    "1",
    "42",
    "1234",
    "1234567",
    " 7",
    ".",
    ",",
    "!?",
    "...",
    "(",
    ")",
    "_",
    "~",
    "'",
    "-",
    "$",
    " .",
    ". ",
    ".x",
    " x",
    "x ",
    ",\n",
    ";\r\n",
    "\n  ",
    "\u{a0}",
    "\u{3000}",
    "\u{85}",
    "é",
    "\u{301}",
    "Ω",
    "日本",
    "\u{3042}",
    "\u{30fb}",
    "€",
    "，",
    "½",
    "\u{661}",
    "😀",
    "\u{200d}",
    "\x00 ",
    "\x01\x02a",
    "\x7f \u{a0}",
    " \u{3000}",
    "\t\u{301}",
];

fn long_texts(n: usize) -> Vec<String> {
    checks::long_texts(&PARTS, 0x5EED_D5D5_0000_0003, n)
}

#[test]
fn fused_equals_generic_on_long_mostly_ascii_text() {
    assert_agree_on("scan:deepseek-v3", long_texts(6000));
}

/// The two paths agree: each window's boundaries, from any piece start, are the ones
/// `piece_end` finds, up to the window's last.
#[test]
fn windows_equal_piece_end() {
    let d = DeepSeekV3::recognise(json()["pretokenizers"].as_array().unwrap())
        .unwrap()
        .unwrap();
    let n = checks::windows_equal_piece_end(
        &long_texts(3000),
        window,
        |b, i| d.piece_end(b, i),
        checks::up_to_last_cut,
    );
    assert!(n > 50_000, "only {n} windows");
}

/// Windows answer for most of mostly-ASCII text: the window path is taken, not only right.
#[test]
fn windows_reach_far() {
    let texts = long_texts(500);
    let (mut answered, mut ascii) = (0usize, 0usize);
    for t in &texts {
        let b = t.as_bytes();
        for w in b.windows(WINDOW).step_by(WINDOW) {
            let w: &[u8; WINDOW] = w.try_into().unwrap();
            let (got, classified) = window(w);
            if classified == 64 {
                ascii += 1;
                answered += (got != 0) as usize;
            }
        }
    }
    assert!(
        ascii > 100 && answered * 10 > ascii * 9,
        "{answered} of {ascii}"
    );
}

#[test]
fn vector_masks_equal_scalar_masks() {
    checks::vector_masks_equal_scalar(masks, masks_scalar);
}
