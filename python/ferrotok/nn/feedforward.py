"""Position-wise feed-forward networks: SwiGLU and the GELU MLP.

* SwiGLU — Shazeer, "GLU Variants Improve Transformer" (2020), eq. 6:
  ``FFN(x) = W_down (SiLU(W_gate x) ⊙ W_up x)``.
* GELU MLP — Vaswani et al. (2017) eq. 2 with the GELU of Hendrycks & Gimpel (2016), as in
  GPT-2/BERT: ``FFN(x) = W_2 GELU(W_1 x)``.

Both map ``[..., d] -> [..., d]``.
"""

from __future__ import annotations

import torch  # noqa: F401  (the docstring examples use it)
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["SwiGLU", "GeluMLP", "swiglu_hidden_dim"]


def swiglu_hidden_dim(dim: int, multiple_of: int = 64) -> int:
    """Llama's SwiGLU width: ``2/3 · 4d`` rounded up to a multiple of ``multiple_of``.

    Keeps the parameter count of a ``4d`` two-matrix MLP.

    Example:
        >>> swiglu_hidden_dim(256)
        704
    """
    hidden = int(2 * 4 * dim / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


class SwiGLU(nn.Module):
    """Gated feed-forward ``down(silu(gate(x)) * up(x))``; layers named as in torchtune/Llama.

    Example:
        >>> SwiGLU(16, 32)(torch.randn(2, 3, 16)).shape
        torch.Size([2, 3, 16])
    """

    def __init__(self, dim: int, hidden_dim: int, *, bias: bool = False) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden_dim, bias=bias)
        self.up_proj = nn.Linear(dim, hidden_dim, bias=bias)
        self.down_proj = nn.Linear(hidden_dim, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class GeluMLP(nn.Module):
    """Two-layer MLP ``fc2(gelu(fc1(x)))`` (exact erf GELU).

    Example:
        >>> GeluMLP(16, 64)(torch.randn(2, 3, 16)).shape
        torch.Size([2, 3, 16])
    """

    def __init__(self, dim: int, hidden_dim: int, *, bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden_dim, bias=bias)
        self.fc2 = nn.Linear(hidden_dim, dim, bias=bias)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(F.gelu(self.fc1(x)))
