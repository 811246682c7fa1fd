//! One field of each line of a JSON Lines block, as Python's `json.loads(line)[field]` gives
//! it, without building the object: other values are skipped, the field's string is
//! borrowed from the line when it holds no escapes, and otherwise unescaped into a buffer the
//! encoding thread reuses line after line (serde_json would unescape each into a scratch
//! vector grown from empty and then copied: several allocations per document, which the
//! encoding threads made under glibc's arena lock, in turn). The common record is read in
//! one pass by [`scan`]; a line it is not sure of is parsed by serde_json and its field
//! unescaped here ([`unescape`]), as before the scanner, so the scanner only ever answers
//! what this reading answers (a test compares the two).
//!
//! Invariant: [`field_text`] says [`Line::Text`] only when `json.loads` would return an
//! object whose `field` is a string holding exactly that text (and nothing a Python reader
//! would change: no lone surrogate), and [`Line::Blank`] only for a line the reader skips
//! (`not line.strip()`). Everything else — not UTF-8, not JSON, not an object, the field
//! missing or not a string, `NaN` / `Infinity` (which `json.loads` takes and serde_json
//! refuses), a lone surrogate escape in the field (serde_json refuses it; Python turns it
//! into U+FFFD) — is [`Line::Fallback`]: the caller reads the block with Python's rules.
//! (One difference is left on purpose: a value skipped here may nest deeper than the ~1,000
//! levels where `json.loads` stops with `RecursionError`; that line is read here, where the
//! Python reader would stop the job with that error.)
//!
//! Where the two parsers agree and why that is enough: both take the grammar of RFC 8259
//! with the same whitespace (space, tab, `\n`, `\r`) before and after the value, refuse
//! control characters inside strings, trailing commas, leading zeros and trailing data, and
//! skip over any number however long. serde_json refuses more (the extensions above), never
//! less, and refusing only costs the slow path. A key that occurs twice keeps its last
//! value, as a Python `dict` does.

mod scan;

use super::{encode_pieces, Encoded, Parts, Piece, PIECE_BYTES};
use crate::error::Result;
use crate::vocab::Rank;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// What one line of a block is.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A document: the field's text.
    Text(Cow<'a, str>),
    /// Only ASCII whitespace (Python's `bytes.strip` set): not a record.
    Blank,
    /// Anything the Python reader must look at.
    Fallback,
}

/// Is `line` empty after Python's `bytes.strip()` (which strips `b" \t\n\r\x0b\x0c"`)?
fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// The text of `field` in `line` (one line of the file without its `\n`): see the module doc.
/// The text is borrowed from the line when it holds no escape, else unescaped into `buf`
/// (cleared first), which the caller reuses line after line: no allocation per document.
pub fn field_text<'a>(line: &'a [u8], field: &str, buf: &'a mut String) -> Line<'a> {
    if is_blank(line) {
        return Line::Blank;
    }
    // Python decodes the whole line first: any invalid byte anywhere is its error, and
    // serde_json would let one pass inside a string it skips. (`simdutf8` accepts exactly
    // what `std::str::from_utf8` accepts, many bytes at a time past ASCII.)
    let Ok(text) = simdutf8::basic::from_utf8(line) else {
        return Line::Fallback;
    };
    // The common record in one pass; serde_json for whatever the scanner is not sure of.
    match scan::field(text, field, buf) {
        Some(scan::Found::InLine(start, end)) => {
            return Line::Text(Cow::Borrowed(&text[start..end]))
        }
        Some(scan::Found::InBuf) => return Line::Text(Cow::Borrowed(buf.as_str())),
        None => {}
    }
    serde_field_text(text, field, buf)
}

/// [`field_text`] of a line already checked to be UTF-8 and not blank, read by serde_json.
fn serde_field_text<'a>(text: &'a str, field: &str, buf: &'a mut String) -> Line<'a> {
    let mut de = serde_json::Deserializer::from_str(text);
    let body = match (Object { field }).deserialize(&mut de) {
        // `end` refuses anything but whitespace after the object, as `json.loads` does.
        Ok(Some(body)) if de.end().is_ok() => body,
        _ => return Line::Fallback,
    };
    if memchr::memchr(b'\\', body.as_bytes()).is_none() {
        return Line::Text(Cow::Borrowed(body));
    }
    if !unescape(body, buf) {
        return Line::Fallback;
    }
    Line::Text(Cow::Borrowed(buf.as_str()))
}

