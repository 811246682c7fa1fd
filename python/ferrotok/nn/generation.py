"""Autoregressive sampling with a KV cache: temperature, top-k and nucleus (top-p) sampling.

Top-k: Fan et al., "Hierarchical Neural Story Generation" (2018). Nucleus sampling: Holtzman et
al., "The Curious Case of Neural Text Degeneration" (ICLR 2020).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from .transformer import TransformerLM

__all__ = ["sample_next_token", "generate"]


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


@torch.no_grad()
def generate(
    model: TransformerLM,
    prompt: Tensor,
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_token: int | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Extend ``prompt`` (``[s]`` or ``[b, s]`` token ids) by up to ``max_new_tokens``.

    The prompt is run once (prefill), then one token per step against the KV cache. If the model
    already has caches for this batch size, long enough, they are reset and reused (so a
    ``torch.compile``-d model keeps its compiled decode step); otherwise caches of
    ``s + max_new_tokens`` positions are set up and removed afterwards. Rows that produced
    ``eos_token`` keep emitting it; generation stops when every row has. Returns the prompt
    followed by the new tokens, with ``prompt``'s number of dimensions.
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    squeeze = prompt.dim() == 1
    tokens = prompt.unsqueeze(0) if squeeze else prompt
    if tokens.dim() != 2 or tokens.shape[1] == 0:
        raise ValueError(
            f"prompt must be a non-empty [s] or [b, s] tensor, got {tuple(prompt.shape)}"
        )
    b, s = tokens.shape
    total = s + max_new_tokens
    if model.positional in ("rope", "learned") and total > model.max_seq_len:
        rope = model._blocks[0].attn.pos_embeddings
        if model.positional == "learned" or getattr(rope, "rope_type", "") != "dynamic":
            raise ValueError(
                f"prompt length {s} + max_new_tokens {max_new_tokens} = {total} exceeds the "
                f"model's max_seq_len={model.max_seq_len}"
            )
    if max_new_tokens == 0:
        return prompt.clone()

    cache = model._blocks[0].attn.kv_cache
    reuse = cache is not None and cache.batch_size == b and cache.max_seq_len >= total
    was_training = model.training
    model.eval()
    if reuse:
        model.reset_cache()
    else:
        model.setup_cache(b, total)
    try:
        device = tokens.device
        logits = model(tokens, input_pos=torch.arange(s, device=device))[:, -1]
        finished = torch.zeros(b, dtype=torch.bool, device=device)
        new: list[Tensor] = []
        for i in range(max_new_tokens):
            nxt = sample_next_token(
                logits, temperature=temperature, top_k=top_k, top_p=top_p, generator=generator
            )
            if eos_token is not None:
                nxt = nxt.masked_fill(finished, eos_token)
                finished |= nxt == eos_token
            new.append(nxt)
            if i == max_new_tokens - 1 or (eos_token is not None and bool(finished.all())):
                break
            pos = torch.tensor([s + i], device=device)
            logits = model(nxt[:, None], input_pos=pos)[:, -1]
    finally:
        if reuse:
            model.reset_cache()
        else:
            model.remove_cache()
        model.train(was_training)
    out = torch.cat((tokens, torch.stack(new, dim=1).to(tokens.dtype)), dim=1)
    return out[0] if squeeze else out
