"""Scaled dot-product attention that never returns NaN, and the language-model loss.

``attention`` is ``torch.nn.functional.scaled_dot_product_attention`` (SDPA) with three
promises added on top:

* a fully masked query row yields zeros (and zero gradients), never NaN, whatever the backend;
* ``is_causal`` is aligned to the *bottom right* when query and key lengths differ, so the last
  query sees every key (what incremental decoding needs; SDPA aligns to the top left);
* ``return_weights=True`` computes the explicit ``softmax(Q Kᵀ · scale + mask) V`` and returns the
  attention weights too.

Reference: Vaswani et al., "Attention Is All You Need" (2017), eq. 1; grouped-query attention from
Ainslie et al., "GQA" (2023).
"""

from __future__ import annotations

import math
from typing import Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["attention", "causal_mask", "lm_loss", "IGNORE_INDEX"]

#: Label value ignored by :func:`lm_loss` (the ``ignore_index`` of ``torch.nn.CrossEntropyLoss``).
IGNORE_INDEX = -100


def causal_mask(
    q_len: int, kv_len: int | None = None, *, device: torch.device | str | None = None
) -> Tensor:
    """Boolean causal mask ``[q_len, kv_len]``, True = attend, aligned to the bottom right.

    Query ``i`` sits at position ``i + kv_len - q_len`` and attends the keys up to that position.
    When ``q_len == kv_len`` this is the usual lower-triangular mask.

    Example:
        >>> causal_mask(2, 3).int().tolist()
        [[1, 1, 0], [1, 1, 1]]
    """
    kv_len = q_len if kv_len is None else kv_len
    offset = kv_len - q_len
    rows = torch.arange(q_len, device=device).unsqueeze(-1) + offset
    cols = torch.arange(kv_len, device=device)
    return cols <= rows


def _check_qkv(q: Tensor, k: Tensor, v: Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(
                f"attention expects {name} of shape [batch, heads, seq, head_dim] (4 dims), "
                f"got {tuple(t.shape)}"
            )
    if k.shape[:3] != v.shape[:3]:
        raise ValueError(
            f"k and v must agree on [batch, kv_heads, kv_seq], got k {tuple(k.shape)} "
            f"and v {tuple(v.shape)}"
        )
    if q.shape[0] != k.shape[0]:
        raise ValueError(f"q and k batch sizes differ: {q.shape[0]} vs {k.shape[0]}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k head_dim differ: {q.shape[-1]} vs {k.shape[-1]} (q·k needs equal sizes)"
        )
    hq, hkv = q.shape[1], k.shape[1]
    if hq % hkv != 0:
        raise ValueError(
            f"number of query heads ({hq}) must be a multiple of the number of key/value heads "
            f"({hkv}) for grouped-query attention"
        )


def _prepare_mask(mask: Tensor | None, is_causal: bool, q: Tensor, k: Tensor) -> Tensor | None:
    """Fold ``is_causal`` into ``mask``; returns a bool or q-dtype float mask, or None."""
    lq, lk = q.shape[-2], k.shape[-2]
    if mask is not None:
        target = (q.shape[0], q.shape[1], lq, lk)
        try:
            torch.broadcast_shapes(mask.shape, target)
        except RuntimeError:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to "
                f"[batch, heads, q_len, kv_len] = {list(target)}"
            ) from None
        if mask.dtype != torch.bool and not mask.is_floating_point():
            raise TypeError(
                f"mask must be bool (True = attend) or a float additive bias, got {mask.dtype}"
            )
        if mask.is_floating_point() and mask.dtype != q.dtype:
            mask = mask.to(q.dtype)
    if not is_causal:
        return mask
    causal = causal_mask(lq, lk, device=q.device)
    if mask is None:
        return causal
    if mask.dtype == torch.bool:
        return mask & causal
    return mask.masked_fill(~causal, float("-inf"))


def _dead_rows(mask: Tensor) -> Tensor:
    """True for query rows in which no key may be attended (shape ``mask.shape[:-1] + (1,)``)."""
    if mask.dtype == torch.bool:
        return ~mask.any(dim=-1, keepdim=True)
    return torch.isneginf(mask).all(dim=-1, keepdim=True)


def _revive_rows(mask: Tensor, dead: Tensor) -> Tensor:
    """Let fully masked rows attend everywhere (their output is zeroed afterwards)."""
    if mask.dtype == torch.bool:
        return mask | dead
    return mask.masked_fill(dead, 0.0)


# The overloads tie the return type to `return_weights`, so a caller gets a Tensor or a pair,
# not a union it would have to take apart.
@overload
def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = ...,
    is_causal: bool = ...,
    scale: float | None = ...,
    dropout_p: float = ...,
    return_weights: Literal[False] = ...,
) -> Tensor: ...


@overload
def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = ...,
    is_causal: bool = ...,
    scale: float | None = ...,
    dropout_p: float = ...,
    return_weights: Literal[True],
) -> tuple[Tensor, Tensor]: ...


