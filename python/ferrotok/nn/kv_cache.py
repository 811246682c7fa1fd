"""A fixed-size key/value cache for incremental decoding.

Keys and values are stored in preallocated ``[b, h_kv, max_seq_len, d]`` buffers and written at
the positions being decoded, so every decode step sees tensors of the same shapes (no
recompilation under ``torch.compile``). Slots not yet written hold zeros and must be masked by the
caller (``MultiHeadAttention`` masks every slot after the query position).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["KVCache"]


class KVCache(nn.Module):
    """Preallocated key/value storage.

    Args:
        batch_size: ``b``.
        max_seq_len: number of positions the cache can hold.
        num_kv_heads: ``h_kv``.
        head_dim: ``d``.
        dtype: storage dtype.
        device: storage device.

    Example:
        >>> cache = KVCache(1, 8, num_kv_heads=2, head_dim=4, dtype=torch.float32)
        >>> k = v = torch.ones(1, 2, 3, 4)
        >>> k_all, v_all = cache.update(torch.arange(3), k, v)
        >>> k_all.shape, int(k_all[0, 0, :, 0].sum())
        (torch.Size([1, 2, 8, 4]), 3)
    """

    def __init__(
        self,
        batch_size: int,
        max_seq_len: int,
        num_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if min(batch_size, max_seq_len, num_kv_heads, head_dim) <= 0:
            raise ValueError(
                "batch_size, max_seq_len, num_kv_heads and head_dim must be positive, got "
                f"{batch_size}, {max_seq_len}, {num_kv_heads}, {head_dim}"
            )
        self.batch_size = batch_size
        self.max_seq_len = max_seq_len
        shape = (batch_size, num_kv_heads, max_seq_len, head_dim)
        # Declared so a type checker sees Tensors: registered buffers are read back through
        # nn.Module.__getattr__, which is typed Tensor | Module.
        self.k_cache: Tensor
        self.v_cache: Tensor
        self.next_pos: Tensor
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), False)
        # one past the largest position written so far, per batch row
        self.register_buffer(
            "next_pos", torch.zeros(batch_size, dtype=torch.long, device=device), False
        )

    def reset(self) -> None:
        """Forget everything (zero the buffers in place)."""
        self.k_cache.zero_()
        self.v_cache.zero_()
        self.next_pos.zero_()

    def update(self, input_pos: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Write ``k``, ``v`` ``[b, h_kv, s, d]`` at ``input_pos`` (``[s]`` or ``[b, s]``).

        Returns the whole caches ``[b, h_kv, max_seq_len, d]``.
        """
        b, h, s, d = k.shape
        if b != self.batch_size or tuple(self.k_cache.shape[1::2]) != (h, d):
            raise ValueError(
                f"KVCache was set up for [b={self.batch_size}, h_kv={self.k_cache.shape[1]}, "
                f"d={self.k_cache.shape[3]}], got keys of shape {tuple(k.shape)}"
            )
        if not torch.compiler.is_compiling() and input_pos.numel():
            lo, hi = int(input_pos.min()), int(input_pos.max())
            if lo < 0 or hi >= self.max_seq_len:
                raise IndexError(
                    f"position {hi if hi >= self.max_seq_len else lo} does not fit the KV cache "
                    f"(max_seq_len={self.max_seq_len}); call setup_cache with a larger max_seq_len"
                )
        pos = input_pos.expand(b, s) if input_pos.dim() == 1 else input_pos
        index = pos[:, None, :, None].expand(b, h, s, d)
        self.k_cache.scatter_(2, index, k.to(self.k_cache.dtype))
        self.v_cache.scatter_(2, index, v.to(self.v_cache.dtype))
        self.next_pos.copy_(torch.maximum(self.next_pos, pos.max(dim=1).values + 1))
        return self.k_cache, self.v_cache
