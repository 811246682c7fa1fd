//! The command line's id text (`ferrotok encode` / `decode`): ids parsed from and written as
//! decimal text in Rust (the work is in [`crate::vocab::id_text`]); only conversions here.

use super::errors::detached;
use super::ids::{ids_read_directly, packed_ids};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyBytes;

/// The ids in text of decimal ids and ASCII separators (see [`crate::vocab::id_text`]) as the
/// bytes of native-endian 4-byte ints (for `array('I').frombytes`), or `None` for any other
/// text or an id above `max_id`, which the caller then parses with its own checks.
#[pyfunction]
fn parse_id_text<'py>(
    py: Python<'py>,
    text: PyBackedStr,
    max_id: u32,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let Some(ids) = detached(py, || {
        Ok(crate::vocab::id_text::parse(text.as_bytes(), max_id))
    })?
    else {
        return Ok(None);
    };
    packed_ids(py, &ids).map(Some)
}

/// [`parse_id_text`] for one block of a JSON list's inside (see
/// [`crate::vocab::id_text::parse_json`]): `None` where the block is not strictly JSON's.
#[pyfunction]
fn parse_json_ids<'py>(
    py: Python<'py>,
    text: PyBackedStr,
    max_id: u32,
    last: bool,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let parsed = detached(py, || {
        Ok(crate::vocab::id_text::parse_json(
            text.as_bytes(),
            max_id,
            last,
        ))
    })?;
    let Some(ids) = parsed else {
        return Ok(None);
    };
    packed_ids(py, &ids).map(Some)
}

/// `sep.join(map(str, ids)).encode()` for ids read as `decode_bytes` reads them (a list of
/// ints or a 1-D integer array), written in Rust (see [`crate::vocab::id_text`]).
#[pyfunction]
fn format_ids<'py>(
    py: Python<'py>,
    ids: &Bound<'py, PyAny>,
    sep: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut values = Vec::new();
    if !ids_read_directly(ids, &mut values) {
        values = super::seq::ids(ids)?;
    }
    let text = detached(py, || {
        let mut out = Vec::new();
        crate::vocab::id_text::write(&values, sep.as_bytes(), &mut out);
        Ok(out)
    })?;
    Ok(PyBytes::new(py, &text))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_id_text, m)?)?;
    m.add_function(wrap_pyfunction!(parse_json_ids, m)?)?;
    m.add_function(wrap_pyfunction!(format_ids, m)?)?;
    Ok(())
}
