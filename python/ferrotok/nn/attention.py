"""Multi-head attention with grouped-query heads, RoPE or ALiBi, sliding windows and a KV cache.

``x [b, s, d] -> [b, s, d]``. Projections are ``nn.Linear`` layers named as in torchtune:
``q_proj``, ``k_proj``, ``v_proj``, ``output_proj``. With ``num_kv_heads < num_heads`` several
query heads share one key/value head (grouped-query attention, Ainslie et al. 2023; multi-query
attention, Shazeer 2019, when ``num_kv_heads == 1``).

Masks follow SDPA's convention: a **bool** mask is True where a query may attend (the opposite of
``torch.nn.MultiheadAttention``'s ``attn_mask``/``key_padding_mask``, where True = ignore); a
**float** mask is added to the scores. The causal mask and the sliding window are always applied
on top of a user mask, so a user mask only needs to carry padding or document boundaries.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .alibi import ALiBiBias
from .functional import attention
from .kv_cache import KVCache
from .rope import RotaryPositionalEmbeddings

__all__ = ["MultiHeadAttention"]


def _check_positions(input_pos: Tensor, b: int, s: int) -> None:
    if input_pos.dtype.is_floating_point or input_pos.dtype == torch.bool:
        raise TypeError(f"input_pos must be an integer tensor, got {input_pos.dtype}")
    if input_pos.shape not in ((s,), (b, s)):
        raise ValueError(
            f"input_pos must have shape [s] = [{s}] or [b, s] = [{b}, {s}], "
            f"got {tuple(input_pos.shape)}"
        )


class MultiHeadAttention(nn.Module):
    """Multi-head (grouped-query) attention.

    Args:
        embed_dim: model dimension ``d``.
        num_heads: number of query heads ``h``.
        num_kv_heads: number of key/value heads (default ``h``); must divide ``h``.
        head_dim: per-head dimension (default ``d / h``, which must then be an integer).
        bias: add biases to the four projections.
        dropout: dropout on the attention weights while training.
        is_causal: each position attends only to itself and earlier positions (self-attention).
        pos_embeddings: a :class:`RotaryPositionalEmbeddings` (or any module rotating
            ``[b, s, h, d]`` with ``input_pos=``), applied to queries and keys, or an
            :class:`ALiBiBias` added to the scores. Used in self-attention only.
        sliding_window: attend only to the last ``sliding_window`` positions (self included;
            Mistral's convention), ``|i - j| < sliding_window`` when not causal.

    Example:
        >>> mha = MultiHeadAttention(64, num_heads=8, num_kv_heads=2)
        >>> mha(torch.randn(2, 10, 64)).shape
        torch.Size([2, 10, 64])
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        head_dim: int | None = None,
        *,
        bias: bool = False,
        dropout: float = 0.0,
        is_causal: bool = True,
        pos_embeddings: nn.Module | None = None,
        sliding_window: int | None = None,
    ) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be positive, got {embed_dim} and {num_heads}"
            )
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if num_kv_heads <= 0 or num_heads % num_kv_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must be a positive multiple of num_kv_heads "
                f"({num_kv_heads})"
            )
        if head_dim is None:
            if embed_dim % num_heads:
                raise ValueError(
                    f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads}), "
                    f"or pass head_dim explicitly"
                )
            head_dim = embed_dim // num_heads
        if head_dim <= 0:
            raise ValueError(f"head_dim must be positive, got {head_dim}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if sliding_window is not None and sliding_window <= 0:
            raise ValueError(f"sliding_window must be a positive int or None, got {sliding_window}")
        rope = pos_embeddings if isinstance(pos_embeddings, RotaryPositionalEmbeddings) else None
        if rope is not None and rope.dim != head_dim:
            raise ValueError(
                f"RotaryPositionalEmbeddings(dim={rope.dim}) does not match head_dim={head_dim}"
            )
        if isinstance(pos_embeddings, ALiBiBias) and pos_embeddings.num_heads != num_heads:
            raise ValueError(
                f"ALiBiBias(num_heads={pos_embeddings.num_heads}) does not match "
                f"num_heads={num_heads}"
            )
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = head_dim
        self.dropout = dropout
        self.is_causal = is_causal
        self.sliding_window = sliding_window
        self.pos_embeddings = pos_embeddings
        self.q_proj = nn.Linear(embed_dim, num_heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(embed_dim, num_kv_heads * head_dim, bias=bias)
        self.output_proj = nn.Linear(num_heads * head_dim, embed_dim, bias=bias)
        self.kv_cache: KVCache | None = None

    # -- cache --------------------------------------------------------------------------------
    def setup_cache(
        self, batch_size: int, max_seq_len: int, dtype: torch.dtype | None = None
    ) -> None:
        """Allocate a KV cache for incremental decoding (on the module's device).

        After this, self-attention calls write their keys/values at ``input_pos`` (default: just
        after the last written position) and attend over the cache; a user ``mask`` must then
        have ``max_seq_len`` columns.
        """
        rope = self.pos_embeddings
        if (
            isinstance(rope, RotaryPositionalEmbeddings)
            and rope.rope_type != "dynamic"
            and max_seq_len > rope.max_seq_len
        ):
            raise ValueError(
                f"cache max_seq_len={max_seq_len} exceeds the rotary table "
                f"(max_seq_len={rope.max_seq_len})"
            )
        weight = self.q_proj.weight
        self.kv_cache = KVCache(
            batch_size,
            max_seq_len,
            self.num_kv_heads,
            self.head_dim,
            dtype=weight.dtype if dtype is None else dtype,
            device=weight.device,
        )

    def reset_cache(self) -> None:
        """Empty the KV cache (keeps its memory)."""
        if self.kv_cache is None:
            raise RuntimeError("no KV cache to reset; call setup_cache(batch_size, max_seq_len)")
        self.kv_cache.reset()

    def remove_cache(self) -> None:
        """Free the KV cache; forward goes back to plain (uncached) attention."""
        self.kv_cache = None

    @property
    def has_cache(self) -> bool:
        return self.kv_cache is not None

    # -- forward ------------------------------------------------------------------------------
    def forward(
        self,
        x: Tensor,
        y: Tensor | None = None,
        *,
        mask: Tensor | None = None,
        input_pos: Tensor | None = None,
    ) -> Tensor:
        """Attend from ``x [b, s, d]`` to itself, or to ``y [b, s_kv, d]`` (cross-attention).

        Args:
            x: queries' input ``[b, s, d]``.
            y: keys'/values' input ``[b, s_kv, d]``; None for self-attention. Cross-attention
                is never causal, uses no positional embeddings and no cache.
            mask: bool (True = attend) or float bias, ``[b, s, s_kv]`` or broadcastable to
                ``[b, h, s, s_kv]`` (``s_kv`` is the cache length when a cache is set up).
            input_pos: positions of ``x``'s tokens, ``[s]`` or ``[b, s]``; default ``0..s-1``,
                or the positions after the cached ones when a cache is set up.

        Returns:
            ``[b, s, d]``.
        """
        if x.dim() != 3 or x.shape[-1] != self.embed_dim:
            raise ValueError(
                f"MultiHeadAttention expects x of shape [b, s, {self.embed_dim}], "
                f"got {tuple(x.shape)}"
            )
        b, s, _ = x.shape
        cross = y is not None
        if y is not None and (y.dim() != 3 or y.shape[0] != b or y.shape[-1] != self.embed_dim):
            raise ValueError(
                f"MultiHeadAttention expects y of shape [{b}, s_kv, {self.embed_dim}], "
                f"got {tuple(y.shape)}"
            )
        if input_pos is not None:
            _check_positions(input_pos, b, s)
        src = x if y is None else y
        s_kv = src.shape[1]
        h, hkv, hd = self.num_heads, self.num_kv_heads, self.head_dim

        q = self.q_proj(x).view(b, s, h, hd)
        k = self.k_proj(src).view(b, s_kv, hkv, hd)
        v = self.v_proj(src).view(b, s_kv, hkv, hd)

        cache = None if cross else self.kv_cache
        pos = input_pos
        if cache is not None and pos is None:
            pos = cache.next_pos[:, None] + torch.arange(s, device=x.device)
        pe = None if cross else self.pos_embeddings
        alibi = pe if isinstance(pe, ALiBiBias) else None
        if pe is not None and alibi is None:
            q = pe(q, input_pos=pos)
            k = pe(k, input_pos=pos)

        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if cache is not None:
            assert pos is not None  # with a cache, pos was set above
            k, v = cache.update(pos, k, v)

        causal = self.is_causal and not cross
        user_mask = self._user_mask(mask, b, s, k.shape[2])
        dropout_p = self.dropout if self.training else 0.0

        if cache is None and alibi is None and self.sliding_window is None:
            out = attention(q, k, v, mask=user_mask, is_causal=causal, dropout_p=dropout_p)
        else:
            if cache is not None:
                assert pos is not None  # with a cache, pos was set above
                # query positions against cache slots 0..max_seq_len-1 (slot = position)
                qidx = qpos = pos
                kidx = kpos = torch.arange(k.shape[2], device=x.device)
            else:
                # order (causality, window) follows the sequence index; ALiBi follows positions,
                # which may restart per packed document
                qidx = torch.arange(s, device=x.device)
                kidx = torch.arange(s_kv, device=x.device)
                qpos = pos if pos is not None else qidx
                kpos = qpos
            full = self._structural_mask(qidx, kidx, cache, causal)  # bool [..., s, kv] | None
            if alibi is not None:
                bias = alibi.bias(qpos, kpos).to(q.dtype)  # [b|1, h, s, kv]
                if full is not None:
                    bias = bias.masked_fill(~full, float("-inf"))
                full = bias
            full = self._combine(full, user_mask)
            out = attention(q, k, v, mask=full, dropout_p=dropout_p)

        out = out.transpose(1, 2).reshape(b, s, h * hd)
        return self.output_proj(out)

    def _user_mask(self, mask: Tensor | None, b: int, s: int, kv: int) -> Tensor | None:
        if mask is None:
            return None
        if mask.dim() == 3:
            if mask.shape[1:] != (s, kv) or mask.shape[0] not in (1, b):
                raise ValueError(
                    f"a 3-D mask must be [b, s, s_kv] = [{b}, {s}, {kv}], got {tuple(mask.shape)}"
                )
            mask = mask.unsqueeze(1)
        try:
            torch.broadcast_shapes(mask.shape, (b, self.num_heads, s, kv))
        except RuntimeError:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} does not broadcast to "
                f"[b, h, s, s_kv] = [{b}, {self.num_heads}, {s}, {kv}]"
            ) from None
        return mask

    def _structural_mask(
        self, qidx: Tensor, kidx: Tensor, cache: KVCache | None, causal: bool
    ) -> Tensor | None:
        """Bool ``[b|1, 1, s, kv]``: causal order, sliding window, written cache slots."""
        distance = qidx.unsqueeze(-1) - kidx.unsqueeze(-2)  # query index - key index
        allowed = None
        if causal:
            allowed = distance >= 0
        elif cache is not None:
            written = kidx < cache.next_pos[:, None, None]  # [b, 1, kv]
            allowed = written
        if self.sliding_window is not None:
            window = (
                (distance < self.sliding_window)
                if causal
                else (distance.abs() < self.sliding_window)
            )
            allowed = window if allowed is None else allowed & window
        if allowed is None:
            return None
        while allowed.dim() < 3:
            allowed = allowed.unsqueeze(0)
        return allowed.unsqueeze(1)

    @staticmethod
    def _combine(structural: Tensor | None, user: Tensor | None) -> Tensor | None:
        if user is None:
            return structural
        if structural is None:
            return user
        if structural.dtype == torch.bool and user.dtype == torch.bool:
            return structural & user
        if structural.dtype == torch.bool:
            return user.masked_fill(~structural, float("-inf"))
        if user.dtype == torch.bool:
            return structural.masked_fill(~user, float("-inf"))
        return structural + user.to(structural.dtype)

    def extra_repr(self) -> str:
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if self.num_kv_heads != self.num_heads:
            s += f", num_kv_heads={self.num_kv_heads}"
        s += f", head_dim={self.head_dim}, is_causal={self.is_causal}"
        if self.sliding_window is not None:
            s += f", sliding_window={self.sliding_window}"
        return s
