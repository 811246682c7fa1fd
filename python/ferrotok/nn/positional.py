"""Absolute positional embeddings added to token embeddings: sinusoidal and learned.

Both modules take ``x [b, s, d]`` and return ``x + P[positions]`` with the same shape and dtype.
Positions default to ``0 .. s-1``; pass ``input_pos`` (``[s]`` or ``[b, s]``) to continue a
sequence (incremental decoding) or to restart positions per packed document.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor, nn

__all__ = ["SinusoidalPositionalEmbedding", "LearnedPositionalEmbedding", "sinusoidal_table"]

_LAYOUTS = ("interleaved", "concat")


def _positions(x: Tensor, input_pos: Tensor | None) -> Tensor:
    b, s = x.shape[0], x.shape[1]
    if input_pos is None:
        return torch.arange(s, device=x.device)
    if input_pos.dtype.is_floating_point or input_pos.dtype == torch.bool:
        raise TypeError(f"input_pos must be an integer tensor, got {input_pos.dtype}")
    if input_pos.shape not in ((s,), (b, s)):
        raise ValueError(
            f"input_pos must have shape [s] = [{s}] or [b, s] = [{b}, {s}], "
            f"got {tuple(input_pos.shape)}"
        )
    return input_pos


def _check_x(x: Tensor, dim: int, name: str) -> None:
    if x.dim() != 3 or x.shape[-1] != dim:
        raise ValueError(f"{name} expects x of shape [b, s, {dim}], got {tuple(x.shape)}")


def sinusoidal_table(
    positions: Tensor, dim: int, base: float = 10000.0, layout: str = "interleaved"
) -> Tensor:
    """Sinusoidal encodings ``[..., dim]`` for integer ``positions [...]`` (float32).

    Vaswani et al. (2017), section 3.5::

        PE(pos, 2i)   = sin(pos / base^(2i / dim))
        PE(pos, 2i+1) = cos(pos / base^(2i / dim))

    ``layout="interleaved"`` stores them as above; ``layout="concat"`` stores all sines first and
    then all cosines, ``[sin(pos·ω_0..ω_{dim/2-1}), cos(...)]`` (the tensor2tensor/fairseq
    arrangement, with the paper's frequencies). Angles are computed in float64 where the device
    supports it, so the table is exact to float32 rounding for any position.
    """
    if layout not in _LAYOUTS:
        raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
    if dim % 2:
        raise ValueError(f"sinusoidal embeddings need an even embedding_dim, got {dim}")
    wide = torch.float32 if positions.device.type == "mps" else torch.float64
    inv_freq = base ** (-torch.arange(0, dim, 2, device=positions.device, dtype=wide) / dim)
    angles = positions.to(wide).unsqueeze(-1) * inv_freq  # [..., dim/2]
    if layout == "interleaved":
        table = torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)
    else:
        table = torch.cat((angles.sin(), angles.cos()), dim=-1)
    return table.float()


class SinusoidalPositionalEmbedding(nn.Module):
    """Fixed sine/cosine positional encodings (Vaswani et al. 2017), added to ``x [b, s, d]``.

    No parameters and no length limit. ``max_positions``, if given, precomputes a table for
    positions below it (used when ``input_pos`` is not given and ``s <= max_positions``);
    everything else is computed on the fly with the same values.

    Args:
        embedding_dim: ``d`` (even).
        max_positions: size of the precomputed table (optional).
        base: wavelength base, 10000 in the paper.
        layout: ``"interleaved"`` (sin, cos, sin, cos, ...) or ``"concat"`` (all sin, all cos).

    Example:
        >>> pe = SinusoidalPositionalEmbedding(8)
        >>> x = torch.zeros(1, 3, 8)
        >>> pe(x)[0, 0].tolist()  # position 0: sin 0 = 0, cos 0 = 1
        [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    """

    def __init__(
        self,
        embedding_dim: int,
        max_positions: int | None = None,
        base: float = 10000.0,
        layout: str = "interleaved",
    ) -> None:
        super().__init__()
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
        if embedding_dim <= 0 or embedding_dim % 2:
            raise ValueError(
                f"sinusoidal embeddings need a positive even embedding_dim, got {embedding_dim}"
            )
        if max_positions is not None and max_positions <= 0:
            raise ValueError(f"max_positions must be positive, got {max_positions}")
        self.embedding_dim = embedding_dim
        self.max_positions = max_positions
        self.base = float(base)
        self.layout = layout
        self.table: Tensor | None
        if max_positions is not None:
            self.register_buffer("table", self._compute(torch.arange(max_positions)), False)
        else:
            self.table = None

    def _compute(self, positions: Tensor) -> Tensor:
        return sinusoidal_table(positions, self.embedding_dim, self.base, self.layout)

    def _apply(
        self, fn: Callable[[Tensor], Tensor], recurse: bool = True
    ) -> SinusoidalPositionalEmbedding:  # keep the table in float32 through .to(dtype)
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]  # unannotated in torch
        if self.table is not None and self.table.dtype != torch.float32:
            self.table = self._compute(torch.arange(len(self.table), device=self.table.device))
        return self

    def encodings(self, positions: Tensor) -> Tensor:
        """The float32 encodings ``[..., d]`` of integer ``positions [...]``."""
        if not torch.compiler.is_compiling() and positions.numel() and int(positions.min()) < 0:
            raise IndexError(f"positions must be non-negative, got {int(positions.min())}")
        return self._compute(positions)

    def forward(self, x: Tensor, *, input_pos: Tensor | None = None) -> Tensor:
        """``x [b, s, d]`` -> ``x + PE[positions]``, same shape and dtype."""
        _check_x(x, self.embedding_dim, type(self).__name__)
        s = x.shape[1]
        if input_pos is None and self.table is not None and s <= self.table.shape[0]:
            pe = self.table[:s]
        else:
            pe = self.encodings(_positions(x, input_pos).to(x.device))
        return x + pe.to(x.dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.embedding_dim}, max_positions={self.max_positions}, base={self.base}, "
            f"layout={self.layout!r}"
        )


class LearnedPositionalEmbedding(nn.Module):
    """A learned vector per position (GPT-2 style), added to ``x [b, s, d]``.

    Initialised from N(0, 0.02). Positions at or past ``max_positions`` raise ``IndexError``.

    Example:
        >>> pe = LearnedPositionalEmbedding(16, 8)
        >>> pe(torch.zeros(2, 4, 8)).shape
        torch.Size([2, 4, 8])
    """

    def __init__(self, max_positions: int, embedding_dim: int) -> None:
        super().__init__()
        if max_positions <= 0 or embedding_dim <= 0:
            raise ValueError(
                f"max_positions and embedding_dim must be positive, got "
                f"{max_positions} and {embedding_dim}"
            )
        self.max_positions = max_positions
        self.embedding_dim = embedding_dim
        self.weight = nn.Parameter(torch.empty(max_positions, embedding_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, mean=0.0, std=0.02)

    def forward(self, x: Tensor, *, input_pos: Tensor | None = None) -> Tensor:
        """``x [b, s, d]`` -> ``x + W[positions]``, same shape and dtype."""
        _check_x(x, self.embedding_dim, type(self).__name__)
        s = x.shape[1]
        if input_pos is None:
            if s > self.max_positions:
                raise IndexError(
                    f"sequence length {s} exceeds max_positions={self.max_positions} of "
                    f"LearnedPositionalEmbedding (positions must be < {self.max_positions})"
                )
            pe = self.weight[:s]
        else:
            pos = _positions(x, input_pos)
            if not torch.compiler.is_compiling() and pos.numel():
                lo, hi = int(pos.min()), int(pos.max())
                if lo < 0 or hi >= self.max_positions:
                    raise IndexError(
                        f"position {hi if hi >= self.max_positions else lo} is out of range for "
                        f"LearnedPositionalEmbedding (positions must be in "
                        f"[0, {self.max_positions}))"
                    )
            pe = self.weight[pos]
        return x + pe.to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.max_positions}, {self.embedding_dim}"
