"""Mistral's `tekken.json` (`Encoding.from_tekken`, `ferrotok/tekken.py`) against what
`mistral_common`'s Tekkenizer does with it: tiktoken over the file's ranks, each id the rank
plus the special tokens' count (rebuilt here with tiktoken itself, the Tekkenizer's own engine,
as mistral_common's other dependencies are not installed), and against the shared
`tokenizer.json` of the same model; small files written here for each way a file can be bad.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import pickle
from pathlib import Path
from typing import Any

import ferrotok
import pytest
from ferrotok import tekken
from hf_support import sample_all
from test_hf_parity import model_path

tiktoken = pytest.importorskip("tiktoken")

TEXTS = [
    "",
    "Hello world",
    "[INST] hi [/INST] <s></s> <SPECIAL_42>",
    "It's 2021! 東京 🎉 café ǅungla e\u0301",
    "    indented\n\n\tcode(x)  /* c */\r\n",
]


def tekken_files() -> dict[str, Path]:
    """The tekken.json files in the `mistral-common` wheel (scripts/test.sh installs it)."""
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("mistral-common is not installed (scripts/test.sh installs it)")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return {p.stem: p for p in sorted(data.glob("tekken_*.json"))}


def tekkenizer_ids(path: Path, texts: list[str]) -> list[list[int]]:
    """mistral_common's `Tekkenizer.encode(text, bos=False, eos=False)`, as it computes it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    n_special = data["config"]["default_num_special_tokens"]
    inner = data["config"]["default_vocab_size"] - n_special
    ranks = {base64.b64decode(t["token_bytes"]): t["rank"] for t in data["vocab"][:inner]}
    enc = tiktoken.Encoding("tekken", pat_str=data["config"]["pattern"], mergeable_ranks=ranks,
                            special_tokens={})
    return [[i + n_special for i in enc.encode(t)] for t in texts]


@pytest.mark.parametrize("stem", ["tekken_240718", "tekken_240911"])
def test_the_tekkenizers_ids(stem: str) -> None:
    path = tekken_files()[stem]
    enc = ferrotok.get_encoding(str(path))
    texts = TEXTS + sample_all(4, 2)
    want = tekkenizer_ids(path, texts)
    assert enc.encode_ordinary_batch(texts) == want
    assert [enc.encode(t, disallowed_special=()) for t in texts] == want
    assert [enc.encode(t, disallowed_special=(), add_special_tokens=True) for t in texts] == [
        [1, *w] for w in want
    ]
    for t, ids in zip(texts, want):
        assert enc.decode(ids) == t
    assert enc.name == stem and enc.n_vocab == 131072
    # On Tekken's scanner (the general path's splitter is not one of those the CLI cuts
    # files for).
    assert enc._core_bpe.file_cuts_apply()
    assert enc.encode("[INST]", allowed_special="all") == [3]
    with pytest.raises(ValueError, match=r"\[INST\]"):
        enc.encode("[INST] hi")


def test_the_same_ids_as_the_models_tokenizer_json() -> None:
    enc = ferrotok.Encoding.from_tekken(tekken_files()["tekken_240911"])
    hf = ferrotok.Encoding.from_hf(model_path("tekken_240911"))
    texts = TEXTS + sample_all(4, 2)
    assert enc.special_tokens_set == hf.special_tokens_set
    for t in texts:
        assert enc.encode(t, allowed_special="all") == hf.encode(t, allowed_special="all")
        assert enc.encode(t, disallowed_special=(), add_special_tokens=True) == hf.encode(
            t, disallowed_special=(), add_special_tokens=True
        )


