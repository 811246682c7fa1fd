//! Character classes for the hand-written splitters, and a UTF-8 cursor.
//!
//! Invariant: for every `char` c, `CharClasses::get().of(c)` has bit
//! - [`L`] iff the reference engine's `\p{L}` matches c,
//! - [`N`] iff `\p{N}` matches c,
//! - [`S`] iff `\s` matches c,
//! - [`U`] iff `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]` matches c,
//! - [`W`] iff `[\p{Ll}\p{Lm}\p{Lo}\p{M}]` matches c,
//! - [`NL`] iff c is `\r` or `\n`;
//!
//! for every code point c below U+0800, `class2[c]` is `of(c)`; and for every three-byte
//! char c (U+0800 to U+FFFF), its bit in `letter3` is set iff c has [`L`], in `upper_lower3`
//! iff c has both [`U`] and [`W`]. `CharClasses::marks_as_letters()` is the same but for
//! [`L`], which it sets iff `[\p{L}\p{M}]` matches c. `CharClasses::han_apart()` is the same
//! but for [`U`] and [`W`], whose classes it reads with `&&[^\p{Han}]`, and [`H`], which it
//! sets iff `\p{Han}` matches c (the other tables set [`H`] for no char).
//! `CharClasses::ascii_case()` is the same but for [`U`] and [`W`], which it sets iff
//! `[\p{L}&&[^a-z]]` and `[\p{L}&&[^A-Z]]` match c (the letter classes Llama 4's pattern
//! writes as `(?=[\p{L}])([^a-z])` and `(?=[\p{L}])([^A-Z])`).
//!
//! Why this holds: the table is built at first use from the class ranges that
//! `regex-syntax` produces for exactly those class expressions, and fancy-regex
//! hands every character class to regex-automata, which gets its classes from the
//! same `regex-syntax` crate (one version in the lock file, so one Unicode
//! version). No Unicode data is copied into this crate.

use crate::runtime::process_once::ProcessOnce;

use regex_syntax::hir::{Class, HirKind};

use crate::error::{Error, Result};

/// `\p{L}`.
pub(crate) const L: u8 = 1;
/// `\p{N}`.
pub(crate) const N: u8 = 2;
/// `\s` (Unicode White_Space).
pub(crate) const S: u8 = 4;
/// o200k's "upper" class `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
pub(crate) const U: u8 = 8;
/// o200k's "lower" class `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
pub(crate) const W: u8 = 16;
/// `\r` or `\n` (set by hand: two ASCII chars).
pub(crate) const NL: u8 = 32;
/// `\p{Han}`, in [`CharClasses::han_apart`]'s table only.
pub(crate) const H: u8 = 64;
/// Not a character: the cursor is at the end of the text.
pub(crate) const END: u8 = 128;

/// The class expressions, with the bit each one sets.
const SOURCES: [(&str, u8); 5] = [
    (r"\p{L}", L),
    (r"\p{N}", N),
    (r"\s", S),
    (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]", U),
    (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]", W),
];

const BLOCK_BITS: u32 = 8;
const BLOCK: usize = 1 << BLOCK_BITS;
const N_BLOCKS: usize = (char::MAX as usize + 1) >> BLOCK_BITS;

/// A two-level table from code point to class bits, plus a flat ASCII table.
/// A maximal run of whitespace chars, as [`CharClasses::space_run`] finds it.
pub(crate) struct SpaceRun {
    /// One past the run.
    pub end: usize,
    /// Start of the run's last char.
    pub last: usize,
    /// One past the run's last `\r`/`\n` (both are one byte), if it has one.
    pub last_nl_end: Option<usize>,
    /// Number of chars in the run.
    pub count: usize,
}

pub(crate) struct CharClasses {
    pub(crate) ascii: [u8; 128],
    /// Block number of each 256-code-point block.
    index: Box<[u16]>,
    /// The distinct blocks, `BLOCK` entries each.
    blocks: Box<[u8]>,
    /// The class bits of every code point below U+0800 (ASCII and the two-byte chars: Latin-1
    /// and Latin Extended, Greek, Cyrillic, Armenian, Hebrew, Arabic, ...), 2 KiB: a two-byte
    /// char's class is one load, with no call and no block index.
    class2: Box<[u8; 0x800]>,
    /// Three-byte chars (U+0800 to U+FFFF) in `\p{L}`, one bit a code point (8 KiB).
    pub(crate) letter3: Box<Bits3>,
    /// Three-byte chars in both U and W (`\p{Lm}`, `\p{Lo}`, `\p{M}`: CJK, kana, Hangul),
    /// which continue both of o200k's letter runs.
    pub(crate) upper_lower3: Box<Bits3>,
}

