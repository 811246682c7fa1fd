//! Fused scanners: whole pre-tokenizer `Sequence`s of known models run as one pass of
//! hand-written code instead of step by step.
//!
//! Invariant: when [`Fused::recognise`] returns a scanner for a `pre_tokenizer` object,
//! `Fused::for_each_piece(seg, f)` calls `f(start, end)` with exactly the pieces (byte ranges
//! of `seg`, in order, none empty, none with a virtual space) that the generic interpreter
//! (`PreTokenizer::pieces` without fusion) makes of `seg` for that object. Anything else is
//! not recognised, and the generic interpreter runs.
//!
//! Recognition is exact: the `Sequence`'s steps, in order, with their kinds, behaviors,
//! flags (read with the generic reader's defaults) and pattern strings equal to the ones a
//! scanner was written for; then the character classes each scanner tests are read from the
//! patterns' own syntax trees (regex-syntax, as the regex path reads them) and checked to
//! have the shape the scanner's proof assumes, else the file is not recognised either.
//!
//! Why fusing is sound, in general: a step that isolates (a `Split` with `Isolated`, no
//! `invert`; `ByteLevel` without prefix space) cuts each piece at its matches' starts and
//! ends and keeps every part, so a Sequence of them cuts the text at the union of every
//! step's cuts, each step's cuts taken within the pieces the steps before it left. A step
//! whose cuts depend only on neighbouring chars (a `Contiguous` class run, a class char
//! isolated) cuts the same wherever the earlier cuts lie. Each scanner's file argues the
//! rest for its steps.
//!
//! - [`bert`]: BERT's `BertPreTokenizer` (whitespace removed, punctuation isolated);
//! - [`bloom`]: BLOOM's Split and ByteLevel;
//! - [`deepseek`]: DeepSeek LLM's five Splits, Digits and ByteLevel;
//! - [`deepseek_v3`]: DeepSeek V3's three Splits and ByteLevel;
//! - [`falcon`]: Falcon's Punctuation, ByteLevel (GPT-2's regex), Digits and Split;
//! - [`starcoder`]: StarCoder's Digits and ByteLevel (GPT-2's regex);
//!
//! and the loop all but BERT's run ([`window`]: a 64-byte ASCII window where it can, each
//! scanner's char path elsewhere), over the class table of [`table`].

pub mod bert;
pub mod bloom;
pub mod deepseek;
pub mod deepseek_v3;
pub mod falcon;
pub mod starcoder;
pub mod table;
pub mod window;

use crate::error::Result;
use regex_syntax::hir::{Class, ClassUnicode, Hir, HirKind};
use serde_json::Value;

pub enum Fused {
    Bert(bert::Bert),
    Bloom(bloom::Bloom),
    DeepSeek(deepseek::DeepSeek),
    DeepSeekV3(deepseek_v3::DeepSeekV3),
    Falcon(falcon::Falcon),
    StarCoder(starcoder::StarCoder),
}

impl Fused {
    /// The fused scanner for this `pre_tokenizer` object, if it is exactly one a scanner was
    /// written for (see the module docs).
    pub fn recognise(v: &Value) -> Result<Option<Fused>> {
        if let Some(b) = bert::Bert::recognise(v) {
            return Ok(Some(Fused::Bert(b)));
        }
        let Some(steps) = sequence(v) else {
            return Ok(None);
        };
        if let Some(b) = bloom::Bloom::recognise(steps)? {
            return Ok(Some(Fused::Bloom(b)));
        }
        if let Some(d) = deepseek::DeepSeek::recognise(steps)? {
            return Ok(Some(Fused::DeepSeek(d)));
        }
        if let Some(d) = deepseek_v3::DeepSeekV3::recognise(steps)? {
            return Ok(Some(Fused::DeepSeekV3(d)));
        }
        if let Some(f) = falcon::Falcon::recognise(steps)? {
            return Ok(Some(Fused::Falcon(f)));
        }
        if let Some(s) = starcoder::StarCoder::recognise(steps)? {
            return Ok(Some(Fused::StarCoder(s)));
        }
        Ok(None)
    }