/// Writes into `out` (cleared first) the string a JSON string literal's body stands for, as
/// `json.loads` reads it; `false` for a lone surrogate (which Python keeps and the reader
/// replaces: the slow path's business) or anything that is not one of JSON's escapes.
///
/// `body` is what `serde_json` checked as a string literal (no control characters, every
/// backslash starting one of `\" \\ \/ \b \f \n \r \t \uXXXX`); nothing here relies on that
/// for safety: every index is checked.
fn unescape(body: &str, out: &mut String) -> bool {
    out.clear();
    out.reserve(body.len());
    let bytes = body.as_bytes();
    let mut copied = 0; // `body[..copied]` is in `out`
    while let Some(off) = memchr::memchr(b'\\', &bytes[copied..]) {
        let at = copied + off;
        out.push_str(&body[copied..at]); // (`at` is an ASCII byte's index: a char boundary)
                                         // Not one of JSON's escapes, or a lone surrogate: `false`.
        let Some(Ok((c, len))) = scan::escape(bytes, at) else {
            return false;
        };
        out.push(c);
        copied = at + len; // past an ASCII escape: a char boundary
    }
    out.push_str(&body[copied..]);
    true
}

/// The top-level value, which must be an object: the body (between the quotes, escapes as
/// written) of the last value of `field`, if any.
struct Object<'f> {
    field: &'f str,
}

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = Option<&'de str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = Option<&'de str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(is_field) = map.next_key_seed(KeyIs(self.field))? {
            if is_field {
                // A later value of the same key replaces this one, as in a Python dict;
                // a value that is not a string is an error (the slow path names it). The
                // raw value is the literal as serde_json checked it, quotes included.
                let raw = map.next_value::<&'de RawValue>()?.get();
                let body = raw
                    .strip_prefix('"')
                    .and_then(|r| r.strip_suffix('"'))
                    .ok_or_else(|| serde::de::Error::custom("the field is not a string"))?;
                found = Some(body);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A key: is it (once unescaped) the field's name?
struct KeyIs<'f>(&'f str);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<bool, E> {
        Ok(v == self.0)
    }
}

