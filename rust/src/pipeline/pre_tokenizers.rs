//! Pre-tokenizers of a `tokenizer.json`, as HuggingFace `tokenizers` 0.23 runs them.
//!
//! Invariant: `PreTokenizer::pieces` cuts a text (one segment between added tokens, after
//! normalization) into the same pieces, in the same order, as HF's pre-tokenizer: each step
//! refines every piece the step before left (a `Sequence`), by HF's `find_matches` and
//! `SplitDelimiterBehavior` rules. Steps after `ByteLevel` see HF's byte-level chars (one
//! char a byte: a `Digits` after `ByteLevel` sees byte 0xBD as `½`, a number); the pieces
//! here are byte ranges of the segment's UTF-8, which stand one-to-one for those chars.
//! `ByteLevel`'s `add_prefix_space` adds a space to a piece that does not start with one;
//! a piece records it as a virtual leading byte.
//!
//! Regexes are HF's Oniguruma patterns read as Oniguruma reads them (`onig_to_fancy`), run
//! by ferrotok's splitters (`Splitter::new` picks a hand-written scanner or the automaton
//! path where it is proven equal to the backtracking reference).

use super::byte_level::char_of;
use super::normalizers::{bad, unsupported};
use super::onig_checks;
use super::scanners::Fused;
use super::splitters::{PieceSplitter, OPENAI_EXPORTS};
use crate::encode::pretok::file_cuts::KEEPING_SPLITTERS;
use crate::encode::pretok::{Splitter, R50K_PATTERN};
use crate::error::Result;
use serde_json::Value;

/// HF's `SplitDelimiterBehavior`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

impl Behavior {
    fn from_json(v: Option<&Value>) -> Result<Behavior> {
        Ok(match v.and_then(Value::as_str) {
            Some("Removed") => Behavior::Removed,
            Some("Isolated") => Behavior::Isolated,
            Some("MergedWithPrevious") => Behavior::MergedWithPrevious,
            Some("MergedWithNext") => Behavior::MergedWithNext,
            Some("Contiguous") => Behavior::Contiguous,
            other => return Err(bad(&format!("unknown split behavior {other:?}"))),
        })
    }
}

pub enum Step {
    /// `prefix_space`: HF's `add_prefix_space`; `regex`: GPT-2's split when `use_regex`.
    ByteLevel {
        prefix_space: bool,
        regex: Option<Splitter>,
    },
    Split {
        splitter: PieceSplitter,
        behavior: Behavior,
        invert: bool,
        /// Chars every match holds one of (see [`Required`]): a piece with none is whole.
        required: Option<Box<Required>>,
    },
    /// `char::is_numeric` chars: each alone (`individual`) or runs of them.
    Digits { individual: bool },
    /// ASCII or Unicode punctuation chars, with a behavior.
    Punctuation { behavior: Behavior },
    /// `char::is_whitespace` chars removed, the text between them kept (HF's
    /// `WhitespaceSplit`, and the first half of `BertPreTokenizer`).
    WhitespaceSplit,
    /// HF's `FixedLength`: each piece cut into runs of `length` chars (the last shorter).
    FixedLength { length: usize },
}

/// A piece: bytes `start..end` of the segment, after a virtual space if `space`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    pub space: bool,
}

pub struct PreTokenizer {
    pub steps: Vec<Step>,
    /// GPT-2's split as a [`PieceSplitter`], for [`PreTokenizer::single_scan`].
    byte_level_scan: Option<PieceSplitter>,
    /// The whole Sequence as one scanner, where one is written for it (`super::scanners`):
    /// then it makes the pieces, the same as the steps would.
    fused: Option<Fused>,
    /// Whether the first step cuts at whitespace and removes it (see
    /// [`PreTokenizer::cuts_at_whitespace`]).
    whitespace_first: bool,
}

/// Whether pre-tokenizer `v`'s first step is `WhitespaceSplit`, `Whitespace` or
/// `BertPreTokenizer` (the first step of a Sequence, at any depth).
fn whitespace_first(v: &Value) -> bool {
    match v.get("type").and_then(Value::as_str) {
        Some("WhitespaceSplit" | "Whitespace" | "BertPreTokenizer") => true,
        Some("Sequence") => v
            .get("pretokenizers")
            .and_then(Value::as_array)
            .and_then(|steps| steps.first())
            .is_some_and(whitespace_first),
        _ => false,
    }
}

fn flag(v: &Value, k: &str, default: bool) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(default)
}

/// Oniguruma's `\w` (UTF-8): Unicode's word chars without the join controls U+200C/U+200D
/// (the regex crate's `\w` has them); standalone, also the Latin-1 chars its ctype table
/// calls word chars though they are `No` (U+00B2, U+00B3, U+00B9, U+00BC-U+00BE). In a class
/// (`[\w]`, `[^\w\s]`) those six are not word chars. Checked against HF over every char.
const ONIG_WORD: &str = r"[\w\xB2\xB3\xB9\xBC-\xBE&&[^\x{200C}\x{200D}]]";
const ONIG_NOT_WORD: &str = r"[^\w\xB2\xB3\xB9\xBC-\xBE&&[^\x{200C}\x{200D}]]";
const ONIG_CLASS_WORD: &str = r"[\w&&[^\x{200C}\x{200D}]]";
const ONIG_CLASS_NOT_WORD: &str = r"[^\w&&[^\x{200C}\x{200D}]]";

