//! Python sequences read without trusting their `__len__` for allocation.
//!
//! Invariant: what these functions allocate before reading items is at most
//! [`MAX_PREALLOC`] items, whatever the object's `__len__` says; the rest grows with the
//! items actually read. pyo3's `Vec` extraction reserves `len()` items up front, so a list
//! subclass whose `__len__` said 10**12 aborted the process on a 4 TB allocation. Errors are
//! pyo3's (and so tiktoken's): a `str` or a non-sequence takes pyo3's extraction, which
//! refuses it before allocating, and each item is extracted as pyo3 extracts it.

use crate::vocab::Rank;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// Items reserved before reading, at most.
pub const MAX_PREALLOC: usize = 1 << 16;

/// Whether pyo3's `Vec` extraction would refuse `obj` before reading any item.
fn refused_early(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a valid object and the GIL is held (it is a `Bound`).
    obj.is_instance_of::<PyString>() || unsafe { pyo3::ffi::PySequence_Check(obj.as_ptr()) } == 0
}

/// `obj` as ids, as pyo3's `Vec<u32>` extraction reads it.
pub fn ids(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Rank>> {
    if refused_early(obj) {
        return obj.extract::<Vec<Rank>>();
    }
    let mut v = Vec::with_capacity(obj.len().unwrap_or(0).min(MAX_PREALLOC));
    for item in obj.try_iter()? {
        v.push(item?.extract::<Rank>()?);
    }
    Ok(v)
}

/// `obj` as lists of ids, as pyo3's `Vec<Vec<u32>>` extraction reads it.
pub fn id_lists(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<Rank>>> {
    if refused_early(obj) {
        return obj.extract::<Vec<Vec<Rank>>>();
    }
    let mut v = Vec::with_capacity(obj.len().unwrap_or(0).min(MAX_PREALLOC));
    for item in obj.try_iter()? {
        v.push(ids(&item?)?);
    }
    Ok(v)
}
