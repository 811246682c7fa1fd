"""`Encoding`: tiktoken's API over ferrotok's Rust encoder.

Every public name, argument, default, return type and exception matches tiktoken 0.14's
`tiktoken.Encoding`, so code written for tiktoken keeps working after one import changes.
The road a string takes: special-token check (here, in Python, so the error names the token)
→ Rust: special-token split → pattern split → merge-rank BPE per piece → ids.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import re
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

from . import _core

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt



def _untracked_merges(config: dict[str, Any]) -> None:
    """Makes the model's merge pairs tuples, in place (JSON writes them back as arrays).

    Why: a tokenizer.json lists its merges as a JSON array of `[left, right]` arrays, which
    `json.loads` makes into hundreds of thousands of lists; lists are always tracked by the
    garbage collector, so each full collection walks them all, in every process that keeps
    the encoding (a tenth of the encode time of short texts). Tuples of strings are untracked
    at the first collection they meet.
    """
    model = config.get("model")
    if isinstance(model, dict) and isinstance(model.get("merges"), list):
        model["merges"] = [tuple(m) if isinstance(m, list) else m for m in model["merges"]]

class Encoding:
    # Set by `_setup`; a `tokenizer.json` encoding keeps the file's text, and its parsed dict
    # once asked for (`_hf_config`).
    _hf_json: str | None
    _hf_strip: int
    _hf_first: dict[int, tuple[bytes, int]] | None
    _hf_last: dict[int, tuple[bytes, int]] | None
    _hf_decodes: bool
    _hf_config_parsed: dict[str, Any] | None
    # Set by `from_sentencepiece` (`sp_model.Front`): where sentencepiece's decoding drops
    # leading spaces, which no tokenizer.json decoder says.
    _sp_front: tuple[bool, int | None, int, frozenset[int]] | None

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> None:
        """Creates an Encoding from a pattern, merge ranks and special tokens.

        Args:
            name: the encoding's name; encodings with different special tokens should have
                different names.
            pat_str: the regex that cuts text into pieces before BPE.
            mergeable_ranks: token bytes -> rank; the rank is the merge priority.
            special_tokens: special token text -> id.
            explicit_n_vocab: if given, checked to equal the number of tokens.

        >>> enc = Encoding("tiny", pat_str=r"\\S+|\\s+",
        ...                mergeable_ranks={bytes([i]): i for i in range(256)},
        ...                special_tokens={})
        >>> enc.encode("hi")
        [104, 105]
        """
        if not mergeable_ranks:
            raise ValueError("mergeable_ranks is empty: an encoding needs at least one token")
        core = _core.CoreBPE(mergeable_ranks, list(special_tokens.items()), pat_str)
        self._setup(name, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab, core)

    @classmethod
    def _from_tiktoken_contents(
        cls,
        name: str,
        *,
        contents: bytes,
        source: str,
        pat_str: str,
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> Encoding:
        """An Encoding from a `.tiktoken` file's bytes, parsed in Rust.

        `_mergeable_ranks` is then built only if something reads it: a cold `get_encoding`
        does not pay for a Python dict of every token.
        """
        core = _core.CoreBPE.from_tiktoken(contents, source, list(special_tokens.items()), pat_str)
        self = cls.__new__(cls)
        self._setup(name, pat_str, None, special_tokens, explicit_n_vocab, core)
        return self

    @classmethod
    def from_hf(cls, path: str | os.PathLike[str]) -> Encoding:
        """The encoding of a HuggingFace `tokenizer.json` (a file, or a directory holding one).

        Ids are HuggingFace `tokenizers`' for the same file (`encode(text,
        add_special_tokens=False).ids`); the file's special added tokens are special tokens
        here, as tiktoken treats them. A file with a component ferrotok does not implement
        is refused with a `ValueError` naming it.
        """
        from .hf_json import read_hf

        return cls._from_hf_json(*read_hf(path))

    @classmethod
    def from_sentencepiece(cls, path: str | os.PathLike[str]) -> Encoding:
        """The encoding of a SentencePiece `.model` file (or a directory holding a
        `tokenizer.model`), with `sentencepiece`'s ids.

        `encode_ordinary(text)` is `SentencePieceProcessor(model_file=path).encode(text)`;
        control pieces are special tokens, and `add_special_tokens=True` puts the BOS piece
        in front as HF's Llama files do. BPE models load (Llama's, Mistral's and Gemma's
        layouts, sentencepiece's defaults), and Unigram models; a file with anything else (a
        char model, ...) is refused with a `ValueError` naming it (`ferrotok.sp_model` says
        which).
        """
        from .sp_model import read_model

        text, name, front = read_model(path)
        enc = cls._from_hf_json(text, name)
        enc._set_sp_front(front)
        return enc

    def _set_sp_front(self, front: tuple[bool, int | None, int, frozenset[int]] | None) -> None:
        """Decodes as sentencepiece does (`front`: what `read_model` gives for it), where
        `front` is set: the file's own decoder is not sentencepiece's."""
        if front is not None:
            self._sp_front = front
            self._hf_decodes = True

    @classmethod
    def from_tekken(cls, path: str | os.PathLike[str]) -> Encoding:
        """The encoding of Mistral's `tekken.json`, with `mistral_common`'s Tekkenizer's ids.

        `encode_ordinary(text)` is the Tekkenizer's `encode(text, bos=False, eos=False)`, and
        `add_special_tokens=True` puts `<s>` in front; its special tokens (`[INST]`, ...) are
        special tokens here, as tiktoken treats them (`ferrotok.tekken` says how the file is
        read).
        """
        from .tekken import read_tekken

        args = read_tekken(path)
        bos = args.pop("bos")
        enc = cls(**args)
        if bos is not None:
            enc._hf_template = ([bos], [])
        return enc

    @classmethod
    def _from_hf_json(cls, text: str, name: str) -> Encoding:
        """The encoding of a `tokenizer.json`'s text (see `from_hf`).

        Only Rust parses the file here; the Python dict of the whole file (`_hf_config`, for
        the HF face and `to_hf`) is made at its first use, as it costs more to make than
        the encoder and takes tens of MB for a large vocabulary.
        """
        import json

        from .hf_json import single_template

        core = _core.CoreBPE.from_hf_json(text)
        # The ids HF gives the added tokens when it loads the file (not the file's `id`s).
        special_tokens = {t: i for t, i, special in core.hf_added_tokens() if special}
        enc = cls.__new__(cls)
        enc._setup(name, "", None, special_tokens, None, core)
        enc._hf_json = text
        enc._hf_strip = core.hf_decode_strip()
        enc._hf_first = {i: (first, own) for i, first, own in core.hf_decode_first()} or None
        enc._hf_last = {i: (last, own) for i, last, own in core.hf_decode_last()} or None
        enc._hf_decodes = bool(enc._hf_strip or enc._hf_first or enc._hf_last)
        enc._hf_template = single_template(json.loads(core.hf_post_processor() or "null"))
        return enc

    @property
    def _hf_config(self) -> dict[str, Any] | None:
        """The parsed `tokenizer.json` this encoding was loaded from (`None` for others)."""
        if self._hf_config_parsed is None and self._hf_json is not None:
            import json

            config: dict[str, Any] = json.loads(self._hf_json)
            _untracked_merges(config)
            self._hf_config_parsed = config
        return self._hf_config_parsed

    def _setup(
        self,
        name: str,
        pat_str: str,
        mergeable_ranks: dict[bytes, int] | None,
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None,
        core: _core.CoreBPE,
    ) -> None:
        self.name = name
        self._pat_str = pat_str
        self._ranks = mergeable_ranks
        self._special_tokens = special_tokens
        self._core_bpe = core
        # Set by `from_hf`: the ids a post-processor puts around a text, and the file.
        self._hf_template: tuple[list[int], list[int]] = ([], [])
        self._sp_front = None
        self._hf_config_parsed = None
        self._hf_json = None
        # Leading spaces the file's decoder strips from a decoded text (SentencePiece's `Strip`
        # takes away the space its normalizer put in front), so `decode(encode(s)) == s`.
        self._hf_strip = 0
        # Ids the file's decoder decodes otherwise when they come first (WordPiece's keeps a
        # first token's `##`, Metaspace's drops every `▁` of it): id -> (its bytes then, the
        # length of its bytes elsewhere).
        self._hf_first = None
        # And when they come last (a BPEDecoder drops the last token's suffix, where it makes
        # the others' a space).
        self._hf_last = None
        # Whether any of the three applies: decoding then goes through `_hf_decoded`.
        self._hf_decodes = False
        max_rank = core.max_ordinary_rank()
        if max_rank is None:
            raise ValueError("mergeable_ranks is empty: an encoding needs at least one token")
        # Every id with bytes counts, decode-only ones too (`from_hf`'s non-special added
        # tokens outside the model's vocab, which the special tokens do not list).
        self.max_token_value = max(
            core.max_token_id() or max_rank, max(special_tokens.values(), default=0)
        )
        if explicit_n_vocab:
            assert core.n_ordinary() + len(special_tokens) == explicit_n_vocab
            assert self.max_token_value == explicit_n_vocab - 1
        # Membership in a set is much faster than in dict values.
        self._special_token_values = set(special_tokens.values())

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> rank (tiktoken's attribute; built from Rust on first use)."""
        if self._ranks is None:
            self._ranks = self._core_bpe.mergeable_ranks()
        return self._ranks

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ====================
    # Encoding
    # ====================

    def encode_ordinary(self, text: str) -> list[int]:
        """Encodes a string into tokens, ignoring special tokens.

        Equivalent to `encode(text, disallowed_special=())`, but faster.

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode_ordinary("hello world")
        [15339, 1917]
        """
        try:
            return self._core_bpe.encode_ordinary(text)
        except UnicodeEncodeError:
            return self._core_bpe.encode_ordinary(_fix_surrogates(text))

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
        add_special_tokens: bool = False,
    ) -> list[int]:
        """Encodes a string into tokens.

        Text that spells a special token raises `ValueError` unless the token is in
        `allowed_special` (then it becomes the special token) or not in
        `disallowed_special` (then it is encoded as ordinary text).

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode("hello world")
        [15339, 1917]
        >>> enc.encode("<|endoftext|>", allowed_special="all")
        [100257]
        >>> enc.encode("<|endoftext|>", disallowed_special=())
        [27, 91, 8862, 728, 428, 91, 29]

        `add_special_tokens=True` puts the ids of a HuggingFace tokenizer's post-processor
        template around the text (its BOS/EOS); for other encodings it changes nothing.
        """
        if add_special_tokens and self._hf_template != ([], []):
            before, after = self._hf_template
            inner = self.encode(
                text, allowed_special=allowed_special, disallowed_special=disallowed_special
            )
            return before + inner + after
        if not allowed_special and disallowed_special == "all" and allowed_special.__class__ is set:
            # The default call (with a set: an empty list or None is tiktoken's TypeError,
            # raised below). Where no special token's text occurs, it is encode_ordinary;
            # Rust finds that out in one pass, without the Python regex search below (on a
            # short text, that search and its set-up would cost as much as the encoding).
            try:
                ids = self._core_bpe.encode_unless_special(text)
            except UnicodeEncodeError:
                ids = None  # lone surrogates: the general path below handles them
            if ids is not None:
                return ids
        allowed = self._check_special(text, allowed_special, disallowed_special)
        try:
            return self._core_bpe.encode(text, allowed)
        except UnicodeEncodeError:
            # Lone surrogates cannot be UTF-8: tiktoken replaces them (and joins valid
            # surrogate pairs) before encoding, and so do we, to give the same ids.
            return self._core_bpe.encode(_fix_surrogates(text), allowed)

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
        add_special_tokens: bool = False,
    ) -> npt.NDArray[np.uint32]:
        """Encodes a string into a `numpy.uint32` array (the encoder's buffer, not a copy).

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode_to_numpy("hello world").tolist()
        [15339, 1917]
        """
        # No retry with lone surrogates replaced, unlike `encode`: tiktoken's raises
        # `UnicodeEncodeError` for them here.
        if not disallowed_special and allowed_special == _NO_SPECIAL and not add_special_tokens:
            # Nothing to allow or check: `encode_ordinary`'s ids (the common call of a data
            # pipeline, `disallowed_special=()`), without the per-call set handling.
            return self._core_bpe.encode_ordinary_to_numpy(text)
        allowed = self._check_special(text, allowed_special, disallowed_special)
        ids = self._core_bpe.encode_to_numpy(text, allowed)
        if add_special_tokens and self._hf_template != ([], []):
            import numpy as np

            before, after = self._hf_template
            ids = np.concatenate(
                [np.asarray(before, np.uint32), ids, np.asarray(after, np.uint32)]
            )
        return ids

    def encode_ordinary_batch(self, text: list[str], *, num_threads: int = 8) -> list[list[int]]:
        """Encodes a list of strings into tokens, in parallel on Rust threads, ignoring specials.

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode_ordinary_batch(["hello world", "goodbye world"])
        [[15339, 1917], [19045, 29474, 1917]]
        """
        texts, num_threads = _batch_args(text, num_threads)
        try:
            return self._core_bpe.encode_ordinary_batch(texts, num_threads)
        except UnicodeEncodeError:  # lone surrogates: tiktoken's replacements
            return self._core_bpe.encode_ordinary_batch(_fixed_surrogates(texts), num_threads)

    def encode_batch(
        self,
        text: list[str],
        *,
        num_threads: int = 8,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
        add_special_tokens: bool = False,
    ) -> list[list[int]]:
        """Encodes a list of strings into tokens, in parallel on Rust threads.

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode_batch(["hello world", "goodbye world"])
        [[15339, 1917], [19045, 29474, 1917]]
        """
        texts, num_threads = _batch_args(text, num_threads)
        _check_disallowed_iterable(disallowed_special)
        allowed = self._check_special_batch(texts, allowed_special, disallowed_special)
        try:
            lists = self._core_bpe.encode_batch(texts, allowed, num_threads)
        except UnicodeEncodeError:  # lone surrogates: tiktoken's replacements
            lists = self._core_bpe.encode_batch(_fixed_surrogates(texts), allowed, num_threads)
        if add_special_tokens and self._hf_template != ([], []):
            before, after = self._hf_template
            lists = [before + ids + after for ids in lists]
        return lists

    def encode_batch_to_numpy(
        self,
        text: list[str],
        *,
        num_threads: int = 8,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """Encodes a batch into one flat `uint32` id array and `int64` offsets (ferrotok only).

        `ids[offsets[i]:offsets[i + 1]]` are the ids of `text[i]`; no Python list per text.

        >>> enc = get_encoding("cl100k_base")
        >>> ids, offsets = enc.encode_batch_to_numpy(["hello world", "goodbye world"])
        >>> ids.tolist(), offsets.tolist()
        ([15339, 1917, 19045, 29474, 1917], [0, 2, 5])
        """
        texts, num_threads = _batch_args(text, num_threads)
        _check_disallowed_iterable(disallowed_special)
        allowed = self._check_special_batch(texts, allowed_special, disallowed_special)
        try:
            return self._core_bpe.encode_batch_to_numpy(texts, allowed, num_threads)
        except UnicodeEncodeError:  # lone surrogates: tiktoken's replacements
            return self._core_bpe.encode_batch_to_numpy(
                _fixed_surrogates(texts), allowed, num_threads
            )

    def encode_ordinary_batch_to_numpy(
        self, text: list[str], *, num_threads: int = 8
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """`encode_batch_to_numpy` ignoring special tokens (ferrotok only).

        >>> enc = get_encoding("cl100k_base")
        >>> enc.encode_ordinary_batch_to_numpy(["hi", "<|endoftext|>"])[1].tolist()
        [0, 1, 8]
        """
        texts, num_threads = _batch_args(text, num_threads)
        try:
            return self._core_bpe.encode_batch_to_numpy(texts, set(), num_threads)
        except UnicodeEncodeError:  # lone surrogates: tiktoken's replacements
            return self._core_bpe.encode_batch_to_numpy(
                _fixed_surrogates(texts), set(), num_threads
            )

    def count(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> int:
        """`len(encode(text, ...))` without building the list (ferrotok only).

        >>> get_encoding("cl100k_base").count("hello world")
        2
        """
        allowed = self._check_special(text, allowed_special, disallowed_special)
        try:
            return self._core_bpe.count(text, allowed)
        except UnicodeEncodeError:
            return self._core_bpe.count(_fix_surrogates(text), allowed)

    def count_batch(
        self,
        text: list[str],
        *,
        num_threads: int = 8,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> list[int]:
        """Token counts of a batch, on Rust threads (ferrotok only).

        >>> get_encoding("cl100k_base").count_batch(["hello world", "goodbye world"])
        [2, 3]
        """
        texts, num_threads = _batch_args(text, num_threads)
        _check_disallowed_iterable(disallowed_special)
        allowed = self._check_special_batch(texts, allowed_special, disallowed_special)
        try:
            return self._core_bpe.count_batch(texts, allowed, num_threads)
        except UnicodeEncodeError:  # lone surrogates: tiktoken's replacements
            return self._core_bpe.count_batch(_fixed_surrogates(texts), allowed, num_threads)

    def build_tables(self) -> None:
        """Builds now the tables that encoding otherwise builds at its first need (ferrotok only).

        Call it before forking workers (a PyTorch `DataLoader` on Linux, a `multiprocessing`
        pool with `fork`): the workers then share the tables with this process instead of
        each building its own (for o200k_base, about 45 ms, and half a worker's private
        memory after its first megabyte; see docs/fork-safety.md).

        >>> enc = get_encoding("o200k_base")
        >>> enc.build_tables()
        >>> enc.encode_ordinary("hello world")
        [24912, 2375]
        """
        self._core_bpe.build_tables()

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = set(),  # noqa: B006
        disallowed_special: Literal["all"] | Collection[str] = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """Encodes a string into stable tokens and possible completion sequences.

        The last piece of text may merge with what comes after it; this returns the tokens
        that cannot change, and every sequence the rest could become.

        >>> enc = get_encoding("cl100k_base")
        >>> stable, completions = enc.encode_with_unstable("hello fanta")
        >>> stable
        [15339]
        """
        allowed = self._check_special(text, allowed_special, disallowed_special)
        return self._core_bpe.encode_with_unstable(text, allowed)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """Encodes text corresponding to a single token to its token value.

        Special tokens are encoded too. Raises `KeyError` if it is not one token.

        >>> get_encoding("cl100k_base").encode_single_token("hello")
        15339
        """
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._core_bpe.encode_single_token(text_or_bytes)

    def encode_bytes(self, text: bytes) -> list[int]:
        """Encodes bytes that need not be valid UTF-8; `decode_bytes` gives them back.

        >>> enc = get_encoding("cl100k_base")
        >>> enc.decode_bytes(enc.encode_bytes(b"caf\\xc3"))
        b'caf\\xc3'
        """
        return self._core_bpe.encode_bytes(text)

    # ====================
    # Decoding
    # ====================

    def decode_bytes(self, tokens: Sequence[int] | npt.NDArray[np.integer]) -> bytes:
        """Decodes a list of tokens into bytes.

        A one-dimensional numpy integer array (such as a text's slice of
        `encode_ordinary_batch_to_numpy`'s ids), `array.array` or `memoryview` is read
        straight from its buffer, without an int object per id. A list or array of 65,536
        ids or more is read and decoded on the machine's other cores too (ferrotok's
        batch threads), with the GIL held while a list is read.

        >>> get_encoding("cl100k_base").decode_bytes([15339, 1917])
        b'hello world'
        """
        if self._hf_decodes:
            return self._hf_decoded(self._core_bpe.decode_bytes(tokens), tokens)
        return self._core_bpe.decode_bytes(tokens)

    def _hf_decoded(
        self, decoded: bytes, tokens: Sequence[int] | npt.NDArray[np.integer]
    ) -> bytes:
        """`decoded` (the bytes of `tokens`) as the file's decoder gives it: without the
        leading spaces it strips, or with the first token as it reads a first one, and the
        last as it reads a last one (see `_setup`)."""
        return self._hf_front(self._hf_end(decoded, tokens), tokens)

    def _hf_end(self, decoded: bytes, tokens: Sequence[int] | npt.NDArray[np.integer]) -> bytes:
        """`decoded` with its last token as the file's decoder reads a last one."""
        last = self._hf_last
        if last is not None and len(tokens):
            found = last.get(int(tokens[-1]))
            if found is not None:
                return decoded[: len(decoded) - found[1]] + found[0]
        return decoded

    def _hf_front(
        self, decoded: bytes, tokens: Sequence[int] | npt.NDArray[np.integer]
    ) -> bytes:
        """`decoded` without the leading spaces the file's decoder strips, or with the first
        token as it reads a first one."""
        if self._sp_front is not None:
            return decoded[self._sp_leading_spaces(decoded, tokens) :]
        first = self._hf_first
        if first is not None and len(tokens):
            found = first.get(int(tokens[0]))
            if found is not None:
                return found[0] + decoded[found[1] :]
        n = 0
        while n < self._hf_strip and decoded[n : n + 1] == b" ":
            n += 1
        return decoded[n:]

    def _sp_leading_spaces(
        self, decoded: bytes, tokens: Sequence[int] | npt.NDArray[np.integer]
    ) -> int:
        """How many leading spaces sentencepiece's decoding drops (`sp_model.Front`): while
        nothing is written, a token's leading `▁` (its decoded space) is dropped; with
        `remove_extra_whitespaces` a `▁` token alone writes nothing and the next one's is
        dropped too, else that first `▁` ends it. Unknown and byte tokens drop nothing."""
        assert self._sp_front is not None
        remove_extra, meta, unk, byte_ids = self._sp_front
        k = 0
        while remove_extra and k < len(tokens) and int(tokens[k]) == meta:
            k += 1
        # Token `k`'s bytes start at byte `k` (each `▁` token before it is one space).
        first = int(tokens[k]) if k < len(tokens) else unk
        if first != unk and first not in byte_ids and decoded[k : k + 1] == b" ":
            k += 1
        return k

    def decode(
        self, tokens: Sequence[int] | npt.NDArray[np.integer], errors: str = "replace"
    ) -> str:
        """Decodes a list of tokens into a string.

        Lossy by default: bytes that are not valid UTF-8 become U+FFFD. Pass
        `errors="strict"` to raise instead.

        >>> get_encoding("cl100k_base").decode([15339, 1917])
        'hello world'
        """
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """Decodes one token (special tokens included) into bytes; `KeyError` if unknown.

        >>> get_encoding("cl100k_base").decode_single_token_bytes(15339)
        b'hello'
        """
        return self._core_bpe.decode_single_token_bytes(token)

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """Decodes a list of tokens into a list of bytes, one per token.

        >>> get_encoding("cl100k_base").decode_tokens_bytes([15339, 1917])
        [b'hello', b' world']
        """
        return [self.decode_single_token_bytes(token) for token in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """Decodes tokens into a string and the character offset where each token starts.

        A token that begins inside a character gets the offset of that character.
        Raises `UnicodeDecodeError` if the tokens are not valid UTF-8 as a whole.

        >>> get_encoding("cl100k_base").decode_with_offsets([15339, 1917])
        ('hello world', [0, 5])
        """
        token_bytes = self.decode_tokens_bytes(tokens)
        text_len = 0
        offsets = []
        for token in token_bytes:
            # A token starting with a continuation byte belongs to the previous character.
            offsets.append(max(0, text_len - (0x80 <= token[0] < 0xC0)))
            text_len += sum(1 for c in token if not 0x80 <= c < 0xC0)
        joined = b"".join(token_bytes)
        if self._hf_decodes:
            # The last token's change moves no token's start. The stripped spaces (or the
            # prefix put back) are one byte and one char each, and move them all.
            joined = self._hf_end(joined, tokens)
            decoded = self._hf_front(joined, tokens)
            shift = len(decoded) - len(joined)
            joined = decoded
            offsets = [max(0, o + shift) for o in offsets]
            if shift > 0 and offsets:
                offsets[0] = 0
        return joined.decode("utf-8", errors="strict"), offsets

    def decode_batch(
        self,
        batch: Sequence[Sequence[int] | npt.NDArray[np.integer]],
        *,
        errors: str = "replace",
        num_threads: int = 8,
    ) -> list[str]:
        """Decodes a batch (list of lists of tokens) into a list of strings."""
        return [
            b.decode("utf-8", errors=errors)
            for b in self.decode_bytes_batch(batch, num_threads=num_threads)
        ]

    def decode_bytes_batch(
        self, batch: Sequence[Sequence[int] | npt.NDArray[np.integer]], *, num_threads: int = 8
    ) -> list[bytes]:
        """Decodes a batch (list of lists of tokens) into a list of bytes."""
        batch, num_threads = _batch_args(batch, num_threads)
        decoded = self._core_bpe.decode_bytes_batch(batch, num_threads)
        if self._hf_decodes:
            return [self._hf_decoded(b, t) for b, t in zip(decoded, batch)]
        return decoded

    # ====================
    # Miscellaneous
    # ====================

    def token_byte_values(self) -> list[bytes]:
        """Returns the bytes of every ordinary token, sorted."""
        return self._core_bpe.token_byte_values()

    @property
    def eot_token(self) -> int:
        """The id of `<|endoftext|>` (`KeyError` if the encoding has none)."""
        return self._special_tokens["<|endoftext|>"]

    @functools.cached_property
    def special_tokens_set(self) -> set[str]:
        """The special tokens' texts."""
        return set(self._special_tokens.keys())

    @functools.cached_property
    def _all_special_tokens(self) -> frozenset[str]:
        return frozenset(self._special_tokens)

    def is_special_token(self, token: int) -> bool:
        """Whether `token` is the id of a special token."""
        assert isinstance(token, int)
        return token in self._special_token_values

    @property
    def n_vocab(self) -> int:
        """One more than the largest token id (tiktoken's meaning)."""
        return self.max_token_value + 1

    # ====================
    # Private (read by real code: HuggingFace's converter, vLLM, nanochat)
    # ====================

    def _check_special(
        self,
        text: str,
        allowed_special: Literal["all"] | AbstractSet[str],
        disallowed_special: Literal["all"] | Collection[str],
    ) -> Literal["all"] | AbstractSet[str]:
        """Raises for disallowed special text; returns what the core is to allow."""
        return self._check_special_batch((text,), allowed_special, disallowed_special)

    def _check_special_batch(
        self,
        texts: Sequence[str],
        allowed_special: Literal["all"] | AbstractSet[str],
        disallowed_special: Literal["all"] | Collection[str],
    ) -> Literal["all"] | AbstractSet[str]:
        """Raises if any text holds disallowed special text; returns what the core is to
        allow: "all" (passed as the word, not as a set of every special token) or a set."""
        if allowed_special == "all":
            # With "all" for both, tiktoken disallows the special tokens not allowed: none.
            # A given disallowed collection is checked as for any allowed set.
            if disallowed_special != "all":
                self._check_special_batch(texts, self.special_tokens_set, disallowed_special)
            return "all"
        if disallowed_special == "all":
            if type(allowed_special) is not set and not isinstance(allowed_special, AbstractSet):
                # tiktoken subtracts it from the set of special tokens here: a TypeError there.
                raise TypeError(
                    "allowed_special must be 'all' or a set of special tokens, "
                    f"not {type(allowed_special).__name__}"
                )
            # Every disallowed token is then a special token: if no special token's text
            # occurs in the texts (Rust's one pass over them), nothing can be disallowed.
            try:
                plain = not self._core_bpe.holds_special_text(texts)
            except UnicodeEncodeError:
                plain = False  # lone surrogates: the regex below reads the text as it is
            if plain:
                return allowed_special
            # The default (nothing allowed) reuses one frozenset: no per-call set building,
            # which matters for o200k_harmony's 1,088 special tokens on short texts.
            disallowed_special = (
                self._all_special_tokens
                if not allowed_special
                else self.special_tokens_set - allowed_special
            )
        if disallowed_special:
            regex = _special_token_regex(frozenset(disallowed_special))
            for t in texts:
                if match := regex.search(t):
                    raise_disallowed_special_token(match.group())
        return allowed_special

    def _encode_hf_detail(self, text: str) -> tuple[list[int], list[tuple[int, int]], list[int]]:
        """HuggingFace's `encode(text, add_special_tokens=False)` as (ids, offsets, word ids):
        character offsets into `text` before any post-processor trims them, and the index of
        the pre-tokenized piece (or added token) each token came from. Only for encodings
        loaded with `from_hf`."""
        return self._core_bpe.encode_hf_detail(text)

    def _encode_hf_face(
        self, text: str, token_texts: list[str]
    ) -> tuple[list[int], list[str], list[tuple[int, int]], list[int]]:
        """`_encode_hf_detail(text)` with each token's text from `token_texts` (indexed by
        id): (ids, tokens, offsets, word ids), new lists."""
        return self._core_bpe.encode_hf_face(text, token_texts)

    def _encode_hf_face_batch(
        self, texts: list[str], token_texts: list[str], num_threads: int = 8
    ) -> list[tuple[list[int], list[str], list[tuple[int, int]], list[int]]]:
        """`[_encode_hf_face(t, token_texts) for t in texts]`, the texts encoded on up to
        `num_threads` threads."""
        return self._core_bpe.encode_hf_face_batch(texts, token_texts, num_threads)

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """BPE on the whole input as one piece, without the pattern split."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = text_or_bytes.encode("utf-8")
        return self._core_bpe.encode_single_piece(text_or_bytes)

    def _encode_bytes(self, text: bytes) -> list[int]:
        return self._core_bpe.encode_bytes(text)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """`encode_ordinary`; tiktoken's splits in Python first, to time its BPE alone. Like
        tiktoken's, it refuses lone surrogates with `UnicodeEncodeError`, and (where the
        `regex` module that tiktoken uses here is installed) with the same message: tiktoken
        encodes piece by piece, so its error gives the position in the piece."""
        try:
            return self._core_bpe.encode_ordinary(text)
        except UnicodeEncodeError as e:
            error = e
        raise _piece_encode_error(self._pat_str, text) or error

    def save(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> None:
        """Writes the encoding to `path` (a standard `.tiktoken` ranks file, which tiktoken's
        `load_tiktoken_bpe` reads) and `path + ".json"` (name, pattern, special tokens).
        `Encoding.load(path)` reads it back.

        >>> import os, tempfile, ferrotok
        >>> path = os.path.join(tempfile.mkdtemp(), "cl100k.tiktoken")
        >>> ferrotok.get_encoding("cl100k_base").save(path)
        >>> sorted(os.listdir(os.path.dirname(path)))
        ['cl100k.tiktoken', 'cl100k.tiktoken.json']
        """
        if self._hf_json is not None:
            # A .tiktoken file keeps tiktoken's merge rule (any split of a token merges); a
            # tokenizer.json model merges only its listed pairs, after its own normalizer and
            # pre-tokenizers, so a .tiktoken copy would encode differently: refuse it.
            raise ValueError(
                f"{self.name!r} was loaded from a tokenizer.json, which a .tiktoken file cannot "
                "hold (its merges, normalizer and pre-tokenizers would be lost): keep the "
                "tokenizer.json, or write one with Encoding.to_hf(path)"
            )
        from .persist import save

        save(
            path,
            name=self.name,
            pat_str=self._pat_str,
            mergeable_ranks=self._mergeable_ranks,
            special_tokens=self._special_tokens,
        )

    def to_hf(self, path: str | os.PathLike[str]) -> None:
        """Writes the encoding as a HuggingFace `tokenizer.json` (at `path`, or into it if it
        is a directory) that HF `tokenizers` and `transformers` load with the same ids.

        >>> import os, tempfile, tokenizers
        >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
        >>> get_encoding("r50k_base").to_hf(path)
        >>> tokenizers.Tokenizer.from_file(path).encode("hello world").ids
        [31373, 995]
        """
        from .hf.export import to_hf

        to_hf(self, path)

    @classmethod
    def load(
        cls,
        path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
        *,
        name: str | None = None,
        pat_str: str | None = None,
        special_tokens: dict[str, int] | None = None,
    ) -> Encoding:
        """Reads an encoding written by `save`: the ranks file at `path` and the name, pattern
        and special tokens in `path + ".json"`. A plain `.tiktoken` file with no `.json` loads
        too when `pat_str` is given (and `special_tokens`, if it has any); arguments given
        override the `.json`'s values.

        >>> import os, tempfile, ferrotok
        >>> path = os.path.join(tempfile.mkdtemp(), "cl100k.tiktoken")
        >>> ferrotok.get_encoding("cl100k_base").save(path)
        >>> ferrotok.Encoding.load(path).encode("hello world")
        [15339, 1917]
        """
        from .persist import read

        saved = read(path, name=name, pat_str=pat_str, special_tokens=special_tokens)
        return cls(
            saved.name,
            pat_str=saved.pat_str,
            mergeable_ranks=saved.mergeable_ranks,
            special_tokens=saved.special_tokens,
        )

    def __getstate__(self) -> object:
        # By value. (`ferrotok.registry` sends the encodings it holds by name instead.)
        # (What a loader set beyond the file: a .model's decoding, a tekken.json's template.)
        extra = {"sp_front": self._sp_front, "hf_template": self._hf_template}
        if self._hf_json is not None:
            return {"name": self.name, "hf_json": self._hf_json, **extra}
        return {
            "name": self.name,
            "pat_str": self._pat_str,
            "mergeable_ranks": self._mergeable_ranks,
            "special_tokens": self._special_tokens,
            **extra,
        }

    def __setstate__(self, value: object) -> None:
        assert isinstance(value, dict)
        value = dict(value)
        sp_front, template = value.pop("sp_front", None), value.pop("hf_template", None)
        if "hf_json" in value:
            self.__dict__ = Encoding._from_hf_json(value["hf_json"], value["name"]).__dict__
        else:
            self.__init__(**value)  # type: ignore[misc]
        if template is not None:
            self._hf_template = template
        self._set_sp_front(sp_front)


_T = TypeVar("_T")


def _batch_args(items: Iterable[_T], num_threads: int) -> tuple[Sequence[_T], int]:
    """A batch and its `num_threads` as tiktoken's thread pool reads them (see below), with
    no further work for the usual call: a list and a count in range."""
    if items.__class__ is list and num_threads.__class__ is int and 0 < num_threads <= _MAX_THREADS:
        return items, num_threads
    return _as_sequence(items), _thread_count(num_threads)


def _check_disallowed_iterable(disallowed_special: object) -> None:
    """tiktoken's `encode_batch` makes a frozenset of `disallowed_special` (unlike `encode`,
    which skips a falsy one): `None` or another non-iterable is its `TypeError`."""
    if disallowed_special != "all" and not isinstance(disallowed_special, frozenset):
        iter(disallowed_special)  # type: ignore[call-overload]


def _as_sequence(items: Iterable[_T]) -> Sequence[_T]:
    """A batch as a list or tuple, which the Rust side indexes from both ends.

    tiktoken maps its thread pool over any iterable (a generator, a pandas Series, a dict's
    keys, even a string's characters), so any iterable is taken here too, once, in order.
    """
    # Exactly a list or tuple: a subclass's `__len__` may lie (10**12), and the Rust side
    # would reserve that much; `list()` of its iterator copies them at their real count.
    return items if items.__class__ in (list, tuple) else list(iter(items))


def _thread_count(num_threads: int) -> int:
    """`num_threads` as tiktoken's `ThreadPoolExecutor(max_workers=num_threads)` reads it.

    `None` is the pool's default, a count below 1 is a `ValueError`, and a fractional count
    rounds up (the pool starts threads while it has fewer than `max_workers`). Counts past
    the machine's cores cost nothing: a batch uses at most one thread a core.
    """
    if num_threads is None:
        return os.cpu_count() or 1
    if num_threads <= 0:
        raise ValueError(f"num_threads must be greater than 0, got {num_threads!r}")
    try:
        count = operator.index(num_threads)
    except TypeError:
        count = math.ceil(min(num_threads, _MAX_THREADS))  # NaN: ValueError from ceil
    return min(count, _MAX_THREADS)


_MAX_THREADS = 1 << 16
# Compares equal to an empty `set` or `frozenset` (and to nothing else).
_NO_SPECIAL: frozenset[str] = frozenset()


def _fixed_surrogates(texts: Sequence[str]) -> list[str]:
    return [_fix_surrogates(t) for t in texts]


def _fix_surrogates(text: str) -> str:
    """Joins surrogate pairs and replaces lone surrogates with U+FFFD, as tiktoken does."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@functools.lru_cache(maxsize=128)
def _special_token_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    inner = "|".join(re.escape(token) for token in tokens)
    return re.compile(f"({inner})")


def raise_disallowed_special_token(token: str) -> NoReturn:
    raise ValueError(
        f"Encountered text corresponding to disallowed special token {token!r}.\n"
        "If you want this text to be encoded as a special token, "
        f"pass it to `allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
        f"If you want this text to be encoded as normal text, disable the check for this token "
        f"by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
        "To disable this check for all special tokens, pass `disallowed_special=()`.\n"
    )


def _piece_encode_error(pat_str: str, text: str) -> UnicodeEncodeError | None:
    """The error tiktoken's `_encode_only_native_bpe` meets on `text`: the first piece (as the
    `regex` module cuts it) that is not UTF-8; None without `regex` or such a piece."""
    try:
        import regex  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    for piece in regex.findall(regex.compile(pat_str), text):
        try:
            piece.encode("utf-8")
        except UnicodeEncodeError as e:
            return e
    return None
