//! The data readers' fast paths (`CoreBPE.encode_jsonl_block`, `CoreBPE.encode_arrow_values`):
//! a JSON Lines block as `bytes`, or an Arrow array's buffers, in; `(ids, offsets)` as
//! `encode_batch_to_numpy` returns them (or laid out for shards: [`Layout`]), or `None`, out. The work is `crate::data`'s, with
//! the GIL released; this layer only reaches the bytes and converts the result.
//!
//! Invariant: `None` means "read these records the Python way" and nothing was kept; an
//! error is an encoding error (as `encode_batch_to_numpy` raises it), Ctrl-C's
//! `KeyboardInterrupt`, or a `BufferError` for an object without a flat byte buffer.

use super::batches::SignalPoll;
use super::errors::detached;
use super::id_arrays::numpy_api;
use crate::encode::encoder::{Allowed, Encoder};
use crate::runtime::batch::{batch_map, threads_for_ids};
use crate::vocab::Rank;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::prelude::*;
use std::mem::MaybeUninit;

/// How many times `byte` occurs in `data`, counted with the GIL released: the JSONL reader
/// counts the lines of each block it reads, and `bytes.count` held the GIL (~1.4 ms a 4 MB
/// block) that the encoding threads need between pieces and between batches.
#[pyfunction]
fn count_byte(py: Python<'_>, data: &[u8], byte: u8) -> usize {
    py.detach(|| memchr::memchr_iter(byte, data).count())
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_byte, m)?)
}

/// How often a block's calling thread takes the GIL to run Python's signal handlers
/// (Ctrl-C). Longer than other batches' 20 ms: in the data job the reader and writer
/// threads hold the GIL at times, and each wait for it stalls a core's share of the block;
/// a tenth of a second is still an instant answer to Ctrl-C.
const POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// `(ids, offsets)` of a flat batch: the ids as a numpy `uint32` or `uint16` array
/// ([`Layout`]), and `ids[offsets[i]..offsets[i + 1]]` document `i` with its BOS/EOT.
pub(super) type FlatArrays<'py> = (Bound<'py, PyAny>, Bound<'py, PyArray1<i64>>);

/// How the ids of a batch are laid out: `bos` before and `eot` after each document, each id
/// as a `u16` when `narrow`, else as a `u32`. The default is `encode_batch_to_numpy`'s
/// layout (no BOS/EOT, `u32`).
///
/// Why: the data job writes exactly these arrays into its shards. Laying them out here, in
/// the one copy the pieces need anyway, spares the job a concatenation, an insertion pass
/// and a cast pass per batch, each a new array of megabytes whose fresh pages the kernel
/// clears.
#[derive(Clone, Copy, Default)]
pub(super) struct Layout {
    pub bos: Option<Rank>,
    pub eot: Option<Rank>,
    pub narrow: bool,
}

impl Layout {
    /// From the Python arguments: `dtype` is `"uint32"` or `"uint16"`, and `bos`/`eot`
    /// must fit it.
    pub(super) fn new(bos: Option<Rank>, eot: Option<Rank>, dtype: &str) -> PyResult<Self> {
        let narrow = match dtype {
            "uint32" => false,
            "uint16" => true,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "dtype must be 'uint16' or 'uint32', got {dtype:?}"
                )))
            }
        };
        for (what, id) in [("bos", bos), ("eot", eot)] {
            if let Some(id) = id {
                if narrow && id > Rank::from(u16::MAX) {
                    return Err(PyValueError::new_err(format!(
                        "{what}={id} does not fit uint16"
                    )));
                }
            }
        }
        Ok(Layout { bos, eot, narrow })
    }

    /// Ids added to each document.
    fn extra(&self) -> usize {
        usize::from(self.bos.is_some()) + usize::from(self.eot.is_some())
    }
}

