//! The general path: any pattern that is, provably, a plain regex in disguise.
//!
//! Invariant: when [`General::new`] returns `Some`, `for_each_piece` yields
//! exactly the non-empty matches of fancy-regex's `find_iter` for the same pattern (an
//! empty match has no tokens; see `Splitter::for_each_piece`).
//!
//! Why. The pattern is parsed by fancy-regex's own parser (so the syntax is
//! read exactly as the reference reads it) into its top-level alternatives
//! A0|A1|…, each then rewritten by rules that keep the set of matches at every
//! start position *and* the match the backtracking order picks first:
//!
//! 1. Atomic groups / possessive quantifiers `(?>E)` that are elements of an
//!    alternative's top-level concatenation become plain `E` when
//!    - (a) nothing follows them in the alternative: the first success of `E`
//!      then ends the whole match, so nothing ever backtracks into `E`;
//!    - (b) everything after them can match the empty string anywhere (each is
//!      a repetition with minimum 0): again the first success of `E` is final;
//!    - (c) `E` is a greedy repetition of one-char class C and `$` (end of
//!      text) follows: backtracking into `E` leaves a C char before `$`, so `$`
//!      fails;
//!    - (d) `E` is a greedy repetition of one-char class C and the next element
//!      must start by consuming a char of a class D disjoint from C (D itself,
//!      or a repetition of D with minimum ≥ 1): backtracking into `E` leaves a
//!      C char there, so that element fails.
//!
//!    In (c) and (d) every retry that greedy `E` would make fails at once, so
//!    the alternative matches exactly when, and what, the possessive one does.
//! 2. The idiom `\s+(?!\S)` immediately followed by the alternative `\s` or
//!    `\s+` becomes `\s+`, remembering its pattern id. At a start position i,
//!    `\s+(?!\S)|\s` and `\s+(?!\S)|\s+` match iff `text[i]` ∈ `\s`, the same
//!    as `\s+`, and then (`\s+` being greedy, so its match [i, j) is the
//!    maximal `\s` run): at the end of the text, or for a run of one char, the
//!    original also gives [i, j); else `\s+` backtracks one char to satisfy
//!    `(?!\S)`, giving [i, j - last char). That trim is done after the search.
//!    Alternatives before the pair are untouched and still win first;
//!    alternatives after it are untouched and reachable exactly as before
//!    (only where `text[i]` ∉ `\s`).
//!
//! If any alternative still has a construct the regex-automata syntax lacks
//! (look-around, backreferences, remaining atomic groups, …) or is not one
//! `to_str` renders, `new` returns `None` and the caller uses fancy-regex.
//!
//! The rewritten alternatives are compiled as one multi-pattern
//! regex-automata `meta::Regex` with leftmost-first semantics (pattern order =
//! alternation order), which is how fancy-regex itself runs a pattern without
//! fancy constructs. Each search first tries an anchored match at the current
//! position (if one exists, the leftmost match starts there and the anchored
//! search finds the same preferred one; it needs only a forward scan), then an
//! unanchored one. Iteration copies fancy-regex's `Matches`: after an empty
//! match, the next search starts one char later, and an empty match right
//! where the previous match ended is skipped.
//!
//! The anchored search is the one nearly every piece needs (tokenizer patterns
//! match at every position), and a `meta::Regex` call costs more than the few
//! bytes a piece has: it picks a strategy, sets up an `Input` and a cache, and
//! runs a lazy DFA behind all that. So the same alternatives are also compiled,
//! at the first split, into one dense DFA that only starts anchored, with the
//! same syntax and leftmost-first match kind, and the anchored search walks it
//! here a byte at a time (`General::dfa_match`, the loop regex-automata's
//! `Automaton` docs give for a leftmost-first search): a table load per byte.
//! Same automaton semantics, so the same match. Where the DFA cannot answer (it
//! would pass `DFA_SIZE_LIMIT`, or stops at a quit byte, as a Unicode `\b`
//! does on non-ASCII text), the meta regex runs; where it finds no
//! match at the position, it passes over the chars at which it dies on the first
//! byte (no match starts there) and tries the next one, and only where that
//! fails too does the unanchored search run.
//! Splitting alone is ~2.2x as fast as with the meta regex (see docs/engine.md).

use crate::runtime::interrupt::PatternBudget;
use crate::runtime::process_once::ProcessOnce;

