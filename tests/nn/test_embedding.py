"""TokenEmbedding, LMHead, and tied weights staying one tensor (.to, state_dict, deepcopy)."""

from __future__ import annotations

import copy
import io

import pytest
import torch
import torch.nn.functional as F
from ferrotok.nn import LMHead, TokenEmbedding
from torch import nn


class Tiny(nn.Module):
    def __init__(self, tie=True):
        super().__init__()
        self.emb = TokenEmbedding(50, 8)
        self.head = LMHead(8, 50, tie_to=self.emb if tie else None)

    def forward(self, tokens):
        return self.head(self.emb(tokens))


def test_embedding_lookup_init_and_padding():
    torch.manual_seed(0)
    emb = TokenEmbedding(4000, 64, padding_idx=3)
    assert emb.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert emb.weight.mean().abs().item() < 1e-3
    assert emb.weight[3].abs().max() == 0
    tokens = torch.tensor([[3, 7, 3], [0, 1, 2]])
    out = emb(tokens)
    assert out.shape == (2, 3, 64)
    torch.testing.assert_close(out, emb.weight[tokens])
    out.sum().backward()
    assert emb.weight.grad[3].abs().max() == 0 and emb.weight.grad[7].abs().min() > 0
    assert TokenEmbedding(10, 4, padding_idx=-1).padding_idx == 9


def test_embedding_errors():
    emb = TokenEmbedding(10, 4)
    with pytest.raises(IndexError, match=r"token id 10 is out of range.*\[0, 10\)"):
        emb(torch.tensor([[1, 10]]))
    with pytest.raises(IndexError, match="token id -1"):
        emb(torch.tensor([-1]))
    with pytest.raises(TypeError, match="integer tensor"):
        emb(torch.tensor([1.0]))
    with pytest.raises(TypeError, match="must be a torch tensor, got list"):
        emb([[1, 2]])  # e.g. straight from encode(): torch.tensor(ids) first
    with pytest.raises(ValueError, match="padding_idx"):
        TokenEmbedding(10, 4, padding_idx=10)
    with pytest.raises(ValueError, match="positive"):
        TokenEmbedding(0, 4)


def test_head_projects_and_ties():
    m = Tiny()
    assert m.head.weight is m.emb.weight
    assert len(list(m.parameters())) == 1
    x = torch.randn(2, 3, 8)
    torch.testing.assert_close(m.head(x), x @ m.emb.weight.T)
    untied = LMHead(8, 50, bias=True)
    assert untied.bias.shape == (50,)
    torch.testing.assert_close(untied(x), F.linear(x, untied.weight, untied.bias))
    with pytest.raises(ValueError, match=r"expected \(50, 16\)"):
        LMHead(16, 50, tie_to=m.emb)
    with pytest.raises(ValueError, match="last dimension 8"):
        m.head(torch.randn(2, 3, 7))


def test_tie_survives_to_deepcopy_and_state_dict():
    m = Tiny()
    m.to(torch.float64)
    assert m.head.weight is m.emb.weight and m.emb.weight.dtype == torch.float64
    m.to("cpu", torch.float32)
    assert m.head.weight is m.emb.weight

    c = copy.deepcopy(m)
    assert c.head.weight is c.emb.weight and c.emb.weight is not m.emb.weight

    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    fresh = Tiny()
    fresh.load_state_dict(torch.load(buf))
    assert fresh.head.weight is fresh.emb.weight
    torch.testing.assert_close(fresh.emb.weight, m.emb.weight)

    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    whole = torch.load(buf, weights_only=False)
    assert whole.head.weight is whole.emb.weight

    # a training step moves the one shared tensor
    opt = torch.optim.SGD(m.parameters(), lr=1.0)
    m(torch.tensor([[1, 2]])).sum().backward()
    opt.step()
    assert m.head.weight is m.emb.weight


def test_untied_head_is_separate():
    m = Tiny(tie=False)
    assert m.head.weight is not m.emb.weight
    assert len(list(m.parameters())) == 2
