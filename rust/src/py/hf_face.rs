//! The HF face's per-token work on Python lists (`ferrotok.hf`): each function converts the
//! lists and calls the core (`pipeline::byte_level`), which holds the rule.

use crate::pipeline::byte_level::{edge_spaces, trim_offsets};
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

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trim_byte_level_offsets, m)?)?;
    Ok(())
}
