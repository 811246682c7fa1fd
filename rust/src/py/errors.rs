//! Errors across the boundary: core errors as the Python exceptions tiktoken raises, a panic
//! (always a ferrotok bug) as a `RuntimeError`, and exceptions raised by Python code that
//! GIL-free work called back (a signal handler, a progress callback) kept until the work has
//! unwound.
//!
//! Invariant: no panic and no core error leaves a binding as anything but a Python exception;
//! work runs with the GIL released through [`detached`], which catches both.

use crate::error::Error;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::panic::{catch_unwind, AssertUnwindSafe};

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        match e {
            // tiktoken's `KeyError` from decoding a list of ids (its argument is this text).
            Error::UnknownToken(t) => {
                PyKeyError::new_err(format!("Invalid token for decoding: {t}"))
            }
            Error::UnknownBytes(b) => PyKeyError::new_err(PyBytesKey(b)),
            Error::Io(m) => pyo3::exceptions::PyOSError::new_err(m),
            other => PyValueError::new_err(other.to_string()),
        }
    }
}

/// A `KeyError` argument that shows as Python `bytes`, like tiktoken's.
struct PyBytesKey(Vec<u8>);

impl<'py> IntoPyObject<'py> for PyBytesKey {
    type Target = PyBytes;
    type Output = Bound<'py, PyBytes>;
    type Error = std::convert::Infallible;
    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Ok(PyBytes::new(py, &self.0))
    }
}

/// Run core work with the GIL released and any panic turned into a Python
/// `RuntimeError` (a panic is a ferrotok bug, never the user's input).
pub(super) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(panic_error)?
        .map_err(PyErr::from)
}

thread_local! {
    /// The exception a signal handler raised while [`detached_polled`] work ran.
    static SIGNAL_ERROR: std::cell::RefCell<Option<PyErr>> = const { std::cell::RefCell::new(None) };
}

/// The stop hook of [`detached_polled`]: takes the GIL back for a moment and runs Python's
/// signal handlers; an exception from one (Ctrl-C) is kept for the caller and stops the work.
pub(super) fn signal_raised() -> bool {
    match Python::attach(|py| py.check_signals()) {
        Ok(()) => false,
        Err(e) => {
            SIGNAL_ERROR.with(|s| *s.borrow_mut() = Some(e));
            true
        }
    }
}

/// The exception [`signal_raised`] kept on this thread, if any (taken).
pub(super) fn take_signal_error() -> Option<PyErr> {
    SIGNAL_ERROR.with(|s| s.borrow_mut().take())
}

/// [`detached`] for one long text: the core polls for Ctrl-C as it goes
/// ([`crate::runtime::interrupt`]), at most every 20 ms, and the handler's exception is
/// raised as is.
pub(super) fn detached_polled<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    let r = detached(py, || {
        crate::runtime::interrupt::with_hook(signal_raised, f)
    });
    match SIGNAL_ERROR.with(|s| s.borrow_mut().take()) {
        Some(e) => Err(e),
        None => r,
    }
}

/// A caught panic as the `RuntimeError` users see.
pub(super) fn panic_error(p: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    PyRuntimeError::new_err(format!("internal error in ferrotok (please report): {msg}"))
}

/// Holds the exception that Python code run from GIL-free work raised (a signal handler, a
/// progress callback) until the work has unwound, and then raises it as is.
#[derive(Default)]
pub(super) struct Stash(std::sync::Mutex<Option<PyErr>>);

impl Stash {
    /// Runs `f` with the GIL taken back; an exception from it is kept here, and the work is
    /// told to stop (`Error::Interrupted`).
    pub(super) fn attached(&self, f: impl FnOnce(Python<'_>) -> PyResult<()>) -> Result<(), Error> {
        Python::attach(f).map_err(|e| {
            if let Ok(mut slot) = self.0.lock() {
                *slot = Some(e);
            }
            Error::Interrupted
        })
    }

    /// The kept exception if there is one, else `r`.
    pub(super) fn finish<T>(&self, r: PyResult<T>) -> PyResult<T> {
        match self.0.lock().ok().and_then(|mut s| s.take()) {
            Some(e) => Err(e),
            None => r,
        }
    }
}
