//! Bindings for training: `Counter` (streaming piece counting), `PieceCounts` and
//! `learn_merges`. Only conversions here; the work is in `crate::train`, run with the GIL
//! released. Progress hooks re-acquire the GIL briefly, check for signals (Ctrl-C) and
//! call the Python callback; an exception there stops the work and is re-raised as is.

use super::errors::{detached, Stash};
use crate::error::Error;
use crate::train::{learn, Counter, MergeConfig, Piece, PieceCounts, Progress};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyString};
use std::path::PathBuf;
use std::sync::Arc;

impl Stash {
    /// The progress hook of training: Python's signal handlers (Ctrl-C), then the callback
    /// if there is one; an exception from either stops the work ([`Stash::attached`]).
    fn hook<'a>(
        &'a self,
        callback: Option<&'a Py<PyAny>>,
    ) -> impl FnMut(Progress) -> Result<(), Error> + 'a {
        move |p| {
            self.attached(|py| {
                py.check_signals()?;
                if let Some(cb) = callback {
                    let (phase, done, total) = match p {
                        Progress::Counting { done, total } => ("counting", done, total),
                        Progress::Merging { done, total } => ("merging", done, Some(total)),
                    };
                    cb.call1(py, (phase, done, total))?;
                }
                Ok(())
            })
        }
    }
}

/// Distinct pieces and their counts, with the pattern and special tokens used.
#[pyclass(frozen, module = "ferrotok._core", name = "PieceCounts")]
pub struct PyPieceCounts {
    inner: Arc<PieceCounts>,
}

#[pymethods]
impl PyPieceCounts {
    #[new]
    fn new(pattern: String, special_tokens: Vec<String>) -> Self {
        PyPieceCounts {
            inner: Arc::new(PieceCounts::new(pattern, special_tokens)),
        }
    }

    #[getter]
    fn pattern(&self) -> &str {
        &self.inner.pattern
    }

    #[getter]
    fn special_tokens(&self) -> Vec<String> {
        self.inner.specials.clone()
    }

    fn __len__(&self) -> usize {
        self.inner.counts.len()
    }

    fn total(&self) -> u64 {
        self.inner.total()
    }

    fn add(&self, py: Python<'_>, other: &PyPieceCounts) -> PyResult<PyPieceCounts> {
        let (a, b) = (&self.inner, &other.inner);
        let sum = detached(py, || {
            // Copy the bigger one and add the smaller into it.
            let (big, small) = if a.counts.len() >= b.counts.len() {
                (a, b)
            } else {
                (b, a)
            };
            let mut out = PieceCounts::clone(big);
            out.add(small)?;
            out.pattern.clone_from(&a.pattern);
            Ok(out)
        })?;
        Ok(PyPieceCounts {
            inner: Arc::new(sum),
        })
    }

    fn equals(&self, other: &PyPieceCounts) -> bool {
        self.inner == other.inner
    }

    /// `(piece, count)` for the `n` most frequent pieces (all if `None`), most frequent
    /// first, ties by piece.
    #[pyo3(signature = (n=None))]
    fn most_common(&self, py: Python<'_>, n: Option<usize>) -> PyResult<Vec<(String, u64)>> {
        let inner = &self.inner;
        detached(py, || {
            let mut v: Vec<(Piece<'_>, u64)> = inner.counts.iter().collect();
            v.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.as_bytes().cmp(b.0.as_bytes())));
            v.truncate(n.unwrap_or(usize::MAX));
            Ok(v.into_iter()
                .map(|(k, c)| (k.as_str().to_owned(), c))
                .collect())
        })
    }

    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        let data = detached(py, || Ok(inner.to_bytes()))?;
        Ok(PyBytes::new(py, &data))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<PyPieceCounts> {
        let inner = detached(py, || PieceCounts::from_bytes(data))?;
        Ok(PyPieceCounts {
            inner: Arc::new(inner),
        })
    }
}