/// HF's regex (Oniguruma, Ruby syntax) in fancy-regex's syntax: the same matches.
///
/// Where they differ for tokenizer patterns: Oniguruma reads `X{n,m}+` (and `{n}+`, `{n,}+`)
/// not as a possessive interval, as fancy-regex does, but as `(?:X{n,m})+`; and `^`/`$`
/// are always line anchors. Possessive `*+`, `++`, `?+` mean the same in both.
pub fn onig_to_fancy(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out: Vec<String> = Vec::new(); // one entry per atom or literal piece
    let mut atom_starts: Vec<usize> = Vec::new(); // index into `out` of each atom's start
    let mut i = 0;
    let mut group_stack: Vec<usize> = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let mut s = String::from('\\');
                i += 1;
                if i < chars.len() {
                    let e = chars[i];
                    s.push(e);
                    i += 1;
                    if matches!(e, 'p' | 'P' | 'x' | 'u') && i < chars.len() && chars[i] == '{' {
                        while i < chars.len() {
                            s.push(chars[i]);
                            i += 1;
                            if chars[i - 1] == '}' {
                                break;
                            }
                        }
                    }
                    match e {
                        'w' => s = ONIG_WORD.to_owned(),
                        'W' => s = ONIG_NOT_WORD.to_owned(),
                        _ => {}
                    }
                }
                atom_starts.push(out.len());
                out.push(s);
            }
            '[' => {
                let mut s = String::new();
                let mut depth = 0;
                while i < chars.len() {
                    let ch = chars[i];
                    s.push(ch);
                    i += 1;
                    if ch == '\\' && i < chars.len() {
                        // In a class Oniguruma's `\w` lacks the Latin-1 extras (see above).
                        match chars[i] {
                            'w' | 'W' => {
                                s.pop();
                                s.push_str(if chars[i] == 'w' {
                                    ONIG_CLASS_WORD
                                } else {
                                    ONIG_CLASS_NOT_WORD
                                });
                            }
                            e => s.push(e),
                        }
                        i += 1;
                        continue;
                    }
                    if ch == '[' {
                        depth += 1;
                        // A `]` first in a class is a literal.
                        if i < chars.len() && chars[i] == '^' {
                            s.push('^');
                            i += 1;
                        }
                        if i < chars.len() && chars[i] == ']' {
                            s.push(']');
                            i += 1;
                        }
                    } else if ch == ']' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                atom_starts.push(out.len());
                out.push(s);
            }
            '(' => {
                group_stack.push(out.len());
                out.push("(".into());
                i += 1;
            }
            ')' => {
                out.push(")".into());
                i += 1;
                let start = group_stack.pop().unwrap_or(0);
                atom_starts.push(start);
            }
            '{' => {
                // An interval quantifier if it reads `{n}`, `{n,}`, `{n,m}` (or `{,m}`).
                let mut j = i + 1;
                while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == ',') {
                    j += 1;
                }
                let body: String = chars[i + 1..j.min(chars.len())].iter().collect();
                let is_interval = j < chars.len()
                    && chars[j] == '}'
                    && !body.is_empty()
                    && body.chars().filter(|&c| c == ',').count() <= 1
                    && body != ",";
                if is_interval {
                    let q: String = chars[i..=j].iter().collect();
                    i = j + 1;
                    let possessive_like = i < chars.len() && chars[i] == '+';
                    if possessive_like {
                        i += 1;
                        if let Some(&a) = atom_starts.last() {
                            let atom: String = out.drain(a..).collect();
                            out.push(format!("(?:{atom}{q})+"));
                            continue;
                        }
                    }
                    out.push(q);
                    continue;
                }
                atom_starts.push(out.len());
                out.push("\\{".into());
                i += 1;
            }
            '|' => {
                out.push("|".into());
                i += 1;
            }
            // Ruby syntax: `^` and `$` are line anchors (fancy-regex's multi-line ones).
            '^' => {
                out.push("(?m:^)".into());
                i += 1;
            }
            '$' => {
                out.push("(?m:$)".into());
                i += 1;
            }
            '*' | '+' | '?' => {
                out.push(c.to_string());
                i += 1;
            }
            _ => {
                atom_starts.push(out.len());
                out.push(c.to_string());
                i += 1;
            }
        }
    }
    out.concat()
}

/// HF's `Split` on a string pattern: the string, escaped, as a regex.
fn escape(s: &str) -> String {
    regex_syntax::escape(s)
}

impl PreTokenizer {
    /// The pre-tokenizer a `tokenizer.json` asks for; any other kind is refused.
    pub fn from_json(v: &Value) -> Result<PreTokenizer> {
        let mut pt = Self::from_json_generic(v)?;
        pt.fused = Fused::recognise(v)?;
        Ok(pt)
    }

