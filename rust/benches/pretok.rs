//! Pre-tokenization throughput: fancy-regex (the reference, as tiktoken runs
//! the pattern) against the splitter `Splitter::new` picks, and against the
//! general path, per pattern family and corpus file.
//!
//! `cargo bench --bench pretok` (release profile). Environment:
//! - `FERROTOK_CORPUS_DIR`: the corpus (else `shared/corpus` beside an ancestor);
//! - `FERROTOK_BENCH_MB`: use only the first N MB of each file;
//! - `FERROTOK_BENCH_REPS`: runs of each fast splitter, best taken (default 3);
//! - `FERROTOK_BENCH_FAMILY`: only this family (r50k, cl100k or o200k);
//! - `FERROTOK_BENCH_FILE`: only corpus files whose label contains this;
//! - `FERROTOK_BENCH_FAST_ONLY=1`: time only the picked splitters (for profiling).

use std::path::{Path, PathBuf};
use std::time::Instant;

use ferrotok::internals::{General, Splitter};
use ferrotok::{CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN};

fn corpus_dir() -> PathBuf {
    if let Ok(d) = std::env::var("FERROTOK_CORPUS_DIR") {
        return PathBuf::from(d);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.ancestors()
        .map(|d| d.join("shared").join("corpus"))
        .find(|p| p.join("english.txt").is_file())
        .unwrap_or_else(|| panic!("shared corpus not found; set FERROTOK_CORPUS_DIR"))
}

/// CPU time of this thread in seconds (the machine is shared, so wall time
/// overstates the cost under load); falls back to wall time if unavailable.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Seconds (CPU time of this thread, else wall) and piece count of one pass.
fn run(s: &Splitter, text: &str) -> (f64, usize) {
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    let mut n = 0usize;
    s.for_each_piece(text, |p| {
        n += std::hint::black_box(p).len().min(1);
        Ok(())
    })
    .unwrap();
    let wall = t0.elapsed().as_secs_f64();
    match (c0, cpu_seconds()) {
        (Some(a), Some(b)) if b > a => (b - a, n),
        _ => (wall, n),
    }
}

fn best(s: &Splitter, text: &str, reps: usize) -> (f64, usize) {
    (0..reps.max(1))
        .map(|_| run(s, text))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: be quick then.
    let quick = !std::env::args().any(|a| a == "--bench");
    let dir = corpus_dir();
    let max_mb: Option<usize> = std::env::var("FERROTOK_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .or(if quick { Some(1) } else { None });
    let reps: usize = std::env::var("FERROTOK_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let fast_only = std::env::var("FERROTOK_BENCH_FAST_ONLY").as_deref() == Ok("1");
    let mut files: Vec<(String, String)> = Vec::new();
    for name in ["english.txt", "code.txt", "multilingual.txt"] {
        let t = std::fs::read_to_string(dir.join(name)).expect("corpus file");
        files.push((name.to_string(), t));
    }
    let mut adv = String::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir.join("adversarial"))
        .expect("adversarial dir")
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in names {
        adv.push_str(&std::fs::read_to_string(p).expect("adversarial file"));
    }
    files.push(("adversarial/* (concatenated)".to_string(), adv));
    if let Some(mb) = max_mb {
        for (_, t) in &mut files {
            let mut n = (mb << 20).min(t.len());
            while !t.is_char_boundary(n) {
                n -= 1;
            }
            t.truncate(n);
        }
    }

    println!(
        "MB/s per second of CPU time of the benchmark thread ({}); best of {reps} runs for the fast paths, 1 for fancy-regex",
        if cpu_seconds().is_some() { "/proc/thread-self/schedstat" } else { "wall clock: no schedstat" }
    );
    println!(
        "{:<8} {:<30} {:>8} {:>12} {:>12} {:>9} {:>12} {:>9}",
        "family", "corpus", "MB", "fancy MB/s", "fast MB/s", "speedup", "general MB/s", "speedup"
    );
    for (family, pattern) in [
        ("r50k", R50K_PATTERN),
        ("cl100k", CL100K_PATTERN),
        ("o200k", O200K_PATTERN),
    ] {
        if std::env::var("FERROTOK_BENCH_FAMILY").is_ok_and(|f| f != family) {
            continue;
        }
        let fancy = Splitter::reference(pattern).unwrap();
        let fast = Splitter::new(pattern).unwrap();
        let general = Splitter::General(Box::new(General::new(pattern).unwrap()));
        for (label, text) in &files {
            if std::env::var("FERROTOK_BENCH_FILE").is_ok_and(|f| !label.contains(&f)) {
                continue;
            }
            let mb = text.len() as f64 / 1e6;
            let (ts, ns) = best(&fast, text, reps);
            if fast_only {
                println!(
                    "{family:<8} {label:<30} {mb:>8.1} {:>12} {:>12.1}",
                    "-",
                    mb / ts
                );
                continue;
            }
            let (tf, nf) = run(&fancy, text);
            let (tg, ng) = best(&general, text, reps);
            assert_eq!((nf, nf), (ns, ng), "piece counts differ");
            println!(
                "{:<8} {:<30} {:>8.1} {:>12.1} {:>12.1} {:>8.1}x {:>12.1} {:>8.1}x",
                family,
                label,
                mb,
                mb / tf,
                mb / ts,
                tf / ts,
                mb / tg,
                tf / tg
            );
        }
    }
}