use fancy_regex::Expr;
use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::meta::{self, Regex};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::primitives::StateID;
use regex_automata::util::{start, syntax};
use regex_automata::{Anchored, Input};
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, HirKind};

use super::classes::piece;
use crate::error::Result;

/// A pattern run by regex-automata after proven rewrites.
pub struct General {
    re: Regex,
    /// The rewritten alternatives, for the DFA.
    alternatives: Vec<String>,
    /// The anchored DFA, built at the first split; `None` where it cannot be.
    dfa: ProcessOnce<Option<dense::DFA<Vec<u32>>>>,
    /// By pattern id: matches are `\s+` runs standing for `\s+(?!\S)`.
    trim: Vec<bool>,
}

/// The dense DFA is not built past this many bytes (the meta regex alone runs then).
const DFA_SIZE_LIMIT: usize = 8 << 20;

/// The meta regex's NFA is not built past this many bytes (regex-automata's default).
const NFA_SIZE_LIMIT: usize = 10 << 20;

/// Patterns with more top-level alternatives than this go to fancy-regex (see
/// [`cache_is_bounded`]).
const MAX_ALTERNATIVES: usize = 64;

/// Bytes the meta regex's search caches may take, at most, on this path (see
/// [`cache_is_bounded`]).
const CACHE_LIMIT: usize = 32 << 20;

/// Whether the meta regex over `alternatives` keeps its search caches under [`CACHE_LIMIT`].
///
/// Why: with one pattern per alternative, the PikeVM inside the meta regex keeps a capture
/// slot per pattern for every NFA state (states x 2 x patterns words): 20,000 alternatives
/// asked for 60 GB at the first search and aborted the process. Such a pattern goes to
/// fancy-regex instead, which compiles it as one pattern, as tiktoken does.
fn cache_is_bounded(alternatives: &[String]) -> bool {
    // Tokenizer patterns have a handful of alternatives; past this many, the NFA is not
    // even built to be measured (it takes seconds for 20,000).
    if alternatives.len() > MAX_ALTERNATIVES {
        return false;
    }
    // Two slots a pattern; a word (8 bytes) a slot, per state.
    let slots = 2 * alternatives.len();
    let nfa = thompson::Compiler::new()
        .syntax(syntax_config())
        .configure(
            thompson::Config::new()
                .which_captures(WhichCaptures::Implicit)
                .nfa_size_limit(Some(NFA_SIZE_LIMIT)),
        )
        .build_many(alternatives);
    nfa.is_ok_and(|nfa| nfa.states().len().saturating_mul(slots * 8) <= CACHE_LIMIT)
}

/// What the DFA says of an anchored match at one position.
enum Here {
    /// The preferred match ends at this byte offset, by this pattern.
    Match(usize, usize),
    /// No alternative matches at the position.
    NoMatch,
    /// The DFA cannot tell (a quit byte, or no DFA): ask the meta regex.
    Unknown,
}

impl General {
    /// `Some` when `pattern` can run on regex-automata with the same matches
    /// as fancy-regex (see the module docs), else `None`.
    pub fn new(pattern: &str) -> Option<General> {
        let tree = Expr::parse_tree(pattern).ok()?;
        if !tree.backrefs.is_empty() || tree.contains_subroutines {
            return None;
        }
        let alts = match tree.expr {
            Expr::Alt(v) => v,
            e => vec![e],
        };
        let mut alts: Vec<Expr> = alts
            .into_iter()
            .map(unwrap_possessives)
            .collect::<Option<_>>()?;
        let mut trim = vec![false; alts.len()];
        for k in 0..alts.len() {
            if is_ws_lookahead_idiom(&alts[k]) && alts.get(k + 1).is_some_and(is_ws_or_ws_plus) {
                alts[k] = ws_plus();
                trim[k] = true;
            }
        }
        let mut strs = Vec::with_capacity(alts.len());
        for a in &alts {
            if !is_easy(a) {
                return None;
            }
            let mut s = String::new();
            a.to_str(&mut s, 1);
            strs.push(s);
        }
        if !cache_is_bounded(&strs) {
            return None;
        }
        let re = Regex::builder()
            .configure(
                meta::Config::new()
                    .which_captures(WhichCaptures::Implicit)
                    .nfa_size_limit(Some(NFA_SIZE_LIMIT)),
            )
            .syntax(syntax_config())
            .build_many(&strs)
            .ok()?;
        Some(General {
            re,
            alternatives: strs,
            dfa: ProcessOnce::new(),
            trim,
        })
    }

