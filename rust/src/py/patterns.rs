//! The pre-tokenization facts Python shares with the core: the OpenAI patterns (one source
//! of truth, which `openai_public.py`'s copies are tested against) and where a file may be
//! cut ([`crate::encode::pretok::file_cuts`]). Only conversions here.

use crate::encode::pretok::file_cuts;
use crate::encode::pretok::OPENAI_PATTERNS;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict};

/// The last place in `data[start:]` where the UTF-8 text `data` may be cut so that its parts
/// encode to the whole's ids, or 0 if there is none (see `file_cuts.rs` for the rule).
/// `data` is `bytes` or a `bytearray`; it is read in place, with the GIL held (the search
/// touches only the bytes from `start`, a few per `"\n"`).
#[pyfunction]
#[pyo3(signature = (data, start = 0))]
fn last_file_cut(data: &Bound<'_, PyAny>, start: usize) -> PyResult<usize> {
    with_bytes(data, |b| file_cuts::last_file_cut(b, start))
}

/// `f` of the bytes of `data` (`bytes` or a `bytearray`), read in place with the GIL held;
/// `f` must run no Python code.
pub(super) fn with_bytes<R>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(b) = data.cast::<PyByteArray>() {
        // SAFETY: the slice is used only inside this call, which holds the GIL throughout
        // and runs no Python code (`f` may not), so nothing can resize or free the bytearray
        // meanwhile.
        return Ok(f(unsafe { b.as_bytes() }));
    }
    Err(PyTypeError::new_err(format!(
        "data must be bytes or bytearray, not {}",
        data.get_type().name()?
    )))
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let patterns = PyDict::new(m.py());
    for (name, pattern) in OPENAI_PATTERNS {
        patterns.set_item(name, pattern)?;
    }
    m.add("OPENAI_PATTERNS", patterns)?;
    m.add_function(wrap_pyfunction!(last_file_cut, m)?)?;
    Ok(())
}
