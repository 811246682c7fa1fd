//! Merge-rank byte-pair encoding of one piece.
//!
//! Invariant (the definition every implementation here must meet, and the one
//! tiktoken uses): start from the piece's single bytes; while some adjacent pair
//! of parts concatenates to a token, merge the pair whose concatenation has the
//! lowest rank, taking the leftmost such pair on ties; the parts left are the
//! tokens. Both functions below produce exactly this sequence.
//!
//! * [`merge_scan`] keeps the parts in a small vector and rescans it for the
//!   minimum after every merge: O(m²) in the worst case but with tiny constants,
//!   so it wins on the short pieces that make up almost all real text.
//! * [`merge_heap`] keeps candidate pairs in a binary heap keyed by
//!   `(rank, start)` over a doubly linked list of parts, with lazy deletion:
//!   O(m log m) for any piece, so 1 MB of `"a"` or base64 stays linear-ish.
//!   (The same idea as the "heap of candidate merges" in github's `bpe` crate
//!   and in HuggingFace tokenizers' word merging.)
//! * Pieces longer than [`SCAN_MAX`] ([`SCAN_MAX_NON_ASCII`] for a piece that ends in a
//!   non-ASCII byte) go to [`backtrack`] (linear, and exact for every vocabulary it
//!   accepts); the heap is the fallback for the vocabularies it refuses, and the scan or the
//!   heap takes them until the backtracking tables are built ([`BpeVocab::backtrack_for`]).
//!
//! Before any of these, [`encode_piece`] answers whole-token pieces with one probe (the
//! short-token table for pieces of up to 8 bytes, the mid table for 9-16) and repeated
//! multi-token pieces from the per-thread cache ([`Local`], a thread's share of a
//! [`PieceCache`](piece_cache::PieceCache)), and cuts a long CJK piece into parts
//! that no token spans ([`char_cuts`]); and in front of it, for pieces cut out of
//! a text, [`encode_piece_in`] answers most short whole tokens with one compare, and
//! [`ShortFirst`] does so for a scanner's window of pieces in one loop.

pub mod backtrack;
pub mod char_cuts;
pub mod char_steps;
pub mod occurs;
pub mod pair_filter;
pub mod pair_memo;
pub mod piece_cache;
pub mod prefix_trie;
pub mod tables;

use crate::encode::pretok::classes::scanned_bytes;
use crate::encode::pretok::Pieces;
use crate::error::{Error, Result};
use crate::runtime::interrupt::Tick;
use crate::vocab::short_table::key_in;
use crate::vocab::token_table::{hash_bytes, hash_key};
use crate::vocab::{Rank, Vocab, NO_RANK};
use piece_cache::Local;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tables::BpeVocab;

/// Pieces up to this length use the scan; longer ones the backtracking encoder
/// (`backtrack.rs`), which does fewer pair look-ups (each a likely cache miss) once a piece
/// holds more than a few tokens: 12-16 is best for English and code (see docs/engine.md).
pub const SCAN_MAX: usize = 16;

/// [`SCAN_MAX`] for pieces that end in a non-ASCII byte (words in other scripts). The scan
/// starts from single bytes, so a word of two- or three-byte chars costs it one or two merges
/// per char, each followed by one or two pair-table probes, before any merge across chars; the
/// backtracking encoder steps through such a word a whole char at a time (`char_steps.rs`)
/// and asks its pair memo, not the table: o200k ~1.2x as fast on Arabic, Hindi and Chinese.
/// English keeps [`SCAN_MAX`], hence the split by the last byte.
pub const SCAN_MAX_NON_ASCII: usize = 4;

/// Where backtracking does not apply (see `Backtrack::new`), pieces longer than this use the
/// heap, shorter ones the scan.
pub const HEAP_THRESHOLD: usize = 32;

