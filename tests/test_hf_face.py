"""`ferrotok.hf.Tokenizer` against `tokenizers.Tokenizer`: what HF does after the model.

Truncation (strategies, directions, strides, overflowing pieces, pairs), padding (to the
longest, fixed, to a multiple, left), templates with pairs, pre-tokenized input, decoding,
vocabulary queries, the settings' dicts and the pipeline's components (read, set, changed in
place), on models whose post-processors differ (TemplateProcessing, ByteLevel with and without
trimming, a Sequence of both). Every field of every encoding, overflowing pieces included, must
be HF's.
"""

from __future__ import annotations

import json
import random
from typing import Any

import ferrotok.hf
import pytest
from hf_support import sample_all
from test_hf_parity import loaded, model_path, special_texts

# HF tokenizers 0.23 is the oracle (issue 54); PyPI has no 0.23 for Python 3.9, where these
# tests do not run.
tokenizers = pytest.importorskip("tokenizers", minversion="0.23")

MODELS = ["gpt-2", "llama-bpe", "deepseek-llm", "gpt-neox", "llama-spm", "bert-bge"]
FIELDS = [
    "ids",
    "type_ids",
    "tokens",
    "offsets",
    "attention_mask",
    "special_tokens_mask",
    "word_ids",
    "sequence_ids",
]

TEXTS = [
    "Hello world",
    "  two  spaces ",
    "",
    "x",
    "It's 2021! 東京 🎉 café",
    "A longer sentence, with punctuation; and numbers 1234567 in it.\n\tIndented line.",
]


def same(a: Any, b: Any, where: str) -> None:
    for field in FIELDS:
        assert list(getattr(a, field)) == list(getattr(b, field)), f"{where}: {field}"
    assert len(a) == len(b)
    assert len(a.overflowing) == len(b.overflowing), f"{where}: overflowing"
    for i, (x, y) in enumerate(zip(a.overflowing, b.overflowing)):
        same(x, y, f"{where} overflow {i}")


def fresh(name: str) -> tuple[Any, ferrotok.hf.Tokenizer]:
    enc, _, _ = loaded(name)
    return tokenizers.Tokenizer.from_file(str(model_path(name))), ferrotok.hf.Tokenizer(enc)


@pytest.mark.parametrize("name", MODELS)
def test_single_pair_and_pretokenized(name: str) -> None:
    hf, face = fresh(name)
    specials = special_texts(hf)
    cases = TEXTS + [f"{specials[0]} hi {specials[-1]}"]
    for add in (True, False):
        for t in cases:
            same(face.encode(t, add_special_tokens=add), hf.encode(t, add_special_tokens=add), t)
            same(
                face.encode(t, "the pair", add_special_tokens=add),
                hf.encode(t, "the pair", add_special_tokens=add),
                f"pair {t!r}",
            )
        words = ["Hello", " world", "x", "  "]
        same(
            face.encode(words, is_pretokenized=True, add_special_tokens=add),
            hf.encode(words, is_pretokenized=True, add_special_tokens=add),
            "pretokenized",
        )
        same(
            face.encode(words, ["a", "b"], is_pretokenized=True, add_special_tokens=add),
            hf.encode(words, ["a", "b"], is_pretokenized=True, add_special_tokens=add),
            "pretokenized pair",
        )
    got = face.encode_batch([(TEXTS[0], TEXTS[4]), TEXTS[1]])
    want = hf.encode_batch([(TEXTS[0], TEXTS[4]), TEXTS[1]])
    for a, b in zip(got, want):
        same(a, b, "batch of a pair and a single")
    assert face.num_special_tokens_to_add(True) == hf.num_special_tokens_to_add(True)
    assert face.num_special_tokens_to_add(False) == hf.num_special_tokens_to_add(False)


TRUNCATIONS: list[dict[str, Any]] = [
    dict(max_length=7),
    dict(max_length=9, stride=2),
    dict(max_length=8, stride=3, direction="left"),
    dict(max_length=10, strategy="only_second"),
    dict(max_length=12, strategy="only_first", stride=1),
    dict(max_length=1),
]
PADDINGS: list[dict[str, Any] | None] = [
    None,
    {},
    dict(length=40, direction="left", pad_id=3, pad_token="<p>", pad_type_id=1),
    dict(pad_to_multiple_of=8),
]


