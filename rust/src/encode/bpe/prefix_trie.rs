//! Longest-token-prefix look-up: a byte trie in breadth-first order.
//!
//! Invariant: `longest(text)` is the rank and length of the longest inserted token that
//! `text` starts with, and `shorter(rank)` the rank of the longest inserted token that is a
//! strict prefix of that token (`NO_RANK` when there is none).
//!
//! Layout (why it is small and quick to build): nodes are numbered level by level, and within
//! a level in byte order, so the children of node `i` are the consecutive nodes
//! `first[i]..first[i + 1]` and `label[j]` is the byte on the edge into node `j`. A step down
//! the trie is a scan of a few contiguous bytes, except the first two: every node one or two
//! bytes deep is found in a direct table, since below a UTF-8 lead byte the scan would be over
//! as many as 64 continuation bytes. The whole trie is 9 bytes a node (o200k: ~6 MB) and is
//! built from the sorted tokens in one linear pass, with no per-node allocation.
//!
//! Text in three-byte chars (CJK, Thai, Devanagari, ...) goes down whole chars at a time: one
//! load of `char3` for the first char (which most often also tells that the token ends there)
//! and one probe of `steps` for each char after it, in place of three steps of one byte.
//! Why: a byte step ends in a branch on whether the token goes on, which the branch predictor
//! cannot know on such text; most of the cost was in those mispredicted branches rather than
//! in the loads (see `after_chars`).

use crate::encode::bpe::char_steps::{CharSteps, Step};
use crate::vocab::{Rank, NO_RANK};
use rayon::slice::ParallelSliceMut;

pub struct PrefixTrie {
    /// Per node `i`: `[first, rank]`. Its children are nodes `first..` up to the next node's
    /// `first` (one extra entry at the end); `rank` is the token that ends at it, or
    /// `NO_RANK`. One array, so a step reads one cache line for both.
    node: Vec<[u32; 2]>,
    /// The byte on the edge into each node (the root's is unused).
    label: Vec<u8>,
    /// The root's child for each byte (0 = none; the root itself is never a child).
    root: [u32; 256],
    /// The node two bytes down for each pair of bytes `b0 << 8 | b1` (0 = none). One load
    /// instead of a scan of the root's child's children: below a UTF-8 lead byte those are up
    /// to 64 continuation bytes (on CJK text, with the scan below them, ~40% of the walk).
    root2: Box<[u32; 1 << 16]>,
    /// Per three-byte char, by code point (its 16 bits of payload), a [`Char3`]: the node at
    /// the char's end (0 if it is not in the trie or has no children, with its flags, see
    /// [`NODE_MASK`]), the deepest token on the char's 1-3 bytes and its length, and which
    /// chars may follow it in a token. One load answers the first three bytes of a token on
    /// CJK text, where most tokens are one or two chars, and most often whether the token
    /// goes on into the next char. `None` for a trie with more nodes than the flags leave
    /// room for; such a trie goes byte by byte.
    char3: Option<Box<[Char3; 1 << 16]>>,
    /// Steps one whole three-byte char down, below the nodes `char3` gives and below the
    /// nodes these steps reach: see `build_char_tables`.
    steps: CharSteps,
}

