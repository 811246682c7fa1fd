//! Learning merges from piece counts: a max-heap of pairs with lazily refreshed counts,
//! and incremental updates that touch only the pieces containing the merged pair.
//!
//! Invariant: the merges are those of the definition in `train/mod.rs` (steps 3-5): at
//! every step `count[p]` is the exact count of pair `p` over the current tokens of all
//! pieces, `pos[p]` lists (at least) every piece that holds `p`, and each heap entry's
//! count is at least the pair's current count. Why that suffices: the only pairs whose
//! count can grow are those created by the step that made their newest token, which are
//! pushed with their full count at the end of that step; every other count only shrinks.
//! So an entry whose stored count equals the current count, popped from the top, is the
//! true maximum (ties: smallest pair, by the heap's order); a stale one is pushed again
//! with its current count. This is the scheme of Sennrich et al.'s subword-nmt "fast"
//! learner and of HuggingFace tokenizers' BPE trainer, with flat arrays instead of
//! per-pair hash sets.

use super::{Hook, Progress};
use crate::error::{Error, Result};
use crate::vocab::Rank;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// What to learn.
#[derive(Clone, Copy, Debug)]
pub struct MergeConfig {
    /// How many merges to make at most (the vocabulary size less 256 and the special tokens).
    pub n_merges: usize,
    /// Stop when the most frequent pair occurs fewer times than this (0 or 1: never).
    pub min_frequency: u64,
    /// Never make a token longer than this many bytes.
    pub max_token_length: Option<usize>,
}

/// The learned merges: `merges[i]` made token `256 + i`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Learned {
    pub merges: Vec<(Rank, Rank)>,
    /// The bytes of every token, indexed by id (256 + number of merges entries).
    pub tokens: Vec<Vec<u8>>,
}

/// Pairs occurring fewer times than the floor are left out of the pair structures (most
/// pairs made by merges are rare and never merged: at 32k merges on 50 MB of text, ~80% of
/// them are under the final merge's count). Counts only shrink, so while the best tracked
/// pair is at least as frequent as the floor it is the true best; when it is not, all pairs
/// are recounted exactly from the current tokens with the floor divided by 4, down to 1.
const FIRST_FLOOR: u64 = 64;

#[inline]
fn key(a: Rank, b: Rank) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

#[inline]
fn unkey(k: u64) -> (Rank, Rank) {
    ((k >> 32) as Rank, k as Rank)
}

struct Slot {
    count: u64,
    /// Pieces that hold (or held) this pair, each at most once.
    pos: Vec<u32>,
    banned: bool,
}

/// The count changes of one step, indexed by the neighbouring token, so the hot loop
/// does no hashing. Merging `(a, b)` into `z` only ever changes pairs `(x, a)` and `(b, y)`
/// (down) and `(x, z)` and `(z, y)` (made in this step), for neighbours `x` and `y`.
#[derive(Default)]
struct StepDeltas {
    /// `(x, a)`: lost occurrences.
    left_old: Vec<i64>,
    /// `(b, y)`: lost occurrences.
    right_old: Vec<i64>,
    /// `(x, z)`: count and the pieces holding it.
    left_new: Vec<(i64, Vec<u32>)>,
    /// `(z, y)`: count and the pieces holding it.
    right_new: Vec<(i64, Vec<u32>)>,
    touched_left_old: Vec<Rank>,
    touched_right_old: Vec<Rank>,
    touched_left_new: Vec<Rank>,
    touched_right_new: Vec<Rank>,
}

impl StepDeltas {
    fn grow(&mut self, n: usize) {
        if self.left_old.len() < n {
            self.left_old.resize(n, 0);
            self.right_old.resize(n, 0);
            self.left_new.resize_with(n, Default::default);
            self.right_new.resize_with(n, Default::default);
        }
    }

    #[inline]
    fn old(v: &mut [i64], touched: &mut Vec<Rank>, x: Rank, d: i64) {
        let e = &mut v[x as usize];
        if *e == 0 {
            touched.push(x);
        }
        *e += d;
    }

