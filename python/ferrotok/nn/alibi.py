"""ALiBi: attention with linear biases instead of positional embeddings.

Press, Smith & Lewis, "Train Short, Test Long: Attention with Linear Biases Enables Input Length
Extrapolation" (ICLR 2022), section 3: head ``h`` adds ``m_h · (j − i)`` to the score of query
position ``i`` and key position ``j`` (``j <= i`` under a causal mask). The slopes ``m_h`` form a
geometric sequence starting at ``2^(−8/n)`` with that same ratio, for ``n`` heads; when ``n`` is
not a power of two the paper takes the ``2^⌊log2 n⌋`` slopes and adds every other slope of the
sequence for ``2·2^⌊log2 n⌋`` heads.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor, nn

__all__ = ["alibi_slopes", "ALiBiBias"]

#: flex_attention's ``score_mod(score, batch, head, q_idx, kv_idx) -> score``
ScoreMod = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]


def alibi_slopes(num_heads: int) -> Tensor:
    """The ALiBi slopes ``[num_heads]`` (float32), largest first.

    For ``n = 2^k``: ``m_h = 2^(−8h/n)``, ``h = 1..n``. Otherwise, with ``p = 2^⌊log2 n⌋``: the
    ``p`` slopes for ``p`` heads, then ``2^(−8(2j−1)/(2p)) = 2^(−4(2j−1)/p)`` for ``j = 1..n−p``
    (the odd-indexed slopes for ``2p`` heads).

    Example:
        >>> alibi_slopes(8).tolist()
        [0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625]
    """
    if num_heads <= 0:
        raise ValueError(f"num_heads must be positive, got {num_heads}")
    p = 2 ** int(math.floor(math.log2(num_heads)))
    exponents = [-8.0 * h / p for h in range(1, p + 1)]
    exponents += [-8.0 * (2 * j - 1) / (2 * p) for j in range(1, num_heads - p + 1)]
    return torch.tensor([2.0**e for e in exponents], dtype=torch.float32)


class ALiBiBias(nn.Module):
    """Builds ALiBi score biases ``[1, h, q, kv]`` for :func:`ferrotok.nn.functional.attention`.

    Queries sit at positions ``offset .. offset + q_len − 1`` and keys at ``0 .. kv_len − 1``; the
    bias is ``m_h · (j − i)``, zero on the diagonal and negative for past keys. Keys *after* a
    query get a positive bias, so use it with a causal mask (``is_causal=True``) or construct
    with ``symmetric=True`` for ``−m_h · |i − j|`` (bidirectional encoders).

    Args:
        num_heads: number of attention heads ``h``.
        symmetric: use ``−m_h·|i − j|``.

    Example:
        >>> alibi = ALiBiBias(4)
        >>> alibi(2, 3, offset=1)[0, 0].tolist()  # head 0, slope 0.25
        [[-0.25, 0.0, 0.25], [-0.5, -0.25, 0.0]]
        >>> from ferrotok.nn.functional import attention
        >>> q = k = v = torch.randn(1, 4, 3, 8)
        >>> attention(q, k, v, mask=alibi(3), is_causal=True).shape
        torch.Size([1, 4, 3, 8])
    """

    def __init__(self, num_heads: int, *, symmetric: bool = False) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.symmetric = symmetric
        self.slopes: Tensor
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)

    def _apply(
        self, fn: Callable[[Tensor], Tensor], recurse: bool = True
    ) -> ALiBiBias:  # keep the slopes in float32 through .to(dtype)
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]  # unannotated in torch
        if self.slopes.dtype != torch.float32:
            self.slopes = alibi_slopes(self.num_heads).to(self.slopes.device)
        return self

    def bias(self, query_pos: Tensor, key_pos: Tensor) -> Tensor:
        """Bias for explicit positions: ``query_pos [..., q]``, ``key_pos [..., kv]``.

        Returns float32 ``[..., h, q, kv]`` (leading dims broadcast; ``[1, h, q, kv]`` for 1-D
        positions after the added batch dim).
        """
        distance = (key_pos.unsqueeze(-2) - query_pos.unsqueeze(-1)).float()  # [..., q, kv]
        if self.symmetric:
            distance = -distance.abs()
        slopes = self.slopes.to(distance.device)[:, None, None]
        out = slopes * distance.unsqueeze(-3)  # [..., h, q, kv]
        return out if out.dim() >= 4 else out.unsqueeze(0)

    def forward(
        self,
        q_len: int,
        kv_len: int | None = None,
        *,
        offset: int = 0,
        mask: Tensor | None = None,
        device: torch.device | str | None = None,
    ) -> Tensor:
        """Float32 bias ``[1, h, q_len, kv_len]`` (``kv_len`` defaults to ``offset + q_len``).

        ``mask`` (bool, True = attend, broadcastable to ``[b, h, q, kv]``, e.g. a padding mask
        ``[b, 1, 1, kv]``) is folded in as ``−inf``, giving ``[b, h, q, kv]``.
        """
        if q_len <= 0 or offset < 0:
            raise ValueError(f"need q_len > 0 and offset >= 0, got q_len={q_len}, offset={offset}")
        kv_len = offset + q_len if kv_len is None else kv_len
        device = self.slopes.device if device is None else device
        qpos = torch.arange(offset, offset + q_len, device=device)
        kpos = torch.arange(kv_len, device=device)
        out = self.bias(qpos, kpos)
        if mask is not None:
            if mask.dtype != torch.bool:
                raise TypeError(f"mask must be bool (True = attend), got {mask.dtype}")
            out = out.masked_fill(~mask, float("-inf"))
        return out

    def score_mod(self, offset: int = 0) -> ScoreMod:
        """A ``score_mod`` for ``torch.nn.attention.flex_attention`` adding the same bias.

        Query index ``q_idx`` is at position ``q_idx + offset``.

        Example:
            >>> from torch.nn.attention.flex_attention import flex_attention
            >>> q = k = v = torch.randn(1, 4, 16, 8)
            >>> flex_attention(q, k, v, score_mod=ALiBiBias(4).score_mod()).shape
            torch.Size([1, 4, 16, 8])
        """
        slopes = self.slopes
        symmetric = self.symmetric

        def alibi_score_mod(
            score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor
        ) -> Tensor:
            distance = kv_idx - (q_idx + offset)
            if symmetric:
                distance = -torch.abs(distance)
            return score + slopes[h] * distance

        return alibi_score_mod

    def extra_repr(self) -> str:
        return f"num_heads={self.num_heads}" + (", symmetric=True" if self.symmetric else "")
