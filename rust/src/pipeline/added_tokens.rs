//! Added tokens, matched before the model as HuggingFace's `AddedVocabulary` matches them.
//!
//! Invariant: `split(text, which, active)` returns the same cuts as HF's `find_matches` on
//! the same text with the same trie: leftmost-longest matches of the tokens (non-normalized
//! ones on the raw text, normalized ones on the normalized text), a `single_word` token kept
//! only between non-word chars, `lstrip`/`rstrip` widening the match over the whitespace
//! beside it, and the text between matches left for the model. A token that `active`
//! refuses is skipped as HF skips special tokens with `encode_special_tokens` (the text it
//! covers stays ordinary). A match left empty (inside whitespace a previous match's `rstrip`
//! took) gives no cut, as HF drops empty splits. Two normalized tokens whose normalized
//! texts are equal are refused: HF's choice between them is not deterministic.
//!
//! One key is ferrotok's own, not HF's: a normalized token with `"ferrotok_verbatim": true`
//! is matched in the normalized text as its content is, not as the normalizer makes it
//! (SentencePiece's user-defined symbols, `python/ferrotok/sp_model.py`). HF ignores the key,
//! so a file holding it is ferrotok's alone (`to_hf` refuses to write one).

use super::normalizers::{bad, unsupported, Normalizer};
use crate::error::Result;
use aho_corasick::{AhoCorasick, MatchKind};
use regex_automata::meta::Regex;
use serde_json::Value;

#[derive(Clone, Debug)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
    pub special: bool,
    /// Matched in the normalized text as its content is (`ferrotok_verbatim`, above).
    pub verbatim: bool,
}

/// A trie over some added tokens: pattern index -> index into `AddedVocab::tokens`.
struct Trie {
    ac: AhoCorasick,
    token: Vec<usize>,
    /// Some token of the trie is not special. Kept, not computed per text: a model with
    /// hundreds of special tokens (Llama 3, Tekken) read all of them at every encode.
    has_ordinary: bool,
    /// Set when every token of the trie is a run of one ASCII byte without flags.
    runs: Option<Runs>,
}

/// Added tokens that are all runs of one ASCII byte, without `single_word`, `lstrip` or
/// `rstrip` (GPT-NeoX's runs of 2-24 spaces). Leftmost-longest matching is then greedy
/// along each run of that byte: at each place the longest token that fits in what is left
/// of the run, until none does. Found with `memmem` for the shortest run, not by the
/// automaton's step a byte: spaces are a sixth of most text, and GPT-NeoX's split read 22
/// instructions a byte.
struct Runs {
    byte: u8,
    /// The shortest token's bytes.
    shortest: memchr::memmem::Finder<'static>,
    /// By the bytes of the run left (up to the longest token's length): the longest token
    /// that fits, as (its length, its index into `AddedVocab::tokens`).
    fits: Vec<Option<(usize, usize)>>,
}

impl Runs {
    /// `Runs` for `pats` (token `token[i]` for pattern `i`), if they are runs of one ASCII
    /// byte and no token has a flag.
    fn new(pats: &[String], token: &[usize], tokens: &[AddedToken]) -> Option<Runs> {
        let byte = *pats.first()?.as_bytes().first()?;
        let plain = |t: &AddedToken| !(t.single_word || t.lstrip || t.rstrip);
        if !byte.is_ascii()
            || !pats.iter().all(|p| p.bytes().all(|b| b == byte))
            || !token.iter().all(|&i| plain(&tokens[i]))
        {
            return None;
        }
        let longest = pats.iter().map(String::len).max()?;
        let mut fits = vec![None; longest + 1];
        for (p, &i) in pats.iter().zip(token) {
            fits[p.len()] = Some((p.len(), i));
        }
        for r in 1..=longest {
            if fits[r].is_none() {
                fits[r] = fits[r - 1];
            }
        }
        let shortest = pats.iter().map(String::len).min()?;
        let needle = vec![byte; shortest];
        Some(Runs {
            byte,
            shortest: memchr::memmem::Finder::new(&needle).into_owned(),
            fits,
        })
    }

