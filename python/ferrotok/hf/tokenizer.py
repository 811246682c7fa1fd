"""`ferrotok.hf.Tokenizer`: HuggingFace `tokenizers.Tokenizer`'s commonly used surface on
ferrotok's engine.

Invariant: for a `tokenizer.json` that `ferrotok.Encoding.from_hf` loads, `encode`,
`encode_batch`, `decode` and the vocabulary queries return what `tokenizers` 0.23 returns for
the same arguments: ids, tokens, character offsets (after the post-processor's trimming),
type ids, masks, word ids, sequence ids and overflowing pieces. The model's work (normalizer,
added tokens, pre-tokenizer, BPE) is the engine's `_encode_hf_detail`; what HF does after the
model (truncation, post-processor, padding) is `processors.post_process`, the same steps in the
same order. The components (`normalizer`, `pre_tokenizer`, `model`, `post_processor`,
`decoder`) are HF's objects, and a change made through one reloads the engine
(`components.py`). What this face does not do is refused with an error naming it, never
approximated: `encode_special_tokens=True`, and decoders other than ByteLevel, WordPiece,
Metaspace, BPEDecoder, none (HF joins the tokens with spaces) and SentencePiece's chain
(Replace, ByteFallback, Fuse, Strip) when `tokenizers` is not installed to run them.
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, Union, cast

from . import components, processors
from .encoding import Encoding, unsigned
from .processors import WHITE_SPACE

_WHITE_SPACE_STR = "".join(sorted(WHITE_SPACE))

if TYPE_CHECKING:
    import asyncio

    from ..core import Encoding as CoreEncoding

InputSequence = Union[str, Sequence[str]]
_T = TypeVar("_T")


def _in_executor(fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
    """`fn(*args)` on the running event loop's default executor, as a future of that loop: what
    HF's `async_*` methods return (the core releases the GIL, so calls run side by side). Like
    theirs, it raises RuntimeError where no loop runs."""
    import asyncio

    return asyncio.get_running_loop().run_in_executor(None, fn, *args)


_STRATEGIES = ("longest_first", "only_first", "only_second")


def _check_truncation(strategy: str, direction: str) -> None:
    if strategy not in _STRATEGIES:
        raise ValueError(
            f"Unknown `strategy`: `{strategy}`. Use one of `longest_first`, `only_first`, "
            "or `only_second`"
        )
    if direction not in ("left", "right"):
        raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`")


def _ids(ids: Sequence[int]) -> list[int]:
    """Token ids as HF's `decode` reads them (u32s): TypeError or OverflowError otherwise."""
    out = list(map(operator.index, ids))
    if out and (min(out) < 0 or max(out) >> 32):
        raise OverflowError("a token id does not fit in an unsigned 32-bit int")
    return out


def _serde_name(value: Any) -> str:
    """`"LongestFirst"` -> `"longest_first"` (tokenizer.json spells enums in CamelCase)."""
    out = []
    for i, c in enumerate(str(value)):
        if c.isupper() and i:
            out.append("_")
        out.append(c.lower())
    return "".join(out)


_DECODE_STEPS = ("Replace", "ByteFallback", "Fuse", "Strip")


def _decode_chain(config: Any) -> Callable[[list[str]], str] | None:
    """SentencePiece's decoder (a Sequence of Replace with a string pattern, ByteFallback,
    Fuse and Strip, each step's `decode_chain` as `tokenizers` 0.23 runs it, in the file's
    order, the tokens joined at the end); None for any other decoder."""
    steps = config.get("decoders") if config.get("type") == "Sequence" else None
    if not isinstance(steps, list) or not all(
        isinstance(d, dict) and d.get("type") in _DECODE_STEPS for d in steps
    ):
        return None
    if any(d["type"] == "Replace" and "String" not in (d.get("pattern") or {}) for d in steps):
        return None

    def run(tokens: list[str]) -> str:
        for d in steps:
            kind = d["type"]
            if kind == "Replace":
                pattern, content = d["pattern"]["String"], d["content"]
                if pattern:
                    tokens = [t.replace(pattern, content) for t in tokens]
            elif kind == "ByteFallback":
                tokens = _byte_fallback(tokens)
            elif kind == "Fuse":
                tokens = ["".join(tokens)]
            else:
                tokens = [_strip(t, d["content"], int(d["start"]), int(d["stop"])) for t in tokens]
        return "".join(tokens)

    return run


