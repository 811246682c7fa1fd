//! HF's `Word` (`tokenizers/src/models/bpe/word.rs`): a word's symbols and their merging, for
//! both BPE models here (byte-level, `bpe_model.rs`; SentencePiece, `sentencepiece_bpe.rs`).
//!
//! Invariant: [`Symbols`] holds the symbols HF's `BPE::merge_word` adds, in its order: a known
//! symbol first adds the pending unknown token; consecutive unknowns fuse with `fuse_unk`; byte
//! fallback symbols are added without adding the pending unknown (HF's order, kept though no
//! shared model can meet it). [`Symbols::merge_into`] then merges as `Word::merge_all` without
//! dropout: a heap of (merge key, position), the lowest key first (keys order as ranks, see
//! `merge_table.rs`), the leftmost among equals; an entry whose position no longer holds a
//! pair making its token is skipped. A word of at most [`SHORT`] symbols merges without the
//! heap, by a scan for the lowest key (the leftmost among equals) each round: the same merges
//! in the same order, as a stale entry never merges (a pair at its position now spans other
//! text, so makes another token) and a rank is one pair (equal keys are equal pairs).

use super::merge_table::{MergeTable, NONE};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU8, Ordering};

/// Per token: whether BPE on the token's own text gives that token alone (HF reaches a token
/// only through its listed merge, so a word that is a token may still merge into others).
/// Each answer is computed at its first need and kept: 0 not yet known, 1 yes, 2 no.
pub(super) struct Reached(Box<[AtomicU8]>);

impl Reached {
    /// Room for ids `0..n`; any other id is never reached.
    pub(super) fn new(n: usize) -> Self {
        Reached((0..n).map(|_| AtomicU8::new(0)).collect())
    }

    /// Whether the answer for `id` is known, and yes.
    #[inline(always)]
    pub(super) fn known_yes(&self, id: u32) -> bool {
        self.0
            .get(id as usize)
            .is_some_and(|slot| slot.load(Ordering::Relaxed) == 1)
    }

