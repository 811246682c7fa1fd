//! What a `Split` pattern may ask of Oniguruma that ferrotok's regex path does not do the same
//! way: each is refused at load, by name, never run differently.
//!
//! Invariant: `refuse_unsupported(onig, fancy)` returns an error for a pattern that has any of
//! the readings below, and `Ok` otherwise; it never changes how an accepted pattern splits.
//! Each was found by comparing HF `tokenizers` 0.23 with ferrotok on built patterns:
//! - a pattern that can match the empty string: HF's `Split` cuts the text at every empty
//!   match (a piece boundary), ferrotok's splitters skip empty matches (`x*` splits "abc"
//!   into "a", "b", "c" in HF);
//! - a POSIX bracket (`[[:alpha:]]`): Oniguruma's are Unicode classes, the regex crate's
//!   ASCII ones;
//! - a word boundary (`\b`, `\B`): Oniguruma's word chars hold Latin-1's superscripts and
//!   fractions (`\b\S` cuts " ½" before "½" in HF), the regex crate's do not;
//! - the `m` flag (`(?m)`): Oniguruma's (Ruby's) makes `.` match a newline, the regex
//!   crate's makes `^`/`$` line anchors;
//! - under `(?i)`, a literal that Oniguruma folds with a multi-char case folding (`ss`, `st`,
//!   `ff`, `fi`, `fl` match `ß`, `ﬅ`, `ﬀ`, `ﬁ`, `ﬂ`; non-ASCII letters, which may be such a
//!   folding), and a `\p{...}` class (Oniguruma's `(?i)\p{Lu}` and the regex crate's differ).
//!
//! The contraction groups of the known models (`(?i:'s|'t|'re|'ve|'m|'ll|'d)`) have none of
//! these, nor has any pattern of the shared models.

use crate::error::Result;
use crate::pipeline::normalizers::unsupported;
use fancy_regex::Expr;

/// Refuses `onig` (the file's pattern) if it has a reading listed in the module docs;
/// `fancy` is its translation, which ferrotok runs.
pub fn refuse_unsupported(onig: &str, fancy: &str) -> Result<()> {
    refuse_unsupported_in("Split", onig, fancy)
}

/// [`refuse_unsupported`] for a pattern of the step named `step` (`Split`, `Replace`).
pub fn refuse_unsupported_in(step: &str, onig: &str, fancy: &str) -> Result<()> {
    if let Some(what) = onig_reading(onig) {
        return Err(unsupported(&format!("a {step} pattern with {what}")));
    }
    let empty = match Expr::parse_tree(fancy) {
        Ok(tree) => can_match_empty(&tree.expr),
        // Not parsed here: the splitter's own build reports it.
        Err(_) => false,
    };
    if empty {
        return Err(unsupported(&format!(
            "a {step} pattern that can match the empty string (HF acts at empty matches)"
        )));
    }
    Ok(())
}

/// Whether `e` may match the empty string (conservatively: `true` where unsure).
fn can_match_empty(e: &Expr) -> bool {
    match e {
        Expr::Any { .. } | Expr::GeneralNewline { .. } => false,
        Expr::Literal { val, .. } => val.is_empty(),
        Expr::Concat(v) => v.iter().all(can_match_empty),
        Expr::Alt(v) => v.iter().any(can_match_empty),
        Expr::Group(inner) => can_match_empty(inner),
        Expr::AtomicGroup(inner) => can_match_empty(inner),
        Expr::Repeat { child, lo, .. } => *lo == 0 || can_match_empty(child),
        Expr::Delegate { inner, .. } => regex_syntax::Parser::new()
            .parse(inner)
            .map_or(true, |h| h.properties().minimum_len() == Some(0)),
        // Empty, assertions, lookarounds, backreferences, \K, conditionals...
        _ => true,
    }
}

