//! The binding layer: converts Python values to Rust and Rust errors to Python
//! exceptions, and nothing else. All work happens in the core with the GIL
//! released (`py.detach`); batches run on the core's threads ([`crate::runtime::batch`]), and
//! `encode_lists` builds each list on the calling thread as the helpers' ids come in.

use crate::encode::encoder::{Allowed, Encoder};
use crate::error::Error;
use crate::runtime::batch::{
    batch_map, batch_map_until, helper_threads, shared_ends, spin_until, with_helpers,
};
use crate::runtime::pool::cores;
use crate::vocab::Rank;
use numpy::PyArray1;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use rustc_hash::FxHashMap;
use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

mod id_arrays;
mod ints;
mod train;

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
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Error> + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(panic_error)?
        .map_err(PyErr::from)
}

/// Runs `f` with the GIL released on `data` as text, with every special token allowed or
/// none: the parts of a file that the command line hands over as bytes, never decoded by
/// Python. Bytes that are not UTF-8 raise the `UnicodeDecodeError` Python's decoder gives
/// (the same position: the start of the first bad sequence); with none allowed, text that
/// holds a special token's text raises `ValueError`, as `Encoding.encode` does by default.
fn on_utf8<T: Send>(
    py: Python<'_>,
    enc: &Encoder,
    data: &[u8],
    allow_special: bool,
    f: impl FnOnce(&str, Allowed<'_>) -> Result<T, Error> + Send,
) -> PyResult<T> {
    enum Stop {
        NotUtf8(std::str::Utf8Error),
        Special,
    }
    let done = detached(py, || {
        let text = match std::str::from_utf8(data) {
            Ok(text) => text,
            Err(e) => return Ok(Err(Stop::NotUtf8(e))),
        };
        if allow_special {
            f(text, Allowed::All).map(Ok)
        } else if enc.holds_special_text(text) {
            Ok(Err(Stop::Special))
        } else {
            f(text, Allowed::None).map(Ok)
        }
    })?;
    done.map_err(|stop| match stop {
        Stop::NotUtf8(e) => pyo3::exceptions::PyUnicodeDecodeError::new_err_from_utf8(py, data, e),
        Stop::Special => PyValueError::new_err("the text holds a special token"),
    })
}

/// Reads `tokens` into `ids` when it is a list of plain ints that fit in a `u32` (what
/// `encode` returns), straight from the list's item array: no iterator protocol and no
/// reference counting per item; or when it is a one-dimensional integer array (see
/// `id_arrays`). Returns `false` (with `ids` in any state) for anything else, which then
/// takes pyo3's general extraction and gets its errors.
fn ids_read_directly(tokens: &Bound<'_, PyAny>, ids: &mut Vec<Rank>) -> bool {
    match tokens.cast_exact::<PyList>() {
        Ok(list) => ints::list_ids(list, ids),
        Err(_) => id_arrays::array_ids(tokens, ids),
    }
}

/// `batch` as id lists: a list of lists of ints (what the batch encoders return) or of id
/// arrays is read with [`ids_read_directly`]; anything else, or a list with an item that is
/// neither, takes pyo3's general extraction and gets its errors. The general one
/// was most of `decode_bytes_batch`'s time: 16 lists of 2,000 bytes of English took 174-188
/// us on one thread, and take 32 us this way (cl100k, best of 7 rounds).
fn id_lists(batch: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<Rank>>> {
    if let Ok(list) = batch.cast_exact::<PyList>() {
        let mut out = Vec::with_capacity(list.len());
        for item in list.iter() {
            let mut ids = Vec::new();
            if !ids_read_directly(&item, &mut ids) {
                return batch.extract();
            }
            out.push(ids);
        }
        return Ok(out);
    }
    batch.extract()
}

/// A batch with less work than this runs on the calling thread alone, whatever
/// `num_threads` says: a helper thread, woken for it, starts 45-62 us late (median; p90
/// 72-255 us, rayon's pool on 2 vCPUs), so below this the helper cannot pay for its wake.
/// Bytes of text for the encoders (at ~150-250 MB/s, ~150 us of work); ids for decoding.
const SHARED_MIN_BYTES: usize = 32 << 10;
const SHARED_MIN_IDS: usize = 64 << 10;

/// `num_threads`, or 1 for a batch of less text than [`SHARED_MIN_BYTES`].
fn threads_for(texts: &[PyBackedStr], num_threads: usize) -> usize {
    if texts.iter().map(|t| t.len()).sum::<usize>() < SHARED_MIN_BYTES {
        1
    } else {
        num_threads
    }
}

/// Id lists and arrays shorter than this are decoded on the calling thread with the GIL
/// held (a few microseconds, less than releasing and taking it back, or waking a helper);
/// longer ones on the helper threads too, in pieces of [`DECODE_PIECE`] ids (~25 us of work
/// each) handed out from both ends, or on a one-core machine with the GIL released.
const DECODE_SHARED_MIN: usize = 1 << 16;
const DECODE_PIECE: usize = 1 << 13;

/// Whether `n` ids are decoded on more threads than the caller's.
fn shared_decode(n: usize) -> bool {
    n >= DECODE_SHARED_MIN && cores() > 1
}

/// The bytes of a long list of ids, in pieces, read and decoded by this thread and the
/// helpers together; `None` (nothing done) for anything else: not a list, a short one, one
/// machine core, ints the helpers cannot read from memory alone, or any error (the one-thread
/// path then meets the same input and raises its errors, in tiktoken's order).
///
/// Reading a list's ints is much of `decode_bytes`' time (43% of the samples on tiktoken's
/// ids of cl100k multilingual: each is a 32-byte object of its own, out of cache), and the
/// helpers can share it because this thread keeps the GIL for the whole call: the list and
/// its ints cannot change while they are read.
fn decode_list_shared(enc: &Encoder, tokens: &Bound<'_, PyAny>) -> PyResult<Option<Vec<Vec<u8>>>> {
    let Ok(list) = tokens.cast_exact::<PyList>() else {
        return Ok(None);
    };
    if !shared_decode(list.len()) {
        return Ok(None);
    }
    // SAFETY: this thread holds the GIL (`list` is a `Bound`) from here to the end of the
    // function and runs no Python code in between: `batch_map` runs the Rust closure below
    // and returns only once every helper is done with it, so no reference to `items`
    // outlives this function.
    let Some(items) = (unsafe { ints::SharedItems::new(list) }) else {
        return Ok(None);
    };
    let pieces: Vec<std::ops::Range<usize>> = (0..list.len())
        .step_by(DECODE_PIECE)
        .map(|start| start..(start + DECODE_PIECE).min(list.len()))
        .collect();
    let decoded = catch_unwind(AssertUnwindSafe(|| {
        batch_map(&pieces, cores(), |range| {
            let mut ids = Vec::new();
            if !items.read(range.clone(), &mut ids) {
                return Err(Error::Input("not an id int".into()));
            }
            enc.decode_bytes(&ids)
        })
    }))
    .map_err(panic_error)?;
    Ok(decoded.ok())
}

/// `parts` joined into one `bytes`.
fn joined_bytes<'py>(py: Python<'py>, parts: &[Vec<u8>]) -> PyResult<Bound<'py, PyBytes>> {
    let len = parts.iter().map(Vec::len).sum();
    PyBytes::new_with(py, len, |out| {
        let mut at = 0;
        for part in parts {
            out[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Ok(())
    })
}

/// Appends the bytes of `ids` to `out`, catching a panic as [`detached`] does, with the GIL
/// held.
fn decode_holding_gil(enc: &Encoder, ids: &[Rank], out: &mut Vec<u8>) -> PyResult<()> {
    catch_unwind(AssertUnwindSafe(|| enc.decode_into(ids, out)))
        .map_err(panic_error)?
        .map_err(PyErr::from)
}

/// Per-thread buffers for `decode_bytes`, reused so that a large decode does not pay for
/// fresh pages each time (dropped when they grow past [`SCRATCH_KEEP`]).
struct DecodeScratch {
    ids: Vec<Rank>,
    bytes: Vec<u8>,
}

const SCRATCH_KEEP: usize = 16 << 20;

thread_local! {
    static DECODE_SCRATCH: std::cell::RefCell<DecodeScratch> = const {
        std::cell::RefCell::new(DecodeScratch { ids: Vec::new(), bytes: Vec::new() })
    };
}

/// A caught panic as the `RuntimeError` users see.
fn panic_error(p: Box<dyn std::any::Any + Send>) -> PyErr {
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
struct Stash(std::sync::Mutex<Option<PyErr>>);

impl Stash {
    /// Runs `f` with the GIL taken back; an exception from it is kept here, and the work is
    /// told to stop (`Error::Interrupted`).
    fn attached(&self, f: impl FnOnce(Python<'_>) -> PyResult<()>) -> Result<(), Error> {
        Python::attach(f).map_err(|e| {
            if let Ok(mut slot) = self.0.lock() {
                *slot = Some(e);
            }
            Error::Interrupted
        })
    }

    /// The kept exception if there is one, else `r`.
    fn finish<T>(&self, r: PyResult<T>) -> PyResult<T> {
        match self.0.lock().ok().and_then(|mut s| s.take()) {
            Some(e) => Err(e),
            None => r,
        }
    }
}

/// Ctrl-C for work that runs with the GIL released: about every [`SignalPoll::EVERY`], the
/// calling thread takes the GIL back for a moment and runs Python's signal handlers
/// (`PyErr_CheckSignals`, which does nothing off the main thread). An exception from one
/// (`KeyboardInterrupt`) stops the work and is raised as is (`stash.finish`).
struct SignalPoll {
    calls: u32,
    next: std::time::Instant,
    stash: Stash,
}

impl SignalPoll {
    const EVERY: std::time::Duration = std::time::Duration::from_millis(20);

    fn new() -> Self {
        SignalPoll {
            calls: 0,
            next: std::time::Instant::now() + Self::EVERY,
            stash: Stash::default(),
        }
    }

    /// Should the work stop? Called between items; reads the clock every 16th call.
    fn stop(&mut self) -> bool {
        self.calls = self.calls.wrapping_add(1);
        if self.calls % 16 != 0 || std::time::Instant::now() < self.next {
            return false;
        }
        self.next = std::time::Instant::now() + Self::EVERY;
        self.stash.attached(|py| py.check_signals()).is_err()
    }
}

/// [`batch_map`] over texts, stopped by `poll` (Ctrl-C).
fn batch<T: Send>(
    texts: &[PyBackedStr],
    num_threads: usize,
    poll: &mut SignalPoll,
    f: impl Fn(&str) -> Result<T, Error> + Sync + Send,
) -> Result<Vec<T>, Error> {
    batch_map_until(texts, num_threads, |t| f(t), || poll.stop())
}

/// Loads NumPy's C API for the arrays ferrotok returns, once per process, where no signal
/// handler can interrupt it.
///
/// rust-numpy loads it at its first array, running Python code on the way (it asks
/// `numpy.lib.NumpyVersion` which module holds the API), and panics if that code raises. A
/// signal handler may run in that code on the main thread (Ctrl-C: `KeyboardInterrupt`), so
/// a Ctrl-C at the wrong moment came out as a `PanicException`. Python runs signal handlers
/// only on the main thread, so the API is loaded on a thread of its own.
fn numpy_api(py: Python<'_>) -> PyResult<()> {
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

/// `(ids, offsets)` of a flat batch.
type FlatBatch<'py> = (Bound<'py, PyArray1<Rank>>, Bound<'py, PyArray1<i64>>);

/// How often a long list batch lets other Python threads take the GIL, and how long it then
/// goes without it (encoding texts meanwhile). Otherwise the calling thread gives the GIL up
/// only for one text at a time (~15 us for 4 KB), or not at all while it builds the lists of
/// the helpers' results, and takes it back at once: too soon for a thread waiting for the GIL
/// to wake up (~60 us on a 2-vCPU VM), and CPython asks a holder to drop it only after a
/// waiter has seen no hand-over for 5 ms. Measured before: 30,000 texts of ~4 KB (a 450 ms
/// call), a Python thread that ticks every 1 ms ran once during the call.
const GIL_SHARE_EVERY: std::time::Duration = std::time::Duration::from_millis(5);
const GIL_SHARE_FOR: std::time::Duration = std::time::Duration::from_micros(150);

/// `[encode(t) for t in texts]` as a list of lists, on `num_threads` threads: this one,
/// which takes texts from the front, and helpers that take them from the back
/// ([`TwoEnds`](crate::runtime::two_ends::TwoEnds)).
/// This thread also builds every list (which needs the GIL) as results come in, so list
/// building overlaps encoding instead of following it. An error is the one of the first
/// failing text, as in a sequential loop (see [`batch_map`]). Signal handlers run between
/// texts: an exception from one (Ctrl-C) stops every thread after its current text and
/// comes out of the call.
fn encode_lists<'py>(
    py: Python<'py>,
    texts: &[PyBackedStr],
    num_threads: usize,
    encode: impl Fn(&str) -> Result<Vec<Rank>, Error> + Sync + Send,
) -> PyResult<Bound<'py, PyList>> {
    let Some(ends) = shared_ends(texts.len(), num_threads) else {
        let mut lists = Vec::with_capacity(texts.len());
        for t in texts {
            let ids = detached(py, || encode(t))?;
            lists.push(ints::id_list(py, &ids)?);
            py.check_signals()?; // Ctrl-C between texts
        }
        return PyList::new(py, lists);
    };
    type Done = std::thread::Result<Result<Vec<Rank>, Error>>;
    let run = |i: usize| -> Done { catch_unwind(AssertUnwindSafe(|| encode(&texts[i]))) };
    let n = texts.len();
    let helpers = helper_threads(num_threads, n);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Done)>();
    let mut lists: Vec<Option<Bound<'py, PyList>>> = vec![None; n];
    let mut failed: Option<(usize, PyErr)> = None;
    let mut interrupted: Option<PyErr> = None;
    let mut record = |i: usize, r: Done| {
        let result = match r {
            Ok(Ok(ids)) => ints::id_list(py, &ids),
            Ok(Err(e)) => Err(e.into()),
            Err(p) => Err(panic_error(p)),
        };
        match result {
            Ok(list) => lists[i] = Some(list),
            Err(e) => {
                if failed.as_ref().is_none_or(|(j, _)| i < *j) {
                    failed = Some((i, e));
                }
            }
        }
    };
    // One sender per helper, taken when it starts; with the first one dropped here, the
    // receiver sees the end once every helper has finished or died.
    let senders = std::sync::Mutex::new(vec![tx; helpers]);
    let help = || {
        let tx = senders.lock().ok().and_then(|mut s| s.pop());
        let Some(tx) = tx else { return };
        while let Some(i) = ends.back() {
            if tx.send((i, run(i))).is_err() {
                break;
            }
        }
    };
    with_helpers(helpers, help, || {
        // This thread turns the helpers' results into lists (that needs the GIL) and, when
        // none is waiting, encodes a text itself with the GIL released: list building and
        // encoding share the cores instead of list building waiting for all the encoding.
        let mut rx = rx;
        let mut done = 0;
        // The clock is read every 16th step (~25 ns a read against ~15 us a 4 KB text).
        let (mut steps, mut share_at) = (0u32, std::time::Instant::now() + GIL_SHARE_EVERY);
        while done < n {
            // Ctrl-C (checked after every text, as the helpers' results can keep this
            // thread building lists to the end): no thread takes another text, and the
            // handler's exception is raised.
            if let Err(e) = py.check_signals() {
                ends.close();
                interrupted = Some(e);
                break;
            }
            // Every `GIL_SHARE_EVERY`, one release long enough for another Python thread to
            // take the GIL: texts from the front until `GIL_SHARE_FOR` is up, if any are left.
            steps = steps.wrapping_add(1);
            if steps % 16 == 0 && std::time::Instant::now() >= share_at {
                share_at = std::time::Instant::now() + GIL_SHARE_EVERY;
                if let Some(i) = ends.front() {
                    let mine = py.detach(|| {
                        let until = std::time::Instant::now() + GIL_SHARE_FOR;
                        let mut mine = vec![(i, run(i))];
                        while std::time::Instant::now() < until {
                            let Some(j) = ends.front() else { break };
                            mine.push((j, run(j)));
                        }
                        mine
                    });
                    for (j, r) in mine {
                        record(j, r);
                        done += 1;
                    }
                    continue;
                }
                // No text left to take (this thread builds the lists of the helpers' last
                // results): the release is a sleep.
                py.detach(|| std::thread::sleep(GIL_SHARE_FOR));
            }
            // The helpers' results first, one at a time.
            if let Ok((i, r)) = rx.try_recv() {
                record(i, r);
                done += 1;
                continue;
            }
            if let Some(i) = ends.front() {
                let r = py.detach(|| run(i));
                record(i, r);
                done += 1;
            } else {
                // Nothing left to take: wait for the helpers (the receiver moves in and
                // out of the GIL-free closure: it is not `Sync`).
                let (got, back) = py.detach(move || {
                    use std::sync::mpsc::{RecvError, TryRecvError};
                    let mut got = Err(TryRecvError::Empty);
                    spin_until(|| {
                        got = rx.try_recv();
                        !matches!(got, Err(TryRecvError::Empty))
                    });
                    let got = match got {
                        Err(TryRecvError::Empty) => rx.recv(),
                        got => got.map_err(|_| RecvError),
                    };
                    (got, rx)
                });
                rx = back;
                match got {
                    Ok((i, r)) => {
                        record(i, r);
                        done += 1;
                    }
                    Err(_) => break,
                }
            }
        }
    });
    if let Some(e) = interrupted {
        return Err(e);
    }
    if let Some((_, e)) = failed {
        return Err(e);
    }
    let lists = lists
        .into_iter()
        .map(|l| l.ok_or_else(|| panic_error(Box::new("a batch result went missing"))))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, lists)
}

/// The compiled encoder behind `ferrotok.Encoding` (tiktoken's `CoreBPE`).
#[pyclass(frozen, module = "ferrotok._core", name = "CoreBPE")]
pub struct PyCoreBPE {
    inner: Arc<Encoder>,
}

impl PyCoreBPE {
    fn wrap(inner: Encoder) -> Self {
        PyCoreBPE {
            inner: Arc::new(inner),
        }
    }
}

enum AllowedSet {
    None,
    All,
    Mask(Vec<bool>),
}

impl AllowedSet {
    fn as_allowed(&self) -> Allowed<'_> {
        match self {
            AllowedSet::None => Allowed::None,
            AllowedSet::All => Allowed::All,
            AllowedSet::Mask(m) => Allowed::Some(m),
        }
    }
}

