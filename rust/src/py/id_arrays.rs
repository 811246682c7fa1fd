//! Ids from arrays: a one-dimensional numpy array, `array.array` or `memoryview` of integers
//! (what `encode_ordinary_batch_to_numpy` returns, sliced per text), read straight from its
//! buffer; and NumPy's C API loaded for the arrays returned ([`numpy_api`]).
//!
//! Invariant: [`array_ids`] returns `true` only with `ids` holding exactly the values that
//! iterating the object would give, so the general extraction would have returned the same
//! ids; it returns `false` for anything it does not read (another type, a subclass, a format
//! other than one native-order integer, more or fewer than one dimension, a value that is
//! negative or past `u32::MAX`), which then takes pyo3's general extraction and gets its
//! errors, as tiktoken's does.
//!
//! Why: the general extraction makes a Python object per item (a numpy scalar for an array)
//! and converts it through `__index__`: ~4x as slow as reading a list of the same ids.

use crate::vocab::Rank;
use numpy::PyArray1;
use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyMemoryView, PyType};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Reads `obj`'s ids into `ids` (cleared first) if it is a one-dimensional array of integers
/// that all fit a `u32`; `false` otherwise (see the module's invariant), with `ids` in any
/// state.
pub(super) fn array_ids(obj: &Bound<'_, PyAny>, ids: &mut Vec<Rank>) -> bool {
    if !items_are_buffer(obj) {
        return false;
    }
    // A failure here (no buffer after all) is dropped: the general extraction meets the
    // object again and raises what it raises.
    let Ok(buf) = PyUntypedBuffer::get(obj) else {
        return false;
    };
    if buf.dimensions() != 1 || buf.suboffsets().is_some() {
        return false;
    }
    let Some((signed, width)) = int_format(buf.format().to_bytes()) else {
        return false;
    };
    if width != buf.item_size() {
        return false;
    }
    let (n, stride) = (buf.shape()[0], buf.strides()[0]);
    let base = buf.buf_ptr().cast::<u8>().cast_const();
    ids.clear();
    ids.reserve(n);
    // SAFETY (for each `read` below): `buf` holds the exporter's buffer until it is dropped
    // at the end of this function, and a held buffer's memory stays valid and in place (the
    // buffer protocol's contract; numpy and `array.array` refuse to resize while one is
    // held). It is one-dimensional without suboffsets, so item `i < shape[0]` is the
    // `item_size` bytes at `buf + i * strides[0]`, and `item_size` is `T`'s size (checked
    // just above). The GIL is held and no Python code runs until the reads are done. A
    // thread writing the array without the GIL at the same time would race with these reads
    // as with every other reader of the buffer (numpy's own loops included): that is the
    // writer's bug, and any bit pattern read is still some integer of type `T`, which the
    // range check bounds.
    unsafe {
        match (signed, width) {
            (false, 1) => read::<u8>(base, n, stride, ids),
            (false, 2) => read::<u16>(base, n, stride, ids),
            (false, 4) => read::<u32>(base, n, stride, ids),
            (false, 8) => read::<u64>(base, n, stride, ids),
            (true, 1) => read::<i8>(base, n, stride, ids),
            (true, 2) => read::<i16>(base, n, stride, ids),
            (true, 4) => read::<i32>(base, n, stride, ids),
            (true, 8) => read::<i64>(base, n, stride, ids),
            _ => false,
        }
    }
}

/// Whether `obj`'s items are the values in its buffer: true of numpy's `ndarray`,
/// `array.array` and `memoryview` themselves, not of subclasses (a masked array's items are
/// not its buffer's) nor of other exporters (`bytes` would be, but nobody keeps ids in it).
fn items_are_buffer(obj: &Bound<'_, PyAny>) -> bool {
    let py = obj.py();
    let ty = obj.get_type();
    if ty.is(py.get_type::<PyMemoryView>()) {
        return true;
    }
    // The type's C name first: a tuple or a generator then costs one string comparison, no
    // lookup (the qualified name through `__module__` was 80 ns a call).
    // SAFETY: a type's `tp_name` is a NUL-terminated string that lives as long as the type,
    // which `ty` keeps alive while the string is read.
    let name = unsafe { std::ffi::CStr::from_ptr((*ty.as_type_ptr()).tp_name) };
    match name.to_bytes() {
        // Only reached with an ndarray in hand, so numpy is imported already.
        b"numpy.ndarray" => cached_type(py, &NDARRAY, "numpy", "ndarray").is_some_and(|t| ty.is(t)),
        b"array.array" => cached_type(py, &ARRAY, "array", "array").is_some_and(|t| ty.is(t)),
        _ => false,
    }
}

