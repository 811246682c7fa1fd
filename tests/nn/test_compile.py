"""torch.compile: MultiHeadAttention and TransformerLM compile (inductor, CPU) and match eager;
decoding with a KV cache does not recompile from one step to the next."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from ferrotok.nn import MultiHeadAttention, RotaryPositionalEmbeddings, TransformerLM
from ferrotok.nn.functional import lm_loss
from torch._dynamo.testing import CompileCounter, CompileCounterWithBackend


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_inductor_compiles_multihead_attention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, 2, pos_embeddings=RotaryPositionalEmbeddings(4, 16)).eval()
    x = torch.randn(2, 8, 16)
    compiled = torch.compile(mha, backend="inductor")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), mha(x), atol=1e-5, rtol=1e-5)


def test_inductor_compiles_transformer_lm():
    torch.manual_seed(0)
    model = TransformerLM(50, dim=16, num_layers=1, num_heads=2, max_seq_len=16)
    tokens = torch.randint(0, 50, (2, 8))
    compiled = torch.compile(model, backend="inductor")
    torch.testing.assert_close(compiled(tokens), model(tokens), atol=1e-5, rtol=1e-5)


def test_compiled_training_step_matches_eager():
    # the backward graph through AOTAutograd; "aot_eager" skips inductor's C++ codegen (slow to
    # build, already exercised above) but traces the same joint forward/backward graph
    torch.manual_seed(0)
    model = TransformerLM(50, dim=16, num_layers=1, num_heads=2, max_seq_len=16)
    tokens = torch.randint(0, 50, (2, 9))
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, backend=counter)
    lm_loss(compiled(tokens[:, :-1]), tokens[:, 1:]).backward()
    assert counter.frame_count >= 1
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.loss(tokens[:, :-1], tokens[:, 1:]).backward()
    for got, p in zip(grads, model.parameters()):
        torch.testing.assert_close(got, p.grad, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("positional", ["rope", "alibi", "learned"])
def test_decode_steps_do_not_recompile(positional):
    torch.manual_seed(0)
    model = TransformerLM(
        50,
        dim=16,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        max_seq_len=32,
        positional=positional,
    ).eval()
    counter = CompileCounter()  # dynamo's guards decide recompiles, whatever the backend
    step = torch.compile(model, backend=counter)
    tokens = torch.randint(0, 50, (2, 12))
    eager = model(tokens)
    model.setup_cache(2, 32)
    with torch.no_grad():
        outs = [step(tokens[:, :4], input_pos=torch.arange(4))]
        outs.append(step(tokens[:, 4:5], input_pos=torch.tensor([4])))
        warm = counter.frame_count
        with torch.compiler.set_stance("fail_on_recompile"):
            for t in range(5, 12):
                outs.append(step(tokens[:, t : t + 1], input_pos=torch.tensor([t])))
    assert counter.frame_count == warm
    torch.testing.assert_close(torch.cat(outs, 1), eager, atol=1e-5, rtol=1e-5)
