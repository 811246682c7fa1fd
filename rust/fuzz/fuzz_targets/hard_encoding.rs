//! Hardening target `encoding`: see `../checks.rs` for what it checks. Run from `rust/`:
//! `cargo +nightly fuzz run hard_encoding -- -max_len=200000 -timeout=5`. The same check runs on
//! stable as `cargo test --release --test fuzz_loops`.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::encoding(data));
