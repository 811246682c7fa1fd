"""RMSNorm: root-mean-square layer normalisation, computed in float32.

Zhang & Sennrich, "Root Mean Square Layer Normalization" (NeurIPS 2019), eq. 4::

    y = x / sqrt(mean(x²) + eps) · g
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["RMSNorm"]


class RMSNorm(nn.Module):
    """RMS normalisation over the last dimension of ``x [..., d]`` with a learned gain.

    The statistics are computed in float32 (float64 for float64 inputs) and the result cast back
    to ``x``'s dtype (as in torchtune and Llama).

    Example:
        >>> norm = RMSNorm(4)
        >>> norm(torch.tensor([[2.0, -2.0, 2.0, -2.0]])).round(decimals=4).tolist()
        [[1.0, -1.0, 1.0, -1.0]]
    """

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[-1] != self.dim:
            raise ValueError(f"RMSNorm expects [..., {self.dim}], got {tuple(x.shape)}")
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (y * self.weight.to(xf.dtype)).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}"
