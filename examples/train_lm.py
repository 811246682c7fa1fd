"""From text to a trained language model on CPU: tokenizer, packed batches, TransformerLM, samples.

1. Corpus: the Python files of this interpreter's standard library (or the text files given on
   the command line), cut into documents (one per file).
2. Tokenizer: train a byte-level BPE with ``ferrotok.train`` on the training documents, or use a
   pretrained encoding (``--tokenizer cl100k_base``).
3. Data: encode, append ``<|endoftext|>`` to every document, pack into fixed-length sequences
   (``ferrotok.data.PackedDataset``) and batch them with a ``DataLoader``.
4. Model: a small ``ferrotok.nn.TransformerLM`` trained for a few hundred AdamW steps; the
   held-out loss is printed before and after, then a sample is generated.

The model only ever sees the token ids that occur in the corpus (plus end-of-text), renumbered
0..n-1, so a 100k-token pretrained vocabulary does not make the output layer 100k wide.

    python examples/train_lm.py                         # stdlib, trained 2048-token BPE
    python examples/train_lm.py --tokenizer cl100k_base
    python examples/train_lm.py my_corpus.txt --steps 500

Or from shards written by ``ferrotok tokenize`` (any --format; the encoding is read from the
manifest, the last tenth of the sequences is held out; memory-mapped, nothing loaded whole):

    ferrotok tokenize docs.jsonl -o shards/ --encoding gpt2
    python examples/train_lm.py --shards shards/

Defaults take about two minutes on two CPU cores.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import sysconfig
import time
from pathlib import Path

import ferrotok
import torch
from ferrotok.data import PackedDataset
from ferrotok.nn import TransformerLM

EOT = "<|endoftext|>"


def read_corpus(paths: list[str], max_chars: int, max_file_chars: int) -> list[str]:
    """Documents (one per file, each cut to ``max_file_chars``) up to ``max_chars`` in total.

    Without ``paths``: the standard library's modules (tests excluded), in a seeded random order.
    """
    if paths:
        files = [Path(p) for p in paths]
    else:
        stdlib = Path(sysconfig.get_paths()["stdlib"])
        files = sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py"))
        files = [f for f in files if "test" not in f.parts[-2] and "test" not in f.name]
        random.shuffle(files)
    docs, total = [], 0
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        text = text.replace(EOT, "")  # the separator must not occur inside documents
        if not text.strip():
            continue
        docs.append(text[: min(max_file_chars, max_chars - total)])
        total += len(docs[-1])
        if total >= max_chars:
            break
    if not docs:
        sys.exit(f"no readable text in {paths or 'the standard library'}")
    return docs


def make_tokenizer(args: argparse.Namespace, texts: list[str]):
    if args.tokenizer != "train":
        return ferrotok.get_encoding(args.tokenizer)
    train = getattr(ferrotok, "train", None)
    if train is None:
        sys.exit("this ferrotok has no ferrotok.train yet; use --tokenizer cl100k_base")
    return train(texts, args.vocab_size, special_tokens=[EOT], name="stdlib-bpe", progress=True)


def encode_all(enc, docs: list[str]) -> list[list[int]]:
    if hasattr(enc, "encode_ordinary_batch"):
        return enc.encode_ordinary_batch(docs)
    return [enc.encode_ordinary(d) for d in docs]


@torch.no_grad()
def evaluate(model: TransformerLM, data, batch_size: int) -> float:
    model.eval()
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size)
    total, count = 0.0, 0
    for batch in loader:
        n = batch["labels"].numel()
        total += model.loss(batch["input_ids"], batch["labels"]).item() * n
        count += n
    model.train()
    return total / max(count, 1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*", help="text files (default: the stdlib's .py files)")
    p.add_argument(
        "--tokenizer",
        default="train",
        help="'train' (default) or a pretrained encoding name, e.g. cl100k_base",
    )
    p.add_argument("--vocab-size", type=int, default=2048, help="for a trained tokenizer")
    p.add_argument("--max-chars", type=int, default=800_000, help="corpus size")
    p.add_argument("--max-file-chars", type=int, default=20_000, help="per document")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument(
        "--positional", default="rope", choices=["rope", "alibi", "learned", "sinusoidal"]
    )
    p.add_argument("--prompt", default="def ")
    p.add_argument("--sample-tokens", type=int, default=120)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shards", default=None, metavar="DIR",
                   help="train on the shards `ferrotok tokenize` wrote in DIR")
    p.add_argument("--max-tokens", type=int, default=400_000,
                   help="with --shards: use the first N tokens of the shards (0: all)")
    args = p.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    t0 = args.t0 = time.perf_counter()
    if args.shards:
        enc, used, train_data, val_data = shard_data(args)
        model_eot = used.index(enc.eot_token) if enc.eot_token in used else 0
        train_and_sample(args, enc, used, model_eot, train_data, val_data)
        return

    docs = read_corpus(args.files, args.max_chars, args.max_file_chars)
    random.shuffle(docs)
    n_val = max(1, len(docs) // 10)
    train_docs, val_docs = docs[n_val:] or docs, docs[:n_val]
    print(f"corpus: {len(docs)} documents, {sum(map(len, docs)):,} characters")

    enc = make_tokenizer(args, train_docs)
    eot = enc.eot_token
    print(
        f"tokenizer: {args.tokenizer} ({enc.n_vocab:,} tokens, eot={eot}) "
        f"[{time.perf_counter() - t0:.1f}s]"
    )
    train_ids, val_ids = encode_all(enc, train_docs), encode_all(enc, val_docs)

    # renumber the ids that occur (plus eot) as 0..n-1; unseen validation ids map to eot
    used = sorted({t for doc in train_ids for t in doc} | {eot})
    to_model = {t: i for i, t in enumerate(used)}
    model_eot = to_model[eot]

    def compact(docs_ids: list[list[int]]) -> list[list[int]]:
        return [[to_model.get(t, model_eot) for t in doc] for doc in docs_ids]

    train_data = PackedDataset(compact(train_ids), args.seq_len, separator=model_eot)
    val_data = PackedDataset(compact(val_ids), args.seq_len, separator=model_eot)
    n_tok = train_data.num_tokens
    print(
        f"data: {n_tok:,} training tokens ({sum(map(len, train_docs)) / n_tok:.2f} chars/token)"
        f", {len(train_data)} training and {len(val_data)} held-out sequences of "
        f"{args.seq_len}; model vocabulary {len(used):,} [{time.perf_counter() - t0:.1f}s]"
    )
    if len(train_data) == 0 or len(val_data) == 0:
        sys.exit("corpus too small for --seq-len; give more text or a shorter --seq-len")

    train_and_sample(args, enc, used, model_eot, train_data, val_data)


def shard_data(args: argparse.Namespace):
    """The encoding, the ids that occur, and training / held-out windows from shards."""
    import json

    import numpy as np
    from ferrotok.data import ShardDataset, TokenShards

    with open(Path(args.shards) / "manifest.json", encoding="utf-8") as f:
        job = json.load(f)["job"]
    enc = ferrotok.get_encoding(job["encoding"])
    shards = TokenShards(args.shards)
    n_tokens = min(shards.num_tokens, args.max_tokens or shards.num_tokens)
    # the ids that occur, found in bounded pieces of the memory-mapped stream
    seen = np.zeros(enc.n_vocab, dtype=bool)
    step = 1 << 22
    for a in range(0, n_tokens, step):
        seen[shards.tokens(a, min(a + step, n_tokens))] = True
    used = np.flatnonzero(seen).tolist()
    lut = torch.zeros(enc.n_vocab, dtype=torch.long)
    lut[used] = torch.arange(len(used))
    windows = ShardDataset(shards, args.seq_len)
    n_windows = min(len(windows), max(n_tokens - 1, 0) // args.seq_len)
    if n_windows < 2:
        sys.exit("the shards hold too few tokens for --seq-len")
    n_val = max(1, n_windows // 10)

    class Renumbered(torch.utils.data.Dataset):
        def __init__(self, lo: int, hi: int) -> None:
            self.lo, self.hi = lo, hi

        def __len__(self) -> int:
            return self.hi - self.lo

        def __getitem__(self, i: int):
            item = windows[self.lo + i]
            return {k: lut[v] for k, v in item.items()}

    train_data = Renumbered(0, n_windows - n_val)
    val_data = Renumbered(n_windows - n_val, n_windows)
    print(
        f"shards: {n_tokens:,} of {shards.num_tokens:,} tokens of {job['encoding']} in "
        f"{len(shards.files)} "
        f"{job['format']} shards; {len(train_data)} training and {len(val_data)} held-out "
        f"sequences of {args.seq_len}; model vocabulary {len(used):,}"
    )
    return enc, used, train_data, val_data


def train_and_sample(args, enc, used, model_eot, train_data, val_data) -> None:
    model = TransformerLM(
        len(used),
        dim=args.dim,
        num_layers=args.layers,
        num_heads=args.heads,
        max_seq_len=args.seq_len,
        positional=args.positional,
    )
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"model: {n_params / 1e6:.2f}M parameters, {args.layers} layers, d={args.dim}, "
        f"{args.positional} positions, tied embeddings"
    )
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, betas=(0.9, 0.95))
    warmup = max(1, args.steps // 20)

    def lr_at(step: int) -> float:  # linear warm-up, cosine decay to 10%
        if step < warmup:
            return args.lr * (step + 1) / warmup
        progress = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))

    val_before = evaluate(model, val_data, args.batch_size)
    print(
        f"held-out loss before training: {val_before:.3f} "
        f"(uniform would be ln {len(used)} = {math.log(len(used)):.3f})"
    )
    loader = torch.utils.data.DataLoader(
        train_data, batch_size=args.batch_size, shuffle=True, drop_last=True
    )
    step, running, t_train = 0, None, time.perf_counter()
    model.train()
    while step < args.steps:
        for batch in loader:
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            loss = model.loss(batch["input_ids"], batch["labels"])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            running = loss.item() if running is None else 0.9 * running + 0.1 * loss.item()
            step += 1
            if step % 50 == 0 or step == 1:
                rate = step / (time.perf_counter() - t_train)
                print(
                    f"step {step:4d}  loss {loss.item():.3f}  (smoothed {running:.3f})  "
                    f"lr {lr_at(step - 1):.2e}  {rate:.1f} steps/s"
                )
            if step >= args.steps:
                break
    val_after = evaluate(model, val_data, args.batch_size)
    print(f"held-out loss after {args.steps} steps: {val_after:.3f} (before: {val_before:.3f})")

    to_model = {t: i for i, t in enumerate(used)}
    prompt_ids = [to_model.get(t, model_eot) for t in enc.encode_ordinary(args.prompt)]
    out = model.generate(
        torch.tensor(prompt_ids), args.sample_tokens, temperature=0.8, top_k=40, eos_token=model_eot
    )
    text = enc.decode([used[i] for i in out.tolist() if i != model_eot])
    print(f"--- sample (prompt {args.prompt!r}, temperature 0.8, top-k 40) ---")
    print(text)
    print(f"--- done in {time.perf_counter() - args.t0:.1f}s")


if __name__ == "__main__":
    main()
