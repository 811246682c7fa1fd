"""Sampling the next token: temperature, top-k and nucleus (top-p) sampling.

`TransformerLM.generate` (and `ferrotok.nn.generate`, in `transformer.py` beside the model whose
KV caches it drives) samples with it token by token.

Top-k: Fan et al., "Hierarchical Neural Story Generation" (2018). Nucleus sampling: Holtzman et
al., "The Curious Case of Neural Text Degeneration" (ICLR 2020).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["sample_next_token"]


def sample_next_token(
    logits: Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Pick one token per row of ``logits [b, vocab]``; returns ``[b]`` (int64).

    ``temperature == 0`` is greedy (argmax). Otherwise logits are divided by ``temperature``,
    restricted to the ``top_k`` largest and/or to the smallest set whose probability reaches
    ``top_p``, then sampled.

    Example:
        >>> sample_next_token(torch.tensor([[0.0, 5.0, 1.0]]), temperature=0).tolist()
        [1]
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must be [b, vocab], got {tuple(logits.shape)}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and top_k <= 0:
        raise ValueError(f"top_k must be positive, got {top_k}")
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens before it already reach top_p (the top one always stays)
        drop = probs.cumsum(dim=-1) - probs >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)
