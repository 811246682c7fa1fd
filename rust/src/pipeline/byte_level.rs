//! GPT-2's byte-level alphabet: the bijection between the 256 byte values and 256 printable
//! chars that byte-level BPE vocabularies are written in (HuggingFace's `bytes_char`).
//!
//! Invariant: `char_of(b)` and `byte_of(c)` are inverse on the 256 bytes; `byte_of` is `None`
//! for every other char. A `tokenizer.json` token string maps to bytes only if every char is
//! in the alphabet.
//!
//! Also here, ByteLevel's post-processing of offsets ([`trim_offsets`]): HF's
//! `process_offsets` with `trim_offsets: true`.

/// The char byte `b` is written as.
pub fn char_of(b: u8) -> char {
    TABLE.0[b as usize]
}

/// The byte that `c` stands for, if `c` is in the alphabet.
pub fn byte_of(c: char) -> Option<u8> {
    let i = c as usize;
    if i < TABLE.1.len() {
        let b = TABLE.1[i];
        (b >= 0).then_some(b as u8)
    } else {
        None
    }
}

/// The bytes a token string stands for, or `None` if a char is outside the alphabet.
pub fn token_bytes(s: &str) -> Option<Vec<u8>> {
    s.chars().map(byte_of).collect()
}

/// How many of `token`'s first and last chars are spaces to ByteLevel's trimming: the
/// alphabet's `Ġ` (a space byte) or a White_Space char (Rust's `char::is_whitespace`, which
/// HF's trimming uses). A token of spaces only counts its chars both ways.
pub fn edge_spaces(token: &str) -> (usize, usize) {
    let space = |c: &char| *c == 'Ġ' || c.is_whitespace();
    let lead = token.chars().take_while(space).count();
    if lead == 0 && !token.ends_with(|c: char| space(&c)) {
        return (0, 0);
    }
    (lead, token.chars().rev().take_while(space).count())
}

/// The offsets (`start`, `end`, in chars) of a token whose text has `(lead, trail)` edge
/// spaces ([`edge_spaces`]), as ByteLevel's `process_offsets` trims them: the leading spaces
/// leave the start (but for one space of a first token, at index 0 or at char 0, that
/// `add_prefix_space` put there), the trailing spaces leave the end; the start never passes
/// the end.
pub fn trim_offsets(
    (lead, trail): (usize, usize),
    (start, end): (usize, usize),
    at_index_0: bool,
    add_prefix_space: bool,
) -> (usize, usize) {
    let mut start = start;
    let mut end = end;
    if lead > 0 {
        let first = at_index_0 || start == 0;
        if !(first && add_prefix_space && lead == 1) {
            start = (start + lead).min(end);
        }
    }
    if trail > 0 && end >= trail {
        end = (end - trail).max(start);
    }
    (start, end)
}

struct Table([char; 256], [i16; 324]);

static TABLE: Table = build();

const fn printable(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

const fn build() -> Table {
    let mut to = ['\0'; 256];
    let mut from = [-1i16; 324];
    let mut n = 0u32;
    let mut b = 0usize;
    while b < 256 {
        let c = if printable(b as u8) {
            b as u32
        } else {
            n += 1;
            255 + n
        };
        // Every value is below 324, a valid char.
        to[b] = match char::from_u32(c) {
            Some(c) => c,
            None => '\0',
        };
        from[c as usize] = b as i16;
        b += 1;
    }
    Table(to, from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bijection() {
        assert_eq!(char_of(b' '), 'Ġ');
        assert_eq!(char_of(b'\n'), 'Ċ');
        assert_eq!(char_of(b'a'), 'a');
        for b in 0..=255u8 {
            assert_eq!(byte_of(char_of(b)), Some(b));
        }
        assert_eq!(byte_of('€'), None);
    }

    #[test]
    fn edge_spaces_count_chars_on_both_sides() {
        assert_eq!(edge_spaces("hello"), (0, 0));
        assert_eq!(edge_spaces("Ġhello"), (1, 0));
        assert_eq!(edge_spaces("ĠĠhiĠ"), (2, 1));
        assert_eq!(edge_spaces("hi\u{3000}"), (0, 1));
        assert_eq!(edge_spaces("ĠĠ"), (2, 2));
        assert_eq!(edge_spaces(""), (0, 0));
    }

    #[test]
    fn trim_keeps_a_first_prefix_space_only_with_add_prefix_space() {
        // " hello" as the first token, at index 0: the space the pre-tokenizer may have added.
        assert_eq!(
            trim_offsets(edge_spaces("Ġhello"), (0, 6), true, true),
            (0, 6)
        );
        assert_eq!(
            trim_offsets(edge_spaces("Ġhello"), (0, 6), true, false),
            (1, 6)
        );
        // Not first (neither index 0 nor char 0): the space goes.
        assert_eq!(
            trim_offsets(edge_spaces("Ġhello"), (4, 10), false, true),
            (5, 10)
        );
        // First at char 0 but not index 0 (after an added token of no width).
        assert_eq!(
            trim_offsets(edge_spaces("Ġhello"), (0, 6), false, true),
            (0, 6)
        );
        // Two leading spaces are trimmed even when first.
        assert_eq!(
            trim_offsets(edge_spaces("ĠĠhi"), (0, 4), true, true),
            (2, 4)
        );
        // Trailing spaces, and a token of spaces only: the start never passes the end.
        assert_eq!(
            trim_offsets(edge_spaces("hiĠ"), (3, 6), false, true),
            (3, 5)
        );
        assert_eq!(trim_offsets(edge_spaces("ĠĠ"), (3, 5), false, true), (5, 5));
        // An end shorter than the trailing run is left as it is.
        assert_eq!(trim_offsets(edge_spaces("Ġ"), (0, 0), false, false), (0, 0));
    }
}