    /// The path's name for `Pipeline::paths`: `"scan:<model>"`.
    pub fn name(&self) -> &'static str {
        match self {
            Fused::Bert(_) => "scan:bert",
            Fused::Bloom(_) => "scan:bloom",
            Fused::DeepSeek(_) => "scan:deepseek-llm",
            Fused::DeepSeekV3(_) => "scan:deepseek-v3",
            Fused::Falcon(_) => "scan:falcon",
            Fused::StarCoder(_) => "scan:starcoder",
        }
    }

    /// Whether every cut of `encode::pretok::file_cuts`'s rule is a piece boundary of this
    /// scanner whatever the text either side, the pieces before it those of the text before
    /// it alone (`PreTokenizer::keeps_file_cuts`). The cut lies just after a `"\n"` whose
    /// neighbours x (before) and a (after) are not whitespace, a not `/`. As each scanner
    /// makes exactly the generic interpreter's pieces, it is argued on the steps:
    /// - BERT: whitespace is dropped and cut around, the `"\n"` with it.
    /// - Not BLOOM: a `"\n"` and the punctuation after it are one gap, one piece.
    /// - DeepSeek LLM: step 1 (`[\r\n]`) isolates every newline, and the steps after it
    ///   run on each piece alone.
    /// - DeepSeek V3: no newline is N or K, so steps 1-2 cut nothing across it. In step 3's
    ///   regex, the match that starts at the `"\n"` is `\s*[\r\n]+` (alternatives 1-3 need
    ///   an A, X, LM, space or PS char there), and it is the `"\n"` alone, a being no
    ///   `\s`; the one match that can reach the `"\n"` from before, ` ?[PS]+[\r\n]*` after
    ///   a PS char x, ends after it for the same reason; and no match before those reads
    ///   past x (each of its runs stops at the `"\n"`, no `\s` run reaches back over x).
    /// - Falcon and StarCoder: step 1 (Punctuation, Digits) cuts where a class changes, and
    ///   the `"\n"` is in neither class; inside its piece GPT-2's regex cuts on both sides
    ///   of it as the rule's argument for r50k shows (whether x is in that piece or not, the
    ///   `"\n"` is then `\s+`'s match alone), and the later steps only cut further.
    pub fn keeps_file_cuts(&self) -> bool {
        match self {
            Fused::Bloom(_) => false,
            Fused::Bert(_)
            | Fused::DeepSeek(_)
            | Fused::DeepSeekV3(_)
            | Fused::Falcon(_)
            | Fused::StarCoder(_) => true,
        }
    }

    /// Calls `f(start, end)` with each piece of `seg`, in order (see the module docs).
    #[inline]
    pub fn for_each_piece(
        &self,
        seg: &str,
        f: impl FnMut(usize, usize) -> Result<()>,
    ) -> Result<()> {
        match self {
            Fused::Bert(b) => b.for_each_piece(seg, f),
            Fused::Bloom(b) => b.for_each_piece(seg, f),
            Fused::DeepSeek(d) => d.for_each_piece(seg, f),
            Fused::DeepSeekV3(d) => d.for_each_piece(seg, f),
            Fused::Falcon(s) => s.for_each_piece(seg, f),
            Fused::StarCoder(s) => s.for_each_piece(seg, f),
        }
    }

    /// [`Fused::for_each_piece`] into `sink`, which the window scanners hand a window's pieces
    /// at once.
    #[inline]
    pub fn scan(&self, seg: &str, sink: &mut impl window::Cuts) -> Result<()> {
        match self {
            Fused::Bert(b) => b.for_each_piece(seg, |a, z| sink.piece(a, z)),
            Fused::Bloom(b) => b.scan(seg, sink),
            Fused::DeepSeek(d) => d.scan(seg, sink),
            Fused::DeepSeekV3(d) => d.scan(seg, sink),
            Fused::Falcon(s) => s.scan(seg, sink),
            Fused::StarCoder(s) => s.scan(seg, sink),
        }
    }
}

/// The names of the fused scanners ([`Fused::name`]), each with a [`known_sequence`].
pub const NAMES: [&str; 6] = [
    "scan:bert",
    "scan:bloom",
    "scan:deepseek-llm",
    "scan:deepseek-v3",
    "scan:falcon",
    "scan:starcoder",
];

