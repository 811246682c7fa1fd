//! SentencePiece's Unigram model (T5, XLM-R, ALBERT, mBART...) as HuggingFace's `Unigram`
//! runs it.
//!
//! Invariant: `encode_word(w)` appends HF's `Unigram::tokenize(w)` ids for a pre-token `w`,
//! and `encode_word_with_offsets` each id's byte range in `w`: the best-scoring segmentation
//! of `w` into tokens (HF's `encode_optimized`, after SentencePiece's `unigram_model.cc`): for
//! each char boundary, left to right, each token the trie finds there extends the best path
//! ending at that boundary, taking the path ending where it ends when there is none yet or
//! its score (the same `f64` sums, in the same order) is strictly greater; where no token is
//! exactly the char there, the unknown token covers the char at the lowest score less 10.
//! Read back from the end, consecutive unknown pieces are fused into one text; a piece's id is
//! its text's (the last id a text has, as HF's map keeps it), else, with `byte_fallback`, its
//! bytes' `<0xHH>` tokens if all exist, else the unknown token.
//!
//! A word read once is kept in the piece cache, as a BPE model's words are.
//!
//! With ferrotok's own key `ferrotok_sentencepiece` (a SentencePiece `.model` file read by
//! `python/ferrotok/sp_model.py`), the segmentation is instead `sentencepiece`'s own (0.2.2's
//! and later's `EncodeOptimized`, which HF's follows but for four things): the scores and
//! their sums are `f32`, so near-ties round as sentencepiece's do; where the best score ending
//! at a char passes ±100,000, it is taken off that score and those of the paths reached beyond
//! it, which go on from 0 (its reset, which keeps a long text's sums precise; 0.2.1 and
//! earlier had none, and compared `f64` candidates with `f32` sums); the trie holds the normal
//! pieces alone (not the `reserved` ones: control, unknown, byte); the unknown score is the
//! lowest *normal* score less 10. The word is the whole normalized text (no pre-tokenizer: a
//! sum runs across the text, and where it is rounded changes which of two near-equal
//! segmentations wins). A run of unknown pieces is one unknown token, or with byte fallback
//! each piece's bytes' tokens (`PopulateSentencePieceText`).

use super::normalizers::bad;
use super::sentencepiece_bpe::fallback_byte;
use crate::encode::bpe::piece_cache::{Local, PieceCache};
use crate::error::{Error, Result};
use crate::vocab::token_table::hash_bytes;
use rustc_hash::FxHashMap;

/// No id (the trie node holds no token; no byte token).
const NONE: u32 = u32::MAX;

/// HF's `K_UNK_PENALTY`: the unknown token scores the vocabulary's lowest score less this.
const UNK_PENALTY: f64 = 10.0;

/// A byte trie over the token texts: `common_prefix` walks it from a position. The root's
/// children sit in a table by byte (every walk starts there); every other node's children
/// are a short run of `(byte, child)` pairs, sorted, read in turn.
struct Trie {
    /// The root's child for each byte (`NONE`: none).
    root: Box<[u32; 256]>,
    /// Per node, where its children start in `edges` (and, one on, end).
    starts: Vec<u32>,
    edges: Vec<(u8, u32)>,
    /// Per node, the id of the token that ends there (`NONE` if none).
    token: Vec<u32>,
}