def _metaspace_prepends(config: dict[str, Any]) -> bool:
    """Whether a `Metaspace` step's `prepend_scheme` (or legacy `add_prefix_space`) puts
    the replacement in front of a text (`always` or `first`, HF's default)."""
    scheme = config.get("prepend_scheme")
    if scheme is None:
        return config.get("add_prefix_space") is not False
    return bool(scheme != "never")


def _metaspace_decode(tokens: list[str], replacement: str, prepends: bool) -> str:
    """HF's `Metaspace` decoder: the replacement a space, but in the first token, where
    every one goes if the scheme puts one in front."""
    out = []
    for i, t in enumerate(tokens):
        out.append(t.replace(replacement, "" if i == 0 and prepends else " "))
    return "".join(out)


def _wordpiece_decode(tokens: list[str], prefix: str, cleanup: bool) -> str:
    """HF's `WordPiece` decoder: each token but the first without `prefix` if it starts
    with it, else after a space; then, token by token, HF's `cleanup`."""
    out = []
    for i, t in enumerate(tokens):
        if i:
            t = t[len(prefix) :] if t.startswith(prefix) else " " + t
        if cleanup:
            for dirty, clean in _WORDPIECE_CLEANUP:
                t = t.replace(dirty, clean)
        out.append(t)
    return "".join(out)


_WORDPIECE_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


def _fallback_byte(token: str) -> int | None:
    """The byte HF's ByteFallback decoder reads from a token: 6 UTF-8 bytes, `<0x`, two chars
    Rust's `u8::from_str_radix(_, 16)` takes (hex digits of either case, or `+` and one), `>`."""
    if len(token.encode()) != 6 or not (token.startswith("<0x") and token.endswith(">")):
        return None
    hex_part = token[3:5]
    digits = hex_part[1:] if hex_part.startswith("+") else hex_part
    if not digits or not all(c in "0123456789abcdefABCDEF" for c in digits):
        return None
    return int(digits, 16)


def _byte_fallback(tokens: list[str]) -> list[str]:
    """HF's ByteFallback: runs of `<0xHH>` tokens as their UTF-8 text, or one U+FFFD a byte
    where the run is not UTF-8."""
    out: list[str] = []
    run = bytearray()

    def flush() -> None:
        if run:
            try:
                out.append(run.decode("utf-8"))
            except UnicodeDecodeError:
                out.extend(["\ufffd"] * len(run))
            run.clear()

    for t in tokens:
        b = _fallback_byte(t)
        if b is None:
            flush()
            out.append(t)
        else:
            run.append(b)
    flush()
    return out


def _strip(token: str, content: str, start: int, stop: int) -> str:
    """HF's Strip: up to `start` leading and `stop` trailing chars that are `content`."""
    a = 0
    while a < min(start, len(token)) and token[a] == content:
        a += 1
    b = len(token)
    while len(token) - b < stop and b > a and token[b - 1] == content:
        b -= 1
    return token[a:b]


def _ws_run(s: str, reverse: bool) -> int:
    """How many of `s`'s first (last) chars are whitespace (Rust's `char::is_whitespace`)."""
    n = 0
    for c in reversed(s) if reverse else s:
        if c not in WHITE_SPACE:
            break
        n += 1
    return n


def _stripped_text(content: str, matched: str, normalize: Callable[[str], str]) -> str:
    """HF's text of a normalized, stripping added token: the normalized text it matched, its
    normalized `content` within the whitespace runs the match covers (normalized: one char a
    whitespace char). `matched` is the original text the match covers, whose middle may
    normalize to more than the content (a decomposed "Å" holds the "a" it matched)."""
    if not content.strip(_WHITE_SPACE_STR):
        # The match is a run of whitespace in the normalized text; the original chars it
        # covers may normalize to more, after it: "¸" is " \u0327" under NFKC, whose space
        # alone a match of spaces takes. The match is the whitespace run they begin with.
        whole = normalize(matched)
        return whole[: _ws_run(whole, False)]
    # The content's own edge whitespace is in the whitespace runs the match covers (or was
    # taken by the match before): the core, then the runs as matched.
    lead, trail = _ws_run(matched, False), _ws_run(matched, True)
    core = content.strip(_WHITE_SPACE_STR)
    return normalize(matched[:lead]) + core + normalize(matched[len(matched) - trail :])