static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static ARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `module.name` as a type, looked up once.
fn cached_type<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    module: &str,
    name: &str,
) -> Option<&'py Bound<'py, PyType>> {
    cell.get_or_try_init(py, || {
        py.import(module)?
            .getattr(name)?
            .cast_into::<PyType>()
            .map(Bound::unbind)
            .map_err(PyErr::from)
    })
    .ok()
    .map(|t| t.bind(py))
}

/// Signedness and width in bytes of the items of a buffer `format` made of one integer in
/// native byte order: no prefix or `@` (native sizes), `=` (standard sizes) or, on a
/// little-endian machine, `<`. `None` for any other format (floats, bools, other byte
/// orders, structs).
fn int_format(format: &[u8]) -> Option<(bool, usize)> {
    use std::ffi::{c_int, c_long, c_longlong, c_short};
    use std::mem::size_of;
    let (native, code) = match format {
        [c] | [b'@', c] => (true, *c),
        [b'=', c] => (false, *c),
        [b'<', c] if cfg!(target_endian = "little") => (false, *c),
        _ => return None,
    };
    Some(match (code, native) {
        (b'b', _) => (true, 1),
        (b'B', _) => (false, 1),
        (b'h', true) => (true, size_of::<c_short>()),
        (b'H', true) => (false, size_of::<c_short>()),
        (b'i', true) => (true, size_of::<c_int>()),
        (b'I', true) => (false, size_of::<c_int>()),
        (b'l', true) => (true, size_of::<c_long>()),
        (b'L', true) => (false, size_of::<c_long>()),
        (b'q', true) => (true, size_of::<c_longlong>()),
        (b'Q', true) => (false, size_of::<c_longlong>()),
        (b'n', true) => (true, size_of::<isize>()),
        (b'N', true) => (false, size_of::<usize>()),
        (b'h', false) => (true, 2),
        (b'H', false) => (false, 2),
        (b'i' | b'l', false) => (true, 4),
        (b'I' | b'L', false) => (false, 4),
        (b'q', false) => (true, 8),
        (b'Q', false) => (false, 8),
        _ => return None,
    })
}

/// Reads `n` items of type `T`, `stride` bytes apart from `base`, into `ids`' spare capacity
/// (which must hold `n`; the slice index panics otherwise); `false`, with `ids` unchanged in
/// length, if one is negative or past `u32::MAX`.
///
/// # Safety
/// Each of the `n` items must be readable `T`-sized memory (alignment not needed).
unsafe fn read<T: Copy + Into<i128>>(
    base: *const u8,
    n: usize,
    stride: isize,
    ids: &mut Vec<Rank>,
) -> bool {
    let slots = &mut ids.spare_capacity_mut()[..n];
    // Unaligned reads throughout: a buffer need not be aligned, and on x86-64 and arm64 an
    // unaligned load costs what an aligned one does.
    let in_range = if stride == std::mem::size_of::<T>() as isize {
        // SAFETY: the caller's promise, with the items back to back.
        fill(slots, |i| {
            unsafe { base.cast::<T>().add(i).read_unaligned() }.into()
        })
    } else {
        // SAFETY: the caller's promise; `i * stride` is an offset inside the exporter's memory
        // (the protocol's layout), so it neither overflows nor leaves it.
        fill(slots, |i| {
            unsafe {
                base.offset(i as isize * stride)
                    .cast::<T>()
                    .read_unaligned()
            }
            .into()
        })
    };
    if !in_range {
        return false;
    }
    // SAFETY: `fill` wrote each of the first `n` slots of the spare capacity.
    unsafe { ids.set_len(n) };
    true
}

/// Writes `item(i)` into each slot `i` as an id; whether every one was in range. The check
/// is folded over the whole loop and looked at once at the end, not made per item, so the
/// loop has no branch and the compiler turns the back-to-back case into vector instructions.
#[inline(always)]
fn fill(slots: &mut [std::mem::MaybeUninit<Rank>], item: impl Fn(usize) -> i128) -> bool {
    let mut out_of_range = false;
    for (i, slot) in slots.iter_mut().enumerate() {
        let v = item(i);
        out_of_range |= !(0..=i128::from(Rank::MAX)).contains(&v);
        slot.write(v as Rank);
    }
    !out_of_range
}

