//! Piece → count tables that keep short pieces inline.
//!
//! Invariant: a piece of at most 15 bytes is stored only in `short`, packed into a `u128`
//! (bytes in the low 15 bytes, length in the top byte); a longer one only in `long`. So
//! each piece has exactly one place, two tables are equal iff they hold the same counts,
//! and the hot counting loop hashes and compares one integer instead of a string (most
//! pieces of real text are short), with no allocation per distinct short piece.

use rustc_hash::FxHashMap;
use std::borrow::Borrow;
use std::hash::Hash;

const SHORT: usize = 15;

#[inline]
fn pack(b: &[u8]) -> Option<u128> {
    if b.len() > SHORT {
        return None;
    }
    let mut a = [0u8; 16];
    a[..b.len()].copy_from_slice(b);
    a[15] = b.len() as u8;
    Some(u128::from_le_bytes(a))
}

/// A piece read out of a table.
#[derive(Clone, Copy)]
pub enum Piece<'a> {
    Short([u8; 16]),
    Long(&'a str),
}

impl Piece<'_> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Piece::Short(a) => &a[..a[15] as usize],
            Piece::Long(s) => s.as_bytes(),
        }
    }

    /// The piece as text. Pieces are only ever stored from `&str`, so this is valid UTF-8;
    /// the check is kept (it is cheap) so that no invariant rests on `unsafe`.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

impl AsRef<[u8]> for Piece<'_> {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Counts of pieces; `L` is the key of long pieces (`Box<str>` owned, `&str` borrowed).
#[derive(Clone, Debug)]
pub struct Table<L> {
    short: FxHashMap<u128, u64>,
    long: FxHashMap<L, u64>,
}

impl<L> Default for Table<L> {
    fn default() -> Self {
        Table {
            short: FxHashMap::default(),
            long: FxHashMap::default(),
        }
    }
}

impl<L: Hash + Eq> PartialEq for Table<L> {
    fn eq(&self, other: &Self) -> bool {
        self.short == other.short && self.long == other.long
    }
}

impl<L: Hash + Eq> Eq for Table<L> {}

impl<L: Borrow<str> + Hash + Eq> Table<L> {
    pub fn len(&self) -> usize {
        self.short.len() + self.long.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn total(&self) -> u64 {
        self.short.values().chain(self.long.values()).sum()
    }

    pub fn get(&self, piece: &str) -> Option<u64> {
        match pack(piece.as_bytes()) {
            Some(k) => self.short.get(&k).copied(),
            None => self.long.get(piece).copied(),
        }
    }

    /// Adds `n` to a short piece's count; `false` if the piece is long.
    #[inline]
    fn add_short(&mut self, piece: &str, n: u64) -> bool {
        match pack(piece.as_bytes()) {
            Some(k) => {
                *self.short.entry(k).or_insert(0) += n;
                true
            }
            None => false,
        }
    }

    /// Subtracts `n` from a piece's count (which must be at least `n`), removing it at 0.
    pub fn sub(&mut self, piece: &str, n: u64) {
        let slot = match pack(piece.as_bytes()) {
            Some(k) => self.short.get_mut(&k),
            None => self.long.get_mut(piece),
        };
        if let Some(v) = slot {
            *v = v.saturating_sub(n);
            if *v == 0 {
                match pack(piece.as_bytes()) {
                    Some(k) => {
                        self.short.remove(&k);
                    }
                    None => {
                        self.long.remove(piece);
                    }
                }
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (Piece<'_>, u64)> + '_ {
        let short = self
            .short
            .iter()
            .map(|(k, &v)| (Piece::Short(k.to_le_bytes()), v));
        let long = self.long.iter().map(|(k, &v)| (Piece::Long(k.borrow()), v));
        short.chain(long)
    }
}

/// A table that owns its pieces.
pub type CountMap = Table<Box<str>>;
/// A table borrowing long pieces from the text being counted.
pub type LocalMap<'t> = Table<&'t str>;

impl CountMap {
    #[inline]
    pub fn add(&mut self, piece: &str, n: u64) {
        if !self.add_short(piece, n) {
            if let Some(v) = self.long.get_mut(piece) {
                *v += n;
            } else {
                self.long.insert(piece.into(), n);
            }
        }
    }

    /// Adds every count of `other`.
    pub fn absorb<L: Borrow<str> + Hash + Eq>(&mut self, other: &Table<L>) {
        self.short.reserve(other.short.len() / 4);
        for (&k, &v) in &other.short {
            *self.short.entry(k).or_insert(0) += v;
        }
        for (k, &v) in &other.long {
            self.add(k.borrow(), v);
        }
    }
}

impl<'t> LocalMap<'t> {
    #[inline]
    pub fn add(&mut self, piece: &'t str, n: u64) {
        if !self.add_short(piece, n) {
            *self.long.entry(piece).or_insert(0) += n;
        }
    }

    /// The union of two tables (consumes both, reuses the bigger).
    pub fn merged(mut self, mut other: Self) -> Self {
        if self.len() < other.len() {
            std::mem::swap(&mut self, &mut other);
        }
        for (k, v) in other.short {
            *self.short.entry(k).or_insert(0) += v;
        }
        for (k, v) in other.long {
            *self.long.entry(k).or_insert(0) += v;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_pieces_each_have_one_place() {
        let mut t = CountMap::default();
        for p in [
            "",
            "a",
            "fifteen bytes!!",
            "sixteen bytes!!!",
            "日本語",
            "a",
        ] {
            t.add(p, 1);
        }
        assert_eq!(t.len(), 5);
        assert_eq!(t.get("a"), Some(2));
        assert_eq!(t.get("fifteen bytes!!"), Some(1));
        assert_eq!(t.get("sixteen bytes!!!"), Some(1));
        assert_eq!(t.get("b"), None);
        let mut seen: Vec<(String, u64)> =
            t.iter().map(|(p, c)| (p.as_str().to_string(), c)).collect();
        seen.sort();
        assert_eq!(seen[1], ("a".to_string(), 2));
        let mut local = LocalMap::default();
        local.add("a", 3);
        local.add("sixteen bytes!!!", 1);
        let mut u = t.clone();
        u.absorb(&local);
        assert_eq!(u.get("a"), Some(5));
        assert_eq!(u.get("sixteen bytes!!!"), Some(2));
        u.sub("a", 5);
        assert_eq!(u.get("a"), None);
        assert_ne!(u, t);
    }
}
