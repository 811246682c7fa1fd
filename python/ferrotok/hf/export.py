"""`Encoding.to_hf`: a HuggingFace `tokenizer.json` that gives exactly the encoding's ids.

Invariant: HuggingFace `tokenizers` (0.20+) loading the file written for an encoding `enc`
gives `enc.encode(t, allowed_special="all")` for every text `t` (special tokens are HF added
tokens, which HF always matches). How each part of tiktoken's semantics is carried over:

- vocabulary: every token's bytes spelled in GPT-2's bytes-to-unicode alphabet (the ByteLevel
  pre-tokenizer's), at its rank as id; special tokens are in the vocabulary too, at their ids
  (HF gives an added token that is not in the model's vocabulary the next free id instead);
- merges: tiktoken merges any two adjacent parts whose concatenation is a token, the one of
  lowest rank first; HF merges only listed pairs, by list position. So every split of every
  token into two tokens is listed, ordered by the rank of the token made: both then merge the
  same pairs in the same order (ties between two splits of one token, at overlapping places,
  are the only order they could differ on: tiktoken takes the leftmost);
- `ignore_merges: true`: tiktoken returns a piece that is itself a token as that token, before
  any merging; HF's `ignore_merges` does the same;
- pre-tokenizer: Split with the pattern translated for Oniguruma (`ferrotok.hf.regex`), then
  ByteLevel without its own regex; decoder ByteLevel.

An encoding read from a `tokenizer.json` (`Encoding.from_hf`) is written back as that file's
configuration. What the format cannot say is refused, or (for a special token whose id another
special token has too, as o200k_harmony's `<|reserved_200018|>`) dropped with a warning.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from typing import Any

from .. import hf_json
from .regex import to_oniguruma

# The encoding being exported is a ferrotok.core.Encoding; it is not imported here, not even
# for type checking, because core imports this module (`Encoding.to_hf`): imports run one way.
Encoding = Any


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> tuple[str, ...]:
    """GPT-2's byte -> printable character map, indexed by byte value.

    Printable Latin-1 bytes stand for themselves; the rest (controls, space, ...) take the
    characters from U+0100 on, in byte order.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    kept = set(keep)
    out: list[str] = []
    extra = 0
    for b in range(256):
        if b in kept:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return tuple(out)


def byte_level(token: bytes) -> str:
    """A token's bytes in the ByteLevel alphabet."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in token)


def hf_config(enc: Encoding) -> dict[str, Any]:
    """The `tokenizer.json` content (as a dict) that reproduces `enc`'s ids in HF."""
    existing = getattr(enc, "_hf_config", None)
    if isinstance(existing, dict):
        why = ferrotok_only(existing)
        if why:
            raise ValueError(f"encoding {enc.name!r} {why}: HF would read the file differently")
        return existing
    ranks = enc._mergeable_ranks
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise ValueError(
            f"encoding {enc.name!r} has no token for the single byte(s) "
            f"{', '.join(hex(b) for b in missing[:8])}: a ByteLevel tokenizer.json needs all 256"
        )
    vocab: dict[str, int] = {}
    for token, rank in ranks.items():
        vocab[byte_level(token)] = rank

    # Every split of every token into two tokens, ordered by the rank of the token made.
    splits: list[tuple[int, int, str, str]] = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ranks and right in ranks:
                splits.append((rank, cut, byte_level(left), byte_level(right)))
    splits.sort()
    merges = [[left, right] for _, _, left, right in splits]

    added: list[dict[str, Any]] = []
    taken: dict[int, str] = {}
    dropped: list[str] = []
    # The text `decode` gives for an id shared by several special tokens is the one kept.
    for text, token_id in sorted(enc._special_tokens.items(), key=lambda kv: kv[1]):
        if token_id in taken:
            kept = enc.decode_single_token_bytes(token_id).decode("utf-8", "replace")
            if kept == text:
                dropped.append(taken[token_id])
                taken[token_id] = text
            else:
                dropped.append(text)
            continue
        taken[token_id] = text
    ordinary_ids = set(ranks.values())
    for token_id, text in sorted(taken.items()):
        if token_id in ordinary_ids and vocab.get(text) != token_id:
            raise ValueError(
                f"special token {text!r} has id {token_id}, which an ordinary token has too"
            )
        if text in vocab and vocab[text] != token_id:
            raise ValueError(
                f"special token {text!r} (id {token_id}) is spelled like ordinary token "
                f"{vocab[text]} in the ByteLevel alphabet"
            )
        vocab[text] = token_id
        added.append(hf_json.added_token(token_id, text, special=True, normalized=False))
    if dropped:
        warnings.warn(
            f"{enc.name}: special token(s) {', '.join(map(repr, sorted(dropped)))} share an id "
            "with another special token; a tokenizer.json has one text per id, so they are "
            "not in the export (HF encodes their text as ordinary text)",
            stacklevel=3,
        )

    byte_level_processor = {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": False,
        "use_regex": False,
    }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": to_oniguruma(enc._pat_str)},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": True,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": _with_template(byte_level_processor, enc._hf_template, taken),
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": True,
            "use_regex": False,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": merges,
        },
    }


def _with_template(
    processor: dict[str, Any], template: tuple[list[int], list[int]], texts: dict[int, str]
) -> dict[str, Any]:
    """`processor`, then the special tokens `encode(add_special_tokens=True)` puts around a
    text (`template`: ids before, ids after; a tekken.json's `<s>`) as HF's template."""
    before, after = template
    if not before and not after:
        return processor
    missing = [i for i in [*before, *after] if i not in texts]
    if missing:
        raise ValueError(f"the template's id {missing[0]} is no special token of the encoding")
    named = hf_json.template([(i, texts[i]) for i in before], [(i, texts[i]) for i in after])
    return {"type": "Sequence", "processors": [processor, named]}


def ferrotok_only(config: dict[str, Any]) -> str | None:
    """What `config` says in ferrotok's own keys (`sp_model`'s), which HF ignores, or None."""
    tokens = config.get("added_tokens") or []
    verbatim = [t["content"] for t in tokens if isinstance(t, dict) and t.get("ferrotok_verbatim")]
    if verbatim:
        return (
            f"matches added tokens in the normalized text as they are ({verbatim[0]!r}: a "
            "SentencePiece model's user-defined symbols), which no tokenizer.json layout says"
        )
    model = config.get("model")
    if isinstance(model, dict) and model.get("ferrotok_sentencepiece"):
        return (
            "is a SentencePiece Unigram model segmented with sentencepiece's f32 sums over the "
            "whole text, which no tokenizer.json layout says (HF's Unigram sums in f64 a word "
            "at a time, and breaks some near-ties the other way)"
        )
    normalizer = config.get("normalizer")
    steps = (normalizer.get("normalizers") or []) if isinstance(normalizer, dict) else []
    if any(isinstance(n, dict) and n.get("ferrotok_sentencepiece") for n in [normalizer, *steps]):
        return (
            "reads its precompiled charsmap as sentencepiece does (the longest rule from each "
            "char on), which no tokenizer.json layout says (HF's Precompiled maps a grapheme "
            "cluster by its shortest prefix)"
        )
    return None


def to_hf(enc: Encoding, path: str | os.PathLike[str]) -> None:
    """Writes `enc` as a HuggingFace `tokenizer.json` at `path` (a directory: into it)."""
    config = hf_config(enc)
    target = os.fspath(path)
    if os.path.isdir(target):
        target = os.path.join(target, "tokenizer.json")
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)
    os.replace(tmp, target)