/// Loads NumPy's C API for the arrays ferrotok returns, once per process, where no signal
/// handler can interrupt it.
///
/// rust-numpy loads it at its first array, running Python code on the way (it asks
/// `numpy.lib.NumpyVersion` which module holds the API), and panics if that code raises. A
/// signal handler may run in that code on the main thread (Ctrl-C: `KeyboardInterrupt`), so
/// a Ctrl-C at the wrong moment came out as a `PanicException`. Python runs signal handlers
/// only on the main thread, so the API is loaded on a thread of its own.
pub(super) fn numpy_api(py: Python<'_>) -> PyResult<()> {
    static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if LOADED.load(std::sync::atomic::Ordering::Acquire) {
        return Ok(());
    }
    let loaded = py.detach(|| {
        let loader = std::thread::Builder::new().spawn(|| {
            Python::attach(|py| {
                catch_unwind(AssertUnwindSafe(|| {
                    PyArray1::<Rank>::zeros(py, 0, false);
                }))
                .is_ok()
            })
        });
        loader.is_ok_and(|t| t.join().unwrap_or(false))
    });
    if !loaded {
        return Err(pyo3::exceptions::PyImportError::new_err(
            "NumPy's C API could not be loaded: is numpy installed and importable?",
        ));
    }
    LOADED.store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_native_integers_only() {
        let long = std::mem::size_of::<std::ffi::c_long>();
        assert_eq!(int_format(b"I"), Some((false, 4)));
        assert_eq!(int_format(b"@l"), Some((true, long)));
        assert_eq!(int_format(b"=l"), Some((true, 4)));
        assert_eq!(int_format(b"q"), Some((true, 8)));
        assert_eq!(int_format(b"B"), Some((false, 1)));
        assert_eq!(
            int_format(b"<Q"),
            cfg!(target_endian = "little").then_some((false, 8))
        );
        for other in [&b">I"[..], b"!I", b"d", b"?", b"e", b"2I", b"T{I:a:}", b""] {
            assert_eq!(int_format(other), None, "{other:?}");
        }
    }

    fn read_all<T: Copy + Into<i128>>(items: &[T], stride: isize) -> Option<Vec<Rank>> {
        let n = std::mem::size_of_val(items) / stride.unsigned_abs();
        let mut ids = vec![7; 3]; // stale ids, to be replaced
        ids.clear();
        ids.reserve(n);
        // SAFETY: each of the `n` items read lies inside `items`.
        unsafe { read::<T>(items.as_ptr().cast(), n, stride, &mut ids) }.then_some(ids)
    }

    #[test]
    fn reads_every_width_and_stride_and_refuses_what_is_no_id() {
        assert_eq!(read_all(&[1u32, 2, 3], 4), Some(vec![1, 2, 3]));
        assert_eq!(read_all(&[1u32, 2, 3, 4], 8), Some(vec![1, 3]));
        assert_eq!(
            read_all(&[5i64, u32::MAX as i64], 8),
            Some(vec![5, u32::MAX])
        );
        assert_eq!(read_all(&[5i64, 1 << 32], 8), None);
        assert_eq!(read_all(&[5i64, -1], 8), None);
        assert_eq!(read_all(&[5u64, 1 << 32], 8), None);
        assert_eq!(read_all(&[-1i8], 1), None);
        assert_eq!(read_all(&[255u8, 0], 1), Some(vec![255, 0]));
        assert_eq!(read_all::<u16>(&[], 2), Some(vec![]));
        // Unaligned: u32 items starting one byte into a buffer.
        let bytes = [0u8, 1, 0, 0, 0, 2, 0, 0, 0];
        let mut ids = Vec::with_capacity(2);
        // SAFETY: two 4-byte items from byte 1 lie inside `bytes`.
        assert!(unsafe { read::<u32>(bytes.as_ptr().add(1), 2, 4, &mut ids) });
        assert_eq!(
            ids,
            [
                u32::from_ne_bytes([1, 0, 0, 0]),
                u32::from_ne_bytes([2, 0, 0, 0])
            ]
        );
    }
}