    /// The matches in `s` that leftmost-longest matching finds, in order: (start, end,
    /// token index).
    fn each_match(&self, s: &[u8], mut f: impl FnMut(usize, usize, usize)) {
        let mut from = 0;
        while let Some(k) = self.shortest.find(&s[from..]) {
            let start = from + k;
            let end = s[start..]
                .iter()
                .position(|&b| b != self.byte)
                .map_or(s.len(), |n| start + n);
            let mut at = start;
            while let Some((len, ti)) = self.fits[(end - at).min(self.fits.len() - 1)] {
                f(at, at + len, ti);
                at += len;
            }
            from = end;
        }
    }
}

pub struct AddedVocab {
    pub tokens: Vec<AddedToken>,
    raw: Option<Trie>,
    normalized: Option<Trie>,
    word_start: Regex,
    word_end: Regex,
}

/// One cut of a text: an added token (index into `tokens`) or text for the model.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub token: Option<usize>,
    pub start: usize,
    pub end: usize,
}

#[derive(Clone, Copy)]
pub enum Which {
    Raw,
    Normalized,
}

fn flag(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

impl AddedVocab {
    /// The added tokens of a `tokenizer.json`, with the ids HF gives them when it loads the
    /// file (its `add_tokens`; the file's own `id` fields are not read): a token whose text
    /// is in the model's `vocab` (or added before) takes that id, any other the next id from
    /// the vocabulary's size on. A later token with the same text replaces the earlier one's
    /// flags. A token is special if any token with its text is.
    pub fn from_json(
        list: &Value,
        normalizer: Option<&Normalizer>,
        vocab: &rustc_hash::FxHashMap<String, u32>,
    ) -> Result<AddedVocab> {
        let mut by_content: rustc_hash::FxHashMap<String, u32> = Default::default();
        let mut by_id: std::collections::BTreeMap<u32, AddedToken> = Default::default();
        let mut specials: rustc_hash::FxHashSet<String> = Default::default();
        let mut next_id = u32::try_from(vocab.len()).map_err(|_| bad("vocab too large"))?;
        if let Some(items) = list.as_array() {
            for t in items {
                let content = t
                    .get("content")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("an added token without content"))?;
                if content.is_empty() {
                    continue;
                }
                let id = match by_content.get(content).or_else(|| vocab.get(content)) {
                    Some(&id) => id,
                    None => {
                        next_id += 1;
                        next_id - 1
                    }
                };
                let token = AddedToken {
                    id,
                    content: content.to_owned(),
                    single_word: flag(t, "single_word"),
                    lstrip: flag(t, "lstrip"),
                    rstrip: flag(t, "rstrip"),
                    normalized: flag(t, "normalized"),
                    special: flag(t, "special"),
                    verbatim: flag(t, "ferrotok_verbatim"),
                };
                if token.special {
                    specials.insert(token.content.clone());
                }
                by_content.insert(token.content.clone(), id);
                by_id.insert(id, token);
            }
        } else if !list.is_null() {
            return Err(bad("`added_tokens` is not a list"));
        }
        let mut tokens: Vec<AddedToken> = by_id.into_values().collect();
        for t in &mut tokens {
            t.special = specials.contains(&t.content);
        }
        let build = |normalized: bool| -> Result<Option<Trie>> {
            let mut pats = Vec::new();
            let mut token = Vec::new();
            for (i, t) in tokens.iter().enumerate() {
                if t.normalized != normalized {
                    continue;
                }
                let p = match normalizer {
                    Some(n) if normalized && !t.verbatim => n.normalize(&t.content),
                    _ => t.content.clone(),
                };
                if p.is_empty() {
                    continue;
                }
                // Two tokens (two ids) with one normalized text: HF 0.23 builds its trie from
                // a hash map, and which of them a match gives changes from load to load.
                if let Some(k) = pats.iter().position(|q| *q == p) {
                    let other: &AddedToken = &tokens[token[k]];
                    return Err(unsupported(&format!(
                        "added tokens {:?} and {:?} with the same normalized text {p:?} \
                         (HuggingFace picks either, at random)",
                        other.content, t.content
                    )));
                }
                pats.push(p);
                token.push(i);
            }
            if pats.is_empty() {
                return Ok(None);
            }
            let ac = crate::encode::special::searcher(&pats, MatchKind::LeftmostLongest)
                .ok_or_else(|| bad("added tokens: no automaton could be built for them"))?;
            let has_ordinary = token.iter().any(|&i| !tokens[i].special);
            let runs = Runs::new(&pats, &token, &tokens);
            Ok(Some(Trie {
                ac,
                token,
                has_ordinary,
                runs,
            }))
        };
        let raw = build(false)?;
        let normalized = build(true)?;
        let re = |p: &str| Regex::new(p).map_err(|e| bad(&e.to_string()));
        Ok(AddedVocab {
            raw,
            normalized,
            word_start: re(r"^\w")?,
            word_end: re(r"\w$")?,
            tokens,
        })
    }

    pub fn has(&self, which: Which) -> bool {
        match which {
            Which::Raw => self.raw.is_some(),
            Which::Normalized => self.normalized.is_some(),
        }
    }

    /// Whether `which` holds a token that is not special (matched even with no special
    /// token allowed).
    pub fn has_ordinary(&self, which: Which) -> bool {
        let trie = match which {
            Which::Raw => &self.raw,
            Which::Normalized => &self.normalized,
        };
        trie.as_ref().is_some_and(|t| t.has_ordinary)
    }

    /// Does the text of any token in `which` occur in `s`?
    pub fn occurs_in(&self, s: &str, which: Which) -> bool {
        let trie = match which {
            Which::Raw => &self.raw,
            Which::Normalized => &self.normalized,
        };
        trie.as_ref().is_some_and(|t| match &t.runs {
            Some(runs) => runs.shortest.find(s.as_bytes()).is_some(),
            None => t.ac.is_match(s),
        })
    }

    /// HF's `find_matches` (see the module docs). An empty `s` gives one empty text cut.
    pub fn split(&self, s: &str, which: Which, active: &dyn Fn(usize) -> bool) -> Vec<Cut> {
        let trie = match which {
            Which::Raw => &self.raw,
            Which::Normalized => &self.normalized,
        };
        let whole = Cut {
            token: None,
            start: 0,
            end: s.len(),
        };
        let Some(trie) = trie else {
            return vec![whole];
        };
        if s.is_empty() {
            return vec![whole];
        }
        let mut cuts = Vec::new();
        let mut start_offset = 0;
        if let Some(runs) = &trie.runs {
            // Flags are off: a match is a cut as it stands.
            runs.each_match(s.as_bytes(), |start, stop, ti| {
                if active(ti) {
                    push_match(&mut cuts, &mut start_offset, start, stop, ti);
                }
            });
        } else {
            self.split_matches(s, trie, active, &mut cuts, &mut start_offset);
        }
        if start_offset != s.len() {
            cuts.push(Cut {
                token: None,
                start: start_offset,
                end: s.len(),
            });
        }
        cuts
    }

    /// [`AddedVocab::split`]'s cuts from the automaton's matches, up to the last match's end
    /// (`start_offset`).
    fn split_matches(
        &self,
        s: &str,
        trie: &Trie,
        active: &dyn Fn(usize) -> bool,
        cuts: &mut Vec<Cut>,
        start_offset: &mut usize,
    ) {
        for m in trie.ac.find_iter(s) {
            let (mut start, mut stop) = (m.start(), m.end());
            let ti = trie.token[m.pattern().as_usize()];
            let t = &self.tokens[ti];
            if !active(ti) {
                continue;
            }
            if t.single_word {
                let start_space = start == 0 || !self.word_end.is_match(&s[..start]);
                let stop_space = stop == s.len() || !self.word_start.is_match(&s[stop..]);
                if !stop_space || !start_space {
                    continue;
                }
            }
            if t.lstrip {
                // HF: `\s*$` on the text before; the previous match may have taken it.
                let before = &s[..start];
                let trimmed = before.trim_end_matches(char::is_whitespace).len();
                start = trimmed.max(*start_offset);
            }
            if t.rstrip {
                let after = &s[stop..];
                stop += after.len() - after.trim_start_matches(char::is_whitespace).len();
            }
            push_match(cuts, start_offset, start, stop, ti);
        }
    }
}

