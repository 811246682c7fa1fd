//! A small per-thread cache of piece → ids for pieces that BPE splits into several tokens.
//!
//! Invariant: an entry maps a piece's exact bytes to the ids BPE gives that piece in the
//! owning encoder; entries are only ever inserted after computing them, so a hit returns
//! exactly what BPE would. Why: in real text the multi-token pieces repeat (inflected words,
//! identifiers, CJK runs), and one probe of a two-entry set replaces dozens of pair look-ups.
//! Two-way set-associative and fixed-size: no allocation; a new piece goes to its set's first
//! way and pushes the entry there to the second, dropping the older one. Two ways because
//! with one, text with as many distinct multi-token pieces as slots loses a fifth of its hits
//! to collisions. 65,536 entries (6 MiB a thread, allocated at its first multi-token piece):
//! a megabyte of text has ~16,000 distinct multi-token pieces, and text with richer
//! morphology (Arabic, Hindi) nearly twice that, which 32,768 entries read ~1.5x slower (the
//! figures are in docs/engine.md).
//! Each thread has its own cache ([`ThreadSlots`]), so no locks; an encode call
//! looks its thread's slots up once and keeps them in a [`Local`] for all its pieces.
//! In front of the sets, one tag byte per way (64 KiB a thread) turns away most pieces the
//! cache does not hold without reading their set: on text met once, where a third of the
//! probes miss, each such probe would read two lines that miss in L2.

use crate::runtime::thread_slots::ThreadSlots;
use std::cell::{RefCell, RefMut};

pub const MAX_PIECE: usize = 32;
/// Ids an entry holds as `u32`s.
pub const MAX_IDS: usize = 12;
/// Ids an entry holds when every one is below 2^16 (two to a `u32` slot).
///
/// Why: in GPT-2's vocabularies (r50k, p50k: all ids below 2^16) a CJK char is two or three
/// tokens, so short pieces of CJK text often have more than 12. In the benchmark's
/// multilingual megabyte, 7,633 pieces of at most 32 bytes had more than 12 ids on r50k (only
/// 1,526 distinct), and without this each of them went through BPE again.
pub const MAX_NARROW_IDS: usize = 2 * MAX_IDS;
/// Set in `Entry::n_ids` when the ids are stored two to a slot.
const NARROW: u8 = 0x80;
const SLOTS: usize = 1 << 16;

#[derive(Clone, Copy)]
#[repr(C)]
struct Entry {
    hash: u64,
    len: u8,
    /// The number of ids, with [`NARROW`] set if `ids` holds them as `u16` pairs (low half
    /// first).
    n_ids: u8,
    bytes: [u8; MAX_PIECE],
    ids: [u32; MAX_IDS],
}

impl Entry {
    /// Appends the entry's ids to `out`.
    #[inline(always)]
    fn push_ids(&self, out: &mut Vec<u32>) {
        if self.n_ids & NARROW == 0 {
            // All the slots, then cut back: a copy of fixed size is a few vector moves, where
            // one of `n_ids` was a call to `memcpy`.
            let end = out.len() + self.n_ids as usize;
            out.extend_from_slice(&self.ids);
            out.truncate(end);
        } else {
            push_narrow(&self.ids, (self.n_ids & !NARROW) as usize, out);
        }
    }
}

const EMPTY: Entry = Entry {
    hash: 0,
    len: 0,
    n_ids: 0,
    bytes: [0; MAX_PIECE],
    ids: [0; MAX_IDS],
};

/// A set's two ways, on whole cache lines (three of them): way 0's key, bytes and first five
/// ids share the set's first line, so a hit there on a piece of up to five ids reads one line
/// (left to the allocator, the sets would straddle lines and the fields be in the compiler's
/// order).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Set([Entry; 2]);

pub struct PieceCache {
    per_thread: ThreadSlots<OwnLine<RefCell<Slots>>>,
}

/// A thread's sets, and per set the tags of its two ways (the hash's top byte, 0 for an
/// empty way): 32 KiB that stay in L1/L2, so that a piece the cache does not hold is turned
/// away without reading its set (two lines of a 3 MiB array, misses in L2 on text met once).
struct Slots {
    sets: Box<[Set]>,
    tags: Box<[[u8; 2]]>,
}

/// The tag of hash `h`: its top byte (the set is chosen by the low bits).
#[inline(always)]
fn tag(h: u64) -> u8 {
    (h >> 56) as u8
}

