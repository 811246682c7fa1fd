//! The brute-force trainer: the definition in `train/mod.rs`, written as plainly as
//! possible (every pair recounted from scratch at every step). Tests only.

use super::merge::MergeConfig;
use crate::vocab::Rank;
use std::collections::BTreeMap;

pub fn learn(pieces: &[(Vec<u8>, u64)], cfg: MergeConfig) -> Vec<(Rank, Rank)> {
    let mut words: Vec<(Vec<Rank>, u64)> = pieces
        .iter()
        .map(|(p, c)| (p.iter().map(|&b| Rank::from(b)).collect(), *c))
        .collect();
    let mut lens: Vec<usize> = vec![1; 256];
    let mut banned = std::collections::BTreeSet::new();
    let mut merges = Vec::new();
    while merges.len() < cfg.n_merges {
        let mut counts: BTreeMap<(Rank, Rank), u64> = BTreeMap::new();
        for (w, c) in &words {
            for p in w.windows(2) {
                *counts.entry((p[0], p[1])).or_insert(0) += c;
            }
        }
        // Highest count; among equal counts the smallest pair (BTreeMap iterates in order).
        let mut best: Option<((Rank, Rank), u64)> = None;
        for (&pair, &c) in &counts {
            if banned.contains(&pair) {
                continue;
            }
            if best.is_none_or(|(_, bc)| c > bc) {
                best = Some((pair, c));
            }
        }
        let Some(((a, b), c)) = best else { break };
        if c < cfg.min_frequency {
            break;
        }
        if cfg
            .max_token_length
            .is_some_and(|m| lens[a as usize] + lens[b as usize] > m)
        {
            banned.insert((a, b));
            continue;
        }
        let z = 256 + merges.len() as Rank;
        lens.push(lens[a as usize] + lens[b as usize]);
        for (w, _) in &mut words {
            let mut out = Vec::with_capacity(w.len());
            let mut i = 0;
            while i < w.len() {
                if i + 1 < w.len() && w[i] == a && w[i + 1] == b {
                    out.push(z);
                    i += 2;
                } else {
                    out.push(w[i]);
                    i += 1;
                }
            }
            *w = out;
        }
        merges.push((a, b));
    }
    merges
}
