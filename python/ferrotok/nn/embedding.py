"""Token embedding and the language-model head, optionally tied to one weight tensor.

Weight tying (Press & Wolf, "Using the Output Embedding to Improve Language Models", 2017) shares
one ``[vocab, d]`` parameter between the input embedding and the output projection. The shared
tensor is a single ``nn.Parameter`` registered in both modules, so it stays one tensor through
``.to()``, ``state_dict()``/``load_state_dict()``, ``torch.save``/``torch.load`` and
``copy.deepcopy``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["TokenEmbedding", "LMHead"]

_INIT_STD = 0.02  # GPT-2 / torchtune initialisation


class TokenEmbedding(nn.Module):
    """Lookup table from token ids ``[b, s]`` to vectors ``[b, s, d]``.

    Weights are initialised from N(0, 0.02); the ``padding_idx`` row (if any) is zero and gets
    no gradient.

    Args:
        num_embeddings: vocabulary size.
        embedding_dim: ``d``.
        padding_idx: optional id whose vector stays zero.

    Example:
        >>> emb = TokenEmbedding(100, 16, padding_idx=0)
        >>> emb(torch.tensor([[0, 5, 7]])).shape
        torch.Size([1, 3, 16])
    """

    def __init__(
        self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None
    ) -> None:
        super().__init__()
        if num_embeddings <= 0 or embedding_dim <= 0:
            raise ValueError(
                f"num_embeddings and embedding_dim must be positive, got "
                f"{num_embeddings} and {embedding_dim}"
            )
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(
                f"padding_idx must be in [-{num_embeddings}, {num_embeddings}), got {padding_idx}"
            )
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = nn.Parameter(torch.empty(num_embeddings, embedding_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.weight, mean=0.0, std=_INIT_STD)
        if self.padding_idx is not None:
            with torch.no_grad():
                self.weight[self.padding_idx].zero_()

    def forward(self, tokens: Tensor) -> Tensor:
        """``tokens [b, s]`` (integer ids) -> ``[b, s, d]``."""
        if not isinstance(tokens, Tensor):
            raise TypeError(f"token ids must be a torch tensor, got {type(tokens).__name__}")
        if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
            raise TypeError(f"token ids must be an integer tensor, got {tokens.dtype}")
        if not torch.compiler.is_compiling() and tokens.numel() > 0:
            lo, hi = int(tokens.min()), int(tokens.max())
            if lo < 0 or hi >= self.num_embeddings:
                bad = lo if lo < 0 else hi
                raise IndexError(
                    f"token id {bad} is out of range for an embedding of "
                    f"{self.num_embeddings} rows (ids must be in [0, {self.num_embeddings}))"
                )
        return F.embedding(tokens, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class LMHead(nn.Module):
    """Projection from hidden states ``[b, s, d]`` to vocabulary logits ``[b, s, vocab]``.

    Args:
        embedding_dim: ``d``.
        vocab_size: number of logits.
        bias: add a learned bias per token.
        tie_to: a :class:`TokenEmbedding` (or ``nn.Embedding``) whose weight this head shares.

    Example:
        >>> emb = TokenEmbedding(100, 16)
        >>> head = LMHead(16, 100, tie_to=emb)
        >>> head.weight is emb.weight
        True
        >>> head(torch.randn(2, 3, 16)).shape
        torch.Size([2, 3, 100])
    """

    def __init__(
        self,
        embedding_dim: int,
        vocab_size: int,
        bias: bool = False,
        tie_to: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.embedding_dim = embedding_dim
        self.vocab_size = vocab_size
        if tie_to is not None:
            weight = getattr(tie_to, "weight", None)
            if not isinstance(weight, nn.Parameter):
                raise TypeError(f"tie_to must be a module with a .weight parameter, got {tie_to!r}")
            if tuple(weight.shape) != (vocab_size, embedding_dim):
                raise ValueError(
                    f"cannot tie LMHead({embedding_dim}, {vocab_size}) to a weight of shape "
                    f"{tuple(weight.shape)}; expected ({vocab_size}, {embedding_dim})"
                )
            self.weight = weight  # the very same Parameter object
        else:
            self.weight = nn.Parameter(torch.empty(vocab_size, embedding_dim))
            nn.init.normal_(self.weight, mean=0.0, std=_INIT_STD)
        self.bias = nn.Parameter(torch.zeros(vocab_size)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        """``x [b, s, d]`` -> logits ``[b, s, vocab]``."""
        if x.shape[-1] != self.embedding_dim:
            raise ValueError(
                f"LMHead expects inputs with last dimension {self.embedding_dim}, "
                f"got shape {tuple(x.shape)}"
            )
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"{self.embedding_dim}, {self.vocab_size}, bias={self.bias is not None}"