@pytest.mark.parametrize("name", MODELS)
def test_truncation_and_padding(name: str) -> None:
    hf, face = fresh(name)
    long_pair = "the second sequence is long enough to need cutting " * 2
    for trunc in TRUNCATIONS:
        for pad in PADDINGS:
            for tok in (hf, face):
                tok.enable_truncation(**trunc)
                if pad is None:
                    tok.no_padding()
                else:
                    tok.enable_padding(**pad)
            assert face.truncation == hf.truncation
            assert face.padding == hf.padding
            batches = [TEXTS, [(t, long_pair) for t in TEXTS]]
            for batch in batches:
                try:
                    want = hf.encode_batch(batch)
                except BaseException:  # noqa: BLE001 (HF raises, or panics: so must we, cleanly)
                    with pytest.raises(ValueError):
                        face.encode_batch(batch)
                    continue
                got = face.encode_batch(batch)
                for i, (a, b) in enumerate(zip(got, want)):
                    same(a, b, f"{name} {trunc} {pad} item {i}")
    face.no_truncation()
    face.no_padding()
    assert face.truncation is None and face.padding is None


@pytest.mark.parametrize("name", ["gpt-2", "llama-bpe", "bert-bge"])
def test_random_truncation_and_padding(name: str) -> None:
    # Settings drawn at random, small enough that every limit is met (a stride the length
    # leaves no room for, an empty second sequence, a padding shorter than the text):
    # where HF sets and encodes, the same fields; where it refuses (or panics), a ValueError.
    hf, face = fresh(name)
    rng = random.Random(3)
    words = ["Hello", " world", "é", "中文", "  ", "don't", "123456", "\n", "<|endoftext|>"]
    strategies = ["longest_first", "only_first", "only_second"]
    for _ in range(120):
        trunc = dict(
            max_length=rng.randrange(8),
            stride=rng.randrange(5),
            strategy=rng.choice(strategies),
            direction=rng.choice(["left", "right"]),
        )
        pad = dict(
            direction=rng.choice(["left", "right"]),
            pad_id=rng.randrange(3),
            pad_type_id=rng.randrange(3),
            length=rng.choice([None, rng.randrange(12)]),
            pad_to_multiple_of=rng.choice([None, rng.randrange(4)]),
        )
        texts = ["".join(rng.choices(words, k=rng.randrange(6))) for _ in range(3)]
        batch = [(texts[0], texts[1]), texts[2]]
        add = rng.random() < 0.7
        results = []
        for tok in (hf, face):
            tok.no_truncation()
            try:
                tok.enable_truncation(**trunc)
                tok.enable_padding(**pad)
                results.append(tok.encode_batch(batch, add_special_tokens=add))
            except BaseException:  # noqa: BLE001 (HF raises, or panics)
                results.append(None)
        want, got = results
        assert (want is None) == (got is None), (trunc, pad, texts, add)
        for i, (a, b) in enumerate(zip(got or [], want or [])):
            same(a, b, f"{trunc} {pad} {texts} item {i}")


@pytest.mark.parametrize("name", MODELS)
def test_encode_batch_fast_is_hfs(name: str) -> None:
    # HF's fast path: the text's tokens without texts, offsets or words; the template's and
    # padding's tokens with theirs; the rest as encode_batch. Texts (through the core's ids
    # alone), pairs, special tokens' texts in the text, pre-tokenized words.
    hf, face = fresh(name)
    specials = special_texts(hf)
    texts = TEXTS + [f"{specials[0]} hi {specials[-1]}"]
    batches: list[tuple[list[Any], bool]] = [
        (texts, False),
        ([(t, "the pair " + t) for t in texts], False),
        ([["Hello", " world", "x"], (["a", "b"], ["c"])], True),
    ]
    for trunc, pad in [(None, None), (TRUNCATIONS[1], PADDINGS[1]), (TRUNCATIONS[2], PADDINGS[2])]:
        for tok in (hf, face):
            if trunc is None:
                tok.no_truncation()
            else:
                tok.enable_truncation(**trunc)
            if pad is None:
                tok.no_padding()
            else:
                tok.enable_padding(**pad)
        for batch, pre in batches:
            for add in (True, False):
                kw = dict(is_pretokenized=pre, add_special_tokens=add)
                try:
                    want = hf.encode_batch_fast(batch, **kw)
                except BaseException:  # noqa: BLE001 (HF raises, or panics: so must we, cleanly)
                    with pytest.raises(ValueError):
                        face.encode_batch_fast(batch, **kw)
                    continue
                got = face.encode_batch_fast(batch, **kw)
                assert len(got) == len(want)
                for i, (a, b) in enumerate(zip(got, want)):
                    same(a, b, f"{name} {trunc} {pad} {pre} {add} item {i}")
    assert any(t == "" for t in got[0].tokens)


