//! `cargo bench --bench encode`: where encoding time goes, stage by stage, on the shared corpus.
//!
//! Needs `FERROTOK_DATA_DIR` (the .tiktoken files) and `FERROTOK_CORPUS_DIR` (or `../shared`
//! beside the project). Prints MB/s for: splitting only, BPE only (on pre-split pieces), and the
//! whole encode, per encoding and corpus. The Python-level comparison with tiktoken and the
//! other peers is `python benches/encode.py`.

use ferrotok::{parse_tiktoken, Allowed, Encoder};
use std::path::PathBuf;
use std::time::Instant;

/// The allocator the Python extension runs on, so that these figures are the extension's
/// (with the `python` feature the crate registers it itself).
#[cfg(all(target_os = "linux", not(feature = "python")))]
#[global_allocator]
static ALLOC: ferrotok::internals::HugePages = ferrotok::internals::HugePages;

const CL100K: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);

fn shared(sub: &str, var: &str) -> PathBuf {
    if let Ok(d) = std::env::var(var) {
        return PathBuf::from(d);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared")
        .join(sub)
}

fn mbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

fn main() {
    let data = shared("encodings", "FERROTOK_DATA_DIR");
    let corpus = shared("corpus", "FERROTOK_CORPUS_DIR");
    let kb: usize = std::env::var("BENCH_KB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8 << 10);
    for (name, file, pat) in [
        ("cl100k_base", "cl100k_base.tiktoken", CL100K),
        ("o200k_base", "o200k_base.tiktoken", O200K),
    ] {
        let raw = std::fs::read(data.join(file)).expect("encoding file (set FERROTOK_DATA_DIR)");
        let t = Instant::now();
        let ranks = parse_tiktoken(&raw, file).expect("valid file");
        let parse_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let enc = Encoder::new(ranks, vec![("<|endoftext|>".into(), 1_000_000)], pat).unwrap();
        println!(
            "{name}: parse {:.1} ms, build {:.1} ms",
            parse_s * 1e3,
            t.elapsed().as_secs_f64() * 1e3
        );
        for corp in ["english.txt", "code.txt", "multilingual.txt"] {
            let text = std::fs::read_to_string(corpus.join(corp))
                .expect("corpus (set FERROTOK_CORPUS_DIR)");
            let mut end = (kb << 10).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let text = &text[..end];
            let t = Instant::now();
            let mut pieces: Vec<&str> = Vec::new();
            enc.splitter
                .for_each_piece(text, |p| {
                    pieces.push(p);
                    Ok(())
                })
                .unwrap();
            let split_s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let mut out = Vec::with_capacity(text.len() / 3);
            let cache = ferrotok::internals::PieceCache::new();
            let mut local = cache.local();
            for p in &pieces {
                ferrotok::internals::encode_piece(&enc.vocab, p.as_bytes(), &mut local, &mut out)
                    .unwrap();
            }
            let bpe_s = t.elapsed().as_secs_f64();
            if std::env::var("BENCH_STATS").is_ok() {
                let multi: Vec<&&str> = pieces
                    .iter()
                    .filter(|p| p.len() > 1 && enc.vocab.rank(p.as_bytes()).is_none())
                    .collect();
                let distinct: std::collections::HashSet<&&&str> = multi.iter().collect();
                let long = multi.iter().filter(|p| p.len() > 32).count();
                println!(
                    "    multi-token pieces {} ({} distinct, {} longer than 32 bytes)",
                    multi.len(),
                    distinct.len(),
                    long
                );
            }
            let t = Instant::now();
            let ids = enc.encode_ordinary(text).unwrap();
            let all_s = t.elapsed().as_secs_f64();
            assert_eq!(ids, out);
            println!(
                "  {corp:18} split {:7.1} MB/s   bpe {:7.1} MB/s   encode {:7.1} MB/s   ({} pieces, {} ids)",
                mbps(text.len(), split_s), mbps(text.len(), bpe_s), mbps(text.len(), all_s), pieces.len(), ids.len()
            );
        }
        // One long piece each: the backtracking encoder (`encode/bpe/backtrack.rs`), on its first pass over
        // the file (for random letters the pair memo holds none of its pairs yet, so checks
        // unwind through the pair filter and table) and on its third (the memo holds the
        // file's pairs as far as it has room).
        for file in ["random_lowercase_100k.txt", "repeat_cjk_100k.txt"] {
            let text = std::fs::read_to_string(corpus.join("adversarial").join(file))
                .expect("adversarial corpus file");
            let mut times = [0.0; 3];
            for t in &mut times {
                let start = Instant::now();
                std::hint::black_box(enc.encode_ordinary(&text).unwrap());
                *t = start.elapsed().as_secs_f64();
            }
            println!(
                "  {file:26} first pass {:7.1} MB/s   third pass {:7.1} MB/s",
                mbps(text.len(), times[0]),
                mbps(text.len(), times[2])
            );
        }
        for file in ["minified_js_line.txt", "random_lowercase_100k.txt"] {
            let text = std::fs::read_to_string(corpus.join("adversarial").join(file))
                .expect("adversarial corpus file");
            repeated_content(&enc, file, &text);
        }
    }
}

/// Why `benches/encode.py` times linearity on both halves of a file, not on its first half
/// repeated: the same text encoded call after call runs faster than text seen once, because
/// the branch predictor and the content-keyed caches (piece cache, pair memo) learn it, and a
/// half learns better than the whole file, twice as much content. A copy of the half at
/// another address costs what the half does (so it is not the data's footprint), the half
/// alternating with the other half costs more, and the whole file costs what the two halves
/// alternating do.
fn repeated_content(enc: &Encoder, file: &str, text: &str) {
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid -= 1;
    }
    let (first, second) = (&text[..mid], &text[mid..]);
    let copy = first.to_string();
    let per_call = |texts: &[&str]| {
        let n = 400;
        let t = Instant::now();
        for i in 0..n {
            let text = std::hint::black_box(texts[i % texts.len()]);
            std::hint::black_box(enc.count(text, Allowed::None).unwrap());
        }
        t.elapsed().as_secs_f64() * 1e3 / n as f64
    };
    per_call(&[text]);
    println!(
        "  {file:26} ms a call: first half repeated {:.3}, alternating with a copy {:.3}, \
         with the second half {:.3}; whole file {:.3}",
        per_call(&[first]),
        per_call(&[first, &copy]),
        per_call(&[first, second]),
        per_call(&[text]),
    );
}
