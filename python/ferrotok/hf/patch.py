"""`patch_transformers`: make `transformers`' fast tokenizers encode through ferrotok.

Invariant: while patched, a `transformers` `PreTrainedTokenizerFast` (`TokenizersBackend` in
transformers 5) returns the same `input_ids`, `attention_mask`, `offset_mapping` (and every
other field) as unpatched, because only the backend's encoding and decoding move to ferrotok
and everything else still goes to the `tokenizers.Tokenizer` it wraps:

- `TokenizersBackend._tokenizer` becomes a property: the `tokenizers.Tokenizer` that
  transformers stores is kept, and reading it gives a `FerrotokBackend` around it;
- the `FerrotokBackend` answers `encode_batch`, `encode`, `decode` and `decode_batch` with a
  `ferrotok.hf.Tokenizer` built from the wrapped tokenizer's own JSON (`to_str()`), with the
  wrapped tokenizer's current truncation and padding; every other attribute, read or set,
  is the wrapped tokenizer's. Setting a pipeline component or adding tokens rebuilds the
  ferrotok side from the JSON at the next call;
- a backend ferrotok cannot run (a WordPiece model, a component it does not implement) or
  `split_special_tokens=True` stays on `tokenizers`, and `ferrotok_error` says why;
- `unpatch_transformers()` removes the property: every tokenizer, made before or during the
  patch, is then the plain `tokenizers` one again.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator
from typing import Any

from .tokenizer import Tokenizer

# Components whose change makes the ferrotok side out of date.
_PIPELINE = frozenset({"normalizer", "pre_tokenizer", "model", "post_processor", "decoder"})
_MUTATORS = frozenset({"add_tokens", "add_special_tokens", "train", "train_from_iterator"})
# The methods the backend answers itself. One set on the tokenizer (CLIP's tokenizer wraps
# `decode` to turn its `</w>` into spaces) is set on both, and the backend's wins over its own.
_ANSWERED = frozenset({"encode", "encode_batch", "encode_batch_fast", "decode", "decode_batch"})

_saved: dict[str, Any] = {}


class FerrotokBackend:
    """A `tokenizers.Tokenizer` whose encoding and decoding run on ferrotok."""

    # `__dict__` holds the methods of `_ANSWERED` set on this object, which then come first.
    __slots__ = ("_raw", "_ferro", "_stale", "ferrotok_error", "__dict__")

    def __init__(self, raw: Any) -> None:
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_ferro", None)
        object.__setattr__(self, "_stale", True)
        object.__setattr__(self, "ferrotok_error", None)
        # Those set on the tokenizer before this object wrapped it.
        for name, value in getattr(raw, "__dict__", {}).items():
            if name in _ANSWERED:
                object.__setattr__(self, name, value)

    # ---- the ferrotok side ----

    def _tokenizer(self) -> Tokenizer | None:
        if self._stale:
            object.__setattr__(self, "_stale", False)
            try:
                ferro: Tokenizer | None = Tokenizer.from_str(self._raw.to_str())
                error = None
            except (ValueError, NotImplementedError, TypeError, KeyError) as e:
                ferro, error = None, f"{type(e).__name__}: {e}"
                warnings.warn(
                    f"ferrotok cannot run this tokenizer ({error}); it stays on HuggingFace "
                    "tokenizers",
                    stacklevel=4,
                )
            object.__setattr__(self, "_ferro", ferro)
            object.__setattr__(self, "ferrotok_error", error)
        ferro = self._ferro
        if ferro is None or self._raw.encode_special_tokens:
            return None
        # The wrapped tokenizer's truncation and padding are the truth (transformers sets them
        # there before each call, through this object).
        ferro._truncation = self._raw.truncation
        ferro._padding = self._raw.padding
        return ferro

    @property
    def uses_ferrotok(self) -> bool:
        """Whether encoding now runs on ferrotok (False: on the wrapped tokenizers one)."""
        return self._tokenizer() is not None

    def encode_batch(
        self, input: Any, is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> Any:
        ferro = self._tokenizer()
        if ferro is None:
            return self._raw.encode_batch(
                input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
            )
        return ferro.encode_batch(
            input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
        )

    def encode_batch_fast(
        self, input: Any, is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> Any:
        ferro = self._tokenizer()
        if ferro is None:
            return self._raw.encode_batch_fast(
                input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
            )
        return ferro.encode_batch_fast(
            input, is_pretokenized=is_pretokenized, add_special_tokens=add_special_tokens
        )

    def encode(
        self,
        sequence: Any,
        pair: Any = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> Any:
        ferro = self._tokenizer()
        if ferro is None:
            return self._raw.encode(
                sequence,
                pair,
                is_pretokenized=is_pretokenized,
                add_special_tokens=add_special_tokens,
            )
        return ferro.encode(sequence, pair, is_pretokenized, add_special_tokens)

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        ferro = self._tokenizer()
        if ferro is None:
            return str(self._raw.decode(ids, skip_special_tokens=skip_special_tokens))
        return ferro.decode(ids, skip_special_tokens)

    def decode_batch(self, sequences: Any, skip_special_tokens: bool = True) -> list[str]:
        # The tokenizer's own `decode_batch` does not go through a `decode` set on it.
        return [FerrotokBackend.decode(self, ids, skip_special_tokens) for ids in sequences]

    # ---- everything else is the wrapped tokenizer's ----

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._raw, name)
        if name in _MUTATORS and callable(value):

            def mutate(*args: Any, **kwargs: Any) -> Any:
                object.__setattr__(self, "_stale", True)
                return value(*args, **kwargs)

            return mutate
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._raw, name, value)
        if name in _ANSWERED:
            object.__setattr__(self, name, value)
        if name in _PIPELINE:
            object.__setattr__(self, "_stale", True)

    def __deepcopy__(self, memo: dict[int, Any]) -> FerrotokBackend:
        return FerrotokBackend(copy.deepcopy(self._raw, memo))

    def __reduce__(self) -> tuple[Any, tuple[Any]]:
        # Pickled (multiprocessing, datasets.map) as the tokenizers.Tokenizer it wraps.
        return (FerrotokBackend, (self._raw,))

    def __repr__(self) -> str:
        return f"FerrotokBackend({self._raw!r})"


def _backend_class() -> Any:
    # transformers 5 names the class that wraps a `tokenizers.Tokenizer` TokenizersBackend;
    # 4.x (the last line that runs on Python 3.9) calls it PreTrainedTokenizerFast. Both keep
    # the wrapped tokenizer in `self._tokenizer` and reach it only through that name.
    try:
        from transformers import tokenization_utils_tokenizers as module

        return module.TokenizersBackend
    except ImportError:
        import importlib

        fast = importlib.import_module("transformers.tokenization_utils_fast")
        return fast.PreTrainedTokenizerFast


def _get(self: Any) -> Any:
    raw = self.__dict__.get("_tokenizer")
    if raw is None:
        return None
    proxy = self.__dict__.get("_ferrotok_backend")
    if proxy is None or proxy._raw is not raw:
        proxy = FerrotokBackend(raw)
        self.__dict__["_ferrotok_backend"] = proxy
    return proxy


def _set(self: Any, value: Any) -> None:
    if isinstance(value, FerrotokBackend):
        value = value._raw
    self.__dict__["_tokenizer"] = value
    self.__dict__.pop("_ferrotok_backend", None)


def patch_transformers() -> None:
    """Makes every `transformers` fast tokenizer (made before or after) encode through ferrotok.

    >>> import ferrotok.hf
    >>> ferrotok.hf.patch_transformers()
    >>> ferrotok.hf.transformers_patched()
    True
    >>> ferrotok.hf.unpatch_transformers()
    """
    cls = _backend_class()
    if "class_attribute" in _saved:
        return
    _saved["class_attribute"] = cls.__dict__.get("_tokenizer")
    # Tokenizers made before the patch keep their tokenizers.Tokenizer in the instance dict
    # (the property reads it from there), and so do those made while it is in place.
    cls._tokenizer = property(_get, _set)


def unpatch_transformers() -> None:
    """Undoes `patch_transformers`: every tokenizer is the plain `tokenizers` one again."""
    if "class_attribute" not in _saved:
        return
    cls = _backend_class()
    cls._tokenizer = _saved.pop("class_attribute")


def transformers_patched() -> bool:
    return "class_attribute" in _saved


@contextlib.contextmanager
def patched_transformers() -> Iterator[None]:
    """`with ferrotok.hf.patched_transformers(): ...` — patched inside the block only."""
    was = transformers_patched()
    patch_transformers()
    try:
        yield
    finally:
        if not was:
            unpatch_transformers()