    /// [`PreTokenizer::from_json`] without a fused scanner: the steps run one by one (the
    /// reference the fused scanners are tested against).
    pub fn from_json_generic(v: &Value) -> Result<PreTokenizer> {
        let mut steps = Vec::new();
        if !v.is_null() {
            Self::add(v, &mut steps)?;
        }
        Ok(PreTokenizer {
            steps,
            byte_level_scan: Some(PieceSplitter::new(R50K_PATTERN)?),
            fused: None,
            whitespace_first: whitespace_first(v),
        })
    }

    /// The fused scanner that makes this pre-tokenizer's pieces, if there is one.
    #[inline]
    pub fn fused(&self) -> Option<&Fused> {
        self.fused.as_ref()
    }

    fn add(v: &Value, steps: &mut Vec<Step>) -> Result<()> {
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("?");
        match kind {
            "Sequence" => {
                let list = v
                    .get("pretokenizers")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("pre_tokenizer Sequence without `pretokenizers`"))?;
                for s in list {
                    Self::add(s, steps)?;
                }
            }
            "ByteLevel" => {
                if steps.iter().any(|s| matches!(s, Step::ByteLevel { .. })) {
                    return Err(unsupported("a second ByteLevel pre-tokenizer"));
                }
                let regex = if flag(v, "use_regex", true) {
                    Some(Splitter::new(R50K_PATTERN)?)
                } else {
                    None
                };
                steps.push(Step::ByteLevel {
                    prefix_space: flag(v, "add_prefix_space", true),
                    regex,
                });
            }
            "Split" => {
                let pattern = v
                    .get("pattern")
                    .ok_or_else(|| bad("Split without a pattern"))?;
                let re = if let Some(s) = pattern.get("String").and_then(Value::as_str) {
                    escape(s)
                } else if let Some(r) = pattern.get("Regex").and_then(Value::as_str) {
                    match OPENAI_EXPORTS.iter().find(|(written, _)| *written == r) {
                        // ferrotok's own export of an OpenAI pattern: the pattern itself.
                        Some((_, openai)) => (*openai).to_owned(),
                        None => {
                            let fancy = onig_to_fancy(r);
                            onig_checks::refuse_unsupported(r, &fancy)?;
                            fancy
                        }
                    }
                } else {
                    return Err(bad("Split pattern is neither String nor Regex"));
                };
                if re.is_empty() {
                    return Err(unsupported("a Split with an empty pattern"));
                }
                let invert = flag(v, "invert", false);
                steps.push(Step::Split {
                    splitter: PieceSplitter::new(&re)?,
                    behavior: Behavior::from_json(v.get("behavior"))?,
                    invert,
                    required: if invert {
                        None
                    } else {
                        Required::of(&re).map(Box::new)
                    },
                });
            }
            "Digits" => steps.push(Step::Digits {
                individual: flag(v, "individual_digits", false),
            }),
            "WhitespaceSplit" => steps.push(Step::WhitespaceSplit),
            // HF's `Whitespace` is the `regex` crate's `\w+|[^\w\s]+` (not Oniguruma's), its
            // matches kept and the rest dropped: a `Split` whose pattern needs no reading.
            "Whitespace" => steps.push(Step::Split {
                splitter: PieceSplitter::new(r"\w+|[^\w\s]+")?,
                behavior: Behavior::Removed,
                invert: true,
                required: None,
            }),
            // HF's `CharDelimiterSplit`: the char removed, the text between kept; the same as
            // a `Split` on the char as a string.
            "CharDelimiterSplit" => {
                let d = v
                    .get("delimiter")
                    .and_then(Value::as_str)
                    .filter(|d| d.chars().count() == 1)
                    .ok_or_else(|| bad("CharDelimiterSplit: `delimiter` is not one char"))?;
                let re = escape(d);
                steps.push(Step::Split {
                    splitter: PieceSplitter::new(&re)?,
                    behavior: Behavior::Removed,
                    invert: false,
                    required: Required::of(&re).map(Box::new),
                });
            }
            "FixedLength" => {
                let length = match v.get("length") {
                    // HF's default.
                    None | Some(Value::Null) => 5,
                    Some(n) => n
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| bad("FixedLength: `length` is not a count"))?,
                };
                if length == 0 {
                    // HF panics on it (runs of no chars).
                    return Err(unsupported("pre-tokenizer FixedLength of length 0"));
                }
                steps.push(Step::FixedLength { length });
            }
            // HF's `BertPreTokenizer` is these two splits, one after the other.
            "BertPreTokenizer" => {
                steps.push(Step::WhitespaceSplit);
                steps.push(Step::Punctuation {
                    behavior: Behavior::Isolated,
                });
            }
            "Punctuation" => steps.push(Step::Punctuation {
                behavior: match v.get("behavior") {
                    None => Behavior::Isolated,
                    b => Behavior::from_json(b)?,
                },
            }),
            other => return Err(unsupported(&format!("pre-tokenizer {other}"))),
        }
        Ok(())
    }

    /// Whether every cut of `encode::pretok::file_cuts`'s rule (after a `"\n"` between two
    /// chars that are not whitespace, the second not `/`) is a piece boundary of this
    /// pre-tokenizer whatever the text around it, the pieces before it those of the text
    /// before it alone: a fused scanner that says so ([`Fused::keeps_file_cuts`]), or a
    /// [`Self::single_scan`] (GPT-2's ByteLevel, or one isolating `Split` then ByteLevel
    /// without its regex; no prefix space, which would go in front of each part) of a
    /// pattern the rule holds for (`file_cuts::KEEPING_SPLITTERS` says why).
    pub fn keeps_file_cuts(&self) -> bool {
        match &self.fused {
            Some(f) => f.keeps_file_cuts(),
            None => self
                .single_scan()
                .is_some_and(|s| KEEPING_SPLITTERS.contains(&s.kind())),
        }
    }

    /// Whether the first step cuts the text at every whitespace char and drops it
    /// (`WhitespaceSplit`; `Whitespace`, whose pieces are runs of word chars or of other
    /// chars but whitespace; `BertPreTokenizer`, which starts with `WhitespaceSplit`). Every
    /// later step refines the pieces it leaves, so no piece holds a whitespace char of the
    /// text the pre-tokenizer is given, and a text cut just after one gives the pieces of
    /// its two sides.
    pub fn cuts_at_whitespace(&self) -> bool {
        self.whitespace_first
    }

    /// The kind of each `Split` step's splitter (`"split:<kind>"`), or the fused scanner's
    /// name (`"scan:<model>"`) alone when one makes the pieces.
    pub fn splitter_kinds(&self) -> Vec<&'static str> {
        if let Some(f) = &self.fused {
            return vec![f.name()];
        }
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Split { splitter, .. } => Some(match splitter.kind() {
                    "llama3" => "split:llama3",
                    "qwen2" => "split:qwen2",
                    "qwen3.5" => "split:qwen3.5",
                    "tekken" => "split:tekken",
                    "kimi-k2" => "split:kimi-k2",
                    "llama4" => "split:llama4",
                    "cl100k-digit-runs" => "split:cl100k-digit-runs",
                    "general" => "split:general",
                    "fancy-regex" => "split:fancy-regex",
                    "cl100k" => "split:cl100k",
                    "o200k" => "split:o200k",
                    "r50k" => "split:r50k",
                    _ => "split:other",
                }),
                _ => None,
            })
            .collect()
    }

    /// Builds the DFA of each `Split` step whose pattern runs on the general path (otherwise
    /// built at its first text).
    pub fn build_tables(&self) {
        if self.fused.is_some() {
            return; // the steps' splitters never run
        }
        for s in &self.steps {
            if let Step::Split { splitter, .. } = s {
                splitter.build_tables();
            }
        }
    }

    /// Whether each general-path `Split` step's DFA is built (none where a fused scanner
    /// makes the pieces).
    pub fn tables_built(&self) -> Vec<(&'static str, bool)> {
        if self.fused.is_some() {
            return Vec::new();
        }
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Split { splitter, .. } => splitter.dfa_tried(),
                _ => None,
            })
            .map(|b| ("hf split dfa", b))
            .collect()
    }

    /// The splitter when the whole pre-tokenizer is one isolating scan followed by bytes:
    /// `[Split(Isolated)]` + `ByteLevel` without regex or prefix space, or a lone
    /// `ByteLevel` with its regex and no prefix space; `None` where a fused scanner makes
    /// the pieces, as one may for such a pair.
    #[inline]
    pub fn single_scan(&self) -> Option<&PieceSplitter> {
        if self.fused.is_some() {
            return None;
        }
        match self.steps.as_slice() {
            [Step::ByteLevel {
                prefix_space: false,
                regex: Some(_),
            }] => self.byte_level_scan.as_ref(),
            [Step::Split {
                splitter,
                behavior: Behavior::Isolated,
                invert: false,
                ..
            }, Step::ByteLevel {
                prefix_space: false,
                regex: None,
            }] => Some(splitter),
            _ => None,
        }
    }

    /// The splitter when the whole pre-tokenizer is a lone `ByteLevel` with its regex and a
    /// prefix space: the pieces of a segment are then the regex's pieces of it with a space
    /// put in front where it does not start with one (HF prepends it before the split).
    #[inline]
    pub fn prefixed_scan(&self) -> Option<&PieceSplitter> {
        match self.steps.as_slice() {
            [Step::ByteLevel {
                prefix_space: true,
                regex: Some(_),
            }] => self.byte_level_scan.as_ref(),
            _ => None,
        }
    }

    /// Whether there is no step at all (`null` in the file): a segment is one piece.
    pub fn is_none(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether there is a ByteLevel step (the model then reads bytes).
    pub fn is_byte_level(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s, Step::ByteLevel { .. }))
    }

    /// Calls `f` with each piece of `seg` in order: the pieces of [`PreTokenizer::pieces`],
    /// without collecting them. Steps that only isolate matches (a `Split` with `Isolated`,
    /// `ByteLevel` without a prefix space) run as nested scans; any other step collects the
    /// pieces it makes of one piece, then goes on with each.
    pub fn for_each_piece(&self, seg: &str, f: &mut dyn FnMut(Piece) -> Result<()>) -> Result<()> {
        if seg.is_empty() {
            return Ok(());
        }
        if let Some(fused) = &self.fused {
            return fused.for_each_piece(seg, |start, end| {
                f(Piece {
                    start,
                    end,
                    space: false,
                })
            });
        }
        let whole = Piece {
            start: 0,
            end: seg.len(),
            space: false,
        };
        self.walk(&self.steps, seg, whole, false, f)
    }

    fn walk(
        &self,
        steps: &[Step],
        seg: &str,
        p: Piece,
        mapped: bool,
        f: &mut dyn FnMut(Piece) -> Result<()>,
    ) -> Result<()> {
        let Some((step, rest)) = steps.split_first() else {
            return f(p);
        };
        let isolating: Option<&dyn Split> = match step {
            Step::ByteLevel {
                prefix_space: false,
                regex: None,
            } => return self.walk(rest, seg, p, true, f),
            Step::ByteLevel {
                prefix_space: false,
                regex: Some(re),
            } => Some(re),
            Step::Split {
                splitter,
                behavior: Behavior::Isolated,
                invert: false,
                ..
            } if !mapped => Some(splitter),
            _ => None,
        };
        let now_mapped = mapped || matches!(step, Step::ByteLevel { .. });
        if unchanged(step, seg, p, mapped) {
            return self.walk(rest, seg, p, now_mapped, f);
        }
        if let (Some(re), false, false) = (isolating, mapped, p.space) {
            let text = &seg[p.start..p.end];
            let base = text.as_ptr() as usize;
            let mut prev = 0;
            re.pieces(text, &mut |m| {
                let s = m.as_ptr() as usize - base;
                if prev < s {
                    let gap = Piece {
                        start: p.start + prev,
                        end: p.start + s,
                        space: false,
                    };
                    self.walk(rest, seg, gap, now_mapped, f)?;
                }
                let piece = Piece {
                    start: p.start + s,
                    end: p.start + s + m.len(),
                    space: false,
                };
                prev = s + m.len();
                self.walk(rest, seg, piece, now_mapped, f)
            })?;
            if prev < text.len() {
                let gap = Piece {
                    start: p.start + prev,
                    end: p.end,
                    space: false,
                };
                self.walk(rest, seg, gap, now_mapped, f)?;
            }
            return Ok(());
        }
        let mut parts = Vec::new();
        self.run_step(step, seg, p, mapped, &mut parts)?;
        for q in parts {
            self.walk(rest, seg, q, now_mapped, f)?;
        }
        Ok(())
    }

    /// The pieces of `seg` (see the module docs), appended to `out`.
    pub fn pieces(&self, seg: &str, out: &mut Vec<Piece>) -> Result<()> {
        if let Some(re) = self.single_scan() {
            // One isolating scan: its matches and the gaps between them, as the steps give
            // them (no step after it splits or adds a space), without a vector a step.
            let base = seg.as_ptr() as usize;
            return super::each_word(re, seg, |w| {
                let start = w.as_ptr() as usize - base;
                out.push(Piece {
                    start,
                    end: start + w.len(),
                    space: false,
                });
                Ok(())
            });
        }
        if let Some(fused) = &self.fused {
            return fused.for_each_piece(seg, |start, end| {
                out.push(Piece {
                    start,
                    end,
                    space: false,
                });
                Ok(())
            });
        }
        let first = out.len();
        if !seg.is_empty() {
            out.push(Piece {
                start: 0,
                end: seg.len(),
                space: false,
            });
        }
        let mut mapped = false;
        let mut next = Vec::new();
        for step in &self.steps {
            next.clear();
            for p in &out[first..] {
                self.run_step(step, seg, *p, mapped, &mut next)?;
            }
            out.truncate(first);
            out.extend_from_slice(&next);
            if matches!(step, Step::ByteLevel { .. }) {
                mapped = true;
            }
        }
        Ok(())
    }

    fn run_step(
        &self,
        step: &Step,
        seg: &str,
        p: Piece,
        mapped: bool,
        out: &mut Vec<Piece>,
    ) -> Result<()> {
        match step {
            Step::ByteLevel {
                prefix_space,
                regex,
            } => {
                let text = &seg[p.start..p.end];
                let space = *prefix_space && !p.space && !text.starts_with(' ');
                let Some(re) = regex else {
                    out.push(Piece { space, ..p });
                    return Ok(());
                };
                if space {
                    let owned = format!(" {text}");
                    let matches = regex_matches(re, &owned)?;
                    let ranges = behave(matches, Behavior::Isolated);
                    for (s, e) in ranges {
                        // Byte 0 of `owned` is the virtual space.
                        out.push(Piece {
                            start: p.start + s.saturating_sub(1),
                            end: p.start + e - 1,
                            space: s == 0,
                        });
                    }
                } else {
                    let matches = regex_matches(re, text)?;
                    for (s, e) in behave(matches, Behavior::Isolated) {
                        out.push(Piece {
                            start: p.start + s,
                            end: p.start + e,
                            space: p.space && s == 0,
                        });
                    }
                }
            }
            Step::Split {
                splitter,
                behavior,
                invert,
                ..
            } => {
                if mapped {
                    let (view, starts) = mapped_view(seg, p);
                    let mut m = regex_matches(splitter, &view)?;
                    if *invert {
                        m.iter_mut().for_each(|x| x.1 = !x.1);
                    }
                    for (s, e) in behave(m, *behavior) {
                        push_mapped(out, p, &starts, s, e);
                    }
                } else {
                    let text = &seg[p.start..p.end];
                    if *behavior == Behavior::Isolated && !*invert {
                        // Matches and the gaps between them, in order: every cut is a piece.
                        let mut prev = 0;
                        let base = text.as_ptr() as usize;
                        splitter.for_each_piece(text, |m| {
                            let s = m.as_ptr() as usize - base;
                            if prev < s {
                                out.push(Piece {
                                    start: p.start + prev,
                                    end: p.start + s,
                                    space: false,
                                });
                            }
                            out.push(Piece {
                                start: p.start + s,
                                end: p.start + s + m.len(),
                                space: false,
                            });
                            prev = s + m.len();
                            Ok(())
                        })?;
                        if prev < text.len() {
                            out.push(Piece {
                                start: p.start + prev,
                                end: p.end,
                                space: false,
                            });
                        }
                        return Ok(());
                    }
                    let mut m = regex_matches(splitter, text)?;
                    if *invert {
                        m.iter_mut().for_each(|x| x.1 = !x.1);
                    }
                    for (s, e) in behave(m, *behavior) {
                        out.push(Piece {
                            start: p.start + s,
                            end: p.start + e,
                            space: false,
                        });
                    }
                }
            }
            Step::Digits { individual } => {
                let behavior = if *individual {
                    Behavior::Isolated
                } else {
                    Behavior::Contiguous
                };
                self.by_char(seg, p, mapped, char::is_numeric, behavior, out);
            }
            Step::Punctuation { behavior } => {
                self.by_char(seg, p, mapped, is_punctuation, *behavior, out);
            }
            Step::WhitespaceSplit => {
                self.by_char(seg, p, mapped, char::is_whitespace, Behavior::Removed, out);
            }
            Step::FixedLength { length } => {
                if mapped {
                    // One char a byte (and the virtual space first).
                    let n = p.end - p.start + usize::from(p.space);
                    let starts: Vec<usize> = (0..=n).collect();
                    for s in (0..n).step_by(*length) {
                        push_mapped(out, p, &starts, s, (s + length).min(n));
                    }
                } else {
                    let text = &seg[p.start..p.end];
                    let mut start = 0;
                    for (b, _) in text.char_indices().skip(*length).step_by(*length) {
                        out.push(Piece {
                            start: p.start + start,
                            end: p.start + b,
                            space: false,
                        });
                        start = b;
                    }
                    if start < text.len() {
                        out.push(Piece {
                            start: p.start + start,
                            end: p.end,
                            space: false,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// A step that splits on chars for which `pred` holds (HF's `Fn(char) -> bool` pattern).
    fn by_char(
        &self,
        seg: &str,
        p: Piece,
        mapped: bool,
        pred: fn(char) -> bool,
        behavior: Behavior,
        out: &mut Vec<Piece>,
    ) {
        if mapped {
            // One char a byte (and the virtual space first): char index = view position.
            let bytes = &seg.as_bytes()[p.start..p.end];
            let n = bytes.len() + usize::from(p.space);
            let ch = |k: usize| -> char {
                if p.space {
                    if k == 0 {
                        'Ġ'
                    } else {
                        char_of(bytes[k - 1])
                    }
                } else {
                    char_of(bytes[k])
                }
            };
            let m = char_matches(n, (0..n).map(|k| (k, 1, ch(k))), pred);
            let starts: Vec<usize> = (0..=n).collect();
            for (s, e) in behave(m, behavior) {
                push_mapped(out, p, &starts, s, e);
            }
        } else {
            let text = &seg[p.start..p.end];
            let m = char_matches(
                text.len(),
                text.char_indices().map(|(b, c)| (b, c.len_utf8(), c)),
                pred,
            );
            for (s, e) in behave(m, behavior) {
                out.push(Piece {
                    start: p.start + s,
                    end: p.start + e,
                    space: false,
                });
            }
        }
    }
}

/// Chars of which every non-empty match of a pattern holds at least one: a piece without
/// any has no match, and a `Split` leaves it whole. Read from the pattern's syntax tree: a
/// class or literal that a match must consume (a repetition of at least one, the first such
/// element of a concatenation, every branch of an alternation). `None` where no such set
/// can be told (look-arounds regex-syntax cannot parse, an optional whole, ...).
pub struct Required {
    ascii: [bool; 128],
    /// Ranges of chars from U+0080 on, sorted.
    wide: Vec<(char, char)>,
    /// By raw byte: whether its byte-level char is required (index 256: `Ġ`, a virtual space).
    mapped: [bool; 257],
}

impl Required {
    fn of(pattern: &str) -> Option<Required> {
        use regex_syntax::hir::{Class, Hir, HirKind};
        fn req(h: &Hir) -> Option<Vec<(char, char)>> {
            match h.kind() {
                HirKind::Literal(l) => {
                    let c = std::str::from_utf8(&l.0).ok()?.chars().next()?;
                    Some(vec![(c, c)])
                }
                HirKind::Class(Class::Unicode(c)) => {
                    Some(c.ranges().iter().map(|r| (r.start(), r.end())).collect())
                }
                HirKind::Repetition(r) if r.min >= 1 => req(&r.sub),
                HirKind::Capture(c) => req(&c.sub),
                HirKind::Concat(v) => v.iter().find_map(req),
                HirKind::Alternation(v) => {
                    let mut all = Vec::new();
                    for b in v {
                        all.extend(req(b)?);
                    }
                    Some(all)
                }
                _ => None,
            }
        }
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(pattern)
            .ok()?;
        let mut set = req(&hir)?;
        set.sort_unstable();
        let hit = |c: char| set.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        let mut ascii = [false; 128];
        for (b, slot) in ascii.iter_mut().enumerate() {
            *slot = hit(char::from(b as u8));
        }
        let mut mapped = [false; 257];
        for b in 0..=255u8 {
            mapped[b as usize] = hit(char_of(b));
        }
        mapped[256] = hit('Ġ');
        // Sorted and merged, for a binary search.
        let mut wide: Vec<(char, char)> = Vec::new();
        for &(lo, hi) in set.iter().filter(|&&(_, hi)| hi >= '\u{80}') {
            let lo = lo.max('\u{80}');
            match wide.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => wide.push((lo, hi)),
            }
        }
        Some(Required {
            ascii,
            wide,
            mapped,
        })
    }

    #[inline]
    fn has(&self, c: char) -> bool {
        let i = c as usize;
        if i < 128 {
            self.ascii[i]
        } else {
            // The last range starting at or before `c` is the only one that can hold it.
            let k = self.wide.partition_point(|&(lo, _)| lo <= c);
            k > 0 && c <= self.wide[k - 1].1
        }
    }

    /// Whether piece `p` of `seg` holds a required char (as byte-level chars if `mapped`).
    #[inline]
    fn in_piece(&self, seg: &str, p: Piece, mapped: bool) -> bool {
        let bytes = &seg.as_bytes()[p.start..p.end];
        if mapped {
            return bytes.iter().any(|&b| self.mapped[b as usize]) || (p.space && self.mapped[256]);
        }
        if bytes.is_ascii() {
            return bytes.iter().any(|&b| self.ascii[b as usize]);
        }
        seg[p.start..p.end].chars().any(|c| self.has(c))
    }
}

/// Whether `step` leaves piece `p` whole, known without running it: a char-class step
/// where no char of the piece is in the class, or (after ByteLevel) a `Split` whose pattern
/// can match none of the piece's chars. (One non-matching span is kept whole by every
/// behavior.)
fn unchanged(step: &Step, seg: &str, p: Piece, mapped: bool) -> bool {
    let bytes = &seg.as_bytes()[p.start..p.end];
    let none = |pred: fn(char) -> bool| {
        if mapped {
            !(bytes.iter().any(|&b| pred(char_of(b))) || p.space && pred('Ġ'))
        } else {
            !seg[p.start..p.end].chars().any(pred)
        }
    };
    match step {
        Step::Digits { .. } => none(char::is_numeric),
        Step::Punctuation { .. } => none(is_punctuation),
        Step::WhitespaceSplit => none(char::is_whitespace),
        // No more bytes than `length` is no more chars.
        Step::FixedLength { length } => bytes.len() + usize::from(p.space) <= *length,
        Step::Split {
            required: Some(r), ..
        } => !r.in_piece(seg, p, mapped),
        _ => false,
    }
}

/// HF's `is_punc`: ASCII punctuation or a Unicode punctuation category (P*).
pub(crate) fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || super::unicode_classes::is_punctuation(c)
}

/// HF's `find_matches` for a char predicate: each matching char alone, gaps between.
fn char_matches(
    len: usize,
    chars: impl Iterator<Item = (usize, usize, char)>,
    pred: fn(char) -> bool,
) -> Vec<((usize, usize), bool)> {
    if len == 0 {
        return vec![((0, 0), false)];
    }
    let mut last_offset = 0;
    let mut last_seen = 0;
    let mut m = Vec::new();
    for (b, l, c) in chars {
        last_seen = b + l;
        if pred(c) {
            if last_offset < b {
                m.push(((last_offset, b), false));
            }
            m.push(((b, b + l), true));
            last_offset = b + l;
        }
    }
    if last_seen > last_offset {
        m.push(((last_offset, last_seen), false));
    }
    m
}

/// HF's `find_matches` for a regex: matches and the gaps between them.
fn regex_matches(re: &dyn Split, text: &str) -> Result<Vec<((usize, usize), bool)>> {
    if text.is_empty() {
        return Ok(vec![((0, 0), false)]);
    }
    let base = text.as_ptr() as usize;
    let mut prev = 0;
    let mut m = Vec::new();
    re.pieces(text, &mut |piece| {
        let s = piece.as_ptr() as usize - base;
        if prev != s {
            m.push(((prev, s), false));
        }
        m.push(((s, s + piece.len()), true));
        prev = s + piece.len();
        Ok(())
    })?;
    if prev != text.len() {
        m.push(((prev, text.len()), false));
    }
    Ok(m)
}

/// A regex splitter of either kind, as a trait object for the rarely taken paths.
trait Split {
    fn pieces(&self, text: &str, f: &mut dyn FnMut(&str) -> Result<()>) -> Result<()>;
}

impl Split for Splitter {
    fn pieces(&self, text: &str, f: &mut dyn FnMut(&str) -> Result<()>) -> Result<()> {
        self.for_each_piece(text, f)
    }
}

impl Split for PieceSplitter {
    fn pieces(&self, text: &str, f: &mut dyn FnMut(&str) -> Result<()>) -> Result<()> {
        self.for_each_piece(text, f)
    }
}

/// The ranges of `ranges` in order, each joined to the one kept before it (by `grow`) when
/// `join(is_match, previous_is_match)`, else kept on its own (as a non-match: kept).
fn fuse(
    ranges: impl Iterator<Item = ((usize, usize), bool)>,
    join: impl Fn(bool, bool) -> bool,
    grow: impl Fn(&mut (usize, usize), (usize, usize)),
) -> Vec<((usize, usize), bool)> {
    let mut prev = false;
    let mut acc: Vec<((usize, usize), bool)> = Vec::new();
    for (o, m) in ranges {
        match acc.last_mut() {
            Some((last, _)) if join(m, prev) => grow(last, o),
            _ => acc.push((o, false)),
        }
        prev = m;
    }
    acc
}

/// HF's `NormalizedString::split` behaviors: the kept, non-empty ranges.
fn behave(matches: Vec<((usize, usize), bool)>, behavior: Behavior) -> Vec<(usize, usize)> {
    let splits: Vec<((usize, usize), bool)> = match behavior {
        Behavior::Isolated => matches.into_iter().map(|(o, _)| (o, false)).collect(),
        Behavior::Removed => matches,
        Behavior::Contiguous => fuse(matches.into_iter(), |m, prev| m == prev, |r, o| r.1 = o.1),
        Behavior::MergedWithPrevious => {
            fuse(matches.into_iter(), |m, prev| m && !prev, |r, o| r.1 = o.1)
        }
        Behavior::MergedWithNext => {
            let mut acc = fuse(
                matches.into_iter().rev(),
                |m, prev| m && !prev,
                |r, o| r.0 = o.0,
            );
            acc.reverse();
            acc
        }
    };
    splits
        .into_iter()
        .filter(|&((s, e), remove)| !remove && s < e)
        .map(|(o, _)| o)
        .collect()
}

/// The byte-level chars of piece `p` as a string, and the string offset of each char
/// (plus its end): char k is the virtual space if `p.space` and k = 0, else a byte.
fn mapped_view(seg: &str, p: Piece) -> (String, Vec<usize>) {
    let bytes = &seg.as_bytes()[p.start..p.end];
    let mut s = String::with_capacity(2 * bytes.len() + 2);
    let mut starts = Vec::with_capacity(bytes.len() + 2);
    if p.space {
        starts.push(s.len());
        s.push('Ġ');
    }
    for &b in bytes {
        starts.push(s.len());
        s.push(char_of(b));
    }
    starts.push(s.len());
    (s, starts)
}

/// The piece for view range `s..e` (offsets into a view whose char k starts at `starts[k]`).
fn push_mapped(out: &mut Vec<Piece>, p: Piece, starts: &[usize], s: usize, e: usize) {
    let (Ok(ks), Ok(ke)) = (starts.binary_search(&s), starts.binary_search(&e)) else {
        return; // not on char boundaries: no splitter cuts inside a char
    };
    let sp = usize::from(p.space);
    out.push(Piece {
        start: p.start + ks.saturating_sub(sp),
        end: p.start + ke - sp.min(ke),
        space: p.space && ks == 0,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onig_reads_interval_plus_as_repeat() {
        assert_eq!(onig_to_fancy(r"\p{N}{1,3}+"), r"(?:\p{N}{1,3})+");
        assert_eq!(onig_to_fancy(r"a++|[a-z]{2}+"), r"a++|(?:[a-z]{2})+");
        assert_eq!(onig_to_fancy(r"(ab){1,2}+x"), r"(?:(ab){1,2})+x");
        assert_eq!(onig_to_fancy(r"\p{L}+"), r"\p{L}+");
        assert_eq!(onig_to_fancy(r"\s+$|[^a]"), r"\s+(?m:$)|[^a]");
    }

    #[test]
    fn contiguous_digits_after_byte_level() {
        let pt = PreTokenizer {
            byte_level_scan: None,
            fused: None,
            whitespace_first: false,
            steps: vec![
                Step::ByteLevel {
                    prefix_space: false,
                    regex: None,
                },
                Step::Digits { individual: false },
            ],
        };
        let mut out = Vec::new();
        // "4 ½": ½ is C2 BD; byte BD is the char ½, a number, after ByteLevel.
        pt.pieces("4 \u{bd}", &mut out).unwrap();
        let cut: Vec<(usize, usize)> = out.iter().map(|p| (p.start, p.end)).collect();
        assert_eq!(cut, vec![(0, 1), (1, 3), (3, 4)]);
        let mut walked = Vec::new();
        pt.for_each_piece("4 \u{bd}", &mut |p| {
            walked.push(p);
            Ok(())
        })
        .unwrap();
        assert_eq!(walked, out);
    }
}