impl PyCoreBPE {
    /// The special tokens an encode call allows, as Python passes them: the word `"all"`
    /// (every special token, without sending the set over: o200k_harmony has 1,088 of them,
    /// and turning that set into Rust strings each call took ~300 us) or a set of token
    /// texts. The word is checked for first, as a type check: a failed set extraction makes
    /// a Python error, which cost more than the rest of a short encode.
    fn allowed(&self, allowed_special: &Bound<'_, PyAny>) -> PyResult<AllowedSet> {
        if let Ok(word) = allowed_special.cast::<pyo3::types::PyString>() {
            return match word.to_str()? {
                "all" => Ok(AllowedSet::All),
                w => Err(PyValueError::new_err(format!(
                    "allowed_special must be 'all' or a set of special tokens, not {w:?}"
                ))),
            };
        }
        let allowed_special: HashSet<String> = allowed_special.extract()?;
        if allowed_special.is_empty() {
            return Ok(AllowedSet::None);
        }
        let mask = self
            .inner
            .allowed_mask(allowed_special.iter().map(String::as_str));
        Ok(if mask.iter().all(|&b| b) {
            AllowedSet::All
        } else if mask.iter().all(|&b| !b) {
            AllowedSet::None
        } else {
            AllowedSet::Mask(mask)
        })
    }
}