    /// Whether the anchored search walks the dense DFA (built here if not yet): `false` where
    /// it could not be built and the meta regex does all the searching.
    pub fn has_dfa(&self) -> bool {
        self.dfa.get_or_init(|| self.build_dfa()).is_some()
    }

    /// Whether the DFA's build has been tried ([`General::has_dfa`] builds it).
    pub fn dfa_tried(&self) -> bool {
        self.dfa.get().is_some()
    }

    /// This splitter with the meta regex doing all the searching, as where the DFA cannot be
    /// built: for the tests that check that path too.
    pub fn without_dfa(self) -> Self {
        General {
            dfa: ProcessOnce::with_value(None),
            ..self
        }
    }

    /// The alternatives as one dense DFA with only anchored starts, or `None` if it would
    /// pass [`DFA_SIZE_LIMIT`].
    fn build_dfa(&self) -> Option<dense::DFA<Vec<u32>>> {
        dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    // Unicode `\b` quits on non-ASCII bytes instead of failing the build.
                    .unicode_word_boundary(true)
                    .dfa_size_limit(Some(DFA_SIZE_LIMIT))
                    .determinize_size_limit(Some(DFA_SIZE_LIMIT)),
            )
            .syntax(syntax_config())
            .thompson(thompson::Config::new().which_captures(WhichCaptures::None))
            .build_many(&self.alternatives)
            .ok()
    }

    /// The anchored leftmost-first match at `pos` by the DFA: walk until the dead state,
    /// keeping the last match seen. A DFA's match state comes one byte late, so a match
    /// state reached on byte `i` means a match ending at `i`. Inside a word nearly every
    /// byte reaches a match state, so only the last one's pattern is looked up.
    #[inline(always)]
    fn dfa_match(dfa: &dense::DFA<Vec<u32>>, b: &[u8], pos: usize) -> Here {
        let config = start::Config::new()
            .anchored(Anchored::Yes)
            .look_behind(pos.checked_sub(1).map(|i| b[i]));
        let Ok(mut state) = dfa.start_state(&config) else {
            return Here::Unknown;
        };
        let found = |last: Option<(usize, StateID)>| match last {
            Some((end, s)) => Here::Match(end, dfa.match_pattern(s, 0).as_usize()),
            None => Here::NoMatch,
        };
        let mut last = None;
        for (i, &byte) in b.iter().enumerate().skip(pos) {
            state = dfa.next_state(state, byte);
            if dfa.is_special_state(state) {
                if dfa.is_match_state(state) {
                    last = Some((i, state));
                } else if dfa.is_dead_state(state) {
                    return found(last);
                } else if dfa.is_quit_state(state) {
                    return Here::Unknown;
                }
            }
        }
        state = dfa.next_eoi_state(state);
        if dfa.is_match_state(state) {
            last = Some((b.len(), state));
        }
        found(last)
    }

    /// The first char boundary from `p` (one, or the text's end) at which the anchored DFA
    /// does not die on the first byte. No match starts at the chars passed over: a dead
    /// state is no match state, and regex-automata reports even an empty match only on the
    /// byte after it.
    fn skip_dead(dfa: &dense::DFA<Vec<u32>>, b: &[u8], mut p: usize) -> usize {
        while p < b.len() {
            let config = start::Config::new()
                .anchored(Anchored::Yes)
                .look_behind(p.checked_sub(1).map(|i| b[i]));
            let Ok(state) = dfa.start_state(&config) else {
                return p;
            };
            if !dfa.is_dead_state(dfa.next_state(state, b[p])) {
                return p;
            }
            p += codepoint_len(b[p]);
        }
        p
    }

    /// Calls `f` with each piece of `text`, in order.
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str) -> Result<()>,
    ) -> Result<()> {
        let n = text.len();
        let b = text.as_bytes();
        let mut pos = 0;
        let mut last_match: Option<usize> = None;
        let dfa = self.dfa.get_or_init(|| self.build_dfa()).as_ref();
        // One search may scan to the end of the text (`a+b|a` on `aaa…`): the budget turns
        // that quadratic split into an error, and Ctrl-C is noticed meanwhile.
        let mut budget = PatternBudget::linear(n, 256);
        while pos <= n {
            budget.spend()?;
            let mut at = pos;
            let mut here = match dfa {
                Some(dfa) => Self::dfa_match(dfa, b, at),
                None => Here::Unknown,
            };
            // No match starts here: the leftmost one starts further on. The chars where the
            // DFA dies on the first byte start none, so the search goes on from the first
            // other one (a pattern that never matches whitespace skips each space here,
            // where the meta regex's search costs a thousand instructions).
            if let (Here::NoMatch, Some(dfa)) = (&here, dfa) {
                if at < n {
                    at = Self::skip_dead(dfa, b, at + codepoint_len(b[at]));
                    here = Self::dfa_match(dfa, b, at);
                }
            }
            let (s, mut e, pattern) = match here {
                Here::Match(e, pattern) => (at, e, pattern),
                Here::NoMatch | Here::Unknown => {
                    let input = Input::new(text).span(at..n);
                    let anchored = match here {
                        Here::NoMatch => None,
                        _ => self.re.search(&input.clone().anchored(Anchored::Yes)),
                    };
                    match anchored.or_else(|| self.re.search(&input)) {
                        Some(m) => (m.start(), m.end(), m.pattern().as_usize()),
                        None => break,
                    }
                }
            };
            if e < n && self.trim.get(pattern) == Some(&true) {
                if let Some((k, _)) = piece(text, s, e)?.char_indices().next_back() {
                    if k > 0 {
                        e = s + k;
                    }
                }
            }
            if s == e {
                pos = e + b.get(e).map_or(1, |&x| codepoint_len(x));
                if last_match == Some(e) {
                    continue;
                }
            } else {
                pos = e;
            }
            last_match = Some(e);
            if s < e {
                f(piece(text, s, e)?)?;
            }
        }
        Ok(())
    }
}

