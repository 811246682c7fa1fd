//! The common JSON Lines record read in one pass: the field's string found, checked and
//! unescaped in the same scan that skips the rest of the line.
//!
//! Invariant: [`field`] answers only for a line `json.loads` takes as an object whose `field`
//! is a string with no lone surrogate, and then with exactly that string; for anything else
//! it says `None` ("not sure"), and the caller asks serde_json (`super::field_text`), which
//! names the line for the slow path or reads what this scanner leaves to it. So `None` is
//! never wrong, only slower: keys with escapes, `NaN`/`Infinity`, numbers longer than
//! [`MAX_NUMBER`] characters, nesting deeper than [`MAX_DEPTH`], the field missing or not a
//! string, a lone surrogate in the field, and every syntax error come back `None`.
//!
//! What it accepts is RFC 8259's grammar (Python's `json` module, `strict=True`): the four
//! whitespace bytes between tokens; strings without raw bytes below 0x20 and with only
//! `\" \\ \/ \b \f \n \r \t \uXXXX` escapes (a lone surrogate escape is accepted in a skipped
//! string, which Python keeps as it is); numbers `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`
//! of ASCII digits; `true`, `false`, `null`; arrays and objects; nothing after the object but
//! whitespace. A key that occurs twice keeps its last value, as a Python `dict` does. The
//! caller has checked that the line is UTF-8 and not blank.
//!
//! Why: serde_json scanned the field's string to skip it as a raw value, and the string was
//! scanned again to find and decode its escapes (one every few dozen bytes in text with line
//! breaks), a second pass and a function call per escape; that was most of the job's cost
//! beside encoding on the encoding threads.

/// Nesting depth up to which skipped values are read here (deeper: serde_json's business).
pub const MAX_DEPTH: usize = 64;
/// Characters of a number read here: Python refuses an integer of more than 4,300 digits,
/// which serde_json skips; such a line is left to the caller, which treats it as before.
pub const MAX_NUMBER: usize = 100;

/// Where the field's text is: `line[start..end]` (it held no escape), or the caller's buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    InLine(usize, usize),
    InBuf,
}