/// Counts pieces as text arrives: `add_texts` for batches of strings, `add_files` for
/// paths, then `finish`.
#[pyclass(module = "ferrotok._core", name = "Counter")]
pub struct PyCounter {
    inner: Option<Counter>,
}

impl PyCounter {
    fn counter(&mut self) -> PyResult<&mut Counter> {
        self.inner
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("this Counter is finished"))
    }
}

#[pymethods]
impl PyCounter {
    #[new]
    #[pyo3(signature = (pattern, special_tokens, num_threads=0))]
    fn new(
        py: Python<'_>,
        pattern: String,
        special_tokens: Vec<String>,
        num_threads: usize,
    ) -> PyResult<Self> {
        let c = detached(py, move || {
            Counter::new(&pattern, special_tokens, num_threads)
        })?;
        Ok(PyCounter { inner: Some(c) })
    }

    /// Counts a batch of texts; `first` is the index of `texts[0]` in the caller's input,
    /// so a non-`str` item is reported by its place there.
    #[pyo3(signature = (texts, first=0, progress=None))]
    fn add_texts(
        &mut self,
        py: Python<'_>,
        texts: Vec<Bound<'_, PyAny>>,
        first: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let mut strs: Vec<PyBackedStr> = Vec::with_capacity(texts.len());
        for (i, t) in texts.iter().enumerate() {
            let i = first + i;
            if !t.is_instance_of::<PyString>() {
                let ty = t.get_type().name()?;
                return Err(PyTypeError::new_err(format!(
                    "item {i} of the input is {ty}, not str (pass either texts (str) or \
                     paths (os.PathLike), not both)"
                )));
            }
            strs.push(t.extract().map_err(|e: PyErr| {
                PyValueError::new_err(format!("item {i} of the input is not valid Unicode: {e}"))
            })?);
        }
        drop(texts);
        let texts = strs;
        let c = self.counter()?;
        let stash = Stash::default();
        let r = {
            let mut hook = stash.hook(progress.as_ref());
            detached(py, || c.add_texts(&texts, &mut hook))
        };
        stash.finish(r)
    }

    #[pyo3(signature = (paths, progress=None))]
    fn add_files(
        &mut self,
        py: Python<'_>,
        paths: Vec<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let c = self.counter()?;
        let stash = Stash::default();
        let r = {
            let mut hook = stash.hook(progress.as_ref());
            detached(py, || c.add_files(&paths, &mut hook))
        };
        stash.finish(r)
    }

    #[getter]
    fn bytes_counted(&self) -> u64 {
        self.inner.as_ref().map_or(0, Counter::bytes_counted)
    }

    fn finish(&mut self) -> PyResult<PyPieceCounts> {
        let c = self
            .inner
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this Counter is finished"))?;
        Ok(PyPieceCounts {
            inner: Arc::new(c.finish()),
        })
    }
}

/// Learns up to `n_merges` merges; returns the bytes of tokens 256, 257, ... in order.
#[pyfunction]
#[pyo3(signature = (counts, n_merges, min_frequency=0, max_token_length=None, progress=None))]
fn learn_merges<'py>(
    py: Python<'py>,
    counts: &PyPieceCounts,
    n_merges: usize,
    min_frequency: u64,
    max_token_length: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let cfg = MergeConfig {
        n_merges,
        min_frequency,
        max_token_length,
    };
    let inner = &counts.inner;
    let stash = Stash::default();
    let r = {
        let mut hook = stash.hook(progress.as_ref());
        detached(py, || learn(inner.counts.iter(), cfg, &mut hook))
    };
    let learned = stash.finish(r)?;
    Ok(learned.tokens[256..]
        .iter()
        .map(|t| PyBytes::new(py, t))
        .collect())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPieceCounts>()?;
    m.add_class::<PyCounter>()?;
    m.add_function(wrap_pyfunction!(learn_merges, m)?)?;
    Ok(())
}
