//! A value built at its first use, like `std::sync::OnceLock`, that a forked child can
//! still build when the fork came while a thread of the parent was building it.
//!
//! Invariant: [`ProcessOnce::get_or_init`] returns the one value this cell holds once some
//! call has built it; no two threads of one process build it at once, and a thread that asks
//! while another thread of its process builds waits for that value. A builder that belongs
//! to another process (the parent of a forked child) is not waited for: that thread does not
//! exist in the child, so the child builds the value itself.
//!
//! Why not `OnceLock`: its state word says "being built" in a child forked during the build,
//! and every later `get_or_init` there waits forever for a thread that is not there. The
//! tables ferrotok builds after load (the backtracking tables, 40-50 ms for o200k; the cut
//! tables; the pair filter; the general splitter's DFA) are built on whatever thread first
//! needs them, so a program that forks (PyTorch's `DataLoader` workers on Linux) while
//! another of its threads encodes could leave its workers hung. Here the builder is
//! recorded by process id, as the pools of `pool.rs` are, with the same one miss: a process
//! whose id is the recycled id of the builder's process (a grandchild, forked from a child
//! that never asked for the value, after the builder's process has exited) would wait.

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

pub struct ProcessOnce<T> {
    /// Null until built, then a pointer from `Box::into_raw`, freed only by `Drop`.
    value: AtomicPtr<T>,
    /// The id of the process one of whose threads is building the value, or 0.
    builder: AtomicU32,
}

// SAFETY: a `ProcessOnce<T>` owns at most one `T` (the box behind `value`), which it hands
// out only as `&T`; so it may go to another thread if `T` may (`Send`), and be shared if
// `&T` may be shared and the `T` may be made on one thread and dropped on another
// (`Send + Sync`), the same bounds as `OnceLock<T>`'s.
unsafe impl<T: Send> Send for ProcessOnce<T> {}
// SAFETY: see above.
unsafe impl<T: Send + Sync> Sync for ProcessOnce<T> {}

impl<T> Default for ProcessOnce<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ProcessOnce<T> {
    pub const fn new() -> Self {
        ProcessOnce {
            value: AtomicPtr::new(std::ptr::null_mut()),
            builder: AtomicU32::new(0),
        }
    }

    /// A cell that holds `value` already.
    pub fn with_value(value: T) -> Self {
        ProcessOnce {
            value: AtomicPtr::new(Box::into_raw(Box::new(value))),
            builder: AtomicU32::new(0),
        }
    }

    /// The value, if it is built; never waits or builds. As cheap as `OnceLock::get`: one
    /// load and a test.
    #[inline(always)]
    pub fn get(&self) -> Option<&T> {
        // SAFETY: `value` is null or a pointer from `Box::into_raw` that stays valid until
        // `self` is dropped (only `Drop` frees it, and it is stored once: see `build_here`);
        // the Acquire load pairs with the Release store made after the `T` was written.
        unsafe { self.value.load(Ordering::Acquire).as_ref() }
    }

    /// The value, built now by `build` if no call has built it.
    ///
    /// A thread of this process that is building it is waited for (spinning, then sleeping
    /// 50 us at a time); one of another process is not. If `build` panics, the panic reaches
    /// the caller and the cell stays empty, for the next call to build. Calling this again
    /// from inside `build`, on the same cell, waits forever (as `OnceLock` does).
    #[inline]
    pub fn get_or_init(&self, build: impl FnOnce() -> T) -> &T {
        match self.get() {
            Some(value) => value,
            None => self.build_or_wait(build),
        }
    }

    #[cold]
    #[inline(never)]
    fn build_or_wait(&self, build: impl FnOnce() -> T) -> &T {
        let pid = std::process::id();
        let mut waits = 0u32;
        loop {
            if let Some(value) = self.get() {
                return value;
            }
            let builder = self.builder.load(Ordering::Acquire);
            // Nobody is building, or a thread of another process was at the fork: build.
            if builder != pid
                && self
                    .builder
                    .compare_exchange(builder, pid, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                return self.build_here(build);
            }
            if builder == pid {
                waits += 1;
                if waits < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            }
        }
    }