def test_the_transformers_backend_answers_encode_batch_fast() -> None:
    from ferrotok.hf.patch import FerrotokBackend

    hf, _ = fresh("bert-bge")
    backend = FerrotokBackend(hf)
    assert backend.uses_ferrotok
    batch = [TEXTS[0], (TEXTS[4], TEXTS[5])]
    for a, b in zip(backend.encode_batch_fast(batch), hf.encode_batch_fast(batch)):
        same(a, b, "backend")
        assert isinstance(a, ferrotok.hf.Encoding)


def test_async_methods_and_from_buffer_are_hfs() -> None:
    import asyncio

    hf, face = fresh("llama-bpe")
    path = model_path("llama-bpe")
    from_buffer = ferrotok.hf.Tokenizer.from_buffer(path.read_bytes())
    assert from_buffer.encode(TEXTS[4]).ids == hf.encode(TEXTS[4]).ids
    batch = [TEXTS[0], (TEXTS[4], TEXTS[5])]

    async def both(tok: Any) -> list[Any]:
        # Awaited one by one and side by side, as an event loop's tasks run them.
        single = await tok.async_encode(TEXTS[4], "a pair", add_special_tokens=False)
        gathered = await asyncio.gather(
            tok.async_encode_batch(batch),
            tok.async_encode_batch_fast(batch, add_special_tokens=False),
            *(tok.async_encode(t) for t in TEXTS),
        )
        decoded = await tok.async_decode_batch([single.ids, [1, 2, 3]], skip_special_tokens=False)
        return [single, *gathered, decoded]

    got, want = asyncio.run(both(face)), asyncio.run(both(hf))
    # HF 0.23's `async_encode` gives byte offsets, against its docstring and its `encode`
    # (huggingface/tokenizers#2369 fixes it): ours are `encode`'s char offsets.
    same(got[0], hf.encode(TEXTS[4], "a pair", add_special_tokens=False), "async_encode")
    assert got[0].ids == want[0].ids and got[0].offsets != want[0].offsets
    for a, b in zip(got[1] + got[2], want[1] + want[2]):
        same(a, b, "async batches")
    for a, t in zip(got[3:-1], TEXTS):
        same(a, hf.encode(t), "async_encode side by side")
    assert got[-1] == want[-1]
    # Without a running event loop both refuse, as an asyncio future needs one.
    for tok in (hf, face):
        with pytest.raises(RuntimeError):
            tok.async_encode("x")


def test_settings_from_the_file(tmp_path: Any) -> None:
    hf, _ = fresh("llama-bpe")
    hf.enable_truncation(16, stride=4, direction="left")
    hf.enable_padding(length=24, pad_id=5, pad_token="<pad>")
    path = tmp_path / "tokenizer.json"
    path.write_text(hf.to_str(), encoding="utf-8")
    face = ferrotok.hf.Tokenizer.from_file(path)
    assert face.truncation == hf.truncation and face.padding == hf.padding
    same(face.encode(TEXTS[5] * 3), hf.encode(TEXTS[5] * 3), "settings from the file")
    assert json.loads(face.to_str())["truncation"] == json.loads(hf.to_str())["truncation"]
    assert json.loads(face.to_str())["padding"] == json.loads(hf.to_str())["padding"]


def test_bad_settings_are_refused() -> None:
    _, face = fresh("gpt-2")
    with pytest.raises(ValueError, match="strategy"):
        face.enable_truncation(8, strategy="bogus")
    with pytest.raises(ValueError, match="direction"):
        face.enable_padding(direction="up")
    with pytest.raises(TypeError):
        face.encode(123)  # type: ignore[arg-type]
    face.encode_special_tokens = True
    with pytest.raises(NotImplementedError, match="encode_special_tokens"):
        face.encode("hi")


