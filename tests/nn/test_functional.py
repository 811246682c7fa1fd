"""ferrotok.nn.functional.attention against the explicit formula softmax(QKᵀ·scale + mask)V."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from ferrotok.nn.functional import attention, causal_mask, lm_loss


def reference(q, k, v, mask=None, is_causal=False, scale=None):
    """Vaswani et al. eq. 1 in float64, one (batch, head) at a time; GQA by head index."""
    b, h, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(d) if scale is None else scale
    out = torch.zeros(b, h, lq, v.shape[-1], dtype=torch.float64)
    weights = torch.zeros(b, h, lq, lk, dtype=torch.float64)
    full = None if mask is None else mask.expand(b, h, lq, lk)
    for bi in range(b):
        for hi in range(h):
            kv = hi // (h // hkv)
            s = q[bi, hi].double() @ k[bi, kv].double().T * scale
            allowed = torch.ones(lq, lk, dtype=torch.bool)
            if full is not None:
                if full.dtype == torch.bool:
                    allowed &= full[bi, hi]
                else:
                    s = s + full[bi, hi].double()
            if is_causal:  # query i sits at position i + lk - lq
                for i in range(lq):
                    for j in range(lk):
                        if j > i + lk - lq:
                            allowed[i, j] = False
            s = s.masked_fill(~allowed, float("-inf"))
            for i in range(lq):
                if torch.isinf(s[i]).all():
                    continue  # fully masked row: zeros
                w = torch.softmax(s[i], dim=-1)
                weights[bi, hi, i] = w
                out[bi, hi, i] = w @ v[bi, kv].double()
    return out, weights


def qkv(b=2, h=4, hkv=4, lq=5, lk=5, d=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(b, h, lq, d, generator=g, dtype=dtype),
        torch.randn(b, hkv, lk, d, generator=g, dtype=dtype),
        torch.randn(b, hkv, lk, d, generator=g, dtype=dtype),
    )


def bool_mask(shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(shape, generator=g) > 0.4
    m[..., 0] = True  # no fully masked rows here
    return m


def float_mask(shape, seed=2):
    g = torch.Generator().manual_seed(seed)
    m = torch.randn(shape, generator=g)
    return m.masked_fill(torch.rand(shape, generator=g) > 0.7, float("-inf")).index_fill(
        -1, torch.tensor([0]), 0.0
    )


CASES = {
    "plain": dict(),
    "bool_mask": dict(mask=bool_mask((2, 1, 5, 5))),
    "bool_mask_per_head": dict(mask=bool_mask((2, 4, 5, 5))),
    "float_mask": dict(mask=float_mask((2, 1, 5, 5))),
    "causal": dict(is_causal=True),
    "causal_and_bool": dict(is_causal=True, mask=bool_mask((2, 1, 5, 5))),
    "causal_and_float": dict(is_causal=True, mask=float_mask((1, 1, 5, 5))),
    "scale": dict(scale=0.3),
    "scale_causal_mask": dict(scale=2.0, is_causal=True, mask=bool_mask((5, 5))),
}


@pytest.mark.parametrize("return_weights", [False, True])
@pytest.mark.parametrize("hkv", [4, 2, 1])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_explicit_formula(case, hkv, return_weights):
    q, k, v = qkv(hkv=hkv)
    kwargs = CASES[case]
    got = attention(q, k, v, return_weights=return_weights, **kwargs)
    want_out, want_w = reference(q, k, v, **kwargs)
    out = got[0] if return_weights else got
    torch.testing.assert_close(out.double(), want_out, atol=1e-5, rtol=1e-5)
    if return_weights:
        torch.testing.assert_close(got[1].double(), want_w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("return_weights", [False, True])
@pytest.mark.parametrize("lq,lk", [(1, 6), (3, 7), (6, 6)])
def test_causal_is_aligned_bottom_right(lq, lk, return_weights):
    q, k, v = qkv(lq=lq, lk=lk, hkv=2)
    got = attention(q, k, v, is_causal=True, return_weights=return_weights)
    out = got[0] if return_weights else got
    want, _ = reference(q, k, v, is_causal=True)
    torch.testing.assert_close(out.double(), want, atol=1e-5, rtol=1e-5)
    # the last query sees every key: same as unmasked attention for that row
    full = attention(q, k, v)
    torch.testing.assert_close(out[:, :, -1], full[:, :, -1], atol=1e-6, rtol=1e-6)


def test_causal_mask_helper():
    assert causal_mask(3).tolist() == torch.ones(3, 3, dtype=torch.bool).tril().tolist()
    assert causal_mask(1, 4).tolist() == [[True, True, True, True]]
    assert causal_mask(3, 2).tolist() == [[False, False], [True, False], [True, True]]


def test_bool_true_means_attend():
    q, k, v = qkv(b=1, h=1, hkv=1)
    only_key_2 = torch.zeros(5, 5, dtype=torch.bool)
    only_key_2[:, 2] = True
    out = attention(q, k, v, mask=only_key_2)
    torch.testing.assert_close(out[0, 0], v[0, 0, 2].expand(5, -1))


@pytest.mark.parametrize("return_weights", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float", "causal_short_kv"])
def test_fully_masked_rows_are_zero_not_nan(kind, return_weights):
    q, k, v = qkv(hkv=2, lq=5, lk=5 if kind != "causal_short_kv" else 3)
    q.requires_grad_(True)
    kwargs = {}
    if kind == "bool":
        m = bool_mask((2, 1, 5, 5))
        m[0, :, 1] = False
        m[1, :, 4] = False
        kwargs["mask"] = m
        dead = [(0, 1), (1, 4)]
    elif kind == "float":
        m = float_mask((2, 1, 5, 5))
        m[0, :, 1] = float("-inf")
        m[1, :, 4] = float("-inf")
        kwargs["mask"] = m
        dead = [(0, 1), (1, 4)]
    else:  # 5 queries, 3 keys, bottom-right causal: the first two queries see nothing
        kwargs["is_causal"] = True
        dead = [(0, 0), (0, 1), (1, 0), (1, 1)]
    got = attention(q, k, v, return_weights=return_weights, **kwargs)
    out = got[0] if return_weights else got
    assert not out.isnan().any()
    for bi, row in dead:
        assert out[bi, :, row].abs().max() == 0
        if return_weights:
            assert got[1][bi, :, row].abs().max() == 0
    want, _ = reference(q.detach(), k, v, **kwargs)
    torch.testing.assert_close(out.detach().double(), want, atol=1e-5, rtol=1e-5)
    out.sum().backward()
    assert torch.isfinite(q.grad).all()
    for bi, row in dead:
        assert q.grad[bi, :, row].abs().max() == 0


@pytest.mark.parametrize("return_weights", [False, True])
def test_gradcheck_float64(return_weights):
    q, k, v = (
        t.requires_grad_(True) for t in qkv(b=1, h=2, hkv=1, lq=3, lk=4, d=3, dtype=torch.float64)
    )
    mask = bool_mask((1, 1, 3, 4))
    bias = torch.randn(1, 2, 3, 4, dtype=torch.float64)

    def f(q, k, v):
        a = attention(q, k, v, mask=mask, is_causal=True, return_weights=return_weights)
        b = attention(q, k, v, mask=bias, scale=0.5, return_weights=return_weights)
        a = a[0] if return_weights else a
        b = b[0] if return_weights else b
        return a + b

    assert torch.autograd.gradcheck(f, (q, k, v))


def test_fast_path_is_sdpa():
    q, k, v = qkv()
    torch.testing.assert_close(attention(q, k, v), F.scaled_dot_product_attention(q, k, v))
    torch.testing.assert_close(
        attention(q, k, v, is_causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True)
    )


def test_dropout_only_changes_training_output():
    q, k, v = qkv()
    torch.manual_seed(0)
    a = attention(q, k, v, dropout_p=0.5)
    assert not torch.allclose(a, attention(q, k, v))
    out, w = attention(q, k, v, dropout_p=0.5, return_weights=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 5))  # weights are pre-dropout


def test_bad_inputs_say_what_was_expected():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"\[batch, heads, seq, head_dim\]"):
        attention(q[0], k, v)
    with pytest.raises(ValueError, match="multiple of the number of key/value heads"):
        attention(q, k[:, :3], v[:, :3])
    with pytest.raises(ValueError, match="head_dim differ"):
        attention(q, k[..., :4], v)
    with pytest.raises(ValueError, match="k and v must agree"):
        attention(q, k, v[:, :, :3])
    with pytest.raises(ValueError, match="does not broadcast"):
        attention(q, k, v, mask=torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool .True = attend. or a float"):
        attention(q, k, v, mask=torch.ones(5, 5, dtype=torch.long))


def test_lm_loss():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 4, 7, generator=g)
    labels = torch.tensor([[1, 2, 3, -100], [0, -100, 6, 5]])
    keep = labels != -100
    want = F.cross_entropy(logits[keep], labels[keep])
    torch.testing.assert_close(lm_loss(logits, labels), want)
    assert lm_loss(logits.half(), labels).dtype == torch.float32
    with pytest.raises(ValueError, match=r"logits \[b, s, vocab\] and labels \[b, s\]"):
        lm_loss(logits, labels[:, :3])