/// Appends the cuts of a match of token `ti` at `start..stop`: the text since the last match
/// (`start_offset`), then the token, and moves `start_offset` past it. A match inside the
/// whitespace a previous match's rstrip took is empty, and HF drops empty splits: no token.
fn push_match(cuts: &mut Vec<Cut>, start_offset: &mut usize, start: usize, stop: usize, ti: usize) {
    if *start_offset < start {
        cuts.push(Cut {
            token: None,
            start: *start_offset,
            end: start,
        });
    }
    if start < stop {
        cuts.push(Cut {
            token: Some(ti),
            start,
            end: stop,
        });
    }
    *start_offset = stop;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;
    use serde_json::json;

    /// The cuts as (token, start, end).
    fn plain(cuts: &[Cut]) -> Vec<(Option<usize>, usize, usize)> {
        cuts.iter().map(|c| (c.token, c.start, c.end)).collect()
    }

    #[test]
    fn runs_of_one_byte_cut_as_the_automaton_cuts() {
        let mut rng = Rng(0x3C6E_F372_FE94_F82B);
        let mut fast = 0;
        for round in 0..200 {
            // Runs of a byte, of random lengths 1-12 (not all of them), as GPT-NeoX's spaces.
            let byte = *rng.pick(&[' ', '-']);
            let lens: Vec<usize> = (1..=12).filter(|_| rng.below(3) == 0).collect();
            if lens.is_empty() {
                continue;
            }
            let list: Vec<Value> = lens
                .iter()
                .map(|&n| json!({"content": byte.to_string().repeat(n), "special": false}))
                .collect();
            let v = AddedVocab::from_json(&json!(list), None, &Default::default()).unwrap();
            let trie = v.raw.as_ref().unwrap();
            assert!(trie.runs.is_some());
            fast += 1;
            let text: String = (0..1 + rng.below(80))
                .map(|_| *rng.pick(&[' ', ' ', ' ', '-', '-', 'a', '\n', 'é']))
                .collect();
            // Every token, and every other one (the rest kept as text).
            let every = |_: usize| true;
            let some = |ti: usize| (ti + round) % 2 == 0;
            for active in [&every as &dyn Fn(usize) -> bool, &some] {
                let (mut by_automaton, mut end) = (Vec::new(), 0);
                v.split_matches(&text, trie, active, &mut by_automaton, &mut end);
                if end != text.len() {
                    by_automaton.push(Cut {
                        token: None,
                        start: end,
                        end: text.len(),
                    });
                }
                let got = v.split(&text, Which::Raw, active);
                assert_eq!(plain(&got), plain(&by_automaton), "{lens:?} {text:?}");
            }
            let occurs = v.occurs_in(&text, Which::Raw);
            assert_eq!(occurs, trie.ac.is_match(&text), "{lens:?} {text:?}");
        }
        assert!(fast > 150);
        // A flag, or a second byte, keeps the automaton.
        let flagged = json!([{"content": "  "}, {"content": "   ", "lstrip": true}]);
        let v = AddedVocab::from_json(&flagged, None, &Default::default()).unwrap();
        assert!(v.raw.as_ref().unwrap().runs.is_none());
        let mixed = json!([{"content": "  "}, {"content": "--"}]);
        let v = AddedVocab::from_json(&mixed, None, &Default::default()).unwrap();
        assert!(v.raw.as_ref().unwrap().runs.is_none());
    }
}