SEP, CLS = ["<|endoftext|>", 50256], ["Hello", 15496]


@pytest.mark.parametrize(
    ("post_processor", "hf_reads"),
    [
        # HF reads a post-processor as the first of Roberta, Bert, ByteLevel, Template and
        # Sequence whose fields it has (an untagged enum: the `type` is not checked).
        ({"type": "RobertaProcessing", "sep": SEP, "cls": CLS}, "BertProcessing"),
        (
            {"type": "RobertaProcessing", "sep": SEP, "cls": CLS, "trim_offsets": None},
            "BertProcessing",
        ),
        (
            {
                "type": "BertProcessing",
                "sep": SEP,
                "cls": CLS,
                "trim_offsets": True,
                "add_prefix_space": False,
            },
            "RobertaProcessing",
        ),
        ({"type": "ByteLevel", "sep": SEP, "cls": CLS}, "BertProcessing"),
        ({"sep": SEP, "cls": CLS}, "BertProcessing"),
        ({"type": "Sequence", "processors": [], "sep": SEP, "cls": CLS}, "BertProcessing"),
        # Refused by HF, so by ferrotok (a ValueError, not a KeyError or TypeError).
        ({"type": "RobertaProcessing", "sep": SEP}, None),
        ({"type": "BertProcessing", "sep": ["</s>", -1], "cls": CLS}, None),
        ({"type": "BertProcessing", "sep": ["</s>", 2, 3], "cls": CLS}, None),
        ({"type": "BertProcessing", "sep": None, "cls": CLS}, None),
        ({"type": "TemplateProcessing"}, None),
        ({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "X"}}]}, None),
        ({"type": "Sequence"}, None),
        ({"type": "Sequence", "processors": [{"type": "RobertaProcessing"}]}, None),
        ({"type": "Sequence", "processors": [{"type": "RobertaProcessing", "sep": SEP}]}, None),
    ],
)
def test_a_post_processor_is_what_hf_reads_it_as(
    post_processor: dict[str, Any], hf_reads: str | None
) -> None:
    cfg = json.loads(model_path("gpt-2").read_text(encoding="utf-8"))
    cfg["post_processor"] = post_processor
    text = json.dumps(cfg)
    if hf_reads is None:
        with pytest.raises(Exception, match="did not match any variant"):
            tokenizers.Tokenizer.from_str(text)
        with pytest.raises(ValueError):
            ferrotok.hf.Tokenizer.from_str(text)
        with pytest.raises(ValueError):
            ferrotok.Encoding._from_hf_json(text, "gpt-2")
        return
    hf = tokenizers.Tokenizer.from_str(text)
    assert json.loads(hf.to_str())["post_processor"]["type"] == hf_reads
    face = ferrotok.hf.Tokenizer.from_str(text)
    enc = ferrotok.Encoding._from_hf_json(text, "gpt-2")
    for t in ["  two  spaces ", *TEXTS]:
        same(face.encode(t), hf.encode(t), repr(t))
        same(face.encode(t, " a pair "), hf.encode(t, " a pair "), repr(t))
        assert enc.encode(t, add_special_tokens=True) == hf.encode(t).ids


@pytest.mark.parametrize(
    "call",
    [
        lambda t: t.decode([-1]),
        lambda t: t.decode([2**32]),
        lambda t: t.decode([1.5]),
        lambda t: t.decode_batch([[9906], [None]]),
        lambda t: t.id_to_token(-1),
        lambda t: t.enable_truncation(-1),
        lambda t: t.enable_truncation(8, stride=-2),
        lambda t: t.enable_truncation(2**64),
        lambda t: t.enable_truncation(1.5),
        lambda t: t.enable_padding(pad_id=-1),
        lambda t: t.enable_padding(pad_id=2**32),
        lambda t: t.enable_padding(pad_type_id=-1),
        lambda t: t.enable_padding(length=-1),
        lambda t: t.enable_padding(length=1.5),
        lambda t: t.enable_padding(pad_to_multiple_of=-1),
        lambda t: t.enable_padding(pad_token=5),
        lambda t: t.encode_batch(["a", None]),
        lambda t: t.encode_batch_fast([None]),
    ],
)
def test_bad_arguments_raise_what_hf_raises(call: Any) -> None:
    # Ids and sizes are unsigned ints to HF's bindings: a negative or too large one is an
    # OverflowError, a float a TypeError, never a value dropped, wrapped or rounded.
    hf, face = fresh("gpt-2")
    with pytest.raises((TypeError, OverflowError)) as theirs:
        call(hf)
    with pytest.raises(theirs.type):
        call(face)


