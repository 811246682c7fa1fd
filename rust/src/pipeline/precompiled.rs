//! SentencePiece's own normalizer, `Precompiled` in a `tokenizer.json`: a rule table
//! (`precompiled_charsmap`, base64 in the file) compiled into a double-array trie of source
//! texts and a blob of their replacements, as SentencePiece's `normalizer.cc` reads it.
//!
//! Invariant: [`Precompiled::dest`] gives the chars and changes HF's `Precompiled::normalize`
//! hands to `NormalizedString::transform` (`None` where it leaves the text alone), so the
//! text and its alignments are HF's. HF reads the text a grapheme cluster at a time
//! (`unicode-segmentation`, the version in HF's build): a cluster of fewer than 6 bytes that
//! the trie maps is replaced whole; else each of its chars the trie maps is replaced, and the
//! others kept. A lookup takes the first (shortest) prefix of the chunk the trie holds, as
//! HF's `spm_precompiled` does. A replacement's chars replace the chunk's one for one, the
//! extra ones inserted, and where it is shorter the last change (the previous chunk's, if it
//! is empty) absorbs the difference: HF's `replace`, kept as it is, since every id of the
//! models that use it depends on it.
//!
//! With ferrotok's own key `ferrotok_sentencepiece` (a `.model` file read by
//! `python/ferrotok/sp_model.py`), the text is read as `sentencepiece`'s `normalizer.cc` reads
//! it instead: from each char on, the *longest* source text the trie holds there is replaced
//! (its `NormalizePrefix`), else the char is kept; no clusters. The two part where a cluster
//! starts with a mapped text and goes on (`ﬖ` and a combining mark: HF replaces the cluster
//! by `ﬖ`'s replacement, dropping the mark).
//!
//! Where HF's crate would index outside the trie (a malformed table), the walk ends there:
//! no match, rather than a panic.

use super::normalizers::bad;
use crate::error::Result;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Clone, Debug)]
pub struct Precompiled {
    /// The double array's units.
    units: Vec<u32>,
    /// The replacements, each ended by a NUL byte.
    normalized: Vec<u8>,
    /// Per ASCII char, whether the table maps it (as a one-char text); with
    /// `sentencepiece`, whether any source text starts with it.
    ascii_mapped: [bool; 128],
    /// Whether the text is read as sentencepiece reads it (see the module docs).
    sentencepiece: bool,
}

