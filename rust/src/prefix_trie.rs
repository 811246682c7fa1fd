//! Longest-token-prefix look-up: a byte trie in breadth-first order.
//!
//! Invariant: `longest(text)` is the rank and length of the longest inserted token that
//! `text` starts with, and `shorter(rank)` the rank of the longest inserted token that is a
//! strict prefix of that token (`NO_RANK` when there is none).
//!
//! Layout (why it is small and quick to build): nodes are numbered level by level, and within
//! a level in byte order, so the children of node `i` are the consecutive nodes
//! `first[i]..first[i + 1]` and `label[j]` is the byte on the edge into node `j`. A step down
//! the trie is a scan of a few contiguous bytes, except the first two or three: every node one
//! or two bytes deep, and every node at the end of a three-byte UTF-8 char, is found in a
//! direct table (256 KiB each), since below a UTF-8 lead byte the scan would be over as many
//! as 64 continuation bytes. The whole trie is 9 bytes a node (o200k: ~6 MB) and is built
//! from the sorted tokens in one linear pass, with no per-node allocation.

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
    root2: Vec<u32>,
    /// The node at the end of each three-byte UTF-8 char (0 = none), by its code point's low
    /// 16 bits. On CJK text most tokens are one or two such chars, so the walk's first step
    /// below `root2` was a scan of up to 64 labels on nearly every token; one load instead
    /// made encoding the shared multilingual text 8% faster (cl100k and o200k, paired runs).
    root3: Vec<u32>,
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
        keyed.par_sort_unstable_by(|x, y| {
            x.0.cmp(&y.0)
                .then_with(|| tokens[x.1 as usize].0.cmp(tokens[y.1 as usize].0))
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
            root2: vec![0; 1 << 16],
            root3: vec![0; 1 << 16],
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
        for lead in 0xE0..=0xEFu8 {
            for c1 in 0x80..=0xBFu8 {
                let n2 = trie.root2[(lead as usize) << 8 | c1 as usize] as usize;
                if n2 == 0 {
                    continue;
                }
                for c in trie.node[n2][0] as usize..trie.node[n2 + 1][0] as usize {
                    if let Some(cp) = three_byte_char(lead, c1, trie.label[c]) {
                        trie.root3[cp] = c as u32;
                    }
                }
            }
        }
        let mut shorter = vec![NO_RANK; tokens.len()];
        for (k, &i) in order.iter().enumerate() {
            shorter[i as usize] = shorter_sorted[k];
        }
        (trie, shorter)
    }

    /// The rank and length of the longest token that `text` starts with. The length comes
    /// free with the walk, and saves the caller a look-up of the token's length.
    #[inline]
    pub fn longest(&self, text: &[u8]) -> Option<(Rank, usize)> {
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
        let (mut rest, mut depth) = (rest, 3);
        if let Some((&b2, tail)) = rest.split_first() {
            if let Some(cp) = three_byte_char(b0, b1, b2) {
                node = self.root3[cp] as usize;
                if node == 0 {
                    return (best.0 != NO_RANK).then_some(best);
                }
                let r = self.node[node][1];
                if r != NO_RANK {
                    best = (r, 3);
                }
                (rest, depth) = (tail, 4);
            }
        }
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

    /// Approximate heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.node.capacity() * 8
            + self.label.capacity()
            + 1024
            + (self.root2.len() + self.root3.len()) * 4
    }
}

/// The low 16 bits of the code point of a three-byte UTF-8 char (lead byte `E0`-`EF`, two
/// continuation bytes), or `None` if the bytes are not laid out as one.
#[inline(always)]
fn three_byte_char(b0: u8, b1: u8, b2: u8) -> Option<usize> {
    ((b0 & 0xF0) == 0xE0 && (b1 & 0xC0) == 0x80 && (b2 & 0xC0) == 0x80)
        .then_some((b0 as usize & 0x0F) << 12 | (b1 as usize & 0x3F) << 6 | (b2 as usize & 0x3F))
}

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
        // Three-byte UTF-8 chars (`E4 B8 80`, `E4 80 B8`, ...), which `root3` answers, next
        // to lead and continuation bytes in places where they make no char.
        brute_force_check(&[0xE4, 0xB8, 0x80, b'a'], 10, 700);
    }

    fn brute_force_check(alphabet: &[u8], max_len: u64, n_tokens: usize) {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut toks: Vec<Vec<u8>> = Vec::new();
        while toks.len() < n_tokens {
            let len = 1 + (rnd() % max_len) as usize;
            let t: Vec<u8> = (0..len)
                .map(|_| alphabet[(rnd() % alphabet.len() as u64) as usize])
                .collect();
            if !toks.contains(&t) {
                toks.push(t);
            }
        }
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
        for _ in 0..2000 {
            let len = (rnd() % (max_len + 3)) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| match rnd() % (alphabet.len() as u64 + 1) {
                    k if (k as usize) < alphabet.len() => alphabet[k as usize],
                    _ => b'z', // a byte no token has
                })
                .collect();
            assert_eq!(trie.longest(&text), brute(&text), "on {text:?}");
        }
        for (i, t) in toks.iter().enumerate() {
            let want = brute(&t[..t.len() - 1]).map_or(NO_RANK, |(r, _)| r);
            assert_eq!(shorter[i], want);
        }
    }
}
