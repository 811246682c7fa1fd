//! The tables BPE builds from a vocabulary at its first need, in one owner: [`BpeVocab`], a
//! [`Vocab`] with its pair filter, backtracking tables and cut tables.
//!
//! Invariant: each table is built at most once per process (a forked child that inherited
//! one built by its parent uses it; one whose parent was still building builds its own, see
//! `ProcessOnce`), and none changes what any encoding returns: with or without them, every
//! piece gets the tokens of the merge-rank definition in `bpe/mod.rs`. They only change how
//! soon.
//!
//! Why they are not in `Vocab`: the vocabulary is the immutable bytes ⇄ id tables that
//! decoding, training and the bindings read; these tables and the policy of when to build
//! them are the encoder's. Kept here, dependencies run one way (`vocab` → `encode`).

use super::backtrack::Backtrack;
use super::char_cuts::CharCuts;
use super::pair_filter::PairFilter;
use crate::runtime::process_once::ProcessOnce;
use crate::vocab::Vocab;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes of long pieces that go without the backtracking encoder before its tables are built
/// (see [`BpeVocab::backtrack_for`]).
///
/// Why this many: without backtracking, o200k encodes English ~2x and multilingual text ~5x
/// slower (the pieces that would take it cost 22-32 ns more a byte), so 128 KiB of them cost
/// at most ~4 ms more, a tenth of building the tables (see docs/engine.md).
pub const BACKTRACK_AFTER: usize = 128 << 10;

/// A vocabulary and the tables BPE builds from it lazily. It reads as the [`Vocab`] it holds
/// (`Deref`), so BPE code asks one value for both.
pub struct BpeVocab {
    vocab: Vocab,
    /// The backtracking encoder for long pieces, built once they have had
    /// [`BACKTRACK_AFTER`] bytes (`None` if this vocabulary's merges do not allow it; see
    /// `backtrack.rs`).
    backtrack: ProcessOnce<Option<Backtrack>>,
    /// Bytes of the pieces that went without backtracking while its tables were not built.
    without_backtrack: AtomicUsize,
    /// Which pairs might merge, built at the first BPE that needs it (see `pair_filter.rs`).
    pair_filter: ProcessOnce<PairFilter>,
    /// Where long CJK pieces may be cut, built at the first one once the backtracking tables
    /// are built or refused (`None` for a vocabulary with too few such chars; see
    /// `char_cuts.rs`).
    char_cuts: ProcessOnce<Option<CharCuts>>,
}

impl std::ops::Deref for BpeVocab {
    type Target = Vocab;

    #[inline(always)]
    fn deref(&self) -> &Vocab {
        &self.vocab
    }
}

impl From<Vocab> for BpeVocab {
    fn from(vocab: Vocab) -> Self {
        BpeVocab::new(vocab)
    }
}

impl BpeVocab {
    /// `vocab` with none of its tables built yet.
    pub fn new(vocab: Vocab) -> Self {
        BpeVocab {
            vocab,
            backtrack: ProcessOnce::new(),
            without_backtrack: AtomicUsize::new(0),
            pair_filter: ProcessOnce::new(),
            char_cuts: ProcessOnce::new(),
        }
    }

    /// The vocabulary itself.
    #[inline(always)]
    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// The filter in front of the pair table, built on first use (o200k: ~4 ms, 512 KiB):
    /// most look-ups of a pair that does not merge end there, in L2.
    #[inline]
    pub fn pair_filter(&self) -> &PairFilter {
        self.pair_filter
            .get_or_init(|| PairFilter::new(self.vocab.pairs.n_pairs(), self.vocab.pairs.pairs()))
    }

    /// The cut tables (see `char_cuts.rs`), built on first use; `None` where they would not
    /// pay.
    #[inline]
    pub fn char_cuts(&self) -> Option<&CharCuts> {
        self.char_cuts.get_or_init(|| CharCuts::new(self)).as_ref()
    }