/// The `pre_tokenizer` object the scanner named `name` was written for, as the model's file
/// writes it: what the unit tests and the `fused_scanners` fuzz target hold each scanner to
/// (its pieces against the generic interpreter's).
pub fn known_sequence(name: &str) -> Option<Value> {
    use serde_json::json;
    let split = |p: &str| {
        json!({"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated",
               "invert": false})
    };
    let byte_level = |regex: bool| {
        json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
               "use_regex": regex})
    };
    let steps = match name {
        "scan:bert" => return Some(json!({"type": "BertPreTokenizer"})),
        "scan:bloom" => vec![split(bloom::PATTERN), byte_level(false)],
        "scan:deepseek-llm" => {
            use deepseek::{CJK, LETTERS, NEWLINE, PUNCT, TRAILING_SPACE};
            vec![
                split(NEWLINE),
                split(LETTERS),
                split(PUNCT),
                split(TRAILING_SPACE),
                split(CJK),
                json!({"type": "Digits", "individual_digits": true}),
                byte_level(false),
            ]
        }
        "scan:deepseek-v3" => {
            use deepseek_v3::{DIGITS, KANA_HAN, WORDS};
            vec![
                split(DIGITS),
                split(KANA_HAN),
                split(WORDS),
                byte_level(false),
            ]
        }
        "scan:falcon" => vec![
            json!({"type": "Punctuation", "behavior": "Contiguous"}),
            byte_level(true),
            json!({"type": "Digits", "individual_digits": false}),
            split(falcon::THREE_DIGITS),
        ],
        "scan:starcoder" => vec![
            json!({"type": "Digits", "individual_digits": true}),
            byte_level(true),
        ],
        _ => return None,
    };
    Some(json!({"type": "Sequence", "pretokenizers": steps}))
}

/// The steps of a `Sequence` pre-tokenizer.
fn sequence(v: &Value) -> Option<&[Value]> {
    if v.get("type")?.as_str()? != "Sequence" {
        return None;
    }
    Some(v.get("pretokenizers")?.as_array()?.as_slice())
}

/// A boolean field, with the generic reader's default when absent.
fn flag(v: &Value, k: &str, default: bool) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(default)
}

fn kind(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str)
}

/// Whether `v` is `Split` on regex `pattern`, `Isolated`, not inverted.
fn is_isolating_split(v: &Value, pattern: &str) -> bool {
    kind(v) == Some("Split")
        && v.get("pattern")
            .and_then(|p| p.get("Regex"))
            .and_then(Value::as_str)
            == Some(pattern)
        && v.get("pattern").and_then(|p| p.get("String")).is_none()
        && v.get("behavior").and_then(Value::as_str) == Some("Isolated")
        && !flag(v, "invert", false)
}

/// Whether `v` is `Digits` with `individual_digits` as given.
fn is_digits(v: &Value, individual: bool) -> bool {
    kind(v) == Some("Digits") && flag(v, "individual_digits", false) == individual
}

/// Whether `v` is `ByteLevel` without prefix space, with or without its regex.
fn is_byte_level(v: &Value, use_regex: bool) -> bool {
    kind(v) == Some("ByteLevel")
        && !flag(v, "add_prefix_space", true)
        && flag(v, "use_regex", true) == use_regex
}

/// The syntax tree of a `Split` regex as the regex path reads it (Oniguruma syntax first
/// rewritten by `onig_to_fancy`), or `None` if it does not parse.
fn hir_of(pattern: &str) -> Option<Hir> {
    let fancy = super::pre_tokenizers::onig_to_fancy(pattern);
    regex_syntax::ParserBuilder::new()
        .build()
        .parse(&fancy)
        .ok()
}

/// The class of a one-char class node.
fn class(h: &Hir) -> Option<&ClassUnicode> {
    match h.kind() {
        HirKind::Class(Class::Unicode(c)) => Some(c),
        _ => None,
    }
}

/// The class of `C{min,max}`, greedy.
fn repeated_class(h: &Hir, min: u32, max: Option<u32>) -> Option<&ClassUnicode> {
    match h.kind() {
        HirKind::Repetition(r) if r.min == min && r.max == max && r.greedy => class(&r.sub),
        _ => None,
    }
}

/// `(S, X)` of a pattern read as `S?X+` (greedy, one-char classes S and X).
fn opt_then_run(h: &Hir) -> Option<(&ClassUnicode, &ClassUnicode)> {
    match h.kind() {
        HirKind::Concat(v) if v.len() == 2 => Some((
            repeated_class(&v[0], 0, Some(1))?,
            repeated_class(&v[1], 1, None)?,
        )),
        _ => None,
    }
}

