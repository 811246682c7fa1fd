//! HF's merging in `bpe_model.rs` (the short-word arrays, the heap, the packed merge table)
//! against a plain statement of HF's rule on random vocabularies: repeatedly merge the
//! adjacent pair of lowest rank, leftmost among equals, until no pair is a merge.

use super::HfBpe;
use crate::pipeline::byte_level::char_of;
use crate::test_rng::Rng;
use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::{json, Value};

/// A merge's left and right tokens.
type Merge = (Vec<u8>, Vec<u8>);

fn text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char_of(b)).collect()
}

/// A model over the 256 bytes whose merges join random tokens of a 4-letter alphabet, and
/// sometimes a second split of a token already made (two merges make one token). With
/// `shuffle`, ids are not in merge order.
fn model(seed: u64, n_merges: usize, shuffle: bool) -> (Value, Vec<Merge>) {
    let mut rng = Rng(seed);
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let mut merges: Vec<Merge> = Vec::new();
    let mut listed: FxHashSet<Merge> = FxHashSet::default();
    let mut known: FxHashSet<Vec<u8>> = tokens.iter().cloned().collect();
    let letters = b"abcd";
    let mut pool: Vec<Vec<u8>> = letters.iter().map(|&b| vec![b]).collect();
    while merges.len() < n_merges {
        let a = pool[rng.below(pool.len())].clone();
        let b = pool[rng.below(pool.len())].clone();
        let mut t = a.clone();
        t.extend_from_slice(&b);
        if t.len() > 16 || listed.contains(&(a.clone(), b.clone())) {
            continue;
        }
        if known.insert(t.clone()) {
            tokens.push(t.clone());
            pool.push(t);
        } else if rng.below(4) != 0 {
            continue; // a second merge for a token: now and then only
        }
        listed.insert((a.clone(), b.clone()));
        merges.push((a, b));
    }
    let mut ids: Vec<u32> = (0..tokens.len() as u32).collect();
    if shuffle {
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.below(i + 1));
        }
    }
    let vocab: serde_json::Map<String, Value> = tokens
        .iter()
        .zip(&ids)
        .map(|(t, &id)| (text(t), json!(id)))
        .collect();
    let lines: Vec<Value> = merges
        .iter()
        .map(|(a, b)| json!(format!("{} {}", text(a), text(b))))
        .collect();
    (
        json!({"type": "BPE", "vocab": vocab, "merges": lines}),
        merges,
    )
}

/// Each merge's line, by its pair.
fn ranks(merges: &[Merge]) -> FxHashMap<(&[u8], &[u8]), usize> {
    merges
        .iter()
        .enumerate()
        .map(|(r, (a, b))| ((&a[..], &b[..]), r))
        .collect()
}

/// HF's rule, stated plainly on strings (`rank`: a merge's line).
fn reference(word: &[u8], rank: &FxHashMap<(&[u8], &[u8]), usize>, vocab: &Value) -> Vec<u32> {
    let mut syms: Vec<Vec<u8>> = word.iter().map(|&b| vec![b]).collect();
    loop {
        let best = (0..syms.len().saturating_sub(1))
            .filter_map(|i| rank.get(&(&syms[i][..], &syms[i + 1][..])).map(|&r| (r, i)))
            .min();
        let Some((_, i)) = best else { break };
        let right = syms.remove(i + 1);
        syms[i].extend_from_slice(&right);
    }
    syms.iter()
        .map(|s| {
            vocab[text(s)]
                .as_u64()
                .expect("a merged token is in the vocab") as u32
        })
        .collect()
}

#[test]
fn merging_is_hf_rule_on_random_models() {
    // The last two have more merges than the merge table's hot part holds.
    for (seed, n, shuffle) in [
        (1, 300, false),
        (2, 300, true),
        (3, 20_000, false),
        (4, 20_000, true),
    ] {
        let (m, merges) = model(seed, n, shuffle);
        let rank = ranks(&merges);
        let (bpe, _) = HfBpe::from_json(&m).expect("a valid model");
        let mut rng = Rng(seed * 7919);
        for _ in 0..3000 {
            // Lengths on both sides of the short paths' limits (16, 64).
            let len = rng.below(90);
            let word: Vec<u8> = (0..len).map(|_| b"abcd"[rng.below(4)]).collect();
            let want = reference(&word, &rank, &m["vocab"]);
            let mut fast = Vec::new();
            bpe.merge(&word, &mut fast, None);
            assert_eq!(
                fast,
                want,
                "short path, word {:?}",
                String::from_utf8_lossy(&word)
            );
            let (mut heap, mut lens) = (Vec::new(), Vec::new());
            bpe.merge(&word, &mut heap, Some(&mut lens));
            assert_eq!(
                heap,
                want,
                "heap, word {:?}",
                String::from_utf8_lossy(&word)
            );
            assert_eq!(lens.iter().sum::<u32>() as usize, word.len());
        }
    }
}

