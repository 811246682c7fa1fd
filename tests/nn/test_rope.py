"""RoPE against HuggingFace transformers (half layout, every scaling type, partial rotary), the
complex-number form of the paper (interleaved layout), and RoPE's defining properties."""

from __future__ import annotations

import pytest
import torch
import transformers
from ferrotok.nn import (
    RotaryPositionalEmbeddings,
    apply_rotary_pos_emb,
    permute_for_rope,
    rope_frequencies,
    rotate_half,
    unpermute_for_rope,
)
from transformers import LlamaConfig, PhiConfig
from transformers.models.llama import modeling_llama as hf_llama
from transformers.models.phi import modeling_phi as hf_phi

TRANSFORMERS_MAJOR = int(transformers.__version__.split(".")[0])
HEAD_DIM = 16
MAX_POS = 128  # HF max_position_embeddings == our max_seq_len

SCALINGS = {
    "default": None,
    "linear": {"rope_type": "linear", "factor": 2.0},
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32},
    "yarn_params": {
        "rope_type": "yarn",
        "factor": 8.0,
        "original_max_position_embeddings": 16,
        "beta_fast": 16,
        "beta_slow": 2,
        "mscale": 0.707,
        "mscale_all_dim": 1.0,
    },
    "yarn_attention_factor": {
        "rope_type": "yarn",
        "factor": 2.0,
        "original_max_position_embeddings": 64,
        "attention_factor": 1.5,
        "truncate": False,
    },
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        # wavelengths 6.3 (kept), 36 (smoothed), 199+ (divided by factor): all three branches
        "original_max_position_embeddings": 64,
    },
}


def hf_rotary(config_cls, rotary_cls, scaling, base=10000.0, partial=None):
    params = {"rope_type": "default"} if scaling is None else dict(scaling)
    params["rope_theta"] = base
    if partial is not None:
        params["partial_rotary_factor"] = partial
    if TRANSFORMERS_MAJOR >= 5:
        rope = {"rope_parameters": params}
    else:  # 4.x (the last for Python 3.9) reads the same values from three other fields
        rope = {
            "rope_theta": params.pop("rope_theta"),
            "partial_rotary_factor": params.pop("partial_rotary_factor", 1.0),
            "rope_scaling": params,
        }
    config = config_cls(
        hidden_size=4 * HEAD_DIM,
        num_attention_heads=4,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POS,
        **rope,
    )
    return rotary_cls(config)


def to_bhsd(x):
    return x.transpose(1, 2)


@pytest.mark.parametrize("name", sorted(SCALINGS))
def test_half_layout_matches_transformers(name):
    scaling = SCALINGS[name]
    base = 500.0 if name == "linear" else 10000.0
    hf = hf_rotary(LlamaConfig, hf_llama.LlamaRotaryEmbedding, scaling, base)
    ours = RotaryPositionalEmbeddings(
        HEAD_DIM, max_seq_len=MAX_POS, base=base, layout="half", scaling=scaling
    )
    # dynamic scaling only differs beyond max_position_embeddings: go past it there
    s = 160 if name == "dynamic" else MAX_POS
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, s, 3, HEAD_DIM, generator=g)
    k = torch.randn(2, s, 3, HEAD_DIM, generator=g)
    pos = torch.arange(s)[None].expand(2, s)
    cos, sin = hf(q, pos)
    want_q, want_k = hf_llama.apply_rotary_pos_emb(to_bhsd(q), to_bhsd(k), cos, sin)
    torch.testing.assert_close(to_bhsd(ours(q)), want_q, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(to_bhsd(ours(k, input_pos=pos)), want_k, atol=1e-5, rtol=1e-5)
    our_cos, our_sin = ours.cos_sin(pos)
    torch.testing.assert_close(our_cos, cos, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(our_sin, sin, atol=1e-6, rtol=1e-6)
    assert ours.attention_factor == pytest.approx(hf.attention_scaling)


@pytest.mark.parametrize("name", ["default", "linear", "yarn", "llama3", "dynamic"])
def test_partial_rotary_matches_transformers_phi(name):
    scaling = SCALINGS[name]
    hf = hf_rotary(PhiConfig, hf_phi.PhiRotaryEmbedding, scaling, partial=0.5)
    ours = RotaryPositionalEmbeddings(
        HEAD_DIM, MAX_POS, layout="half", scaling=scaling, partial_rotary_factor=0.5
    )
    assert ours.rotary_dim == HEAD_DIM // 2
    s = 150 if name == "dynamic" else 64
    q = torch.randn(1, s, 2, HEAD_DIM, generator=torch.Generator().manual_seed(1))
    pos = torch.arange(s)[None]
    cos, sin = hf(q, pos)
    r = HEAD_DIM // 2
    qh = to_bhsd(q)
    rot, _ = hf_phi.apply_rotary_pos_emb(qh[..., :r], qh[..., :r], cos, sin)
    want = torch.cat((rot, qh[..., r:]), dim=-1)
    torch.testing.assert_close(to_bhsd(ours(q)), want, atol=1e-5, rtol=1e-5)
    # our apply_rotary_pos_emb rotates the first cos.shape[-1] dims and passes the rest
    got, _ = apply_rotary_pos_emb(qh, qh, cos, sin)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)


def test_rotate_half_and_apply_match_transformers():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 5, 8, generator=g)
    torch.testing.assert_close(rotate_half(x), hf_llama.rotate_half(x))
    q, k = torch.randn(2, 3, 5, 8, generator=g), torch.randn(2, 3, 5, 8, generator=g)
    cos, sin = torch.randn(2, 5, 8, generator=g), torch.randn(2, 5, 8, generator=g)
    for a, b in zip(
        apply_rotary_pos_emb(q, k, cos, sin), hf_llama.apply_rotary_pos_emb(q, k, cos, sin)
    ):
        torch.testing.assert_close(a, b)
    for a, b in zip(
        apply_rotary_pos_emb(q, k, cos[:, :3], sin[:, :3], unsqueeze_dim=2),
        hf_llama.apply_rotary_pos_emb(q, k, cos[:, :3], sin[:, :3], unsqueeze_dim=2),
    ):
        torch.testing.assert_close(a, b)