/// The syntax both the meta regex and the DFA read the alternatives with.
fn syntax_config() -> syntax::Config {
    syntax::Config::new().utf8(true).unicode(true)
}

fn codepoint_len(b: u8) -> usize {
    match b {
        b if b < 0x80 => 1,
        b if b < 0xe0 => 2,
        b if b < 0xf0 => 3,
        _ => 4,
    }
}

const INF: usize = usize::MAX;

fn is_delegate(e: &Expr, s: &str) -> bool {
    matches!(e, Expr::Delegate { inner, .. } if inner == s)
}

/// `\s+(?!\S)`.
fn is_ws_lookahead_idiom(e: &Expr) -> bool {
    match e {
        Expr::Concat(v) if v.len() == 2 => {
            matches!(&v[0], Expr::Repeat { child, lo: 1, hi: INF, greedy: true } if is_delegate(child, r"\s"))
                && matches!(&v[1], Expr::LookAround(inner, fancy_regex::LookAround::LookAheadNeg) if is_delegate(inner, r"\S"))
        }
        _ => false,
    }
}

/// `\s` or `\s+`.
fn is_ws_or_ws_plus(e: &Expr) -> bool {
    is_delegate(e, r"\s")
        || matches!(e, Expr::Repeat { child, lo: 1, hi: INF, greedy: true } if is_delegate(child, r"\s"))
}

fn ws_plus() -> Expr {
    Expr::Repeat {
        child: Box::new(Expr::Delegate {
            inner: r"\s".to_string(),
            casei: false,
        }),
        lo: 1,
        hi: INF,
        greedy: true,
    }
}

/// Rule 1 on one top-level alternative; `None` if an atomic group stays.
fn unwrap_possessives(alt: Expr) -> Option<Expr> {
    let mut elems = match alt {
        Expr::Concat(v) => v,
        e => vec![e],
    };
    for k in (0..elems.len()).rev() {
        if let Expr::AtomicGroup(inner) = &elems[k] {
            let rest = &elems[k + 1..];
            let ok = rest.is_empty()
                || rest
                    .iter()
                    .all(|e| matches!(e, Expr::Repeat { lo: 0, .. } | Expr::Empty))
                || match greedy_class_repeat(inner) {
                    Some(c) => match &rest[0] {
                        Expr::Assertion(fancy_regex::Assertion::EndText) => true,
                        next => first_char_class(next).is_some_and(|d| disjoint(&c, &d)),
                    },
                    None => false,
                };
            if !ok {
                return None;
            }
            let inner = match std::mem::replace(&mut elems[k], Expr::Empty) {
                Expr::AtomicGroup(inner) => *inner,
                _ => unreachable!(),
            };
            elems[k] = inner;
        }
    }
    Some(if elems.len() == 1 {
        elems.pop().unwrap_or(Expr::Empty)
    } else {
        Expr::Concat(elems)
    })
}

