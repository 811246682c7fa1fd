//! Finding special tokens in text.
//!
//! Invariant: `find_allowed(text, from, allowed)` returns the first match, at or
//! after `from`, of a special token that `allowed` admits, where a match of a
//! token that is not admitted makes the search resume one byte after that
//! match's start. This is tiktoken's loop, so ids agree even when special
//! tokens overlap in the text. Matching is leftmost-longest (Aho-Corasick), so
//! the result does not depend on hash-map order.

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};

/// Above this, `max token length x total bytes`, the searcher is never a DFA (see [`searcher`]).
const DFA_WORK_LIMIT: usize = 1 << 22;

/// An Aho-Corasick searcher for `tokens`, built in time linear in their bytes. A DFA's build
/// follows failure links from every state and byte class, up to a token's length each (a
/// special token of 100,000 `Z`s took 19 s): such token sets get the contiguous NFA, which
/// follows them while searching (amortised linear). Every other set gets a DFA, which the
/// automatic choice builds only up to 100 tokens: above that it takes the contiguous NFA,
/// whose walk over a token's bytes (from each place the prefilter finds a first byte) cost
/// ~690 instructions a match against Llama 3's 256 special tokens.
pub fn searcher<S: AsRef<[u8]>>(tokens: &[S], kind: MatchKind) -> Option<AhoCorasick> {
    let longest = tokens.iter().map(|t| t.as_ref().len()).max().unwrap_or(0);
    let total: usize = tokens.iter().map(|t| t.as_ref().len()).sum();
    let build = |ac_kind: AhoCorasickKind| {
        AhoCorasick::builder()
            .match_kind(kind)
            .kind(Some(ac_kind))
            .build(tokens)
            .ok()
    };
    // Each kind's build can fail only on its own limits; the next one is tried then, as the
    // automatic choice does (the noncontiguous NFA last).
    let dfa = (longest.saturating_mul(total) <= DFA_WORK_LIMIT)
        .then(|| build(AhoCorasickKind::DFA))
        .flatten();
    dfa.or_else(|| build(AhoCorasickKind::ContiguousNFA))
        .or_else(|| build(AhoCorasickKind::NoncontiguousNFA))
}

pub struct SpecialMatcher {
    ac: Option<AhoCorasick>,
    /// Pattern index -> token text.
    pub tokens: Vec<String>,
}

impl SpecialMatcher {
    pub fn new(tokens: Vec<String>) -> Self {
        let ac = if tokens.is_empty() {
            None
        } else {
            searcher(&tokens, MatchKind::LeftmostLongest)
        };
        SpecialMatcher { ac, tokens }
    }

    /// `(start, end, pattern index)` of the next admitted special token.
    #[inline]
    pub fn find_allowed(
        &self,
        text: &str,
        mut from: usize,
        allowed: &dyn Fn(usize) -> bool,
    ) -> Option<(usize, usize, usize)> {
        let ac = self.ac.as_ref()?;
        while from <= text.len() {
            let m = ac.find(Input::new(text).range(from..))?;
            let idx = m.pattern().as_usize();
            if allowed(idx) {
                return Some((m.start(), m.end(), idx));
            }
            from = m.start() + 1;
        }
        None
    }

    /// Does any special token's text occur anywhere in `text`? (Any occurrence makes a
    /// leftmost search match somewhere, so one search answers it.)
    pub fn occurs_in(&self, text: &str) -> bool {
        self.ac.as_ref().is_some_and(|ac| ac.is_match(text))
    }

    pub fn index_of(&self, token: &str) -> Option<usize> {
        self.tokens.iter().position(|t| t == token)
    }
}
