//! One value per thread for one owner (the piece cache's slots), found by a thread index that
//! this module hands out: a stand-in for the `thread_local` crate's `ThreadLocal` that a fork
//! cannot leave waiting.
//!
//! Invariant: no two live threads of a process hold the same index, and [`ThreadSlots::get_or`]
//! gives each thread the value in its index's slot, which only that thread touches. An index
//! is handed out again only after its thread has exited (its thread-local guard gave it back
//! under the lock), so the next holder sees that value and may keep using it, as a warm cache.
//! A fork never copies the lock held: a handler run by `fork()` takes it before the fork and
//! lets it go in parent and child (`pthread_atfork`, the usual way to make a lock fork-safe).
//!
//! Why not `thread_local::ThreadLocal`: its thread ids come from one global std `Mutex`, taken
//! when a thread first asks and when it exits. A fork while another thread holds it leaves it
//! held in the child for good, and a batch there waits forever for its helper (reproduced
//! by forking while other threads start and end; see docs/engine.md, "Fork safety").
//!
//! The slots are in buckets, as in that crate: bucket `b` holds indices `2^b - 1 ..= 2^(b+1) -
//! 2`, so an index is found with one load and no lock, and a bucket, once made, never moves.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// Enough buckets for every `usize` index.
const BUCKETS: usize = usize::BITS as usize;

pub struct ThreadSlots<T> {
    buckets: [AtomicPtr<Slot<T>>; BUCKETS],
}

struct Slot<T>(UnsafeCell<Option<T>>);

// SAFETY: a `ThreadSlots<T>` owns `T`s made on various threads and drops them wherever it is
// dropped, so sending it needs `T: Send`. Sharing it hands out `&T` only to the thread whose
// index owns the slot (see `get_or`), never to two live threads, so `T: Send` suffices for
// `Sync` too: no `&T` is ever used by two threads at once (the same bounds as `ThreadLocal`).
unsafe impl<T: Send> Send for ThreadSlots<T> {}
// SAFETY: see above.
unsafe impl<T: Send> Sync for ThreadSlots<T> {}

impl<T> Default for ThreadSlots<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ThreadSlots<T> {
    pub fn new() -> Self {
        ThreadSlots {
            buckets: [const { AtomicPtr::new(std::ptr::null_mut()) }; BUCKETS],
        }
    }

    /// This thread's value, made by `create` if its slot has none; `None` while the thread is
    /// exiting (its index is already given back).
    pub fn get_or(&self, create: impl FnOnce() -> T) -> Option<&T> {
        let index = current_index()?;
        let (bucket, offset) = locate(index);
        let slot = self.bucket(bucket)[offset].0.get();
        // SAFETY (all three blocks): this thread holds `index` (its guard lives:
        // `current_index` succeeded) and no other live thread does, so no other thread reaches
        // this slot now. A thread that held the index before has exited, and gave it back
        // under the lock this thread took to get it, so its writes happened before these.
        // `&T` is not `Send` unless `T` is `Sync`, so every reference handed out stays on
        // the thread that got it. Reads go through shared references only; the one write is
        // to a slot that holds `None`, to which no reference exists.
        if let Some(value) = unsafe { (*slot).as_ref() } {
            return Some(value);
        }
        // Should `create` fill the slot itself (by asking for it), that value stays.
        let made = create();
        if unsafe { (*slot).is_none() } {
            unsafe { *slot = Some(made) };
        }
        unsafe { (*slot).as_ref() }
    }

    /// Bucket `b`, made now if no thread has made it.
    fn bucket(&self, b: usize) -> &[Slot<T>] {
        let len = 1usize << b;
        let mut ptr = self.buckets[b].load(Ordering::Acquire);
        if ptr.is_null() {
            let fresh: Box<[Slot<T>]> = (0..len).map(|_| Slot(UnsafeCell::new(None))).collect();
            let fresh = Box::into_raw(fresh).cast::<Slot<T>>();
            match self.buckets[b].compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => ptr = fresh,
                Err(theirs) => {
                    // SAFETY: `fresh` came from `Box::into_raw` of `len` slots just above
                    // and was never published, so it is ours to free.
                    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, len)) });
                    ptr = theirs;
                }
            }
        }
        // SAFETY: a non-null bucket pointer is a published `Box<[Slot<T>]>` of `2^b` slots,
        // freed only by `Drop`, which cannot run while `&self` is borrowed.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