/// `block` (whole lines, the last one with or without its `\n`) cut into pieces of about
/// [`PIECE_BYTES`] that each end just after a `\n` (the last at the block's end).
fn pieces(block: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::with_capacity(block.len() / PIECE_BYTES + 1);
    let mut rest = block;
    while rest.len() > PIECE_BYTES {
        match memchr::memchr(b'\n', &rest[PIECE_BYTES..]) {
            Some(at) => {
                let (piece, tail) = rest.split_at(PIECE_BYTES + at + 1);
                out.push(piece);
                rest = tail;
            }
            None => break,
        }
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// The lines of a piece as Python's `piece.split(b"\n")` gives them, except that a piece
/// ending in `\n` has no empty line after it (it would be blank anyway).
fn lines(piece: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(piece);
    std::iter::from_fn(move || {
        let r = rest?;
        match memchr::memchr(b'\n', r) {
            Some(at) => {
                rest = if at + 1 < r.len() {
                    Some(&r[at + 1..])
                } else {
                    None
                };
                Some(&r[..at])
            }
            None => {
                rest = None;
                Some(r)
            }
        }
    })
}

/// The ids of the documents of a JSON Lines block (the `field` of each non-blank line, in
/// order), each by `encode` (which appends a text's ids to a vector), on up to
/// `num_threads` threads; `None` if any line needs the Python reader (see the module doc).
pub fn encode_block(
    block: &[u8],
    field: &str,
    num_threads: usize,
    encode: impl Fn(&str, &mut Vec<Rank>) -> Result<()> + Sync + Send,
    stop: impl FnMut() -> bool,
) -> Result<Option<Parts>> {
    let pieces = pieces(block);
    let work = |piece: &&[u8]| -> Result<Piece> {
        let mut e = Encoded {
            ids: Vec::with_capacity(super::ids_room(piece.len())),
            ends: Vec::new(),
        };
        let mut buf = String::new(); // the unescaped text of a line, reused by the next
        for line in lines(piece) {
            match field_text(line, field, &mut buf) {
                Line::Text(text) => e.push(|out| encode(&text, out))?,
                Line::Blank => {}
                Line::Fallback => return Ok(Piece::Fallback),
            }
        }
        Ok(Piece::Done(e))
    };
    encode_pieces(&pieces, block.len(), num_threads, work, stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `field_text` of `line`, its text owned.
    fn text(line: &str) -> Line<'static> {
        owned_line(line.as_bytes())
    }

    fn owned_line(line: &[u8]) -> Line<'static> {
        let mut buf = String::new();
        match field_text(line, "text", &mut buf) {
            Line::Text(t) => Line::Text(Cow::Owned(t.into_owned())),
            Line::Blank => Line::Blank,
            Line::Fallback => Line::Fallback,
        }
    }

    fn owned(s: &str) -> Line<'static> {
        Line::Text(Cow::Owned(s.to_owned()))
    }

    #[test]
    fn takes_the_field_and_skips_the_rest() {
        assert_eq!(text(r#"{"text": "hi"}"#), owned("hi"));
        // without escapes the text is the line's own bytes: the buffer is not touched
        let (line, mut buf) = (br#"{"text": "hi"}"#, String::new());
        match field_text(line, "text", &mut buf) {
            Line::Text(Cow::Borrowed(t)) => {
                assert_eq!(t, "hi");
                assert_eq!(t.as_ptr(), line[10..].as_ptr());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(buf.capacity(), 0);
        // every escape, and the buffer reused by the next line
        for (line, want) in [
            (
                r#"{"text": "\"\\\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00 end"}"#,
                "\"\\/\u{8}\u{c}\n\r\tA\u{e9}\u{20ac}\u{1f600} end",
            ),
            (
                r#"{"text": "\u0000 nul, \\u escaped"}"#,
                "\0 nul, \\u escaped",
            ),
            (r#"{"text": "short \n"}"#, "short \n"),
        ] {
            let got = field_text(line.as_bytes(), "text", &mut buf);
            assert_eq!(got, Line::Text(Cow::Borrowed(want)), "{line}");
        }
        // a pair split or reversed, and lone halves: Python's rules (the slow path)
        for line in [
            r#"{"text": "\ud83d"}"#,
            r#"{"text": "\ude00\ud83d"}"#,
            r#"{"text": "\ud83d x \ude00"}"#,
            r#"{"text": "\ud83d\u0041"}"#,
            r#"{"text": "end \ud83d\"}"#,
        ] {
            assert_eq!(text(line), Line::Fallback, "{line}");
        }
        assert_eq!(
            text(
                r#" {"id": [1, {"a": null}, 2.5e300, -0, true], "text": "a\"b\n\u00e9\ud83d\ude00", "x": {}} "#
            ),
            owned("a\"b\n\u{e9}\u{1f600}")
        );
        assert_eq!(text("{\"text\": \"x\"}\r"), owned("x"));
        assert_eq!(text(r#"{"te\u0078t": "esc key"}"#), owned("esc key"));
        assert_eq!(
            text(r#"{"n": 123456789012345678901234567890, "text": ""}"#),
            owned("")
        );
        assert_eq!(text(r#"{"text": "a", "text": "b"}"#), owned("b"));
        assert_eq!(text(r#"{"é": 1, "text": "c"}"#), owned("c"));
        // a lone surrogate in a value that is skipped: Python takes it too
        assert_eq!(text(r#"{"o": "\ud800", "text": "d"}"#), owned("d"));
    }

    /// The one-pass scanner (`scan`) says what serde_json's reading says whenever it answers,
    /// on records built from random parts and on their mutations (bytes swapped, dropped,
    /// doubled, cut short), and it answers for the usual records.
    #[test]
    fn the_scanner_agrees_with_serde_json() {
        const STRINGS: [&str; 14] = [
            r#""""#,
            r#""plain text""#,
            r#""line\nbreak \"quoted\" tab\t back\\slash \/""#,
            r#""\u00e9\u20ac \ud83d\ude00 caf\u00E9""#,
            r#""\ud800 lone""#,
            r#""\udc00\ud800""#,
            r#""\b\f\r""#,
            "\"h\u{e9}llo \u{1f600} \u{4e16}\u{754c}\"",
            r#""bad \x escape""#,
            "\"raw \u{1} control\"",
            r#""\u12""#,
            r#""end\\""#,
            r#""trail \"#,
            r#""\u0000 nul""#,
        ];
        const OTHERS: [&str; 21] = [
            "1",
            "-0",
            "0.5",
            "1e10",
            "-2.5E-3",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "true",
            "false",
            "null",
            "NaN",
            "-Infinity",
            "tru",
            "1x",
            "[1,]",
            r#"{"k":}"#,
            r#"{"k" 1}"#,
            "nulll",
        ];
        const KEYS: [&str; 5] = [
            r#""id""#,
            r#""text""#,
            r#""te\u0078t""#,
            r#""meta""#,
            r#""""#,
        ];
        fn value(rnd: &mut dyn FnMut(usize) -> usize, depth: usize) -> String {
            match rnd(if depth < 3 { 6 } else { 4 }) {
                0 | 1 => STRINGS[rnd(STRINGS.len())].to_string(),
                2 | 3 => OTHERS[rnd(OTHERS.len())].to_string(),
                4 => {
                    let n = rnd(3);
                    let items: Vec<String> = (0..n).map(|_| value(rnd, depth + 1)).collect();
                    format!("[{}]", items.join(", "))
                }
                _ => {
                    let n = rnd(3);
                    let items: Vec<String> = (0..n)
                        .map(|_| format!("{}: {}", KEYS[rnd(KEYS.len())], value(rnd, depth + 1)))
                        .collect();
                    format!("{{{}}}", items.join(","))
                }
            }
        }
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let (mut answered, mut usual) = (0, 0);
        for round in 0..20_000 {
            let mut members = Vec::new();
            for _ in 0..rnd(4) {
                let key = KEYS[rnd(KEYS.len())];
                let colon = ["", " "][rnd(2)];
                let space = ["", " ", "\t"][rnd(3)];
                members.push(format!("{key}{colon}:{space}{}", value(&mut rnd, 0)));
            }
            let text = STRINGS[rnd(STRINGS.len())];
            members.insert(rnd(members.len() + 1), format!("\"text\": {text}"));
            let before = ["", " ", "\t"][rnd(3)];
            let after = ["", " ", "\r", " x", ","][rnd(5)];
            let mut line = format!("{before}{{{}}}{after}", members.join(", ")).into_bytes();
            if round % 2 == 1 {
                // a mutation: most of these lines are not JSON any more
                let at = rnd(line.len());
                match rnd(4) {
                    0 => {
                        let other = rnd(line.len());
                        line.swap(at, other);
                    }
                    1 => {
                        line.remove(at);
                    }
                    2 => line.insert(at, line[at]),
                    _ => line.truncate(at),
                }
            }
            let Ok(text) = std::str::from_utf8(&line) else {
                continue;
            };
            let (mut a, mut b) = (String::new(), String::new());
            let want = serde_field_text(text, "text", &mut a);
            let Some(found) = scan::field(text, "text", &mut b) else {
                continue;
            };
            let got = match found {
                scan::Found::InLine(start, end) => &text[start..end],
                scan::Found::InBuf => b.as_str(),
            };
            assert_eq!(Line::Text(Cow::Borrowed(got)), want, "{text}");
            answered += 1;
            if round % 2 == 0 {
                usual += 1;
            }
        }
        assert!(
            usual > 1_000,
            "the scanner answered {usual} unmutated lines"
        );
        assert!(answered > usual, "no mutated line was answered");
        // the usual record, escapes and all, is the scanner's
        let mut buf = String::new();
        for line in [
            r#"{"id": 12, "text": "a\nb \"c\" \u00e9\ud83d\ude00", "meta": {"x": [1, 2.5, null]}}"#,
            r#"{"text": "plain"}"#,
            "{\"text\": \"h\u{e9}llo\"}\r",
        ] {
            assert!(scan::field(line, "text", &mut buf).is_some(), "{line}");
        }
        // and what it leaves to serde_json comes back as before
        for line in [
            r#"{"te\u0078t": "esc key"}"#,
            r#"{"x": NaN, "text": "a"}"#,
            r#"{"text": "\ud800"}"#,
            r#"{"text": 1}"#,
        ] {
            assert!(scan::field(line, "text", &mut buf).is_none(), "{line}");
        }
    }

    #[test]
    fn blank_lines_are_not_records() {
        for line in ["", " ", "\r", "\t \x0b\x0c "] {
            assert_eq!(text(line), Line::Blank, "{line:?}");
        }
    }

    #[test]
    fn anything_python_treats_otherwise_falls_back() {
        for line in [
            r#"{"text": "\ud800"}"#,       // lone surrogate: U+FFFD in Python
            r#"{"text": "\udc00\ud800"}"#, // reversed pair
            r#"{"x": NaN, "text": "a"}"#,  // json.loads takes NaN
            r#"{"x": -Infinity, "text": "a"}"#,
            r#"{"text": 1}"#,
            r#"{"text": null}"#,
            r#"{"text": ["a"]}"#,
            r#"{"text": "a", "text": 2}"#,
            r#"{"other": "a"}"#,
            r#"["text", "a"]"#,
            r#""text""#,
            r#"{"text": "a"} x"#,
            r#"{"text": "a"},"#,
            r#"{"text": "a",}"#,
            "{\"text\": \"a\tb\"}", // a raw control character in a string
            "{\"x\": \"\x01\", \"text\": \"a\"}",
            "\x0b{\"text\": \"a\"}", // not JSON whitespace
            "\u{feff}{\"text\": \"a\"}",
            r#"{"x": 01, "text": "a"}"#,
            r#"{"text": 'a'}"#,
            "{\"text\": \"a\"",
        ] {
            assert_eq!(text(line), Line::Fallback, "{line:?}");
        }
        // serde_json skips nested values at any depth, as json.loads does up to Python's
        // recursion limit
        let deep = format!(
            "{{\"x\": {}1{}, \"text\": \"a\"}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert_eq!(text(&deep), owned("a"));
        let deep = format!(
            "{{\"x\": {}1{}, \"text\": \"a\"}}",
            "[".repeat(200),
            "]".repeat(199)
        );
        assert_eq!(text(&deep), Line::Fallback);
        assert_eq!(owned_line(b"{\"text\": \"\xff\"}"), Line::Fallback);
        assert_eq!(
            owned_line(b"{\"x\": \"\xc3\", \"text\": \"a\"}"),
            Line::Fallback
        );
    }

    #[test]
    fn pieces_and_lines_cover_the_block() {
        let mut block = Vec::new();
        for i in 0..5000 {
            block.extend_from_slice(
                format!("{{\"text\": \"{}\"}}\n", "x".repeat(i % 97)).as_bytes(),
            );
        }
        for tail in [&b""[..], b"{\"text\": \"end\"}"] {
            let mut b = block.clone();
            b.extend_from_slice(tail);
            let ps = pieces(&b);
            assert!(ps.len() > 1);
            assert_eq!(ps.concat(), b);
            assert!(ps[..ps.len() - 1].iter().all(|p| p.ends_with(b"\n")));
            let got: Vec<&[u8]> = ps.iter().flat_map(|p| lines(p)).collect();
            let mut want: Vec<&[u8]> = b.split(|&c| c == b'\n').collect();
            if b.ends_with(b"\n") {
                want.pop();
            }
            assert_eq!(got, want);
        }
        assert!(pieces(b"").is_empty());
        assert_eq!(lines(b"\n\n").collect::<Vec<_>>(), vec![&b""[..], b""]);
    }

    #[test]
    fn a_block_encodes_to_each_documents_ids_or_falls_back() {
        let enc = |t: &str, out: &mut Vec<Rank>| {
            out.extend(t.bytes().map(Rank::from));
            Ok(())
        };
        let block = b"{\"text\": \"ab\"}\n\n  \r\n{\"id\": 1, \"text\": \"\"}\r\n{\"text\": \"c\"}";
        let parts = encode_block(block, "text", 2, enc, || false)
            .unwrap()
            .unwrap();
        let (ids, offsets) = super::super::joined(&parts);
        assert_eq!(ids, vec![97, 98, 99]);
        assert_eq!(offsets, vec![0, 2, 2, 3]);
        let bad = b"{\"text\": \"ab\"}\n{\"text\": 3}\n";
        assert!(encode_block(bad, "text", 2, enc, || false)
            .unwrap()
            .is_none());
    }
}