impl PrefixTrie {
    /// `tokens` are (bytes, rank) pairs with distinct, non-empty bytes. Also returns, per
    /// token in the order given, its `shorter` token.
    pub fn new(tokens: &[(&[u8], Rank)]) -> (PrefixTrie, Vec<Rank>) {
        // Sorted by bytes. Each token carries its first 8 bytes as a big-endian integer
        // (zero-padded), whose order agrees with the bytes' wherever two keys differ, so most
        // comparisons are one integer compare instead of a `memcmp` through two pointers.
        let prefix = |t: &[u8]| {
            let mut k = [0u8; 8];
            let n = t.len().min(8);
            k[..n].copy_from_slice(&t[..n]);
            u64::from_be_bytes(k)
        };
        let mut keyed: Vec<(u64, u32)> = (tokens.iter().zip(0u32..))
            .map(|(&(t, _), i)| (prefix(t), i))
            .collect();
        crate::runtime::pool::parallel(|| {
            keyed.par_sort_unstable_by(|x, y| {
                x.0.cmp(&y.0)
                    .then_with(|| tokens[x.1 as usize].0.cmp(tokens[y.1 as usize].0))
            })
        });
        let order: Vec<u32> = keyed.into_iter().map(|(_, i)| i).collect();
        let sorted: Vec<(&[u8], Rank)> = order.iter().map(|&i| tokens[i as usize]).collect();

        // Breadth-first: each node of the current level is a range of `sorted` sharing its
        // prefix; tokens ending exactly there come first in the range (a prefix sorts first).
        let mut first: Vec<u32> = Vec::with_capacity(tokens.len() * 3);
        let mut rank: Vec<Rank> = vec![NO_RANK];
        let mut trie = PrefixTrie {
            node: Vec::new(),
            label: vec![0],
            root: [0; 256],
            root2: Box::new([0; 1 << 16]),
            char3: None,
            steps: CharSteps::default(),
        };
        // Per node: the longest token on the path above it (for `shorter`).
        let mut above: Vec<Rank> = vec![NO_RANK];
        let mut shorter_sorted = vec![NO_RANK; sorted.len()];
        let mut level: Vec<(u32, u32)> = vec![(0, sorted.len() as u32)];
        let mut next_level: Vec<(u32, u32)> = Vec::new();
        let mut node = 0usize;
        let mut depth = 0usize;
        while !level.is_empty() {
            for &(lo, hi) in &level {
                let (mut lo, hi) = (lo as usize, hi as usize);
                if depth > 0 && sorted[lo].0.len() == depth {
                    rank[node] = sorted[lo].1;
                    shorter_sorted[lo] = above[node];
                    lo += 1;
                }
                let pass_down = if rank[node] != NO_RANK {
                    rank[node]
                } else {
                    above[node]
                };
                first.push(trie.label.len() as u32);
                let mut i = lo;
                while i < hi {
                    let b = sorted[i].0[depth];
                    let mut j = i + 1;
                    while j < hi && sorted[j].0[depth] == b {
                        j += 1;
                    }
                    if depth == 0 {
                        trie.root[b as usize] = trie.label.len() as u32;
                    }
                    trie.label.push(b);
                    rank.push(NO_RANK);
                    above.push(pass_down);
                    next_level.push((i as u32, j as u32));
                    i = j;
                }
                node += 1;
            }
            std::mem::swap(&mut level, &mut next_level);
            next_level.clear();
            depth += 1;
        }
        first.push(trie.label.len() as u32);
        rank.push(NO_RANK);
        trie.node = first.into_iter().zip(rank).map(|(f, r)| [f, r]).collect();
        for b0 in 0..256usize {
            let n1 = trie.root[b0] as usize;
            if n1 == 0 {
                continue;
            }
            let (a, z) = (trie.node[n1][0] as usize, trie.node[n1 + 1][0] as usize);
            for c in a..z {
                trie.root2[b0 << 8 | trie.label[c] as usize] = c as u32;
            }
        }
        if trie.node.len() <= NODE_MASK as usize {
            trie.build_char_tables();
        }
        let mut shorter = vec![NO_RANK; tokens.len()];
        for (k, &i) in order.iter().enumerate() {
            shorter[i as usize] = shorter_sorted[k];
        }
        (trie, shorter)
    }

