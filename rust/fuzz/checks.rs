//! What the hardening fuzz targets check, shared by `cargo fuzz` (`fuzz_targets/*.rs`, nightly)
//! and a stable harness (`rust/tests/fuzz_loops.rs`, plain `cargo test`) that feeds the same
//! functions pseudo-random bytes.
//!
//! Invariant each checks: no input panics, hangs or allocates without bound; a parser
//! either refuses its input or gives a value that writes back to an equal value; an
//! encoding built from arbitrary ranks, special tokens and a pattern either is refused with
//! an error or encodes text to ids that decode to that text. Inputs are bounded (tokens and
//! special tokens up to 512 KiB, a few hundred tokens, patterns of up to 20,000 alternatives,
//! texts up to 256 KiB), so one run takes at most about a second (a runaway pattern's budget)
//! unless something is quadratic again (rows 1, 2, 3 and 5 of issue 56).

#![allow(dead_code)]

use ferrotok::{id_text, parse_tiktoken, Allowed, Encoder, Error, PieceCounts, Rank};
use rustc_hash::FxHashMap;

/// A `.tiktoken` file's parser: refuses or gives ranks an encoder is built from, each token
/// then found by its bytes.
pub fn tiktoken_file(data: &[u8]) {
    let Ok(ranks) = parse_tiktoken(data, "fuzz") else {
        return;
    };
    if ranks.len() > 4096 {
        return;
    }
    if let Ok(enc) = Encoder::new(ranks.clone(), Vec::new(), r"\S+|\s+") {
        for (bytes, &r) in &ranks {
            assert_eq!(enc.encode_single_token(bytes).ok(), Some(r), "{bytes:?}");
        }
    }
}

/// `PieceCounts::from_bytes`: refuses, or reads a table that writes back to bytes it reads
/// again as an equal table.
pub fn piece_counts(data: &[u8]) {
    let Ok(table) = PieceCounts::from_bytes(data) else {
        return;
    };
    let bytes = table.to_bytes();
    let again = PieceCounts::from_bytes(&bytes).expect("to_bytes gives what from_bytes reads");
    assert_eq!(again, table);
    assert_eq!(again.to_bytes(), bytes);
}

/// The id text and JSON id parsers: refuse, or give ids at most `max_id` that write back to
/// text they parse to the same ids.
pub fn id_text(data: &[u8]) {
    let (max_id, text) = match data {
        [a, b, c, rest @ ..] => (u32::from_le_bytes([*a, *b, *c, 0]), rest),
        _ => return,
    };
    if let Some(ids) = id_text::parse(text, max_id) {
        assert!(ids.iter().all(|&i| i <= max_id));
        let mut out = Vec::new();
        id_text::write(&ids, b" ", &mut out);
        assert_eq!(id_text::parse(&out, max_id), Some(ids.clone()));
    }
    for last in [false, true] {
        if let Some(ids) = id_text::parse_json(text, max_id, last) {
            assert!(ids.iter().all(|&i| i <= max_id));
            if last && !ids.is_empty() {
                let mut out = Vec::new();
                id_text::write(&ids, b", ", &mut out);
                assert_eq!(id_text::parse_json(&out, max_id, true), Some(ids));
            }
        }
    }
}

/// Pattern fragments: the usual classes, look-arounds, and patterns that backtrack or rescan.
const FRAGMENTS: &[&str] = &[
    r"\S+",
    r"\s+",
    r"\s+(?!\S)",
    r"\p{L}+",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+",
    r"'(?:[sdmt]|ll|ve|re)",
    r"\w+(?=\d)",
    r"(?>a+)b",
    r"a++b",
    r"(a+)+b",
    r"a+b",
    r"(?i:ab)",
    r"\b\w",
    r"(x)\1",
    r".",
    r"[^a]*",
    r"(?<=a)b",
    r"$",
    r"\s*[\r\n]+",
];

