//! ferrotok's core: byte-level BPE that gives tiktoken's ids, and trains.
//!
//! Where everything is, in the order of the road a text takes (docs/engine.md has the map):
//! - `vocab/`: one vocabulary's immutable tables (bytes ⇄ id, pairs) and the `.tiktoken`
//!   parser;
//! - `encode/`: special tokens (`special`) → pieces (`pretok/`) → BPE of
//!   each piece (`bpe/`, with the tables it builds lazily) → `encoder`,
//!   which puts them together;
//! - `train/`: counting a corpus's pieces and learning merges;
//! - `data/`: documents straight from a data file's bytes (JSON Lines, Arrow columns),
//!   encoded on the batch threads;
//! - `runtime/`: where work runs (process-owned pools, fork safety, batches, huge pages);
//!   it knows no BPE;
//! - `py/`: the Python extension, which only converts types and errors.
//!
//! Dependencies run one way: runtime ← vocab ← encode ← train ← py. Modules are
//! `pub(crate)`; the public API is re-exported below, and tests and benches reach the
//! internals through [`internals`] only.

// Documents read from file bytes on the batch threads: for the bindings (and their tests).
#[cfg(any(test, feature = "python"))]
pub(crate) mod data;
pub(crate) mod encode;
pub(crate) mod error;
// The tokenizer.json loader is reached only from the Python bindings today (`Encoding.from_hf`):
// a build without them (the crate's own tests) compiles it but calls little of it.
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub(crate) mod pipeline;
pub(crate) mod runtime;
pub(crate) mod train;
pub(crate) mod vocab;

#[cfg(test)]
mod test_rng;

#[cfg(feature = "python")]
mod py;

/// The extension's tables on 2 MiB pages (see `runtime/huge_pages.rs`); the crate's own
/// tests run on it too. A Rust program that links the crate without `python` keeps its own
/// allocator.
#[cfg(all(target_os = "linux", any(test, feature = "python")))]
#[global_allocator]
static ALLOC: runtime::huge_pages::HugePages = runtime::huge_pages::HugePages;

// The public API: encode and decode with a vocabulary (ids as text as the command line
// writes them: `id_text`), learn one.
pub use encode::encoder::{Allowed, Encoder};
pub use encode::pretok::file_cuts::{file_cuts_apply, last_file_cut};
pub use encode::pretok::{CL100K_PATTERN, O200K_PATTERN, OPENAI_PATTERNS, R50K_PATTERN};
pub use error::{Error, Result};
pub use train::{learn, Counter, Hook, Learned, MergeConfig, Piece, PieceCounts, Progress};
pub use vocab::id_text;
pub use vocab::tiktoken_file::parse as parse_tiktoken;
pub use vocab::{Rank, Vocab};

/// The internals that `rust/tests`, `rust/benches` and `rust/fuzz` test and measure on their
/// own (each stage of encoding beside the reference it must equal). For tests and benches
/// only: not an API, and free to change with the code.
#[doc(hidden)]
pub mod internals {
    pub use crate::encode::bpe::backtrack::Backtrack;
    pub use crate::encode::bpe::pair_filter::PairFilter;
    pub use crate::encode::bpe::piece_cache::PieceCache;
    pub use crate::encode::bpe::tables::BpeVocab;
    pub use crate::encode::bpe::{encode_piece, merge_heap};
    pub use crate::encode::pretok::general::General;
    pub use crate::encode::pretok::{Splitter, KIMI_K2_PATTERN};
    pub use crate::pipeline::pre_tokenizers::PreTokenizer;
    pub use crate::pipeline::scanners::{known_sequence, NAMES as FUSED_SCANNERS};
    #[cfg(target_os = "linux")]
    pub use crate::runtime::huge_pages::HugePages;
}
