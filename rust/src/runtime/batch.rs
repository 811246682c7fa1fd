//! A batch on several threads: the calling thread and kept helper threads share its items,
//! the caller taking them from the front and the helpers from the back ([`TwoEnds`]).
//!
//! Invariant: [`batch_map`] returns what the sequential loop `items.iter().map(f)` would:
//! the results in the items' order, or the error of the first failing item, with every item
//! before that one run. Each item is run at most once, by one thread.
//!
//! The threads are a pool of their own, started at the first batch and kept (`helper_pool`),
//! that spin a while between batches instead of sleeping ([`SPIN_WAIT`]): on a 2-vCPU VM a
//! sleeping thread starts ~60 us after it is woken, more than a small batch takes. This
//! module knows nothing of Python. The binding layer calls it with the GIL released, or
//! held on purpose while helpers read a list's ints (its `decode_list_shared`); its
//! `encode_lists` builds each list on the calling thread while the helpers encode.

use crate::error::Error;
use crate::runtime::pool::{cores, ProcessPool};
use crate::runtime::two_ends::TwoEnds;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How many threads besides the caller's a batch of `n` items uses: `num_threads` counts the
/// caller, and no more than the machine has cores for (tiktoken's default is 8).
pub fn helper_threads(num_threads: usize, n: usize) -> usize {
    (num_threads - 1)
        .min(cores().saturating_sub(1))
        .clamp(1, n - 1)
}

/// A batch with less work than this runs on the calling thread alone, whatever
/// `num_threads` says: a helper thread, woken for it, starts ~50 us late (rayon's pool on 2
/// vCPUs), so below this the helper cannot pay for its wake. Bytes of text for the encoders
/// (~150 us of work); ids for decoding.
pub const SHARED_MIN_BYTES: usize = 32 << 10;
pub const SHARED_MIN_IDS: usize = 64 << 10;

/// `num_threads`, or 1 for a batch of less text than [`SHARED_MIN_BYTES`].
pub fn threads_for_text(bytes: usize, num_threads: usize) -> usize {
    if bytes < SHARED_MIN_BYTES {
        1
    } else {
        num_threads
    }
}

/// `num_threads`, or 1 for a batch of fewer ids than [`SHARED_MIN_IDS`].
pub fn threads_for_ids(ids: usize, num_threads: usize) -> usize {
    if ids < SHARED_MIN_IDS {
        1
    } else {
        num_threads
    }
}

/// Id lists and arrays shorter than this are decoded on the calling thread with the GIL
/// held (a few microseconds, less than releasing and taking it back, or waking a helper);
/// longer ones on the helper threads too, in pieces of [`DECODE_PIECE`] ids (~25 us of work
/// each) handed out from both ends, or on a one-core machine with the GIL released.
pub const DECODE_SHARED_MIN: usize = 1 << 16;
pub const DECODE_PIECE: usize = 1 << 13;

/// Whether `n` ids are decoded on more threads than the caller's.
pub fn shared_decode(n: usize) -> bool {
    n >= DECODE_SHARED_MIN && cores() > 1
}

/// The threads that help a batch's calling thread: one fewer than the cores (at least one),
/// started at the first batch and then kept, each with its warm piece cache: starting a
/// thread costs more than encoding a few short texts takes.
/// A pool of its own, not the build pool of [`super::pool::parallel`] (one thread per core):
/// a batch's work is shared by the caller and these helpers, so no core is left to a pool
/// thread that would only compete with them. Tied to the process like every pool of
/// ferrotok's (see `pool.rs`): a forked child starts its own. `None` if the threads cannot
/// be started.
fn helper_pool() -> Option<&'static rayon::ThreadPool> {
    static HELPERS: ProcessPool = ProcessPool::new("ferrotok-batch", || cores().saturating_sub(1));
    HELPERS.get()
}

/// How long a thread spins, instead of sleeping, to wait for a batch's next step: the
/// caller for its helpers to finish, and a helper, after a batch, for the next one: a thread
/// asleep starts late after it is woken (on a VM, tens of microseconds), and a batch would
/// lose that at its start and its end. Spinning costs the waiting core at most this long per
/// batch (OpenMP runtimes spin in the same way before they sleep).
pub const SPIN_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// Batches started in this process: a helper that spins after a batch stops when it moves.
static BATCHES: AtomicU64 = AtomicU64::new(0);

