//! Stopping long work: Ctrl-C for one long call, and a time budget for custom patterns.
//!
//! Invariants:
//! - [`poll`] returns `Err(Error::Interrupted)` only when the hook installed by
//!   [`with_hook`] on this thread said to stop; with no hook (the Rust API, batch helper
//!   threads) it is `Ok` and costs a thread-local read. The hook runs at most once every
//!   [`POLL_EVERY`], however often `poll` is called, so callers may call it per item of work.
//! - [`PatternBudget::spend`] fails once the splitting it guards has used more CPU time than
//!   [`PatternBudget::allowed`] for the text's length: a pattern that rescans the rest of the
//!   text at each position (quadratic or worse) becomes a `ValueError` naming the limit
//!   instead of running for minutes, while any pattern that splits at a sane speed (the
//!   budget allows ~1 MB/s, far below what any tokenizer pattern needs) never meets it.
//!
//! Why a thread-local hook and not a parameter: the work that must notice Ctrl-C runs deep in
//! the core (the splitters, `encode_with_unstable`'s loop) under signatures shared with the
//! Rust API; the binding layer installs a hook that takes the GIL back for a moment and runs
//! Python's signal handlers (they run only on the main thread, which is the one doing the work).

use crate::error::{Error, Result};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// Polls for Ctrl-C (see [`poll`]) every ~4,096 pieces of text (~0.1 ms of encoding); between
/// polls, a counter per piece or per window of pieces.
#[derive(Default)]
pub struct Tick(u32);

impl Tick {
    #[inline(always)]
    pub fn poll(&mut self) -> Result<()> {
        self.poll_after(1)
    }

    /// Counts `n` pieces, and polls once 4,096 have been counted since the last poll.
    #[inline(always)]
    pub fn poll_after(&mut self, n: u32) -> Result<()> {
        self.0 += n;
        if self.0 >= 4096 {
            self.0 = 0;
            poll()?;
        }
        Ok(())
    }
}

/// How often the hook runs at most while work polls.
pub const POLL_EVERY: Duration = Duration::from_millis(20);

/// Time a custom pattern may take to split a text, beyond [`PATTERN_PER_BYTE`] per byte.
pub const PATTERN_BASE: Duration = Duration::from_millis(500);
/// Time a custom pattern may take per byte of text, on top of [`PATTERN_BASE`] (1 us: 1 MB/s).
pub const PATTERN_PER_BYTE: Duration = Duration::from_micros(1);

struct Hook {
    check: Box<dyn Fn() -> bool>,
    next: Instant,
}

thread_local! {
    static HOOK: Cell<Option<Hook>> = const { Cell::new(None) };
}

/// Runs `f` with `check` as this thread's stop hook (see [`poll`]); the previous hook (if
/// any) is restored afterwards, also when `f` panics. (Only the Python bindings install hooks.)
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub fn with_hook<T>(check: impl Fn() -> bool + 'static, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Hook>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOOK.with(|h| h.set(self.0.take()));
        }
    }
    let hook = Hook {
        check: Box::new(check),
        next: Instant::now() + POLL_EVERY,
    };
    let _restore = Restore(HOOK.with(|h| h.replace(Some(hook))));
    f()
}

/// `Err(Interrupted)` if this thread's hook says to stop (asked at most every
/// [`POLL_EVERY`]); `Ok` without a hook.
#[inline]
pub fn poll() -> Result<()> {
    HOOK.with(|h| {
        let Some(hook) = h.take() else {
            return Ok(());
        };
        let now = Instant::now();
        let mut r = Ok(());
        let mut next = hook.next;
        if now >= next {
            if (hook.check)() {
                r = Err(Error::Interrupted);
            }
            next = Instant::now() + POLL_EVERY;
        }
        h.set(Some(Hook {
            check: hook.check,
            next,
        }));
        r
    })
}

/// Whether this thread has a stop hook.
#[cfg(test)]
fn has_hook() -> bool {
    HOOK.with(|h| {
        let hook = h.take();
        let has = hook.is_some();
        h.set(hook);
        has
    })
}

/// CPU time this thread has used (where the platform tells it; else time since an arbitrary
/// start), so that a busy machine does not make a budget run out sooner.
fn thread_time() -> Duration {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32);
        }
    }
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed()
}

/// The time budget of one split of one text by a custom pattern (see the module docs), and
/// the Ctrl-C poll that goes with it.
pub struct PatternBudget {
    start: Duration,
    allowed: Duration,
    len: usize,
    /// Calls until the clocks are read again.
    countdown: u32,
    /// Calls between two reads: doubled (up to `max_every`) while the calls between two reads
    /// take under [`QUICK`], back to 1 once they take longer, so that one slow search after
    /// another (a runaway pattern on a long text) is followed by a check every time, and
    /// quick ones pay for a clock read only now and then.
    every: u32,
    max_every: u32,
    last: Option<Instant>,
    /// False for a text too short for the budget to matter (see [`PatternBudget::linear`]):
    /// then `spend` reads no clock at all.
    armed: bool,
}

