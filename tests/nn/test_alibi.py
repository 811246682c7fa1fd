"""ALiBi slopes against the paper's published code, and the bias in attention and flex_attention."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
from ferrotok.nn import ALiBiBias, alibi_slopes
from ferrotok.nn.functional import attention


def paper_slopes(n):
    """get_slopes from github.com/ofirpress/attention_with_linear_biases (models/transformer.py)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + paper_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


def test_slopes_match_the_paper_for_1_to_128_heads():
    for n in range(1, 129):
        got = alibi_slopes(n)
        assert got.shape == (n,)
        torch.testing.assert_close(got, torch.tensor(paper_slopes(n), dtype=torch.float32))
    assert alibi_slopes(8).tolist() == [2.0**-i for i in range(1, 9)]
    with pytest.raises(ValueError, match="num_heads must be positive"):
        alibi_slopes(0)


def test_bias_values_and_offset():
    alibi = ALiBiBias(6)
    slopes = alibi_slopes(6)
    bias = alibi(3, 7, offset=4)
    assert bias.shape == (1, 6, 3, 7) and bias.dtype == torch.float32
    for h in range(6):
        for i in range(3):
            for j in range(7):
                want = slopes[h] * (j - (i + 4))
                assert bias[0, h, i, j].item() == pytest.approx(want.item())
    assert alibi(5).shape == (1, 6, 5, 5)
    sym = ALiBiBias(6, symmetric=True)(3, 7, offset=4)
    torch.testing.assert_close(sym, -bias.abs())


def test_composes_with_padding_and_causal_masks():
    alibi = ALiBiBias(4)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 6, 8, generator=g) for _ in range(3))
    padding = torch.ones(2, 6, dtype=torch.bool)
    padding[1, 4:] = False  # second row: last two keys are padding
    bias = alibi(6, mask=padding[:, None, None, :])
    assert bias.shape == (2, 4, 6, 6)
    assert torch.isneginf(bias[1, :, :, 4:]).all() and torch.isfinite(bias[0]).all()
    out = attention(q, k, v, mask=bias, is_causal=True)
    # explicit: scores + m·(j − i), causal and padding applied by hand
    scores = q @ k.transpose(-1, -2) / math.sqrt(8) + alibi(6)
    allowed = torch.ones(6, 6, dtype=torch.bool).tril() & padding[:, None, None, :]
    want = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1) @ v
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)
    with pytest.raises(TypeError, match="bool"):
        alibi(6, mask=padding.float())


@pytest.mark.parametrize("offset", [0, 3])
def test_score_mod_matches_bias_in_flex_attention(offset):
    from torch.nn.attention.flex_attention import flex_attention

    alibi = ALiBiBias(4)
    g = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 16, 8, generator=g)
    k = torch.randn(1, 4, 16 + offset, 8, generator=g)
    v = torch.randn(1, 4, 16 + offset, 8, generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager flex_attention warns that it is not compiled
        out = flex_attention(q, k, v, score_mod=alibi.score_mod(offset))
    want = attention(q, k, v, mask=alibi(16, 16 + offset, offset=offset))
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)