@overload
def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = ...,
    is_causal: bool = ...,
    scale: float | None = ...,
    dropout_p: float = ...,
    return_weights: bool = ...,
) -> Tensor | tuple[Tensor, Tensor]: ...


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    mask: Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    return_weights: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Scaled dot-product attention, ``softmax(Q Kᵀ · scale + mask) V``.

    Args:
        q: queries ``[b, h, s_q, d]``.
        k: keys ``[b, h_kv, s_kv, d]``; ``h`` must be a multiple of ``h_kv`` (grouped-query
            attention: query head ``i`` uses key/value head ``i // (h // h_kv)``).
        v: values ``[b, h_kv, s_kv, d_v]``.
        mask: broadcastable to ``[b, h, s_q, s_kv]``. A **bool** mask means True = attend
            (SDPA's convention, the opposite of ``torch.nn.MultiheadAttention``'s ``attn_mask``
            and ``key_padding_mask``, where True = ignore). A **float** mask is added to the
            scores (``-inf`` = ignore).
        is_causal: mask keys after each query, aligned to the bottom right: query ``i`` attends
            keys ``j <= i + s_kv - s_q``. Combined (AND) with ``mask`` when both are given.
        scale: score scale, default ``1 / sqrt(d)``.
        dropout_p: dropout on the attention weights (pass 0.0 at evaluation).
        return_weights: also return the weights ``[b, h, s_q, s_kv]`` (before dropout); this takes
            the explicit (slower) path instead of SDPA.

    Returns:
        ``[b, h, s_q, d_v]``, or ``(output, weights)`` when ``return_weights``. Rows whose keys
        are all masked are zeros in both.

    Example:
        >>> q = k = v = torch.randn(2, 4, 5, 8)
        >>> attention(q, k, v, is_causal=True).shape
        torch.Size([2, 4, 5, 8])
        >>> out, w = attention(q, k, v, is_causal=True, return_weights=True)
        >>> bool(torch.allclose(w.sum(-1), torch.ones(2, 4, 5)))
        True
    """
    _check_qkv(q, k, v)
    hq, hkv = q.shape[1], k.shape[1]
    lq, lk = q.shape[-2], k.shape[-2]

    if not return_weights:
        if mask is None and (not is_causal or lq == lk):
            # Fast path: SDPA's own causal kernel is correct when the lengths agree.
            return F.scaled_dot_product_attention(
                q,
                k,
                v,
                dropout_p=dropout_p,
                is_causal=is_causal,
                scale=scale,
                enable_gqa=hq != hkv,
            )
        full = _prepare_mask(mask, is_causal, q, k)
        # Not the fast path, so there is a mask or is_causal holds: _prepare_mask returned a mask.
        assert full is not None
        dead = _dead_rows(full)
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=_revive_rows(full, dead),
            dropout_p=dropout_p,
            scale=scale,
            enable_gqa=hq != hkv,
        )
        return out.masked_fill(dead, 0.0)
    return _explicit_attention(q, k, v, mask, is_causal, scale, dropout_p)


def _explicit_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    is_causal: bool,
    scale: float | None,
    dropout_p: float,
) -> tuple[Tensor, Tensor]:
    """Explicit path (Vaswani et al. 2017, eq. 1), used when the weights are wanted: returns
    ``(output, weights)`` as :func:`attention` does with ``return_weights=True``."""
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale
    full = _prepare_mask(mask, is_causal, q, k)
    dead = None
    if full is not None:
        dead = _dead_rows(full)
        full = _revive_rows(full, dead)
        if full.dtype == torch.bool:
            scores = scores.masked_fill(~full, float("-inf"))
        else:
            scores = scores + full
    weights = torch.softmax(scores, dim=-1)
    if dead is not None:
        weights = weights.masked_fill(dead, 0.0)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
    return torch.matmul(dropped, v), weights


def lm_loss(logits: Tensor, labels: Tensor, *, ignore_index: int = IGNORE_INDEX) -> Tensor:
    """Mean next-token cross-entropy in float32.

    Args:
        logits: ``[b, s, vocab]``.
        labels: ``[b, s]``, already shifted: ``labels[:, t]`` is the token that should follow
            ``tokens[:, t]`` (what :mod:`ferrotok.data` produces). ``ignore_index`` entries
            (padding, document ends) do not count.

    Example:
        >>> logits = torch.zeros(1, 3, 10)
        >>> round(lm_loss(logits, torch.tensor([[1, 2, -100]])).item(), 4)  # ln(10)
        2.3026
    """
    if logits.dim() != 3 or labels.shape != logits.shape[:2]:
        raise ValueError(
            f"lm_loss expects logits [b, s, vocab] and labels [b, s], got "
            f"{tuple(logits.shape)} and {tuple(labels.shape)}"
        )
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        labels.reshape(-1),
        ignore_index=ignore_index,
    )