impl<T> Drop for ThreadSlots<T> {
    fn drop(&mut self) {
        for (b, bucket) in self.buckets.iter_mut().enumerate() {
            let ptr = *bucket.get_mut();
            if !ptr.is_null() {
                // SAFETY: as in `bucket`: a published box of `2^b` slots, freed only here.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, 1 << b)) });
            }
        }
    }
}

/// The bucket of `index` and its place in it.
#[inline(always)]
fn locate(index: usize) -> (usize, usize) {
    let n = index + 1;
    let bucket = (usize::BITS - 1 - n.leading_zeros()) as usize;
    (bucket, n - (1 << bucket))
}

// ---------------------------------------------------------------- indices

/// The indices handed out: those given back by exited threads, and the next never used.
struct Indices {
    free: Vec<usize>,
    next: usize,
}

/// A lock that spins (and yields after a while): it is held for a push or a pop.
struct IndexLock {
    held: AtomicBool,
    indices: UnsafeCell<Indices>,
}

// SAFETY: `indices` is only reached through `with`, which holds `held` for it.
unsafe impl Sync for IndexLock {}

static INDICES: IndexLock = IndexLock {
    held: AtomicBool::new(false),
    indices: UnsafeCell::new(Indices {
        free: Vec::new(),
        next: 0,
    }),
};

impl IndexLock {
    fn acquire(&self) {
        let mut spins = 0u32;
        while self
            .held
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                // The holder may be off its core (2 vCPUs, more threads).
                std::thread::yield_now();
            }
        }
    }

    fn release(&self) {
        self.held.store(false, Ordering::Release);
    }

    fn with<R>(&self, f: impl FnOnce(&mut Indices) -> R) -> R {
        fork_handlers_registered();
        self.acquire();
        // SAFETY: `held` is ours until `release`, so nothing else reaches `indices`. `f` only
        // pushes or pops; were it to panic, the lock would stay held, but neither panics short
        // of an allocation failure, which aborts.
        let r = f(unsafe { &mut *self.indices.get() });
        self.release();
        r
    }
}

/// A thread's index, given back when the thread exits.
struct ThreadIndex(usize);

impl Drop for ThreadIndex {
    fn drop(&mut self) {
        INDICES.with(|ix| ix.free.push(self.0));
    }
}

thread_local! {
    static INDEX: ThreadIndex = ThreadIndex(INDICES.with(|ix| {
        ix.free.pop().unwrap_or_else(|| {
            ix.next += 1;
            ix.next - 1
        })
    }));
}

/// This thread's index; `None` once its thread-locals are being torn down.
#[inline]
fn current_index() -> Option<usize> {
    INDEX.try_with(|i| i.0).ok()
}

// ---------------------------------------------------------------- fork

/// Makes sure the fork handlers are registered before any thread takes the lock: a thread
/// that finds another one registering waits until it is done, so no fork can copy the lock
/// held by a thread that took it before the handlers were in place.
fn fork_handlers_registered() {
    #[cfg(unix)]
    {
        static STARTED: AtomicBool = AtomicBool::new(false);
        static DONE: AtomicBool = AtomicBool::new(false);
        if DONE.load(Ordering::Acquire) {
            return;
        }
        if !STARTED.swap(true, Ordering::AcqRel) {
            // SAFETY: the three handlers are `extern "C"` functions with no arguments that
            // only take or let go of the lock, as `pthread_atfork` requires of them.
            // A failure (ENOMEM) leaves fork-safety as it was before this module: no worse.
            unsafe {
                libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork));
            }
            DONE.store(true, Ordering::Release);
        } else {
            while !DONE.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
        }
    }
}