/// One bit per code point below U+10000.
pub(crate) type Bits3 = [u64; 1 << 10];

impl CharClasses {
    /// The process-wide table (built once, a few milliseconds).
    pub(crate) fn get() -> &'static CharClasses {
        static TABLE: ProcessOnce<CharClasses> = ProcessOnce::new();
        TABLE.get_or_init(|| CharClasses::build(&[]))
    }

    /// The table with [`L`] for `[\p{L}\p{M}]` instead of `\p{L}` (and every other bit as in
    /// [`CharClasses::get`]'s): for patterns whose letter runs take marks and whose other runs
    /// stop at them (Qwen3.5's; see `pipeline/splitters.rs`).
    pub(crate) fn marks_as_letters() -> &'static CharClasses {
        static TABLE: ProcessOnce<CharClasses> = ProcessOnce::new();
        TABLE.get_or_init(|| CharClasses::build(&[(r"[\p{L}\p{M}]", L)]))
    }

    /// The table with [`U`] and [`W`] for o200k's letter classes without `\p{Han}`, and [`H`]
    /// for `\p{Han}` (every other bit as in [`CharClasses::get`]'s): for patterns that take
    /// Han runs apart (Kimi K2's; see `o200k.rs`).
    pub(crate) fn han_apart() -> &'static CharClasses {
        static TABLE: ProcessOnce<CharClasses> = ProcessOnce::new();
        TABLE.get_or_init(|| {
            CharClasses::build(&[
                (r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]", U),
                (r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]", W),
                (r"\p{Han}", H),
            ])
        })
    }

    /// The table with [`U`] for `[\p{L}&&[^a-z]]` and [`W`] for `[\p{L}&&[^A-Z]]` (every
    /// other bit as in [`CharClasses::get`]'s): o200k's letter classes as Llama 4's pattern
    /// writes them, by ASCII case alone. Every letter but `A-Z` and `a-z` is in both, and marks
    /// in neither (see `o200k.rs`).
    pub(crate) fn ascii_case() -> &'static CharClasses {
        static TABLE: ProcessOnce<CharClasses> = ProcessOnce::new();
        TABLE
            .get_or_init(|| CharClasses::build(&[(r"[\p{L}&&[^a-z]]", U), (r"[\p{L}&&[^A-Z]]", W)]))
    }

    /// End of the maximal run of chars whose class has `bit`, starting at `k`.
    #[inline(always)]
    pub(crate) fn run_end(&self, b: &[u8], mut k: usize, bit: u8) -> usize {
        if bit == L {
            k = ascii_run_end(b, k, AsciiRun::Letter);
        }
        loop {
            if bit == L {
                k = run2_end(b, k, &self.class2, L);
                k = run3_end(b, k, &self.letter3);
            }
            let (d, l) = self.at(b, k);
            if d & bit == 0 {
                return k;
            }
            k += l;
        }
    }

    /// End of `\p{N}{1,3}` whose first char (`N`, of `len` bytes) starts at `i`: up to two
    /// more `N` chars (cl100k and o200k).
    #[inline(always)]
    pub(crate) fn digits3_end(&self, b: &[u8], i: usize, len: usize) -> usize {
        let mut k = i + len;
        for _ in 0..2 {
            let (d, l) = self.at(b, k);
            if d & N == 0 {
                break;
            }
            k += l;
        }
        k
    }

    /// The maximal whitespace (`S`) run starting at `i`, scanned once; each pattern family
    /// then decides from it where its `\s` alternatives end.
    #[inline(always)]
    pub(crate) fn space_run(&self, b: &[u8], i: usize) -> SpaceRun {
        let mut run = SpaceRun {
            end: i,
            last: i,
            last_nl_end: None,
            count: 0,
        };
        loop {
            let (e, l) = self.at(b, run.end);
            if e & S == 0 {
                return run;
            }
            if e & NL != 0 {
                run.last_nl_end = Some(run.end + 1);
            }
            run.last = run.end;
            run.count += 1;
            run.end += l;
        }
    }

    /// The table of [`SOURCES`], each bit's source replaced by the one `instead` gives for it,
    /// if any, and with `instead`'s bits that no source has.
    fn build(instead: &[(&str, u8)]) -> CharClasses {
        let mut flat = vec![0u8; N_BLOCKS * BLOCK];
        let replaced = |(src, bit): (&'static str, u8)| {
            let other = instead.iter().find(|&&(_, b)| b == bit);
            (other.map_or(src, |&(s, _)| s), bit)
        };
        let extra = instead
            .iter()
            .filter(|(_, b)| SOURCES.iter().all(|(_, s)| s != b));
        for (src, bit) in SOURCES.into_iter().map(replaced).chain(extra.copied()) {
            for (lo, hi) in class_ranges(src) {
                for slot in &mut flat[lo as usize..=hi as usize] {
                    *slot |= bit;
                }
            }
        }
        flat[b'\r' as usize] |= NL;
        flat[b'\n' as usize] |= NL;
        let mut ascii = [0u8; 128];
        ascii.copy_from_slice(&flat[..128]);
        let mut index = Vec::with_capacity(N_BLOCKS);
        let mut blocks: Vec<u8> = Vec::new();
        let mut seen: std::collections::HashMap<&[u8], u16> = std::collections::HashMap::new();
        for chunk in flat.chunks_exact(BLOCK) {
            let next = seen.len() as u16;
            let id = *seen.entry(chunk).or_insert_with(|| {
                blocks.extend_from_slice(chunk);
                next
            });
            index.push(id);
        }
        let bits3 = |all: u8| {
            let mut bits = Box::new([0u64; 1 << 10]);
            for (cp, &c) in flat.iter().enumerate().take(1 << 16).skip(0x800) {
                if c & all == all {
                    bits[cp / 64] |= 1 << (cp % 64);
                }
            }
            bits
        };
        let mut class2 = Box::new([0u8; 0x800]);
        class2.copy_from_slice(&flat[..0x800]);
        CharClasses {
            ascii,
            class2,
            letter3: bits3(L),
            upper_lower3: bits3(U | W),
            index: index.into_boxed_slice(),
            blocks: blocks.into_boxed_slice(),
        }
    }

    /// Class bits of a code point (0 for anything outside the Unicode range).
    #[inline]
    pub(crate) fn of_u32(&self, cp: u32) -> u8 {
        if cp < 128 {
            return self.ascii[cp as usize];
        }
        match self.index.get((cp >> BLOCK_BITS) as usize) {
            Some(&blk) => {
                let at = ((blk as usize) << BLOCK_BITS) | (cp as usize & (BLOCK - 1));
                self.blocks.get(at).copied().unwrap_or(0)
            }
            None => 0,
        }
    }

    /// Class bits of a char.
    #[cfg(test)]
    pub(crate) fn of(&self, c: char) -> u8 {
        self.of_u32(c as u32)
    }

    /// Class bits and byte length of the char starting at byte `i` of `b`
    /// (`(END, 0)` at or past the end).
    ///
    /// `b` must be the bytes of a `str` and `i` a char boundary; then the
    /// result is exact. On any other input it still never panics.
    #[inline(always)]
    pub(crate) fn at(&self, b: &[u8], i: usize) -> (u8, usize) {
        match b.get(i) {
            None => (END, 0),
            Some(&x) if x < 0x80 => (self.ascii[x as usize], 1),
            // A two-byte char: `decode_multibyte`'s code point (below U+0800 whatever `b`
            // holds), looked up in `class2`, which equals `of_u32` there.
            Some(&x) if x < 0xE0 => {
                let cont = b.get(i + 1).copied().unwrap_or(0x80);
                (self.class2[two_byte_cp(x, cont)], 2)
            }
            Some(&x) => self.at_multibyte(b, i, x),
        }
    }

    #[inline(never)]
    fn at_multibyte(&self, b: &[u8], i: usize, b0: u8) -> (u8, usize) {
        let (cp, len) = decode_multibyte(b, i, b0);
        (self.of_u32(cp), len)
    }
}

