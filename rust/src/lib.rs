//! ferrotok's core: byte-level BPE that gives tiktoken's ids, and trains.
//!
//! The road a token takes, one folder a stage: the vocabulary ([`vocab`]: bytes ⇄ ids and
//! the `.tiktoken` parser) → encoding ([`encode`]: special-token split, pre-tokenization,
//! merge-rank BPE on each piece, put together by [`encode::encoder`]). [`train`] learns a
//! vocabulary; [`runtime`] runs work on threads (pools of the calling process, never rayon's
//! global pool, which a forked child inherits without its threads) and knows no BPE. `py`
//! only converts types and errors for Python.

pub mod encode;
pub mod error;
pub mod runtime;
pub mod train;
pub mod vocab;

#[cfg(feature = "python")]
mod py;

/// The extension's tables on 2 MiB pages (see [`runtime::huge_pages`]); the crate's own tests run on
/// it too. A Rust program that links the crate without `python` keeps its own allocator.
#[cfg(all(target_os = "linux", any(test, feature = "python")))]
#[global_allocator]
static ALLOC: runtime::huge_pages::HugePages = runtime::huge_pages::HugePages;

pub use encode::encoder::{Allowed, Encoder};
pub use error::{Error, Result};
pub use vocab::Rank;
