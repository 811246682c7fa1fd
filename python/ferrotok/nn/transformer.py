"""A pre-norm transformer block and a small decoder-only language model built from it.

Pre-norm residual blocks (Xiong et al., "On Layer Normalization in the Transformer Architecture",
2020), as in GPT-2 and Llama::

    h   = x + Attention(Norm(x))
    out = h + MLP(Norm(h))

``TransformerLM`` maps token ids ``[b, s]`` to next-token logits ``[b, s, vocab]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import Tensor, nn

from .alibi import ALiBiBias
from .attention import MultiHeadAttention
from .embedding import LMHead, TokenEmbedding
from .feedforward import GeluMLP, SwiGLU, swiglu_hidden_dim
from .functional import lm_loss
from .generation import sample_next_token
from .normalization import RMSNorm
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEmbedding
from .rope import RotaryPositionalEmbeddings

__all__ = ["TransformerBlock", "TransformerLM", "POSITIONAL_TYPES", "generate"]

POSITIONAL_TYPES = ("rope", "alibi", "learned", "sinusoidal")
_NORMS = ("rms", "layer")
_MLPS = ("swiglu", "gelu")


def _make_norm(kind: str, dim: int, eps: float) -> nn.Module:
    if kind == "rms":
        return RMSNorm(dim, eps=eps)
    if kind == "layer":
        return nn.LayerNorm(dim, eps=eps)
    raise ValueError(f"norm must be one of {_NORMS}, got {kind!r}")


class TransformerBlock(nn.Module):
    """Pre-norm block: self-attention then MLP, each with a residual connection.

    Args:
        dim: model dimension ``d``.
        num_heads: attention heads.
        num_kv_heads: key/value heads for grouped-query attention (default ``num_heads``).
        hidden_dim: MLP width (default: ``swiglu_hidden_dim(d)`` for SwiGLU, ``4d`` for GELU).
        head_dim: per-head dimension (default ``d / num_heads``).
        norm: ``"rms"`` (RMSNorm) or ``"layer"`` (LayerNorm).
        mlp: ``"swiglu"`` or ``"gelu"``.
        norm_eps: epsilon of the norms.
        dropout: dropout on the attention weights and on both residual branches while training.
        bias: biases in the attention projections (the GELU MLP always has biases).
        is_causal, pos_embeddings, sliding_window: passed to :class:`MultiHeadAttention`.

    Example:
        >>> block = TransformerBlock(32, num_heads=4)
        >>> block(torch.randn(2, 5, 32)).shape
        torch.Size([2, 5, 32])
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        hidden_dim: int | None = None,
        *,
        head_dim: int | None = None,
        norm: str = "rms",
        mlp: str = "swiglu",
        norm_eps: float = 1e-5,
        dropout: float = 0.0,
        bias: bool = False,
        is_causal: bool = True,
        pos_embeddings: nn.Module | None = None,
        sliding_window: int | None = None,
    ) -> None:
        super().__init__()
        if mlp not in _MLPS:
            raise ValueError(f"mlp must be one of {_MLPS}, got {mlp!r}")
        self.sa_norm = _make_norm(norm, dim, norm_eps)
        self.attn = MultiHeadAttention(
            dim,
            num_heads,
            num_kv_heads,
            head_dim,
            bias=bias,
            dropout=dropout,
            is_causal=is_causal,
            pos_embeddings=pos_embeddings,
            sliding_window=sliding_window,
        )
        self.mlp_norm = _make_norm(norm, dim, norm_eps)
        if mlp == "swiglu":
            self.mlp: nn.Module = SwiGLU(dim, hidden_dim or swiglu_hidden_dim(dim))
        else:
            self.mlp = GeluMLP(dim, hidden_dim or 4 * dim)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(
        self, x: Tensor, *, mask: Tensor | None = None, input_pos: Tensor | None = None
    ) -> Tensor:
        """``x [b, s, d]`` -> ``[b, s, d]``; ``mask``/``input_pos`` as in the attention."""
        h = x + self.resid_dropout(self.attn(self.sa_norm(x), mask=mask, input_pos=input_pos))
        return h + self.resid_dropout(self.mlp(self.mlp_norm(h)))