def test_interleaved_matches_the_complex_form():
    """RoFormer eq. 34 / Meta's Llama: (x_{2i} + i·x_{2i+1}) · e^{i·m·θ_i}."""
    rope = RotaryPositionalEmbeddings(HEAD_DIM, 64, base=10000.0)
    x = torch.randn(2, 40, 3, HEAD_DIM, generator=torch.Generator().manual_seed(3))
    theta = 1.0 / 10000.0 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float64) / HEAD_DIM)
    angles = torch.arange(40, dtype=torch.float64)[:, None] * theta
    rotation = torch.polar(torch.ones_like(angles), angles)[None, :, None, :]
    z = torch.view_as_complex(x.double().reshape(2, 40, 3, HEAD_DIM // 2, 2).contiguous())
    want = torch.view_as_real(z * rotation).flatten(-2)
    torch.testing.assert_close(rope(x).double(), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("partial", [1.0, 0.5])
def test_interleaved_on_w_equals_half_on_permuted_w(partial):
    n_heads, d_model = 4, 32
    g = torch.Generator().manual_seed(4)
    w_q = torch.randn(n_heads * HEAD_DIM, d_model, generator=g)
    w_k = torch.randn(n_heads * HEAD_DIM, d_model, generator=g)
    x = torch.randn(2, 20, d_model, generator=g)
    inter = RotaryPositionalEmbeddings(HEAD_DIM, 64, partial_rotary_factor=partial)
    half = RotaryPositionalEmbeddings(HEAD_DIM, 64, layout="half", partial_rotary_factor=partial)
    r = inter.rotary_dim

    def heads(t):
        return t.view(2, 20, n_heads, HEAD_DIM)

    qi, ki = inter(heads(x @ w_q.T)), inter(heads(x @ w_k.T))
    qh = half(heads(x @ permute_for_rope(w_q, n_heads, r).T))
    kh = half(heads(x @ permute_for_rope(w_k, n_heads, r).T))
    # same attention scores ...
    scores_i = torch.einsum("bqhd,bkhd->bhqk", qi, ki)
    scores_h = torch.einsum("bqhd,bkhd->bhqk", qh, kh)
    torch.testing.assert_close(scores_i, scores_h, atol=1e-4, rtol=1e-5)
    # ... because the rotated vectors are the same up to the per-head permutation
    perm = torch.cat((torch.arange(0, r, 2), torch.arange(1, r, 2), torch.arange(r, HEAD_DIM)))
    torch.testing.assert_close(qh, qi[..., perm], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        unpermute_for_rope(permute_for_rope(w_q, n_heads, r), n_heads, r), w_q
    )


def test_permute_for_rope_is_the_hf_llama_conversion():
    n_heads, dim1, dim2 = 4, 64, 24
    w = torch.randn(dim1, dim2)
    # convert_llama_weights_to_hf.py: permute(w, n_heads, dim1, dim2)
    want = w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)
    torch.testing.assert_close(permute_for_rope(w, n_heads), want)
    bias = torch.randn(dim1)
    torch.testing.assert_close(
        permute_for_rope(bias[:, None], n_heads)[:, 0], permute_for_rope(bias, n_heads)
    )


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_relative_property_norm_and_identity(layout):
    rope = RotaryPositionalEmbeddings(HEAD_DIM, 128, layout=layout)
    g = torch.Generator().manual_seed(5)
    q = torch.randn(HEAD_DIM, generator=g)
    k = torch.randn(HEAD_DIM, generator=g)

    def at(v, m):
        return rope(v.view(1, 1, 1, -1), input_pos=torch.tensor([m])).view(-1)

    # q_m · k_n depends on m - n only
    for delta in (0, 3, -7, 20):
        dots = [at(q, m) @ at(k, m - delta) for m in (30, 41, 77, 90)]
        for d in dots[1:]:
            assert d.item() == pytest.approx(dots[0].item(), abs=1e-4)
    assert (at(q, 50) @ at(k, 47)).item() != pytest.approx((at(q, 50) @ at(k, 40)).item(), abs=1e-3)
    # rotations preserve norms; position 0 is the identity
    x = torch.randn(2, 100, 3, HEAD_DIM, generator=g)
    torch.testing.assert_close(rope(x).norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rope(x)[:, 0], x[:, 0])


def test_input_pos_per_batch_row_and_dtype():
    rope = RotaryPositionalEmbeddings(HEAD_DIM, 64)
    x = torch.randn(2, 5, 3, HEAD_DIM)
    pos = torch.stack((torch.arange(5), torch.arange(10, 15)))
    out = rope(x, input_pos=pos)
    torch.testing.assert_close(out[0], rope(x[:1])[0])
    torch.testing.assert_close(out[1], rope(x[1:], input_pos=torch.arange(10, 15))[0])
    y = rope(x.to(torch.bfloat16))
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), rope(x), atol=0.05, rtol=0.02)


