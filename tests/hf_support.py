"""Shared helpers of the HuggingFace tests: ~4 KB documents of the shared corpus.

`documents(name)` cuts a corpus file into documents of about `DOC_CHARS` characters, each
ending at a line end where one is near (as a document would), deterministically, so every
test and benchmark sees the same documents. `sample(name, n)` takes `n` of them spread evenly
over the file.
"""

from __future__ import annotations

import functools

from oracle import corpus_file

DOC_CHARS = 4096

# The models of ../shared/tokenizers (MANIFEST.md there), all of which ferrotok loads:
# byte-level BPE, SentencePiece BPE (byte fallback, no pre-tokenizer) and WordPiece (BGE).
BYTE_LEVEL = [
    "gpt-2",
    "llama-bpe",
    "qwen2",
    "deepseek-llm",
    "falcon",
    "starcoder",
    "gpt-neox",
    "tekken_240911",
]
SENTENCEPIECE = ["llama-spm", "mistral-v1-spm"]
WORDPIECE = ["bert-bge"]
LOADED = BYTE_LEVEL + SENTENCEPIECE + WORDPIECE

TEXT_FILES = ["english.txt", "code.txt", "multilingual.txt"]
ADVERSARIAL_FILES = [
    "adversarial/base64_1mb.txt",
    "adversarial/emoji_run_30k.txt",
    "adversarial/minified_js_line.txt",
    "adversarial/random_lowercase_100k.txt",
    "adversarial/repeat_a_200k.txt",
    "adversarial/repeat_cjk_100k.txt",
    "adversarial/spaces_100k.txt",
]
ALL_FILES = TEXT_FILES + ADVERSARIAL_FILES


@functools.cache
def documents(name: str) -> tuple[str, ...]:
    text = corpus_file(name).read_text(encoding="utf-8")
    docs = []
    start = 0
    while start < len(text):
        end = min(start + DOC_CHARS, len(text))
        newline = text.find("\n", end, end + 512)
        if newline >= 0:
            end = newline + 1
        docs.append(text[start:end])
        start = end
    return tuple(docs)


def sample(name: str, n: int) -> list[str]:
    docs = documents(name)
    if n <= 0:
        return []
    if len(docs) <= n:
        return list(docs)
    step = len(docs) / n
    return [docs[int(i * step)] for i in range(n)]


def sample_all(n_text: int, n_adversarial: int) -> list[str]:
    out: list[str] = []
    for name in TEXT_FILES:
        out += sample(name, n_text)
    for name in ADVERSARIAL_FILES:
        out += sample(name, n_adversarial)
    return out