impl Trie {
    fn new<'a>(texts: impl Iterator<Item = (&'a [u8], u32)>) -> Trie {
        // Built as lists of children, then laid out flat.
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut token = vec![NONE];
        for (text, id) in texts {
            let mut node = 0usize;
            for &b in text {
                node = match children[node].iter().find(|&&(x, _)| x == b) {
                    Some(&(_, next)) => next as usize,
                    None => {
                        let next = token.len();
                        children[node].push((b, next as u32));
                        children.push(Vec::new());
                        token.push(NONE);
                        next
                    }
                };
            }
            token[node] = id;
        }
        let mut root = Box::new([NONE; 256]);
        for &(b, child) in &children[0] {
            root[b as usize] = child;
        }
        let mut starts = Vec::with_capacity(children.len() + 1);
        let mut edges = Vec::new();
        for mut list in children {
            starts.push(edges.len() as u32);
            list.sort_unstable();
            edges.extend(list);
        }
        starts.push(edges.len() as u32);
        Trie {
            root,
            starts,
            edges,
            token,
        }
    }

    /// The child of `node` for byte `b`.
    #[inline]
    fn child(&self, node: u32, b: u8) -> Option<u32> {
        if node == 0 {
            let c = self.root[b as usize];
            return (c != NONE).then_some(c);
        }
        let (s, e) = (self.starts[node as usize], self.starts[node as usize + 1]);
        self.edges[s as usize..e as usize]
            .iter()
            .find(|&&(x, _)| x == b)
            .map(|&(_, c)| c)
    }

    /// Calls `f(len, id)` for each token that `text` starts with, shortest first.
    #[inline]
    fn common_prefix(&self, text: &[u8], mut f: impl FnMut(usize, u32)) {
        let mut node = 0u32;
        for (i, &b) in text.iter().enumerate() {
            match self.child(node, b) {
                Some(next) => node = next,
                None => return,
            }
            let id = self.token[node as usize];
            if id != NONE {
                f(i + 1, id);
            }
        }
    }
}

/// The scores a path sums: per id its score, and the unknown piece's (the lowest score less
/// [`UNK_PENALTY`]).
enum Scores {
    /// HF's: `f64`, the lowest over all pieces.
    Hf(Vec<f64>, f64),
    /// sentencepiece's (with `ferrotok_sentencepiece`, see the module docs): `f32`, the
    /// lowest over normal pieces (the trie then holds those alone).
    Sp(Vec<f32>, f32),
}

pub struct Unigram {
    scores: Scores,
    /// Token text -> id (where a text repeats, its last id: HF's map).
    by_text: FxHashMap<Box<[u8]>, u32>,
    trie: Trie,
    unk: Option<u32>,
    /// The unknown token's text (empty without one).
    unk_text: String,
    /// With `byte_fallback`: the id of `<0xHH>` for each byte, or `NONE`.
    byte_ids: Option<Box<[u32; 256]>>,
    cache: PieceCache,
}

/// One node of the best path: where it starts, its token, the path's score to its end.
#[derive(Clone, Copy)]
struct Best<S> {
    score: S,
    start: usize,
    id: u32,
}

/// A score's type: `f64` as HF sums, `f32` as sentencepiece does.
trait Score: Copy + PartialOrd + std::ops::Add<Output = Self> + std::ops::SubAssign {
    const ZERO: Self;
    /// Whether a word is a whole text (sentencepiece's), whose table is given out where no
    /// token crosses a boundary, not laid out whole (see [`Unigram::best_path`]); a constant,
    /// so HF's instantiation has no windowing in its inner loop.
    const WHOLE_TEXT: bool;
    /// Whether a path's score is so far from 0 that sentencepiece takes it off the paths
    /// ahead, to keep `f32` sums precise (never, for HF's `f64` sums).
    fn past_reset(self) -> bool;
}

impl Score for f64 {
    const ZERO: f64 = 0.0;
    const WHOLE_TEXT: bool = false;
    fn past_reset(self) -> bool {
        false
    }
}

/// sentencepiece's `kScoreResetThreshold` (0.2.2's `EncodeOptimized`).
const SCORE_RESET: f32 = 100_000.0;

impl Score for f32 {
    const ZERO: f32 = 0.0;
    const WHOLE_TEXT: bool = true;
    fn past_reset(self) -> bool {
        !(-SCORE_RESET..=SCORE_RESET).contains(&self)
    }
}

const UNREACHED: usize = usize::MAX;

