//! The data readers' fast paths (`CoreBPE.encode_jsonl_block`, `CoreBPE.encode_arrow_values`):
//! a JSON Lines block as `bytes`, or an Arrow array's buffers, in; `(ids, offsets)` as
//! `encode_batch_to_numpy` returns them, or `None`, out. The work is `crate::data`'s, with
//! the GIL released; this layer only reaches the bytes and converts the result.
//!
//! Invariant: `None` means "read these records the Python way" and nothing was kept; an
//! error is an encoding error (as `encode_batch_to_numpy` raises it), Ctrl-C's
//! `KeyboardInterrupt`, or a `BufferError` for an object without a flat byte buffer.

use super::batches::SignalPoll;
use super::errors::detached;
use super::id_arrays::numpy_api;
use crate::encode::encoder::{Allowed, Encoder};
use crate::vocab::Rank;
use numpy::{PyArray1, PyArrayMethods};
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;

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

/// `(ids, offsets)` of a flat batch, as numpy arrays that own the Rust vectors.
pub(super) type FlatArrays<'py> = (Bound<'py, PyArray1<Rank>>, Bound<'py, PyArray1<i64>>);

/// The pieces' ids joined into one new array, and their offsets. The ids array is numpy's
/// (memory from the C allocator, which hands the same blocks out again batch after batch),
/// not a joined Rust vector: a vector that large would be a fresh mapping whose pages the
/// kernel clears on every call (`runtime/huge_pages.rs`).
fn arrays(py: Python<'_>, parts: Option<crate::data::Parts>) -> Option<FlatArrays<'_>> {
    let parts = parts?;
    let (total, _) = crate::data::sizes(&parts);
    // SAFETY: `new` makes a 1-d, C-contiguous array of `total` uninitialised `u32`s that
    // nothing else references yet; the loop writes each of them exactly once through the raw
    // pointer (the pieces' lengths add up to `total`, and their buffers are ours, apart from
    // the array), and no reference to an element is made before that. `u32` has no drop.
    let ids = unsafe {
        let ids = PyArray1::<Rank>::new(py, total, false);
        let mut at = ids.data();
        for e in &parts {
            std::ptr::copy_nonoverlapping(e.ids.as_ptr(), at, e.ids.len());
            at = at.add(e.ids.len());
        }
        ids
    };
    let offsets = PyArray1::from_vec(py, crate::data::offsets(&parts));
    Some((ids, offsets))
}

/// The documents of a JSON Lines block (see `crate::data::jsonl`).
pub(super) fn encode_jsonl_block<'py>(
    py: Python<'py>,
    enc: &Encoder,
    allowed: Allowed<'_>,
    block: &[u8],
    field: &str,
    num_threads: usize,
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
    Ok(arrays(py, poll.stash.finish(flat)?))
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

/// The values of an Arrow string/binary array without nulls, from its `offsets` and `data`
/// buffers (`Array.buffers()[1:]`), `wide` for 64-bit offsets, `first` its `Array.offset`
/// and `len` its length (see `crate::data::arrow`).
#[allow(clippy::too_many_arguments)]
pub(super) fn encode_arrow_values<'py>(
    py: Python<'py>,
    enc: &Encoder,
    allowed: Allowed<'_>,
    offsets: &Bound<'py, PyAny>,
    data: &Bound<'py, PyAny>,
    wide: bool,
    first: usize,
    len: usize,
    num_threads: usize,
) -> PyResult<Option<FlatArrays<'py>>> {
    numpy_api(py)?;
    let offsets_buf = byte_buffer(offsets, "offsets")?;
    let data_buf = byte_buffer(data, "data")?;
    let values = crate::data::arrow::Values {
        offsets: bytes_of(&offsets_buf),
        data: bytes_of(&data_buf),
        wide,
        first,
        len,
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
    Ok(arrays(py, flat))
}