/// `whole_word_is` says yes only where BPE of a token's bytes is that token, and, before
/// `build_tables`, only once that answer has been found at an earlier word.
#[test]
fn a_whole_word_is_taken_only_where_bpe_reaches_it() {
    for (seed, shuffle) in [(5, false), (6, true)] {
        let (m, merges) = model(seed, 400, shuffle);
        let rank = ranks(&merges);
        let (bpe, _) = HfBpe::from_json(&m).expect("a valid model");
        let tokens: Vec<(Vec<u8>, u32)> = merges
            .iter()
            .map(|(a, b)| [&a[..], &b[..]].concat())
            .map(|t| {
                let id = m["vocab"][text(&t)].as_u64().expect("a token") as u32;
                (t, id)
            })
            .collect();
        for (t, id) in &tokens {
            assert!(!bpe.whole_word_is(*id), "not asked yet: {t:?}");
        }
        let mut unreached = 0;
        for (t, id) in &tokens {
            let reached = reference(t, &rank, &m["vocab"]) == [*id];
            unreached += usize::from(!reached);
            assert_eq!(bpe.reaches(*id, t), reached, "{t:?}");
            assert_eq!(bpe.whole_word_is(*id), reached, "asked once: {t:?}");
        }
        assert!(unreached > 0, "the models have tokens BPE does not reach");
    }
}

/// tiktoken's rule on `word`: merge the adjacent pair whose concatenation has the lowest id,
/// leftmost among equals, until no pair concatenates to a token. The ids, and the last
/// merge's parts.
fn tiktoken_rule(word: &[u8], ids: &FxHashMap<Vec<u8>, u32>) -> (Vec<u32>, Option<Merge>) {
    let mut parts: Vec<Vec<u8>> = word.iter().map(|&b| vec![b]).collect();
    let mut last = None;
    loop {
        let best = (0..parts.len().saturating_sub(1))
            .filter_map(|i| {
                ids.get(&[&parts[i][..], &parts[i + 1][..]].concat())
                    .map(|&r| (r, i))
            })
            .min();
        let Some((_, i)) = best else { break };
        let right = parts.remove(i + 1);
        last = Some((parts[i].clone(), right.clone()));
        parts[i].extend_from_slice(&right);
    }
    (parts.iter().map(|p| ids[p]).collect(), last)
}

/// `choose_paths`'s claim: where the last merge of tiktoken's rule on each token's own bytes
/// is a listed merge (C1) and merge lines come in the order of the ids they make (C2), HF's
/// merging is tiktoken's rule with ids as ranks on every word. Whatever other splits of a
/// token are listed (none, as in a vocabulary HF trained; all, as in one converted from
/// tiktoken's), in whatever order among themselves, and even where a token ranks below its
/// parts.
#[test]
fn hf_merging_is_tiktokens_rule_where_c1_and_c2_hold() {
    let mut several_splits = 0;
    for seed in 0..60u64 {
        let mut rng = Rng(seed * 104_729 + 17);
        // Tokens made by joining two earlier ones, as BPE training does: many end up with
        // several splits into two tokens (runs of one letter, periodic strings).
        let mut made: Vec<Vec<u8>> = Vec::new();
        let mut pool: Vec<Vec<u8>> = b"abc".iter().map(|&b| vec![b]).collect();
        while made.len() < 40 {
            let t = [
                &pool[rng.below(pool.len())][..],
                &pool[rng.below(pool.len())][..],
            ]
            .concat();
            if t.len() <= 8 && !made.contains(&t) {
                made.push(t.clone());
                pool.push(t);
            }
        }
        // Ids 256.. in a random order of the made tokens.
        for i in (1..made.len()).rev() {
            made.swap(i, rng.below(i + 1));
        }
        let mut ids: FxHashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], b as u32)).collect();
        for (i, t) in made.iter().enumerate() {
            ids.insert(t.clone(), 256 + i as u32);
        }
        // Per token, by the id made: the split tiktoken's rule ends in, and the other splits
        // into two tokens in all models, none or a random few, a token's own shuffled.
        let others = seed % 3;
        let mut merges: Vec<Merge> = Vec::new();
        for t in &made {
            let last = tiktoken_rule(t, &ids)
                .1
                .filter(|(a, b)| a.len() + b.len() == t.len());
            let splits: Vec<Merge> = (1..t.len())
                .filter(|&k| ids.contains_key(&t[..k]) && ids.contains_key(&t[k..]))
                .map(|k| (t[..k].to_vec(), t[k..].to_vec()))
                .collect();
            several_splits += usize::from(splits.len() > 1);
            let mut own: Vec<Merge> = splits
                .into_iter()
                .filter(|m| {
                    Some(m) == last.as_ref() || others == 0 || others == 2 && rng.below(2) == 0
                })
                .collect();
            for i in (1..own.len()).rev() {
                own.swap(i, rng.below(i + 1));
            }
            merges.extend(own);
        }
        let vocab: serde_json::Map<String, Value> =
            ids.iter().map(|(t, &id)| (text(t), json!(id))).collect();
        let lines: Vec<Value> = merges
            .iter()
            .map(|(a, b)| json!(format!("{} {}", text(a), text(b))))
            .collect();
        let m = json!({"type": "BPE", "vocab": vocab, "merges": lines});
        let (bpe, _) = HfBpe::from_json(&m).expect("a valid model");
        for _ in 0..400 {
            let len = 2 + rng.below(40);
            let word: Vec<u8> = (0..len).map(|_| b"abc"[rng.below(3)]).collect();
            let mut hf = Vec::new();
            bpe.merge(&word, &mut hf, None);
            assert_eq!(
                hf,
                tiktoken_rule(&word, &ids).0,
                "seed {seed}, word {:?}",
                String::from_utf8_lossy(&word)
            );
        }
    }
    // Not vacuous: tokens with several splits into two tokens, which HF lists or not.
    assert!(several_splits > 500, "{several_splits}");
}