/// The first reading of the module docs found in Oniguruma pattern `p`, named.
fn onig_reading(p: &str) -> Option<String> {
    let chars: Vec<char> = p.chars().collect();
    // Case-insensitivity of each open group (the last is the current scope).
    let mut scopes = vec![false];
    let mut run = String::new(); // the case-insensitive literal letters just read
    let mut i = 0;
    let folded_run = |run: &str| -> Option<String> {
        let lower = run.to_ascii_lowercase();
        ["ss", "st", "ff", "fi", "fl"]
            .iter()
            .find(|f| lower.contains(*f))
            .map(|f| format!("a case-insensitive {f:?} (Oniguruma folds one char to it)"))
    };
    while i < chars.len() {
        let ci = scopes.last().copied().unwrap_or(false);
        let c = chars[i];
        if !(ci && c.is_ascii_alphabetic()) {
            if let Some(what) = folded_run(&run) {
                return Some(what);
            }
            run.clear();
        }
        match c {
            '\\' => {
                let e = chars.get(i + 1).copied().unwrap_or('\\');
                if matches!(e, 'b' | 'B') {
                    return Some(format!(
                        "a word boundary \\{e} (Oniguruma's word chars: U+00BD is one)"
                    ));
                }
                if ci && matches!(e, 'p' | 'P') {
                    return Some("a case-insensitive \\p{...} class".into());
                }
                if ci && matches!(e, 'x' | 'u') && escaped_value(&chars, i) > 0x7F {
                    return Some("a case-insensitive non-ASCII char".into());
                }
                i += 2;
            }
            '[' => {
                let end = class_end(&chars, i);
                let body: String = chars[i..end].iter().collect();
                if let Some(name) = posix_bracket(&body) {
                    return Some(format!(
                        "the POSIX bracket [:{name}:] (Unicode in Oniguruma)"
                    ));
                }
                let body_chars: Vec<char> = body.chars().collect();
                let wide_escape = (0..body_chars.len()).any(|k| {
                    body_chars[k] == '\\'
                        && matches!(body_chars.get(k + 1), Some('x' | 'u'))
                        && escaped_value(&body_chars, k) > 0x7F
                });
                if ci
                    && (!body.is_ascii()
                        || wide_escape
                        || body.contains("\\p")
                        || body.contains("\\P"))
                {
                    return Some("a case-insensitive non-ASCII or \\p{...} class".into());
                }
                i = end;
            }
            '(' => {
                let (flags, j) = group_flags(&chars, i);
                match flags {
                    Some((on, off, whole_scope)) => {
                        if on.contains('m') {
                            return Some(
                                "the (?m) flag (Oniguruma's: `.` matches a newline)".into(),
                            );
                        }
                        let mut now = ci;
                        if on.contains('i') {
                            now = true;
                        }
                        if off.contains('i') {
                            now = false;
                        }
                        if whole_scope {
                            if let Some(top) = scopes.last_mut() {
                                *top = now;
                            }
                        } else {
                            scopes.push(now);
                        }
                    }
                    None => scopes.push(ci),
                }
                i = j;
            }
            ')' => {
                if scopes.len() > 1 {
                    scopes.pop();
                }
                i += 1;
            }
            _ => {
                if ci && !c.is_ascii() {
                    return Some("a case-insensitive non-ASCII char".into());
                }
                if ci && c.is_ascii_alphabetic() {
                    run.push(c);
                }
                i += 1;
            }
        }
    }
    folded_run(&run)
}

/// The value of the `\x..`/`\u....` escape at `i` (0 if unreadable).
fn escaped_value(chars: &[char], i: usize) -> u32 {
    let rest = &chars[(i + 2).min(chars.len())..];
    let digits: String = if rest.first() == Some(&'{') {
        rest[1..].iter().take_while(|&&c| c != '}').collect()
    } else {
        let n = if chars[i + 1] == 'u' { 4 } else { 2 };
        rest.iter()
            .take(n)
            .take_while(|c| c.is_ascii_hexdigit())
            .collect()
    };
    u32::from_str_radix(digits.trim(), 16).unwrap_or(0)
}

