"""Sinusoidal encodings (both layouts) against Vaswani et al.'s formula; learned positions."""

from __future__ import annotations

import math

import pytest
import torch
from ferrotok.nn import LearnedPositionalEmbedding, SinusoidalPositionalEmbedding


def formula(pos, d, layout, base=10000.0):
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(pos / base^(2i/d))."""
    sin = [math.sin(pos / base ** (2 * i / d)) for i in range(d // 2)]
    cos = [math.cos(pos / base ** (2 * i / d)) for i in range(d // 2)]
    if layout == "interleaved":
        return [v for pair in zip(sin, cos) for v in pair]
    return sin + cos


@pytest.mark.parametrize("layout", ["interleaved", "concat"])
@pytest.mark.parametrize("max_positions", [None, 64])
def test_sinusoidal_matches_formula(layout, max_positions):
    d = 12
    pe = SinusoidalPositionalEmbedding(d, max_positions=max_positions, layout=layout)
    assert list(pe.parameters()) == [] and pe.state_dict() == {}
    x = torch.randn(2, 40, d)
    out = pe(x)
    want = torch.tensor([formula(p, d, layout) for p in range(40)])
    torch.testing.assert_close(out - x, want.expand(2, -1, -1), atol=1e-5, rtol=0)
    # any length, any position, on the fly
    far = torch.tensor([[5000, 123456]])
    got = pe(torch.zeros(1, 2, d), input_pos=far)[0]
    torch.testing.assert_close(
        got,
        torch.tensor([formula(5000, d, layout), formula(123456, d, layout)]),
        atol=1e-5,
        rtol=0,
    )
    long = pe(torch.zeros(1, 100, d))  # past max_positions: same values, computed on the fly
    torch.testing.assert_close(long[0, 99], torch.tensor(formula(99, d, layout)), atol=1e-5, rtol=0)


def test_sinusoidal_input_pos_dtype_and_base():
    pe = SinusoidalPositionalEmbedding(8, base=100.0)
    x = torch.zeros(2, 3, 8, dtype=torch.float16)
    pos = torch.tensor([[0, 1, 2], [7, 8, 9]])
    out = pe(x, input_pos=pos)
    assert out.dtype == torch.float16
    torch.testing.assert_close(
        out[1, 0].float(), torch.tensor(formula(7, 8, "interleaved", 100.0)), atol=1e-3, rtol=0
    )
    cached = SinusoidalPositionalEmbedding(8, max_positions=16)
    cached.to(torch.float16)
    assert cached.table.dtype == torch.float32


def test_sinusoidal_errors():
    with pytest.raises(ValueError, match="even embedding_dim"):
        SinusoidalPositionalEmbedding(7)
    with pytest.raises(ValueError, match="layout must be one of"):
        SinusoidalPositionalEmbedding(8, layout="half")
    pe = SinusoidalPositionalEmbedding(8)
    with pytest.raises(ValueError, match=r"\[b, s, 8\]"):
        pe(torch.zeros(2, 3, 6))
    with pytest.raises(IndexError, match="non-negative"):
        pe(torch.zeros(1, 1, 8), input_pos=torch.tensor([-2]))


def test_learned_adds_rows_and_limits_positions():
    pe = LearnedPositionalEmbedding(10, 4)
    assert pe.weight.shape == (10, 4)
    x = torch.randn(2, 6, 4)
    torch.testing.assert_close(pe(x), x + pe.weight[:6])
    pos = torch.tensor([[4, 5], [8, 9]])
    torch.testing.assert_close(pe(x[:, :2], input_pos=pos), x[:, :2] + pe.weight[pos])
    with pytest.raises(IndexError, match=r"sequence length 11 exceeds max_positions=10"):
        pe(torch.zeros(1, 11, 4))
    with pytest.raises(IndexError, match=r"position 10 is out of range.*\[0, 10\)"):
        pe(torch.zeros(1, 1, 4), input_pos=torch.tensor([10]))
    with pytest.raises(ValueError, match=r"input_pos must have shape \[s\]"):
        pe(torch.zeros(1, 2, 4), input_pos=torch.tensor([1, 2, 3]))