    /// [`BpeVocab::char_cuts`] once the backtracking tables are built or refused for this
    /// vocabulary (the cut tables take their reachability from the same work), else `None`:
    /// until then a CJK piece goes the way of any other.
    #[inline]
    pub fn char_cuts_once_backtracking(&self) -> Option<&CharCuts> {
        self.backtrack.get()?;
        self.char_cuts()
    }

    /// The backtracking encoder, built now if it is not; `None` where it does not apply.
    #[inline]
    pub fn backtrack(&self) -> Option<&Backtrack> {
        self.backtrack.get_or_init(|| Backtrack::new(self)).as_ref()
    }

    /// The backtracking encoder if its tables are built; never builds them.
    #[inline(always)]
    pub fn backtrack_if_built(&self) -> Option<&Backtrack> {
        self.backtrack.get().and_then(Option::as_ref)
    }

    /// The backtracking encoder for a piece of `n` bytes that would take it, or `None` to
    /// take the scan or the heap instead: its tables are built once the pieces that went
    /// without them add up to [`BACKTRACK_AFTER`] bytes.
    ///
    /// Why wait: building them takes o200k ~40-50 ms, while a program's first pieces are
    /// few; meanwhile the scan and the heap give the same tokens, only slower.
    #[inline(always)]
    pub fn backtrack_for(&self, n: usize) -> Option<&Backtrack> {
        match self.backtrack.get() {
            Some(backtrack) => backtrack.as_ref(),
            None => self.backtrack_once_due(n),
        }
    }

    #[cold]
    #[inline(never)]
    fn backtrack_once_due(&self, n: usize) -> Option<&Backtrack> {
        if self.without_backtrack.fetch_add(n, Ordering::Relaxed) + n < BACKTRACK_AFTER {
            return None;
        }
        self.backtrack()
    }

    /// Builds now each table that encoding otherwise builds at its first need: the pair
    /// filter, the backtracking tables and the cut tables (those that apply). A process forked
    /// after this shares them with its parent instead of building its own.
    pub fn build_tables(&self) {
        self.pair_filter();
        self.backtrack();
        self.char_cuts();
    }

    /// Which of [`BpeVocab::build_tables`]'s tables are built, by name.
    pub fn tables_built(&self) -> [(&'static str, bool); 3] {
        [
            ("pair filter", self.pair_filter.get().is_some()),
            ("backtrack", self.backtrack.get().is_some()),
            ("cuts", self.char_cuts.get().is_some()),
        ]
    }

    /// Approximate heap memory of the vocabulary and of the tables built so far, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.vocab.memory_bytes()
            + self
                .backtrack
                .get()
                .and_then(Option::as_ref)
                .map_or(0, Backtrack::memory_bytes)
            + self.pair_filter.get().map_or(0, PairFilter::memory_bytes)
            + self
                .char_cuts
                .get()
                .and_then(Option::as_ref)
                .map_or(0, CharCuts::memory_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_that_builds_does_not_take_up_the_next_job_on_the_way() {
        // One helper thread; its job builds a vocabulary's backtracking tables (in parallel,
        // inside a `ProcessOnce`) with the next job, which needs them too, queued behind it. The
        // cross-pool wait ran that job on the building thread: a once-cell entered twice on
        // one thread, and the test hung.
        let mut ranks: rustc_hash::FxHashMap<Vec<u8>, crate::vocab::Rank> =
            (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in [&b"ab"[..], b"abc", b"bc", b"abcd"].iter().enumerate() {
            ranks.insert(t.to_vec(), 256 + i as u32);
        }
        let vocab =
            BpeVocab::new(crate::vocab::Vocab::new(ranks, Vec::new()).expect("a vocabulary"));
        let helpers = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("a pool");
        let (tx, rx) = std::sync::mpsc::channel();
        // Not a scoped thread: if it hangs, the test fails instead of waiting with it.
        std::thread::spawn(move || {
            let built = helpers.install(|| {
                rayon::scope(|sc| {
                    sc.spawn(|_| assert!(vocab.backtrack().is_some()));
                    assert!(vocab.backtrack().is_some());
                });
                true
            });
            let _ = tx.send(built);
        });
        let answer = rx.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(
            answer,
            Ok(true),
            "the helper never finished: it waits on itself"
        );
    }
}
