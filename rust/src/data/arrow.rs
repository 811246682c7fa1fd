//! The values of an Arrow string or binary array with no nulls, read from its offsets and
//! data buffers as they are in memory (`pyarrow.Array.buffers()`), with no Python object per
//! value.
//!
//! Invariant: [`encode_values`] gives value `i`'s ids for `i` in the array's slice
//! (`first..first + len` of the offsets), in order, or `None` when a value is not UTF-8 (the
//! Python reader then names its row) or the buffers do not hold what an Arrow array of that
//! shape must (offsets past the data, decreasing, or negative): never a panic, never a read
//! outside the buffers. Each value is copied from the data buffer into memory of its own
//! before it is checked and encoded, so what is encoded is exactly what was checked, whatever
//! the buffer's owner does (see the binding's safety comment).

use super::{encode_pieces, Encoded, Parts, Piece, PIECE_BYTES};
use crate::error::Result;
use crate::vocab::Rank;

/// An Arrow array of variable-length values: its offsets buffer (`i32`, or `i64` for the
/// `large_` types, in the machine's byte order as Arrow keeps them in memory) and data
/// buffer, and the slice of it that is the array (`Array.offset` and `len(array)`).
pub struct Values<'a> {
    pub offsets: &'a [u8],
    pub data: &'a [u8],
    pub wide: bool,
    pub first: usize,
    pub len: usize,
}

impl Values<'_> {
    /// Offset `i` of the underlying buffer (not of the slice), if it is there and not
    /// negative.
    fn offset(&self, i: usize) -> Option<usize> {
        if self.wide {
            let b = self
                .offsets
                .get(i.checked_mul(8)?..i.checked_mul(8)?.checked_add(8)?)?;
            usize::try_from(i64::from_ne_bytes(b.try_into().ok()?)).ok()
        } else {
            let b = self
                .offsets
                .get(i.checked_mul(4)?..i.checked_mul(4)?.checked_add(4)?)?;
            usize::try_from(i32::from_ne_bytes(b.try_into().ok()?)).ok()
        }
    }

    /// The bytes of value `i` of the slice, if the buffers hold them.
    fn value(&self, i: usize) -> Option<&[u8]> {
        let at = self.first.checked_add(i)?;
        let (start, end) = (self.offset(at)?, self.offset(at.checked_add(1)?)?);
        self.data.get(start..end)
    }

    /// The slice cut into ranges of values of about [`PIECE_BYTES`] each, and the bytes of
    /// all its values; `None` if the offsets are not what an array's must be.
    fn pieces(&self) -> Option<(Vec<std::ops::Range<usize>>, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut start_at = self.offset(self.first)?;
        let mut last = start_at;
        for i in 0..self.len {
            let end = self.offset(self.first.checked_add(i)?.checked_add(1)?)?;
            if end < last || end > self.data.len() {
                return None;
            }
            last = end;
            if end - start_at >= PIECE_BYTES {
                out.push(start..i + 1);
                start = i + 1;
                start_at = end;
            }
        }
        if start < self.len {
            out.push(start..self.len);
        }
        Some((out, last - self.offset(self.first)?))
    }
}

/// The ids of each value (see the module doc), each by `encode` (which appends a text's ids
/// to a vector), on up to `num_threads` threads.
pub fn encode_values(
    values: &Values<'_>,
    num_threads: usize,
    encode: impl Fn(&str, &mut Vec<Rank>) -> Result<()> + Sync + Send,
    stop: impl FnMut() -> bool,
) -> Result<Option<Parts>> {
    if values.len == 0 {
        return Ok(Some(Vec::new()));
    }
    let Some((pieces, bytes)) = values.pieces() else {
        return Ok(None);
    };
    let work = |range: &std::ops::Range<usize>| -> Result<Piece> {
        let mut e = Encoded {
            ids: Vec::with_capacity(super::ids_room(PIECE_BYTES)),
            ends: Vec::with_capacity(range.len()),
        };
        // Each value's copy, in one buffer reused value after value: a new vector per
        // document was an allocation each encoding thread made under glibc's arena lock.
        let mut copy = Vec::new();
        for i in range.clone() {
            let Some(raw) = values.value(i) else {
                return Ok(Piece::Fallback);
            };
            // A copy of its own: checked and encoded from memory no one else can write.
            copy.clear();
            copy.extend_from_slice(raw);
            // (`simdutf8` accepts exactly what `std::str::from_utf8` accepts, many bytes at
            // a time where std's check goes byte by byte through non-ASCII text.)
            let Ok(text) = simdutf8::basic::from_utf8(&copy) else {
                return Ok(Piece::Fallback);
            };
            e.push(|out| encode(text, out))?;
        }
        Ok(Piece::Done(e))
    };
    encode_pieces(&pieces, bytes, num_threads, work, stop)
}

