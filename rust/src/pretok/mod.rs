//! Pre-tokenization: cutting text into the pieces that BPE encodes one by one.
//!
//! Invariant: for a given pattern, `Splitter::for_each_piece` yields exactly the
//! matches that the pattern's leftmost-first regex search (`find_iter`, as
//! tiktoken runs it with fancy-regex) yields, in order. Text between matches is
//! dropped, as in tiktoken (the OpenAI patterns match every character).

use crate::error::{Error, Result};

pub enum Splitter {
    /// The general path: any pattern, run by fancy-regex (backtracking, supports look-around).
    Regex(Box<fancy_regex::Regex>),
}

impl Splitter {
    pub fn new(pattern: &str) -> Result<Self> {
        let re = fancy_regex::RegexBuilder::new(pattern)
            .backtrack_limit(10_000_000)
            .build()
            .map_err(|e| Error::Pattern(e.to_string()))?;
        Ok(Splitter::Regex(Box::new(re)))
    }

    /// Calls `f` with each piece of `text`, in order.
    #[inline]
    pub fn for_each_piece<'t>(
        &self,
        text: &'t str,
        mut f: impl FnMut(&'t str) -> Result<()>,
    ) -> Result<()> {
        match self {
            Splitter::Regex(re) => {
                for m in re.find_iter(text) {
                    let m = m.map_err(|e| Error::Regex(e.to_string()))?;
                    f(m.as_str())?;
                }
                Ok(())
            }
        }
    }
}