/// Reads bytes as the parts of an encoding and a text.
struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn bytes(&mut self, n: usize) -> &[u8] {
        let start = self.pos.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.pos = end;
        &self.data[start..end]
    }
    /// A token's bytes: mostly 1-8 from the input, sometimes a short run repeated into a
    /// long token (up to 512 KiB: quadratic work on it would take minutes).
    fn token(&mut self) -> Vec<u8> {
        let kind = self.byte();
        let n = 1 + (self.byte() % 8) as usize;
        let part = self.bytes(n).to_vec();
        if kind < 250 || part.is_empty() {
            return part;
        }
        let times = 1 + u16::from_le_bytes([self.byte(), self.byte()]) as usize;
        part.repeat(times)
    }
}

/// An encoding from arbitrary ranks, special tokens and a pattern: refused with an error, or
/// its ids for a text (also made of its tokens) decode to that text, with and without special
/// tokens allowed.
pub fn encoding(data: &[u8]) {
    let mut r = Reader { data, pos: 0 };
    let flags = r.byte();
    let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
    if flags & 1 == 0 {
        for b in 0..=255u8 {
            ranks.insert(vec![b], b as Rank);
        }
    }
    let n_tokens = r.byte() as usize + if flags & 2 != 0 { 256 } else { 0 };
    let mut tokens = Vec::new();
    for _ in 0..n_tokens {
        let t = r.token();
        if t.is_empty() {
            break;
        }
        let next = ranks.len() as Rank;
        ranks.entry(t.clone()).or_insert(next);
        tokens.push(t);
    }
    let mut specials: Vec<(String, Rank)> = Vec::new();
    for i in 0..(r.byte() % 5) {
        let t = String::from_utf8_lossy(&r.token()).into_owned();
        if !t.is_empty() {
            specials.push((t, 300_000 + i as Rank));
        }
    }
    // Whether the pattern matches every char (a non-empty match at each position), so the
    // pieces cover the text; where it does not, the text between matches is dropped, as in
    // tiktoken, and ids need not decode to the whole text.
    let mut covers = true;
    let pattern = match flags >> 5 {
        0 => {
            covers = false;
            String::from_utf8_lossy(r.bytes(16)).into_owned()
        }
        1 => {
            // Many alternatives (up to 20,000, which once asked for 60 GB): the regex
            // engine's cache must stay bounded.
            let n = 1 + u16::from_le_bytes([r.byte(), r.byte()]) as usize % 20_000;
            let mut p: Vec<String> = (0..n).map(|i| format!("w{i}x")).collect();
            p.push(r"\S+|\s+".into());
            p.join("|")
        }
        _ => {
            let n = 1 + r.byte() % 4;
            let mut p: Vec<&str> = (0..n)
                .map(|_| FRAGMENTS[r.byte() as usize % FRAGMENTS.len()])
                .collect();
            // Fragments that can match empty: the search then skips a char.
            covers = !p.iter().any(|f| ["[^a]*", "$"].contains(f));
            p.push(r"\S|\s");
            p.join("|")
        }
    };
    let Ok(enc) = Encoder::new(ranks, specials.clone(), &pattern) else {
        return;
    };
    // Text: the rest of the input (sometimes repeated up to 256 KiB, where a pattern that
    // rescans the text at each position would take minutes), and tokens glued together.
    let repeat = r.byte();
    let mut text = String::from_utf8_lossy(r.bytes(4096)).into_owned();
    if repeat >= 240 && !text.is_empty() {
        text = text.repeat((256 << 10) / text.len());
    }
    for t in tokens.iter().take(64) {
        text.push_str(&String::from_utf8_lossy(t));
    }
    if let Some((s, _)) = specials.first() {
        text.push_str(s);
    }
    for allowed in [Allowed::None, Allowed::All] {
        match enc.encode(&text, allowed) {
            Ok(ids) => {
                let back = enc.decode_bytes(&ids).expect("ids of the encoding decode");
                if covers {
                    assert_eq!(back, text.as_bytes());
                }
            }
            Err(Error::MissingByte(_) | Error::Regex(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
