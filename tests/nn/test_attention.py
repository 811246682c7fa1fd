"""MultiHeadAttention: equivalence with torch.nn.MultiheadAttention, grouped-query heads,
causality, sliding windows, and KV-cache decoding equal to the full forward."""

from __future__ import annotations

import pytest
import torch
from ferrotok.nn import ALiBiBias, MultiHeadAttention, RotaryPositionalEmbeddings
from torch import nn

D, H = 32, 4


def twin(bias=True, **kwargs):
    """A torch MultiheadAttention and our module with the same weights."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(D, H, bias=bias, batch_first=True)
    ours = MultiHeadAttention(D, H, bias=bias, **kwargs)
    with torch.no_grad():
        wq, wk, wv = ref.in_proj_weight.chunk(3)
        ours.q_proj.weight.copy_(wq)
        ours.k_proj.weight.copy_(wk)
        ours.v_proj.weight.copy_(wv)
        ours.output_proj.weight.copy_(ref.out_proj.weight)
        if bias:
            bq, bk, bv = ref.in_proj_bias.chunk(3)
            ours.q_proj.bias.copy_(bq)
            ours.k_proj.bias.copy_(bk)
            ours.v_proj.bias.copy_(bv)
            ours.output_proj.bias.copy_(ref.out_proj.bias)
    return ref, ours


def x_of(b=2, s=6, seed=1):
    return torch.randn(b, s, D, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_matches_torch_mha_self_attention(bias, train):
    ref, ours = twin(bias=bias, is_causal=False)
    ref.train(train)
    ours.train(train)
    x = x_of()
    # in eval mode without grad, torch takes its fused fast path (_native_multi_head_attention)
    with torch.set_grad_enabled(train):
        want, _ = ref(x, x, x, need_weights=False)
        torch.testing.assert_close(ours(x), want, atol=1e-5, rtol=1e-5)


def test_matches_torch_mha_with_converted_masks():
    ref, ours = twin(is_causal=False)
    ref.eval()
    x = x_of(s=7)
    g = torch.Generator().manual_seed(2)
    attn_mask = torch.rand(7, 7, generator=g) > 0.6  # torch: True = do NOT attend
    attn_mask.fill_diagonal_(False)
    key_padding = torch.zeros(2, 7, dtype=torch.bool)  # torch: True = padding, ignore
    key_padding[1, 5:] = True
    want, _ = ref(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding, need_weights=False)
    ours_mask = ~attn_mask[None] & ~key_padding[:, None, :]  # ours: True = attend, [b, s, kv]
    torch.testing.assert_close(ours(x, mask=ours_mask), want, atol=1e-5, rtol=1e-5)
    # float masks are additive in both
    bias = torch.randn(7, 7, generator=g)
    want, _ = ref(x, x, x, attn_mask=bias, need_weights=False)
    torch.testing.assert_close(ours(x, mask=bias), want, atol=1e-5, rtol=1e-5)


def test_matches_torch_mha_causal():
    ref, ours = twin(is_causal=True)
    x = x_of(s=9)
    causal = nn.Transformer.generate_square_subsequent_mask(9).isinf()  # True = masked
    want, _ = ref(x, x, x, attn_mask=causal, need_weights=False)
    torch.testing.assert_close(ours(x), want, atol=1e-5, rtol=1e-5)
    # a padding mask given to a causal module is combined with the causal mask
    key_padding = torch.zeros(2, 9, dtype=torch.bool)
    key_padding[0, 7:] = True
    want, _ = ref(x, x, x, attn_mask=causal, key_padding_mask=key_padding, need_weights=False)
    got = ours(x, mask=~key_padding[:, None, None, :])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_matches_torch_mha_cross_attention():
    ref, ours = twin(is_causal=True)  # cross-attention is never causal
    x, y = x_of(s=4), x_of(s=9, seed=5)
    key_padding = torch.zeros(2, 9, dtype=torch.bool)
    key_padding[0, 6:] = True
    want, _ = ref(x, y, y, key_padding_mask=key_padding, need_weights=False)
    torch.testing.assert_close(
        ours(x, y, mask=~key_padding[:, None, None, :]), want, atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("num_kv_heads", [2, 1])
def test_grouped_query_equals_mha_with_repeated_kv_weights(num_kv_heads):
    torch.manual_seed(0)
    rope = RotaryPositionalEmbeddings(D // H, 32)
    gqa = MultiHeadAttention(D, H, num_kv_heads, pos_embeddings=rope)
    full = MultiHeadAttention(D, H, pos_embeddings=rope)
    group = H // num_kv_heads
    hd = D // H
    with torch.no_grad():
        full.q_proj.weight.copy_(gqa.q_proj.weight)
        full.output_proj.weight.copy_(gqa.output_proj.weight)
        for name in ("k_proj", "v_proj"):
            w = getattr(gqa, name).weight.view(num_kv_heads, hd, D)
            getattr(full, name).weight.copy_(w.repeat_interleave(group, dim=0).reshape(D, D))
    x = x_of(s=8)
    torch.testing.assert_close(gqa(x), full(x), atol=1e-5, rtol=1e-5)
    assert gqa.k_proj.weight.shape == (num_kv_heads * hd, D)


def _positional(kind):
    if kind == "rope":
        return RotaryPositionalEmbeddings(D // H, 64)
    if kind == "alibi":
        return ALiBiBias(H)
    return None


@pytest.mark.parametrize("window", [None, 3])
@pytest.mark.parametrize("pos", ["none", "rope", "alibi"])
def test_causality(pos, window):
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, 2, pos_embeddings=_positional(pos), sliding_window=window)
    x = x_of(s=10)
    base = mha(x)
    for t in (0, 4, 8):
        x2 = x.clone()
        x2[:, t + 1 :] = torch.randn_like(x2[:, t + 1 :])
        out = mha(x2)
        torch.testing.assert_close(out[:, : t + 1], base[:, : t + 1], atol=1e-6, rtol=1e-6)
        assert not torch.allclose(out[:, t + 1 :], base[:, t + 1 :])


@pytest.mark.parametrize("causal", [True, False])
def test_sliding_window_equals_band_mask(causal):
    torch.manual_seed(0)
    windowed = MultiHeadAttention(D, H, sliding_window=3, is_causal=causal)
    plain = MultiHeadAttention(D, H, is_causal=causal)
    plain.load_state_dict(windowed.state_dict())
    i = torch.arange(8)
    dist = i[:, None] - i[None, :]
    band = dist.abs() < 3
    x = x_of(s=8)
    torch.testing.assert_close(windowed(x), plain(x, mask=band), atol=1e-6, rtol=1e-6)
    assert not torch.allclose(windowed(x), plain(x))


@pytest.mark.parametrize("window", [None, 4])
@pytest.mark.parametrize("pos", ["none", "rope", "alibi"])
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_kv_cache_decoding_equals_full_forward(num_kv_heads, pos, window):
    torch.manual_seed(0)
    mha = MultiHeadAttention(
        D, H, num_kv_heads, pos_embeddings=_positional(pos), sliding_window=window
    ).eval()
    x = x_of(s=11)
    full = mha(x)
    mha.setup_cache(batch_size=2, max_seq_len=16)
    outs = [mha(x[:, :5], input_pos=torch.arange(5))]  # prefill: 5 queries vs 16 cache slots
    for t in range(5, 11):
        outs.append(mha(x[:, t : t + 1], input_pos=torch.tensor([t])))
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-5, rtol=1e-5)
    # positions inferred from the cache, per-row positions, and reset_cache
    mha.reset_cache()
    outs = [mha(x[:, t : t + 1]) for t in range(11)]  # token by token from position 0
    torch.testing.assert_close(torch.cat(outs, 1), full, atol=1e-5, rtol=1e-5)
    mha.reset_cache()
    mha(x[:, :4], input_pos=torch.arange(4).expand(2, 4))
    last = mha(x[:, 4:6], input_pos=torch.tensor([[4, 5], [4, 5]]))
    torch.testing.assert_close(last, full[:, 4:6], atol=1e-5, rtol=1e-5)
    mha.remove_cache()
    torch.testing.assert_close(mha(x), full)


def test_kv_cache_bidirectional_attends_written_slots_only():
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, is_causal=False).eval()
    x = x_of(s=6)
    full = mha(x)
    mha.setup_cache(2, 10)
    mha(x[:, :4])
    # the last chunk sees all 6 written slots (not the 4 empty ones): the full forward's rows
    torch.testing.assert_close(mha(x[:, 4:]), full[:, 4:], atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zeros():
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, is_causal=True, bias=True)
    x = x_of(s=5)
    keep = torch.ones(2, 5, dtype=torch.bool)
    keep[1, :3] = False  # left padding: row 1's first three queries see nothing
    out = mha(x, mask=keep[:, None, None, :])
    assert not out.isnan().any()
    torch.testing.assert_close(out[1, :3], mha.output_proj.bias.expand(3, -1))


def test_dropout_only_in_training():
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, dropout=0.5)
    x = x_of()
    mha.eval()
    torch.testing.assert_close(mha(x), mha(x))
    mha.train()
    assert not torch.allclose(mha(x), mha(x))


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match=r"embed_dim \(30\) must be divisible by num_heads \(4\)"):
        MultiHeadAttention(30, 4)
    assert MultiHeadAttention(30, 4, head_dim=8).q_proj.out_features == 32
    with pytest.raises(
        ValueError,
        match=r"num_heads \(6\) must be a positive multiple of "
        r"num_kv_heads \(4\)",
    ):
        MultiHeadAttention(24, 6, 4)
    with pytest.raises(
        ValueError,
        match=r"RotaryPositionalEmbeddings\(dim=4\) does not match "
        r"head_dim=8",
    ):
        MultiHeadAttention(32, 4, pos_embeddings=RotaryPositionalEmbeddings(4))
    with pytest.raises(ValueError, match="ALiBiBias"):
        MultiHeadAttention(32, 4, pos_embeddings=ALiBiBias(8))
    mha = MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match=r"x of shape \[b, s, 32\]"):
        mha(torch.zeros(2, 3, 16))
    with pytest.raises(ValueError, match=r"y of shape \[2, s_kv, 32\]"):
        mha(torch.zeros(2, 3, D), torch.zeros(1, 3, D))
    with pytest.raises(ValueError, match=r"a 3-D mask must be \[b, s, s_kv\]"):
        mha(torch.zeros(2, 3, D), mask=torch.ones(2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(torch.zeros(2, 3, D), mask=torch.ones(3, 2, 3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"input_pos must have shape \[s\]"):
        mha(torch.zeros(2, 3, D), input_pos=torch.arange(4))
    with pytest.raises(RuntimeError, match="setup_cache"):
        mha.reset_cache()
    mha.setup_cache(2, 4)
    with pytest.raises(IndexError, match=r"does not fit the KV cache \(max_seq_len=4\)"):
        mha(torch.zeros(2, 1, D), input_pos=torch.tensor([4]))
    with pytest.raises(ValueError, match="KVCache was set up for"):
        mha(torch.zeros(3, 1, D), input_pos=torch.tensor([0]))
    rope_mha = MultiHeadAttention(D, H, pos_embeddings=RotaryPositionalEmbeddings(8, 16))
    with pytest.raises(ValueError, match="exceeds the rotary table"):
        rope_mha.setup_cache(1, 32)


@pytest.mark.parametrize("pos", ["rope", "alibi"])
def test_gradcheck_float64(pos):
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, 1, bias=True, pos_embeddings=_positional_small(pos)).double()
    x = torch.randn(1, 4, 8, dtype=torch.float64, requires_grad=True)
    keep = torch.tensor([[True, True, True, False]])[:, None, None, :]
    assert torch.autograd.gradcheck(lambda t: mha(t, mask=keep), (x,))


def _positional_small(kind):
    return RotaryPositionalEmbeddings(4, 8) if kind == "rope" else ALiBiBias(2)