/// [`encode_piece`] for a piece the splitter cut out of `text`, with one more fast path in
/// front: a short whole token found in its home slot of the short table, decided without a
/// branch on the piece's length or bytes.
///
/// Why: the pieces' lengths follow no pattern, so the length tests at the top of
/// `encode_piece` (and the short table's own load of 1-8 bytes) are mispredicted about once a
/// piece. Here the key is the 8 bytes at the piece's start, masked to its length, which
/// `text` can give without a length test whenever 8 bytes remain. The short table holds the
/// lowest ranks (the most frequent tokens) in their home slots, so one compare settles most
/// pieces; anything else goes to [`encode_piece_keyed`] with the key (a piece of over 8 bytes,
/// or near the end of `text`, without).
/// `piece` should be a subslice of `text` (every splitter's pieces are). The fast path is
/// right for any `piece` anyway: it is taken only if `piece` starts at some byte `off` of
/// `text` with 8 bytes from there on, and then `piece`'s first 1-8 bytes are those bytes.
#[inline(always)]
pub fn encode_piece_in(
    vocab: &BpeVocab,
    text: &[u8],
    piece: &[u8],
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<()> {
    let (key, r) = short_home_in(vocab, text, piece);
    if r != NO_RANK {
        out.push(r);
        return Ok(());
    }
    encode_piece_keyed(vocab, piece, key, cache, out)
}

/// `piece`'s [`key_in`] `text` (if it has one), and the rank in its short-table home slot if
/// it is the token there, else `NO_RANK` (see [`encode_piece_in`]).
#[inline(always)]
pub(crate) fn short_home_in(vocab: &BpeVocab, text: &[u8], piece: &[u8]) -> (Option<u64>, Rank) {
    match key_in(text, piece) {
        Some(key) => (Some(key), vocab.short_home(key, piece.len())),
        None => (None, NO_RANK),
    }
}

/// [`encode_piece`] of a piece whose [`key_in`] its text is `key` (`None` if it has none):
/// with a key, the short piece's path, else `encode_piece`'s.
#[inline(always)]
pub fn encode_piece_keyed(
    vocab: &BpeVocab,
    piece: &[u8],
    key: Option<u64>,
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<()> {
    match key {
        Some(key) => encode_short_piece(vocab, piece, key, cache, out),
        None => encode_piece_inlined(vocab, piece, cache, out),
    }
}

/// [`encode_piece`] of a piece of 1 to 8 bytes whose [`key_in`] its text is `key`: the short
/// table, the cache, then BPE, with no branch on the piece's length on the way to BPE.
///
/// Why: a quarter of the pieces of English miss their home slot (pieces of several tokens,
/// tokens out of their home slot); on the general path each paid five or six tests of its
/// length (the short table's load, the cut and mid-table tests, the hash, the cache's byte
/// compare), which text does not predict.
#[inline(always)]
fn encode_short_piece(
    vocab: &BpeVocab,
    piece: &[u8],
    key: u64,
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<()> {
    let n = piece.len();
    if let Some(r) = vocab.short_rank_key(key, n) {
        out.push(r);
        return Ok(());
    }
    if n == 1 {
        return Err(Error::MissingByte(piece[0]));
    }
    // As `encode_one` for a piece this short (under `mid_table::MIN_LEN` bytes: no cut, no
    // other table); its hash is `hash_bytes(piece)`.
    let h = hash_key(key, n);
    if cache.get_short(h, n, out) {
        return Ok(());
    }
    let start = out.len();
    merge(vocab, piece, out)?;
    cache.put(piece, h, &out[start..]);
    Ok(())
}

/// Encode one piece, appending its tokens to `out`. `cache` remembers multi-token pieces.
/// The piece is not empty: no splitter yields an empty one (`Splitter::for_each_piece`).
///
/// A piece of more than 8 bytes that ends in a three-byte char from U+1000 up (Chinese,
/// Japanese, Korean, ...) and that is not a token or in the cache is cut where no token spans
/// (`char_cuts.rs`) rather than backtracked; its parts are looked up and cached one by one, and
/// the piece itself is cached only if nothing cut it. A cut piece is seldom met again as a
/// whole (a sentence or clause), while its parts are met all the time.
#[inline]
pub fn encode_piece(
    vocab: &BpeVocab,
    piece: &[u8],
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<()> {
    encode_piece_inlined(vocab, piece, cache, out)
}

/// [`encode_piece`], inlined where [`encode_piece_in`] is (a scan's word step).
#[inline(always)]
fn encode_piece_inlined(
    vocab: &BpeVocab,
    piece: &[u8],
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<()> {
    debug_assert!(!piece.is_empty(), "an empty piece");
    if piece.len() > crate::vocab::short_table::MAX_LEN && ends_in_char_from_u1000(piece) {
        return encode_one::<CUT_PIECE>(vocab, piece, cache, out);
    }
    encode_one::<PIECE>(vocab, piece, cache, out)
}

/// A scan's pieces to BPE, a scanner's window of them in one loop ([`Pieces::window`]): a
/// piece that is a token in its short-table home slot ([`encode_piece_in`]'s fast path) is
/// pushed there, any other handed to `rest` (the rest of `encode_piece_in`, or a model's word
/// step) with its key, one call out of the loop. Ctrl-C is polled every ~4,096 pieces.
///
/// Why: a piece at a time, every piece paid a call of the scan's closure (which a scanner's
/// three call sites keep out of line), a checked `&str` slice and a poll counter.
pub struct ShortFirst<'a, W, R> {
    vocab: &'a BpeVocab,
    /// The text scanned: every piece is a slice of it (the fast path reads past a piece).
    text: &'a [u8],
    out: &'a mut Vec<Rank>,
    tick: Tick,
    /// Whether a piece that is token `r` is that token (`|_| true` for tiktoken's rule; a
    /// model whose BPE does not reach some tokens from their bytes says which).
    whole: W,
    /// Appends the ids of a piece the fast path did not answer (called out of line).
    rest: R,
}

/// Calls `f` behind a call of its own: [`ShortFirst`]'s loop stays small enough to keep its
/// state in registers, whatever `rest` inlines.
#[inline(never)]
fn out_of_line<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// What [`ShortFirst`] calls for the pieces its fast path does not answer: appends the ids of
/// a piece (given as bytes, with its [`key_in`] the text if it has one) to the ids so far.
pub trait PieceStep: FnMut(&[u8], Option<u64>, &mut Vec<Rank>) -> Result<()> {}

impl<F: FnMut(&[u8], Option<u64>, &mut Vec<Rank>) -> Result<()>> PieceStep for F {}

impl<'a, W, R> ShortFirst<'a, W, R>
where
    W: Fn(Rank) -> bool,
    R: PieceStep,
{
    /// A sink that appends to `out` the ids of the pieces of `text` it is handed.
    pub fn new(
        vocab: &'a BpeVocab,
        text: &'a [u8],
        out: &'a mut Vec<Rank>,
        whole: W,
        rest: R,
    ) -> Self {
        ShortFirst {
            vocab,
            text,
            out,
            tick: Tick::default(),
            whole,
            rest,
        }
    }

    #[inline(always)]
    fn one(&mut self, piece: &[u8]) -> Result<()> {
        let (key, r) = short_home_in(self.vocab, self.text, piece);
        if r != NO_RANK && (self.whole)(r) {
            self.out.push(r);
            return Ok(());
        }
        out_of_line(|| (self.rest)(piece, key, self.out))
    }

    /// Takes the piece `text[start..end]`.
    #[inline(always)]
    pub fn take(&mut self, start: usize, end: usize) -> Result<()> {
        self.tick.poll()?;
        self.one(scanned_bytes(self.text, start, end)?)
    }

    /// Takes the pieces from `i`: one ends at `i + q` for each set bit `q` of `ends` (bit 0
    /// clear), each starting where the one before ended. Returns where the last ended.
    #[inline(always)]
    pub fn take_window(&mut self, i: usize, ends: u64) -> Result<usize> {
        self.tick.poll_after(ends.count_ones())?;
        let mut rest = ends;
        let mut from = i;
        while rest != 0 {
            let to = i + rest.trailing_zeros() as usize;
            rest &= rest - 1;
            self.one(scanned_bytes(self.text, from, to)?)?;
            from = to;
        }
        Ok(from)
    }
}

impl<'t, W, R> Pieces<'t> for ShortFirst<'_, W, R>
where
    W: Fn(Rank) -> bool,
    R: PieceStep,
{
    #[inline(always)]
    fn piece(&mut self, piece: &'t str) -> Result<()> {
        self.tick.poll()?;
        self.one(piece.as_bytes())
    }

    /// `text` is the text `self` was made with.
    #[inline(always)]
    fn window(&mut self, text: &'t str, i: usize, ends: u64) -> Result<usize> {
        debug_assert!(std::ptr::eq(text.as_bytes(), self.text), "the text scanned");
        self.take_window(i, ends)
    }
}

/// What [`encode_one`] is given. A piece that is a whole token is that token (tiktoken's rule,
/// even for the few tokens BPE cannot reach); a part of a cut piece is BPE proper, so there a
/// whole token counts only if BPE reaches it.
const PIECE: u8 = 0;
/// A piece that is cut where no token spans, rather than merged.
const CUT_PIECE: u8 = 1;
/// A part of a cut piece.
const PART: u8 = 2;

/// May [`encode_one`] of kind `K` answer its bytes with the whole token `r`?
#[inline(always)]
fn whole<const K: u8>(vocab: &BpeVocab, r: Rank) -> bool {
    K != PART || vocab.char_cuts().is_some_and(|c| c.reachable(r))
}

/// Does `piece` end in a three-byte char from U+1000 up (lead byte 0xE1-0xEF)? Chars below
/// it are not worth the look for cuts: see `char_cuts.rs`.
#[inline(always)]
pub(crate) fn ends_in_char_from_u1000(piece: &[u8]) -> bool {
    piece.len() >= 3 && (0xE1..=0xEF).contains(&piece[piece.len() - 3])
}

/// [`encode_piece`] without its choice, for bytes of kind `K` ([`PIECE`], [`CUT_PIECE`] or
/// [`PART`]). The parts of a cut piece come back through here; none of them has a cut.
#[inline(always)]
fn encode_one<const K: u8>(
    vocab: &BpeVocab,
    piece: &[u8],
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<()> {
    if piece.len() == 1 {
        let r = vocab.byte_ranks[piece[0] as usize];
        if r == NO_RANK {
            return Err(Error::MissingByte(piece[0]));
        }
        out.push(r);
        return Ok(());
    }
    // Most pieces of real text are whole tokens: one probe, and for the short ones (nearly
    // all) a probe that never leaves the slot.
    if piece.len() <= crate::vocab::short_table::MAX_LEN {
        if let Some(r) = vocab.short_rank(piece).filter(|&r| whole::<K>(vocab, r)) {
            out.push(r);
            return Ok(());
        }
    }
    // The next most common whole tokens, 9-16 bytes, are one slot of the mid table; a miss
    // there is a sure miss, so such a piece skips the general table.
    if piece.len() <= crate::vocab::mid_table::MAX_LEN {
        if let Some(r) = vocab.mid_rank(piece).filter(|&r| whole::<K>(vocab, r)) {
            out.push(r);
            return Ok(());
        }
    }
    // Too long for the cache, and a whole token backtracking returns as one: no hash is needed.
    // (Japanese and Chinese sentences are pieces of this kind, tens of bytes each; they are
    // cut first, and a whole token has no cut.)
    if piece.len() > piece_cache::MAX_PIECE && backtrack_finds_whole_token(vocab, piece) {
        return cut_or_merge::<K>(vocab, piece, cache, out).map(|_| ());
    }
    let h = hash_bytes(piece);
    if piece.len() > crate::vocab::mid_table::MAX_LEN && !backtrack_finds_whole_token(vocab, piece)
    {
        if let Some(r) = vocab
            .rank_hashed(piece, h)
            .filter(|&r| whole::<K>(vocab, r))
        {
            out.push(r);
            return Ok(());
        }
    }
    if cache.get(piece, h, out) {
        return Ok(());
    }
    let start = out.len();
    if !cut_or_merge::<K>(vocab, piece, cache, out)? {
        cache.put(piece, h, &out[start..]);
    }
    Ok(())
}

/// For a [`CUT_PIECE`], the piece cut where no token spans if it has such a place (returns
/// true), else [`merge`].
#[inline(always)]
fn cut_or_merge<const K: u8>(
    vocab: &BpeVocab,
    piece: &[u8],
    cache: &mut Local<'_>,
    out: &mut Vec<Rank>,
) -> Result<bool> {
    if K == CUT_PIECE && cut(vocab, piece, cache, out)? {
        return Ok(true);
    }
    merge(vocab, piece, out)?;
    Ok(false)
}

/// The piece's parts between cuts, each through [`encode_one`]; false (nothing appended) if
/// the vocabulary has no cut tables or no boundary of the piece is a cut.
#[inline(never)]
fn cut(vocab: &BpeVocab, piece: &[u8], cache: &mut Local<'_>, out: &mut Vec<Rank>) -> Result<bool> {
    let Some(cuts) = vocab.char_cuts_once_backtracking() else {
        return Ok(false);
    };
    cuts.encode(piece, out, |part, out| {
        encode_one::<PART>(vocab, part, cache, out)
    })
}

/// Will `merge` give a piece that is a whole token back as that one token, by itself?
#[inline]
fn backtrack_finds_whole_token(vocab: &BpeVocab, piece: &[u8]) -> bool {
    piece.len() > SCAN_MAX
        && vocab
            .backtrack_if_built()
            .is_some_and(|bt| bt.returns_whole(piece))
}

/// Out of line: inlined into `encode_piece`, it moves the backtracking's branches about
/// (20% more mispredicted branches in o200k's encode).
#[inline(never)]
fn merge(vocab: &BpeVocab, piece: &[u8], out: &mut Vec<Rank>) -> Result<()> {
    let scan_max = if piece.last().is_some_and(|b| !b.is_ascii()) {
        SCAN_MAX_NON_ASCII
    } else {
        SCAN_MAX
    };
    if piece.len() > scan_max {
        if let Some(bt) = vocab.backtrack_for(piece.len()) {
            if bt.encode(vocab, piece, out) {
                return Ok(());
            }
        }
    }
    if piece.len() <= HEAP_THRESHOLD {
        merge_scan(vocab, piece, out)
    } else {
        merge_heap(vocab, piece, out)
    }
}

/// The ranks of the piece's single bytes (every BPE starts from these).
#[inline(always)]
fn byte_rank(vocab: &Vocab, b: u8) -> Result<Rank> {
    match vocab.byte_ranks[b as usize] {
        NO_RANK => Err(Error::MissingByte(b)),
        r => Ok(r),
    }
}

/// Quadratic scan, fast for short pieces: no allocation (the parts live on the stack) and no
/// byte slicing (parts are tracked by token id, pairs looked up by id).
/// `tok[i]` is part i's token, `pair[i]` the rank of parts i and i+1 merged (or `NO_RANK`).
pub fn merge_scan(vocab: &BpeVocab, piece: &[u8], out: &mut Vec<Rank>) -> Result<()> {
    debug_assert!((2..=HEAP_THRESHOLD).contains(&piece.len()));
    // Most pieces BPE merges have at most 16 bytes: their arrays are half the size, so each
    // merge's shift copies half as much.
    if piece.len() <= HEAP_THRESHOLD / 2 {
        merge_scan_in::<{ HEAP_THRESHOLD / 2 }, HEAP_THRESHOLD>(vocab, piece, out)
    } else {
        merge_scan_in::<HEAP_THRESHOLD, { 2 * HEAP_THRESHOLD }>(vocab, piece, out)
    }
}

/// [`merge_scan`] of a piece of at most `MAX` bytes, in arrays of `ROOM = 2 * MAX`, so that
/// the shift after a merge is a copy of one constant size (`MAX` elements, past the parts
/// too), not a `memmove` call whose size changes with each merge (as `pipeline/word.rs`
/// shifts its symbols).
#[inline(always)]
fn merge_scan_in<const MAX: usize, const ROOM: usize>(
    vocab: &BpeVocab,
    piece: &[u8],
    out: &mut Vec<Rank>,
) -> Result<()> {
    let m = piece.len();
    debug_assert!(ROOM == 2 * MAX && (2..=MAX).contains(&m));
    let pairs = &vocab.pairs;
    let mut tok = [0 as Rank; ROOM];
    let mut pair = [NO_RANK; ROOM];
    for (t, &b) in tok.iter_mut().zip(piece) {
        *t = byte_rank(vocab, b)?;
    }
    for (p, w) in pair.iter_mut().zip(piece.windows(2)) {
        *p = pairs.byte_pair(w[0], w[1]);
    }
    // Most pairs beside a merge do not merge; the filter settles those from L2, where the
    // pair table (4-8 MB) would be a cache miss for every piece met for the first time.
    let filter = vocab.pair_filter();
    let lookup = |a: Rank, b: Rank| {
        if filter.may_merge(a, b) {
            pairs.get(a, b).unwrap_or(NO_RANK)
        } else {
            NO_RANK
        }
    };
    let mut n = m; // number of parts
    loop {
        // Leftmost minimum over the pairs.
        let mut best = NO_RANK;
        let mut at = 0;
        for (i, &r) in pair[..n - 1].iter().enumerate() {
            if r < best {
                best = r;
                at = i;
            }
        }
        if best == NO_RANK {
            break;
        }
        // Parts `at` and `at + 1` become the token `best`. `at <= n - 2 <= MAX - 2`, so
        // `at + 2 + MAX <= ROOM`. What lands past the parts is never read: `tok` only below
        // `n`, and `pair` stays `NO_RANK` from `n - 1` on (it starts so, and only `NO_RANK`
        // moves down into it).
        tok[at] = best;
        tok.copy_within(at + 2..at + 2 + MAX, at + 1);
        pair.copy_within(at + 1..at + 1 + MAX, at);
        n -= 1;
        pair[at] = if at + 1 < n {
            lookup(tok[at], tok[at + 1])
        } else {
            NO_RANK
        };
        if at > 0 {
            pair[at - 1] = lookup(tok[at - 1], tok[at]);
        }
    }
    out.extend_from_slice(&tok[..n]);
    Ok(())
}

/// Heap-driven merging, O(m log m). Parts are identified by their start byte;
/// `next[s]` is the start of the part after the one at `s` (or `m`),
/// `prev[s]` the one before, `tok[s]` its token. A heap entry `(rank, start, mid, end)` is
/// still valid iff the part at `start` ends at `mid` and the part at `mid` ends at `end`:
/// boundaries are only ever removed, so then the pair's bytes, and hence its rank, are
/// unchanged. Ordering by `(rank, start)` makes ties go to the leftmost pair.
pub fn merge_heap(vocab: &Vocab, piece: &[u8], out: &mut Vec<Rank>) -> Result<()> {
    let m = piece.len();
    let pairs = &vocab.pairs;
    const DEAD: u32 = u32::MAX;
    let mut tok: Vec<Rank> = piece
        .iter()
        .map(|&b| byte_rank(vocab, b))
        .collect::<Result<_>>()?;
    let mut next: Vec<u32> = (1..=m as u32).collect();
    let mut prev: Vec<u32> = Vec::with_capacity(m);
    prev.push(DEAD);
    prev.extend(0..m as u32 - 1);

    type Entry = Reverse<(Rank, u32, u32, u32)>;
    let mut heap: Vec<Entry> = Vec::with_capacity(m);
    for s in 0..m - 1 {
        let r = pairs.byte_pair(piece[s], piece[s + 1]);
        if r != NO_RANK {
            heap.push(Reverse((r, s as u32, s as u32 + 1, s as u32 + 2)));
        }
    }
    let mut heap = BinaryHeap::from(heap);

    while let Some(Reverse((rank, s, mid, e))) = heap.pop() {
        if next[s as usize] != mid || next[mid as usize] != e {
            continue; // stale
        }
        // Merge: the part at `mid` disappears into the one at `s`.
        tok[s as usize] = rank;
        next[s as usize] = e;
        next[mid as usize] = DEAD;
        if (e as usize) < m {
            prev[e as usize] = s;
            if let Some(r) = pairs.get(rank, tok[e as usize]) {
                heap.push(Reverse((r, s, e, next[e as usize])));
            }
        }
        let p = prev[s as usize];
        if p != DEAD {
            if let Some(r) = pairs.get(tok[p as usize], rank) {
                heap.push(Reverse((r, p, s, e)));
            }
        }
    }

    let mut s = 0usize;
    while s < m {
        out.push(tok[s]);
        s = next[s] as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// A vocabulary with all 256 bytes plus the given merged tokens, in order.
    fn vocab(merged: &[&[u8]]) -> BpeVocab {
        let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
        for b in 0..=255u8 {
            ranks.insert(vec![b], b as Rank);
        }
        for (i, t) in merged.iter().enumerate() {
            ranks.insert(t.to_vec(), 256 + i as Rank);
        }
        BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap())
    }

    /// The definition, written as plainly as possible: merge the leftmost lowest-rank pair
    /// until none merges.
    fn reference(v: &Vocab, piece: &[u8]) -> Vec<Rank> {
        let mut parts: Vec<Vec<u8>> = piece.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| {
                    v.rank(&[parts[i].clone(), parts[i + 1].clone()].concat())
                        .map(|r| (r, i))
                })
                .min();
            let Some((_, i)) = best else { break };
            let right = parts.remove(i + 1);
            parts[i].extend(right);
        }
        parts.iter().map(|p| v.rank(p).unwrap()).collect()
    }

    fn both(v: &BpeVocab, piece: &[u8]) -> Vec<Rank> {
        let expected = reference(v, piece);
        if (2..=HEAP_THRESHOLD).contains(&piece.len()) {
            let mut a = Vec::new();
            merge_scan(v, piece, &mut a).unwrap();
            assert_eq!(a, expected, "scan differs from the definition on {piece:?}");
        }
        let mut b = Vec::new();
        merge_heap(v, piece, &mut b).unwrap();
        assert_eq!(b, expected, "heap differs from the definition on {piece:?}");
        let bt = v
            .backtrack()
            .expect("test vocabularies merge upward in rank");
        let mut d = vec![7];
        assert!(
            bt.encode(v, piece, &mut d),
            "backtracking gave up on {piece:?}"
        );
        assert_eq!(d[1..], expected, "backtracking differs on {piece:?}");
        let cache = piece_cache::PieceCache::new();
        let mut local = cache.local();
        for _ in 0..2 {
            let mut c = Vec::new();
            encode_piece(v, piece, &mut local, &mut c).unwrap();
            assert_eq!(c, expected, "cached path differs on {piece:?}");
        }
        expected
    }

    #[test]
    fn backtracking_is_built_once_long_pieces_add_up_and_changes_no_token() {
        let v = vocab(&[
            b"ab", b"ba", b"aab", b"abab", b"bb", b"bab", b"abba", b"aabab",
        ]);
        let piece = b"ababbabaababbabbbaababaaabbab".repeat(4); // 116 bytes: a long piece
        let want = reference(&v, &piece);
        let encode = |v: &BpeVocab| {
            let mut out = Vec::new();
            encode_piece(v, &piece, &mut Local::none(), &mut out).unwrap();
            out
        };
        let mut fed = 0;
        while fed + piece.len() < tables::BACKTRACK_AFTER {
            assert_eq!(encode(&v), want);
            fed += piece.len();
        }
        assert!(v.backtrack_if_built().is_none(), "built after {fed} bytes");
        assert!(v.char_cuts_once_backtracking().is_none());
        assert_eq!(encode(&v), want);
        assert!(
            v.backtrack_if_built().is_some(),
            "not built after {} bytes",
            fed + piece.len()
        );
        assert_eq!(encode(&v), want);
    }

    #[test]
    fn lowest_rank_merges_first() {
        // "ab" has a lower rank than "bc", so "abc" -> [ab, c].
        let v = vocab(&[b"ab", b"bc"]);
        assert_eq!(both(&v, b"abc"), vec![256, b'c' as Rank]);
        let v = vocab(&[b"bc", b"ab"]);
        assert_eq!(both(&v, b"abc"), vec![b'a' as Rank, 256]);
    }

    #[test]
    fn ties_go_left_and_runs_merge_pairwise() {
        let v = vocab(&[b"aa", b"aaaa"]);
        // "aaaaa": aa at 0 first (leftmost), then aa at 2, then aaaa; last 'a' stays.
        assert_eq!(both(&v, b"aaaaa"), vec![257, b'a' as Rank]);
        assert_eq!(both(&v, b"aaa"), vec![256, b'a' as Rank]);
    }

    #[test]
    fn heap_equals_scan_on_pseudo_random_input() {
        let v = vocab(&[
            b"ab", b"ba", b"aab", b"abab", b"bb", b"bab", b"abba", b"aabab",
        ]);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 2..300 {
            let piece: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x & 1 == 0 {
                        b'a'
                    } else {
                        b'b'
                    }
                })
                .collect();
            both(&v, &piece);
        }
    }

    #[test]
    fn piece_inside_text_encodes_as_the_piece_alone() {
        // Tokens of every length up to 9, some ending or starting in a zero byte, so that a
        // key masked to the wrong length would find the wrong token.
        let v = vocab(&[
            b"ab",
            b"a\0",
            b"\0a",
            b"aab",
            b"abab",
            b"ab\0ab",
            b"abababa",
            b"abababab",
            b"abababab\0",
            b"abababa\0",
            b"ba",
            b"bab",
        ]);
        let text: Vec<u8> = b"abababab\0aab\0\0abab aa\0ababab bab\0".to_vec();
        let elsewhere = text.clone();
        for start in 0..text.len() {
            for end in start + 1..=text.len().min(start + 12) {
                let piece = &text[start..end];
                let mut alone = Vec::new();
                encode_piece(&v, piece, &mut Local::none(), &mut alone).unwrap();
                let mut inside = Vec::new();
                encode_piece_in(&v, &text, piece, &mut Local::none(), &mut inside).unwrap();
                assert_eq!(inside, alone, "{piece:?} at {start}");
                // A piece from another buffer (the fast path must not read `text` for it).
                let mut other = Vec::new();
                encode_piece_in(
                    &v,
                    &text,
                    &elsewhere[start..end],
                    &mut Local::none(),
                    &mut other,
                )
                .unwrap();
                assert_eq!(other, alone, "{piece:?} from another buffer");
            }
        }
    }

    #[test]
    fn missing_byte_is_an_error_not_a_panic() {
        let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
        ranks.insert(b"a".to_vec(), 0);
        let v = BpeVocab::new(Vocab::new(ranks, Vec::new()).unwrap());
        let mut out = Vec::new();
        assert_eq!(
            encode_piece(&v, b"ab", &mut Local::none(), &mut out),
            Err(Error::MissingByte(b'b'))
        );
    }
}
