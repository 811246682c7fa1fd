"""Encoder adapters: ferrotok (the subject), tiktoken (the parity oracle) and the peers.

Every entry of `PEERS` turns an encoding into an `Encoder` whose `encode(text)` returns the ids of
`encode_ordinary` as a Python list; `flat_batch(docs, threads)` (optional) returns a flat uint32
id array plus offsets, `list_batch(docs, threads)` a list of id lists. Adding a peer is one entry.
Which API each peer exposes was read from the installed packages (`.pyi`, docstrings, source).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

import benchlib

# GPT-2's original pattern (not possessive, so no built-in encoding has it): the custom cell's.
GPT2_ORIGINAL_PAT = (
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
)


@dataclass(frozen=True)
class EncSpec:
    """An encoding to benchmark: an OpenAI one, or `base`'s ranks with a custom pattern."""

    name: str
    base: str
    pat: str | None = None

    @property
    def is_custom(self) -> bool:
        return self.pat is not None


@dataclass
class Encoder:
    encode: Callable[[str], list[int]]
    flat_batch: Callable[[list[str], int], tuple[Any, Any]] | None = None
    list_batch: Callable[[list[str], int], list[list[int]]] | None = None
    decode_bytes: Callable[[list[int]], bytes] | None = None


@dataclass(frozen=True)
class Peer:
    name: str
    dist: str  # distribution name on PyPI
    module: str
    api: str  # what is timed
    build: Callable[[EncSpec], Encoder]
    encodings: tuple[str, ...] | None = None  # None: every OpenAI encoding and custom ones
    role: str = "peer"  # "subject", "oracle" or "peer"
    fast: bool = True  # timed on the adversarial files too

    def supports(self, spec: EncSpec) -> bool:
        if self.encodings is None:
            return True
        return not spec.is_custom and spec.name in self.encodings

    def installed(self) -> bool:
        return importlib.util.find_spec(self.module) is not None

    def version(self) -> str:
        try:
            return importlib.metadata.version(self.dist)
        except importlib.metadata.PackageNotFoundError:
            return "?"


@cache
def mergeable_ranks(base: str) -> dict[bytes, int]:
    """The ranks of an official .tiktoken file (tiktoken's own loader, from the data dir)."""
    from tiktoken.load import load_tiktoken_bpe

    return load_tiktoken_bpe(str(benchlib.data_dir() / f"{base}.tiktoken"))


# ---------------------------------------------------------------- ferrotok and tiktoken


def _tiktoken_like(mod: Any, spec: EncSpec) -> Any:
    if not spec.is_custom:
        return mod.get_encoding(spec.name)
    return mod.Encoding(
        spec.name, pat_str=spec.pat, mergeable_ranks=mergeable_ranks(spec.base), special_tokens={}
    )


def _build_ferrotok(spec: EncSpec) -> Encoder:
    import ferrotok

    enc = _tiktoken_like(ferrotok, spec)
    flat = None
    if hasattr(enc, "encode_ordinary_batch_to_numpy"):
        flat = lambda docs, t: enc.encode_ordinary_batch_to_numpy(docs, num_threads=t)  # noqa: E731
    return Encoder(
        encode=enc.encode_ordinary,
        flat_batch=flat,
        list_batch=lambda docs, t: enc.encode_ordinary_batch(docs, num_threads=t),
        decode_bytes=enc.decode_bytes,
    )


def _build_tiktoken(spec: EncSpec) -> Encoder:
    import tiktoken

    enc = _tiktoken_like(tiktoken, spec)
    return Encoder(
        encode=enc.encode_ordinary,
        list_batch=lambda docs, t: enc.encode_ordinary_batch(docs, num_threads=t),
        decode_bytes=enc.decode_bytes,
    )


# ---------------------------------------------------------------- peers


def _build_toktok(spec: EncSpec) -> Encoder:
    import toktok

    tok = toktok._encoding(spec.name)  # the full encoder; the public API only counts
    return Encoder(
        encode=tok.encode_ordinary,
        flat_batch=lambda docs, t: tok.encode_batch_to_numpy(docs, t, False),
    )


def _build_quicktok(spec: EncSpec) -> Encoder:
    import quicktok

    tok = quicktok.get_encoding(spec.name)
    return Encoder(
        encode=tok.encode_ordinary,
        flat_batch=lambda docs, t: tok.encode_batch(docs, t, False),
    )


