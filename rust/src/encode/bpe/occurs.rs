//! A set of byte strings, and one question of a text: does it hold one of them?
//!
//! Invariant: [`Occurs::in_text`] is true iff some string of the set is a substring of the
//! text (an empty set holds in none).
//!
//! Why not `AhoCorasick::is_match`: the question is asked of every piece the backtracking
//! encoder takes (its guard, `backtrack.rs`), short texts where the general search's set-up
//! is a good part of the cost. Here it is the automaton's own DFA
//! stepped one byte at a time: one table load and one compare a byte.

use aho_corasick::automaton::Automaton;
use aho_corasick::automaton::StateID;
use aho_corasick::dfa::DFA;
use aho_corasick::Anchored;

pub struct Occurs {
    dfa: DFA,
    start: StateID,
}

impl Occurs {
    /// The set of `strings`; `None` if the automaton cannot be built (too large).
    pub fn new<P: AsRef<[u8]>>(strings: &[P]) -> Option<Occurs> {
        // Standard match semantics and an unanchored start: after each byte the state is a
        // match state iff some string ends there, and no state is dead.
        let dfa = DFA::new(strings).ok()?;
        let start = dfa.start_state(Anchored::No).ok()?;
        Some(Occurs { dfa, start })
    }

    /// Does `text` hold one of the strings?
    #[inline]
    pub fn in_text(&self, text: &[u8]) -> bool {
        let mut sid = self.start;
        for &b in text {
            sid = self.dfa.next_state(Anchored::No, sid, b);
            if self.dfa.is_match(sid) {
                return true;
            }
        }
        false
    }

    /// Heap memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.dfa.memory_usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    #[test]
    fn finds_exactly_the_texts_holding_a_string() {
        let strings: [&[u8]; 5] = [b"atata", b"-----", b"\xe4\xb8\x80", b"ab", b"bab"];
        let set = Occurs::new(&strings).unwrap();
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let alphabet = b"abt-\xe4\xb8\x80";
        for len in 0..400 {
            let text: Vec<u8> = (0..len % 23).map(|_| *rng.pick(alphabet)).collect();
            let want = strings
                .iter()
                .any(|s| text.windows(s.len()).any(|w| w == *s));
            assert_eq!(set.in_text(&text), want, "{text:?}");
        }
        assert!(!Occurs::new::<&[u8]>(&[]).unwrap().in_text(b"anything"));
    }
}