/// The code point of a two-byte char from its lead byte `b0` and continuation byte `b1`
/// (below U+0800 for any two bytes, so an index of `class2`).
#[inline(always)]
pub(crate) fn two_byte_cp(b0: u8, b1: u8) -> usize {
    (b0 as usize & 0x1F) << 6 | (b1 as usize & 0x3F)
}

/// Skips the two-byte chars from char boundary `k` on whose class has `bit` (`class2` is
/// [`CharClasses`]' table of them): returns the first position at or after `k` that does not
/// start such a char.
///
/// Why: a Russian, Greek, Hebrew or Arabic word is a run of two-byte chars, each of which
/// [`CharClasses::at`] would take with a branch on its length; here the loop knows the length
/// (as [`run3_end`] does for CJK).
#[inline(always)]
fn run2_end(b: &[u8], mut k: usize, class2: &[u8; 0x800], bit: u8) -> usize {
    while let Some(&[b0, b1]) = b.get(k..).and_then(|w| w.first_chunk::<2>()) {
        if b0 & 0xE0 != 0xC0 || class2[two_byte_cp(b0, b1)] & bit == 0 {
            break;
        }
        k += 2;
    }
    k
}

/// Skips the three-byte chars from char boundary `k` on whose bit is set in `bits`: returns
/// the first position at or after `k` that does not start such a char.
///
/// Why: on CJK text a letter run is tens of three-byte chars, and decoding each with the
/// general [`CharClasses::at`] (a call, a branch on the char's length, two table loads) makes
/// splitting multilingual text up to 19% slower than one bit test in an 8 KiB table that
/// stays in L1.
#[inline(always)]
pub(crate) fn run3_end(b: &[u8], mut k: usize, bits: &Bits3) -> usize {
    while let Some(&[b0, b1, b2]) = b.get(k..).and_then(|w| w.first_chunk::<3>()) {
        if b0 & 0xF0 != 0xE0 {
            break;
        }
        // Valid UTF-8 after a lead byte E0-EF: two continuation bytes, 6 bits each. Decoded
        // here from the three bytes already in hand, not through `decode_multibyte` and its
        // read per byte.
        let cp = (b0 as usize & 0x0F) << 12 | (b1 as usize & 0x3F) << 6 | (b2 as usize & 0x3F);
        if bits[cp / 64] >> (cp % 64) & 1 == 0 {
            break;
        }
        k += 3;
    }
    k
}

