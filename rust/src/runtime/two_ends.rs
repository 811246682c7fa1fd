//! The items of a batch, handed out from both ends: the calling thread takes them from the
//! front, the helper threads from the back, until the two meet.
//!
//! Invariant: each index in `0..n` is handed out at most once, and exactly once unless the
//! batch is closed first ([`TwoEnds::close`]); the front hands out `0, 1, 2, ...` and the back
//! `n - 1, n - 2, ...`, each in order, and no index is handed out by one end after the other
//! end has passed it.
//!
//! Why not one shared counter: consecutive documents of a batch share words, so a thread that
//! encodes a run of them finds the lines of its piece cache and of the tables that the last
//! document warmed; with one counter the two threads of a 2-thread batch take alternate
//! documents, and each loses that (~5% of a 2-thread batch, see docs/engine.md). Fixed halves
//! would not balance documents of different cost; the two ends do, as a counter does.

use std::sync::atomic::{AtomicU64, Ordering};

pub struct TwoEnds {
    /// The next index of the front in the low 32 bits, one past the next index of the back
    /// in the high 32: both move in one atomic step, so they can never cross.
    ends: AtomicU64,
}

impl TwoEnds {
    /// The indices `0..n`; `None` if `n` does not fit in 32 bits.
    pub fn new(n: usize) -> Option<TwoEnds> {
        let n = u32::try_from(n).ok()?;
        Some(TwoEnds {
            ends: AtomicU64::new(u64::from(n) << 32),
        })
    }

    /// The lowest index not handed out yet, or `None` once the ends have met.
    pub fn front(&self) -> Option<usize> {
        self.take(true)
    }

    /// The highest index not handed out yet, or `None` once the ends have met.
    pub fn back(&self) -> Option<usize> {
        self.take(false)
    }

    /// Hands out nothing more: the ends meet where the front is, so `front` and `back` return
    /// `None` from now on (a batch stopped by Ctrl-C: each thread ends after its current item).
    pub fn close(&self) {
        // Cannot fail: the closure always returns `Some`.
        let _ = self
            .ends
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |ends| {
                let next = ends & u64::from(u32::MAX);
                Some(next << 32 | next)
            });
    }

    fn take(&self, front: bool) -> Option<usize> {
        let mut taken = 0;
        self.ends
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |ends| {
                let (next, end) = (ends & u64::from(u32::MAX), ends >> 32);
                if next >= end {
                    return None;
                }
                if front {
                    taken = next;
                    Some(ends + 1)
                } else {
                    taken = end - 1;
                    Some(ends - (1 << 32))
                }
            })
            .ok()
            .map(|_| taken as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_index_once_front_ascending_back_descending() {
        let ends = TwoEnds::new(7).unwrap();
        assert_eq!(ends.front(), Some(0));
        assert_eq!(ends.back(), Some(6));
        assert_eq!(ends.back(), Some(5));
        assert_eq!(ends.front(), Some(1));
        assert_eq!(ends.front(), Some(2));
        assert_eq!(ends.back(), Some(4));
        assert_eq!(ends.front(), Some(3));
        assert_eq!(ends.front(), None);
        assert_eq!(ends.back(), None);
        let empty = TwoEnds::new(0).unwrap();
        assert_eq!((empty.front(), empty.back()), (None, None));
    }

    #[test]
    fn threads_at_both_ends_share_every_index_exactly_once() {
        let n = 100_000;
        let ends = TwoEnds::new(n).unwrap();
        let mut seen: Vec<Vec<usize>> = std::thread::scope(|s| {
            let takers: Vec<_> = (0..4)
                .map(|t| {
                    let ends = &ends;
                    s.spawn(move || {
                        let take = || if t == 0 { ends.front() } else { ends.back() };
                        std::iter::from_fn(take).collect::<Vec<_>>()
                    })
                })
                .collect();
            takers.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // The front's indices ascend, and each back taker's descend.
        assert!(seen[0].windows(2).all(|w| w[0] < w[1]));
        assert!(seen[1..].iter().all(|s| s.windows(2).all(|w| w[0] > w[1])));
        let mut all: Vec<usize> = seen.iter_mut().flat_map(std::mem::take).collect();
        all.sort_unstable();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn a_closed_batch_hands_out_nothing_more() {
        let ends = TwoEnds::new(10).unwrap();
        assert_eq!((ends.front(), ends.back()), (Some(0), Some(9)));
        ends.close();
        assert_eq!((ends.front(), ends.back()), (None, None));
        ends.close();
        assert_eq!(ends.front(), None);
    }

    #[test]
    fn counts_beyond_32_bits_are_refused() {
        assert!(TwoEnds::new(u32::MAX as usize).is_some());
        assert!(TwoEnds::new(u32::MAX as usize + 1).is_none());
    }
}
