"""Rotary positional embeddings (RoPE) in both layouts, with HuggingFace's scaling types.

Su et al., "RoFormer: Enhanced Transformer with Rotary Position Embedding" (2021), eq. 34: the
pair ``(x_a, x_b)`` at position ``m`` is rotated by the angle ``m·θ_i``, ``θ_i = base^(-2i/d)``::

    x_a' = x_a cos(mθ_i) - x_b sin(mθ_i)
    x_b' = x_b cos(mθ_i) + x_a sin(mθ_i)

Two layouts pair the dimensions differently:

* ``"interleaved"``: pairs ``(x_{2i}, x_{2i+1})`` — the paper, Meta's Llama checkpoints, torchtune;
* ``"half"``: pairs ``(x_i, x_{i+d/2})`` — GPT-NeoX and HuggingFace transformers
  (``rotate_half``).

They are the same rotation after permuting the rows of the q/k projection weights within each
head; :func:`permute_for_rope` and :func:`unpermute_for_rope` convert weights between them (the
permutation of HuggingFace's ``convert_llama_weights_to_hf.py``).

Frequencies and cos/sin tables are computed in float32 exactly as HuggingFace computes them, and
rotations are applied in float32 and cast back to the input dtype. ``scaling`` takes a
HuggingFace ``rope_scaling``/``rope_parameters`` dict; supported ``rope_type`` values:

* ``"linear"`` — position interpolation, Chen et al. 2023 (``factor``);
* ``"dynamic"`` — dynamic NTK-aware scaling, u/bloc97 and u/emozilla 2023 (``factor``,
  ``original_max_position_embeddings``);
* ``"yarn"`` — Peng et al., "YaRN" 2023 (``factor``, ``original_max_position_embeddings``,
  ``beta_fast``, ``beta_slow``, ``attention_factor``, ``mscale``, ``mscale_all_dim``,
  ``truncate``);
* ``"llama3"`` — Meta's Llama 3.1 frequency smoothing (``factor``, ``low_freq_factor``,
  ``high_freq_factor``, ``original_max_position_embeddings``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import Tensor, nn

__all__ = [
    "RotaryPositionalEmbeddings",
    "rotate_half",
    "apply_rotary_pos_emb",
    "permute_for_rope",
    "unpermute_for_rope",
    "rope_frequencies",
    "ROPE_TYPES",
]

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "llama3")
_LAYOUTS = ("interleaved", "half")
_COMMON_KEYS = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}
_KEYS: dict[str, tuple[set[str], set[str]]] = {  # rope_type -> (required, optional)
    "default": (set(), set()),
    "linear": ({"factor"}, set()),
    "dynamic": ({"factor"}, {"original_max_position_embeddings"}),
    "yarn": (
        set(),
        {
            "factor",
            "original_max_position_embeddings",
            "attention_factor",
            "beta_fast",
            "beta_slow",
            "mscale",
            "mscale_all_dim",
            "truncate",
        },
    ),
    "llama3": (
        {"factor", "low_freq_factor", "high_freq_factor"},
        {"original_max_position_embeddings"},
    ),
}


def rotate_half(x: Tensor) -> Tensor:
    """``[x1, x2] -> [-x2, x1]`` on the last dimension (halves), the "half" layout's rotation.

    Example:
        >>> rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0])).tolist()
        [-3.0, -4.0, 1.0, 2.0]
    """
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rotary_pos_emb(
    q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, unsqueeze_dim: int = 1
) -> tuple[Tensor, Tensor]:
    """Rotate ``q`` and ``k`` in the "half" layout: ``x·cos + rotate_half(x)·sin``.

    Same contract as HuggingFace's ``apply_rotary_pos_emb``: ``q``/``k`` are ``[b, h, s, d]``
    and ``cos``/``sin`` are ``[b, s, r]`` (``unsqueeze_dim=1``); for ``[b, s, h, d]`` inputs pass
    ``unsqueeze_dim=2``. If ``r < d`` only the first ``r`` dimensions are rotated and the rest pass
    through (partial rotary, as in GPT-NeoX/Phi).

    Example:
        >>> rope = RotaryPositionalEmbeddings(8, layout="half")
        >>> cos, sin = rope.cos_sin(torch.arange(3)[None])
        >>> q = k = torch.randn(1, 2, 3, 8)
        >>> qr, kr = apply_rotary_pos_emb(q, k, cos, sin)
        >>> torch.allclose(qr.norm(dim=-1), q.norm(dim=-1))
        True
    """
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    r = cos.shape[-1]

    def rot(x: Tensor) -> Tensor:
        if r > x.shape[-1] or r % 2:
            raise ValueError(
                f"cos/sin last dimension {r} must be even and at most the head dim {x.shape[-1]}"
            )
        xr, xp = x[..., :r], x[..., r:]
        out = xr * cos + rotate_half(xr) * sin
        return torch.cat((out, xp), dim=-1) if xp.shape[-1] else out

    return rot(q), rot(k)


def _rope_permutation(head_dim: int, rotary_dim: int) -> Tensor:
    # interleaved row order (0,1),(2,3),... -> half order 0,2,4,...,1,3,5,...; the pass-through
    # rows after rotary_dim keep their place.
    return torch.cat(
        (
            torch.arange(0, rotary_dim, 2),
            torch.arange(1, rotary_dim, 2),
            torch.arange(rotary_dim, head_dim),
        )
    )


def _permute_rows(w: Tensor, n_heads: int, rotary_dim: int | None, inverse: bool) -> Tensor:
    if w.dim() not in (1, 2):
        raise ValueError(
            f"expected a projection weight [n_heads * head_dim, in] or bias [n_heads * head_dim], "
            f"got shape {tuple(w.shape)}"
        )
    if n_heads <= 0 or w.shape[0] % n_heads:
        raise ValueError(
            f"the first dimension ({w.shape[0]}) must be divisible by n_heads ({n_heads})"
        )
    head_dim = w.shape[0] // n_heads
    rotary_dim = head_dim if rotary_dim is None else rotary_dim
    if rotary_dim % 2 or not 0 < rotary_dim <= head_dim:
        raise ValueError(
            f"rotary_dim must be even and in (0, head_dim={head_dim}], got {rotary_dim}"
        )
    perm = _rope_permutation(head_dim, rotary_dim).to(w.device)
    if inverse:
        perm = torch.argsort(perm)
    return w.reshape(n_heads, head_dim, *w.shape[1:])[:, perm].reshape(w.shape)


def permute_for_rope(w: Tensor, n_heads: int, rotary_dim: int | None = None) -> Tensor:
    """Reorder q/k projection rows from the interleaved layout to the half layout.

    With ``W`` of shape ``[n_heads * head_dim, in]`` (or a bias ``[n_heads * head_dim]``),
    interleaved RoPE on ``x @ W.T`` equals half-layout RoPE on ``x @ permute_for_rope(W).T`` up to
    the same permutation of the output features, so attention scores are identical. This is
    HuggingFace's Llama conversion (``w.view(h, d // 2, 2, in).transpose(1, 2)``).

    Example:
        >>> w = torch.arange(8.0).reshape(8, 1)  # 2 heads of dim 4
        >>> permute_for_rope(w, 2).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]
    """
    return _permute_rows(w, n_heads, rotary_dim, inverse=False)


def unpermute_for_rope(w: Tensor, n_heads: int, rotary_dim: int | None = None) -> Tensor:
    """Inverse of :func:`permute_for_rope`: half layout -> interleaved layout.

    Example:
        >>> w = torch.randn(8, 3)
        >>> torch.equal(unpermute_for_rope(permute_for_rope(w, 2), 2), w)
        True
    """
    return _permute_rows(w, n_heads, rotary_dim, inverse=True)


def _parse_scaling(
    scaling: dict[str, Any] | None, base: float, partial_rotary_factor: float | None
) -> tuple[str, dict[str, Any]]:
    if scaling is None:
        return "default", {}
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be a dict of HuggingFace rope parameters, got {scaling!r}")
    params = dict(scaling)
    rope_type = params.get("rope_type", params.get("type", "default"))
    if rope_type not in _KEYS:
        raise ValueError(f"unsupported rope_type {rope_type!r}; supported: {ROPE_TYPES}")
    if "rope_theta" in params and not math.isclose(float(params["rope_theta"]), base):
        raise ValueError(
            f"scaling['rope_theta']={params['rope_theta']} disagrees with base={base}; "
            f"pass the base once"
        )
    prf = params.get("partial_rotary_factor")
    if (
        prf is not None
        and partial_rotary_factor is not None
        and not math.isclose(float(prf), partial_rotary_factor)
    ):
        raise ValueError(
            f"scaling['partial_rotary_factor']={prf} disagrees with "
            f"partial_rotary_factor={partial_rotary_factor}"
        )
    required, optional = _KEYS[rope_type]
    missing = sorted(k for k in required if params.get(k) is None)
    if missing:
        raise ValueError(f"rope_type {rope_type!r} needs {missing} in scaling")
    unknown = sorted(set(params) - required - optional - _COMMON_KEYS)
    if unknown:
        raise ValueError(
            f"unknown keys {unknown} for rope_type {rope_type!r}; "
            f"expected some of {sorted(required | optional)}"
        )
    factor = params.get("factor")
    if factor is not None and float(factor) < 1.0:
        raise ValueError(f"scaling factor must be >= 1, got {factor}")
    for key in _COMMON_KEYS:
        params.pop(key, None)
    return rope_type, params


def _default_inv_freq(rotary_dim: int, base: float, device: torch.device | None) -> Tensor:
    # θ_i = base^(-2i/d), computed in float32 as HuggingFace and torchtune do.
    exponents = torch.arange(0, rotary_dim, 2, dtype=torch.int64, device=device).float()
    return 1.0 / (base ** (exponents / rotary_dim))


def rope_frequencies(
    rotary_dim: int,
    base: float = 10000.0,
    scaling: dict[str, Any] | None = None,
    *,
    max_seq_len: int = 4096,
    device: torch.device | None = None,
) -> tuple[Tensor, float]:
    """Inverse frequencies ``θ [rotary_dim / 2]`` (float32) and the cos/sin attention factor.

    ``max_seq_len`` plays the part of HuggingFace's ``max_position_embeddings`` (the default of
    ``original_max_position_embeddings``). For ``"dynamic"`` the frequencies returned are those of
    sequences no longer than the original length; longer ones are rescaled on the fly by
    :class:`RotaryPositionalEmbeddings`.

    Example:
        >>> inv, af = rope_frequencies(4, 10000.0)
        >>> [round(v, 4) for v in inv.tolist()], af
        ([1.0, 0.01], 1.0)
    """
    rope_type, p = _parse_scaling(scaling, base, None)
    if rotary_dim <= 0 or rotary_dim % 2:
        raise ValueError(f"rotary_dim must be even and positive, got {rotary_dim}")
    inv_freq = _default_inv_freq(rotary_dim, base, device)
    original = int(p.get("original_max_position_embeddings") or max_seq_len)

    if rope_type in ("default", "dynamic"):
        return inv_freq, 1.0

    if rope_type == "linear":
        # Position interpolation (Chen et al. 2023): m -> m / factor, i.e. θ -> θ / factor.
        return inv_freq / float(p["factor"]), 1.0

    if rope_type == "llama3":
        # Llama 3.1 (Meta, llama-models `apply_scaling`): keep short wavelengths, divide long
        # ones by `factor`, interpolate smoothly in between.
        factor = float(p["factor"])
        low, high = float(p["low_freq_factor"]), float(p["high_freq_factor"])
        if high <= low:
            raise ValueError(
                f"llama3 scaling needs high_freq_factor > low_freq_factor, got {high} <= {low}"
            )
        low_wavelen, high_wavelen = original / low, original / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (original / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return torch.where(medium, smoothed, scaled), 1.0

    # YaRN (Peng et al. 2023, section 3.2 "NTK-by-parts" + 3.4 attention temperature).
    given = p.get("factor")
    factor = float(given) if given is not None else max_seq_len / original

    def mscale(scale: float, m: float = 1.0) -> float:
        # sqrt(1/t) = 0.1 ln(s) + 1 (YaRN eq. 22), generalised by DeepSeek's `mscale`.
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention_factor = p.get("attention_factor")
    if attention_factor is None:
        m, m_all = p.get("mscale"), p.get("mscale_all_dim")
        if m and m_all:
            attention_factor = mscale(factor, m) / mscale(factor, m_all)
        else:
            attention_factor = mscale(factor)
    beta_fast = float(p.get("beta_fast") or 32)
    beta_slow = float(p.get("beta_slow") or 1)

    def correction_dim(num_rotations: float) -> float:
        # pair index i whose wavelength fits `num_rotations` times in the original context
        return (rotary_dim * math.log(original / (num_rotations * 2 * math.pi))) / (
            2 * math.log(base)
        )

    lo, hi = correction_dim(beta_fast), correction_dim(beta_slow)
    if p.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, rotary_dim - 1)
    if lo == hi:
        hi += 0.001  # avoid a zero-width ramp
    ramp = ((torch.arange(rotary_dim // 2, dtype=torch.float32) - lo) / (hi - lo)).clamp(0, 1)
    ramp = ramp.to(device)
    pos_freqs = base ** (torch.arange(0, rotary_dim, 2, device=device).float() / rotary_dim)
    extrapolation = 1.0 / pos_freqs
    interpolation = 1.0 / (factor * pos_freqs)
    keep = 1 - ramp  # 1: high frequency, kept (extrapolated); 0: low frequency, interpolated
    return interpolation * (1 - keep) + extrapolation * keep, float(attention_factor)


class RotaryPositionalEmbeddings(nn.Module):
    """Rotary positional embeddings applied to queries or keys ``[b, s, h, d]``.

    Args:
        dim: head dimension ``d``.
        max_seq_len: number of positions in the cos/sin table; positions at or past it raise
            ``IndexError`` (except with ``"dynamic"`` scaling, which computes them on the fly).
        base: ``θ`` base (``rope_theta``).
        layout: ``"interleaved"`` (pairs ``2i, 2i+1``; Meta/torchtune) or ``"half"`` (pairs
            ``i, i + r/2``; HuggingFace/GPT-NeoX).
        scaling: HuggingFace rope-scaling dict, e.g. ``{"rope_type": "linear", "factor": 2.0}``.
        partial_rotary_factor: rotate only the first ``int(d * factor)`` dimensions (even).

    Example:
        >>> rope = RotaryPositionalEmbeddings(16, max_seq_len=128)
        >>> x = torch.randn(2, 10, 4, 16)
        >>> rope(x).shape
        torch.Size([2, 10, 4, 16])
        >>> torch.allclose(rope(x)[:, 0], x[:, 0])  # position 0 is the identity
        True
    """

    def __init__(
        self,
        dim: int,
        max_seq_len: int = 4096,
        base: float = 10000.0,
        *,
        layout: str = "interleaved",
        scaling: dict[str, Any] | None = None,
        partial_rotary_factor: float = 1.0,
    ) -> None:
        super().__init__()
        if layout not in _LAYOUTS:
            raise ValueError(f"layout must be one of {_LAYOUTS}, got {layout!r}")
        if dim <= 0:
            raise ValueError(f"dim must be positive, got {dim}")
        if not 0.0 < partial_rotary_factor <= 1.0:
            raise ValueError(
                f"partial_rotary_factor must be in (0, 1], got {partial_rotary_factor}"
            )
        rotary_dim = int(dim * partial_rotary_factor)
        if rotary_dim == 0 or rotary_dim % 2:
            raise ValueError(
                f"the rotary dimension must be even and positive: dim={dim} * "
                f"partial_rotary_factor={partial_rotary_factor} gives {rotary_dim}"
            )
        if max_seq_len <= 0:
            raise ValueError(f"max_seq_len must be positive, got {max_seq_len}")
        self.dim = dim
        self.rotary_dim = rotary_dim
        self.max_seq_len = max_seq_len
        self.base = float(base)
        self.layout = layout
        self.partial_rotary_factor = partial_rotary_factor
        self.rope_type, self._params = _parse_scaling(scaling, self.base, partial_rotary_factor)
        self.scaling = None if scaling is None else dict(scaling)
        if self.rope_type == "dynamic" and rotary_dim < 4:
            raise ValueError(f"dynamic NTK scaling needs a rotary dimension >= 4, got {rotary_dim}")
        self._original_len = int(
            self._params.get("original_max_position_embeddings") or max_seq_len
        )
        self.register_buffer("inv_freq", torch.empty(0), persistent=False)
        self.register_buffer("cos_table", torch.empty(0), persistent=False)
        self.register_buffer("sin_table", torch.empty(0), persistent=False)
        self.attention_factor = 1.0
        self._build(None)

    # -- tables -------------------------------------------------------------------------------
    def _build(self, device: torch.device | None) -> None:
        scaling = None if self.rope_type == "default" else {"rope_type": self.rope_type}
        if scaling is not None:
            scaling.update(self._params)
        inv_freq, self.attention_factor = rope_frequencies(
            self.rotary_dim, self.base, scaling, max_seq_len=self.max_seq_len, device=device
        )
        self.inv_freq = inv_freq
        if self.rope_type == "dynamic":
            self.cos_table = torch.empty(0, device=device)
            self.sin_table = torch.empty(0, device=device)
            return
        angles = torch.arange(self.max_seq_len, device=device).float()[:, None] * inv_freq
        self.cos_table = angles.cos() * self.attention_factor
        self.sin_table = angles.sin() * self.attention_factor

    def _apply(
        self, fn: Callable[[Tensor], Tensor], recurse: bool = True
    ) -> RotaryPositionalEmbeddings:
        # .to(dtype) / .half() must not round the tables: rebuild them in float32.
        super()._apply(fn, recurse)  # type: ignore[no-untyped-call]  # unannotated in torch
        if self.inv_freq.dtype != torch.float32:
            self._build(self.inv_freq.device)
        return self

    def _dynamic_inv_freq(self, seq_len: Tensor) -> Tensor:
        # Dynamic NTK (u/emozilla 2023, as in HuggingFace): for L > L0,
        # base' = base · (factor·L/L0 − (factor − 1))^(d / (d − 2)).
        factor = float(self._params["factor"])
        length = torch.clamp(seq_len.float(), min=float(self._original_len))
        d = self.rotary_dim
        stretch = factor * length / self._original_len - (factor - 1)
        new_base = self.base * stretch ** (d / (d - 2))
        exponents = torch.arange(0, d, 2, dtype=torch.int64, device=seq_len.device).float() / d
        return 1.0 / (new_base[..., None] ** exponents)

    def cos_sin(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Per-frequency ``cos, sin`` for integer ``positions [...]``: each ``[..., r]`` float32.

        Laid out for this module's ``layout`` (``cat(c, c)`` for "half", ``c0 c0 c1 c1 ...``
        for "interleaved") and multiplied by the attention factor, like HuggingFace's rotary
        ``forward``; with ``layout="half"`` they plug into :func:`apply_rotary_pos_emb`.
        """
        cos, sin = self._freqs(positions)
        if self.layout == "half":
            return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        return cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)

    def _freqs(self, positions: Tensor) -> tuple[Tensor, Tensor]:
        if self.rope_type == "dynamic":
            seq_len = positions.max() + 1 if positions.numel() else positions.new_ones(())
            inv_freq = self._dynamic_inv_freq(seq_len)
            angles = positions.float()[..., None] * inv_freq
            return angles.cos(), angles.sin()
        if not torch.compiler.is_compiling() and positions.numel():
            lo, hi = int(positions.min()), int(positions.max())
            if lo < 0 or hi >= self.max_seq_len:
                raise IndexError(
                    f"position {hi if hi >= self.max_seq_len else lo} is out of range for "
                    f"RotaryPositionalEmbeddings(max_seq_len={self.max_seq_len}); positions must "
                    f"be in [0, {self.max_seq_len})"
                )
        return self.cos_table[positions], self.sin_table[positions]

    # -- forward ------------------------------------------------------------------------------
    def forward(self, x: Tensor, *, input_pos: Tensor | None = None) -> Tensor:
        """Rotate ``x [b, s, h, d]``; ``input_pos`` is ``[s]`` or ``[b, s]`` (default ``0..s-1``).

        Returns a tensor of the same shape and dtype (computed in float32, or in float64 for
        float64 inputs).
        """
        if x.dim() != 4 or x.shape[-1] != self.dim:
            raise ValueError(
                f"RotaryPositionalEmbeddings expects x of shape [b, s, h, {self.dim}], "
                f"got {tuple(x.shape)}"
            )
        b, s = x.shape[0], x.shape[1]
        if input_pos is None:
            positions = torch.arange(s, device=x.device)
        else:
            if input_pos.shape not in ((s,), (b, s)):
                raise ValueError(
                    f"input_pos must have shape [s] = [{s}] or [b, s] = [{b}, {s}], "
                    f"got {tuple(input_pos.shape)}"
                )
            if input_pos.dtype.is_floating_point or input_pos.dtype == torch.bool:
                raise TypeError(f"input_pos must be an integer tensor, got {input_pos.dtype}")
            positions = input_pos
        cos, sin = self._freqs(positions)  # [s, r/2] or [b, s, r/2]
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)  # broadcast over heads
        r = self.rotary_dim
        xf = x.to(torch.promote_types(x.dtype, torch.float32))  # float32, or float64 if given
        xr = xf[..., :r]
        if self.layout == "interleaved":
            pairs = xr.unflatten(-1, (r // 2, 2))
            x0, x1 = pairs[..., 0], pairs[..., 1]
            out = torch.stack((x0 * cos - x1 * sin, x1 * cos + x0 * sin), dim=-1).flatten(-2)
        else:
            x0, x1 = xr[..., : r // 2], xr[..., r // 2 :]
            out = torch.cat((x0 * cos - x1 * sin, x1 * cos + x0 * sin), dim=-1)
        if r < self.dim:
            out = torch.cat((out, xf[..., r:]), dim=-1)
        return out.to(x.dtype)

    def extra_repr(self) -> str:
        s = f"dim={self.dim}, max_seq_len={self.max_seq_len}, base={self.base}, "
        s += f"layout={self.layout!r}"
        if self.rotary_dim != self.dim:
            s += f", rotary_dim={self.rotary_dim}"
        if self.scaling is not None:
            s += f", scaling={self.scaling}"
        return s