    /// The rank and length of the longest token that `text` starts with. The length comes
    /// free with the walk, and saves the caller a look-up of the token's length.
    #[inline(always)]
    pub fn longest(&self, text: &[u8]) -> Option<(Rank, usize)> {
        if let (Some(char3), Some(&[b0, b1, b2])) = (&self.char3, text.first_chunk::<3>()) {
            if let Some(cp) = three_byte_char(b0, b1, b2) {
                let Char3 {
                    entry,
                    rank,
                    followers,
                } = char3[cp];
                let best = (rank, (entry >> LEN_SHIFT & 3) as usize);
                if let Some(&[_, _, _, x, y, z]) = text.first_chunk::<6>() {
                    if three_byte_char(x, y, z).is_some() && followers >> (z & 0x3F) & 1 == 0 {
                        // No step below this char for the next one: `after_chars` would
                        // probe `steps` for it and miss.
                        let node = (entry & NODE_MASK) as usize;
                        if entry & PARTIAL == 0 || node == 0 {
                            return (best.0 != NO_RANK).then_some(best);
                        }
                        return self.bytes_from(node, &text[3..], 4, best);
                    }
                }
                return self.after_chars(entry, best, &text[3..], 4);
            }
        }
        let (&b0, rest) = text.split_first()?;
        let mut node = self.root[b0 as usize] as usize;
        if node == 0 {
            return None;
        }
        let mut best = (self.node[node][1], 1);
        let Some((&b1, rest)) = rest.split_first() else {
            return (best.0 != NO_RANK).then_some(best);
        };
        node = self.root2[(b0 as usize) << 8 | b1 as usize] as usize;
        if node == 0 {
            return (best.0 != NO_RANK).then_some(best);
        }
        let r = self.node[node][1];
        if r != NO_RANK {
            best = (r, 2);
        }
        self.bytes_from(node, rest, 3, best)
    }

    /// The walk below a node at the end of a three-byte char (`entry`: the node with its
    /// flags, as in `char3` and `Step::next`): whole chars, one probe of `steps` each, while
    /// the text goes on in three-byte chars, then byte by byte.
    ///
    /// Why a probe per char: going byte by byte, the first step below the char costs more
    /// than the three table loads above it together, half of it a branch on whether the
    /// char's node has children at all; byte steps without branches make each load wait for
    /// the one before. A probe decides a char with one branch (o200k's backtracking ~1.18x as
    /// fast; see docs/engine.md).
    #[inline(always)]
    fn after_chars(
        &self,
        mut entry: u32,
        mut best: (Rank, usize),
        mut rest: &[u8],
        mut depth: usize,
    ) -> Option<(Rank, usize)> {
        let mut node = (entry & NODE_MASK) as usize;
        if node == 0 {
            return (best.0 != NO_RANK).then_some(best);
        }
        while let Some(cp) = rest
            .first_chunk::<3>()
            .and_then(|&[x, y, z]| three_byte_char(x, y, z))
        {
            if entry & HAS_STEPS == 0 {
                if entry & PARTIAL == 0 {
                    return (best.0 != NO_RANK).then_some(best);
                }
                break;
            }
            match self.steps.get(node as u32, cp as u16) {
                Some(step) => {
                    if step.best != NO_RANK {
                        best = (step.best, depth - 1 + step.best_len as usize);
                    }
                    entry = step.next;
                    node = (entry & NODE_MASK) as usize;
                    if node == 0 {
                        return (best.0 != NO_RANK).then_some(best);
                    }
                    (rest, depth) = (&rest[3..], depth + 3);
                }
                // No token spells this char out in full below `node`; only one that ends
                // inside it could be longer than `best`.
                None if entry & PARTIAL == 0 => return (best.0 != NO_RANK).then_some(best),
                None => break,
            }
        }
        self.bytes_from(node, rest, depth, best)
    }

    /// The walk down from `node` (at `depth - 1` bytes) along `rest`, one byte a step.
    #[inline(always)]
    fn bytes_from(
        &self,
        mut node: usize,
        rest: &[u8],
        depth: usize,
        mut best: (Rank, usize),
    ) -> Option<(Rank, usize)> {
        for (depth, &b) in (depth..).zip(rest) {
            let (a, z) = (self.node[node][0] as usize, self.node[node + 1][0] as usize);
            // Children are few below the second level; a short scan beats a binary search.
            match self.label[a..z].iter().position(|&l| l == b) {
                Some(k) => node = a + k,
                None => break,
            }
            let r = self.node[node][1];
            if r != NO_RANK {
                best = (r, depth);
            }
        }
        (best.0 != NO_RANK).then_some(best)
    }

    fn children(&self, n: usize) -> std::ops::Range<usize> {
        self.node[n][0] as usize..self.node[n + 1][0] as usize
    }