    #[inline]
    fn made(v: &mut [(i64, Vec<u32>)], touched: &mut Vec<Rank>, x: Rank, d: i64, w: Option<u32>) {
        let e = &mut v[x as usize];
        if e.0 == 0 && e.1.is_empty() {
            touched.push(x);
        }
        e.0 += d;
        if let Some(w) = w {
            if e.1.last() != Some(&w) {
                e.1.push(w);
            }
        }
    }
}

/// Each piece is stored as `[capacity, len, weight low, weight high, tokens...]` in one
/// arena and named by the offset of that header, so visiting a piece is one cache miss
/// (header and first tokens share a line) with no dependent second lookup.
const HEADER: usize = 4;

/// `(current length, weight)` of the piece at offset `o`.
#[inline]
fn header(ids: &[Rank], o: usize) -> (usize, u64) {
    (
        ids[o + 1] as usize,
        u64::from(ids[o + 2]) | (u64::from(ids[o + 3]) << 32),
    )
}

/// Offsets of all pieces in the arena.
fn offsets(ids: &[Rank]) -> impl Iterator<Item = usize> + '_ {
    let mut o = 0;
    std::iter::from_fn(move || {
        if o >= ids.len() {
            return None;
        }
        let here = o;
        o += HEADER + ids[o] as usize;
        Some(here)
    })
}

struct Trainer {
    /// The pieces, each a header and its tokens (see [`HEADER`]).
    ids: Vec<Rank>,
    slot_of: FxHashMap<u64, u32>,
    slots: Vec<Slot>,
    heap: BinaryHeap<(u64, Reverse<u64>, u32)>,
    step: StepDeltas,
    /// Pairs rarer than this are not tracked (no slot, no positions, not in the heap).
    floor: u64,
}

impl Trainer {
    fn new<B: AsRef<[u8]>>(pieces: impl IntoIterator<Item = (B, u64)>) -> Result<Self> {
        let mut t = Trainer {
            ids: Vec::new(),
            slot_of: FxHashMap::default(),
            slots: Vec::new(),
            heap: BinaryHeap::new(),
            step: StepDeltas::default(),
            floor: 1,
        };
        for (bytes, count) in pieces {
            let bytes = bytes.as_ref();
            // A piece of one byte holds no pair and never changes.
            if bytes.len() < 2 || count == 0 {
                continue;
            }
            if t.ids.len() + HEADER + bytes.len() > u32::MAX as usize {
                return Err(Error::Input(
                    "too many distinct pieces to train on (over 2^32 tokens)".into(),
                ));
            }
            if count > i64::MAX as u64 {
                return Err(Error::Input("a piece count exceeds 2^63".into()));
            }
            let n = bytes.len() as Rank;
            t.ids
                .extend_from_slice(&[n, n, count as Rank, (count >> 32) as Rank]);
            t.ids.extend(bytes.iter().map(|&b| Rank::from(b)));
        }
        t.build(FIRST_FLOOR)?;
        Ok(t)
    }

    /// (Re)builds the pair counts, positions and heap from the pieces' current tokens,
    /// tracking only pairs that occur at least `floor` times (see [`FIRST_FLOOR`]).
    fn build(&mut self, floor: u64) -> Result<()> {
        self.floor = floor;
        self.slot_of = FxHashMap::default();
        self.slots = Vec::new();
        self.heap = BinaryHeap::new();
        let mut counts: FxHashMap<u64, u64> = FxHashMap::default();
        for o in offsets(&self.ids) {
            let (n, weight) = header(&self.ids, o);
            for p in self.ids[o + HEADER..o + HEADER + n].windows(2) {
                let c = counts.entry(key(p[0], p[1])).or_insert(0);
                *c = c
                    .checked_add(weight)
                    .ok_or_else(|| Error::Input("a pair count exceeds 2^64".into()))?;
            }
        }
        for (&k, &c) in &counts {
            if c >= floor {
                self.slot_of.insert(k, self.slots.len() as u32);
                self.slots.push(Slot {
                    count: c,
                    pos: Vec::new(),
                    banned: false,
                });
            }
        }
        drop(counts);
        for o in offsets(&self.ids) {
            let (n, _) = header(&self.ids, o);
            for p in self.ids[o + HEADER..o + HEADER + n].windows(2) {
                if let Some(&sid) = self.slot_of.get(&key(p[0], p[1])) {
                    let pos = &mut self.slots[sid as usize].pos;
                    if pos.last() != Some(&(o as u32)) {
                        pos.push(o as u32);
                    }
                }
            }
        }
        for slot in &mut self.slots {
            slot.pos.shrink_to_fit();
        }
        let entries: Vec<_> = self
            .slot_of
            .iter()
            .map(|(&k, &sid)| (self.slots[sid as usize].count, Reverse(k), sid))
            .collect();
        self.heap = BinaryHeap::from(entries);
        Ok(())
    }

