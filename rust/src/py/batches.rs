//! Batches from Python: how a batch of texts or ids is spread over the core's threads
//! ([`crate::runtime::batch`]) while this thread keeps what needs the GIL — Ctrl-C, and
//! building each list as the helpers' ids come in.
//!
//! Invariant: a batch returns what the sequential loop over its items would (the results in
//! order, or the first failing item's error); a Ctrl-C stops every thread after its current
//! item and its `KeyboardInterrupt` comes out of the call as is.

use super::errors::{detached_polled, panic_error, signal_raised, take_signal_error, Stash};
use super::ints;
use crate::encode::encoder::Encoder;
use crate::error::Error;
use crate::runtime::batch::{
    batch_map, batch_map_until, helper_threads, shared_decode, shared_ends, spin_until,
    threads_for_text, with_helpers, DECODE_PIECE,
};
use crate::runtime::pool::cores;
use crate::vocab::Rank;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyList;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// How long a batch's calling thread waits for a helper's result before it checks for
/// Ctrl-C again.
const SIGNAL_WAIT: std::time::Duration = std::time::Duration::from_millis(20);

/// `num_threads`, or 1 for a batch of too little text to pay for a helper's wake (see
/// [`threads_for_text`]).
pub(super) fn threads_for(texts: &[PyBackedStr], num_threads: usize) -> usize {
    threads_for_text(texts.iter().map(|t| t.len()).sum(), num_threads)
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
pub(super) fn decode_list_shared(
    enc: &Encoder,
    tokens: &Bound<'_, PyAny>,
) -> PyResult<Option<Vec<Vec<u8>>>> {
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

/// Ctrl-C for work that runs with the GIL released: about every [`SignalPoll::EVERY`], the
/// calling thread takes the GIL back for a moment and runs Python's signal handlers
/// (`PyErr_CheckSignals`, which does nothing off the main thread). An exception from one
/// (`KeyboardInterrupt`) stops the work and is raised as is (`stash.finish`).
pub(super) struct SignalPoll {
    calls: u32,
    every: std::time::Duration,
    next: std::time::Instant,
    pub(super) stash: Stash,
}

impl SignalPoll {
    const EVERY: std::time::Duration = std::time::Duration::from_millis(20);

    pub(super) fn new() -> Self {
        Self::every(Self::EVERY)
    }

    /// A poll that looks about every `every` instead (taking the GIL costs the work more
    /// when other Python threads are busy with it, as the data job's reader and writer are).
    pub(super) fn every(every: std::time::Duration) -> Self {
        SignalPoll {
            calls: 0,
            every,
            next: std::time::Instant::now() + every,
            stash: Stash::default(),
        }
    }

    /// Should the work stop? Called between items; reads the clock every 16th call.
    pub(super) fn stop(&mut self) -> bool {
        self.calls = self.calls.wrapping_add(1);
        if self.calls % 16 != 0 || std::time::Instant::now() < self.next {
            return false;
        }
        self.next = std::time::Instant::now() + self.every;
        self.stash.attached(|py| py.check_signals()).is_err()
    }
}

/// [`batch_map`] over texts, stopped by `poll` (Ctrl-C).
pub(super) fn batch<T: Send>(
    texts: &[PyBackedStr],
    num_threads: usize,
    poll: &mut SignalPoll,
    f: impl Fn(&str) -> Result<T, Error> + Sync + Send,
) -> Result<Vec<T>, Error> {
    batch_map_until(texts, num_threads, |t| f(t), || poll.stop())
}

/// How often a long list batch lets other Python threads take the GIL, and how long it then
/// goes without it (encoding texts meanwhile). Otherwise the calling thread gives the GIL up
/// only for one text at a time (~15 us for 4 KB), or not at all while it builds the lists of
/// the helpers' results, and takes it back at once: too soon for a thread waiting for the GIL
/// to wake up (~60 us on a 2-vCPU VM), and CPython asks a holder to drop it only after a
/// waiter has seen no hand-over for 5 ms: a Python thread that ticks every 1 ms would run
/// once during a half-second batch.
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
pub(super) fn encode_lists<'py>(
    py: Python<'py>,
    texts: &[PyBackedStr],
    num_threads: usize,
    encode: impl Fn(&str) -> Result<Vec<Rank>, Error> + Sync + Send,
) -> PyResult<Bound<'py, PyList>> {
    encode_objects(py, texts, num_threads, encode, |ids| {
        Ok(ints::id_list(py, &ids)?.into_any())
    })
}

/// [`encode_lists`] with each text's result of any kind, made into its Python object by
/// `make` (on this thread, with the GIL) as it comes in.
pub(super) fn encode_objects<'py, T: Send>(
    py: Python<'py>,
    texts: &[PyBackedStr],
    num_threads: usize,
    encode: impl Fn(&str) -> Result<T, Error> + Sync + Send,
    mut make: impl FnMut(T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let Some(ends) = shared_ends(texts.len(), num_threads) else {
        let mut lists = Vec::with_capacity(texts.len());
        for t in texts {
            let done = detached_polled(py, || encode(t))?;
            lists.push(make(done)?);
            py.check_signals()?; // Ctrl-C between texts
        }
        return PyList::new(py, lists);
    };
    type Done<T> = std::thread::Result<Result<T, Error>>;
    let run = |i: usize| -> Done<T> { catch_unwind(AssertUnwindSafe(|| encode(&texts[i]))) };
    let n = texts.len();
    let helpers = helper_threads(num_threads, n);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Done<T>)>();
    let mut lists: Vec<Option<Bound<'py, PyAny>>> = vec![None; n];
    let mut failed: Option<(usize, PyErr)> = None;
    let mut interrupted: Option<PyErr> = None;
    let mut record = |i: usize, r: Done<T>| {
        let result = match r {
            Ok(Ok(done)) => make(done),
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
    // Set on Ctrl-C: a helper in the middle of a long text stops it (its stop hook).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let help = || {
        let tx = senders.lock().ok().and_then(|mut s| s.pop());
        let Some(tx) = tx else { return };
        let stop = stop.clone();
        let stopped = move || stop.load(std::sync::atomic::Ordering::Relaxed);
        crate::runtime::interrupt::with_hook(stopped, || {
            while let Some(i) = ends.back() {
                if tx.send((i, run(i))).is_err() {
                    break;
                }
            }
        })
    };
    // This thread's texts poll for Ctrl-C as one long text does (`detached_polled`).
    with_helpers(helpers, help, || {
        crate::runtime::interrupt::with_hook(signal_raised, || {
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
                // A text this thread encoded may have stopped on Ctrl-C (its stop hook below).
                if let Some(e) = take_signal_error().map_or_else(|| py.check_signals().err(), Some)
                {
                    ends.close();
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
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
                    // The wait is cut every `SIGNAL_WAIT` so that the loop's top sees Ctrl-C
                    // while a helper encodes a long text.
                    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
                    let (got, back) = py.detach(move || {
                        let mut got = Err(TryRecvError::Empty);
                        spin_until(|| {
                            got = rx.try_recv();
                            !matches!(got, Err(TryRecvError::Empty))
                        });
                        let got = match got {
                            Err(TryRecvError::Empty) => rx.recv_timeout(SIGNAL_WAIT),
                            got => got.map_err(|_| RecvTimeoutError::Disconnected),
                        };
                        (got, rx)
                    });
                    rx = back;
                    match got {
                        Ok((i, r)) => {
                            record(i, r);
                            done += 1;
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            }
        })
    });
    // Ctrl-C during this thread's last text: the loop ended without looking.
    if let Some(e) = interrupted.or_else(take_signal_error) {
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