#[cfg(test)]
mod tests {
    use super::super::joined;
    use super::*;

    fn enc(t: &str, out: &mut Vec<Rank>) -> Result<()> {
        out.extend(t.bytes().map(Rank::from));
        Ok(())
    }

    fn buffers(values: &[&[u8]], wide: bool) -> (Vec<u8>, Vec<u8>) {
        let (mut offs, mut data) = (Vec::new(), Vec::new());
        let push = |o: usize, offs: &mut Vec<u8>| {
            if wide {
                offs.extend_from_slice(&(o as i64).to_ne_bytes());
            } else {
                offs.extend_from_slice(&(o as i32).to_ne_bytes());
            }
        };
        push(0, &mut offs);
        for v in values {
            data.extend_from_slice(v);
            push(data.len(), &mut offs);
        }
        (offs, data)
    }

    #[test]
    fn slices_of_narrow_and_wide_arrays() {
        let big = "y".repeat(PIECE_BYTES + 7);
        let vals: Vec<&[u8]> = vec![b"ab", b"", "é".as_bytes(), big.as_bytes(), b"z"];
        for wide in [false, true] {
            let (offsets, data) = buffers(&vals, wide);
            for first in 0..vals.len() {
                for len in 0..=vals.len() - first {
                    let v = Values {
                        offsets: &offsets,
                        data: &data,
                        wide,
                        first,
                        len,
                    };
                    for threads in [1, 2] {
                        let (ids, offs) =
                            joined(&encode_values(&v, threads, enc, || false).unwrap().unwrap());
                        assert_eq!(offs.len(), len + 1);
                        for (k, val) in vals[first..first + len].iter().enumerate() {
                            let got = &ids[offs[k] as usize..offs[k + 1] as usize];
                            let want: Vec<Rank> = val.iter().map(|&b| Rank::from(b)).collect();
                            assert_eq!(got, want.as_slice());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_utf8_and_bad_buffers_fall_back() {
        let (offsets, data) = buffers(&[b"ok", b"\xff", b"ok"], false);
        let v = Values {
            offsets: &offsets,
            data: &data,
            wide: false,
            first: 0,
            len: 3,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_none());
        let v = Values {
            offsets: &offsets,
            data: &data,
            wide: false,
            first: 2,
            len: 1,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_some());
        // past the offsets, past the data, decreasing, negative
        let v = Values {
            offsets: &offsets,
            data: &data,
            wide: false,
            first: 2,
            len: 2,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_none());
        let v = Values {
            offsets: &offsets,
            data: &data[..3],
            wide: false,
            first: 0,
            len: 3,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_none());
        let mut down = offsets.clone();
        down[4..8].copy_from_slice(&5i32.to_ne_bytes());
        let v = Values {
            offsets: &down,
            data: &data,
            wide: false,
            first: 0,
            len: 3,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_none());
        let mut neg = offsets.clone();
        neg[0..4].copy_from_slice(&(-1i32).to_ne_bytes());
        let v = Values {
            offsets: &neg,
            data: &data,
            wide: false,
            first: 0,
            len: 1,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_none());
        let v = Values {
            offsets: &[],
            data: &[],
            wide: true,
            first: 0,
            len: 1,
        };
        assert!(encode_values(&v, 1, enc, || false).unwrap().is_none());
        let v = Values {
            offsets: &[],
            data: &[],
            wide: true,
            first: 0,
            len: 0,
        };
        let (ids, offs) = joined(&encode_values(&v, 1, enc, || false).unwrap().unwrap());
        assert!(ids.is_empty() && offs == vec![0]);
    }
}