    fn build_here(&self, build: impl FnOnce() -> T) -> &T {
        /// Frees the builder's place if `build` panics, so that the next call builds.
        struct Release<'a>(&'a AtomicU32);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.store(0, Ordering::Release);
            }
        }
        let release = Release(&self.builder);
        // A builder that finished between this thread's look at `value` and its taking of
        // `builder` stored its value before it let `builder` go (Release; taken here with
        // Acquire), so the value is seen here and not built twice.
        if let Some(value) = self.get() {
            return value;
        }
        let value = Box::into_raw(Box::new(build()));
        // Only the builder (this thread, which holds `builder`) stores, and only into an
        // empty cell: no value is ever replaced while a `&T` to it is out.
        self.value.store(value, Ordering::Release);
        drop(release);
        // SAFETY: `value` came from `Box::into_raw` just above and is now owned by `self`,
        // which frees it only when dropped.
        unsafe { &*value }
    }
}

impl<T> Drop for ProcessOnce<T> {
    fn drop(&mut self) {
        let value = *self.value.get_mut();
        if !value.is_null() {
            // SAFETY: a non-null `value` came from `Box::into_raw` in `build_here` or
            // `with_value` and was stored once; `&mut self` means no `&T` handed out by `get` is alive.
            drop(unsafe { Box::from_raw(value) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn builds_once_for_many_threads() {
        let cell = ProcessOnce::<Vec<u32>>::new();
        let builds = AtomicUsize::new(0);
        let seen: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let v = cell.get_or_init(|| {
                            builds.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(Duration::from_millis(20));
                            vec![1, 2, 3]
                        });
                        std::ptr::from_ref(v) as usize
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        assert_eq!(builds.load(Ordering::Relaxed), 1);
        assert!(seen.windows(2).all(|w| w[0] == w[1]));
        assert_eq!(cell.get(), Some(&vec![1, 2, 3]));
    }

    #[test]
    fn a_panicking_build_leaves_the_cell_for_the_next_call() {
        let cell = ProcessOnce::<String>::new();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cell.get_or_init(|| panic!("a failed build"))
        }));
        assert!(caught.is_err());
        assert_eq!(cell.get(), None);
        assert_eq!(cell.get_or_init(|| "built".to_owned()), "built");
    }

    #[test]
    fn a_builder_of_another_process_is_not_waited_for() {
        // What a child forked during a build sees: the builder's mark, but no value.
        let cell = ProcessOnce::<u32>::new();
        cell.builder
            .store(std::process::id().wrapping_add(1), Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        let cell = std::sync::Arc::new(cell);
        let asker = std::sync::Arc::clone(&cell);
        // Not a scoped thread: if it hangs, the test fails instead of waiting with it.
        std::thread::spawn(move || {
            let _ = tx.send(*asker.get_or_init(|| 7));
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(7));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_forked_during_a_build_builds_it_again() {
        // A thread starts a build that waits for the test; the test forks meanwhile. In the
        // child the building thread does not exist; `OnceLock` made it wait forever.
        static CELL: ProcessOnce<u32> = ProcessOnce::new();
        let (started_tx, started) = mpsc::channel();
        let (finish, finish_rx) = mpsc::channel::<()>();
        let builder = std::thread::spawn(move || {
            *CELL.get_or_init(|| {
                let _ = started_tx.send(());
                let _ = finish_rx.recv();
                1
            })
        });
        started
            .recv_timeout(Duration::from_secs(30))
            .expect("the build started");
        // SAFETY: the child only calls `get_or_init` (atomics, an allocation, no lock another
        // thread may hold: glibc's malloc is made safe across fork) and `_exit`s.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let code = if *CELL.get_or_init(|| 2) == 2 { 0 } else { 1 };
            // SAFETY: ends the child at once, without running the test harness's exit code.
            unsafe { libc::_exit(code) };
        }
        assert!(child > 0, "fork failed");
        let _ = finish.send(());
        assert_eq!(builder.join().expect("no panic"), 1);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut status = 0;
        loop {
            // SAFETY: waits, without blocking, for the child forked above.
            let done = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
            if done == child {
                break;
            }
            if std::time::Instant::now() > deadline {
                // SAFETY: ends the hung child of this test.
                unsafe { libc::kill(child, libc::SIGKILL) };
                panic!(
                    "the forked child never built the value: it waited for the parent's builder"
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status}"
        );
    }
}