/// Which ASCII bytes [`ascii_run_end`] skips.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum AsciiRun {
    /// `A-Z` and `a-z`.
    Letter,
    /// `A-Z`.
    Upper,
    /// `a-z`.
    Lower,
}

/// The high bit of every byte of a `u64`.
pub(crate) const HI: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// High bit of each byte lane of `x` (every lane < 0x80) set iff that lane is in `lo..=hi`
/// (ASCII bounds). Adding `0x80 - lo` to a lane below 0x80 sets its high bit iff the lane
/// is at least `lo`, and never carries into the next lane (at most 0x7F + 0x80 = 0xFF).
#[inline(always)]
fn lanes_in(x: u64, lo: u8, hi: u8) -> u64 {
    let ge_lo = x.wrapping_add((0x80 - lo as u64) * ONES);
    let gt_hi = x.wrapping_add((0x80 - (hi as u64 + 1)) * ONES);
    ge_lo & !gt_hi & HI
}

/// Skips the ASCII bytes of kind `run` from `k`, eight at a time: returns the first position
/// at or after `k` whose byte is not of that kind, or where fewer than eight bytes remain
/// (callers finish the run byte by byte, which also handles non-ASCII chars).
///
/// Why: a word's end is a data-dependent branch per byte in a byte loop, and the predictor
/// misses it about once a word; here the end of a short run is a count of trailing zeros.
#[inline(always)]
pub(crate) fn ascii_run_end(b: &[u8], mut k: usize, run: AsciiRun) -> usize {
    while let Some(w) = b.get(k..).and_then(|r| r.first_chunk::<8>()) {
        let v = u64::from_le_bytes(*w);
        let ascii = !v & HI;
        let x = v & !HI;
        let inside = match run {
            AsciiRun::Letter => lanes_in(x | (0x20 * ONES), b'a', b'z'),
            AsciiRun::Upper => lanes_in(x, b'A', b'Z'),
            AsciiRun::Lower => lanes_in(x, b'a', b'z'),
        } & ascii;
        let outside = !inside & HI;
        if outside != 0 {
            return k + (outside.trailing_zeros() / 8) as usize;
        }
        k += 8;
    }
    k
}