def _build_bpe_openai(spec: EncSpec) -> Encoder:
    # The Rust backend under bpe_openai.get_encoding(); the Python wrapper adds a copy of the
    # ids, a surrogate check and a refusal of inputs >= 1M chars, and batches on Python threads.
    from bpe_openai import _bindings

    return Encoder(encode=_bindings.tokenizer_for_encoding(spec.name).encode)


def _build_wordchipper(spec: EncSpec) -> Encoder:
    import wordchipper

    opts = wordchipper.TokenizerOptions.default()
    opts.set_parallel(False)
    tok = wordchipper.Tokenizer.from_pretrained(spec.name, opts)
    expected = len(mergeable_ranks(spec.base))
    if tok.vocab_size != expected:  # offline without its files it silently encodes bytes
        raise RuntimeError(
            f"vocabulary not loaded (vocab_size {tok.vocab_size}, expected {expected}): "
            "its cache dir lacks the .tiktoken file"
        )
    none = wordchipper.SpecialFilter.include_none()  # the default (None) encodes specials
    return Encoder(encode=lambda text: tok.encode(text, none))


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable-char map used by HF byte-level BPE."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _merge_parts(ranks: dict[bytes, int], token: bytes, rank: int) -> list[bytes] | None:
    """The two tokens BPE joins into `token` (merging only ranks below its own)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < rank and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            return None
        i = best[1]
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts


def onig_pattern(pat: str) -> str:
    """tiktoken's pattern in Oniguruma's dialect: possessive -> greedy, `$` -> end of text.

    (Ruby syntax reads `{1,3}+` as a nested repeat and `$` as end of line.)
    """
    pat = re.sub(r"(\{\d+(?:,\d*)?\})\+", r"\1", pat)
    pat = pat.replace("++", "+").replace("?+", "?").replace("*+", "*")
    return pat.replace("$", r"\z")


def _build_hf_tokenizers(spec: EncSpec) -> Encoder:
    import tiktoken
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    ranks = mergeable_ranks(spec.base)
    b2u = _bytes_to_unicode()
    u = lambda b: "".join(b2u[x] for x in b)  # noqa: E731
    merges = []
    for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        parts = _merge_parts(ranks, tok, rank) if len(tok) > 1 else None
        if parts is not None:
            merges.append((u(parts[0]), u(parts[1])))
    vocab = {u(k): v for k, v in ranks.items()}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    pat = onig_pattern(tiktoken.get_encoding(spec.name)._pat_str)
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pat), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tk.decoder = decoders.ByteLevel()
    return Encoder(encode=lambda text: tk.encode(text, add_special_tokens=False).ids)


OPENAI_BIG = ("cl100k_base", "o200k_base")

PEERS: list[Peer] = [
    Peer("ferrotok", "ferrotok", "ferrotok", "Encoding.encode_ordinary", _build_ferrotok,
         role="subject"),
    Peer("tiktoken", "tiktoken", "tiktoken", "Encoding.encode_ordinary", _build_tiktoken,
         role="oracle"),
    Peer("toktok", "toktok-rs", "toktok", "toktok._encoding(name).encode_ordinary; flat: "
         ".encode_batch_to_numpy(docs, threads, False)", _build_toktok, OPENAI_BIG),
    Peer("quicktok", "quicktok-v1", "quicktok", "quicktok.get_encoding(name).encode_ordinary; "
         "flat: .encode_batch(docs, threads, False)", _build_quicktok, OPENAI_BIG),
    Peer("bpe-openai", "bpe-openai", "bpe_openai", "bpe_openai._bindings."
         "tokenizer_for_encoding(name).encode", _build_bpe_openai, OPENAI_BIG),
    Peer("wordchipper", "wordchipper", "wordchipper", "Tokenizer.from_pretrained(name, "
         "parallel=False).encode(text, SpecialFilter.include_none())", _build_wordchipper,
         ("r50k_base", "p50k_base", *OPENAI_BIG)),
    Peer("hf-tokenizers", "tokenizers", "tokenizers", "Tokenizer(BPE from the .tiktoken ranks, "
         "Split(onig pattern)+ByteLevel).encode(text).ids", _build_hf_tokenizers, OPENAI_BIG,
         fast=False),
]