    /// `PARTIAL` and `HAS_STEPS` for node `n`.
    fn flags(&self, n: usize) -> u32 {
        let mut f = 0;
        if self.ends_inside_a_char(n) {
            f |= PARTIAL;
        }
        let has_steps = self.children(n).any(|c| {
            self.children(c).any(|g| {
                self.children(g)
                    .any(|h| three_byte_char(self.label[c], self.label[g], self.label[h]).is_some())
            })
        });
        if has_steps {
            f |= HAS_STEPS;
        }
        f
    }

    /// Does some token end one or two bytes into a three-byte char below node `n`?
    fn ends_inside_a_char(&self, n: usize) -> bool {
        self.children(n)
            .filter(|&c| (0xE0..=0xEF).contains(&self.label[c]))
            .any(|c| {
                self.node[c][1] != NO_RANK
                    || self.children(c).any(|g| {
                        (0x80..=0xBF).contains(&self.label[g]) && self.node[g][1] != NO_RANK
                    })
            })
    }

    /// Fills `char3` (each three-byte char's deepest token and node), and `steps` for every
    /// node at the end of such a char, then for the nodes those steps reach, and so on.
    fn build_char_tables(&mut self) {
        let empty = Char3 {
            entry: 0,
            rank: NO_RANK,
            followers: 0,
        };
        // Built on the heap (1 MiB would be a large stack frame); the conversion cannot fail,
        // as the slice has exactly 1 << 16 entries.
        let Ok(mut char3) =
            Box::<[Char3; 1 << 16]>::try_from(vec![empty; 1 << 16].into_boxed_slice())
        else {
            return;
        };
        let mut frontier: Vec<usize> = Vec::new();
        // The char each node at the end of a first char stands for.
        let mut first_char: std::collections::HashMap<usize, usize> = Default::default();
        for (cp, entry) in char3.iter_mut().enumerate() {
            let b = [
                0xE0 | (cp >> 12) as u8,
                0x80 | (cp >> 6 & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ];
            let n1 = self.root[b[0] as usize] as usize;
            let n2 = if n1 == 0 {
                0
            } else {
                self.root2[(b[0] as usize) << 8 | b[1] as usize] as usize
            };
            let n3 = if n2 == 0 {
                0
            } else {
                self.children(n2)
                    .find(|&c| self.label[c] == b[2])
                    .unwrap_or(0)
            };
            let (best, len) = [(n3, 3), (n2, 2), (n1, 1)]
                .into_iter()
                .find(|&(x, _)| x != 0 && self.node[x][1] != NO_RANK)
                .map_or((NO_RANK, 0), |(x, d)| (self.node[x][1], d));
            let go_on = n3 != 0 && !self.children(n3).is_empty();
            let node = if go_on { n3 as u32 | self.flags(n3) } else { 0 };
            entry.entry = node | len << LEN_SHIFT;
            entry.rank = best;
            if go_on {
                frontier.push(n3);
                first_char.insert(n3, cp);
            }
        }
        let mut steps: Vec<(u32, u16, Step)> = Vec::new();
        while let Some(n) = frontier.pop() {
            for c in self.children(n) {
                for g in self.children(c) {
                    for h in self.children(g) {
                        let Some(cp) = three_byte_char(self.label[c], self.label[g], self.label[h])
                        else {
                            continue;
                        };
                        let (best, best_len) = [(h, 3), (g, 2), (c, 1)]
                            .into_iter()
                            .find(|&(x, _)| self.node[x][1] != NO_RANK)
                            .map_or((NO_RANK, 0), |(x, d)| (self.node[x][1], d));
                        let has_children = !self.children(h).is_empty();
                        let next = if has_children {
                            h as u32 | self.flags(h)
                        } else {
                            0
                        };
                        let step = Step {
                            next,
                            best,
                            best_len,
                        };
                        steps.push((n as u32, cp as u16, step));
                        if let Some(&first) = first_char.get(&n) {
                            char3[first].followers |= 1 << (cp & 0x3F);
                        }
                        if has_children {
                            frontier.push(h);
                        }
                    }
                }
            }
        }
        self.steps = CharSteps::new(steps);
        self.char3 = Some(char3);
    }

    /// Approximate heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.node.capacity() * 8
            + self.label.capacity()
            + 1024
            + self.root2.len() * 4
            + self.char3.as_ref().map_or(0, |t| t.len() * 16)
            + self.steps.memory_bytes()
    }
}

