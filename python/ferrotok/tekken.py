"""Loading Mistral's `tekken.json` as an `Encoding` (`Encoding.from_tekken`).

What it promises: the ids of `mistral_common`'s `Tekkenizer.from_file(path)`:
`encode_ordinary(text)` is its `encode(text, bos=False, eos=False)` and
`encode(text, add_special_tokens=True)` its `encode(text, bos=True, eos=False)`; `decode` keeps
special tokens as their text (its `SpecialTokenPolicy.KEEP`).

How, as the Tekkenizer does: the file's `vocab` is tiktoken's ranks (`token_bytes` in base64,
`rank` its place), cut to `default_vocab_size - default_num_special_tokens` entries; every id
is its rank plus `default_num_special_tokens`, the ids below being the special tokens (the
file's `special_tokens`, or for files of version v7 and earlier without them the twenty the
Tekkenizer lists, then `<SPECIAL_n>` fillers); `config.pattern` splits the text. Special
tokens are matched in text only where `encode` allows them, as tiktoken does. A file that is
not of this form is refused with a `ValueError` saying what is wrong. Images and audio (the
file's `image`, `audio`) are not read.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from pathlib import Path
from typing import Any

# The special tokens of files of version v7 and earlier that list none (mistral_common's
# `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`), ids 0 to 19.
DEPRECATED_SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)


def _bad(path: Path, why: str) -> ValueError:
    return ValueError(f"{str(path)!r} is not a Mistral tekken.json file: {why}")


def _int(value: Any, path: Path, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _bad(path, f"{what} is not a non-negative integer")
    return value


def read_tekken(path: str | os.PathLike[str]) -> dict[str, Any]:
    """`Encoding`'s arguments (name, pat_str, mergeable_ranks, special_tokens) for the file
    at `path`, and the BOS id (`bos`, None without a `<s>`): `Encoding.from_tekken` builds the
    encoding from them."""
    p = Path(os.fspath(path))
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(p, f"not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise _bad(p, "no `config` object")
    config = data["config"]
    pattern = config.get("pattern")
    if not isinstance(pattern, str):
        raise _bad(p, "no `config.pattern` string")
    size = _int(config.get("default_vocab_size"), p, "config.default_vocab_size")
    n_special = _int(config.get("default_num_special_tokens"), p, "default_num_special_tokens")
    version = config.get("version")
    match = re.fullmatch(r"v(\d+)", version) if isinstance(version, str) else None
    if match is None:
        raise _bad(p, f"unknown `config.version` {version!r}")
    listed = data.get("special_tokens")
    if listed is None:
        if int(match.group(1)) > 7:
            raise _bad(p, f"no `special_tokens` (a file of version {version} lists them)")
        specials = list(DEPRECATED_SPECIAL_TOKENS)
    elif isinstance(listed, list) and all(isinstance(t, dict) for t in listed):
        specials = [t.get("token_str") for t in listed]
        if any(t.get("rank") != i for i, t in enumerate(listed)):
            raise _bad(p, "the special tokens' ranks are not 0, 1, 2, ...")
    else:
        raise _bad(p, "`special_tokens` is not a list of objects")
    if not all(isinstance(t, str) and t for t in specials):
        raise _bad(p, "a special token without its text")
    if len(specials) > n_special:
        raise _bad(p, f"{len(specials)} special tokens, more than {n_special}")
    specials += [f"<SPECIAL_{i}>" for i in range(len(specials), n_special)]
    if len(set(specials)) != len(specials):
        raise _bad(p, "two special tokens with one text")
    vocab = data.get("vocab")
    inner = size - n_special
    if inner < 256:
        raise _bad(p, f"its config leaves {inner} ids for the vocabulary, fewer than 256 bytes")
    if not isinstance(vocab, list) or len(vocab) < inner:
        raise _bad(p, f"`vocab` holds fewer than the {inner} tokens its config says")
    ranks: dict[bytes, int] = {}
    for i, entry in enumerate(vocab[:inner]):
        if not isinstance(entry, dict) or entry.get("rank") != i:
            raise _bad(p, f"vocab entry {i} does not have rank {i}")
        try:
            token = base64.b64decode(entry.get("token_bytes", ""), validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise _bad(p, f"vocab entry {i}'s token_bytes is not base64") from None
        if (i < 256 and token != bytes([i])) or not token or token in ranks:
            raise _bad(p, f"vocab entry {i}'s bytes {token!r}")
        ranks[token] = i + n_special
    name = p.name[: -len(".json")] if p.name.endswith(".json") else p.name
    bos = specials.index("<s>") if "<s>" in specials else None
    return {
        "name": name,
        "pat_str": pattern,
        "mergeable_ranks": ranks,
        "special_tokens": {t: i for i, t in enumerate(specials)},
        "bos": bos,
    }


def is_tekken_file(path: str) -> bool:
    """Whether the JSON file at `path` is a tekken.json (its first bytes hold `"config"`
    before any `"model"`: a tokenizer.json starts with `version` and `truncation`)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    config, model = head.find(b'"config"'), head.find(b'"model"')
    return config >= 0 and (model < 0 or config < model) and b'"pattern"' in head