/// The field's text of `line` (see the module doc); unescaped into `buf` (cleared first)
/// when the string holds escapes.
pub fn field(line: &str, field: &str, buf: &mut String) -> Option<Found> {
    let mut p = Scan {
        b: line.as_bytes(),
        i: 0,
    };
    p.ws();
    p.eat(b'{')?;
    p.ws();
    let mut found = None;
    if p.peek() == Some(b'}') {
        p.i += 1;
    } else {
        loop {
            let key = p.plain_key()?;
            p.ws();
            p.eat(b':')?;
            p.ws();
            if key == field.as_bytes() {
                p.eat(b'"')?;
                found = Some(p.field_string(line, buf)?);
            } else {
                p.value(0)?;
            }
            p.ws();
            match p.next()? {
                b',' => p.ws(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    p.ws();
    if p.i != p.b.len() {
        return None;
    }
    found
}

/// The index of the first byte of `b` at or after `i` that ends a run of plain string bytes:
/// `"`, `\` or a control character (below 0x20); `b.len()` if none. Sixteen bytes a step.
#[inline]
fn plain_end(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 16) {
        let Ok(bytes) = <&[u8; 16]>::try_from(chunk) else {
            break;
        };
        let m = run_ends(bytes);
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    while let Some(&c) = b.get(i) {
        if ends_run(c) {
            return i;
        }
        i += 1;
    }
    i
}

#[inline(always)]
fn ends_run(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// Bit `k` set for each byte `bytes[k]` that [`ends_run`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn run_ends(bytes: &[u8; 16]) -> u32 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2, the only instruction set used here, is part of every x86_64 CPU (the
    // target's baseline), so each instruction exists where this runs. The one memory access
    // is `_mm_loadu_si128`, an unaligned 16-byte load from `bytes`, which is exactly 16
    // initialised bytes borrowed for the call.
    unsafe {
        let v = _mm_loadu_si128(bytes.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let slash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // below 0x20 as unsigned bytes: min(v, 0x1f) == v
        let ctrl = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, slash), ctrl)) as u32 & 0xffff
    }
}

/// Bit `k` set for each byte `bytes[k]` that [`ends_run`].
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn run_ends(bytes: &[u8; 16]) -> u32 {
    let mut m = 0u32;
    for (k, &c) in bytes.iter().enumerate() {
        m |= u32::from(ends_run(c)) << k;
    }
    m
}

/// The escape at `b[at]` (a `\`): the text it stands for and its length in bytes, or `None`
/// for anything but JSON's escapes. A `\uXXXX` surrogate escape stands for a char only as a
/// high-low pair; alone it is `Err(())` under `Some` (JSON allows it, Python keeps it as a lone
/// surrogate: what that means is the caller's choice).
#[inline]
pub(super) fn escape(b: &[u8], at: usize) -> Option<Result<(char, usize), ()>> {
    let c = match *b.get(at + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(b, at + 2)?;
            if let 0xD800..=0xDBFF = hi {
                if b.get(at + 6..at + 8) == Some(b"\\u") {
                    if let Some(lo @ 0xDC00..=0xDFFF) = hex4(b, at + 8) {
                        let c = char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
                        return Some(c.map(|c| (c, 12)).ok_or(()));
                    }
                }
                return Some(Err(()));
            }
            return Some(char::from_u32(hi).map(|c| (c, 6)).ok_or(()));
        }
        _ => return None,
    };
    Some(Ok((c, 2)))
}

/// The four hex digits at `bytes[at..at + 4]`, if they are.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits
        .iter()
        .try_fold(0u32, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.i += 1;
        }
    }

    /// A key without escapes, its bytes (between the quotes).
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let end = plain_end(self.b, start);
        if self.b.get(end) != Some(&b'"') {
            return None;
        }
        self.i = end + 1;
        Some(&self.b[start..end])
    }

    /// The rest of a string after its opening quote, checked and skipped.
    fn skip_string(&mut self) -> Option<()> {
        loop {
            let at = plain_end(self.b, self.i);
            match *self.b.get(at)? {
                b'"' => {
                    self.i = at + 1;
                    return Some(());
                }
                b'\\' => {
                    // A lone surrogate is a string's content here, as in Python.
                    self.i = at
                        + match escape(self.b, at)? {
                            Ok((_, len)) => len,
                            Err(()) => 6,
                        };
                }
                _ => return None, // a control character
            }
        }
    }

    /// The rest of the field's string after its opening quote: where its text is (`line` is
    /// the scanned line as a `str`, whose char boundaries every cut here falls on).
    fn field_string(&mut self, line: &str, buf: &mut String) -> Option<Found> {
        let start = self.i;
        let mut copied = start; // `line[start..copied]`, unescaped, is in `buf`
        let mut escaped = false;
        loop {
            let at = plain_end(self.b, self.i);
            match *self.b.get(at)? {
                b'"' => {
                    self.i = at + 1;
                    if !escaped {
                        return Some(Found::InLine(start, at));
                    }
                    buf.push_str(line.get(copied..at)?);
                    return Some(Found::InBuf);
                }
                b'\\' => {
                    // the escapes of text (line breaks, tabs, quotes) first, then the rest
                    let (c, len) = match self.b.get(at + 1) {
                        Some(b'n') => ('\n', 2),
                        Some(b't') => ('\t', 2),
                        Some(b'"') => ('"', 2),
                        Some(b'\\') => ('\\', 2),
                        _ => escape(self.b, at)?.ok()?, // a lone surrogate: not sure
                    };
                    if !escaped {
                        escaped = true;
                        buf.clear();
                        buf.reserve(self.b.len() - start);
                    }
                    buf.push_str(line.get(copied..at)?);
                    buf.push(c);
                    self.i = at + len;
                    copied = self.i;
                }
                _ => return None,
            }
        }
    }

    /// A value, checked and skipped; `depth` is how many arrays and objects hold it.
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.next()? {
            b'"' => self.skip_string(),
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.eat(b'"')?;
                    self.skip_string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.word(b"rue"),
            b'f' => self.word(b"alse"),
            b'n' => self.word(b"ull"),
            b'-' | b'0'..=b'9' => {
                self.i -= 1;
                self.number()
            }
            _ => None,
        }
    }

    fn word(&mut self, rest: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + rest.len())? != rest {
            return None;
        }
        self.i += rest.len();
        Some(())
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        (self.i - start <= MAX_NUMBER).then_some(())
    }
}