    /// The answer for `id`, from `merge` (which appends the ids of the token's text) at its
    /// first need.
    pub(super) fn get(&self, id: u32, merge: impl FnOnce(&mut Vec<u32>)) -> bool {
        let Some(slot) = self.0.get(id as usize) else {
            return false;
        };
        match slot.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let mut ids = Vec::new();
                merge(&mut ids);
                let ok = ids == [id];
                slot.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
                ok
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Sym {
    id: u32,
    /// The bytes of the word it stands for; 0 once merged into the symbol on its left.
    len: u32,
    prev: i32,
    next: i32,
}

/// The most symbols merged by a scan rather than the heap (and held without an allocation).
const SHORT: usize = 32;

const NO_SYM: Sym = Sym {
    id: NONE,
    len: 0,
    prev: -1,
    next: -1,
};

/// A word's symbols as HF's `BPE::merge_word` builds them (see the module docs): the first
/// [`SHORT`] in place, all of them in `spill` past that.
pub(super) struct Symbols {
    inline: [Sym; SHORT],
    spill: Vec<Sym>,
    n: usize,
    /// The unknown token waiting to be added, and the bytes it stands for.
    unk: Option<(u32, u32)>,
}

impl Symbols {
    pub(super) fn new() -> Self {
        Symbols {
            inline: [NO_SYM; SHORT],
            spill: Vec::new(),
            n: 0,
            unk: None,
        }
    }

    #[inline]
    fn push(&mut self, id: u32, len: u32) {
        let i = self.n as i32;
        let sym = Sym {
            id,
            len,
            prev: i - 1,
            next: i + 1,
        };
        if self.n < SHORT {
            self.inline[self.n] = sym;
        } else {
            if self.n == SHORT {
                self.spill.reserve(4 * SHORT);
                self.spill.extend_from_slice(&self.inline);
            }
            self.spill.push(sym);
        }
        self.n += 1;
    }

    /// A symbol of the vocabulary standing for `len` bytes.
    #[inline]
    pub(super) fn known(&mut self, id: u32, len: u32) {
        if let Some((u, l)) = self.unk.take() {
            self.push(u, l);
        }
        self.push(id, len);
    }

    /// A byte fallback symbol (`<0xHH>`): one byte, the pending unknown left waiting.
    #[inline]
    pub(super) fn fallback(&mut self, id: u32) {
        self.push(id, 1);
    }

    /// The unknown token `unk` for `len` bytes that have no symbol.
    #[inline]
    pub(super) fn unknown(&mut self, unk: u32, len: u32, fuse: bool) {
        self.unk = match self.unk {
            Some((u, l)) if fuse => Some((u, l + len)),
            Some((u, l)) => {
                self.push(u, l);
                Some((unk, len))
            }
            None => Some((unk, len)),
        };
    }

    /// Merges the symbols (see the module docs) and appends their ids to `out`, and each
    /// one's byte count to `lens` when asked.
    pub(super) fn merge_into(
        mut self,
        t: &MergeTable,
        out: &mut Vec<u32>,
        lens: Option<&mut Vec<u32>>,
    ) {
        if let Some((u, l)) = self.unk.take() {
            self.push(u, l);
        }
        if self.n <= SHORT {
            merge_short(&self.inline[..self.n], t, out, lens);
        } else {
            merge_heap(&mut self.spill, t, out, lens);
        }
    }
}

/// [`Symbols::merge_into`] by HF's heap.
fn merge_heap(syms: &mut [Sym], t: &MergeTable, out: &mut Vec<u32>, lens: Option<&mut Vec<u32>>) {
    if let Some(last) = syms.last_mut() {
        last.next = -1;
    }
    if syms.len() > 1 {
        let mut heap: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::with_capacity(syms.len());
        for i in 0..syms.len() - 1 {
            let k = t.get(syms[i].id, syms[i + 1].id);
            if k != NONE {
                heap.push(Reverse((k, i as u32)));
            }
        }
        while let Some(Reverse((k, pos))) = heap.pop() {
            let pos = pos as usize;
            if syms[pos].len == 0 || syms[pos].next == -1 {
                continue;
            }
            let next = syms[pos].next as usize;
            let right = syms[next];
            // HF skips an entry whose position's pair no longer makes the entry's token.
            let new_id = t.merged(k);
            let now = t.get(syms[pos].id, right.id);
            if now == NONE || t.merged(now) != new_id {
                continue;
            }
            syms[pos].id = new_id;
            syms[pos].len += right.len;
            syms[pos].next = right.next;
            syms[next].len = 0;
            if right.next >= 0 {
                syms[right.next as usize].prev = pos as i32;
            }
            let cur = syms[pos];
            if cur.prev >= 0 {
                let p = cur.prev as usize;
                let k = t.get(syms[p].id, cur.id);
                if k != NONE {
                    heap.push(Reverse((k, p as u32)));
                }
            }
            if cur.next >= 0 {
                let n = cur.next as usize;
                let k = t.get(cur.id, syms[n].id);
                if k != NONE {
                    heap.push(Reverse((k, pos as u32)));
                }
            }
        }
    }
    match lens {
        Some(lens) => {
            for s in syms.iter().filter(|s| s.len != 0) {
                out.push(s.id);
                lens.push(s.len);
            }
        }
        None => out.extend(syms.iter().filter(|s| s.len != 0).map(|s| s.id)),
    }
}

/// [`Symbols::merge_into`] for at most [`SHORT`] symbols (see [`scan_merge`]). Most words
/// have at most 16: their arrays are half the size, so each merge's shift copies half as much.
fn merge_short(syms: &[Sym], t: &MergeTable, out: &mut Vec<u32>, lens: Option<&mut Vec<u32>>) {
    if syms.len() <= SHORT / 2 {
        merge_short_in::<{ SHORT / 2 }, SHORT>(syms, t, out, lens)
    } else {
        merge_short_in::<SHORT, { 2 * SHORT }>(syms, t, out, lens)
    }
}

/// [`merge_short`] of at most `MAX` symbols, in arrays of `ROOM = 2 * MAX`.
#[inline(always)]
fn merge_short_in<const MAX: usize, const ROOM: usize>(
    syms: &[Sym],
    t: &MergeTable,
    out: &mut Vec<u32>,
    lens: Option<&mut Vec<u32>>,
) {
    let n = syms.len();
    let mut ids = [0u32; ROOM];
    let mut len_of = [0u32; ROOM];
    let mut keys = [NONE; ROOM];
    for (i, s) in syms.iter().enumerate() {
        ids[i] = s.id;
        len_of[i] = s.len;
    }
    for i in 1..n {
        keys[i - 1] = t.get(ids[i - 1], ids[i]);
    }
    let len = scan_merge::<MAX, ROOM>(t, &mut ids, &mut keys, Some(&mut len_of), n);
    out.extend_from_slice(&ids[..len]);
    if let Some(lens) = lens {
        lens.extend_from_slice(&len_of[..len]);
    }
}

/// The scan of the module docs over `n <= MAX` symbols: `ids`, the merge key of each adjacent
/// pair in `keys` (`NONE` past the last pair), and each one's byte count in `lens` if kept.
/// Each round merges the pair of the lowest key, the leftmost among equals, until no pair
/// is a merge; returns how many symbols remain. The arrays hold `ROOM = 2 * MAX` so that
/// the shift after a merge is a copy of one constant size (`MAX` elements, past the symbols
/// too), not a `memmove` whose size changes with each merge.
#[inline(always)]
pub(super) fn scan_merge<const MAX: usize, const ROOM: usize>(
    t: &MergeTable,
    ids: &mut [u32; ROOM],
    keys: &mut [u32; ROOM],
    mut lens: Option<&mut [u32; ROOM]>,
    n: usize,
) -> usize {
    debug_assert!(ROOM == 2 * MAX && n <= MAX);
    let mut len = n;
    while len > 1 {
        let mut best = 0;
        let mut best_key = keys[0];
        for (i, &k) in keys[1..len - 1].iter().enumerate() {
            if k < best_key {
                best_key = k;
                best = i + 1;
            }
        }
        if best_key == NONE {
            break;
        }
        ids[best] = t.merged(best_key);
        // `best <= len - 2 <= MAX - 2`, so `best + 2 + MAX <= ROOM`. What lands past the
        // symbols is never read: `ids` and `lens` only below `len`, and `keys` stays `NONE`
        // there (it starts so, and only `NONE` moves down into it).
        ids.copy_within(best + 2..best + 2 + MAX, best + 1);
        keys.copy_within(best + 2..best + 2 + MAX, best + 1);
        if let Some(lens) = lens.as_deref_mut() {
            lens[best] += lens[best + 1];
            lens.copy_within(best + 2..best + 2 + MAX, best + 1);
        }
        len -= 1;
        keys[len - 1] = NONE;
        if best + 1 < len {
            keys[best] = t.get(ids[best], ids[best + 1]);
        } else {
            keys[best] = NONE;
        }
        if best > 0 {
            keys[best - 1] = t.get(ids[best - 1], ids[best]);
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use rustc_hash::FxHashMap;

    /// The scan and the heap give the same ids and lengths on random words over random merge
    /// tables (one rank a pair, each merge making a token of its own).
    #[test]
    fn scan_equals_heap() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for round in 0..300 {
            let n_base = 2 + rng.below(5) as u32;
            let mut merges: FxHashMap<u64, (u32, u32)> = FxHashMap::default();
            let mut next = n_base;
            for rank in 0..rng.below(40) as u32 {
                let (a, b) = (
                    rng.below(next as usize) as u32,
                    rng.below(next as usize) as u32,
                );
                let k = (u64::from(a) << 32) | u64::from(b);
                if merges.contains_key(&k) {
                    continue;
                }
                merges.insert(k, (rank, next));
                next += 1;
            }
            let table = MergeTable::new(&merges, &[NONE; 256]);
            let len = 1 + rng.below(SHORT);
            let word: Vec<u32> = (0..len)
                .map(|_| rng.below(n_base as usize) as u32)
                .collect();
            let build = || {
                let mut s = Symbols::new();
                for &id in &word {
                    s.known(id, 1 + id % 3);
                }
                s
            };
            let (mut a, mut la, mut b, mut lb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let short = build();
            merge_short(&short.inline[..short.n], &table, &mut a, Some(&mut la));
            let mut syms = build().inline[..len].to_vec();
            merge_heap(&mut syms, &table, &mut b, Some(&mut lb));
            assert_eq!((a, la), (b, lb), "round {round}: {word:?}");
        }
    }
}