    /// The next pair to merge, with its count, or `None` when no pair occurs.
    fn pop_best(&mut self) -> Result<Option<(u64, u64, u32)>> {
        loop {
            let best = self.pop_tracked();
            // Untracked pairs are rarer than the floor: while the best tracked pair is at
            // least that frequent it is the true best (ties included). Otherwise recount
            // everything from the current tokens with a lower floor.
            match best {
                Some((count, _, _)) if count >= self.floor => return Ok(best),
                _ if self.floor <= 1 => return Ok(best),
                _ => {
                    let floor = self.floor / 4;
                    self.build(floor.max(1))?;
                }
            }
        }
    }

    fn pop_tracked(&mut self) -> Option<(u64, u64, u32)> {
        while let Some((count, Reverse(k), sid)) = self.heap.pop() {
            let slot = &self.slots[sid as usize];
            if slot.banned || slot.count == 0 {
                continue;
            }
            if slot.count != count {
                self.heap.push((slot.count, Reverse(k), sid));
                continue;
            }
            return Some((count, k, sid));
        }
        None
    }

    /// Replaces `(a, b)` by `z` in every piece that holds it, left to right without
    /// overlap, and updates the pair counts.
    fn merge(&mut self, k: u64, sid: u32, z: Rank) {
        let (a, b) = unkey(k);
        let pos = std::mem::take(&mut self.slots[sid as usize].pos);
        let mut st = std::mem::take(&mut self.step);
        st.grow(z as usize + 1);
        let mut merged_count: u64 = 0;
        const AHEAD: usize = 8;
        for (k, &w) in pos.iter().enumerate() {
            // Touch a piece a few steps ahead so its cache misses overlap with this work
            // (the loaded value is unused; `black_box` keeps the load).
            if let Some(&ahead) = pos.get(k + AHEAD) {
                std::hint::black_box(self.ids.get(ahead as usize + 1));
            }
            let o = w as usize;
            let (n, weight) = header(&self.ids, o);
            let t = &mut self.ids[o + HEADER..o + HEADER + n];
            // Counts are checked to fit in i64 when the pieces are loaded.
            let c = weight as i64;
            let (mut i, mut j) = (0, 0);
            while i < n {
                if i + 1 < n && t[i] == a && t[i + 1] == b {
                    if j > 0 {
                        let x = t[j - 1];
                        if x == z {
                            // (z, a), made earlier in this piece, is gone again.
                            StepDeltas::made(
                                &mut st.right_new,
                                &mut st.touched_right_new,
                                a,
                                -c,
                                None,
                            );
                        } else {
                            StepDeltas::old(&mut st.left_old, &mut st.touched_left_old, x, -c);
                        }
                        StepDeltas::made(&mut st.left_new, &mut st.touched_left_new, x, c, Some(w));
                    }
                    merged_count += c as u64;
                    if i + 2 < n {
                        let y = t[i + 2];
                        StepDeltas::old(&mut st.right_old, &mut st.touched_right_old, y, -c);
                        StepDeltas::made(
                            &mut st.right_new,
                            &mut st.touched_right_new,
                            y,
                            c,
                            Some(w),
                        );
                    }
                    t[j] = z;
                    j += 1;
                    i += 2;
                } else {
                    t[j] = t[i];
                    j += 1;
                    i += 1;
                }
            }
            self.ids[o + 1] = j as u32;
        }
        let slot = &mut self.slots[sid as usize];
        slot.count = slot.count.saturating_sub(merged_count);
        for x in st.touched_left_old.drain(..) {
            let d = std::mem::take(&mut st.left_old[x as usize]);
            self.add_old(key(x, a), d);
        }
        for y in st.touched_right_old.drain(..) {
            let d = std::mem::take(&mut st.right_old[y as usize]);
            self.add_old(key(b, y), d);
        }
        for x in st.touched_left_new.drain(..) {
            let (d, ws) = std::mem::take(&mut st.left_new[x as usize]);
            self.add_new(key(x, z), d, ws);
        }
        for y in st.touched_right_new.drain(..) {
            let (d, ws) = std::mem::take(&mut st.right_new[y as usize]);
            self.add_new(key(z, y), d, ws);
        }
        self.step = st;
        debug_assert_eq!(self.slots[sid as usize].count, 0);
    }

