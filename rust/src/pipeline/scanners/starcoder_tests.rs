//! StarCoder's scanner against the generic interpreter, and its two paths against each
//! other.

use super::*;
use crate::pipeline::pre_tokenizers::PreTokenizer;
use crate::pipeline::scanners::window::checks;
use crate::pipeline::scanners::{assert_agree_on, assert_agree_on_random_texts, fused_and_generic};
use serde_json::json;

fn json() -> Value {
    crate::pipeline::scanners::known_sequence("scan:starcoder").unwrap()
}

fn starcoder() -> StarCoder {
    StarCoder::recognise(json()["pretokenizers"].as_array().unwrap())
        .unwrap()
        .unwrap()
}

const TRICKY: [&str; 16] = [
    "",
    "\n",
    "x = 12345 + 0.5;\n  return a1b2;",
    "½ ² ١٢٣ ① 〇 Ⅻ x\u{b2}y",
    "don't 'quote' it's 1's 2's 'll 've 're 'd 'm 'LL ''s x''ll",
    " 's  'll\t've \n're",
    "'s'll've're'd'm't",
    "   leading and trailing   ",
    "a  \n\n 9 \t 8\t\t",
    "a  1 b\t\t2 c \u{a0}3 \u{a0}\u{a0}4",
    "中文123한국어 😀1😀",
    "\x00\x01 \x7f x\x00 1\x7f2 !\x00?",
    "e\u{301}\u{301} \u{301}x \u{301}",
    "   ",
    " a",
    "a ",
];

/// Edge-case fragments for long texts: mostly ASCII, as windows see them, with the
/// non-ASCII chars that stop a window or change a class.
const PARTS: [&str; 66] = [
    "a", "Zq", "word", "s", "t", "d", "m", "ll", "ve", "re", "LL", "'", "'s", "'ll", "'ve", "'re",
    "'x", "''", " ", "  ", "    ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x00", "\x1f", "\x7f", "1",
    "42", "123", " 7", " 99", ".", ",", "!?", "(", ")", "_", "~", "$", "-", " .", ". ", " x", "x ",
    " \n", "\u{a0}", "\u{3000}", "\u{2003}", "\u{85}", "é", "µ", "中文", "가", "，", "«", "—", "½",
    "²", "١", "①", "😀", "\u{301}", "€",
];

fn long_texts(n: usize) -> Vec<String> {
    checks::long_texts(&PARTS, 0x5EED_5C0D_0000_0001, n)
}

#[test]
fn fused_equals_generic_on_long_mostly_ascii_text() {
    assert_agree_on("scan:starcoder", long_texts(6000));
}

/// The two paths agree: each window's boundaries, from any piece start, are the ones
/// `piece_end` finds, up to the window's last.
#[test]
fn windows_equal_piece_end() {
    let d = starcoder();
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

/// The load-time checks pass for the Unicode tables in use (else StarCoder would not be
/// recognised), and the table says what the proof reads from it.
#[test]
fn table_has_the_assumed_shape() {
    let t = table().expect("StarCoder's classes have the shape the proof assumes");
    assert_eq!(t.of(' '), S | SP);
    assert_eq!(t.of('\u{a0}'), S);
    assert_eq!(t.of('7'), N | D);
    assert_eq!(t.of('½'), N | D);
    assert_eq!(t.of('\''), 0);
    assert_eq!(t.of('é'), L);
    assert_eq!(t.of('€'), 0);
}

#[test]
fn recognised_and_named() {
    let pt = PreTokenizer::from_json(&json()).unwrap();
    assert_eq!(pt.splitter_kinds(), ["scan:starcoder"]);
    let mut other = json();
    other["pretokenizers"][1]["add_prefix_space"] = json!(true);
    let pt = PreTokenizer::from_json(&other).unwrap();
    assert!(!pt.splitter_kinds().contains(&"scan:starcoder"));
}

#[test]
fn fused_equals_generic_on_tricky_text() {
    assert_agree_on("scan:starcoder", TRICKY);
}

#[test]
fn fused_equals_generic_on_random_text() {
    let (fused, generic) = fused_and_generic("scan:starcoder");
    assert_agree_on_random_texts(
        &fused,
        &generic,
        &[
            "a", "Z", "s", "t", "d", "m", "l", "v", "r", "e", " ", "  ", "\t", "\n", "\r", "\x0b",
            "\x00", "\u{a0}", "\u{3000}", "0", "1", "9", "12", "½", "²", "١", "①", "Ⅻ", ".", ",",
            "'", "'s", "'ll", "'ve", "-", "_", "(", "中", "é", "😀", "€", "\u{301}",
        ],
        257,
    );
}