impl Precompiled {
    /// The table of a `Precompiled` normalizer object.
    pub fn from_json(v: &serde_json::Value) -> Result<Precompiled> {
        let text = v
            .get("precompiled_charsmap")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| bad("normalizer Precompiled without a `precompiled_charsmap` string"))?;
        let bytes = base64_decode(text)
            .ok_or_else(|| bad("normalizer Precompiled: `precompiled_charsmap` is not base64"))?;
        let mut p = Precompiled::from_bytes(&bytes)?;
        match v.get("ferrotok_sentencepiece") {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Bool(sp)) => p.set_sentencepiece(*sp),
            Some(_) => {
                return Err(bad(
                    "normalizer Precompiled: `ferrotok_sentencepiece` is not true or false",
                ))
            }
        }
        Ok(p)
    }

    /// Reads text as sentencepiece does (`true`) or as HF does.
    pub fn set_sentencepiece(&mut self, sentencepiece: bool) {
        self.sentencepiece = sentencepiece;
        for b in 0..128u8 {
            self.ascii_mapped[b as usize] = if sentencepiece {
                self.starts_a_source(b)
            } else {
                let c = [b];
                let text = std::str::from_utf8(&c).unwrap_or_default();
                self.transform(text).is_some()
            };
        }
    }

    /// The table from its binary form: a little-endian `u32` byte count of the trie, the
    /// trie's units (little-endian `u32`), then the replacements.
    pub fn from_bytes(b: &[u8]) -> Result<Precompiled> {
        let refuse = || bad("normalizer Precompiled: `precompiled_charsmap` is cut short");
        let size = b.get(..4).ok_or_else(refuse)?;
        let size = u32::from_le_bytes([size[0], size[1], size[2], size[3]]) as usize;
        // HF reads `size / 4` units.
        let trie = b.get(4..4 + size / 4 * 4).ok_or_else(refuse)?;
        let units = trie
            .chunks_exact(4)
            .map(|u| u32::from_le_bytes([u[0], u[1], u[2], u[3]]))
            .collect();
        let normalized = b[4 + size / 4 * 4..].to_vec();
        if std::str::from_utf8(&normalized).is_err() {
            return Err(bad(
                "normalizer Precompiled: the replacements of `precompiled_charsmap` are not UTF-8",
            ));
        }
        let mut p = Precompiled {
            units,
            normalized,
            ascii_mapped: [false; 128],
            sentencepiece: false,
        };
        p.set_sentencepiece(false);
        Ok(p)
    }

    /// Whether [`Precompiled::dest`] leaves `text` as it is, known without reading it by
    /// clusters: ASCII text without `\r` is a cluster a char (`\r\n` is one), and none of
    /// its chars is mapped.
    pub fn leaves(&self, text: &str) -> bool {
        // (sentencepiece's reading has no clusters: `\r` is a char like the others.)
        text.bytes().all(|b| {
            (self.sentencepiece || b != b'\r') && self.ascii_mapped.get(b as usize) == Some(&false)
        })
    }

    /// Walks the trie along `chunk`'s bytes, calling `found(length, value)` for each source
    /// text it holds that `chunk` starts with, shortest first, until `found` says stop.
    fn prefixes(&self, chunk: &[u8], mut found: impl FnMut(usize, usize) -> bool) {
        let at = |i: usize| self.units.get(i).copied();
        let has_leaf = |u: u32| (u >> 8) & 1 == 1;
        let value = |u: u32| (u & ((1 << 31) - 1)) as usize;
        let label = |u: u32| u & ((1 << 31) | 0xFF);
        let offset = |u: u32| ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize;
        let Some(mut unit) = at(0) else { return };
        let mut pos = offset(unit);
        for (i, &c) in chunk.iter().enumerate() {
            if c == 0 {
                return;
            }
            pos ^= c as usize;
            match at(pos) {
                Some(u) if label(u) == u32::from(c) => unit = u,
                _ => return,
            }
            pos ^= offset(unit);
            if has_leaf(unit) {
                match at(pos) {
                    Some(leaf) if !found(i + 1, value(leaf)) => return,
                    Some(_) => {}
                    None => return,
                }
            }
        }
    }

    /// The replacement text that starts at `start` in the blob.
    fn replacement(&self, start: usize) -> Option<&str> {
        let rest = self.normalized.get(start..)?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        std::str::from_utf8(&rest[..end]).ok()
    }

    /// The replacement of `chunk`: that of its first prefix the trie holds, if any (HF's).
    fn transform(&self, chunk: &str) -> Option<&str> {
        let mut first = None;
        self.prefixes(chunk.as_bytes(), |_, v| {
            first = Some(v);
            false
        });
        self.replacement(first?)
    }

    /// The longest source text `text` starts with and its replacement (sentencepiece's).
    fn longest(&self, text: &str) -> Option<(usize, &str)> {
        let mut longest = None;
        self.prefixes(text.as_bytes(), |len, v| {
            longest = Some((len, v));
            true
        });
        let (len, v) = longest?;
        // A source is UTF-8, so it ends where a char of `text` does.
        text.is_char_boundary(len)
            .then(|| self.replacement(v).map(|r| (len, r)))
            .flatten()
    }

    /// Whether some source text starts with byte `b`.
    fn starts_a_source(&self, b: u8) -> bool {
        let at = |i: usize| self.units.get(i).copied();
        let label = |u: u32| u & ((1 << 31) | 0xFF);
        let offset = |u: u32| ((u >> 10) << ((u & (1 << 9)) >> 6)) as usize;
        at(0)
            .and_then(|root| at(offset(root) ^ b as usize))
            .is_some_and(|u| b != 0 && label(u) == u32::from(b))
    }

    /// sentencepiece's reading of `text` (see the module docs), as [`Precompiled::dest`]
    /// gives it.
    fn dest_sentencepiece(&self, text: &str) -> Option<Vec<(char, isize)>> {
        let mut dest: Vec<(char, isize)> = Vec::with_capacity(text.len());
        let mut modified = false;
        let mut i = 0;
        while i < text.len() {
            if let Some((len, norm)) = self.longest(&text[i..]) {
                modified = true;
                replace(&mut dest, &text[i..i + len], norm);
                i += len;
                continue;
            }
            let c = text[i..].chars().next().unwrap_or_default();
            dest.push((c, 0));
            i += c.len_utf8().max(1);
        }
        modified.then_some(dest)
    }

    /// HF's transformations of `text` (see the module docs), or `None` if it leaves it as
    /// it is.
    pub fn dest(&self, text: &str) -> Option<Vec<(char, isize)>> {
        if self.leaves(text) {
            return None;
        }
        if self.sentencepiece {
            return self.dest_sentencepiece(text);
        }
        let mut dest: Vec<(char, isize)> = Vec::with_capacity(text.len());
        let mut modified = false;
        for_each_cluster(text, |g| {
            if let &[b] = g.as_bytes() {
                if !self.ascii_mapped[usize::from(b & 0x7F)] {
                    dest.push((char::from(b), 0));
                    return;
                }
            }
            if g.len() < 6 {
                if let Some(norm) = self.transform(g) {
                    modified = true;
                    replace(&mut dest, g, norm);
                    return;
                }
            }
            for (i, c) in g.char_indices() {
                let part = &g[i..i + c.len_utf8()];
                match self.transform(part) {
                    Some(norm) => {
                        modified = true;
                        replace(&mut dest, part, norm);
                    }
                    None => dest.push((c, 0)),
                }
            }
        });
        modified.then_some(dest)
    }
}

