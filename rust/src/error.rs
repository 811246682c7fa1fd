//! Errors of the core. Every failure a user can cause is a variant here, so the
//! binding layer can turn it into the Python exception tiktoken would raise.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The pre-tokenization pattern does not compile.
    Pattern(String),
    /// The regex engine gave up on a piece of input (backtrack limit).
    Regex(String),
    /// A vocabulary is malformed (duplicate ranks, a special token that is also ordinary, ...).
    Vocab(String),
    /// A token id has no bytes (Python: `KeyError`).
    UnknownToken(u32),
    /// A byte string is not one token (Python: `KeyError`).
    UnknownBytes(Vec<u8>),
    /// BPE met a byte that is not in the vocabulary, so the piece cannot be encoded.
    MissingByte(u8),
    /// A file could not be opened or read (the message names the file).
    Io(String),
    /// Input or arguments the caller must fix (non-UTF-8 file, bad vocabulary size, ...).
    Input(String),
    /// A progress hook asked to stop (Python: the exception the hook raised, e.g. Ctrl-C).
    Interrupted,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Pattern(m) => write!(f, "invalid pre-tokenization pattern: {m}"),
            Error::Regex(m) => write!(f, "regex error while splitting text: {m}"),
            Error::Vocab(m) => write!(f, "invalid vocabulary: {m}"),
            Error::UnknownToken(t) => write!(f, "Invalid token for decoding: {t}"),
            Error::UnknownBytes(b) => write!(f, "{b:?} is not a token in this vocabulary"),
            Error::MissingByte(b) => write!(
                f,
                "byte 0x{b:02x} is not in the vocabulary, so the text cannot be encoded"
            ),
            Error::Io(m) => write!(f, "{m}"),
            Error::Input(m) => write!(f, "{m}"),
            Error::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