def _batch_items(input: Sequence[Any], is_pretokenized: bool) -> list[tuple[Any, Any]]:
    """A batch's items as (first, second or None): a text or a (text, pair) tuple; with
    `is_pretokenized`, a list of words or a pair of such lists."""
    if isinstance(input, str):
        raise TypeError("encode_batch takes a list of inputs, not a str")
    items: list[tuple[Any, Any]] = []
    for item in input:
        first: Any
        second: Any = None
        if is_pretokenized:
            if (
                isinstance(item, (list, tuple))
                and len(item) == 2
                and all(isinstance(x, (list, tuple)) for x in item)
            ):
                first, second = item
            else:
                first = item
        elif isinstance(item, (list, tuple)):
            if len(item) != 2:
                raise TypeError("a batch item must be a str or a (text, pair) tuple")
            first, second = item
        else:
            first = item
        if first is None:
            raise TypeError("a batch item must be a str or a (text, pair) tuple, not None")
        items.append((first, second))
    return items


class _Component:
    """One component on `Tokenizer`: a read gives HF's object (`components.Live`), whose
    changes, like a value set here, are written into the file and reload the engine."""

    def __init__(self, slot: str) -> None:
        self.slot = slot

    def __get__(self, tok: Tokenizer | None, owner: type | None = None) -> Any:
        if tok is None:
            return self
        obj = components.hf_object(self.slot, tok._config.get(self.slot), tok.to_str)
        if obj is None:
            return None
        return components.Live(partial(tok._set_component, self.slot), obj, obj)

    def __set__(self, tok: Tokenizer, value: Any) -> None:
        tok._set_component(self.slot, value)


