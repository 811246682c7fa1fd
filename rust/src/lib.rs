//! ferrotok's core: byte-level BPE that gives tiktoken's ids, and trains.
//!
//! The road a token takes, one module each:
//! special-token split ([`special`]) → pre-tokenization ([`pretok`]) →
//! merge-rank BPE on each piece ([`bpe`]) over a vocabulary ([`vocab`]),
//! put together by [`encoder`]. `py` only converts types and errors for Python;
//! a batch runs on the calling thread and kept helpers ([`batch`]), which take its items
//! from [`two_ends`]. Parallel work runs in pools of the calling process ([`pool`]), never in
//! rayon's global pool, which a forked child inherits without its threads.

pub mod backtrack;
pub mod batch;
pub mod blocked_bloom;
pub mod bpe;
pub mod char_cuts;
pub mod char_steps;
pub mod encoder;
pub mod error;
#[cfg(target_os = "linux")]
pub mod huge_pages;
pub mod id_text;
pub mod mid_table;
pub mod pair_filter;
pub mod pair_memo;
pub mod pair_table;
pub mod piece_cache;
pub mod pool;
pub mod prefix_trie;
pub mod pretok;
pub mod process_once;
pub mod short_table;
pub mod special;
pub mod thread_slots;
pub mod tiktoken_file;
pub mod token_table;
pub mod train;
pub mod two_ends;
pub mod vocab;

#[cfg(feature = "python")]
mod py;

/// The extension's tables on 2 MiB pages (see [`huge_pages`]); the crate's own tests run on
/// it too. A Rust program that links the crate without `python` keeps its own allocator.
#[cfg(all(target_os = "linux", any(test, feature = "python")))]
#[global_allocator]
static ALLOC: huge_pages::HugePages = huge_pages::HugePages;

pub use encoder::{Allowed, Encoder};
pub use error::{Error, Result};
pub use vocab::Rank;