/// The class C of `C{lo,hi}` (greedy), C a one-char class.
fn greedy_class_repeat(e: &Expr) -> Option<ClassUnicode> {
    match e {
        Expr::Repeat {
            child,
            greedy: true,
            ..
        } => one_char_class(child),
        _ => None,
    }
}

/// The class D such that a match of `e` must start by consuming a D char.
fn first_char_class(e: &Expr) -> Option<ClassUnicode> {
    match e {
        Expr::Repeat { child, lo, .. } if *lo >= 1 => one_char_class(child),
        Expr::AtomicGroup(inner) => first_char_class(inner),
        e => one_char_class(e),
    }
}

/// The chars `e` matches, when `e` always matches exactly one char.
fn one_char_class(e: &Expr) -> Option<ClassUnicode> {
    let (src, casei) = match e {
        Expr::Delegate { inner, casei } => (inner.clone(), *casei),
        Expr::Literal { val, casei } if val.chars().count() == 1 => {
            (regex_syntax::escape(val), *casei)
        }
        _ => return None,
    };
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .case_insensitive(casei)
        .build()
        .parse(&src)
        .ok()?;
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => Some(c.clone()),
        HirKind::Literal(lit) => {
            let s = std::str::from_utf8(&lit.0).ok()?;
            let mut cs = s.chars();
            let c = cs.next()?;
            if cs.next().is_some() {
                return None;
            }
            Some(ClassUnicode::new([ClassUnicodeRange::new(c, c)]))
        }
        _ => None,
    }
}

fn disjoint(a: &ClassUnicode, b: &ClassUnicode) -> bool {
    let mut x = a.clone();
    x.intersect(b);
    x.ranges().is_empty()
}

/// Only constructs regex-automata has, `Expr::to_str` renders, and fancy-regex hands to
/// regex-automata itself. Not `\b` and `\B`: regex-automata has them, but fancy-regex runs
/// any pattern with one on its own backtracking VM (`Assertion::is_always_hard`), and the
/// two part ways where a lazy repetition can end on an empty iteration: `(?: |a*?\b)+` on
/// " aa" is one match, " aa", for regex-automata and two, " " and "a", for the VM (and for
/// tiktoken).
fn is_easy(e: &Expr) -> bool {
    use fancy_regex::Assertion as A;
    match e {
        Expr::Empty | Expr::Any { .. } | Expr::Literal { .. } | Expr::Delegate { .. } => true,
        Expr::Assertion(a) => matches!(
            a,
            A::StartText | A::EndText | A::StartLine { .. } | A::EndLine { .. }
        ),
        Expr::Concat(v) | Expr::Alt(v) => v.iter().all(is_easy),
        Expr::Group(child) => is_easy(child),
        Expr::Repeat { child, .. } => is_easy(child),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_patterns_take_the_general_path() {
        let yes = [
            // GPT-2 as published (no possessives).
            r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
            // Llama 3.
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
            super::super::R50K_PATTERN,
            super::super::CL100K_PATTERN,
            super::super::O200K_PATTERN,
            r"\w+|\s+",
            // Qwen2.
            r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
            // Mistral's Tekken.
            r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        ];
        for p in yes {
            let g = General::new(p);
            assert!(g.is_some_and(|g| g.has_dfa()), "{p}");
        }
        let no = [
            r"\s+(?!\S)",       // nothing after the idiom
            r"\s+(?!\S)|x",     // not followed by \s or \s+
            r"a(?=b)",          // look-ahead elsewhere
            r"(a)\1",           // backreference
            r"\p{L}++\p{Ll}",   // possessive not provably greedy
            r"(?>a|ab)c",       // atomic alternation
            r"[a-z]++[a-z0-9]", // classes overlap
            r"\w+\b|.",         // word boundary: fancy-regex's VM runs it
            r"\B\w|\s",         // likewise
        ];
        for p in no {
            assert!(General::new(p).is_none(), "{p}");
        }
    }
}