def test_ids_of_any_integer_type_decode() -> None:
    np = pytest.importorskip("numpy")
    hf, face = fresh("gpt-2")
    ids = hf.encode("Hello world, again").ids
    for given in (ids, tuple(ids), np.array(ids, dtype=np.uint32), np.array(ids)):
        assert face.decode(given) == hf.decode(list(map(int, given)))
    assert face.id_to_token(np.int64(ids[0])) == hf.id_to_token(ids[0])


def _outcome(query: Any, encoding: Any) -> Any:
    try:
        return query(encoding)
    except (TypeError, OverflowError) as e:
        return type(e)


@pytest.mark.parametrize("name", ["gpt-2", "bert-bge", "llama-spm"])
def test_alignment_queries_are_hfs(name: str) -> None:
    # What transformers' BatchEncoding asks (char_to_token for question answering, word_ids'
    # spans): every query at every place, past both ends included, gives HF's answer, or the
    # error HF gives (a negative index is an OverflowError to its bindings).
    hf, face = fresh(name)
    for text, pair in [("Hello world, don't 東京 café!", None), ("Hi  there", "a pair"), ("", "x")]:
        a, b = hf.encode(text, pair), face.encode(text, pair)
        queries: list[Any] = []
        for i in range(-1, len(text) + 2):
            for seq in (0, 1):
                queries += [lambda e, i=i, s=seq: e.char_to_token(i, s)]
                queries += [lambda e, i=i, s=seq: e.char_to_word(i, s)]
                queries += [lambda e, i=i, s=seq: e.word_to_tokens(i, s)]
                queries += [lambda e, i=i, s=seq: e.word_to_chars(i, s)]
        for t in range(-1, len(a.ids) + 2):
            queries += [lambda e, t=t: e.token_to_chars(t)]
            queries += [lambda e, t=t: e.token_to_word(t)]
            queries += [lambda e, t=t: e.token_to_sequence(t)]
        assert a.n_sequences == b.n_sequences
        for k, query in enumerate(queries):
            assert _outcome(query, b) == _outcome(query, a), (text, pair, k)


def test_from_pretrained_reads_the_hub_cache(tmp_path: Any, monkeypatch: Any) -> None:
    # HF's `Tokenizer.from_pretrained("openai-community/gpt2")`, offline: the file comes from
    # huggingface_hub's cache, laid out as a download leaves it.
    hub = pytest.importorskip("huggingface_hub.constants")
    model = tmp_path / "models--openai-community--gpt2"
    commit = "0" * 40
    (model / "refs").mkdir(parents=True)
    (model / "refs" / "main").write_text(commit)
    (model / "snapshots" / commit).mkdir(parents=True)
    data = model_path("gpt-2").read_bytes()
    (model / "snapshots" / commit / "tokenizer.json").write_bytes(data)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    face = ferrotok.hf.Tokenizer.from_pretrained("openai-community/gpt2")
    hf = tokenizers.Tokenizer.from_str(data.decode("utf-8"))
    same(face.encode(TEXTS[-2]), hf.encode(TEXTS[-2]), "from_pretrained")
    with pytest.raises(Exception, match="cache|offline|not found|connect"):
        ferrotok.hf.Tokenizer.from_pretrained("no-such/model")


def test_offset_trimming_takes_only_lists_that_match() -> None:
    # ByteLevel's trimming in the core, on the face's lists: lists that do not match raise.
    from ferrotok._core import trim_byte_level_offsets

    offsets = [(0, 6), (6, 12)]
    with pytest.raises(ValueError, match="1 tokens but 2 offsets"):
        trim_byte_level_offsets(["Ġhello"], offsets, True)
    with pytest.raises(TypeError):
        trim_byte_level_offsets([7, "x"], offsets, True)  # type: ignore[list-item]
    assert offsets == [(0, 6), (6, 12)]
    trim_byte_level_offsets(["Ġhello", "Ġworld"], offsets, True)
    assert offsets == [(0, 6), (7, 12)]  # the first token keeps the prefix space