/// Writes the documents of `parts` into `out` (exactly their ids plus [`Layout::extra`] per
/// document) as `layout` says, each id through `cast`, and returns the offsets (from 0, one
/// more than documents) and the bitwise or of every id written, by which the caller checks
/// that `cast` lost nothing. Each part is written into its own stretch of `out`, on up to
/// `num_threads` threads ([`batch_map`]).
///
/// Why on the batch's threads: the copy is the one step of a block the encoding threads do
/// not share, and it runs between two blocks, while a helper that encoded with the caller
/// would wait for the next block.
fn lay_out<T: Copy + Send>(
    parts: &[crate::data::Encoded],
    layout: Layout,
    out: &mut [MaybeUninit<T>],
    cast: impl Fn(Rank) -> T + Sync + Send,
    num_threads: usize,
) -> crate::error::Result<(Vec<i64>, Rank)> {
    let (_, docs) = crate::data::sizes(parts);
    let extra = layout.extra();
    let mut offsets = Vec::with_capacity(docs + 1);
    offsets.push(0i64);
    let mut at = 0usize;
    let mut jobs = Vec::with_capacity(parts.len());
    let mut rest = out;
    for e in parts {
        let mut start = 0usize;
        for &end in &e.ends {
            at += end - start + extra;
            offsets.push(at as i64);
            start = end;
        }
        // `out` holds exactly every part's ids and extras (the caller sized it so), so
        // each part's stretch is there.
        let (mine, tail) =
            std::mem::take(&mut rest).split_at_mut(e.ids.len() + e.ends.len() * extra);
        rest = tail;
        jobs.push((e, std::sync::Mutex::new(mine)));
    }
    debug_assert!(rest.is_empty());
    let write = |(e, stretch): &(
        &crate::data::Encoded,
        std::sync::Mutex<&mut [MaybeUninit<T>]>,
    )| {
        // (only this job locks its stretch: the lock is never contended nor poisoned)
        let mut out = stretch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(write_part(e, layout, &mut out, &cast))
    };
    let ors = batch_map(&jobs, threads_for_ids(at, num_threads), write)?;
    Ok((offsets, ors.into_iter().fold(0, |a, b| a | b)))
}

/// One part's documents written into `out` (exactly its stretch) as [`lay_out`] says; the
/// bitwise or of the ids written.
fn write_part<T: Copy>(
    e: &crate::data::Encoded,
    layout: Layout,
    out: &mut [MaybeUninit<T>],
    cast: &impl Fn(Rank) -> T,
) -> Rank {
    let mut at = 0usize;
    let mut all = 0 as Rank;
    let mut start = 0usize;
    for &end in &e.ends {
        if let Some(b) = layout.bos {
            out[at].write(cast(b));
            at += 1;
            all |= b;
        }
        let doc = &e.ids[start..end];
        for (d, &id) in out[at..at + doc.len()].iter_mut().zip(doc) {
            d.write(cast(id));
            all |= id;
        }
        at += doc.len();
        if let Some(t) = layout.eot {
            out[at].write(cast(t));
            at += 1;
            all |= t;
        }
        start = end;
    }
    debug_assert_eq!(at, out.len());
    all
}

/// A new 1-d numpy array of `T` with `parts` laid out in it, and its offsets (see
/// [`lay_out`]); the copy runs with the GIL released.
fn filled<'py, T: numpy::Element + Copy + Send>(
    py: Python<'py>,
    parts: &[crate::data::Encoded],
    layout: Layout,
    cast: impl Fn(Rank) -> T + Send + Sync,
    num_threads: usize,
) -> PyResult<(Bound<'py, PyArray1<T>>, Vec<i64>, Rank)> {
    let (ids, docs) = crate::data::sizes(parts);
    let total = ids + docs * layout.extra();
    // SAFETY: `new` makes a 1-d, C-contiguous array of `total` uninitialised `T`s that
    // nothing else references yet (it is not handed to Python before this returns), so a
    // slice of `MaybeUninit<T>` over exactly its memory aliases nothing and claims nothing
    // about its contents. `lay_out` writes every element (`total` counts what it writes;
    // each part's stretch is written by one thread, and all are done when it returns)
    // before the array is returned and read; on an error the array is dropped unread. `T`
    // has no drop.
    let ids = unsafe { PyArray1::<T>::new(py, total, false) };
    let out = unsafe { std::slice::from_raw_parts_mut(ids.data().cast::<MaybeUninit<T>>(), total) };
    let (offsets, all) = detached(py, || lay_out(parts, layout, out, cast, num_threads))?;
    Ok((ids, offsets, all))
}

/// The pieces' documents laid out in one new array (see [`Layout`]), and their offsets. The
/// ids array is numpy's (memory from the C allocator, which hands the same blocks out again
/// batch after batch), not a joined Rust vector: a vector that large would be a fresh
/// mapping whose pages the kernel clears on every call (`runtime/huge_pages.rs`).
fn arrays<'py>(
    py: Python<'py>,
    parts: Option<crate::data::Parts>,
    layout: Layout,
    num_threads: usize,
) -> PyResult<Option<FlatArrays<'py>>> {
    let Some(parts) = parts else {
        return Ok(None);
    };
    let (ids, offsets) = if layout.narrow {
        let (ids, offsets, all) = filled(py, &parts, layout, |id| id as u16, num_threads)?;
        if all > Rank::from(u16::MAX) {
            return Err(PyValueError::new_err(
                "an id does not fit uint16: the encoding's ids need uint32",
            ));
        }
        (ids.into_any(), offsets)
    } else {
        let (ids, offsets, _) = filled(py, &parts, layout, |id| id, num_threads)?;
        (ids.into_any(), offsets)
    };
    Ok(Some((ids, PyArray1::from_vec(py, offsets))))
}