#[pymethods]
impl PyCoreBPE {
    #[new]
    fn new(
        py: Python<'_>,
        mergeable_ranks: FxHashMap<Vec<u8>, Rank>,
        special_tokens: Vec<(String, Rank)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let pattern = pattern.to_owned();
        let inner = detached(py, move || {
            Encoder::new(mergeable_ranks, special_tokens, &pattern)
        })?;
        Ok(PyCoreBPE::wrap(inner))
    }

    /// Builds the encoder straight from a `.tiktoken` file's bytes: no Python dict of ranks.
    #[staticmethod]
    fn from_tiktoken(
        py: Python<'_>,
        contents: &[u8],
        source: &str,
        special_tokens: Vec<(String, Rank)>,
        pattern: &str,
    ) -> PyResult<Self> {
        let inner = detached(py, || {
            Encoder::from_tiktoken(contents, source, special_tokens, pattern)
        })?;
        Ok(PyCoreBPE::wrap(inner))
    }

    /// `{token bytes: rank}` of the ordinary tokens (built on request).
    fn mergeable_ranks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let vocab = &self.inner.vocab;
        let d = PyDict::new(py);
        for r in 0..vocab.n_ids() as Rank {
            if let Some(b) = vocab.ordinary_bytes(r) {
                d.set_item(PyBytes::new(py, b), r)?;
            }
        }
        Ok(d)
    }

    /// Number of ordinary tokens.
    fn n_ordinary(&self) -> usize {
        self.inner.vocab.n_ordinary()
    }

    /// The largest ordinary rank (ordinary tokens only).
    fn max_ordinary_rank(&self) -> Option<Rank> {
        let vocab = &self.inner.vocab;
        (0..vocab.n_ids() as Rank)
            .rev()
            .find(|&r| vocab.ordinary_bytes(r).is_some())
    }

    fn count(
        &self,
        py: Python<'_>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        detached(py, || enc.count(text, allowed.as_allowed()))
    }

    fn count_batch(
        &self,
        py: Python<'_>,
        texts: Vec<PyBackedStr>,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
    ) -> PyResult<Vec<usize>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let mut poll = SignalPoll::new();
        let counts = detached(py, || {
            let a = allowed.as_allowed();
            batch(&texts, threads_for(&texts, num_threads), &mut poll, |t| {
                enc.count(t, a)
            })
        });
        poll.stash.finish(counts)
    }

    /// A batch as one flat id array plus offsets (`ids[offsets[i]..offsets[i + 1]]` is text
    /// i), for pipelines that don't want a Python list per text. Both arrays take over the
    /// Rust buffers: no copy.
    fn encode_batch_to_numpy<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
    ) -> PyResult<FlatBatch<'py>> {
        numpy_api(py)?;
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let mut poll = SignalPoll::new();
        let flat = detached(py, || {
            let a = allowed.as_allowed();
            let parts = batch(&texts, threads_for(&texts, num_threads), &mut poll, |t| {
                enc.encode(t, a)
            })?;
            let total = parts.iter().map(Vec::len).sum();
            let mut ids = Vec::with_capacity(total);
            let mut offsets = Vec::with_capacity(parts.len() + 1);
            offsets.push(0i64);
            for p in parts {
                ids.extend_from_slice(&p);
                offsets.push(ids.len() as i64);
            }
            Ok((ids, offsets))
        });
        let (ids, offsets) = poll.stash.finish(flat)?;
        Ok((PyArray1::from_vec(py, ids), PyArray1::from_vec(py, offsets)))
    }

    /// Builds now the tables encoding builds at its first need, and the int objects of every
    /// ordinary id, so that processes forked after this share them.
    fn build_tables(&self, py: Python<'_>) -> PyResult<()> {
        let enc = &self.inner;
        detached(py, || {
            enc.build_tables();
            Ok(())
        })?;
        if let Some(top) = enc.vocab.max_ordinary_id() {
            ints::make_id_ints(py, top);
        }
        Ok(())
    }

    /// Which of `build_tables`'s tables are built: `(name, built)` pairs, for tests.
    fn tables_built(&self) -> Vec<(&'static str, bool)> {
        self.inner.tables_built()
    }

    fn encode_ordinary<'py>(&self, py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyList>> {
        let enc = &self.inner;
        let ids = detached(py, || enc.encode_ordinary(text))?;
        ints::id_list(py, &ids)
    }

    /// `encode_ordinary(text)`, or `None` if the text of a special token occurs in it.
    fn encode_unless_special<'py>(
        &self,
        py: Python<'py>,
        text: &str,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let enc = &self.inner;
        match detached(py, || enc.encode_unless_special(text))? {
            Some(ids) => ints::id_list(py, &ids).map(Some),
            None => Ok(None),
        }
    }

    /// Does the text of any special token occur in any of `texts`?
    fn holds_special_text(&self, py: Python<'_>, texts: Vec<PyBackedStr>) -> PyResult<bool> {
        let enc = &self.inner;
        detached(py, || Ok(texts.iter().any(|t| enc.holds_special_text(t))))
    }

    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let ids = detached(py, || enc.encode(text, allowed.as_allowed()))?;
        ints::id_list(py, &ids)
    }

    fn encode_to_numpy<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<Rank>>> {
        numpy_api(py)?;
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let ids = detached(py, || enc.encode(text, allowed.as_allowed()))?;
        // Takes ownership of the Vec: the array's memory is the encoder's output, no copy.
        Ok(PyArray1::from_vec(py, ids))
    }

    /// The ids of `data`, a part of a file as UTF-8 bytes, as the bytes of native-endian
    /// 4-byte ints (for `array('I').frombytes`): the command line's way through a large
    /// file, with no `str` of the text, no int object an id and no list (see [`on_utf8`]).
    fn encode_utf8_to_bytes<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        allow_special: bool,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let enc = &self.inner;
        let ids = on_utf8(py, enc, data, allow_special, |text, allowed| {
            enc.encode(text, allowed)
        })?;
        packed_ids(py, &ids)
    }

    /// How many ids `data` (as in [`Self::encode_utf8_to_bytes`]) encodes to.
    fn count_utf8(&self, py: Python<'_>, data: &[u8], allow_special: bool) -> PyResult<usize> {
        let enc = &self.inner;
        on_utf8(py, enc, data, allow_special, |text, allowed| {
            enc.count(text, allowed)
        })
    }

    fn encode_ordinary_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let enc = &self.inner;
        encode_lists(py, &texts, threads_for(&texts, num_threads), |t| {
            enc.encode_ordinary(t)
        })
    }

    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        allowed_special: &Bound<'_, PyAny>,
        num_threads: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let a = allowed.as_allowed();
        encode_lists(py, &texts, threads_for(&texts, num_threads), |t| {
            enc.encode(t, a)
        })
    }

    fn encode_with_unstable<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        allowed_special: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let allowed = self.allowed(allowed_special)?;
        let enc = &self.inner;
        let (tokens, completions) =
            detached(py, || enc.encode_with_unstable(text, allowed.as_allowed()))?;
        let completions: Vec<Vec<Rank>> = completions.into_iter().collect();
        (tokens, completions).into_pyobject(py)
    }

    fn encode_single_token(&self, piece: &[u8]) -> PyResult<Rank> {
        Ok(self.inner.encode_single_token(piece)?)
    }

    fn encode_single_piece(&self, py: Python<'_>, piece: &[u8]) -> PyResult<Vec<Rank>> {
        let enc = &self.inner;
        detached(py, || enc.encode_single_piece(piece))
    }

    fn encode_bytes<'py>(&self, py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let enc = &self.inner;
        let ids = detached(py, || enc.encode_bytes(bytes))?;
        ints::id_list(py, &ids)
    }

    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        tokens: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let enc = &self.inner;
        if let Some(parts) = decode_list_shared(enc, tokens)? {
            return joined_bytes(py, &parts);
        }
        DECODE_SCRATCH.with(|scratch| {
            // Re-entry (not possible from Python, which holds one call per thread) would just
            // use fresh buffers.
            let mut fresh = DecodeScratch {
                ids: Vec::new(),
                bytes: Vec::new(),
            };
            let mut guard = scratch.try_borrow_mut().ok();
            let s = guard.as_deref_mut().unwrap_or(&mut fresh);
            // All ids are read before any is looked up (tiktoken's order of errors), and in a
            // loop of their own: reading an item chases a pointer to its int object, decoding
            // an id reads its slot in a table of megabytes, and apart each loop keeps many of
            // those loads in flight, where one fused loop waited on each in turn.
            if !ids_read_directly(tokens, &mut s.ids) {
                s.ids = tokens.extract::<Vec<Rank>>()?;
            }
            let (ids, bytes) = (&s.ids, &mut s.bytes);
            bytes.clear();
            let out = if ids.len() < DECODE_SHARED_MIN {
                decode_holding_gil(enc, ids, bytes)?;
                PyBytes::new(py, bytes)
            } else if shared_decode(ids.len()) {
                let parts = detached(py, || {
                    let pieces: Vec<&[Rank]> = ids.chunks(DECODE_PIECE).collect();
                    batch_map(&pieces, cores(), |ids| enc.decode_bytes(ids))
                })?;
                joined_bytes(py, &parts)?
            } else {
                detached(py, || enc.decode_into(ids, bytes))?;
                PyBytes::new(py, bytes)
            };
            if s.ids.capacity() * 4 > SCRATCH_KEEP || s.bytes.capacity() > SCRATCH_KEEP {
                *s = DecodeScratch {
                    ids: Vec::new(),
                    bytes: Vec::new(),
                };
            }
            Ok(out)
        })
    }

    fn decode_bytes_batch<'py>(
        &self,
        py: Python<'py>,
        batch: &Bound<'py, PyAny>,
        num_threads: usize,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let enc = &self.inner;
        let batch = id_lists(batch)?;
        let n_ids: usize = batch.iter().map(Vec::len).sum();
        let threads = if n_ids < SHARED_MIN_IDS {
            1
        } else {
            num_threads
        };
        let out = detached(py, || batch_map(&batch, threads, |t| enc.decode_bytes(t)))?;
        Ok(out.iter().map(|b| PyBytes::new(py, b)).collect())
    }

    fn decode_single_token_bytes<'py>(
        &self,
        py: Python<'py>,
        token: Rank,
    ) -> PyResult<Bound<'py, PyBytes>> {
        match self.inner.vocab.token_bytes(token) {
            Some(b) => Ok(PyBytes::new(py, b)),
            // tiktoken's `KeyError` for one token: the id as a string.
            None => Err(PyKeyError::new_err(token.to_string())),
        }
    }

    fn token_byte_values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let vocab = &self.inner.vocab;
        PyList::new(
            py,
            vocab
                .sorted_ranks()
                .iter()
                .map(|&r| PyBytes::new(py, vocab.ordinary_bytes(r).unwrap_or_default())),
        )
    }
}

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

/// `ids` as the bytes of native-endian 4-byte ints (what `array('I').frombytes` reads).
fn packed_ids<'py>(py: Python<'py>, ids: &[Rank]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, std::mem::size_of_val(ids), |out| {
        for (slot, id) in out.chunks_exact_mut(4).zip(ids) {
            slot.copy_from_slice(&id.to_ne_bytes());
        }
        Ok(())
    })
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
        values = ids.extract::<Vec<Rank>>()?;
    }
    let text = detached(py, || {
        let mut out = Vec::new();
        crate::vocab::id_text::write(&values, sep.as_bytes(), &mut out);
        Ok(out)
    })?;
    Ok(PyBytes::new(py, &text))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCoreBPE>()?;
    m.add_function(wrap_pyfunction!(parse_id_text, m)?)?;
    m.add_function(wrap_pyfunction!(parse_json_ids, m)?)?;
    m.add_function(wrap_pyfunction!(format_ids, m)?)?;
    train::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