@pytest.mark.parametrize("name", ["llama-bpe", "bert-bge"])
def test_a_batch_on_the_cores_threads_is_hfs_and_the_items_encoded_one_by_one(name: str) -> None:
    # Over 32 KB of text: the core shares the batch between threads; pairs, truncation
    # with overflowing pieces and padding to the batch's longest on top.
    hf, face = fresh(name)
    docs = sample_all(4, 2)
    assert sum(len(d.encode()) for d in docs) > 32 << 10
    batch: list[Any] = [d if i % 3 else (d[:300], docs[-1 - i][:200]) for i, d in enumerate(docs)]
    for tok in (hf, face):
        tok.enable_truncation(64, stride=8)
        tok.enable_padding()
    got, want = face.encode_batch(batch), hf.encode_batch(batch)
    assert len(got) == len(want) == len(batch)
    for i, (a, b) in enumerate(zip(got, want)):
        same(a, b, f"item {i}")
    face.no_padding()
    for i, (item, a) in enumerate(zip(batch, face.encode_batch(batch))):
        one = face.encode(*item) if isinstance(item, tuple) else face.encode(item)
        same(a, one, f"item {i} alone")
    with pytest.raises(TypeError, match="must be str"):
        face.encode_batch(["a text", 3])


def test_token_texts_are_the_tables_by_id() -> None:
    # The face's tokens come from the core with the ids, each the table's text of its id; an
    # id the table does not reach is an error, not a read past it.
    enc, _, _ = loaded("gpt-2")
    core = enc._core_bpe
    table = [f"t{i}" for i in range(enc.n_vocab)]
    ids, tokens, offsets, words = core.encode_hf_face("Hello world", table)
    assert (ids, offsets, words) == core.encode_hf_detail("Hello world")
    assert tokens == [table[i] for i in ids] and all(t is table[i] for t, i in zip(tokens, ids))
    with pytest.raises(ValueError, match="has no token text"):
        core.encode_hf_face("Hello world", table[: max(ids)])
    assert core.encode_hf_face("", []) == ([], [], [], [])


def test_a_template_that_places_a_sequence_twice() -> None:
    # The face hands a template the model's own Encodings; one placed twice is copied, so
    # both places (and pairs, truncation, overflowing pieces) stay HF's.
    hf = tokenizers.Tokenizer.from_file(str(model_path("gpt-2")))
    hf.post_processor = tokenizers.processors.TemplateProcessing(
        single="$A <|endoftext|> $A",
        pair="$A $B:1 $A:1",
        special_tokens=[("<|endoftext|>", 50256)],
    )
    face = ferrotok.hf.Tokenizer.from_str(hf.to_str())
    for text in TEXTS:
        same(face.encode(text), hf.encode(text), repr(text))
        same(face.encode(text, "a pair"), hf.encode(text, "a pair"), repr(text))
    for tok in (hf, face):
        tok.enable_truncation(7, stride=2)
    text = TEXTS[-1]
    same(face.encode(text), hf.encode(text), "truncated")
    same(face.encode(text, "a pair of words"), hf.encode(text, "a pair of words"), "pair")


def test_post_processing_leaves_its_inputs_alone() -> None:
    # `post_process` and `Encoding.merge` give new Encodings: what they were handed is unchanged.
    hf, face = fresh("llama-bpe")
    for tok in (hf, face):
        tok.enable_truncation(12, stride=2)
    mine = [face.encode(t, add_special_tokens=False) for t in TEXTS[-2:]]
    theirs = [hf.encode(t, add_special_tokens=False) for t in TEXTS[-2:]]
    before = [(list(e.ids), list(e.tokens), len(e.overflowing)) for e in mine]
    same(face.post_process(mine[0], mine[1]), hf.post_process(theirs[0], theirs[1]), "pair")
    same(face.post_process(mine[0]), hf.post_process(theirs[0]), "single")
    merged = type(mine[0]).merge(mine, True)
    same(merged, tokenizers.Encoding.merge(theirs, True), "merge, growing offsets")
    no_overflow = [face.encode(t, add_special_tokens=False) for t in ("ab", "cd ef")]
    for tok in (hf, face):
        tok.no_truncation()
    hf_parts = [hf.encode(t, add_special_tokens=False) for t in ("ab", "cd ef")]
    merge = type(mine[0]).merge
    same(merge(no_overflow), tokenizers.Encoding.merge(hf_parts), "merge, default offsets")
    same(merge(no_overflow, False), tokenizers.Encoding.merge(hf_parts, False), "merge")
    assert [(list(e.ids), list(e.tokens), len(e.overflowing)) for e in mine] == before


