//! Reading `.tiktoken` files: one `base64(token) rank` line per token.
//!
//! Invariant: every file `parse` accepts, tiktoken's loader reads to the same ranks (padded
//! standard base64, whitespace, a decimal rank); it reports the first line it cannot read by
//! number. It is stricter than Python's lenient `b64decode`/`int` on odd inputs: callers fall
//! back to the Python parser on an error, which then accepts or explains the line.
//! Parsing in Rust makes a cold `get_encoding` cost a fraction of Python's line-by-line decode.

use crate::error::{Error, Result};
use crate::vocab::Rank;
use rustc_hash::FxHashMap;

fn b64_value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some((c - b'A') as u32),
        b'a'..=b'z' => Some((c - b'a') as u32 + 26),
        b'0'..=b'9' => Some((c - b'0') as u32 + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes padded standard base64; `None` if it is not.
pub fn decode_base64(s: &[u8]) -> Option<Vec<u8>> {
    if s.is_empty() || s.len() % 4 != 0 {
        return None;
    }
    let pad = s.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return None;
    }
    let body = &s[..s.len() - pad];
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in body {
        acc = (acc << 6) | b64_value(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover padding bits are ignored, as Python's base64.b64decode ignores them.
    Some(out)
}

/// Parses a whole `.tiktoken` file. `source` names it in errors.
pub fn parse(contents: &[u8], source: &str) -> Result<FxHashMap<Vec<u8>, Rank>> {
    let mut ranks = FxHashMap::with_capacity_and_hasher(contents.len() / 12, Default::default());
    for (i, line) in contents.split(|&b| b == b'\n').enumerate() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let bad = || {
            let shown = String::from_utf8_lossy(&line[..line.len().min(80)]).into_owned();
            Error::Vocab(format!(
                "{source}, line {}: expected 'base64-token rank', got {shown:?}",
                i + 1
            ))
        };
        // Like Python's bytes.split(): any run of ASCII whitespace separates fields.
        let mut parts = line
            .split(|b| b.is_ascii_whitespace())
            .filter(|f| !f.is_empty());
        let (Some(tok), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let token = decode_base64(tok).ok_or_else(bad)?;
        let rank: Rank = std::str::from_utf8(rank)
            .ok()
            .and_then(|r| r.parse().ok())
            .ok_or_else(bad)?;
        ranks.insert(token, rank);
    }
    Ok(ranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_known_values() {
        assert_eq!(decode_base64(b"aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64(b"IQ=="), Some(b"!".to_vec()));
        assert_eq!(decode_base64(b"YWJj"), Some(b"abc".to_vec()));
        assert_eq!(decode_base64(b"YWJ"), None);
        assert_eq!(decode_base64(b"YW=j"), None);
        assert_eq!(decode_base64(b"IR=="), Some(b"!".to_vec())); // padding bits ignored
    }

    #[test]
    fn parse_reports_the_bad_line() {
        let ok = parse(b"IQ== 0\nIg== 1\n", "x").unwrap();
        assert_eq!(ok[&b"!".to_vec()], 0);
        assert_eq!(ok[&b"\"".to_vec()], 1);
        let err = parse(b"IQ== 0\nnot base64 at all\n", "f.tiktoken").unwrap_err();
        assert!(err.to_string().contains("f.tiktoken, line 2"), "{err}");
        assert!(parse(b"IQ== x\n", "f").is_err());
    }
}
