//! The hardening fuzz targets' checks (`rust/fuzz/checks.rs`) on stable: each fed
//! pseudo-random inputs, mutated from seeds as a fuzzer would (byte flips, splices, long
//! repeats), so they run in `cargo test` where cargo-fuzz and nightly are not installed.
//!
//! `FERROTOK_FUZZ_SECONDS` sets how long each target runs (default: a fixed, small number of
//! inputs); a soak run is e.g. `FERROTOK_FUZZ_SECONDS=600 cargo test --release --test
//! fuzz_loops`. `FERROTOK_FUZZ_SEED` picks the seed (printed on failure via the input).

#[path = "../fuzz/checks.rs"]
mod checks;

use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// An input grown from `seeds` by the mutations a fuzzer makes, at most `max_len` bytes.
fn mutate(rng: &mut Rng, seeds: &[&[u8]], max_len: usize) -> Vec<u8> {
    let mut v = seeds[rng.below(seeds.len())].to_vec();
    for _ in 0..1 + rng.below(8) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.remove(i);
            }
            3 => {
                let other = seeds[rng.below(seeds.len())];
                let at = rng.below(v.len() + 1);
                v.splice(at..at, other.iter().copied());
            }
            4 if !v.is_empty() => {
                // A long repeat of a slice: long lines, tokens, runs.
                let a = rng.below(v.len());
                let b = (a + 1 + rng.below(8)).min(v.len());
                let piece = v[a..b].to_vec();
                let times = 1 + rng.below(max_len / piece.len().max(1) / 2 + 1);
                let at = rng.below(v.len() + 1);
                v.splice(at..at, piece.repeat(times));
            }
            _ => v.extend((0..rng.below(32)).map(|_| rng.next() as u8)),
        }
    }
    v.truncate(max_len);
    v
}

fn run(name: &str, seeds: &[&[u8]], max_len: usize, default_inputs: u32, check: fn(&[u8])) {
    let seed = std::env::var("FERROTOK_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0000_0000_0001u64);
    let limit = std::env::var("FERROTOK_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);
    let mut rng = Rng(seed ^ name.len() as u64);
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        match limit {
            Some(l) if start.elapsed() >= l => break,
            None if n >= default_inputs as u64 => break,
            _ => {}
        }
        let input = mutate(&mut rng, seeds, max_len);
        let began = Instant::now();
        if let Err(panic) = std::panic::catch_unwind(|| check(&input)) {
            // Kept for a rerun: `cargo fuzz run <target> <file>` or this harness's seed.
            let path = std::env::temp_dir().join(format!("ferrotok-fuzz-{name}.bin"));
            let _ = std::fs::write(&path, &input);
            eprintln!("{name}: failing input written to {}", path.display());
            std::panic::resume_unwind(panic);
        }
        let took = began.elapsed();
        // Not a timing assert of the code's speed: a hang guard, two orders of magnitude
        // above what any bounded input takes, so a quadratic path shows up as a failure.
        assert!(
            took < Duration::from_secs(20),
            "{name}: one input took {took:?}: {:?}",
            &input[..input.len().min(200)]
        );
        n += 1;
    }
    eprintln!("{name}: {n} inputs in {:?}", start.elapsed());
}

#[test]
fn fuzz_tiktoken_file() {
    let seeds: &[&[u8]] = &[
        b"YQ== 0\nYg== 1\nYWI= 2\n",
        b"IA== 0\nICA= 1\n",
        b"",
        b"YWJj 5\n\nYQ== 1",
        b"=== 1\n",
    ];
    run("tiktoken_file", seeds, 1 << 16, 3000, checks::tiktoken_file);
}

#[test]
fn fuzz_piece_counts() {
    let mut table =
        ferrotok::PieceCounts::new(r"\S+|\s+".into(), vec!["<|x|>".into(), "<|y|>".into()]);
    let empty = table.to_bytes();
    let mut other = ferrotok::PieceCounts::from_bytes(&empty).unwrap();
    other.specials.clear();
    let plain = other.to_bytes();
    table.specials.push("<|zz|>".into());
    let three = table.to_bytes();
    let seeds: &[&[u8]] = &[&empty, &plain, &three];
    run("piece_counts", seeds, 1 << 16, 3000, checks::piece_counts);
}

#[test]
fn fuzz_id_text() {
    let seeds: &[&[u8]] = &[
        b"\xff\xff\x01 15339, 1917\n0",
        b"\x40\x0d\x03 1, 2, 3",
        b"\x00\x00\x00[]",
        b"\xff\xff\xff007 12 -3",
    ];
    run("id_text", seeds, 1 << 16, 5000, checks::id_text);
}

#[test]
fn fuzz_encoding() {
    let seeds: &[&[u8]] = &[
        b"\x00\x10\x01abc\x02\x05hello\xe0\x02ab\xff\x10\x01zz text to encode",
        b"\x40\x08\x02\x01a\x03 the\x03\x02<|\x01\x04\x05\x06 spaces   and\n",
        b"\x20\x04\x10\x00xyzzy some text",
        b"\x60\x20\xf0\x03aaa\x10\x00\x02aaaaaaaaaaaaaaaab",
        b"\x02\x40\x01\xe1\x01Z\x00\x40\x01ZZZZ",
    ];
    run("encoding", seeds, 1 << 13, 200, checks::encoding);
}

/// Replays one input through every check: `FERROTOK_FUZZ_REPLAY=<file> cargo test --release
/// --test fuzz_loops replay -- --ignored`.
#[test]
#[ignore]
fn replay() {
    let path = std::env::var("FERROTOK_FUZZ_REPLAY").expect("set FERROTOK_FUZZ_REPLAY");
    let input = std::fs::read(path).unwrap();
    checks::tiktoken_file(&input);
    checks::piece_counts(&input);
    checks::id_text(&input);
    checks::encoding(&input);
}