    /// A change to a pair that existed before this step (it can only shrink).
    fn add_old(&mut self, pk: u64, d: i64) {
        if d == 0 {
            return;
        }
        if let Some(&sid) = self.slot_of.get(&pk) {
            let slot = &mut self.slots[sid as usize];
            slot.count = slot.count.saturating_add_signed(d);
        }
    }

    /// A pair made in this step: never seen before, so its count is its delta.
    fn add_new(&mut self, pk: u64, d: i64, pos: Vec<u32>) {
        if d <= 0 || (d as u64) < self.floor {
            return;
        }
        let sid = self.slots.len() as u32;
        self.slots.push(Slot {
            count: d as u64,
            pos,
            banned: false,
        });
        self.slot_of.insert(pk, sid);
        self.heap.push((d as u64, Reverse(pk), sid));
    }
}

/// Learns up to `cfg.n_merges` merges from distinct pieces and their counts.
/// `hook` is called about every 100 ms with the merges done; an error from it stops
/// training and is returned.
pub fn learn<B: AsRef<[u8]>>(
    pieces: impl IntoIterator<Item = (B, u64)>,
    cfg: MergeConfig,
    hook: Hook<'_>,
) -> Result<Learned> {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut merges = Vec::new();
    if cfg.n_merges == 0 {
        return Ok(Learned { merges, tokens });
    }
    let mut t = Trainer::new(pieces)?;
    let total = cfg.n_merges as u64;
    hook(Progress::Merging { done: 0, total })?;
    let mut last = Instant::now();
    while merges.len() < cfg.n_merges {
        let Some((count, k, sid)) = t.pop_best()? else {
            break;
        };
        if count < cfg.min_frequency {
            break;
        }
        let (a, b) = unkey(k);
        if let Some(max) = cfg.max_token_length {
            if tokens[a as usize].len() + tokens[b as usize].len() > max {
                t.slots[sid as usize].banned = true;
                continue;
            }
        }
        let z = Rank::try_from(tokens.len())
            .map_err(|_| Error::Input("too many merges for 32-bit token ids".into()))?;
        t.merge(k, sid, z);
        let mut bytes = tokens[a as usize].clone();
        bytes.extend_from_slice(&tokens[b as usize]);
        tokens.push(bytes);
        merges.push((a, b));
        if merges.len() % 64 == 0 && last.elapsed() >= Duration::from_millis(100) {
            last = Instant::now();
            hook(Progress::Merging {
                done: merges.len() as u64,
                total,
            })?;
        }
    }
    hook(Progress::Merging {
        done: merges.len() as u64,
        total,
    })?;
    Ok(Learned { merges, tokens })
}

#[cfg(test)]
mod tests {
    use super::super::reference;
    use super::*;

    fn run(pieces: &[(&[u8], u64)], cfg: MergeConfig) -> Learned {
        learn(pieces.iter().copied(), cfg, &mut |_| Ok(())).unwrap()
    }

    fn cfg(n: usize) -> MergeConfig {
        MergeConfig {
            n_merges: n,
            min_frequency: 0,
            max_token_length: None,
        }
    }

