//! Token ids written as text, as `ferrotok encode` writes them (`15339 1917 0`, one id a
//! line, or `15339, 1917`), read in one pass over the bytes.
//!
//! Promise: for text made only of ASCII digits and the separators space, `\t`, `\n`,
//! `\x0b`, `\x0c`, `\r` and `,` (all of which Python's `[\s,]+` also splits on), [`parse`]
//! gives each run of digits as a number, in order, as `int()` would read it. For any other
//! text, or a number past the largest id the caller allows, it gives `None`: the caller then
//! uses its own checked parser, which knows the rest of the syntax (JSON lists, Unicode
//! spaces) and names what is wrong. So this is a fast path that never changes an answer, only how soon it comes.
//!
//! Why it is fast: Python's way, `split()` then `int()` on each part, makes a `str` and an
//! `int` object per id; here each byte is a compare or two and, for a digit, a multiply-add
//! (~15 ns an id, most of it the mispredicted end of each run of digits).

/// The ids in `text`, or `None` if it holds anything but ASCII digits and separators, or a
/// number above `max_id`.
///
/// ```
/// use ferrotok::id_text::parse;
/// assert_eq!(parse(b"15339 1917,\n0", 200_000), Some(vec![15339, 1917, 0]));
/// assert_eq!(parse(b" 007 ", 200_000), Some(vec![7]));
/// assert_eq!(parse(b"12 -3", 200_000), None);
/// assert_eq!(parse(b"200001", 200_000), None);
/// ```
pub fn parse(text: &[u8], max_id: u32) -> Option<Vec<u32>> {
    // Ids written by `encode` average ~5 bytes with their separator.
    let mut ids = Vec::with_capacity(text.len() / 5 + 1);
    // The number being read, in 64 bits so that one more digit after a value of at most
    // `max_id` cannot overflow it; `None` between numbers.
    let mut current: Option<u64> = None;
    for &b in text {
        match b {
            b'0'..=b'9' => {
                let value = current.unwrap_or(0) * 10 + u64::from(b - b'0');
                if value > u64::from(max_id) {
                    return None;
                }
                current = Some(value);
            }
            b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b',' => {
                if let Some(value) = current.take() {
                    // At most `max_id` (checked above), so this never fails.
                    ids.push(u32::try_from(value).ok()?);
                }
            }
            _ => return None,
        }
    }
    if let Some(value) = current {
        ids.push(u32::try_from(value).ok()?);
    }
    Some(ids)
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn parse_all(text: &[u8]) -> Option<Vec<u32>> {
        parse(text, u32::MAX)
    }

    #[test]
    fn reads_every_separator_and_the_ends() {
        assert_eq!(parse_all(b""), Some(vec![]));
        assert_eq!(parse_all(b" ,\t\n"), Some(vec![]));
        assert_eq!(
            parse_all(b"1\t2\n3\x0b4\x0c5\r6,7 8\r\n9"),
            Some((1..=9).collect())
        );
        assert_eq!(parse_all(b"0"), Some(vec![0]));
        assert_eq!(parse_all(b"4294967295"), Some(vec![u32::MAX]));
        assert_eq!(parse_all(b"00000000000000000000042"), Some(vec![42]));
        assert_eq!(parse(b"1 99", 99), Some(vec![1, 99]));
        assert_eq!(parse(b"1 100", 99), None);
        assert_eq!(parse(b"0100", 99), None);
        assert_eq!(parse(b"0099", 99), Some(vec![99]));
    }

    #[test]
    fn gives_up_on_anything_else() {
        for text in [
            &b"1 x"[..],
            b"[1, 2]",
            b"-1",
            b"+1",
            b"1.0",
            b"1\x1c2",
            "1\u{a0}2".as_bytes(),
            b"4294967296",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse(text, u32::MAX), None, "{text:?}");
        }
    }

    #[test]
    fn agrees_with_a_split_and_parse() {
        // Every text of up to 4 bytes over a small alphabet, against the obvious reading.
        let alphabet = b"0 9,\n";
        for len in 0..=4u32 {
            for mut code in 0..alphabet.len().pow(len) {
                let mut text = Vec::new();
                for _ in 0..len {
                    text.push(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                let expected: Vec<u32> = std::str::from_utf8(&text)
                    .unwrap_or_default()
                    .split([' ', ',', '\n'])
                    .filter(|s| !s.is_empty())
                    .map(|s| s.parse().unwrap_or(u32::MAX))
                    .collect();
                assert_eq!(parse(&text, u32::MAX), Some(expected), "{text:?}");
            }
        }
    }
}
