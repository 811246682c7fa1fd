"""Benchmark: ferrotok.nn.MultiHeadAttention vs torch.nn.MultiheadAttention's fast path on CPU.

Self-attention forward, float32, inference (eval + no_grad, where torch uses its fused
``_native_multi_head_attention`` kernel), default shape b=8, s=512, d=512, 8 heads. Both modules
share the same weights; runs are interleaved (ours, torch, ours, torch, ...) so that machine load
affects both alike, and the medians are reported with their ratio.

    python benches/attention.py [--batch 8] [--seq 512] [--dim 512] [--heads 8] [--rounds 30]

Not a test: speed is only measured here, never asserted in the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from ferrotok.nn import MultiHeadAttention
from torch import nn


def build(dim: int, heads: int, causal: bool) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(dim, heads, bias=True, batch_first=True).eval()
    ours = MultiHeadAttention(dim, heads, bias=True, is_causal=causal).eval()
    with torch.no_grad():
        for proj, w, b in zip(
            (ours.q_proj, ours.k_proj, ours.v_proj),
            ref.in_proj_weight.chunk(3),
            ref.in_proj_bias.chunk(3),
        ):
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        ours.output_proj.weight.copy_(ref.out_proj.weight)
        ours.output_proj.bias.copy_(ref.out_proj.bias)
    return ours, ref


def uses_fast_path(ref: nn.MultiheadAttention, x: torch.Tensor, **kwargs) -> bool:
    from torch.profiler import profile

    with torch.no_grad(), profile() as prof:
        ref(x, x, x, need_weights=False, **kwargs)
    return any("native_multi_head_attention" in e.key for e in prof.key_averages())


def bench(dim: int, heads: int, batch: int, seq: int, rounds: int, causal: bool) -> None:
    ours, ref = build(dim, heads, causal)
    x = torch.randn(batch, seq, dim)
    ref_kwargs: dict = {}
    if causal:
        ref_kwargs = dict(
            attn_mask=nn.Transformer.generate_square_subsequent_mask(seq), is_causal=True
        )

    def run_ours() -> torch.Tensor:
        return ours(x)

    def run_ref() -> torch.Tensor:
        return ref(x, x, x, need_weights=False, **ref_kwargs)[0]

    with torch.no_grad():
        diff = (run_ours() - run_ref()).abs().max().item()
        for _ in range(3):  # warm-up
            run_ours()
            run_ref()
        t_ours, t_ref = [], []
        for i in range(rounds):
            order = (run_ours, run_ref) if i % 2 == 0 else (run_ref, run_ours)
            for fn in order:
                start = time.perf_counter()
                fn()
                elapsed = (time.perf_counter() - start) * 1e3
                (t_ours if fn is run_ours else t_ref).append(elapsed)
    m_ours, m_ref = statistics.median(t_ours), statistics.median(t_ref)
    fast = uses_fast_path(ref, x, **ref_kwargs)
    label = "causal" if causal else "no mask"
    print(f"[{label}] b={batch} s={seq} d={dim} heads={heads} float32, {rounds} interleaved rounds")
    print(f"  ferrotok MultiHeadAttention   median {m_ours:8.2f} ms  (min {min(t_ours):.2f})")
    print(
        f"  torch nn.MultiheadAttention   median {m_ref:8.2f} ms  (min {min(t_ref):.2f})"
        f"  fast path: {'yes' if fast else 'no'}"
    )
    print(f"  ratio ours/torch = {m_ours / m_ref:.3f}   max |diff| = {diff:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--causal", action="store_true", help="also time causal attention")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    bench(args.dim, args.heads, args.batch, args.seq, args.rounds, causal=False)
    if args.causal:
        bench(args.dim, args.heads, args.batch, args.seq, args.rounds, causal=True)


if __name__ == "__main__":
    main()
