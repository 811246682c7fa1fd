"""TransformerBlock / TransformerLM: every positional type, causality, cached decoding,
generation, padding and packed documents, training from ferrotok.data batches."""

from __future__ import annotations

import copy
import io

import pytest
import torch
from ferrotok.data import PackedDataset, PaddedDataset, document_causal_mask
from ferrotok.nn import (
    GeluMLP,
    RMSNorm,
    SwiGLU,
    TransformerBlock,
    TransformerLM,
    sample_next_token,
)
from torch import nn

POSITIONAL = ["rope", "alibi", "learned", "sinusoidal"]
V = 61


def tiny(positional="rope", **kw):
    torch.manual_seed(0)
    defaults = dict(dim=32, num_layers=2, num_heads=4, num_kv_heads=2, max_seq_len=32)
    defaults.update(kw)
    return TransformerLM(V, positional=positional, **defaults).eval()


def tokens_of(b=2, s=12, seed=0):
    return torch.randint(0, V, (b, s), generator=torch.Generator().manual_seed(seed))


def test_rmsnorm_matches_torch():
    x = torch.randn(3, 5, 16)
    ours, ref = RMSNorm(16, eps=1e-6), nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        ours.weight.uniform_()
        ref.weight.copy_(ours.weight)
    torch.testing.assert_close(ours(x), ref(x))
    assert ours(x.to(torch.bfloat16)).dtype == torch.bfloat16


def test_feedforwards():
    x = torch.randn(2, 3, 16)
    swiglu = SwiGLU(16, 40)
    want = swiglu.down_proj(torch.nn.functional.silu(swiglu.gate_proj(x)) * swiglu.up_proj(x))
    torch.testing.assert_close(swiglu(x), want)
    mlp = GeluMLP(16, 64)
    torch.testing.assert_close(mlp(x), mlp.fc2(torch.nn.functional.gelu(mlp.fc1(x))))


@pytest.mark.parametrize("norm,mlp", [("rms", "swiglu"), ("layer", "gelu")])
def test_block_is_pre_norm_residual(norm, mlp):
    torch.manual_seed(0)
    block = TransformerBlock(32, 4, norm=norm, mlp=mlp)
    x = torch.randn(2, 5, 32)
    h = x + block.attn(block.sa_norm(x))
    torch.testing.assert_close(block(x), h + block.mlp(block.mlp_norm(h)))
    assert isinstance(block.sa_norm, RMSNorm if norm == "rms" else nn.LayerNorm)
    with pytest.raises(ValueError, match="norm must be one of"):
        TransformerBlock(32, 4, norm="batch")
    with pytest.raises(ValueError, match="mlp must be one of"):
        TransformerBlock(32, 4, mlp="relu")


@pytest.mark.parametrize("positional", POSITIONAL)
def test_shapes_tying_and_causality(positional):
    model = tiny(positional)
    x = tokens_of()
    logits = model(x)
    assert logits.shape == (2, 12, V)
    assert model.tied and model.output.weight is model.tok_embeddings.weight
    for t in (0, 5, 10):
        x2 = x.clone()
        x2[:, t + 1 :] = (x2[:, t + 1 :] + 1) % V
        out = model(x2)
        torch.testing.assert_close(out[:, : t + 1], logits[:, : t + 1], atol=1e-5, rtol=1e-5)
        assert not torch.allclose(out[:, t + 1 :], logits[:, t + 1 :])


def test_untied_and_state_dict_roundtrip():
    untied = tiny(tie_embeddings=False)
    assert not untied.tied
    model = tiny()
    assert (
        sum(p.numel() for p in model.parameters())
        == sum(p.numel() for p in untied.parameters()) - V * 32
    )
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    fresh = TransformerLM(V, dim=32, num_layers=2, num_heads=4, num_kv_heads=2, max_seq_len=32)
    fresh.load_state_dict(torch.load(buf))
    assert fresh.tied
    x = tokens_of()
    torch.testing.assert_close(fresh.eval()(x), model(x))
    twin = copy.deepcopy(model)
    assert twin.tied and twin.output.weight is not model.output.weight
    twin.to(torch.float64)
    assert twin.tied and twin.layers[0].attn.pos_embeddings.cos_table.dtype == torch.float32