def test_tables_stay_float32_through_to_dtype():
    rope = RotaryPositionalEmbeddings(HEAD_DIM, 64)
    ref = rope.cos_table.clone()
    rope.to(torch.float16)
    assert rope.cos_table.dtype == torch.float32
    torch.testing.assert_close(rope.cos_table, ref, atol=0, rtol=0)
    assert rope.state_dict() == {}  # nothing to save: tables are rebuilt


def test_rope_frequencies_default():
    inv, af = rope_frequencies(8, 100.0)
    torch.testing.assert_close(inv, torch.tensor([1.0, 100**-0.25, 100**-0.5, 100**-0.75]))
    assert af == 1.0


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="must be even"):
        RotaryPositionalEmbeddings(15)
    with pytest.raises(ValueError, match="must be even"):
        RotaryPositionalEmbeddings(16, partial_rotary_factor=0.1875)  # 3 rotary dims
    assert RotaryPositionalEmbeddings(16, partial_rotary_factor=0.375).rotary_dim == 6
    with pytest.raises(ValueError, match="layout must be one of"):
        RotaryPositionalEmbeddings(16, layout="neox")
    with pytest.raises(ValueError, match="unsupported rope_type 'longrope'"):
        RotaryPositionalEmbeddings(16, scaling={"rope_type": "longrope"})
    with pytest.raises(ValueError, match=r"needs \['factor'\]"):
        RotaryPositionalEmbeddings(16, scaling={"rope_type": "linear"})
    with pytest.raises(ValueError, match="unknown keys"):
        RotaryPositionalEmbeddings(16, scaling={"rope_type": "linear", "factor": 2, "fctr": 1})
    with pytest.raises(ValueError, match="disagrees with base"):
        RotaryPositionalEmbeddings(
            16, base=10000, scaling={"type": "linear", "factor": 2, "rope_theta": 500}
        )
    rope = RotaryPositionalEmbeddings(16, max_seq_len=8)
    with pytest.raises(IndexError, match=r"position 8 is out of range.*\[0, 8\)"):
        rope(torch.zeros(1, 9, 1, 16))
    with pytest.raises(IndexError, match="out of range"):
        rope(torch.zeros(1, 1, 1, 16), input_pos=torch.tensor([-1]))
    with pytest.raises(ValueError, match=r"\[b, s, h, 16\]"):
        rope(torch.zeros(1, 2, 16))
    with pytest.raises(ValueError, match=r"input_pos must have shape \[s\]"):
        rope(torch.zeros(1, 2, 1, 16), input_pos=torch.arange(3))
    with pytest.raises(ValueError, match="even and at most the head dim"):
        apply_rotary_pos_emb(
            torch.zeros(1, 1, 2, 4),
            torch.zeros(1, 1, 2, 4),
            torch.zeros(1, 2, 6),
            torch.zeros(1, 2, 6),
        )
    with pytest.raises(ValueError, match="divisible by n_heads"):
        permute_for_rope(torch.zeros(10, 3), 4)


def test_gradcheck_float64():
    rope = RotaryPositionalEmbeddings(8, 16, partial_rotary_factor=0.5, layout="half")
    x = torch.randn(1, 5, 2, 8, dtype=torch.float64, requires_grad=True)
    assert rope(x).dtype == torch.float64
    assert torch.autograd.gradcheck(lambda t: rope(t, input_pos=torch.arange(3, 8)), (x,))