/// One three-byte char's entry in `char3`: `entry` is the node at the char's end with its
/// flags and the length of `rank`, the deepest token on the char's bytes (see [`NODE_MASK`]);
/// `followers` has bit `c & 63` set for every char `c` that `steps` has a step for below this
/// char.
///
/// Why the followers: after most chars of CJK text the token ends (in the benchmark's Japanese
/// megabyte, 57% of the tokens o200k's backtracking finds are one char), and the probe of `steps`
/// that found so read the step table's filter, a second load after this entry's, and then
/// branched on it. A clear bit answers from the entry's own line (16 bytes, aligned, so
/// never split), which the filter alone cannot (see docs/engine.md).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Char3 {
    entry: u32,
    rank: Rank,
    followers: u64,
}

/// The low 16 bits of the code point of a three-byte UTF-8 char (lead byte `E0`-`EF`, two
/// continuation bytes), or `None` if the bytes are not laid out as one.
#[inline(always)]
fn three_byte_char(b0: u8, b1: u8, b2: u8) -> Option<usize> {
    // The three layout tests (`1110xxxx 10xxxxxx 10xxxxxx`) as one masked compare.
    let x = u32::from_le_bytes([b0, b1, b2, 0]);
    (x & 0x00C0_C0F0 == 0x0080_80E0)
        .then_some((b0 as usize & 0x0F) << 12 | (b1 as usize & 0x3F) << 6 | (b2 as usize & 0x3F))
}