/// Decodes the non-ASCII char whose first byte `b0` is at `i` (valid UTF-8
/// assumed; never panics, and always returns a length of at least 1).
#[inline(always)]
pub(crate) fn decode_multibyte(b: &[u8], i: usize, b0: u8) -> (u32, usize) {
    let cont = |k: usize| (b.get(i + k).copied().unwrap_or(0x80) & 0x3F) as u32;
    if b0 < 0xE0 {
        (((b0 as u32 & 0x1F) << 6) | cont(1), 2)
    } else if b0 < 0xF0 {
        (((b0 as u32 & 0x0F) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (
            ((b0 as u32 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            4,
        )
    }
}

/// The code point ranges of a class expression, as regex-syntax parses it.
pub(crate) fn class_ranges(src: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(src)
        .expect("built-in class expression parses");
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .map(|r| (r.start() as u32, r.end() as u32))
            .collect(),
        _ => unreachable!("built-in class expression is a Unicode class"),
    }
}

/// A scanner's piece `text[start..end]`, which is never empty: a bad or empty range (a
/// scanner bug) is an error instead of a panic or an endless loop.
#[inline(always)]
pub(crate) fn scanned_piece(text: &str, start: usize, end: usize) -> Result<&str> {
    if end <= start {
        return Err(bad_boundary(start, end));
    }
    piece(text, start, end)
}

/// [`scanned_piece`] as bytes, for a caller that has proved `start` and `end` char boundaries
/// (the bytes are not checked for that).
#[inline(always)]
pub(crate) fn scanned_bytes(text: &[u8], start: usize, end: usize) -> Result<&[u8]> {
    if end <= start {
        return Err(bad_boundary(start, end));
    }
    text.get(start..end).ok_or_else(|| bad_boundary(start, end))
}

/// `text[start..end]`, or an error instead of a panic for a bad boundary (a bug).
#[inline(always)]
pub(crate) fn piece(text: &str, start: usize, end: usize) -> Result<&str> {
    text.get(start..end).ok_or_else(|| bad_boundary(start, end))
}

#[cold]
fn bad_boundary(start: usize, end: usize) -> Error {
    Error::Regex(format!(
        "internal splitter error: bad piece boundary {start}..{end}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_runs_stop_where_the_byte_loop_stops() {
        let is = |run: AsciiRun, x: u8| match run {
            AsciiRun::Letter => x.is_ascii_alphabetic(),
            AsciiRun::Upper => x.is_ascii_uppercase(),
            AsciiRun::Lower => x.is_ascii_lowercase(),
        };
        // Every byte value at every lane, after runs of every length up to 17.
        for run in [AsciiRun::Letter, AsciiRun::Upper, AsciiRun::Lower] {
            let fill = if run == AsciiRun::Upper { b'Q' } else { b'q' };
            for stop in 0..=255u8 {
                for n in 0..18 {
                    let mut b = vec![fill; n];
                    b.push(stop);
                    b.extend_from_slice(b"xxxxxxxx");
                    let got = ascii_run_end(&b, 0, run);
                    let want = (0..b.len()).find(|&k| !is(run, b[k])).unwrap_or(b.len());
                    // It may stop early only where fewer than 8 bytes remain.
                    assert!(
                        got <= want && (got == want || b.len() - got < 8),
                        "{n} {stop}"
                    );
                }
            }
        }
    }

    #[test]
    fn ascii_classes() {
        let t = CharClasses::get();
        for b in 0u8..128 {
            let c = b as char;
            let mut want = 0;
            if c.is_ascii_alphabetic() {
                want |= L | if c.is_ascii_uppercase() { U } else { W };
            }
            if c.is_ascii_digit() {
                want |= N;
            }
            if matches!(b, 9..=13 | 32) {
                want |= S;
            }
            if matches!(b, b'\r' | b'\n') {
                want |= NL;
            }
            assert_eq!(t.of(c), want, "class of {c:?}");
        }
    }

    #[test]
    fn table_equals_ranges_everywhere() {
        let t = CharClasses::get();
        for (src, bit) in SOURCES {
            let ranges = class_ranges(src);
            let mut k = 0;
            for cp in 0u32..=char::MAX as u32 {
                while k < ranges.len() && ranges[k].1 < cp {
                    k += 1;
                }
                let inside = k < ranges.len() && ranges[k].0 <= cp;
                assert_eq!(t.of_u32(cp) & bit != 0, inside, "{src} at U+{cp:04X}");
                assert_eq!(t.of_u32(cp) & NL != 0, cp == 10 || cp == 13);
            }
        }
    }

    /// Kimi K2's table: Han chars keep `L` (`N` for 〇, a number; neither for the radicals,
    /// symbols), lose `U` and `W`, and have `H`; other chars are as in the plain table.
    #[test]
    fn han_apart_table_equals_its_classes_everywhere() {
        let (plain, han) = (CharClasses::get(), CharClasses::han_apart());
        let han_ranges = class_ranges(r"\p{Han}");
        let mut k = 0;
        for cp in 0u32..=char::MAX as u32 {
            while k < han_ranges.len() && han_ranges[k].1 < cp {
                k += 1;
            }
            let is_han = k < han_ranges.len() && han_ranges[k].0 <= cp;
            let want = if is_han {
                plain.of_u32(cp) & !(U | W) | H
            } else {
                plain.of_u32(cp)
            };
            assert_eq!(han.of_u32(cp), want, "U+{cp:04X}");
        }
        assert_eq!(han.of('中'), L | H);
        assert_eq!(han.of('〇'), N | H);
        assert_eq!(han.of('\u{2e80}'), H);
        assert_eq!(han.of('あ'), plain.of('あ'));
        assert_eq!(plain.of('中'), L | U | W);
    }

    #[test]
    fn two_byte_chars_take_the_table_classes() {
        let t = CharClasses::get();
        let mut buf = [0u8; 4];
        for c in (0x80u32..0x800).filter_map(char::from_u32) {
            let s = c.encode_utf8(&mut buf).as_bytes();
            assert_eq!(t.at(s, 0), (t.of(c), 2), "{c:?}");
            let letter = run2_end(s, 0, &t.class2, L) == 2;
            assert_eq!(letter, t.of(c) & L != 0, "{c:?}");
        }
        // A run stops at the first char without the bit, and at a char of another length.
        assert_eq!(run2_end("Слово,".as_bytes(), 0, &t.class2, L), 10);
        assert_eq!(run2_end("éa".as_bytes(), 0, &t.class2, L), 2);
        assert_eq!(run2_end("й中".as_bytes(), 0, &t.class2, L), 2);
        assert_eq!(run2_end(&"ё".as_bytes()[..1], 0, &t.class2, L), 0);
        // U+0483, a combining mark inside the Cyrillic block, is not a letter.
        assert_eq!(run2_end("ж\u{483}ж".as_bytes(), 0, &t.class2, L), 2);
        assert_eq!(t.run_end("мир\u{483}".as_bytes(), 0, L), 6);
    }

    #[test]
    fn three_byte_bitsets_equal_the_table() {
        let t = CharClasses::get();
        let mut buf = [0u8; 4];
        for c in (0x800u32..=0xFFFF).filter_map(char::from_u32) {
            let cls = t.of(c);
            let s = c.encode_utf8(&mut buf).as_bytes();
            let letter = run3_end(s, 0, &t.letter3) == 3;
            let upper_lower = run3_end(s, 0, &t.upper_lower3) == 3;
            assert_eq!(letter, cls & L != 0, "{c:?}");
            assert_eq!(upper_lower, cls & (U | W) == U | W, "{c:?}");
        }
        // A run stops at the first char without the bit, and at a shorter char.
        let t3 = "中文字!".as_bytes();
        assert_eq!(run3_end(t3, 0, &t.letter3), 9);
        assert_eq!(run3_end("中é".as_bytes(), 0, &t.letter3), 3);
        assert_eq!(run3_end("中，".as_bytes(), 0, &t.letter3), 3);
    }

    #[test]
    fn cursor_decodes_every_char() {
        let t = CharClasses::get();
        let mut buf = [0u8; 4];
        for c in (0u32..=char::MAX as u32).filter_map(char::from_u32) {
            let s = c.encode_utf8(&mut buf);
            let (cls, len) = t.at(s.as_bytes(), 0);
            assert_eq!((cls, len), (t.of(c), c.len_utf8()), "{c:?}");
        }
        assert_eq!(t.at(b"", 0), (END, 0));
    }

    #[test]
    fn some_known_chars() {
        let t = CharClasses::get();
        assert_eq!(t.of('\u{a0}'), S);
        assert_eq!(t.of('\u{85}'), S);
        assert_eq!(t.of('\u{3000}'), S);
        assert_eq!(t.of('\u{301}'), U | W); // combining acute: \p{M}
        assert_eq!(t.of('\u{1c5}'), L | U); // Dž: Lt
        assert_eq!(t.of('\u{2b0}'), L | U | W); // ʰ: Lm
        assert_eq!(t.of('中'), L | U | W); // Lo
        assert_eq!(t.of('٣'), N);
        assert_eq!(t.of('’'), 0);
    }
}