/// Texts shorter than this split by linear-time searches need no budget ([`PatternBudget::linear`]).
pub const LINEAR_UNARMED: usize = 2048;

/// Wall time between two checks under which [`PatternBudget`] checks less often.
const QUICK: Duration = Duration::from_millis(1);

impl PatternBudget {
    /// A budget for splitting `len` bytes, checked at most every `max_every` calls of
    /// [`PatternBudget::spend`] (see `every`).
    pub fn new(len: usize, max_every: u32) -> Self {
        PatternBudget {
            start: thread_time(),
            allowed: Self::allowed(len),
            len,
            countdown: 1,
            every: 1,
            max_every: max_every.max(1),
            last: Some(Instant::now()),
            armed: true,
        }
    }

    /// A budget for splitting `len` bytes by searches that each take time linear in the text
    /// they scan (an automaton's, not a backtracking VM's). Such a split takes at most `len`
    /// searches of at most `len` bytes; under [`LINEAR_UNARMED`] bytes that is under 2^22 byte
    /// steps, which even a non-DFA fallback at ~100 ns a step finishes within [`PATTERN_BASE`],
    /// so the budget stays unarmed and costs no clock read. Why it matters: pipelines that
    /// split each piece again (a `Sequence` of `Split`s) make one budget per piece, and the
    /// thread-CPU clock is a system call, not a vDSO read.
    pub fn linear(len: usize, max_every: u32) -> Self {
        if len < LINEAR_UNARMED {
            PatternBudget {
                start: Duration::ZERO,
                allowed: Duration::MAX,
                len,
                countdown: u32::MAX,
                every: u32::MAX,
                max_every: u32::MAX,
                last: None,
                armed: false,
            }
        } else {
            Self::new(len, max_every)
        }
    }

    /// How long splitting `len` bytes may take.
    pub fn allowed(len: usize) -> Duration {
        PATTERN_BASE + PATTERN_PER_BYTE.saturating_mul(len.min(u32::MAX as usize) as u32)
    }

    /// Called once per piece (or per search): fails once the budget is spent or the hook
    /// says to stop.
    #[inline]
    pub fn spend(&mut self) -> Result<()> {
        if !self.armed {
            return Ok(());
        }
        self.countdown -= 1;
        if self.countdown != 0 {
            return Ok(());
        }
        self.check()
    }

    #[cold]
    fn check(&mut self) -> Result<()> {
        let now = Instant::now();
        let last = self.last.unwrap_or(now);
        self.every = if now.duration_since(last) < QUICK {
            (self.every * 2).min(self.max_every)
        } else {
            1
        };
        self.countdown = self.every;
        self.last = Some(now);
        let spent = thread_time().saturating_sub(self.start);
        if spent > self.allowed {
            return Err(Error::Regex(format!(
                "the pattern took more than {:.1} s of CPU time to split {} bytes of text (the limit is \
                 {} ms plus {} us a byte): it backtracks or rescans the text at each position; \
                 make its repetitions possessive or atomic, or avoid look-arounds that scan far",
                spent.as_secs_f64(),
                self.len,
                PATTERN_BASE.as_millis(),
                PATTERN_PER_BYTE.as_micros(),
            )));
        }
        poll()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_stops_polls_and_is_restored() {
        assert!(poll().is_ok());
        assert!(!has_hook());
        let r = with_hook(
            || true,
            || {
                assert!(has_hook());
                // The first call comes before `POLL_EVERY` has passed.
                let mut stopped = false;
                let until = Instant::now() + Duration::from_secs(5);
                while Instant::now() < until {
                    if poll().is_err() {
                        stopped = true;
                        break;
                    }
                }
                stopped
            },
        );
        assert!(r);
        assert!(!has_hook());
        assert!(poll().is_ok());
    }

    #[test]
    fn a_short_linear_split_reads_no_clock_and_a_long_one_does() {
        let mut short = PatternBudget::linear(LINEAR_UNARMED - 1, 1);
        short.allowed = Duration::ZERO; // (unarmed: never consulted)
        for _ in 0..1000 {
            assert!(short.spend().is_ok());
        }
        let mut long = PatternBudget::linear(LINEAR_UNARMED, 1);
        long.allowed = Duration::ZERO;
        let until = thread_time() + Duration::from_millis(2);
        while thread_time() < until {
            std::hint::black_box(0u64);
        }
        assert!(matches!(long.spend(), Err(Error::Regex(_))));
    }

    #[test]
    fn a_budget_runs_out() {
        let mut b = PatternBudget::new(0, 1);
        b.allowed = Duration::from_millis(1);
        let until = thread_time() + Duration::from_millis(5);
        while thread_time() < until {
            std::hint::black_box(0u64);
        }
        match b.spend() {
            Err(Error::Regex(m)) => assert!(m.contains("took more than"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