impl Unigram {
    /// The model of a `tokenizer.json`'s `model` object (`type` Unigram), and its vocabulary
    /// (token text -> id, the last id of a text that repeats).
    pub fn from_json(v: &serde_json::Value) -> Result<(Self, FxHashMap<String, u32>)> {
        use serde_json::Value;
        let list = v
            .get("vocab")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("Unigram model without a `vocab` list"))?;
        let mut pieces = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let pair = item.as_array().filter(|p| p.len() == 2);
            match pair.map(|p| (p[0].as_str(), p[1].as_f64())) {
                Some((Some(t), Some(score))) => pieces.push((t.to_owned(), score)),
                _ => {
                    return Err(bad(&format!(
                        "Unigram vocab entry {i} is not a [text, score] pair"
                    )))
                }
            }
        }
        let unk = match v.get("unk_id") {
            None | Some(Value::Null) => None,
            Some(x) => Some(
                x.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| (n as usize) < pieces.len())
                    .ok_or_else(|| bad("Unigram `unk_id` is not an index of the vocab"))?,
            ),
        };
        let byte_fallback = v
            .get("byte_fallback")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let reserved = match v.get("ferrotok_sentencepiece") {
            None | Some(Value::Null) => None,
            Some(sp) => {
                let bad_key = || {
                    bad("Unigram `ferrotok_sentencepiece` is not {\"reserved\": [ids of the vocab]}")
                };
                let list = sp
                    .get("reserved")
                    .and_then(Value::as_array)
                    .ok_or_else(bad_key)?;
                let ids = list
                    .iter()
                    .map(|x| {
                        x.as_u64()
                            .and_then(|n| u32::try_from(n).ok())
                            .filter(|&n| (n as usize) < pieces.len())
                            .ok_or_else(bad_key)
                    })
                    .collect::<Result<Vec<u32>>>()?;
                if unk.is_none() {
                    return Err(bad("Unigram `ferrotok_sentencepiece` without an `unk_id`"));
                }
                Some(ids)
            }
        };
        let model = Self::new(&pieces, unk, byte_fallback, reserved.as_deref())?;
        let vocab = model
            .by_text
            .iter()
            .map(|(t, &id)| (String::from_utf8_lossy(t).into_owned(), id))
            .collect();
        Ok((model, vocab))
    }

    /// The model of `pieces` (text, score), HF's, or sentencepiece's where `reserved` (the
    /// ids that are no normal piece) is given.
    pub fn new(
        pieces: &[(String, f64)],
        unk: Option<u32>,
        byte_fallback: bool,
        reserved: Option<&[u32]>,
    ) -> Result<Self> {
        if pieces.is_empty() {
            return Err(bad("the Unigram model's vocab is empty"));
        }
        if u32::try_from(pieces.len()).is_err() {
            return Err(bad("the Unigram model's vocab is too large"));
        }
        let mut by_text: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
        for (id, (t, _)) in pieces.iter().enumerate() {
            by_text.insert(t.as_bytes().into(), id as u32);
        }
        // sentencepiece's: `f32` scores, the lowest over normal pieces, and those alone in
        // the trie.
        let mut normal = vec![true; pieces.len()];
        let scores = match reserved {
            None => {
                let lowest = pieces.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
                Scores::Hf(pieces.iter().map(|p| p.1).collect(), lowest - UNK_PENALTY)
            }
            Some(reserved) => {
                for &id in reserved {
                    if let Some(n) = normal.get_mut(id as usize) {
                        *n = false;
                    }
                }
                let scores: Vec<f32> = pieces.iter().map(|&(_, s)| s as f32).collect();
                let lowest = (scores.iter().zip(&normal))
                    .filter(|&(_, &n)| n)
                    .map(|(&s, _)| s)
                    .fold(f32::MAX, f32::min);
                Scores::Sp(scores, lowest - UNK_PENALTY as f32)
            }
        };
        // The trie's token is the text's id in the map (its last), as HF looks it up; laid
        // out in id order, so the same from run to run.
        let mut texts: Vec<(&[u8], u32)> = by_text
            .iter()
            .filter(|(t, &id)| !t.is_empty() && normal[id as usize])
            .map(|(t, &id)| (&t[..], id))
            .collect();
        texts.sort_unstable_by_key(|&(_, id)| id);
        let trie = Trie::new(texts.into_iter());
        let byte_ids = byte_fallback.then(|| {
            let mut ids = Box::new([NONE; 256]);
            for (t, &id) in &by_text {
                if let Some(b) = std::str::from_utf8(t).ok().and_then(fallback_byte) {
                    ids[b as usize] = id;
                }
            }
            ids
        });
        let unk_text = unk.map_or(String::new(), |u| pieces[u as usize].0.clone());
        Ok(Unigram {
            scores,
            unk_text,
            by_text,
            trie,
            unk,
            byte_ids,
            cache: PieceCache::new(),
        })
    }

    /// Whether this is sentencepiece's arithmetic (see the module docs), not HF's.
    fn sentencepiece(&self) -> bool {
        matches!(self.scores, Scores::Sp(..))
    }

    pub fn cache(&self) -> Local<'_> {
        self.cache.local()
    }

    pub fn unk_id(&self) -> Option<u32> {
        self.unk
    }

    /// The unknown token's text in the vocabulary (its place's, as HF names the id).
    pub fn unk_text(&self) -> &str {
        &self.unk_text
    }

    fn missing_unk() -> Error {
        Error::Input(
            "Unigram: a char has no token and the model has no unknown token (HF fails the \
             same text with MissingUnkId)"
                .into(),
        )
    }

    /// Appends the ids of pre-token `w` (see the module docs).
    #[inline]
    pub fn encode_word(&self, w: &str, cache: &mut Local<'_>, out: &mut Vec<u32>) -> Result<()> {
        if self.sentencepiece() {
            // The word is a whole text: no cache would hold it.
            return self.segment(w, |id, _, _| out.push(id));
        }
        let b = w.as_bytes();
        let h = hash_bytes(b);
        if cache.get(b, h, out) {
            return Ok(());
        }
        let at = out.len();
        self.segment(w, |id, _, _| out.push(id))?;
        cache.put(b, h, &out[at..]);
        Ok(())
    }

    /// [`Unigram::encode_word`] with each id's byte range in `w`.
    pub fn encode_word_with_offsets(
        &self,
        w: &str,
        out: &mut Vec<(u32, usize, usize)>,
    ) -> Result<()> {
        self.segment(w, |id, a, b| out.push((id, a, b)))
    }

    /// HF's `Unigram::tokenize` (or sentencepiece's encoding): calls `emit(id, start, end)`
    /// for each token of `w`.
    fn segment(&self, w: &str, mut emit: impl FnMut(u32, usize, usize)) -> Result<()> {
        let b = w.as_bytes();
        if b.is_empty() {
            return Ok(());
        }
        // A run of unknown pieces not yet emitted (it may go on): its start and end.
        let mut run: Option<(usize, usize)> = None;
        let mut token = |a: usize, e: usize, id: u32| -> Result<()> {
            if Some(id) == self.unk {
                run = Some((run.map_or(a, |r| r.0), e));
                return Ok(());
            }
            if let Some((ra, re)) = run.take() {
                self.emit_piece(b, ra, re, self.unk_or_error()?, &mut emit)?;
            }
            self.emit_piece(b, a, e, id, &mut emit)
        };
        match &self.scores {
            Scores::Hf(scores, unk_score) => self.best_path(w, scores, *unk_score, &mut token)?,
            Scores::Sp(scores, unk_score) => self.best_path(w, scores, *unk_score, &mut token)?,
        }
        if let Some((ra, re)) = run {
            self.emit_piece(b, ra, re, self.unk_or_error()?, &mut emit)?;
        }
        Ok(())
    }

    fn unk_or_error(&self) -> Result<u32> {
        self.unk.ok_or_else(Self::missing_unk)
    }

    /// Emits the ids of the path's token `b[a..e]` (`id`: its piece, or the unknown piece
    /// for a run of them).
    fn emit_piece(
        &self,
        b: &[u8],
        a: usize,
        e: usize,
        id: u32,
        emit: &mut impl FnMut(u32, usize, usize),
    ) -> Result<()> {
        let text = &b[a..e];
        if self.sentencepiece() {
            // sentencepiece's ids: the piece's, or for an unknown run its bytes' tokens (each
            // char's, which are the run's) with byte fallback.
            match &self.byte_ids {
                Some(bytes) if Some(id) == self.unk => {
                    let at = |x: u8| bytes[x as usize];
                    if text.iter().any(|&x| at(x) == NONE) {
                        return Err(bad("a byte fallback model without a byte's piece"));
                    }
                    text.iter().for_each(|&x| emit(at(x), a, e));
                }
                _ => emit(id, a, e),
            }
            return Ok(());
        }
        // HF's: the id of the token's text, else its bytes' tokens, else the unknown piece.
        if let Some(&id) = self.by_text.get(text) {
            emit(id, a, e);
            return Ok(());
        }
        if let Some(bytes) = &self.byte_ids {
            if text.iter().all(|&x| bytes[x as usize] != NONE) {
                text.iter().for_each(|&x| emit(bytes[x as usize], a, e));
                return Ok(());
            }
        }
        emit(self.unk_or_error()?, a, e);
        Ok(())
    }

    /// Calls `token(start, end, id)` for each token of the best path through `w` with the
    /// scores `scores` (see the module docs), in order.
    ///
    /// With sentencepiece's arithmetic (where the word is a whole text): where no token
    /// found so far crosses a char boundary, every path beyond it passes there, so the path
    /// up to it is final: it is read back and given out, and only the boundary's node is
    /// kept. The table then holds the stretch since the last such boundary.
    fn best_path<S: Score>(
        &self,
        w: &str,
        scores: &[S],
        unk_score: S,
        token: &mut impl FnMut(usize, usize, u32) -> Result<()>,
    ) -> Result<()> {
        let b = w.as_bytes();
        let unreached = Best {
            score: S::ZERO,
            start: UNREACHED,
            id: 0,
        };
        // `best[i - base]`: the best path ending at byte `i`, from `base` on. A word of HF's
        // is short: its table is laid out whole, and read back once.
        let window = S::WHOLE_TEXT;
        let mut best = vec![unreached; if window { 1 } else { b.len() + 1 }];
        let mut base = 0;
        let mut back = Vec::new();
        let mut start = 0;
        // The furthest end of a token seen so far.
        let mut frontier = 0;
        for (char_start, c) in w.char_indices() {
            debug_assert_eq!(char_start, start);
            if window && frontier <= start && start > base {
                self.read_back(&best, base, start, &mut back)?;
                back.iter()
                    .rev()
                    .try_for_each(|&(a, e, id)| token(a, e, id))?;
                best.drain(..start - base);
                base = start;
            }
            let at = start - base;
            let mut here = best.get(at).ok_or_else(Self::missing_unk)?.score;
            if here.past_reset() {
                // The reset (see the module docs): every path ending here or beyond is one
                // of this one's continuations, or will be compared with one.
                for (i, node) in best.iter_mut().enumerate().skip(at) {
                    if i == at || node.start != UNREACHED {
                        node.score -= here;
                    }
                }
                here = S::ZERO;
            }
            let char_len = c.len_utf8();
            let mut single = false;
            // The node at `end` for the path through `here`, grown to hold it: `None` where
            // that path does not beat the one it has.
            let node = |best: &mut Vec<Best<S>>, end: usize, score: S| {
                let i = end - base;
                if window && best.len() <= i {
                    best.resize(i + 1, unreached);
                }
                let target = &mut best[i];
                (target.start == UNREACHED || score > target.score).then_some(i)
            };
            self.trie.common_prefix(&b[start..], |len, id| {
                if window {
                    frontier = frontier.max(start + len);
                }
                let score = scores[id as usize] + here;
                if let Some(i) = node(&mut best, start + len, score) {
                    best[i] = Best { score, start, id };
                }
                single |= len == char_len;
            });
            if !single {
                if window {
                    frontier = frontier.max(start + char_len);
                }
                let score = unk_score + here;
                if let Some(i) = node(&mut best, start + char_len, score) {
                    let id = self.unk_or_error()?;
                    best[i] = Best { score, start, id };
                }
            }
            start += char_len;
        }
        self.read_back(&best, base, b.len(), &mut back)?;
        back.iter()
            .rev()
            .try_for_each(|&(a, e, id)| token(a, e, id))
    }

    /// The best path from `base` to `end` in `best` (see [`Unigram::best_path`]), read back
    /// from `end` into `out`: (start, end, id) per token, a run of unknown pieces as one
    /// (a text with many chars the model lacks would else give out each alone).
    fn read_back<S: Score>(
        &self,
        best: &[Best<S>],
        base: usize,
        mut end: usize,
        out: &mut Vec<(usize, usize, u32)>,
    ) -> Result<()> {
        out.clear();
        while end > base {
            match best.get(end - base) {
                Some(node) if node.start != UNREACHED => {
                    let unk = Some(node.id) == self.unk;
                    match out.last_mut() {
                        Some(last) if unk && Some(last.2) == self.unk => last.0 = node.start,
                        _ => out.push((node.start, end, node.id)),
                    }
                    end = node.start;
                }
                // Not reached: every char boundary is (a token or the unknown token ends there).
                _ => return Err(Self::missing_unk()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(pieces: &[(&str, f64)], unk: Option<u32>, fallback: bool) -> Unigram {
        let pieces: Vec<(String, f64)> = pieces.iter().map(|&(t, s)| (t.into(), s)).collect();
        Unigram::new(&pieces, unk, fallback, None).unwrap()
    }

    fn ids(m: &Unigram, w: &str) -> Vec<(u32, usize, usize)> {
        let mut out = Vec::new();
        m.encode_word_with_offsets(w, &mut out).unwrap();
        let mut plain = Vec::new();
        m.encode_word(w, &mut Local::none(), &mut plain).unwrap();
        assert_eq!(plain, out.iter().map(|x| x.0).collect::<Vec<_>>());
        out
    }

    #[test]
    fn hfs_doc_example() {
        // HF's `Unigram::encode` doc test: "abcdacdxx" -> abcd, a, cd, xx (x unknown, fused).
        let m = model(
            &[
                ("<unk>", 0.0),
                ("a", 0.0),
                ("b", 0.0),
                ("c", 0.0),
                ("d", 0.0),
                ("cd", 1.0),
                ("ab", 2.0),
                ("abc", 5.0),
                ("abcd", 10.0),
            ],
            Some(0),
            false,
        );
        assert_eq!(
            ids(&m, "abcdacdxx"),
            [(8, 0, 4), (1, 4, 5), (5, 5, 7), (0, 7, 9)]
        );
    }

    #[test]
    fn ties_keep_the_earlier_start_and_byte_fallback() {
        // "ab" as a+b (-2) or ab (-2): a tie, and the path that reached the end first (ab,
        // from 0, before b from 1) stays.
        let m = model(
            &[("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("ab", -2.0)],
            Some(0),
            false,
        );
        assert_eq!(ids(&m, "ab"), [(3, 0, 2)]);
        // With byte fallback an unknown char is its bytes' tokens, all with its offsets.
        let mut pieces = vec![("<unk>", 0.0), ("a", -1.0)];
        let names: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
        pieces.extend(names.iter().map(|n| (n.as_str(), -5.0)));
        let m = model(&pieces, Some(0), true);
        let e = 2 + 0xC3;
        assert_eq!(ids(&m, "aé"), [(1, 0, 1), (e, 1, 3), (2 + 0xA9, 1, 3)]);
    }

    /// sentencepiece's arithmetic: `f32` sums, where a near-tie rounds to a tie (which keeps
    /// the path found first) and HF's `f64` sums keep it apart; reserved pieces outside the
    /// trie; a run of unknown chars one unknown token, or with byte fallback their bytes.
    #[test]
    fn sentencepieces_arithmetic_and_reserved_pieces() {
        let sp = |pieces: &[(&str, f64)], reserved: &[u32], fallback: bool| {
            let pieces: Vec<(String, f64)> = pieces.iter().map(|&(t, s)| (t.into(), s)).collect();
            Unigram::new(&pieces, Some(0), fallback, Some(reserved)).unwrap()
        };
        // a + b is -1 + 2^-25: above ab's -1 in f64, -1 itself once rounded to f32.
        let b = -(0.5 - 2f64.powi(-25));
        let pieces = [("<unk>", 0.0), ("a", -0.5), ("b", b), ("ab", -1.0)];
        assert_eq!(
            ids(&model(&pieces, Some(0), false), "ab"),
            [(1, 0, 1), (2, 1, 2)]
        );
        assert_eq!(ids(&sp(&pieces, &[0], false), "ab"), [(3, 0, 2)]);
        // Past -100,000 sentencepiece takes the score off (its reset): x + y (-2) then beats
        // xy (-2.02), which in `f32` sums after z's -1,000,000 would tie it and win.
        let pieces = [
            ("<unk>", 0.0),
            ("z", -1e6),
            ("x", -1.0),
            ("y", -1.0),
            ("xy", -2.02),
        ];
        assert_eq!(
            ids(&sp(&pieces, &[0], false), "zxy"),
            [(1, 0, 1), (2, 1, 2), (3, 2, 3)]
        );
        // `<s>` is a control piece: in HF's trie, not in sentencepiece's.
        let pieces = [
            ("<unk>", 0.0),
            ("<s>", 0.0),
            ("<", -1.0),
            ("s", -1.0),
            (">", -1.0),
        ];
        assert_eq!(ids(&model(&pieces, Some(0), false), "<s>"), [(1, 0, 3)]);
        let m = sp(&pieces, &[0, 1], false);
        assert_eq!(ids(&m, "<s>"), [(2, 0, 1), (3, 1, 2), (4, 2, 3)]);
        assert_eq!(ids(&m, "<xy"), [(2, 0, 1), (0, 1, 3)]);
        // With byte fallback, an unknown run is its bytes' tokens.
        let names: Vec<String> = (0..=255u8).map(|b| format!("<0x{b:02X}>")).collect();
        let mut pieces = vec![("<unk>", 0.0), ("a", -1.0)];
        pieces.extend(names.iter().map(|n| (n.as_str(), 0.0)));
        let reserved: Vec<u32> = (0..=256).filter(|&i| i != 1).collect();
        let m = sp(&pieces, &reserved, true);
        let ids_of = |w: &str| ids(&m, w).into_iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(ids_of("a\u{e9}x"), [1, 2 + 0xC3, 2 + 0xA9, 2 + b'x' as u32]);
        // The byte pieces' own texts are no piece of the text.
        assert_eq!(ids_of("<0x41>").len(), 6);
    }

    #[test]
    fn a_missing_unknown_token_is_an_error_only_where_needed() {
        let m = model(&[("a", -1.0)], None, false);
        assert_eq!(ids(&m, "aa"), [(0, 0, 1), (0, 1, 2)]);
        let mut out = Vec::new();
        assert!(m.encode_word_with_offsets("ab", &mut out).is_err());
    }
}