/// Spins until `done()` or [`SPIN_WAIT`] has passed.
pub fn spin_until(mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + SPIN_WAIT;
    loop {
        // The clock read costs ~20 ns; checking `done` between reads keeps the wait short.
        for _ in 0..32 {
            if done() {
                return;
            }
            std::hint::spin_loop();
        }
        if std::time::Instant::now() >= until {
            return;
        }
    }
}

/// Runs `main` on this thread while `helpers` helper threads each run `help` once, and
/// returns `main`'s result when all are done. A panic in `help` reaches the caller.
///
/// When `main` is done first, this thread spins a while for the helpers to finish before it
/// sleeps (holding the GIL if `main` returns with it, as `encode_lists`'s does once every
/// result is in, when the helpers are a few instructions from done); and after the batch,
/// each helper spins a while for the next batch (see [`SPIN_WAIT`]) before it goes back to
/// the pool to sleep.
pub fn with_helpers<R>(helpers: usize, help: impl Fn() + Sync, main: impl FnOnce() -> R) -> R {
    let help = &help;
    let batch = BATCHES.fetch_add(1, Ordering::Relaxed) + 1;
    match helper_pool() {
        // `in_place_scope` runs `main` here, not on the pool, and waits for the spawned
        // jobs before it returns, so they may borrow from this frame.
        Some(pool) => {
            let (started, finished) = (&AtomicUsize::new(0), &AtomicUsize::new(0));
            let result = pool.in_place_scope(|scope| {
                for _ in 0..helpers {
                    scope.spawn(move |_| {
                        started.fetch_add(1, Ordering::Relaxed);
                        help();
                        finished.fetch_add(1, Ordering::Release);
                    });
                }
                let result = main();
                // Only for helpers that are at work: while one has not started, its core may
                // be the one this thread is on (a VM's two vCPUs on one host core), and
                // spinning would keep it from starting (it halved such a batch's speed).
                if started.load(Ordering::Relaxed) == helpers {
                    spin_until(|| finished.load(Ordering::Acquire) == helpers);
                }
                result
            });
            for _ in 0..helpers {
                pool.spawn(move || {
                    spin_until(|| BATCHES.load(Ordering::Relaxed) != batch);
                });
            }
            result
        }
        None => std::thread::scope(|scope| {
            for _ in 0..helpers {
                scope.spawn(help);
            }
            main()
        }),
    }
}

/// The `n` items of a batch handed out from both ends, or `None` when the batch runs on this
/// thread alone: `num_threads <= 1`, one item or none, or more than 2^32 - 1 items.
pub fn shared_ends(n: usize, num_threads: usize) -> Option<TwoEnds> {
    TwoEnds::new(n).filter(|_| num_threads > 1 && n > 1)
}

/// Runs `f` over `items`, in this thread when `num_threads <= 1` (tiktoken's `num_threads`
/// argument), else in this thread, which takes items from the front, and [`helper_threads`]
/// more that take them from the back ([`TwoEnds`]); the results come back in order. An
/// error is the one of the first failing item, as in a sequential loop: a thread stops at its
/// own error, and the front goes on in order up to where the back stopped, so every item
/// before the first failing one was run.
///
/// Why not a rayon `par_iter`: this thread would sleep while rayon's workers share the
/// items, leaving one of the cores idle (see docs/engine.md, "Batches").
pub fn batch_map<I: Sync, T: Send>(
    items: &[I],
    num_threads: usize,
    f: impl Fn(&I) -> Result<T, Error> + Sync + Send,
) -> Result<Vec<T>, Error> {
    batch_map_until(items, num_threads, f, || false)
}

