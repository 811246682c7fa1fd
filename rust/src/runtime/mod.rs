//! Threads and memory: where work runs, never what it computes. Nothing here knows BPE.
//!
//! Pools that belong to one process ([`pool`]), batches spread over the calling thread and
//! kept helpers ([`batch`], taking items from both ends with [`two_ends`]), one-time work
//! that a forked child redoes ([`process_once`]), per-thread slots that survive a fork
//! ([`thread_slots`]), and 2 MiB pages for the big tables ([`huge_pages`]).

// Batches serve the bindings only: built for them and for their tests.
#[cfg(any(test, feature = "python"))]
pub mod batch;
#[cfg(target_os = "linux")]
pub mod huge_pages;
pub mod interrupt;
pub mod pool;
pub mod process_once;
pub mod thread_slots;
#[cfg(any(test, feature = "python"))]
pub mod two_ends;
