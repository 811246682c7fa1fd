//! The binding layer (`ferrotok._core`): converts Python values to Rust and Rust errors to
//! Python exceptions, and nothing else. All work happens in the core with the GIL released
//! (`py.detach`); policy (how many threads a batch gets, when tables are built) is the
//! core's.
//!
//! Laid out like the core: [`errors`] (core errors and panics as Python exceptions),
//! [`core_bpe`] (the encoding class, `CoreBPE`), [`batches`] (batches on the core's threads,
//! Ctrl-C, lists built as ids come in), [`ints`] and [`id_arrays`] (ids to and from Python
//! ints and arrays, [`ids`] choosing between them), [`id_text`] (the command line's id
//! text), [`patterns`] (the OpenAI patterns and where a file may be cut), [`data`] (JSON
//! Lines blocks and Arrow columns straight to ids), [`hf_face`] (the HF face's per-token
//! work on lists) and [`train`].

use pyo3::prelude::*;

mod batches;
mod core_bpe;
mod data;
mod errors;
mod hf_face;
mod id_arrays;
mod id_text;
mod ids;
mod ints;
mod patterns;
mod seq;
mod train;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<core_bpe::PyCoreBPE>()?;
    id_text::register(m)?;
    patterns::register(m)?;
    data::register(m)?;
    hf_face::register(m)?;
    train::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