@pytest.mark.parametrize("name", MODELS)
def test_decode_and_vocabulary(name: str) -> None:
    hf, face = fresh(name)
    specials = special_texts(hf)
    ids = hf.encode(f"{specials[0]}Hello wörld 🎉 {specials[-1]}").ids + [10**9]
    for skip in (True, False):
        assert face.decode(ids, skip) == hf.decode(ids, skip_special_tokens=skip)
    partial = hf.encode("🎉").ids[:1]  # an incomplete UTF-8 sequence
    assert face.decode(partial) == hf.decode(partial)
    assert face.decode_batch([ids, partial]) == hf.decode_batch([ids, partial])
    assert face.get_vocab() == hf.get_vocab()
    assert face.get_vocab(with_added_tokens=False) == hf.get_vocab(with_added_tokens=False)
    assert face.get_vocab_size() == hf.get_vocab_size()
    assert face.get_vocab_size(False) == hf.get_vocab_size(False)
    for token in ["hello", "Ġthe", specials[0], "no such token"]:
        assert face.token_to_id(token) == hf.token_to_id(token)
    for i in [0, 1000, hf.token_to_id(specials[0]), 10**9]:
        assert face.id_to_token(i) == hf.id_to_token(i)
    added = face.get_added_tokens_decoder()
    assert {i: t.content for i, t in added.items()} == {
        i: t.content for i, t in hf.get_added_tokens_decoder().items()
    }


def test_adding_tokens_as_hf_does() -> None:
    hf, face = fresh("gpt-2")
    new = ["<tool>", tokenizers.AddedToken("[mask]", lstrip=True)]
    assert face.add_tokens(new) == hf.add_tokens(new) == 2
    assert face.add_special_tokens(["<|im_end|>"]) == hf.add_special_tokens(["<|im_end|>"]) == 1
    text = "call <tool> with  [mask] then<|im_end|>"
    same(face.encode(text), hf.encode(text), "after adding tokens")
    assert face.get_vocab() == hf.get_vocab()
    assert face.decode(hf.encode(text).ids) == hf.decode(hf.encode(text).ids)


def test_from_encoding_gives_the_hf_face_of_an_openai_encoding() -> None:
    enc = ferrotok.get_encoding("cl100k_base")
    face = ferrotok.hf.Tokenizer.from_encoding(enc)
    e = face.encode("hello world 2021")
    assert e.ids == enc.encode("hello world 2021")
    assert e.offsets == [(0, 5), (5, 11), (11, 12), (12, 15), (15, 16)]
    assert face.decode(e.ids) == "hello world 2021"


def test_an_encoding_not_from_a_tokenizer_json_is_refused() -> None:
    with pytest.raises(TypeError, match="from_hf"):
        ferrotok.hf.Tokenizer(ferrotok.get_encoding("r50k_base"))


# ---- components: HF's objects, and a change made through one reaches the engine ----------

SLOTS = ["normalizer", "pre_tokenizer", "model", "post_processor", "decoder"]


def state(component: Any) -> Any:
    return None if component is None else json.loads(component.__getstate__())


@pytest.mark.parametrize("name", MODELS)
def test_components_are_hfs(name: str) -> None:
    hf, face = fresh(name)
    for slot in SLOTS:
        ours, theirs = getattr(face, slot), getattr(hf, slot)
        assert state(ours) == state(theirs), slot
        assert (ours is None) == (theirs is None), slot
        if theirs is not None:
            assert isinstance(ours, type(theirs)), slot
    for text in TEXTS:
        if hf.normalizer is not None:
            assert face.normalizer.normalize_str(text) == hf.normalizer.normalize_str(text)
        if hf.pre_tokenizer is not None:
            got = face.pre_tokenizer.pre_tokenize_str(text)
            assert got == hf.pre_tokenizer.pre_tokenize_str(text)


