//! GPT-2's byte-level alphabet: the bijection between the 256 byte values and 256 printable
//! chars that byte-level BPE vocabularies are written in (HuggingFace's `bytes_char`).
//!
//! Invariant: `char_of(b)` and `byte_of(c)` are inverse on the 256 bytes; `byte_of` is `None`
//! for every other char. A `tokenizer.json` token string maps to bytes only if every char is
//! in the alphabet.

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
}
