//! Thread pools that belong to one process: every parallel step of ferrotok runs in one of
//! these, never in rayon's global pool.
//!
//! Invariant: [`parallel`] and [`ProcessPool::get`] only ever hand out a pool whose threads
//! were started by the calling process, so rayon's parallel iterators run inside them always
//! have threads to run on. ([`parallel`] falls back to the calling thread's own rayon context
//! only if no thread can be started at all.)
//!
//! Why: a process forked from one whose pool had started (a `fork` start of
//! `multiprocessing`, as PyTorch's `DataLoader` workers are on Linux) inherits the pool but
//! not its threads. A parallel iterator there hands its work to threads that do not exist and
//! waits forever; rayon's global pool cannot be replaced. With the global pool, a forked child
//! hung when it built the backtracking tables (in parallel, after load), when it loaded
//! another encoding (the pair table) and when it trained. So each
//! pool here is tied to the id of the process that started it, and a forked child starts its
//! own. The parent's pool is left to the child as it is (never dropped there: its locks may
//! have been held by a parent thread at the fork, and its threads are not the child's).

use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

/// The machine's core count, read once (`available_parallelism` reads cgroup files on Linux).
pub fn cores() -> usize {
    static CORES: crate::runtime::process_once::ProcessOnce<usize> =
        crate::runtime::process_once::ProcessOnce::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// A pool started at first use and kept for the life of the process that started it.
pub struct ProcessPool {
    // Atomics, not a lock: a fork while another thread held a lock would leave it held in the
    // child for good. Two threads that start a pool at once each leak one; either works.
    pool: AtomicPtr<rayon::ThreadPool>,
    owner: AtomicU32,
    name: &'static str,
    threads: fn() -> usize,
}

impl ProcessPool {
    /// A pool of `threads()` threads named `name-0`, `name-1`, ...
    pub const fn new(name: &'static str, threads: fn() -> usize) -> Self {
        ProcessPool {
            pool: AtomicPtr::new(std::ptr::null_mut()),
            owner: AtomicU32::new(0),
            name,
            threads,
        }
    }

    /// This process's pool, started now if this process has none; `None` if its threads
    /// cannot be started.
    ///
    /// The one case the process id misses: a grandchild whose id is the recycled id of a pool
    /// owner that has exited, forked from a child that never used the pool.
    pub fn get(&self) -> Option<&'static rayon::ThreadPool> {
        let pid = std::process::id();
        if self.owner.load(Ordering::Acquire) == pid {
            // SAFETY: `pool` only ever holds null or a pointer from `Box::leak` below, never
            // freed; the Acquire load of `owner` (stored with Release after `pool`) makes that
            // pool's construction visible here.
            if let Some(pool) = unsafe { self.pool.load(Ordering::Acquire).as_ref() } {
                return Some(pool);
            }
        }
        let name = self.name;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads((self.threads)().max(1))
            .thread_name(move |i| format!("{name}-{i}"))
            .build()
            .ok()?;
        let pool: &'static rayon::ThreadPool = Box::leak(Box::new(pool));
        self.pool
            .store(std::ptr::from_ref(pool).cast_mut(), Ordering::Release);
        self.owner.store(pid, Ordering::Release);
        Some(pool)
    }
}

/// Runs `op` in this process's pool of one thread per core, so that the parallel iterators
/// in it run there: building an encoding's tables, training's counting. The calling thread
/// waits and does nothing else meanwhile. If no thread can be started, `op` runs on the
/// calling thread as it is.
///
/// A thread of another rayon pool (a batch helper) waits on a plain thread of its own, not in
/// rayon's cross-pool wait: that wait runs the waiting thread's own pool's other jobs, and such
/// a job may need what `op` is building. A batch helper building the backtracking tables (in a
/// cell built once) took up the next batch's helper job, which asked the same cell on the same
/// thread and waited forever (two batches from two Python threads at once, on an encoding
/// whose tables were not built yet: hung in 1 of about 10 tries).
pub fn parallel<R: Send>(op: impl FnOnce() -> R + Send) -> R {
    static BUILD: ProcessPool = ProcessPool::new("ferrotok-build", cores);
    let Some(pool) = BUILD.get() else {
        return op();
    };
    if rayon::current_thread_index().is_none() || pool.current_thread_index().is_some() {
        return pool.install(op);
    }
    // In a slot, so that `op` is still here if the thread cannot be started.
    let slot = std::sync::Mutex::new(Some(op));
    let take = || match slot.lock() {
        Ok(mut op) => op.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    };
    let waited = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("ferrotok-wait".into())
            .spawn_scoped(s, || take().map(|op| pool.install(op)))
            .map(|handle| handle.join())
    });
    match waited {
        Ok(Ok(Some(done))) => done,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // No thread to wait on: the cross-pool wait, as rayon does it. (`Ok(Ok(None))`, the
        // thread finding the slot empty, cannot happen: only it and this arm take from it.)
        Ok(Ok(None)) | Err(_) => pool.install(take().expect("op is taken once")),
    }
}

/// A pool of a given size owned by one object (training's counter with `num_threads`),
/// made again in a forked child before its first use there.
pub struct OwnPool {
    threads: usize,
    owner: u32,
    pool: rayon::ThreadPool,
}

impl OwnPool {
    pub fn new(threads: usize) -> Result<Self, rayon::ThreadPoolBuildError> {
        Ok(OwnPool {
            threads,
            owner: std::process::id(),
            pool: rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()?,
        })
    }

    /// Starts a pool of the same size if this process did not start this one (a forked
    /// child); the old one is forgotten, not dropped (see the module's notes).
    pub fn in_this_process(&mut self) -> Result<(), rayon::ThreadPoolBuildError> {
        if self.owner != std::process::id() {
            let fresh = OwnPool::new(self.threads)?;
            std::mem::forget(std::mem::replace(self, fresh));
        }
        Ok(())
    }

    pub fn install<R: Send>(&self, op: impl FnOnce() -> R + Send) -> R {
        self.pool.install(op)
    }

    pub fn threads(&self) -> usize {
        self.threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn parallel_runs_iterators_on_the_build_pool() {
        let names: Vec<String> = parallel(|| {
            (0..64)
                .into_par_iter()
                .map(|_| std::thread::current().name().unwrap_or("").to_owned())
                .collect()
        });
        assert!(
            names.iter().all(|n| n.starts_with("ferrotok-build-")),
            "{names:?}"
        );
    }

    #[test]
    fn a_process_pool_is_made_once_per_process() {
        static P: ProcessPool = ProcessPool::new("ferrotok-test", || 1);
        let (a, b) = (P.get().expect("a pool"), P.get().expect("a pool"));
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.current_num_threads(), 1);
    }

    #[test]
    fn an_own_pool_from_another_process_is_replaced() {
        let workers = |p: &OwnPool| {
            let mut ids = p.pool.broadcast(|_| std::thread::current().id());
            ids.sort_by_key(|id| format!("{id:?}"));
            ids
        };
        let mut p = OwnPool::new(2).expect("a pool");
        let first = workers(&p);
        p.in_this_process()
            .expect("the same process keeps its pool");
        assert_eq!(workers(&p), first);
        p.owner = p.owner.wrapping_add(1); // what a forked child sees
        p.in_this_process().expect("a new pool");
        assert_eq!(p.owner, std::process::id());
        let second = workers(&p);
        assert_eq!(second.len(), 2);
        assert!(
            second.iter().all(|id| !first.contains(id)),
            "{first:?} {second:?}"
        );
    }
}