/// The index after the class that starts at `i` (nested classes and escapes skipped).
fn class_end(chars: &[char], i: usize) -> usize {
    let mut depth = 0usize;
    let mut k = i;
    while k < chars.len() {
        match chars[k] {
            '\\' => k += 1,
            '[' => {
                depth += 1;
                // `[]` and `[^]` start a class with a literal `]`, `[:` a POSIX bracket.
                if chars.get(k + 1) == Some(&'^') {
                    k += 1;
                }
                if chars.get(k + 1) == Some(&']') {
                    k += 1;
                }
            }
            ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
        k += 1;
    }
    chars.len()
}

/// The name of a POSIX bracket (`[:alpha:]`, `[:^alpha:]`) in class text `body`.
fn posix_bracket(body: &str) -> Option<String> {
    let mut rest = body;
    while let Some(at) = rest.find("[:") {
        rest = &rest[at + 2..];
        let after = rest.strip_prefix('^').unwrap_or(rest);
        let name: String = after
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        if !name.is_empty() && after[name.len()..].starts_with(":]") {
            return Some(name);
        }
    }
    None
}

/// The flags of a flags group opening at `i` (`(?i)`, `(?i:`, `(?-i:`, `(?m)`...): (on,
/// off, whether they set the enclosing scope, as `(?i)` does), and the index after its
/// opener; for any other group, `None` and the index after its `(`.
#[allow(clippy::type_complexity)]
fn group_flags(chars: &[char], i: usize) -> (Option<(String, String, bool)>, usize) {
    if chars.get(i + 1) != Some(&'?') {
        return (None, i + 1);
    }
    let mut k = i + 2;
    while k < chars.len() && (chars[k].is_ascii_alphabetic() || chars[k] == '-') {
        k += 1;
    }
    let flags: String = chars[i + 2..k].iter().collect();
    let whole_scope = match chars.get(k) {
        Some(':') if !flags.is_empty() => false,
        Some(')') if !flags.is_empty() => true,
        _ => return (None, i + 1),
    };
    let (on, off) = flags.split_once('-').unwrap_or((flags.as_str(), ""));
    (Some((on.to_owned(), off.to_owned(), whole_scope)), k + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::pre_tokenizers::onig_to_fancy;

    fn refused(p: &str) -> bool {
        refuse_unsupported(p, &onig_to_fancy(p)).is_err()
    }

    #[test]
    fn known_patterns_pass() {
        for p in [
            crate::pipeline::splitters::LLAMA3_PATTERN,
            crate::pipeline::splitters::QWEN2_PATTERN,
            crate::pipeline::splitters::TEKKEN_PATTERN,
            r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
            r" ?[^(\s|[.,!?…。，、।۔،])]+",
            r"\p{N}{1,3}+",
            r"(?i:'s|'t)|[a-z&&[^aeiou]]+|\s+$",
            r"(?:ab)+|(?i)[a-z]+|x{2}",
            "[0-9][0-9][0-9]",
        ] {
            assert!(!refused(p), "{p}");
        }
    }

    #[test]
    fn readings_that_differ_are_refused() {
        for p in [
            "x*",
            "a?",
            "a{0,2}",
            r"\b",
            r"\b\S",
            r"x\B",
            "(?=a)",
            r"\K",
            "x|",
            "[[:alpha:]]+",
            "[^[:space:]]",
            "[[:^punct:]]",
            "(?m).+",
            "(?im:a.)",
            "(?i)strasse",
            "(?i:ab|ss)",
            "(?i)\u{df}",
            r"(?i)\x{DF}",
            r"(?i)\p{Lu}+",
            r"(?i:[\p{Ll}])",
            "(?i:fi)x",
            r"(?i:[\u00c0-\u00ff]){1,3}",
            r"(?i)[a\x{DF}]",
        ] {
            assert!(refused(p), "{p}");
        }
        // Out of a case-insensitive scope the same letters are fine.
        assert!(!refused("(?i:'s)ss|st"));
        assert!(!refused("(?i)a(?-i)ss"));
    }
}
