//! BLOOM's scanner against the generic interpreter, and its two paths against each other.

use super::*;
use crate::pipeline::pre_tokenizers::PreTokenizer;
use crate::pipeline::scanners::window::checks;
use crate::pipeline::scanners::{assert_agree_on, assert_agree_on_random_texts, fused_and_generic};
use serde_json::json;

fn json() -> Value {
    crate::pipeline::scanners::known_sequence("scan:bloom").unwrap()
}

fn bloom() -> Bloom {
    Bloom::recognise(json()["pretokenizers"].as_array().unwrap())
        .unwrap()
        .unwrap()
}

const TRICKY: [&str; 14] = [
    "",
    "\n",
    "Hello, world! (a|b) x.y?  z",
    "a  b   c\t d \n e",
    " leading",
    "trailing ",
    "  ",
    "a\n.b \n(c",
    "华为是一家公司，成立于1987年。是全球最大的…",
    "नमस्ते। दुनिया",
    "سلام، دنیا۔ x",
    "\u{a0}a \u{a0} \u{3000}b \u{85}c",
    "e\u{301} \u{301}x (\u{301})",
    "?!?! .,., ||| (((x)))",
];

/// Edge-case fragments for long texts: mostly ASCII, as windows see them, with the
/// non-ASCII chars that stop a window or change a class.
const PARTS: [&str; 44] = [
    "a", "Zq", "word", "7", "42", "'s", "_", "-", "~", "#", " ", "  ", "    ", "\t", "\n", "\r\n",
    "\x0b", "\x0c", "\x00", "\x1f", "\x7f", ".", ",", "!", "?", "(", ")", "|", "!?", " .", ". ",
    " x", "x ", " \n", "\u{a0}", "\u{3000}", "\u{85}", "é", "中文", "。", "，", "…", "😀",
    "\u{301}",
];

fn long_texts(n: usize) -> Vec<String> {
    checks::long_texts(&PARTS, 0x5EED_B100_0000_0001, n)
}

#[test]
fn fused_equals_generic_on_long_mostly_ascii_text() {
    assert_agree_on("scan:bloom", long_texts(6000));
}

/// The two paths agree: each window's boundaries, from any piece start, are the ones
/// `piece_end` finds, up to the window's last.
#[test]
fn windows_equal_piece_end() {
    let d = bloom();
    // The window answers for boundaries up to `classified - 2` (see the module docs).
    let reach = checks::all_but(2);
    let n =
        checks::windows_equal_piece_end(&long_texts(3000), window, |b, i| d.piece_end(b, i), reach);
    assert!(n > 50_000, "only {n} windows");
}

#[test]
fn vector_masks_equal_scalar_masks() {
    checks::vector_masks_equal_scalar(masks, masks_scalar);
}

/// The load-time checks pass for the Unicode tables in use (else BLOOM would not be
/// recognised), and the table says what the proof reads from it.
#[test]
fn table_has_the_assumed_shape() {
    let t = table().expect("BLOOM's class has the shape the proof assumes");
    assert_eq!(t.of(' '), SP);
    assert_eq!(t.of('\u{a0}'), 0);
    assert_eq!(t.of('\n'), 0);
    assert_eq!(t.of('|'), 0);
    assert_eq!(t.of('…'), 0);
    assert_eq!(t.of('،'), 0);
    assert_eq!(t.of('a'), X);
    assert_eq!(t.of('['), X);
    assert_eq!(t.of('中'), X);
    assert_eq!(t.of('\u{301}'), X);
}

#[test]
fn recognised_and_named() {
    let pt = PreTokenizer::from_json(&json()).unwrap();
    assert_eq!(pt.splitter_kinds(), ["scan:bloom"]);
    for (k, v) in [
        ("add_prefix_space", json!(true)),
        ("use_regex", json!(true)),
    ] {
        let mut other = json();
        other["pretokenizers"][1][k] = v;
        let pt = PreTokenizer::from_json(&other).unwrap();
        assert!(!pt.splitter_kinds().contains(&"scan:bloom"), "{k}");
    }
    let mut other = json();
    other["pretokenizers"][0]["behavior"] = json!("Removed");
    let pt = PreTokenizer::from_json(&other).unwrap();
    assert!(!pt.splitter_kinds().contains(&"scan:bloom"));
}

#[test]
fn fused_equals_generic_on_tricky_text() {
    assert_agree_on("scan:bloom", TRICKY);
}

#[test]
fn fused_equals_generic_on_random_text() {
    let (fused, generic) = fused_and_generic("scan:bloom");
    assert_agree_on_random_texts(
        &fused,
        &generic,
        &[
            "a", "Z", "0", " ", "  ", "\t", "\n", "\r", "\x0b", "\x00", "\u{a0}", "\u{3000}",
            "\u{85}", "\u{2028}", ".", ",", "!", "?", "(", ")", "|", "[", "]", "'", "中", "é",
            "😀", "…", "。", "，", "、", "।", "۔", "،", "\u{301}",
        ],
        257,
    );
}

/// The file-cut rule would cut `"a\n.b"` after the `"\n"`, but `"\n."` is one gap: the
/// parts' pieces differ from the whole's, so BLOOM is read whole.
#[test]
fn the_file_cut_rule_does_not_hold() {
    use crate::pipeline::scanners::cut;
    let pt = PreTokenizer::from_json(&json()).unwrap();
    assert!(!pt.keeps_file_cuts());
    let text = "a\n.b";
    let at = crate::encode::pretok::file_cuts::last_file_cut(text.as_bytes(), 0);
    assert_eq!(at, 2);
    let mut parts = cut(&pt, &text[..at]);
    let tail = cut(&pt, &text[at..]);
    parts.extend(tail.iter().map(|&(a, z)| (a + at, z + at)));
    assert_eq!(cut(&pt, text), [(0, 1), (1, 3), (3, 4)]);
    assert_ne!(cut(&pt, text), parts);
}