class TransformerLM(nn.Module):
    """Decoder-only transformer language model.

    Args:
        vocab_size: number of token ids.
        dim: model dimension.
        num_layers: number of :class:`TransformerBlock`.
        num_heads: attention heads.
        num_kv_heads: key/value heads (grouped-query attention when fewer than ``num_heads``).
        hidden_dim: MLP width (see :class:`TransformerBlock`).
        max_seq_len: longest sequence (rotary table / learned positions size; also the default
            KV-cache size of :meth:`generate`).
        positional: ``"rope"``, ``"alibi"``, ``"learned"`` or ``"sinusoidal"``.
        norm, mlp, norm_eps, dropout, bias, sliding_window: see :class:`TransformerBlock`.
        tie_embeddings: share the token embedding with the output head (default True).
        rope_base, rope_scaling, rope_layout: options of :class:`RotaryPositionalEmbeddings`.
        padding_idx: token id whose embedding stays zero.

    Example:
        >>> model = TransformerLM(100, dim=32, num_layers=2, num_heads=4, max_seq_len=64)
        >>> tokens = torch.randint(0, 100, (2, 10))
        >>> model(tokens).shape
        torch.Size([2, 10, 100])
        >>> model.generate(tokens[:1, :3], max_new_tokens=5, temperature=0).shape
        torch.Size([1, 8])
    """

    def __init__(
        self,
        vocab_size: int,
        dim: int = 256,
        num_layers: int = 4,
        num_heads: int = 4,
        num_kv_heads: int | None = None,
        hidden_dim: int | None = None,
        *,
        max_seq_len: int = 1024,
        positional: str = "rope",
        norm: str = "rms",
        mlp: str = "swiglu",
        norm_eps: float = 1e-5,
        dropout: float = 0.0,
        bias: bool = False,
        sliding_window: int | None = None,
        tie_embeddings: bool = True,
        rope_base: float = 10000.0,
        rope_scaling: dict[str, Any] | None = None,
        rope_layout: str = "interleaved",
        padding_idx: int | None = None,
    ) -> None:
        super().__init__()
        if positional not in POSITIONAL_TYPES:
            raise ValueError(f"positional must be one of {POSITIONAL_TYPES}, got {positional!r}")
        if num_layers <= 0:
            raise ValueError(f"num_layers must be positive, got {num_layers}")
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) must be divisible by num_heads ({num_heads})")
        self.vocab_size = vocab_size
        self.dim = dim
        self.num_layers = num_layers
        self.max_seq_len = max_seq_len
        self.positional = positional

        self.tok_embeddings = TokenEmbedding(vocab_size, dim, padding_idx=padding_idx)
        self.pos_embeddings: nn.Module | None = None
        attn_pos: nn.Module | None = None
        if positional == "rope":
            attn_pos = RotaryPositionalEmbeddings(
                dim // num_heads, max_seq_len, rope_base, layout=rope_layout, scaling=rope_scaling
            )
        elif positional == "alibi":
            attn_pos = ALiBiBias(num_heads)
        elif positional == "learned":
            self.pos_embeddings = LearnedPositionalEmbedding(max_seq_len, dim)
        else:
            self.pos_embeddings = SinusoidalPositionalEmbedding(dim, max_seq_len)
        self.embed_dropout = nn.Dropout(dropout)
        # one positional module shared by every layer (no parameters, tables built once)
        self.layers = nn.ModuleList(
            TransformerBlock(
                dim,
                num_heads,
                num_kv_heads,
                hidden_dim,
                norm=norm,
                mlp=mlp,
                norm_eps=norm_eps,
                dropout=dropout,
                bias=bias,
                pos_embeddings=attn_pos,
                sliding_window=sliding_window,
            )
            for _ in range(num_layers)
        )
        self.norm = _make_norm(norm, dim, norm_eps)
        self.output = LMHead(
            dim, vocab_size, tie_to=self.tok_embeddings if tie_embeddings else None
        )
        self._init_weights()

    def _init_weights(self) -> None:
        # GPT-2: N(0, 0.02) everywhere, residual output projections scaled by 1/sqrt(2·layers).
        residual_std = 0.02 / math.sqrt(2 * self.num_layers)
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear):
                last = name.rsplit(".", 1)[-1]
                std = residual_std if last in ("output_proj", "down_proj", "fc2") else 0.02
                nn.init.normal_(module.weight, mean=0.0, std=std)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @property
    def tied(self) -> bool:
        """Whether the output head shares the token embedding's weight."""
        return self.output.weight is self.tok_embeddings.weight

    @property
    def _blocks(self) -> Sequence[TransformerBlock]:
        """``layers``, typed as the blocks it holds (built in ``__init__``). ``nn.ModuleList``
        types its items as plain Modules, on which a type checker sees ``.attn`` as
        ``Tensor | Module`` (``nn.Module.__getattr__``); the cast changes nothing at run time."""
        return cast("Sequence[TransformerBlock]", self.layers)

    # -- cache --------------------------------------------------------------------------------
    def setup_cache(
        self, batch_size: int, max_seq_len: int | None = None, dtype: torch.dtype | None = None
    ) -> None:
        """Allocate a KV cache in every layer (``max_seq_len`` defaults to the model's)."""
        max_seq_len = self.max_seq_len if max_seq_len is None else max_seq_len
        if self.positional == "learned" and max_seq_len > self.max_seq_len:
            raise ValueError(
                f"cache max_seq_len={max_seq_len} exceeds the learned positions "
                f"(max_seq_len={self.max_seq_len})"
            )
        for layer in self._blocks:
            layer.attn.setup_cache(batch_size, max_seq_len, dtype)

    def reset_cache(self) -> None:
        """Empty every layer's KV cache."""
        for layer in self._blocks:
            layer.attn.reset_cache()

    def remove_cache(self) -> None:
        """Free every layer's KV cache."""
        for layer in self._blocks:
            layer.attn.remove_cache()

    @property
    def has_cache(self) -> bool:
        return self._blocks[0].attn.has_cache

    # -- forward ------------------------------------------------------------------------------
    def forward(
        self,
        tokens: Tensor,
        *,
        attention_mask: Tensor | None = None,
        mask: Tensor | None = None,
        input_pos: Tensor | None = None,
    ) -> Tensor:
        """Next-token logits ``[b, s, vocab]`` (float32 or the model dtype) for ``tokens [b, s]``.

        Args:
            tokens: token ids ``[b, s]``.
            attention_mask: key padding mask ``[b, s_kv]``, nonzero/True = real token
                (HuggingFace's convention; what :mod:`ferrotok.data` returns).
            mask: full attention mask as in :class:`MultiHeadAttention` (e.g. block-causal
                masks for packed documents); combined with ``attention_mask``.
            input_pos: positions ``[s]`` or ``[b, s]`` (default ``0..s-1``, or after the cached
                positions when a KV cache is set up).
        """
        if tokens.dim() != 2:
            raise ValueError(
                f"TransformerLM expects tokens of shape [b, s], got {tuple(tokens.shape)}"
            )
        b, s = tokens.shape
        if self.positional == "learned" and input_pos is None and not self.has_cache:
            if s > self.max_seq_len:
                raise IndexError(
                    f"sequence length {s} exceeds max_seq_len={self.max_seq_len} of this model"
                )
        full = mask
        if attention_mask is not None:
            if attention_mask.dim() != 2 or attention_mask.shape[0] != b:
                raise ValueError(
                    f"attention_mask must be [b, s_kv] with b={b}, "
                    f"got {tuple(attention_mask.shape)}"
                )
            pad = attention_mask.bool()[:, None, None, :]
            if full is None:
                full = pad
            elif full.dtype == torch.bool:
                full = (full.unsqueeze(1) if full.dim() == 3 else full) & pad
            else:
                full = (full.unsqueeze(1) if full.dim() == 3 else full).masked_fill(
                    ~pad, float("-inf")
                )
        cache = self._blocks[0].attn.kv_cache
        if input_pos is None and cache is not None and self.pos_embeddings is not None:
            # absolute embeddings need the positions the attention layers will infer
            input_pos = cache.next_pos[:, None] + torch.arange(s, device=tokens.device)
        h = self.tok_embeddings(tokens)
        if self.pos_embeddings is not None:
            h = self.pos_embeddings(h, input_pos=input_pos)
        h = self.embed_dropout(h)
        for layer in self.layers:
            h = layer(h, mask=full, input_pos=input_pos)
        return self.output(self.norm(h))

    def loss(
        self,
        tokens: Tensor,
        labels: Tensor,
        *,
        attention_mask: Tensor | None = None,
        mask: Tensor | None = None,
        input_pos: Tensor | None = None,
    ) -> Tensor:
        """Mean cross-entropy of ``labels [b, s]`` (already shifted; -100 = ignore).

        Example:
            >>> model = TransformerLM(50, dim=16, num_layers=1, num_heads=2, max_seq_len=8)
            >>> x = torch.randint(0, 50, (2, 8))
            >>> model.loss(x[:, :-1], x[:, 1:]).shape
            torch.Size([])
        """
        logits = self(tokens, attention_mask=attention_mask, mask=mask, input_pos=input_pos)
        return lm_loss(logits, labels)

    def generate(
        self,
        prompt: Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        eos_token: int | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Sample a continuation of ``prompt`` (``[s]`` or ``[b, s]``), using a KV cache.

        See :func:`generate`; ``temperature=0`` is greedy decoding.
        """
        return generate(
            self,
            prompt,
            max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            eos_token=eos_token,
            generator=generator,
        )


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