/// [`batch_map`] that asks `stop` after each item the calling thread runs: once it says yes,
/// no thread takes another item (each finishes the one it has) and the batch returns
/// [`Error::Interrupted`]. The binding layer checks for Ctrl-C there.
pub fn batch_map_until<I: Sync, T: Send>(
    items: &[I],
    num_threads: usize,
    f: impl Fn(&I) -> Result<T, Error> + Sync + Send,
    mut stop: impl FnMut() -> bool,
) -> Result<Vec<T>, Error> {
    let n = items.len();
    let Some(ends) = shared_ends(n, num_threads) else {
        let mut out = Vec::with_capacity(n);
        for item in items {
            out.push(f(item)?);
            if stop() {
                return Err(Error::Interrupted);
            }
        }
        return Ok(out);
    };
    let helped = std::sync::Mutex::new(Vec::new());
    let (mine, stopped) = with_helpers(
        helper_threads(num_threads, n),
        || {
            let (done, _) = take_items(items, &f, &ends, || ends.back(), || false);
            // A poisoned lock means another helper panicked; that panic reaches the caller.
            if let Ok(mut h) = helped.lock() {
                h.push(done);
            }
        },
        || take_items(items, &f, &ends, || ends.front(), &mut stop),
    );
    if stopped {
        return Err(Error::Interrupted);
    }
    let mut parts = helped
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    parts.push(mine);
    let mut slots: Vec<Option<T>> = std::iter::repeat_with(|| None).take(n).collect();
    let mut first_error: Option<(usize, Error)> = None;
    for (i, r) in parts.into_iter().flatten() {
        match r {
            Ok(v) => slots[i] = Some(v),
            Err(e) if first_error.as_ref().is_none_or(|(j, _)| i < *j) => {
                first_error = Some((i, e))
            }
            Err(_) => {}
        }
    }
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    Ok(slots.into_iter().flatten().collect())
}