class Tokenizer:
    """A `tokenizer.json` model on ferrotok's engine, with `tokenizers.Tokenizer`'s methods."""

    def __init__(self, encoding: CoreEncoding) -> None:
        config = getattr(encoding, "_hf_config", None)
        if not isinstance(config, dict):
            raise TypeError(
                "ferrotok.hf.Tokenizer needs an Encoding loaded from a tokenizer.json "
                "(ferrotok.Encoding.from_hf, or Tokenizer.from_file)"
            )
        self._enc = encoding
        self._config = config
        self._processor = processors.build(config.get("post_processor"))
        self._decoder_config: dict[str, Any] | None = config.get("decoder")
        self._decode_chain = _decode_chain(self._decoder_config or {})
        self._hf_fallback: Any = None
        self.encode_special_tokens = False

        model = config.get("model") or {}
        vocab = model.get("vocab")
        # Unigram's vocabulary is a list of [text, score] pairs: ids are places in it (a text
        # that repeats maps to its last id, as HF's map keeps it).
        listed = vocab if isinstance(vocab, list) else None
        unk_id = model.get("unk_id") if model.get("type") == "Unigram" else None
        self._unigram_unk: int | None = unk_id if isinstance(unk_id, int) else None
        if listed is not None:
            vocab = {str(item[0]): i for i, item in enumerate(listed)}
        if not isinstance(vocab, dict):
            raise ValueError(f"unsupported model {model.get('type')!r}: no token -> id vocabulary")
        self._model_vocab: dict[str, int] = vocab
        self._added: dict[str, int] = {}
        self._special_contents: set[str] = set()
        # Added tokens that take the whitespace beside them (lstrip/rstrip): HF's token text
        # is what they matched, whitespace included.
        self._stripping: set[int] = set()
        # Added tokens matched in the normalized text (`normalized`, under a normalizer): HF's
        # text of each is its normalized content ("ﬁx" is "fix" under NFKC).
        # The engine's own normalizer (the file's, as HF runs it), or None without one.
        core = encoding._core_bpe
        self._normalize: Callable[[str], str] | None = (
            core.hf_normalize if config.get("normalizer") else None
        )
        self._normalized: set[int] = set()
        # The ids are HF's numbering, as the engine made it (not the file's: HF numbers added
        # tokens itself, skips empty ones, and a text in the vocab keeps its vocab id).
        numbered = {text: i for text, i, _ in encoding._core_bpe.hf_added_tokens()}
        for token in config.get("added_tokens") or []:
            content = token["content"]
            i = numbered.get(content)
            if i is None:
                continue
            self._added[content] = i
            if token.get("lstrip") or token.get("rstrip"):
                self._stripping.add(i)
            # (A `ferrotok_verbatim` token is matched as its content is: its text is that.)
            if (
                self._normalize is not None
                and token.get("normalized", True)
                and not token.get("ferrotok_verbatim")
            ):
                self._normalized.add(i)
            if token.get("special"):
                self._special_contents.add(content)
        size = 1 + max([*vocab.values(), *self._added.values()], default=-1)
        id_to_token: list[str | None] = [None] * size
        for token, i in vocab.items():
            id_to_token[i] = token
        for i, item in enumerate(listed or ()):
            id_to_token[i] = str(item[0])
        for token, i in self._added.items():
            # HF's text of a normalized added token's id is its normalized content (what
            # `id_to_token` and the decoder see), though `get_vocab` keeps the content.
            normalize = self._normalize if i in self._normalized else None
            id_to_token[i] = normalize(token) if normalize is not None else token
        self._id_to_token = id_to_token
        # Ids whose text that way is not the model's own (`[UNK]` under Lowercase is `[unk]`),
        # each with the model's text: HF's token is that where the model gives the id (its
        # unknown token), the normalized content where the added token matched.
        model_text = {i: t for t, i in vocab.items()}
        self._shadowed: dict[int, str] = {
            i: model_text[i]
            for i in self._normalized
            if i in model_text and model_text[i] != id_to_token[i]
        }
        # Every id the engine can give has a text; "" fills the gaps (never met).
        self._token_text: list[str] = [t or "" for t in id_to_token]
        # `skip_special_tokens` drops an id whose text is a special token's content, as HF's
        # `is_special_token(id_to_token(id))`: not a normalized special whose text changed.
        contents = self._special_contents
        self._special_ids = {i for i, t in enumerate(id_to_token) if t in contents}

        self._truncation: dict[str, Any] | None = None
        self._padding: dict[str, Any] | None = None
        trunc = config.get("truncation")
        if trunc:
            # As HF reads the file: without `enable_truncation`'s check of the stride.
            strategy = _serde_name(trunc.get("strategy", "LongestFirst"))
            direction = _serde_name(trunc.get("direction", "Right"))
            _check_truncation(strategy, direction)
            self._truncate_with(
                unsigned(trunc["max_length"], 64),
                unsigned(trunc.get("stride", 0), 64),
                strategy,
                direction,
            )
        pad = config.get("padding")
        if pad:
            strategy = pad.get("strategy", "BatchLongest")
            length = strategy["Fixed"] if isinstance(strategy, dict) else None
            self.enable_padding(
                direction=_serde_name(pad.get("direction", "Right")),
                pad_id=int(pad.get("pad_id", 0)),
                pad_type_id=int(pad.get("pad_type_id", 0)),
                pad_token=str(pad.get("pad_token", "[PAD]")),
                length=length,
                pad_to_multiple_of=pad.get("pad_to_multiple_of"),
            )

    # ---- construction ----

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Loads a `tokenizer.json` (or a directory holding one)."""
        from ..core import Encoding as CoreEncoding

        return cls(CoreEncoding.from_hf(path))

    @classmethod
    def from_str(cls, json_str: str) -> Tokenizer:
        """Loads a `tokenizer.json`'s content."""
        from ..core import Encoding as CoreEncoding

        return cls(CoreEncoding._from_hf_json(json_str, "tokenizer"))

    @classmethod
    def from_buffer(cls, buffer: bytes) -> Tokenizer:
        """Loads a `tokenizer.json`'s content from its UTF-8 bytes."""
        return cls.from_str(bytes(buffer).decode("utf-8"))

    @classmethod
    def from_pretrained(
        cls, identifier: str, revision: str = "main", token: str | None = None
    ) -> Tokenizer:
        """The `tokenizer.json` of a model on the Hugging Face Hub, as HF's `from_pretrained`
        finds it: through `huggingface_hub` (its cache, which `HF_HUB_OFFLINE=1` keeps to,
        else a download), which must be installed."""
        try:
            from huggingface_hub import hf_hub_download
        except ImportError as e:
            raise ImportError(
                "Tokenizer.from_pretrained needs huggingface_hub (pip install huggingface_hub); "
                "Tokenizer.from_file reads a local tokenizer.json"
            ) from e
        path = hf_hub_download(identifier, "tokenizer.json", revision=revision, token=token)
        return cls.from_file(path)

    @classmethod
    def from_encoding(cls, encoding: CoreEncoding) -> Tokenizer:
        """The HF face of any ferrotok Encoding (an OpenAI one, a trained one): through its
        `to_hf` export when it was not loaded from a tokenizer.json."""
        if isinstance(getattr(encoding, "_hf_config", None), dict):
            return cls(encoding)
        from .export import hf_config

        return cls.from_str(json.dumps(hf_config(encoding), ensure_ascii=False))

    @property
    def encoding(self) -> CoreEncoding:
        """The ferrotok `Encoding` underneath (tiktoken's face of the same model)."""
        return self._enc

    def to_str(self, pretty: bool = False) -> str:
        return json.dumps(self._file(), ensure_ascii=False, indent=2 if pretty else None)

    def _file(self) -> dict[str, Any]:
        """The `tokenizer.json` of this tokenizer as it is now (a new dict, its values shared)."""
        config = dict(self._config)
        config["truncation"] = self._truncation_json()
        config["padding"] = self._padding_json()
        return config

    def save(self, path: str, pretty: bool = True) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_str(pretty))

    # ---- encoding ----

    def _model_encoding(self, sequence: Any, is_pretokenized: bool, type_id: int) -> Encoding:
        """The model's output for one sequence (`type_id`: 0, or 1 for a pair's second)."""
        if is_pretokenized:
            if isinstance(sequence, str) or not isinstance(sequence, (list, tuple)):
                raise TypeError("a pre-tokenized input must be a list or tuple of str")
            out = Encoding([], [], [], [], [], [], [])
            for i, word in enumerate(sequence):
                if not isinstance(word, str):
                    raise TypeError(
                        f"a pre-tokenized word must be a str, got {type(word).__name__}"
                    )
                ids, tokens, offsets, _ = self._detail(word)
                part = Encoding.from_model(ids, tokens, offsets, [i] * len(ids), type_id)
                out.merge_with(part, False)
            return out
        if not isinstance(sequence, str):
            raise TypeError(f"TextInputSequence must be str, got {type(sequence).__name__}")
        return Encoding.from_model(*self._detail(sequence), type_id)

    def _detail(
        self, text: str
    ) -> tuple[list[int], list[str], list[tuple[int, int]], list[int | None]]:
        """The model's (ids, tokens, char offsets, word ids) for `text`, new lists, each token
        its text as HF gives it."""
        return self._fixed(text, *self._enc._encode_hf_face(text, self._token_text))

    def _fixed(
        self,
        text: str,
        ids: list[int],
        tokens: list[str],
        offsets: list[tuple[int, int]],
        word_ids: list[int],
    ) -> tuple[list[int], list[str], list[tuple[int, int]], list[int | None]]:
        """The core's face of `text` (`_encode_hf_face`) with the tokens whose HF text is not
        their id's (the text they matched) put right, in place."""
        # An id the model gave, not the added token's match (see `_shadowed`).
        shadowed = self._shadowed
        normalize = self._normalize
        if shadowed and normalize is not None and not shadowed.keys().isdisjoint(ids):
            for k, t in enumerate(ids):
                own = shadowed.get(t)
                if own is None:
                    continue
                start, end = offsets[k]
                matched = normalize(text[start:end])
                is_match = tokens[k] in matched if t in self._stripping else tokens[k] == matched
                if not is_match:
                    tokens[k] = own
        # A Unigram model's unknown piece is, to HF, the (normalized) text it covers.
        if self._unigram_unk is not None and self._unigram_unk in ids:
            for k, piece in self._enc._core_bpe.encode_hf_unknown_texts(text):
                tokens[k] = piece
        # A normalized added token matched its normalized content, its id's text; only a
        # stripping one's text differs from its id's (the whitespace it took). Most texts hold
        # none: one pass in C decides it.
        stripping = self._stripping
        if stripping and not stripping.isdisjoint(ids):
            for k, t in enumerate(ids):
                if t in stripping and tokens[k] != shadowed.get(t):
                    start, end = offsets[k]
                    matched = text[start:end]
                    if t in self._normalized and self._normalize is not None:
                        tokens[k] = _stripped_text(tokens[k], matched, self._normalize)
                    elif tokens[k] in matched:
                        tokens[k] = matched
        # The model gives every token a word; an Encoding's list also holds None (the tokens a
        # template adds).
        return ids, tokens, offsets, cast("list[int | None]", word_ids)

    def _check_mode(self) -> None:
        if self.encode_special_tokens:
            raise NotImplementedError(
                "ferrotok.hf.Tokenizer does not implement encode_special_tokens=True "
                "(special tokens' texts split as ordinary text)"
            )

    def encode(
        self,
        sequence: InputSequence,
        pair: InputSequence | None = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> Encoding:
        """Encodes a text (or a pair of texts) as HF does, with truncation and padding set."""
        self._check_mode()
        first = self._model_encoding(sequence, is_pretokenized, 0)
        second = None if pair is None else self._model_encoding(pair, is_pretokenized, 1)
        return processors.post_process(
            self._processor, first, second, add_special_tokens, self._truncation, self._padding
        )

    def encode_batch(
        self,
        input: Sequence[Any],
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> list[Encoding]:
        """Encodes a batch; each item a text or a (text, pair) tuple; padded as a batch."""
        items = _batch_items(input, is_pretokenized)
        # Each text with its type id (a pair's second: 1).
        slots = [(t, k) for item in items for k, t in enumerate(item) if t is not None]
        texts = [t for t, _ in slots]
        if texts and not is_pretokenized and all(isinstance(t, str) for t in texts):
            # Every text of the batch through the core in one call, on its threads.
            self._check_mode()
            faces = iter(self._enc._encode_hf_face_batch(texts, self._token_text))
            models = (Encoding.from_model(*self._fixed(t, *next(faces)), k) for t, k in slots)
            return self._post_process_batch(items, models, add_special_tokens)
        out = [self.encode(a, b, is_pretokenized, add_special_tokens) for a, b in items]
        if self._padding is not None:
            processors.pad_batch(out, self._padding)
        return out

    def encode_batch_fast(
        self,
        input: Sequence[Any],
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> list[Encoding]:
        """`encode_batch` as HF's fast path gives it: the same ids, masks, sequence ids and
        overflowing pieces, but the text's own tokens without offsets ((0, 0)), words (None)
        or texts (""); the tokens a template or padding adds keep their texts. As there, the
        model's tokens all get type id 0, a pair's second too: the template's `$B:1` gives
        them 1, but its overflowing pieces keep 0s where HF's do. A batch of texts takes the
        core's ids alone, with no offsets worked out."""
        self._check_mode()
        items = _batch_items(input, is_pretokenized)
        texts = [t for item in items for t in item if t is not None]
        if texts and not is_pretokenized and all(isinstance(t, str) for t in texts):
            rows = self._enc.encode_batch(texts, allowed_special="all")
        else:
            rows = [self._model_encoding(t, is_pretokenized, 0).ids for t in texts]
        models = (
            Encoding.from_model(ids, [""] * len(ids), [(0, 0)] * len(ids), [None] * len(ids))
            for ids in rows
        )
        return self._post_process_batch(items, models, add_special_tokens)

    def _post_process_batch(
        self,
        items: list[tuple[Any, Any]],
        models: Iterator[Encoding],
        add_special_tokens: bool,
    ) -> list[Encoding]:
        """The batch's items from the model's encodings of their texts, in order,
        post-processed and padded as a batch."""
        out = []
        for _, second in items:
            a = next(models)
            b = None if second is None else next(models)
            out.append(
                processors.post_process(
                    self._processor, a, b, add_special_tokens, self._truncation, self._padding
                )
            )
        if self._padding is not None:
            processors.pad_batch(out, self._padding)
        return out

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        return self._processor.added_tokens(is_pair) if self._processor is not None else 0

    def post_process(
        self, encoding: Encoding, pair: Encoding | None = None, add_special_tokens: bool = True
    ) -> Encoding:
        return processors.post_process(
            self._processor,
            encoding.copy(),
            None if pair is None else pair.copy(),
            add_special_tokens,
            self._truncation,
            self._padding,
        )

    # ---- truncation and padding (tokenizers' methods and properties) ----

    def enable_truncation(
        self,
        max_length: int,
        stride: int = 0,
        strategy: str = "longest_first",
        direction: str = "right",
    ) -> None:
        _check_truncation(strategy, direction)
        max_length, stride = unsigned(max_length, 64), unsigned(stride, 64)
        # HF's `with_truncation` refuses a stride the single template leaves no room for
        # (its length less the template's tokens, in usize: under 0 it wraps, and passes).
        added = self.num_special_tokens_to_add(False)
        if added <= max_length < added + stride:
            raise ValueError(
                f"tokenizer stride set to {stride}, which is greater than or equal to its "
                f"effective max length of {max_length - added} (= {max_length} original max "
                f"length - {added} added special tokens)"
            )
        self._truncate_with(max_length, stride, strategy, direction)

    def _truncate_with(self, max_length: int, stride: int, strategy: str, direction: str) -> None:
        self._truncation = {
            "max_length": max_length,
            "stride": stride,
            "strategy": strategy,
            "direction": direction,
        }

    def no_truncation(self) -> None:
        self._truncation = None

    @property
    def truncation(self) -> dict[str, Any] | None:
        return None if self._truncation is None else dict(self._truncation)

    def enable_padding(
        self,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
        length: int | None = None,
        pad_to_multiple_of: int | None = None,
    ) -> None:
        if direction not in ("left", "right"):
            raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`")
        if not isinstance(pad_token, str):
            raise TypeError(f"pad_token must be a str, not {type(pad_token).__name__}")
        self._padding = {
            "length": None if length is None else unsigned(length, 64),
            "pad_to_multiple_of": (
                None if pad_to_multiple_of is None else unsigned(pad_to_multiple_of, 64)
            ),
            "pad_id": unsigned(pad_id, 32),
            "pad_token": pad_token,
            "pad_type_id": unsigned(pad_type_id, 32),
            "direction": direction,
        }

    def no_padding(self) -> None:
        self._padding = None

    @property
    def padding(self) -> dict[str, Any] | None:
        return None if self._padding is None else dict(self._padding)

    def _truncation_json(self) -> dict[str, Any] | None:
        t = self._truncation
        if t is None:
            return None
        return {
            "direction": t["direction"].capitalize(),
            "max_length": t["max_length"],
            "strategy": "".join(w.capitalize() for w in t["strategy"].split("_")),
            "stride": t["stride"],
        }

    def _padding_json(self) -> dict[str, Any] | None:
        p = self._padding
        if p is None:
            return None
        return {
            "strategy": "BatchLongest" if p["length"] is None else {"Fixed": p["length"]},
            "direction": p["direction"].capitalize(),
            "pad_to_multiple_of": p["pad_to_multiple_of"],
            "pad_id": p["pad_id"],
            "pad_type_id": p["pad_type_id"],
            "pad_token": p["pad_token"],
        }

    # ---- decoding ----

    def _kept(self, ids: Sequence[int], skip_special_tokens: bool) -> list[int]:
        n = len(self._id_to_token)
        table = self._id_to_token
        special = self._special_ids if skip_special_tokens else ()
        return [i for i in _ids(ids) if i < n and table[i] is not None and i not in special]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of `ids` through the file's decoder (unknown ids are dropped, as HF does)."""
        decoder = self._decoder_config
        if decoder is not None and decoder.get("type") == "ByteLevel":
            # Each id's bytes as ByteLevel's decoder reads its token (the engine's decoding:
            # a token in the ByteLevel alphabet is those bytes, an added token's text its UTF-8).
            kept = self._kept(ids, skip_special_tokens)
            return self._enc.decode_bytes(kept).decode("utf-8", errors="replace")
        if decoder is None:
            kept = self._kept(ids, skip_special_tokens)
            return " ".join(self._id_to_token[i] or "" for i in kept)
        if self._decode_chain is not None:
            kept = self._kept(ids, skip_special_tokens)
            return self._decode_chain([self._id_to_token[i] or "" for i in kept])
        if decoder.get("type") == "Metaspace":
            kept = self._kept(ids, skip_special_tokens)
            return _metaspace_decode(
                [self._id_to_token[i] or "" for i in kept],
                str(decoder.get("replacement", "\u2581")),
                _metaspace_prepends(decoder),
            )
        if decoder.get("type") == "BPEDecoder":
            # The suffix a space after every token but the last, where it goes.
            kept = self._kept(ids, skip_special_tokens)
            suffix = str(decoder.get("suffix", "</w>"))
            tokens = [self._id_to_token[i] or "" for i in kept]
            return "".join(
                t.replace(suffix, " " if i < len(tokens) - 1 else "") for i, t in enumerate(tokens)
            )
        if decoder.get("type") == "WordPiece":
            kept = self._kept(ids, skip_special_tokens)
            return _wordpiece_decode(
                [self._id_to_token[i] or "" for i in kept],
                str(decoder.get("prefix", "##")),
                bool(decoder.get("cleanup", True)),
            )
        return str(
            self._fallback("decoder").decode(_ids(ids), skip_special_tokens=skip_special_tokens)
        )

    def decode_batch(
        self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True
    ) -> list[str]:
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    # ---- HF's async methods: the same calls, awaited on the event loop's executor ----

    def async_encode(
        self,
        sequence: InputSequence,
        pair: InputSequence | None = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> asyncio.Future[Encoding]:
        """`await tok.async_encode(text)`: `encode` off the event loop's thread. Its offsets
        are `encode`'s, in chars, as HF's docstring says (HF 0.23 gives bytes here, a bug
        huggingface/tokenizers#2369 fixes).

        >>> import asyncio, ferrotok.hf
        >>> tok = ferrotok.hf.Tokenizer.from_encoding(ferrotok.get_encoding("gpt2"))
        >>> async def main():
        ...     return (await tok.async_encode("hello world")).ids
        >>> asyncio.run(main())
        [31373, 995]
        """
        return _in_executor(self.encode, sequence, pair, is_pretokenized, add_special_tokens)

    def async_encode_batch(
        self, input: Sequence[Any], is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> asyncio.Future[list[Encoding]]:
        """`encode_batch` off the event loop's thread."""
        return _in_executor(self.encode_batch, input, is_pretokenized, add_special_tokens)

    def async_encode_batch_fast(
        self, input: Sequence[Any], is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> asyncio.Future[list[Encoding]]:
        """`encode_batch_fast` off the event loop's thread."""
        return _in_executor(self.encode_batch_fast, input, is_pretokenized, add_special_tokens)

    def async_decode_batch(
        self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True
    ) -> asyncio.Future[list[str]]:
        """`decode_batch` off the event loop's thread."""
        return _in_executor(self.decode_batch, sequences, skip_special_tokens)

    def _fallback(self, what: str) -> Any:
        """HF `tokenizers` itself, for a component this face does not run natively."""
        if self._hf_fallback is None:
            try:
                import tokenizers
            except ImportError as e:
                kind = (self._decoder_config or {}).get("type")
                raise NotImplementedError(
                    f"ferrotok.hf runs the {what} {kind!r} through HuggingFace tokenizers, "
                    "which is not installed"
                ) from e
            self._hf_fallback = tokenizers.Tokenizer.from_str(json.dumps(self._config))
        return self._hf_fallback

    # ---- vocabulary ----

    def add_tokens(self, tokens: Sequence[Any]) -> int:
        """Adds tokens (str or `tokenizers.AddedToken`) as HF does; returns how many were new.

        HF `tokenizers` itself decides the ids and matching flags (it must be installed); the
        engine is then rebuilt from the new file."""
        return self._add("add_tokens", tokens)

    def add_special_tokens(self, tokens: Sequence[Any]) -> int:
        """Adds special tokens as HF does; returns how many were new."""
        return self._add("add_special_tokens", tokens)

    def _add(self, method: str, tokens: Sequence[Any]) -> int:
        import tokenizers

        from .export import ferrotok_only

        why = ferrotok_only(self._config)
        if why:
            # HF's file would drop ferrotok's own keys, and with them what they say.
            raise NotImplementedError(f"{method} through HF: this tokenizer {why}")
        hf = tokenizers.Tokenizer.from_str(self.to_str())
        added = int(getattr(hf, method)(tokens))
        self._reload(hf.to_str())
        return added

    def _reload(self, json_str: str) -> None:
        """This tokenizer made anew from `json_str` (its settings kept); left as it was if
        the engine refuses the file."""
        rebuilt = Tokenizer.from_str(json_str)
        rebuilt.encode_special_tokens = self.encode_special_tokens
        self.__dict__.update(rebuilt.__dict__)

    # ---- components (`components.py`): HF's objects; a change reloads the engine ----

    normalizer = _Component("normalizer")
    pre_tokenizer = _Component("pre_tokenizer")
    model = _Component("model")
    post_processor = _Component("post_processor")
    decoder = _Component("decoder")

    def _set_component(self, slot: str, value: Any) -> None:
        config = self._file()
        config[slot] = components.state_of(slot, value)
        self._reload(json.dumps(config, ensure_ascii=False))

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        vocab = dict(self._model_vocab)
        if with_added_tokens:
            vocab.update(self._added)
        return vocab

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        if with_added_tokens:
            return len(self.get_vocab(True))
        return len(self._model_vocab)

    def token_to_id(self, token: str) -> int | None:
        found = self._added.get(token)
        return found if found is not None else self._model_vocab.get(token)

    def id_to_token(self, id: int) -> str | None:
        id = unsigned(id, 32)
        if id < len(self._id_to_token):
            return self._id_to_token[id]
        return None

    def get_added_tokens_decoder(self) -> dict[int, Any]:
        """Added tokens by id, as `tokenizers.AddedToken` objects (needs `tokenizers`)."""
        import tokenizers

        out = {}
        for token in self._config.get("added_tokens") or []:
            out[int(token["id"])] = tokenizers.AddedToken(
                token["content"],
                single_word=bool(token.get("single_word", False)),
                lstrip=bool(token.get("lstrip", False)),
                rstrip=bool(token.get("rstrip", False)),
                normalized=bool(token.get("normalized", True)),
                special=bool(token.get("special", False)),
            )
        return out

    def __repr__(self) -> str:
        return f"<ferrotok.hf.Tokenizer {self._enc.name!r}>"