@pytest.mark.parametrize("positional", POSITIONAL)
def test_cached_decoding_equals_full_forward(positional):
    model = tiny(positional)
    x = tokens_of(s=10)
    full = model(x)
    model.setup_cache(2, 16)
    steps = [model(x[:, :4])] + [model(x[:, t : t + 1]) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    model.reset_cache()
    steps = [model(x[:, :6], input_pos=torch.arange(6))]
    steps += [model(x[:, t : t + 1], input_pos=torch.tensor([t])) for t in range(6, 10)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)
    model.remove_cache()
    assert not model.has_cache


@pytest.mark.parametrize("positional", ["rope", "alibi", "learned"])
def test_greedy_generate_equals_naive_argmax_loop(positional):
    model = tiny(positional)
    prompt = tokens_of(s=5)
    out = model.generate(prompt, max_new_tokens=8, temperature=0)
    seq = prompt
    for _ in range(8):  # no cache: recompute everything each step
        nxt = model(seq)[:, -1].argmax(-1, keepdim=True)
        seq = torch.cat((seq, nxt), 1)
    assert torch.equal(out, seq)
    assert not model.has_cache  # temporary caches are removed
    single = model.generate(prompt[0], max_new_tokens=3, temperature=0)
    assert torch.equal(single, seq[0, :8])


def test_generate_reuses_caches_eos_and_sampling():
    model = tiny()
    prompt = tokens_of(s=4)
    model.setup_cache(2, 32)
    greedy = model.generate(prompt, 6, temperature=0)
    assert model.has_cache  # the model's own caches are kept
    assert torch.equal(model.generate(prompt, 6, top_k=1), greedy)  # top-1 sampling is greedy
    assert torch.equal(model.generate(prompt, 6, top_p=1e-6), greedy)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = model.generate(prompt, 6, temperature=1.5, generator=g1)
    assert torch.equal(a, model.generate(prompt, 6, temperature=1.5, generator=g2))
    eos = int(greedy[0, 4])  # the first token row 0 generates
    stopped = model.generate(prompt[:1], 6, temperature=0, eos_token=eos)
    assert stopped.shape == (1, 5) and int(stopped[0, -1]) == eos
    with pytest.raises(ValueError, match="exceeds the model's max_seq_len=32"):
        model.generate(prompt, 40)


def test_sample_next_token_filters():
    logits = torch.tensor([[0.0, 3.0, 2.9, -1.0, 1.0]]).repeat(200, 1)
    g = torch.Generator().manual_seed(0)
    topk = sample_next_token(logits, top_k=2, generator=g)
    assert set(topk.tolist()) == {1, 2}
    # top-p: p(1) ≈ 0.47, p(2) ≈ 0.42: top_p = 0.8 keeps exactly those two
    topp = sample_next_token(logits, top_p=0.8, generator=g)
    assert set(topp.tolist()) == {1, 2}
    assert set(sample_next_token(logits, generator=g).tolist()) >= {0, 1, 2, 4}
    with pytest.raises(ValueError, match="top_p must be in"):
        sample_next_token(logits, top_p=0.0)


def test_right_padding_does_not_change_real_positions():
    model = tiny()
    x = tokens_of(b=1, s=7)
    alone = model(x)
    padded = torch.cat((x, torch.zeros(1, 3, dtype=torch.long)), 1)
    mask = torch.tensor([[1] * 7 + [0] * 3])
    torch.testing.assert_close(
        model(padded, attention_mask=mask)[:, :7], alone, atol=1e-5, rtol=1e-5
    )


@pytest.mark.parametrize("positional", POSITIONAL)
def test_packed_documents_with_block_mask_equal_separate_documents(positional):
    model = tiny(positional)
    docs = [[5, 6, 7, 8], [9, 10, 11], [12, 13, 14, 15, 16]]
    ds = PackedDataset(docs, seq_len=13, separator=0, document_ids=True)
    item = ds[0]
    ids, pos = item["input_ids"][None], item["position_ids"][None]
    mask = document_causal_mask(item["document_ids"][None])
    packed = model(ids, mask=mask, input_pos=pos)
    # the second document (with its separator) alone, positions from 0
    start = len(docs[0]) + 1
    alone = model(torch.tensor([docs[1] + [0]]))
    torch.testing.assert_close(packed[:, start : start + 4], alone, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dataset", ["packed", "padded"])
def test_training_from_data_batches_reduces_loss(dataset):
    torch.manual_seed(0)
    docs = [[(3 * i + j) % 20 + 1 for j in range(9)] for i in range(12)]
    if dataset == "packed":
        ds = PackedDataset(docs, seq_len=8, separator=0)
    else:
        ds = PaddedDataset(docs, seq_len=8, pad_id=0, separator=0)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)
    model = TransformerLM(21, dim=32, num_layers=1, num_heads=4, max_seq_len=8)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(15):
        for batch in loader:
            assert batch["input_ids"].shape[1] == 8 and batch["input_ids"].dtype == torch.long
            loss = model.loss(
                batch["input_ids"], batch["labels"], attention_mask=batch.get("attention_mask")
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_bad_arguments():
    with pytest.raises(ValueError, match="positional must be one of"):
        TransformerLM(10, positional="xpos")
    with pytest.raises(ValueError, match=r"dim \(30\) must be divisible by num_heads \(4\)"):
        TransformerLM(10, dim=30, num_heads=4)
    model = tiny("learned")
    with pytest.raises(IndexError, match="exceeds max_seq_len=32"):
        model(tokens_of(s=33))
    with pytest.raises(ValueError, match=r"tokens of shape \[b, s\]"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match=r"attention_mask must be \[b, s_kv\]"):
        model(tokens_of(), attention_mask=torch.ones(3, 12))
    with pytest.raises(ValueError, match="exceeds the learned positions"):
        model.setup_cache(1, 64)
    with pytest.raises(IndexError, match="out of range"):
        tiny("rope")(tokens_of(s=33))