/// A thread's slot handle on cache lines of its own. [`ThreadSlots`] keeps the values of
/// threads 1 and 2 (and 3-6, ...) side by side in one array, and `RefCell` writes its borrow
/// flag when a [`Local`] borrows the slots: unpadded (when that was on every `get` and `put`),
/// two encoding threads wrote one cache line on every multi-token piece, and the line bounced
/// between the cores. 128 bytes: a line and the one the adjacent-line prefetcher pairs with it.
#[repr(align(128))]
struct OwnLine<T>(T);

impl Default for PieceCache {
    fn default() -> Self {
        Self::new()
    }
}

impl PieceCache {
    pub fn new() -> Self {
        PieceCache {
            per_thread: ThreadSlots::new(),
        }
    }

    /// This thread's slots, made at its first ask; `None` on a thread that is exiting.
    #[inline(always)]
    fn slots(&self) -> Option<&RefCell<Slots>> {
        let own = self.per_thread.get_or(|| {
            OwnLine(RefCell::new(Slots {
                sets: vec![Set([EMPTY; 2]); SLOTS / 2].into_boxed_slice(),
                tags: vec![[0; 2]; SLOTS / 2].into_boxed_slice(),
            }))
        })?;
        Some(&own.0)
    }

    /// This thread's slots, for one encode call: see [`Local`].
    pub fn local(&self) -> Local<'_> {
        Local {
            cache: Some(self),
            slots: None,
        }
    }
}

/// A thread's cache slots, borrowed at most once per encode call, at its first multi-token
/// piece (so a thread that never meets one allocates nothing).
///
/// Why: looking the slots up per piece cost a thread-local look-up (a call to
/// `__tls_get_addr`, as the extension is a shared library) and a `RefCell` flag write each
/// time: 1.2-1.6% of the samples on the shared multilingual text (perf, cl100k and r50k).
pub struct Local<'c> {
    /// Where to borrow the slots from; taken at the first try, so a failed borrow is not
    /// retried on every piece.
    cache: Option<&'c PieceCache>,
    slots: Option<RefMut<'c, Slots>>,
}

impl Local<'_> {
    /// No cache: every `get` misses and `put` forgets.
    pub fn none() -> Self {
        Local {
            cache: None,
            slots: None,
        }
    }

    #[inline(always)]
    fn slots(&mut self) -> Option<&mut Slots> {
        if self.slots.is_none() {
            // A second `Local` on this thread at once (no encode path makes one) finds the
            // slots borrowed and goes without.
            self.slots = self.cache.take()?.slots()?.try_borrow_mut().ok();
        }
        self.slots.as_deref_mut()
    }

    /// Appends the cached ids of `piece` (hash `h`) to `out`; false on a miss.
    #[inline(always)]
    pub fn get(&mut self, piece: &[u8], h: u64, out: &mut Vec<u32>) -> bool {
        if piece.len() > MAX_PIECE {
            return false;
        }
        self.find(h, out, |e| {
            e.len as usize == piece.len() && same_bytes(&e.bytes, piece)
        })
    }

    /// [`Local::get`] for a piece of 1 to 8 bytes, by its hash `h` and length `n` alone:
    /// `h` must be [`hash_bytes`](crate::vocab::token_table::hash_bytes) of the piece, under
    /// which two pieces of such a length share a hash only if they are the same bytes
    /// ([`hash_key`](crate::vocab::token_table::hash_key)).
    ///
    /// Why: the byte compare branches on the length, which the pieces of text do not
    /// predict; a caller that has the piece's key hashes it without such a branch too.
    #[inline(always)]
    pub fn get_short(&mut self, h: u64, n: usize, out: &mut Vec<u32>) -> bool {
        debug_assert!((1..=8).contains(&n));
        self.find(h, out, |e| e.len as usize == n)
    }

    /// Appends the ids of the entry of hash `h` that `is_piece` accepts, if the set holds
    /// one; false on a miss.
    #[inline(always)]
    fn find(&mut self, h: u64, out: &mut Vec<u32>, is_piece: impl Fn(&Entry) -> bool) -> bool {
        let Some(slots) = self.slots() else {
            return false;
        };
        let i = (h as usize) % SLOTS / 2;
        if !slots.tags[i].contains(&tag(h)) {
            return false;
        }
        for e in &slots.sets[i].0 {
            if e.hash == h && is_piece(e) {
                e.push_ids(out);
                return true;
            }
        }
        false
    }

    /// Remembers that `piece` (hash `h`) encodes to `ids`, if it fits: at most [`MAX_PIECE`]
    /// bytes, and at most [`MAX_IDS`] ids or [`MAX_NARROW_IDS`] ids that are all below 2^16.
    #[inline]
    pub fn put(&mut self, piece: &[u8], h: u64, ids: &[u32]) {
        let narrow = ids.len() > MAX_IDS;
        if piece.len() > MAX_PIECE
            || (narrow && (ids.len() > MAX_NARROW_IDS || ids.iter().any(|&id| id > 0xFFFF)))
        {
            return;
        }
        let Some(slots) = self.slots() else {
            return;
        };
        let i = (h as usize) % SLOTS / 2;
        let set = &mut slots.sets[i];
        // An empty first way (most of them while the cache fills) is written alone: moving it
        // behind would write all three of the set's lines, where a piece of up to five ids
        // fits in the first.
        if set.0[0].len != 0 {
            set.0[1] = set.0[0];
            slots.tags[i][1] = slots.tags[i][0];
        }
        slots.tags[i][0] = tag(h);
        let e = &mut set.0[0];
        e.hash = h;
        e.len = piece.len() as u8;
        e.bytes[..piece.len()].copy_from_slice(piece);
        if narrow {
            e.n_ids = ids.len() as u8 | NARROW;
            e.ids = [0; MAX_IDS];
            for (slot, pair) in e.ids.iter_mut().zip(ids.chunks(2)) {
                *slot = pair[0] | pair.get(1).map_or(0, |&hi| hi << 16);
            }
        } else {
            e.n_ids = ids.len() as u8;
            e.ids[..ids.len()].copy_from_slice(ids);
        }
    }
}