/// The documents of a JSON Lines block (see `crate::data::jsonl`).
pub(super) fn encode_jsonl_block<'py>(
    py: Python<'py>,
    enc: &Encoder,
    allowed: Allowed<'_>,
    block: &[u8],
    field: &str,
    num_threads: usize,
    layout: Layout,
) -> PyResult<Option<FlatArrays<'py>>> {
    numpy_api(py)?;
    let mut poll = SignalPoll::every(POLL_EVERY);
    let flat = detached(py, || {
        crate::data::jsonl::encode_block(
            block,
            field,
            num_threads,
            |text, out| enc.encode_into(text, allowed, out),
            || poll.stop(),
        )
    });
    arrays(py, poll.stash.finish(flat)?, layout, num_threads)
}

/// A flat, one-byte-per-item buffer of `obj` (a `pyarrow.Buffer`, `bytes`, a memoryview...).
fn byte_buffer(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<PyUntypedBuffer> {
    let buf = PyUntypedBuffer::get(obj)?;
    if buf.item_size() != 1 || !buf.is_c_contiguous() {
        return Err(PyBufferError::new_err(format!(
            "{what} must be a contiguous buffer of bytes"
        )));
    }
    Ok(buf)
}

/// The bytes of a buffer from [`byte_buffer`], borrowed from it.
fn bytes_of(buf: &PyUntypedBuffer) -> &[u8] {
    let n = buf.len_bytes();
    if n == 0 {
        return &[];
    }
    // SAFETY: `buf` holds an exported view: the exporter keeps the memory allocated and in
    // place until the view is released (PEP 3118), when `buf` is dropped, and the slice
    // borrows `buf`, so it cannot outlive the view. The view is contiguous with one-byte
    // items ([`byte_buffer`] checked), so it is `n` initialised bytes from `buf_ptr()`,
    // which is non-null as `n` is not zero. Nothing here writes to it. The memory is an
    // Arrow array's, which Arrow never changes once built (and the job hands over arrays
    // only its own batch references); an owner that wrote into it from another thread
    // during the call anyway would race with this read as with any consumer that reads a
    // buffer with the GIL released (`hashlib`, `zlib`). Even then the core checks and
    // encodes a copy of each value, never the shared bytes themselves
    // (`crate::data::arrow`), and bounds-checks every offset it reads.
    unsafe { std::slice::from_raw_parts(buf.buf_ptr().cast::<u8>(), n) }
}

/// An Arrow string/binary array without nulls as Python names it: its `offsets` and `data`
/// buffers (`Array.buffers()[1:]`), `wide` for 64-bit offsets, `first` its `Array.offset`
/// and `len` its length (see `crate::data::arrow`).
pub(super) struct ArrowArgs<'a, 'py> {
    pub offsets: &'a Bound<'py, PyAny>,
    pub data: &'a Bound<'py, PyAny>,
    pub wide: bool,
    pub first: usize,
    pub len: usize,
}

/// The values of an Arrow array (see [`ArrowArgs`]), laid out as `layout` says.
pub(super) fn encode_arrow_values<'py>(
    py: Python<'py>,
    enc: &Encoder,
    allowed: Allowed<'_>,
    array: ArrowArgs<'_, 'py>,
    num_threads: usize,
    layout: Layout,
) -> PyResult<Option<FlatArrays<'py>>> {
    numpy_api(py)?;
    let offsets_buf = byte_buffer(array.offsets, "offsets")?;
    let data_buf = byte_buffer(array.data, "data")?;
    let values = crate::data::arrow::Values {
        offsets: bytes_of(&offsets_buf),
        data: bytes_of(&data_buf),
        wide: array.wide,
        first: array.first,
        len: array.len,
    };
    let mut poll = SignalPoll::every(POLL_EVERY);
    let flat = detached(py, || {
        crate::data::arrow::encode_values(
            &values,
            num_threads,
            |text, out| enc.encode_into(text, allowed, out),
            || poll.stop(),
        )
    });
    let flat = poll.stash.finish(flat)?;
    drop((offsets_buf, data_buf));
    arrays(py, flat, layout, num_threads)
}