    #[test]
    fn overlapping_runs_count_twice_and_merge_left_to_right() {
        // "aaa" holds (a, a) twice: it beats "bc" x 3? No: 2 x 1 < 3.
        let l = run(&[(b"aaa", 1), (b"bc", 3)], cfg(1));
        assert_eq!(l.merges, vec![(b'b' as Rank, b'c' as Rank)]);
        // 2 x 2 = 4 > 3.
        let l = run(&[(b"aaa", 2), (b"bc", 3)], cfg(2));
        assert_eq!(l.merges[0], (97, 97));
        // After (a,a) -> 256, "aaa" is [256, a]: (256, a) has count 2 < 3, so bc next.
        assert_eq!(l.merges[1], (98, 99));
    }

    #[test]
    fn ties_go_to_the_smallest_pair() {
        let l = run(&[(b"zy", 5), (b"ba", 5), (b"bb", 5)], cfg(3));
        assert_eq!(l.merges, vec![(98, 97), (98, 98), (122, 121)]);
    }

    #[test]
    fn stops_when_no_pair_is_left() {
        let l = run(&[(b"ab", 10)], cfg(5));
        assert_eq!(l.merges, vec![(97, 98)]);
        assert_eq!(l.tokens[256], b"ab");
        let l = run(&[], cfg(5));
        assert!(l.merges.is_empty());
        assert_eq!(l.tokens.len(), 256);
    }

    #[test]
    fn min_frequency_and_max_token_length() {
        let pieces: &[(&[u8], u64)] = &[(b"abcd", 10), (b"xy", 3)];
        let l = run(
            pieces,
            MergeConfig {
                n_merges: 10,
                min_frequency: 4,
                max_token_length: None,
            },
        );
        assert!(l.merges.iter().all(|&(a, b)| (a, b) != (120, 121)));
        assert_eq!(l.tokens.last().unwrap(), b"abcd");
        let l = run(
            pieces,
            MergeConfig {
                n_merges: 10,
                min_frequency: 0,
                max_token_length: Some(2),
            },
        );
        assert!(l.tokens.iter().all(|t| t.len() <= 2));
        assert_eq!(l.merges.len(), 3); // ab, cd, xy; bc is taken by the earlier merges
    }

    #[test]
    fn interrupting_hook_stops_training() {
        let pieces: &[(&[u8], u64)] = &[(b"abcdefgh", 10)];
        let r = learn(pieces.iter().copied(), cfg(5), &mut |_| {
            Err(Error::Interrupted)
        });
        assert_eq!(r, Err(Error::Interrupted));
    }

    /// Pseudo-random corpora over small alphabets (many ties, overlapping runs),
    /// compared with the brute-force reference, merge by merge.
    #[test]
    fn equals_the_brute_force_reference_on_random_corpora() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..300 {
            let alphabet = 2 + (next() % 5) as u8;
            let n_pieces = 1 + (next() % 40) as usize;
            let mut pieces: Vec<(Vec<u8>, u64)> = Vec::new();
            for _ in 0..n_pieces {
                let len = 1 + (next() % 12) as usize;
                let p: Vec<u8> = (0..len)
                    .map(|_| b'a' + (next() % alphabet as u64) as u8)
                    .collect();
                if pieces.iter().any(|(q, _)| *q == p) {
                    continue;
                }
                // Some corpora with large counts, so the floor's rebuilds happen mid-way.
                let spread = if case % 3 == 0 { 300 } else { 6 };
                pieces.push((p, 1 + next() % spread));
            }
            let cfg = MergeConfig {
                n_merges: 1 + (next() % 40) as usize,
                min_frequency: if case % 5 == 0 { 1 + next() % 4 } else { 0 },
                max_token_length: if case % 7 == 0 {
                    Some(2 + (next() % 4) as usize)
                } else {
                    None
                },
            };
            let fast = learn(
                pieces.iter().map(|(p, c)| (p.as_slice(), *c)),
                cfg,
                &mut |_| Ok(()),
            )
            .unwrap();
            let slow = reference::learn(&pieces, cfg);
            assert_eq!(fast.merges, slow, "case {case}: {pieces:?} {cfg:?}");
        }
    }
}