/// Appends the first `n` of the `u16` ids packed two to a slot in `slots`.
///
/// Out of line: inlined, its copy and the wide one get merged into one `memcpy` call, and
/// every hit on an entry of wide ids pays for it.
#[cold]
#[inline(never)]
fn push_narrow(slots: &[u32; MAX_IDS], n: usize, out: &mut Vec<u32>) {
    let mut ids = [0u32; MAX_NARROW_IDS];
    for (pair, &slot) in ids.chunks_exact_mut(2).zip(slots) {
        pair[0] = slot & 0xFFFF;
        pair[1] = slot >> 16;
    }
    // `extend` from an iterator, not `extend_from_slice`: with two callers, the latter's
    // body stopped being inlined into the wide path as well.
    out.extend(ids.iter().take(n).copied());
}

/// Are the first `piece.len()` bytes of `stored` those of `piece` (1 to [`MAX_PIECE`] bytes)?
///
/// Compared a word at a time with the last word overlapping, without a call: the slice
/// compare would call `memcmp` (or `bcmp`) on every hit.
#[inline(always)]
fn same_bytes(stored: &[u8; MAX_PIECE], piece: &[u8]) -> bool {
    let n = piece.len();
    if n < 8 {
        return n > 0
            && crate::vocab::short_table::load(piece)
                == crate::vocab::short_table::load(&stored[..n]);
    }
    let word = |b: &[u8], k: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[k..k + 8]);
        u64::from_le_bytes(x)
    };
    let mut k = 0;
    while k + 8 < n {
        if word(stored, k) != word(piece, k) {
            return false;
        }
        k += 8;
    }
    word(stored, n - 8) == word(piece, n - 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_three_whole_lines_with_way_0s_key_and_five_ids_in_the_first() {
        assert_eq!(std::mem::size_of::<Set>(), 192);
        assert_eq!(std::mem::align_of::<Set>(), 64);
        assert!(std::mem::offset_of!(Entry, hash) < std::mem::offset_of!(Entry, bytes));
        assert!(std::mem::offset_of!(Entry, ids) + 5 * 4 <= 64);
    }

    #[test]
    fn same_bytes_sees_a_difference_at_every_position_and_length() {
        for n in 1..=MAX_PIECE {
            let piece: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37) | 1).collect();
            let mut stored = [0u8; MAX_PIECE];
            stored[..n].copy_from_slice(&piece);
            assert!(same_bytes(&stored, &piece), "length {n}");
            for at in 0..n {
                let mut other = stored;
                other[at] ^= 0x40;
                assert!(!same_bytes(&other, &piece), "length {n}, byte {at}");
            }
            // Bytes past the piece are not compared.
            let mut longer = stored;
            if n < MAX_PIECE {
                longer[n] = 0xFF;
                assert!(same_bytes(&longer, &piece), "length {n}, byte after");
            }
        }
    }

    #[test]
    fn up_to_24_ids_below_2_16_are_kept_and_come_back_exactly() {
        let owner = PieceCache::new();
        let mut c = owner.local();
        let ids = |n: usize, top: u32| -> Vec<u32> {
            (0..n as u32).map(|i| top - (i * 2_731) % top).collect()
        };
        for n in 1..=MAX_NARROW_IDS {
            for top in [0xFFFF, 50_256, 40_000] {
                let want = ids(n, top);
                let h = (n as u64) << 20 | top as u64;
                c.put(b"some piece", h, &want);
                let mut out = vec![7];
                assert!(c.get(b"some piece", h, &mut out), "{n} ids");
                assert_eq!(out[1..], want[..], "{n} ids below {top}");
                assert_eq!(out[0], 7);
            }
        }
        // Past 12 ids, one id of 2^16 or more, or more than 24 ids: not kept.
        let mut big = ids(13, 0xFFFF);
        big[12] = 0x1_0000;
        c.put(b"big", 1, &big);
        let mut out = vec![];
        assert!(!c.get(b"big", 1, &mut out));
        c.put(b"many", 2, &ids(MAX_NARROW_IDS + 1, 0xFFFF));
        assert!(!c.get(b"many", 2, &mut out));
        // Up to 12, any ids.
        let wide: Vec<u32> = (0..MAX_IDS as u32).map(|i| 199_000 + i).collect();
        c.put(b"wide", 3, &wide);
        assert!(c.get(b"wide", 3, &mut out) && out == wide);
    }

    #[test]
    fn a_sets_tags_follow_its_two_ways() {
        // Four hashes of one set (low bits 7) with different top bytes, so different tags.
        let h = |t: u64| t << 56 | 7;
        let c = PieceCache::new();
        let mut c = c.local();
        let mut out = Vec::new();
        c.put(b"one", h(1), &[1]);
        c.put(b"two", h(2), &[2]);
        assert!(c.get(b"one", h(1), &mut out) && out == [1]);
        out.clear();
        assert!(c.get(b"two", h(2), &mut out) && out == [2]);
        out.clear();
        c.put(b"three", h(3), &[3]);
        assert!(
            !c.get(b"one", h(1), &mut out),
            "the oldest way is gone, tag and all"
        );
        assert!(c.get(b"three", h(3), &mut out) && out == [3]);
        out.clear();
        assert!(
            c.get(b"two", h(2), &mut out) && out == [2],
            "moved behind with its tag"
        );
        // A tag that matches does not make a hit by itself: the set's key decides.
        assert!(!c.get(b"owt", h(2), &mut out) && !c.get(b"two", h(4), &mut out));
    }

    #[test]
    fn hit_returns_what_was_put_and_collisions_overwrite() {
        let owner = PieceCache::new();
        let mut c = owner.local();
        let mut out = vec![];
        assert!(!c.get(b"hello", 7, &mut out));
        c.put(b"hello", 7, &[1, 2]);
        assert!(c.get(b"hello", 7, &mut out));
        assert_eq!(out, vec![1, 2]);
        // Same set, different bytes: a miss, never a wrong answer.
        assert!(!c.get(b"help!", 7, &mut out));
        // A second piece of the same set keeps the first; a third drops the oldest.
        c.put(b"other", 7 + SLOTS as u64, &[3]);
        out.clear();
        assert!(c.get(b"hello", 7, &mut out) && out == [1, 2]);
        out.clear();
        assert!(c.get(b"other", 7 + SLOTS as u64, &mut out) && out == [3]);
        c.put(b"third", 6, &[4]);
        assert!(!c.get(b"hello", 7, &mut out));
        out.clear();
        assert!(c.get(b"third", 6, &mut out) && out == [4]);
        assert!(c.get(b"other", 7 + SLOTS as u64, &mut out));
        // Too long to cache: silently not cached.
        let long = [b'a'; MAX_PIECE + 1];
        c.put(&long, 9, &[1]);
        assert!(!c.get(&long, 9, &mut out));
    }
}
