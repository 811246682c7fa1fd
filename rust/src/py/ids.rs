//! Ids read from Python: a list of ints (`ints.rs`), a one-dimensional integer array
//! (`id_arrays.rs`), a batch of them; and ids handed back as packed bytes.
//!
//! Invariant: the fast readers only ever read what pyo3's general extraction would, and give
//! up (returning `false`) on anything else, which then takes the general extraction and its
//! errors.

use super::{id_arrays, ints};
use crate::vocab::Rank;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

/// Reads `tokens` into `ids` when it is a list of plain ints that fit in a `u32` (what
/// `encode` returns), straight from the list's item array: no iterator protocol and no
/// reference counting per item; or when it is a one-dimensional integer array (see
/// `id_arrays`). Returns `false` (with `ids` in any state) for anything else, which then
/// takes pyo3's general extraction and gets its errors.
pub(super) fn ids_read_directly(tokens: &Bound<'_, PyAny>, ids: &mut Vec<Rank>) -> bool {
    match tokens.cast_exact::<PyList>() {
        Ok(list) => ints::list_ids(list, ids),
        Err(_) => id_arrays::array_ids(tokens, ids),
    }
}

/// `batch` as id lists: a list of lists of ints (what the batch encoders return) or of id
/// arrays is read with [`ids_read_directly`]; anything else, or a list with an item that is
/// neither, takes pyo3's general extraction and gets its errors. The general one would be
/// most of `decode_bytes_batch`'s time (~5x this way's).
pub(super) fn id_lists(batch: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<Rank>>> {
    if let Ok(list) = batch.cast_exact::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for item in list.iter() {
            let mut ids = Vec::new();
            if !ids_read_directly(&item, &mut ids) {
                return super::seq::id_lists(batch);
            }
            out.push(ids);
        }
        return Ok(out);
    }
    super::seq::id_lists(batch)
}

/// `ids` as the bytes of native-endian 4-byte ints (what `array('I').frombytes` reads).
pub(super) fn packed_ids<'py>(py: Python<'py>, ids: &[Rank]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, std::mem::size_of_val(ids), |out| {
        for (slot, id) in out.chunks_exact_mut(4).zip(ids) {
            slot.copy_from_slice(&id.to_ne_bytes());
        }
        Ok(())
    })
}