/// Run by `fork()` in the forking thread, before it forks: waits for the lock, so the fork
/// happens while no thread is in the middle of handing out or taking back an index.
#[cfg(unix)]
extern "C" fn before_fork() {
    INDICES.acquire();
}

/// Run by `fork()` after it, in the parent and in the child (whose only thread is the one
/// that took the lock in `before_fork`).
#[cfg(unix)]
extern "C" fn after_fork() {
    INDICES.release();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn locate_covers_every_index_once() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..5000 {
            let (b, off) = locate(i);
            assert!(off < 1 << b, "index {i}");
            assert!(seen.insert((b, off)), "index {i}");
        }
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(1), (1, 0));
        assert_eq!(locate(2), (1, 1));
        assert_eq!(locate(3), (2, 0));
        assert_eq!(locate(usize::MAX - 1), (63, (1 << 63) - 1));
    }

    /// Live threads each get a value of their own, which stays theirs.
    #[test]
    fn each_live_thread_has_its_own_value() {
        let slots = Arc::new(ThreadSlots::<std::cell::Cell<usize>>::new());
        let barrier = Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let (slots, barrier) = (Arc::clone(&slots), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let mine = slots.get_or(|| std::cell::Cell::new(0)).unwrap();
                    mine.set(t + 1);
                    barrier.wait(); // all eight are alive, each with its value set
                    let again = slots.get_or(|| std::cell::Cell::new(99)).unwrap();
                    assert!(std::ptr::eq(mine, again));
                    again.get()
                })
            })
            .collect();
        let got: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(got, (1..=8).collect::<Vec<_>>());
    }

    /// Exited threads give their indices back: a thousand threads one after another use a
    /// handful of indices (other tests' threads may hold a few), not a thousand.
    #[test]
    fn indices_are_reused_after_a_thread_exits() {
        let slots = Arc::new(ThreadSlots::<usize>::new());
        let mut highest = 0;
        for _ in 0..1000 {
            let s = Arc::clone(&slots);
            highest = highest.max(
                std::thread::spawn(move || {
                    s.get_or(|| 0);
                    current_index().unwrap()
                })
                .join()
                .unwrap(),
            );
        }
        assert!(highest < 64, "highest index {highest}");
    }

    /// Dropping the slots drops every thread's value, once.
    #[test]
    fn drop_drops_each_value() {
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let slots = Arc::new(ThreadSlots::<Counted>::new());
        let barrier = Arc::new(std::sync::Barrier::new(5));
        let handles: Vec<_> = (0..5)
            .map(|_| {
                let (slots, barrier, d) = (
                    Arc::clone(&slots),
                    Arc::clone(&barrier),
                    Arc::clone(&dropped),
                );
                std::thread::spawn(move || {
                    slots.get_or(|| Counted(d)).unwrap();
                    barrier.wait(); // five live threads: five distinct slots
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        drop(Arc::try_unwrap(slots).ok().unwrap());
        assert_eq!(dropped.load(Ordering::Relaxed), 5);
    }

    /// A fork while another thread holds the index lock: the fork waits for it, and a new
    /// thread of the child gets an index. (Copied held, the lock would keep it waiting.)
    #[cfg(unix)]
    #[test]
    fn a_fork_never_copies_the_lock_held() {
        let slots = ThreadSlots::<usize>::new();
        slots.get_or(|| 1); // handlers registered, this thread indexed
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            INDICES.with(|_| {
                held_tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(100));
            })
        });
        held_rx.recv().unwrap(); // the lock is held now, for 100 ms
                                 // SAFETY: the child only spawns a thread, joins it and leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = std::thread::spawn(|| current_index().is_some()).join();
            // SAFETY: ends the child at once, running nothing of the parent's.
            unsafe { libc::_exit(if matches!(ok, Ok(true)) { 0 } else { 1 }) };
        }
        holder.join().unwrap();
        let start = std::time::Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child, without blocking.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if start.elapsed() > std::time::Duration::from_secs(10) {
                // SAFETY: our own child, hung: stop it before failing.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the forked child hung waiting for the index lock");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}