def _llama3_template(tok: Any) -> None:
    # The common fix for Llama 3's files, whose template adds no end-of-text token.
    tok.post_processor = tokenizers.processors.TemplateProcessing(
        single="<|begin_of_text|> $A <|end_of_text|>",
        pair="<|begin_of_text|> $A <|end_of_text|> $B:1 <|end_of_text|>:1",
        special_tokens=[("<|begin_of_text|>", 128000), ("<|end_of_text|>", 128001)],
    )


def _prefix_space_in_place(tok: Any) -> None:
    tok.pre_tokenizer[1].add_prefix_space = True  # a member of its Sequence


def _digits_as_an_item(tok: Any) -> None:
    tok.pre_tokenizer[0] = tokenizers.pre_tokenizers.Digits(individual_digits=True)


def _lowercase(tok: Any) -> None:
    tok.normalizer = tokenizers.normalizers.Lowercase()


def _no_decoder(tok: Any) -> None:
    tok.decoder = None


def _merges_not_ignored(tok: Any) -> None:
    tok.model.ignore_merges = False


def _gpt2_prefix_space(tok: Any) -> None:
    tok.pre_tokenizer.add_prefix_space = True


def _bge_keeps_accents(tok: Any) -> None:
    tok.normalizer.strip_accents = False
    tok.normalizer.lowercase = False


EDITS = [
    ("llama-bpe", _llama3_template),
    ("llama-bpe", _prefix_space_in_place),
    ("llama-bpe", _digits_as_an_item),
    ("llama-bpe", _merges_not_ignored),
    ("gpt-2", _gpt2_prefix_space),
    ("gpt-2", _lowercase),
    ("gpt-2", _no_decoder),
    ("bert-bge", _bge_keeps_accents),
]


@pytest.mark.parametrize(("name", "edit"), EDITS, ids=[e.__name__ for _, e in EDITS])
def test_a_change_through_a_component_is_hfs(name: str, edit: Any) -> None:
    hf, face = fresh(name)
    texts = TEXTS + ["ÉCOLE Café 2021 x1234", " leading space"] + sample_all(3, 7)
    def seen() -> list[Any]:
        return [(e.ids, face.decode(e.ids)) for e in map(face.encode, texts)]

    before = seen()
    edit(hf)
    edit(face)
    assert state(face.pre_tokenizer) == state(hf.pre_tokenizer)
    for text in texts:
        same(face.encode(text), hf.encode(text), f"{edit.__name__}: {text[:40]!r}")
        ids = hf.encode(text).ids
        assert face.decode(ids) == hf.decode(ids)
    # The edit changed something the tests can see, and a file saved now carries it.
    assert seen() != before
    saved = tokenizers.Tokenizer.from_str(face.to_str())
    assert [saved.encode(t).ids for t in texts] == [hf.encode(t).ids for t in texts]


def test_a_component_the_engine_does_not_run_is_refused_and_nothing_changes() -> None:
    hf, face = fresh("llama-bpe")
    text = "Refused 2021 edits leave it as it was."
    want = hf.encode(text).ids
    with pytest.raises(ValueError, match="UnicodeScripts"):
        face.pre_tokenizer = tokenizers.pre_tokenizers.UnicodeScripts()
    with pytest.raises(ValueError, match="dropout"):
        face.model.dropout = 0.1
    with pytest.raises(ValueError, match="cannot write it as JSON"):
        face.pre_tokenizer = tokenizers.pre_tokenizers.PreTokenizer.custom(object())
    assert face.encode(text).ids == want
    assert state(face.pre_tokenizer) == state(hf.pre_tokenizer)
    assert state(face.model) == state(hf.model)
    # Values of the wrong kind: HF's TypeError, word for word.
    wrong = [("model", None), ("normalizer", tokenizers.pre_tokenizers.Digits()), ("decoder", 5)]
    for slot, value in wrong:
        with pytest.raises(TypeError) as ours:
            setattr(face, slot, value)
        with pytest.raises(TypeError) as theirs:
            setattr(hf, slot, value)
        assert str(ours.value) == str(theirs.value)