/// One thread's share of [`batch_map_until`]: runs the items `take` hands out, until there are
/// none, one fails, or `stop` says so (then nobody takes another: `true` comes back).
/// Generic rather than `dyn`, so that the helpers' `|| false` costs nothing.
#[allow(clippy::type_complexity)] // (index, result) pairs, and whether `stop` said so
fn take_items<I, T>(
    items: &[I],
    f: &impl Fn(&I) -> Result<T, Error>,
    ends: &TwoEnds,
    take: impl Fn() -> Option<usize>,
    mut stop: impl FnMut() -> bool,
) -> (Vec<(usize, Result<T, Error>)>, bool) {
    let mut done = Vec::new();
    while let Some(i) = take() {
        let r = f(&items[i]);
        let failed = r.is_err();
        done.push((i, r));
        if failed {
            break;
        }
        if stop() {
            ends.close();
            return (done, true);
        }
    }
    (done, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::AssertUnwindSafe;

    #[test]
    fn small_batches_run_on_the_calling_thread_alone() {
        assert_eq!(threads_for_text(SHARED_MIN_BYTES - 1, 8), 1);
        assert_eq!(threads_for_text(SHARED_MIN_BYTES, 8), 8);
        assert_eq!(threads_for_ids(SHARED_MIN_IDS - 1, 4), 1);
        assert_eq!(threads_for_ids(SHARED_MIN_IDS, 4), 4);
        assert!(!shared_decode(DECODE_SHARED_MIN - 1));
        assert_eq!(shared_decode(DECODE_SHARED_MIN), cores() > 1);
        const { assert!(DECODE_PIECE < DECODE_SHARED_MIN) };
    }

    /// `f` of the sequential loop, for any thread count: each item's result in its place.
    #[test]
    fn results_come_back_in_order() {
        let items: Vec<u64> = (0..1000).collect();
        for threads in [1, 2, 3, 8] {
            let out = batch_map(&items, threads, |&i| Ok::<u64, Error>(i * i + 1)).unwrap();
            let want: Vec<u64> = items.iter().map(|&i| i * i + 1).collect();
            assert_eq!(out, want, "{threads} threads");
        }
    }

    /// The error of the first failing item, as a loop would raise it, wherever the threads
    /// met and whichever end met an error first.
    #[test]
    fn the_first_failing_item_gives_the_error() {
        let items: Vec<usize> = (0..500).collect();
        for bad in [[3, 499], [250, 251], [0, 1], [498, 499]] {
            for threads in [1, 2, 4] {
                let got = batch_map(&items, threads, |&i| {
                    if bad.contains(&i) {
                        Err(Error::Input(format!("item {i}")))
                    } else {
                        Ok(i)
                    }
                });
                match got {
                    Err(Error::Input(msg)) => assert_eq!(msg, format!("item {}", bad[0])),
                    other => panic!("{threads} threads, bad {bad:?}: {other:?}"),
                }
            }
        }
    }

    /// Each item runs once, and every item before the first failing one runs.
    #[test]
    fn each_item_runs_once_and_none_before_an_error_is_skipped() {
        let items: Vec<usize> = (0..300).collect();
        for threads in [2, 3] {
            let runs: Vec<AtomicUsize> = items.iter().map(|_| AtomicUsize::new(0)).collect();
            let got = batch_map(&items, threads, |&i| {
                runs[i].fetch_add(1, Ordering::Relaxed);
                if i == 200 {
                    Err(Error::Input("stop".into()))
                } else {
                    Ok(())
                }
            });
            assert!(got.is_err());
            for (i, r) in runs.iter().enumerate() {
                let r = r.load(Ordering::Relaxed);
                assert!(r <= 1, "item {i} ran {r} times");
                if i <= 200 {
                    assert_eq!(r, 1, "item {i} before the error did not run");
                }
            }
        }
    }

    /// Empty and one-item batches, and more threads than items.
    /// A stop stops the batch: `Interrupted`, and no item is taken after it. An item from the
    /// back half (the helper's) waits until the caller has stopped, so the helper runs one at
    /// most.
    #[test]
    fn a_stop_ends_the_batch_early() {
        for threads in [1, 2] {
            let n = 400;
            let items: Vec<usize> = (0..n).collect();
            let ran = AtomicUsize::new(0);
            let stopped = std::sync::atomic::AtomicBool::new(false);
            let mut asked = 0;
            let r = batch_map_until(
                &items,
                threads,
                |&i| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    let t = std::time::Instant::now();
                    while i >= n / 2
                        && !stopped.load(Ordering::Acquire)
                        && t.elapsed() < std::time::Duration::from_secs(10)
                    {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    Ok::<usize, Error>(i)
                },
                || {
                    asked += 1;
                    stopped.store(asked == 3, Ordering::Release);
                    asked == 3
                },
            );
            assert_eq!(r, Err(Error::Interrupted), "{threads} threads");
            // The caller's three, and on two threads the helper's one if it started in time.
            let ran = ran.load(Ordering::Relaxed);
            assert!(
                ran == 3 || (threads == 2 && ran == 4),
                "{threads} threads: {ran} ran"
            );
        }
    }

    /// A stop that never says yes changes nothing.
    #[test]
    fn a_stop_that_never_stops_changes_nothing() {
        let items: Vec<u64> = (0..500).collect();
        for threads in [1, 2] {
            let mut asked = 0;
            let out = batch_map_until(
                &items,
                threads,
                |&i| Ok::<u64, Error>(i + 7),
                || {
                    asked += 1;
                    false
                },
            );
            assert_eq!(
                out.unwrap(),
                items.iter().map(|i| i + 7).collect::<Vec<_>>()
            );
            assert!(asked >= 1, "the caller asks after its items");
        }
    }

    #[test]
    fn small_batches() {
        let none: Vec<u8> = Vec::new();
        assert!(batch_map(&none, 4, |&b| Ok::<u8, Error>(b))
            .unwrap()
            .is_empty());
        assert_eq!(
            batch_map(&[7u8], 4, |&b| Ok::<u8, Error>(b + 1)).unwrap(),
            vec![8]
        );
        assert_eq!(
            batch_map(&[1u8, 2], 16, |&b| Ok::<u8, Error>(b * 10)).unwrap(),
            vec![10, 20]
        );
    }

    /// A helper's panic reaches the caller, not a hang: the last item, which the helper takes
    /// first, panics, while the caller's first item waits for that (up to 10 s).
    #[test]
    fn a_helper_panic_reaches_the_caller() {
        let items: Vec<usize> = (0..64).collect();
        let on_caller = std::thread::current().id();
        let panicked_on = std::sync::Mutex::new(None);
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| {
            batch_map(&items, 2, |&i| {
                if i == 63 {
                    *panicked_on.lock().unwrap() = Some(std::thread::current().id());
                    panic!("item 63");
                }
                if i == 0 {
                    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
                    while panicked_on.lock().unwrap().is_none() && std::time::Instant::now() < until
                    {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                Ok::<usize, Error>(i)
            })
        }));
        assert!(caught.is_err());
        let on = panicked_on.lock().unwrap().expect("item 63 ran");
        assert_ne!(on, on_caller, "the caller, not a helper, took item 63");
    }
}