/// A node with its flags, in `char3` entries and `Step::next`: the node's index in the low
/// 28 bits (`new` builds the char tables only for a trie with fewer nodes), `PARTIAL` if some
/// token below the node ends one or two bytes into a three-byte char, `HAS_STEPS` if some
/// token below it spells a whole three-byte char out. In `char3` entries bits 28-29 hold the
/// length of the deepest token on the char's bytes.
const NODE_MASK: u32 = (1 << LEN_SHIFT) - 1;
const LEN_SHIFT: u32 = 28;
const PARTIAL: u32 = 1 << 31;
const HAS_STEPS: u32 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_and_shorter_prefixes() {
        let toks: Vec<(&[u8], Rank)> = vec![
            (b"a", 0),
            (b"ab", 1),
            (b"abcd", 2),
            (b"b", 3),
            (b"abd", 4),
            (b"xyz", 5),
        ];
        let (t, shorter) = PrefixTrie::new(&toks);
        assert_eq!(t.longest(b"abcde"), Some((2, 4)));
        assert_eq!(t.longest(b"abc"), Some((1, 2)));
        assert_eq!(t.longest(b"abdd"), Some((4, 3)));
        assert_eq!(t.longest(b"a"), Some((0, 1)));
        assert_eq!(t.longest(b"bab"), Some((3, 1)));
        assert_eq!(t.longest(b"xy"), None);
        assert_eq!(t.longest(b"c"), None);
        assert_eq!(t.longest(b""), None);
        assert_eq!(shorter, vec![NO_RANK, 0, 1, NO_RANK, 1, NO_RANK]);
    }

    #[test]
    fn agrees_with_a_brute_force_search() {
        brute_force_check(b"abc", 6, 500);
        // Zero bytes and tokens longer than the sort's 8-byte keys: "a" and "a\0" share a
        // zero-padded key, as do any two tokens that agree on their first 8 bytes.
        brute_force_check(b"\0a", 12, 700);
        // Three-byte UTF-8 chars (`E4 B8 80`, `E4 80 B8`, ...), which `char3` answers, next
        // to lead and continuation bytes in places where they make no char.
        brute_force_check(&[0xE4, 0xB8, 0x80, b'a'], 10, 700);
        // Runs of whole chars, which go down by `steps`, among parts of chars, so that tokens
        // end one or two bytes into a char below nodes that have steps too.
        brute_force_units(
            &[
                &[0xE4, 0xB8, 0x80],
                &[0xE4, 0xB8, 0x81],
                &[0xE4],
                &[0xB8],
                b"a",
            ],
            5,
            500,
        );
        // Whole chars only (no token ends inside one, so `longest` trusts `followers` alone),
        // two of them sharing their bit among a char's followers (U+4E00 and U+4E40 both end
        // in `0x80`), so that a set bit does not always mean a step.
        brute_force_units(
            &[
                &[0xE4, 0xB8, 0x80],
                &[0xE4, 0xB9, 0x80],
                &[0xE4, 0xB8, 0x81],
                b"a",
            ],
            4,
            150,
        );
        brute_force_units(
            &[
                &[0xE4, 0xB8, 0x80],
                &[0xE4, 0xB8, 0x81],
                &[0xE4, 0xB8],
                b" ",
            ],
            6,
            800,
        );
    }

    /// A xorshift generator: the same cases on every run.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// `n` distinct tokens from `draw`.
    fn distinct(n: usize, mut draw: impl FnMut() -> Vec<u8>) -> Vec<Vec<u8>> {
        let mut toks: Vec<Vec<u8>> = Vec::new();
        while toks.len() < n {
            let t = draw();
            if !toks.contains(&t) {
                toks.push(t);
            }
        }
        toks
    }

    /// Checks `longest` on each text, and every token's `shorter`, against a search of all
    /// the tokens (rank = index).
    fn check_against_brute_force(toks: &[Vec<u8>], texts: impl Iterator<Item = Vec<u8>>) {
        let pairs: Vec<(&[u8], Rank)> = toks
            .iter()
            .enumerate()
            .map(|(i, t)| (&t[..], i as Rank))
            .collect();
        let (trie, shorter) = PrefixTrie::new(&pairs);
        let brute = |text: &[u8]| {
            toks.iter()
                .enumerate()
                .filter(|(_, t)| text.starts_with(t))
                .max_by_key(|(_, t)| t.len())
                .map(|(i, t)| (i as Rank, t.len()))
        };
        for text in texts {
            assert_eq!(trie.longest(&text), brute(&text), "on {text:?}");
        }
        for (i, t) in toks.iter().enumerate() {
            let want = brute(&t[..t.len() - 1]).map_or(NO_RANK, |(r, _)| r);
            assert_eq!(shorter[i], want);
        }
    }

    /// Tokens of 1 to `max_len` bytes of `alphabet`; texts of up to `max_len + 2` bytes of
    /// it and of a byte no token has.
    fn brute_force_check(alphabet: &[u8], max_len: u64, n_tokens: usize) {
        let mut rnd = xorshift(0x9E37_79B9_7F4A_7C15);
        let toks = distinct(n_tokens, || {
            let len = 1 + (rnd() % max_len) as usize;
            (0..len)
                .map(|_| alphabet[(rnd() % alphabet.len() as u64) as usize])
                .collect()
        });
        let texts = (0..2000).map(|_| {
            let len = (rnd() % (max_len + 3)) as usize;
            (0..len)
                .map(|_| match rnd() % (alphabet.len() as u64 + 1) {
                    k if (k as usize) < alphabet.len() => alphabet[k as usize],
                    _ => b'z', // a byte no token has
                })
                .collect()
        });
        check_against_brute_force(&toks, texts);
    }

    /// Tokens of 1 to `max_units` units (whole chars, parts of chars) and texts of up to
    /// `max_units + 3`.
    fn brute_force_units(units: &[&[u8]], max_units: u64, n_tokens: usize) {
        let mut rnd = xorshift(0x2545_F491_4F6C_DD1D);
        let mut make = |max: u64| -> Vec<u8> {
            let n = 1 + (rnd() % max) as usize;
            (0..n)
                .flat_map(|_| units[(rnd() % units.len() as u64) as usize].iter().copied())
                .collect()
        };
        let toks = distinct(n_tokens, || make(max_units));
        let texts: Vec<Vec<u8>> = (0..3000).map(|_| make(max_units + 3)).collect();
        check_against_brute_force(&toks, texts.into_iter());
    }
}