/// Calls `f` with each grapheme cluster of `text`, in order: `text.graphemes(true)`'s, with
/// the crate asked only about the stretches that need it. UAX #29 breaks between two ASCII
/// chars but `\r\n`; only a non-ASCII char (a Prepend before it; an Extend, ZWJ or
/// SpacingMark after it) joins an ASCII char to a neighbour. So an ASCII char other than `\r`
/// between two more such chars (or the text's ends) is a cluster alone, and every other
/// stretch starts and ends between two such chars (or at an end): a cluster boundary, where
/// the crate's segmentation of the stretch alone is its segmentation in the text.
fn for_each_cluster(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let plain = |x: u8| x < 0x80 && x != b'\r';
    let mut i = 0;
    while i < b.len() {
        // Here `i` is 0 or follows a plain byte.
        if plain(b[i]) && b.get(i + 1).is_none_or(|&x| plain(x)) {
            f(&text[i..i + 1]);
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && !(plain(b[j]) && plain(b[j - 1])) {
            j += 1;
        }
        // `j` is the text's end or at a plain (ASCII) byte: a char boundary.
        for g in text[i..j].graphemes(true) {
            f(g);
        }
        i = j;
    }
}

/// HF's `precompiled::replace`: `new`'s chars for `old`'s, the extra ones as inserted, or the
/// last change so far taking the difference.
fn replace(dest: &mut Vec<(char, isize)>, old: &str, new: &str) {
    let diff = new.chars().count() as isize - old.chars().count() as isize;
    dest.extend(new.chars().map(|c| (c, 0)));
    if diff > 0 {
        for (_, change) in dest.iter_mut().rev().take(diff as usize) {
            *change = 1;
        }
    } else if diff < 0 {
        if let Some((_, change)) = dest.last_mut() {
            *change += diff;
        }
    }
}

/// Standard base64 (with or without padding), as HF's `base64::decode` reads the table.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = s.trim_end_matches('=').as_bytes();
    if body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= value(c)? << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_reads_what_it_should() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("a").is_none());
        assert!(base64_decode("a$==").is_none());
    }

    #[test]
    fn hfs_replace_keeps_its_odd_changes() {
        // HF's own test: "™\x1eg" to "TMg": ™ -> "TM" (one inserted), \x1e -> "" (the last
        // change so far takes the -1), g kept.
        let mut dest = Vec::new();
        replace(&mut dest, "™", "TM");
        replace(&mut dest, "\x1e", "");
        dest.push(('g', 0));
        assert_eq!(dest, [('T', 0), ('M', 0), ('g', 0)]);
        let mut dest = Vec::new();
        replace(&mut dest, "™", "TM");
        assert_eq!(dest, [('T', 0), ('M', 1)]);
        replace(&mut dest, "ab", "c");
        assert_eq!(dest, [('T', 0), ('M', 1), ('c', -1)]);
    }

    #[test]
    fn leaves_is_dest_none_on_ascii_text() {
        // A table that maps "a" to "b" (a trie of the one key "a", value 0 -> "b\0").
        // Darts layout: root unit 0 with offset 1 (children at 1 ^ c); the child for 'a'
        // (0x61) at 1 ^ 0x61 = 0x60 with label 0x61, leaf flag and offset 0x60 ^ 0x61 = 1 to
        // its value unit at 0x60 ^ 1 = 0x61, value 0.
        let mut units = vec![0u32; 0x62];
        units[0] = 1 << 10; // offset 1
        units[0x60] = 0x61 | (1 << 8) | (1 << 10); // label 'a', has leaf, offset 1
        units[0x61] = 0; // value: byte 0 of the replacements
        let mut bytes = ((units.len() * 4) as u32).to_le_bytes().to_vec();
        for u in &units {
            bytes.extend_from_slice(&u.to_le_bytes());
        }
        bytes.extend_from_slice(b"b\0");
        let p = Precompiled::from_bytes(&bytes).unwrap();
        assert_eq!(p.transform("a"), Some("b"));
        assert_eq!(p.transform("x"), None);
        assert!(p.ascii_mapped[b'a' as usize] && !p.ascii_mapped[b'x' as usize]);
        for text in ["xyz", "xaz", "x\r\ny", "", "é"] {
            let general = {
                let mut dest = Vec::new();
                let mut modified = false;
                for g in text.graphemes(true) {
                    match p.transform(g) {
                        Some(n) => {
                            modified = true;
                            replace(&mut dest, g, n);
                        }
                        None => dest.extend(g.chars().map(|c| (c, 0))),
                    }
                }
                modified.then_some(dest)
            };
            assert_eq!(p.dest(text), general, "{text:?}");
            assert!(!p.leaves(text) || general.is_none(), "{text:?}");
        }
        assert_eq!(p.dest("xaz").unwrap(), [('x', 0), ('b', 0), ('z', 0)]);
        // sentencepiece's reading: "a" and a mark after it is "b" and the mark (HF maps the
        // cluster by its prefix "a" to "b" whole); `\r` is no cluster's start.
        let mut p = p;
        p.set_sentencepiece(true);
        assert_eq!(p.dest("a\u{301}").unwrap(), [('b', 0), ('\u{301}', 0)]);
        assert!(p.leaves("x\r\ny") && !p.leaves("xa"));
        p.set_sentencepiece(false);
        assert_eq!(p.dest("a\u{301}").unwrap(), [('b', -1)]);
    }

    #[test]
    fn clusters_are_the_crates() {
        // Chars of every joining kind: CR and LF, Prepend (U+0600, U+110BD), Extend (marks,
        // U+200C, variation selectors, emoji modifiers), ZWJ, SpacingMark (U+0903), regional
        // indicators, Hangul jamo, and plain ASCII.
        let pool = [
            "a",
            "b",
            " ",
            ".",
            "\r",
            "\n",
            "\r\n",
            "\u{600}",
            "\u{110bd}",
            "\u{301}",
            "\u{200c}",
            "\u{fe0f}",
            "\u{1f3fd}",
            "\u{200d}",
            "\u{903}",
            "\u{1f1fa}",
            "\u{1f1f8}",
            "\u{1100}",
            "\u{1161}",
            "\u{11a8}",
            "\u{ac00}",
            "é",
            "中",
            "😀",
            "\u{e01}\u{e33}",
            "\0",
        ];
        let mut rng = crate::test_rng::Rng(0xC105_7E55_0000_0001);
        for _ in 0..20_000 {
            let text: String = (0..rng.below(14)).map(|_| *rng.pick(&pool)).collect();
            let mut got = Vec::new();
            for_each_cluster(&text, |g| got.push(g.to_owned()));
            let want: Vec<String> = text.graphemes(true).map(str::to_owned).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn random_tables_never_panic() {
        // Tables of random units (walks that leave the array, values past the replacements
        // or inside a char, labels that never match) on random texts: an answer, never a
        // panic, and the shortcut agreeing with the cluster path.
        let mut rng = crate::test_rng::Rng(0x5EED_9C0F_0000_0001);
        let pool = [
            "a", "b", "\r\n", "\r", " ", "é", "e\u{301}", "中", "😀", "\0", "™",
        ];
        for _ in 0..300 {
            let n = 1 + rng.below(64);
            let mut bytes = ((n * 4) as u32).to_le_bytes().to_vec();
            for _ in 0..n {
                let u = if rng.below(2) == 0 {
                    rng.next() as u32
                } else {
                    (rng.below(n) as u32) << 10 | (1 << 8) | rng.below(256) as u32
                };
                bytes.extend_from_slice(&u.to_le_bytes());
            }
            bytes.extend_from_slice("xé™\0ab\0\0".as_bytes());
            let mut p = Precompiled::from_bytes(&bytes).unwrap();
            for sentencepiece in [false, true] {
                p.set_sentencepiece(sentencepiece);
                for _ in 0..20 {
                    let text: String = (0..rng.below(8)).map(|_| *rng.pick(&pool)).collect();
                    let dest = p.dest(&text);
                    assert!(!p.leaves(&text) || dest.is_none());
                }
            }
        }
    }

    #[test]
    fn a_short_or_broken_table_is_refused_or_matches_nothing() {
        assert!(Precompiled::from_bytes(&[1, 0]).is_err());
        assert!(Precompiled::from_bytes(&[8, 0, 0, 0, 1, 2, 3]).is_err());
        // A trie of one unit whose walk leaves the array at once: no match, no panic.
        let p = Precompiled::from_bytes(&[4, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F]).unwrap();
        assert!(p.dest("abc").is_none());
        let empty = Precompiled::from_bytes(&[0, 0, 0, 0]).unwrap();
        assert!(empty.dest("abc").is_none());
    }
}
