//! A per-thread cache of the ids HuggingFace's merging gives long words: words longer than
//! the piece cache holds (`piece_cache::MAX_PIECE` bytes) that the model merges its own way.
//!
//! Invariant: an entry maps a word's exact bytes to the ids `HfBpe::merge` gives that word
//! (an entry is put only after merging), so a hit returns what merging would. Bounded: words
//! of at most [`MAX_WORD`] bytes, at most [`MAX_ENTRIES`] of them a thread, all dropped at
//! once when full (a memory bound, not a policy: such words are few).
//!
//! Why: on the engine's path, a word holding a conflict pattern (`bpe_model.rs`) is merged by
//! HF's rule, and the long ones (a table's border, a run of spaces, a line of box-drawing
//! chars) are most of that work: quadratic up to 64 bytes, a heap above, and met again and
//! again in the same text, past the piece cache's reach.
//!
//! Each thread has its own map ([`ThreadSlots`], fork-safe), borrowed only for one look-up or
//! one insertion, so nothing is held across a merge.

use crate::runtime::thread_slots::ThreadSlots;
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// The longest word kept.
pub const MAX_WORD: usize = 1024;
/// Words kept a thread before all are dropped.
const MAX_ENTRIES: usize = 4096;

type Map = FxHashMap<Box<[u8]>, Box<[u32]>>;

#[derive(Default)]
pub struct LongWords {
    per_thread: ThreadSlots<RefCell<Map>>,
}

impl LongWords {
    /// Appends the kept ids of `w` to `out`; false if `w` is not kept.
    pub fn get(&self, w: &[u8], out: &mut Vec<u32>) -> bool {
        let Some(map) = self.per_thread.get_or(RefCell::default) else {
            return false;
        };
        let Ok(map) = map.try_borrow() else {
            return false;
        };
        match map.get(w) {
            Some(ids) => {
                out.extend_from_slice(ids);
                true
            }
            None => false,
        }
    }

    /// Keeps `ids` as the ids of `w`, if `w` is not too long.
    pub fn put(&self, w: &[u8], ids: &[u32]) {
        if w.len() > MAX_WORD {
            return;
        }
        let Some(map) = self.per_thread.get_or(RefCell::default) else {
            return;
        };
        let Ok(mut map) = map.try_borrow_mut() else {
            return;
        };
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(w.into(), ids.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_was_put_within_its_bounds() {
        let lw = LongWords::default();
        let mut out = vec![9];
        assert!(!lw.get(b"a long word", &mut out));
        lw.put(b"a long word", &[1, 2, 3]);
        assert!(lw.get(b"a long word", &mut out));
        assert_eq!(out, [9, 1, 2, 3]);
        let too_long = vec![b'x'; MAX_WORD + 1];
        lw.put(&too_long, &[4]);
        assert!(!lw.get(&too_long, &mut out));
        // Full: everything is dropped, then the new word kept.
        for i in 0..MAX_ENTRIES {
            lw.put(format!("word {i}").as_bytes(), &[i as u32]);
        }
        assert!(!lw.get(b"a long word", &mut out));
        assert!(lw.get(format!("word {}", MAX_ENTRIES - 1).as_bytes(), &mut out));
        // Another thread has its own.
        std::thread::scope(|s| {
            let kept = format!("word {}", MAX_ENTRIES - 1);
            s.spawn(move || assert!(!lw.get(kept.as_bytes(), &mut Vec::new())));
        });
    }
}
