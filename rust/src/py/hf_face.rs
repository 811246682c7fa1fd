//! The HF face's per-token work on Python lists (`ferrotok.hf`): the tokens' texts by id, and
//! ByteLevel's offset trimming, whose rule the core holds (`pipeline::byte_level`).

use crate::pipeline::byte_level::{edge_spaces, trim_offsets};
use crate::vocab::Rank;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

/// ByteLevel's `process_offsets` in place: `offsets[i]` (a `(start, end)` tuple) trimmed by
/// the spaces at the edges of `tokens[i]` (see `pipeline::byte_level::trim_offsets`); an
/// entry no space touches is left as the same object.
#[pyfunction]
fn trim_byte_level_offsets(
    tokens: &Bound<'_, PyList>,
    offsets: &Bound<'_, PyList>,
    add_prefix_space: bool,
) -> PyResult<()> {
    if tokens.len() != offsets.len() {
        return Err(PyValueError::new_err(format!(
            "{} tokens but {} offsets",
            tokens.len(),
            offsets.len()
        )));
    }
    for (i, token) in tokens.iter().enumerate() {
        let token = token.cast_into::<PyString>()?;
        let spaces = edge_spaces(token.to_str()?);
        if spaces == (0, 0) {
            continue;
        }
        let was: (usize, usize) = offsets.get_item(i)?.extract()?;
        let now = trim_offsets(spaces, was, i == 0, add_prefix_space);
        if now != was {
            offsets.set_item(i, PyTuple::new(offsets.py(), [now.0, now.1])?)?;
        }
    }
    Ok(())
}

/// `[table[id] for id in ids]`, each item the table's own object: the tokens' texts of ids
/// from the face's table of texts by id (`encode_hf_face`). An id past the table is an error.
pub(super) fn items_at<'py>(
    table: &Bound<'py, PyList>,
    ids: &[Rank],
) -> PyResult<Bound<'py, PyList>> {
    let n = table.len();
    // The texts' objects first asked for, all of them, so that the references taken below
    // (a write to each object's count) do not wait on each miss in turn.
    super::ints::prefetch_objects(ids.iter().filter(|&&id| (id as usize) < n).map(|&id| {
        // SAFETY: `table` is a list (a `Bound`, so the GIL is held) of `n` items and the index
        // is below `n`: `PyList_GET_ITEM` reads that item's pointer, a borrowed reference to a
        // live object, without touching its count.
        unsafe { pyo3::ffi::PyList_GET_ITEM(table.as_ptr(), id as pyo3::ffi::Py_ssize_t) }
    }));
    let items = ids
        .iter()
        .map(|&id| match id as usize {
            i if i < n => table.get_item(i),
            _ => Err(PyValueError::new_err(format!(
                "id {id} has no token text (the table holds {n})"
            ))),
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(table.py(), items)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trim_byte_level_offsets, m)?)?;
    Ok(())
}