def test_the_hf_export_puts_the_bos_in_front(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    import ferrotok.hf

    enc = ferrotok.Encoding.from_tekken(tekken_files()["tekken_240911"])
    enc.to_hf(str(tmp_path / "tokenizer.json"))
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    face = ferrotok.hf.Tokenizer.from_encoding(enc)
    for t in TEXTS[:2] + sample_all(2, 1):
        want = enc.encode(t, disallowed_special=(), add_special_tokens=True)
        assert hf.encode(t).ids == face.encode(t).ids == want
        assert hf.encode(t, add_special_tokens=False).ids == enc.encode_ordinary(t)
    assert hf.encode("a", "b").ids == [1, *enc.encode_ordinary("a"), 1, *enc.encode_ordinary("b")]


def small(version: str = "v13", **changes: Any) -> dict[str, Any]:
    """A tekken.json of 256 byte tokens and two merges, three special tokens of five."""
    vocab = [{"rank": i, "token_bytes": base64.b64encode(bytes([i])).decode(), "token_str": None}
             for i in range(256)]
    for token in (b"ab", b"abc"):
        vocab.append({"rank": len(vocab), "token_bytes": base64.b64encode(token).decode(),
                      "token_str": token.decode()})
    data: dict[str, Any] = {
        "config": {"pattern": r"\w+|\s+|[^\w\s]+", "num_vocab_tokens": len(vocab),
                   "default_vocab_size": len(vocab) + 5, "default_num_special_tokens": 5,
                   "version": version},
        "vocab": vocab,
        "special_tokens": [{"rank": i, "token_str": t, "is_control": True}
                           for i, t in enumerate(["<unk>", "<s>", "</s>"])],
    }
    data.update(changes)
    return data


def test_a_small_file(tmp_path: Path) -> None:
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(small()), encoding="utf-8")
    enc = ferrotok.get_encoding(str(path))
    assert enc.encode_ordinary("abc ab a") == [262, 37, 261, 37, 102]  # ids: rank + 5
    assert enc.special_tokens_set == {"<unk>", "<s>", "</s>", "<SPECIAL_3>", "<SPECIAL_4>"}
    assert enc.encode("abc", add_special_tokens=True) == [1, 262]
    assert pickle.loads(pickle.dumps(enc)).encode("abc", add_special_tokens=True) == [1, 262]
    assert enc.decode([1, 262]) == "<s>abc"


def _edit(data: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DROP = object()
BAD = [
    (["config"], _DROP, "no `config`"),
    (["config", "pattern"], 5, "pattern"),
    (["config", "version"], "v13b", "version"),
    (["config", "default_vocab_size"], -1, "default_vocab_size"),
    (["config", "default_vocab_size"], 200, "fewer than 256"),
    (["config", "default_vocab_size"], 900, "fewer than the 895"),
    (["special_tokens"], _DROP, "no `special_tokens`"),
    (["special_tokens", 1, "rank"], 7, "ranks"),
    (["special_tokens", 1, "token_str"], "<unk>", "two special tokens"),
    (["vocab", 3, "rank"], 4, "rank 3"),
    (["vocab", 3, "token_bytes"], "!!", "base64"),
    (["vocab", 257, "token_bytes"], "YWI=", "bytes"),
    (["vocab", 65, "token_bytes"], "Qg==", "bytes"),
]


@pytest.mark.parametrize(("where", "value", "message"), BAD)
def test_a_bad_file_is_a_value_error_saying_what(
    tmp_path: Path, where: list[Any], value: Any, message: str
) -> None:
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_edit(small(), where, value)), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        ferrotok.Encoding.from_tekken(path)


def test_old_files_take_the_tekkenizers_own_special_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tekken.json"
    data = small("v7")
    del data["special_tokens"]
    data["config"]["default_num_special_tokens"] = 25
    data["config"]["default_vocab_size"] = 258 + 25
    path.write_text(json.dumps(data), encoding="utf-8")
    enc = ferrotok.Encoding.from_tekken(path)
    assert enc.encode_single_token("[TOOL_CONTENT]") == 19
    assert enc.encode_single_token("<SPECIAL_24>") == 24
    assert tekken.DEPRECATED_SPECIAL_TOKENS[1] == "<s>"
    assert enc.encode_ordinary("ab") == [25 + 256]