/// Each scanner's known Sequence is recognised as that scanner, and a file with anything
/// else in it is not (unit tests of each scanner try their own variants).
#[test]
fn each_known_sequence_is_its_scanners() {
    use crate::pipeline::pre_tokenizers::PreTokenizer;
    for name in NAMES {
        let v = known_sequence(name).unwrap();
        assert_eq!(
            PreTokenizer::from_json(&v).unwrap().splitter_kinds(),
            [name]
        );
        let mut longer = serde_json::json!({"type": "Sequence", "pretokenizers": [v]});
        longer["pretokenizers"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"type": "Digits", "individual_digits": false}));
        let kinds = PreTokenizer::from_json(&longer).unwrap().splitter_kinds();
        assert!(!kinds.contains(&name), "{name}: {kinds:?}");
    }
    assert!(known_sequence("scan:other").is_none());
}

/// A differential test's inputs: `n` strings of up to `max_len` chars from `alphabet`
/// (each char repeated a few times now and then, for runs), from a fixed seed.
#[cfg(test)]
pub(crate) fn random_texts(alphabet: &[&str], n: usize, max_len: usize) -> Vec<String> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|_| {
            let len = (next() % (max_len as u64 + 1)) as usize;
            let mut s = String::new();
            while s.chars().count() < len {
                let a = alphabet[(next() % alphabet.len() as u64) as usize];
                let reps = if next() % 4 == 0 { 1 + next() % 4 } else { 1 };
                for _ in 0..reps {
                    s.push_str(a);
                }
            }
            s
        })
        .collect()
}

/// A pre-tokenizer's pieces as byte ranges, from `pieces` (the collecting way in), with no
/// virtual space (none of the fused pipelines adds one).
#[cfg(test)]
fn cut(pt: &crate::pipeline::pre_tokenizers::PreTokenizer, text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    pt.pieces(text, &mut out).unwrap();
    assert!(out.iter().all(|p| !p.space));
    out.iter().map(|p| (p.start, p.end)).collect()
}

/// The same from `for_each_piece` (the streaming way in, which `encode_into` takes).
#[cfg(test)]
fn walked(pt: &crate::pipeline::pre_tokenizers::PreTokenizer, text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    pt.for_each_piece(text, &mut |p| {
        out.push((p.start, p.end));
        Ok(())
    })
    .unwrap();
    out
}

/// Asserts that `fused` cuts `text` as `generic` does, both ways in.
#[cfg(test)]
pub(crate) fn assert_agree(
    fused: &crate::pipeline::pre_tokenizers::PreTokenizer,
    generic: &crate::pipeline::pre_tokenizers::PreTokenizer,
    text: &str,
) {
    let want = cut(generic, text);
    assert_eq!(cut(fused, text), want, "{text:?}");
    assert_eq!(walked(fused, text), want, "{text:?}");
    assert_eq!(walked(generic, text), want, "{text:?}");
}

/// The fused pre-tokenizer of the scanner `name` ([`known_sequence`]), checked to be that
/// scanner, and the generic interpreter of the same object.
#[cfg(test)]
pub(crate) fn fused_and_generic(
    name: &str,
) -> (
    crate::pipeline::pre_tokenizers::PreTokenizer,
    crate::pipeline::pre_tokenizers::PreTokenizer,
) {
    use crate::pipeline::pre_tokenizers::PreTokenizer;
    let v = known_sequence(name).unwrap();
    let fused = PreTokenizer::from_json(&v).unwrap();
    assert_eq!(fused.splitter_kinds(), [name]);
    (fused, PreTokenizer::from_json_generic(&v).unwrap())
}

/// [`assert_agree`] on each of `texts`, for the scanner `name`.
#[cfg(test)]
pub(crate) fn assert_agree_on<T: AsRef<str>>(name: &str, texts: impl IntoIterator<Item = T>) {
    let (fused, generic) = fused_and_generic(name);
    for t in texts {
        assert_agree(&fused, &generic, t.as_ref());
    }
}

/// [`assert_agree`] on 20,000 [`random_texts`] over `chars` plus one char every `step` code
/// points from U+0080 to U+2FFFF (for the classes a hand-made list misses).
#[cfg(test)]
pub(crate) fn assert_agree_on_random_texts(
    fused: &crate::pipeline::pre_tokenizers::PreTokenizer,
    generic: &crate::pipeline::pre_tokenizers::PreTokenizer,
    chars: &[&str],
    step: usize,
) {
    let sampled: Vec<String> = (0x80u32..0x3_0000)
        .step_by(step)
        .filter_map(char::from_u32)
        .map(String::from)
        .collect();
    let mut alphabet: Vec<&str> = chars.to_vec();
    alphabet.extend(sampled.iter().map(String::as_str));
    for t in random_texts(&alphabet, 20000, 40) {
        assert_agree(fused, generic, &t);
    }
}
