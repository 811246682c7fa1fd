"""ferrotok.nn — the model's front in torch: embeddings, positional encodings, attention.

Everything from token ids to the loss: :class:`TokenEmbedding` / :class:`LMHead` (tied weights),
absolute (:class:`SinusoidalPositionalEmbedding`, :class:`LearnedPositionalEmbedding`), rotary
(:class:`RotaryPositionalEmbeddings`) and ALiBi (:class:`ALiBiBias`) positions,
:func:`ferrotok.nn.functional.attention` and :class:`MultiHeadAttention` with a KV cache, a small
decoder-only :class:`TransformerLM`, and the loss (:func:`ferrotok.nn.functional.lm_loss`).
Shapes at module boundaries are ``[b, s, d]``.

Requires torch (``pip install ferrotok[nn]``); ``import ferrotok`` never imports it.

Example:
    >>> import torch
    >>> from ferrotok.nn import TransformerLM
    >>> model = TransformerLM(vocab_size=100, dim=32, num_layers=1, num_heads=4, max_seq_len=32)
    >>> tokens = torch.randint(0, 100, (2, 9))
    >>> loss = model.loss(tokens[:, :-1], tokens[:, 1:])
    >>> loss.backward()
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise ImportError(
        "ferrotok.nn needs PyTorch: pip install 'ferrotok[nn]' (or pip install torch)"
    ) from e

from . import functional
from .alibi import ALiBiBias, alibi_slopes
from .attention import MultiHeadAttention
from .embedding import LMHead, TokenEmbedding
from .feedforward import GeluMLP, SwiGLU, swiglu_hidden_dim
from .generation import sample_next_token
from .kv_cache import KVCache
from .normalization import RMSNorm
from .positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEmbedding,
    sinusoidal_table,
)
from .rope import (
    ROPE_TYPES,
    RotaryPositionalEmbeddings,
    apply_rotary_pos_emb,
    permute_for_rope,
    rope_frequencies,
    rotate_half,
    unpermute_for_rope,
)
from .transformer import POSITIONAL_TYPES, TransformerBlock, TransformerLM, generate

__all__ = [
    "ALiBiBias",
    "GeluMLP",
    "KVCache",
    "LMHead",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "POSITIONAL_TYPES",
    "RMSNorm",
    "ROPE_TYPES",
    "RotaryPositionalEmbeddings",
    "SinusoidalPositionalEmbedding",
    "SwiGLU",
    "TokenEmbedding",
    "TransformerBlock",
    "TransformerLM",
    "alibi_slopes",
    "apply_rotary_pos_emb",
    "functional",
    "generate",
    "permute_for_rope",
    "rope_frequencies",
    "rotate_half",
    "sample_next_token",
    "sinusoidal_table",
    "swiglu_hidden_dim",
    "unpermute_for_rope",
]
