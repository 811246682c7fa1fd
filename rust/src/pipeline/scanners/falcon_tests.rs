//! Falcon's scanner against the generic interpreter, and its two paths against each other.

use super::*;
use crate::pipeline::pre_tokenizers::PreTokenizer;
use crate::pipeline::scanners::window::checks;
use crate::pipeline::scanners::{assert_agree_on, assert_agree_on_random_texts, fused_and_generic};
use serde_json::json;

fn json() -> Value {
    crate::pipeline::scanners::known_sequence("scan:falcon").unwrap()
}

fn falcon() -> Falcon {
    Falcon::recognise(json()["pretokenizers"].as_array().unwrap())
        .unwrap()
        .unwrap()
}

const TRICKY: [&str; 24] = [
    "",
    "\n",
    "a\r\n  b \n",
    "12345 1234567 x12y 3.14159 1,000,000",
    "4 \u{bd} 12\u{b2}345 \u{bc}\u{be}\u{b9}\u{b3}",
    "\u{bd}123 \u{bd}1234 \u{b2}12 y\u{fd}123 \u{fd}9",
    "\u{661}\u{662}\u{663}4 ① 〇 Ⅻ",
    "Hello, world... don't 'quote' \"x\" -- (a)[b]{c}",
    "it's we'll they've I'm you'd 'll 's",
    "«guillemets» ¿qué? ¡sí! — – ‘’ “” …",
    "中文，测试。한국어！丽丽",
    "tabs\t\tand  spaces   \n\n ",
    "a  ,b \t,c\t ,d  ",
    "x \u{a0}y\u{a0} z\u{a0}\u{a0}w \u{3000}",
    "😀 emoji😀😀 \u{85}nel \u{a0}",
    "ĲĳĴ ¼ƀ ÀÁÂ \u{2032}\u{2033}",
    "1'000 12.345,67 $100 50% #1 @2",
    "e\u{301}\u{301} \u{301}x \u{301}",
    "\x00\x01 \x7f x\x00 1\x7f2",
    "   ",
    " a",
    "a ",
    "  1234 ",
    "€100 ©2024 ™",
];

/// Edge-case fragments for long texts: mostly ASCII, as windows see them, with the
/// non-ASCII chars that stop a window, change a class, or hold a numeric byte (C3 BD is
/// `ý`, E4 B8 BD `丽`).
const PARTS: [&str; 75] = [
    "a", "Zq", "word", "s", "t", "ll", "ve", "'", "'s", "'ll", " ", "  ", "    ", "\t", "\n",
    "\r\n", "\x0b", "\x0c", "\x00", "\x1f", "\x7f", "1", "42", "123", "4567", " 7", " 99", ".",
    ",", "!?", "(", ")", "_", "~", "$", "-", "\"", " .", ". ", " x", "x ", " \n", "\u{a0}",
    "\u{3000}", "\u{2003}", "\u{85}", "é", "ý", "ò", "ó", "ù", "ü", "þ", "µ", "Ω", "中文", "丽",
    "가", "，", "。", "«", "—", "…", "½", "²", "¹", "¼", "¾", "١", "①", "😀", "\u{301}", "Ａ", "€",
    "©",
];

fn long_texts(n: usize) -> Vec<String> {
    checks::long_texts(&PARTS, 0x5EED_FA1C_0000_0001, n)
}

#[test]
fn fused_equals_generic_on_long_mostly_ascii_text() {
    assert_agree_on("scan:falcon", long_texts(6000));
}

/// The two paths agree: each window's boundaries, from any piece start, are the ones
/// `piece_end` finds, up to the window's last.
#[test]
fn windows_equal_piece_end() {
    let d = falcon();
    // The window answers for boundaries up to `classified - 3` (see the module docs).
    let reach = checks::all_but(3);
    let n =
        checks::windows_equal_piece_end(&long_texts(3000), window, |b, i| d.piece_end(b, i), reach);
    assert!(n > 50_000, "only {n} windows");
}

#[test]
fn vector_masks_equal_scalar_masks() {
    checks::vector_masks_equal_scalar(masks, masks_scalar);
}

/// The load-time checks pass for the Unicode tables in use (else Falcon would not be
/// recognised), and the tables say what the proof reads from them.
#[test]
fn tables_have_the_assumed_shape() {
    let t = tables().expect("Falcon's classes have the shape the proof assumes");
    let numeric: Vec<u8> = (0..=255u8).filter(|&x| t.numeric[x as usize]).collect();
    assert_eq!(
        numeric,
        [
            b"0123456789".as_slice(),
            &[0xB2, 0xB3, 0xB9, 0xBC, 0xBD, 0xBE]
        ]
        .concat()
    );
    assert_eq!(t.classes.of(' '), S | SP);
    assert_eq!(t.classes.of('\u{a0}'), S);
    assert_eq!(t.classes.of('7'), N | NB);
    assert_eq!(t.classes.of('\''), PU);
    assert_eq!(t.classes.of('ý'), L | NB);
    assert_eq!(t.classes.of('½'), N | NB);
    assert_eq!(t.classes.of('é'), L);
    assert_eq!(t.classes.of('€'), 0);
}

/// The punctuation bit is the generic step's predicate, for every char.
#[test]
fn punctuation_is_the_generic_predicate() {
    let t = tables().unwrap();
    for c in (0..=char::MAX as u32).filter_map(char::from_u32) {
        let want = crate::pipeline::pre_tokenizers::is_punctuation(c);
        assert_eq!(t.classes.of(c) & PU != 0, want, "{c:?}");
    }
}

#[test]
fn recognised_and_named() {
    let pt = PreTokenizer::from_json(&json()).unwrap();
    assert_eq!(pt.splitter_kinds(), ["scan:falcon"]);
    let mut other = json();
    other["pretokenizers"][0]["behavior"] = json!("Isolated");
    let pt = PreTokenizer::from_json(&other).unwrap();
    assert!(!pt.splitter_kinds().contains(&"scan:falcon"));
}

#[test]
fn fused_equals_generic_on_tricky_text() {
    assert_agree_on("scan:falcon", TRICKY);
}

#[test]
fn fused_equals_generic_on_random_text() {
    let (fused, generic) = fused_and_generic("scan:falcon");
    assert_agree_on_random_texts(
        &fused,
        &generic,
        &[
            "a", "Z", "s", "t", "l", "v", "e", " ", "  ", "\t", "\n", "\r", "\x0b", "\x00", "\x7f",
            "\u{a0}", "\u{3000}", "\u{2003}", "\u{85}", "0", "1", "9", "12", "345", "½", "¼", "¾",
            "²", "³", "¹", "١", "①", "ý", "ò", "丽", ".", ",", "!", "'", "'s", "'ll", "-", "_",
            "$", "(", "«", "¿", "—", "…", "，", "。", "中", "가", "é", "Ĳ", "ƀ", "😀", "€", "©",
            "\u{301}",
        ],
        211,
    );
}
