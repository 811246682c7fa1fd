"""The OpenAI encodings: their files, patterns and special tokens, exactly as tiktoken 0.14
has them.

Each constructor returns the keyword arguments of `Encoding`; files are fetched through
`ferrotok.load`, which looks in `FERROTOK_DATA_DIR`, then tiktoken's cache, then downloads.
"""

from __future__ import annotations

from typing import Any, Callable

from ._core import OPENAI_PATTERNS
from .load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe, read_file_cached

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

_BLOB = "https://openaipublic.blob.core.windows.net"

# The patterns, from the core, which recognises exactly these strings to split with its own
# scanners (rust/src/encode/pretok/mod.rs is their one source; tests/test_api.py checks each
# registered encoding's pattern against tiktoken's, byte for byte). R50K is GPT-2's original
# pattern rewritten with possessive quantifiers: the same pieces, less backtracking.
R50K_PATTERN = OPENAI_PATTERNS["r50k"]
CL100K_PATTERN = OPENAI_PATTERNS["cl100k"]
O200K_PATTERN = OPENAI_PATTERNS["o200k"]

# (file name, sha256) of each official file; the URL is derived from the name.
FILES = {
    "r50k_base.tiktoken": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "p50k_base.tiktoken": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    "cl100k_base.tiktoken": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base.tiktoken": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
}


def file_url(name: str) -> str:
    """The official download address of one of the `FILES`."""
    if name.endswith(".tiktoken"):
        return f"{_BLOB}/encodings/{name}"
    return f"{_BLOB}/gpt-2/encodings/main/{name}"


def gpt2() -> dict[str, Any]:
    mergeable_ranks = data_gym_to_mergeable_bpe_ranks(
        vocab_bpe_file=file_url("vocab.bpe"),
        encoder_json_file=file_url("encoder.json"),
        vocab_bpe_hash=FILES["vocab.bpe"],
        encoder_json_hash=FILES["encoder.json"],
    )
    return {
        "name": "gpt2",
        "explicit_n_vocab": 50257,
        "pat_str": R50K_PATTERN,
        "mergeable_ranks": mergeable_ranks,
        "special_tokens": {ENDOFTEXT: 50256},
    }


def _harmony_special_tokens() -> dict[str, int]:
    special_tokens = {
        ENDOFTEXT: 199999,
        ENDOFPROMPT: 200018,
        "<|startoftext|>": 199998,
        "<|reserved_200000|>": 200000,
        "<|reserved_200001|>": 200001,
        "<|return|>": 200002,
        "<|constrain|>": 200003,
        "<|reserved_200004|>": 200004,
        "<|channel|>": 200005,
        "<|start|>": 200006,
        "<|end|>": 200007,
        "<|message|>": 200008,
        "<|reserved_200009|>": 200009,
        "<|reserved_200010|>": 200010,
        "<|reserved_200011|>": 200011,
        "<|call|>": 200012,
    }
    # 200018 is also <|endofprompt|>: two texts, one id, as in tiktoken (it decodes to the first).
    special_tokens.update({f"<|reserved_{i}|>": i for i in range(200013, 201088)})
    return special_tokens


# The encodings whose ranks are one `.tiktoken` file: everything but the file's ranks.
# The registry builds these straight from the file's bytes in Rust (no Python dict).
SPECS: dict[str, dict[str, Any]] = {
    "r50k_base": {
        "file": "r50k_base.tiktoken",
        "explicit_n_vocab": 50257,
        "pat_str": R50K_PATTERN,
        "special_tokens": {ENDOFTEXT: 50256},
    },
    "p50k_base": {
        "file": "p50k_base.tiktoken",
        "explicit_n_vocab": 50281,
        "pat_str": R50K_PATTERN,
        "special_tokens": {ENDOFTEXT: 50256},
    },
    "p50k_edit": {
        "file": "p50k_base.tiktoken",
        "pat_str": R50K_PATTERN,
        "special_tokens": {
            ENDOFTEXT: 50256,
            FIM_PREFIX: 50281,
            FIM_MIDDLE: 50282,
            FIM_SUFFIX: 50283,
        },
    },
    "cl100k_base": {
        "file": "cl100k_base.tiktoken",
        "pat_str": CL100K_PATTERN,
        "special_tokens": {
            ENDOFTEXT: 100257,
            FIM_PREFIX: 100258,
            FIM_MIDDLE: 100259,
            FIM_SUFFIX: 100260,
            ENDOFPROMPT: 100276,
        },
    },
    "o200k_base": {
        "file": "o200k_base.tiktoken",
        "pat_str": O200K_PATTERN,
        "special_tokens": {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    },
    "o200k_harmony": {
        "file": "o200k_base.tiktoken",
        "pat_str": O200K_PATTERN,
        "special_tokens": _harmony_special_tokens(),
    },
}


def tiktoken_file_contents(file: str) -> bytes:
    """The verified bytes of one of the official `.tiktoken` files."""
    return read_file_cached(file_url(file), expected_hash=FILES[file])


def _from_spec(name: str) -> Callable[[], dict[str, Any]]:
    def constructor() -> dict[str, Any]:
        spec = dict(SPECS[name])
        file = spec.pop("file")
        ranks = load_tiktoken_bpe(file_url(file), expected_hash=FILES[file])
        return {"name": name, **spec, "mergeable_ranks": ranks}

    constructor.__name__ = name
    constructor.__doc__ = f"`Encoding` keyword arguments for {name} (tiktoken's plugin format)."
    return constructor


ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] = {
    "gpt2": gpt2,
    **{name: _from_spec(name) for name in SPECS},
}
