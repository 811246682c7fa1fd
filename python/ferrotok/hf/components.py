"""The face's pipeline components as `tokenizers.Tokenizer` shows them: `normalizer`,
`pre_tokenizer`, `model`, `post_processor` and `decoder`.

Invariant: a component read from `ferrotok.hf.Tokenizer` is HF's own object for the file's
component (built by HF `tokenizers`, which must be installed), and every change a program makes
through it reaches the engine, as it reaches HF's tokenizer:
- `tok.post_processor = TemplateProcessing(...)` (or `None`) writes the component's JSON into
  the file and reloads the engine from it;
- `tok.pre_tokenizer.add_prefix_space = True`, `tok.pre_tokenizer[1] = ...`, and so on,
  change HF's object (HF shares a `Sequence`'s members with it) and write the whole component
  back the same way.
A component the engine does not run is refused by name at that reload (the tokenizer is left
as it was), and one HF cannot write as JSON (a `custom` Python component) is refused too: no
change is silently dropped, and none tokenizes differently from HF.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# Each slot, the module of `tokenizers` whose base class its objects are, and that class.
_BASES = {
    "normalizer": ("normalizers", "Normalizer"),
    "pre_tokenizer": ("pre_tokenizers", "PreTokenizer"),
    "model": ("models", "Model"),
    "post_processor": ("processors", "PostProcessor"),
    "decoder": ("decoders", "Decoder"),
}

# A file with nothing but an empty model: HF builds any other component from its JSON alone.
_EMPTY_FILE: dict[str, Any] = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [],
    "normalizer": None,
    "pre_tokenizer": None,
    "post_processor": None,
    "decoder": None,
    "model": {"type": "BPE", "vocab": {}, "merges": []},
}


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError as e:
        raise ImportError(
            "ferrotok.hf.Tokenizer's components are HuggingFace tokenizers' objects; "
            "pip install tokenizers"
        ) from e
    return tokenizers


def hf_object(slot: str, state: Any, whole_file: Callable[[], str]) -> Any:
    """HF's object for the component `slot` whose JSON is `state` (None where the file has
    none); the model's from the whole file (`whole_file()`), which it needs."""
    tokenizers = _tokenizers()
    if slot == "model":
        return tokenizers.Tokenizer.from_str(whole_file()).model
    if state is None:
        return None
    alone = tokenizers.Tokenizer.from_str(json.dumps(dict(_EMPTY_FILE, **{slot: state})))
    return getattr(alone, slot)


def state_of(slot: str, value: Any) -> dict[str, Any] | None:
    """The JSON a file holds for `value` as its `slot`, checked as HF checks an assignment."""
    tokenizers = _tokenizers()
    module, name = _BASES[slot]
    if value is None and slot != "model":
        return None
    if value is None:
        raise TypeError(f"'None' is not an instance of '{name}'")
    if not isinstance(value, getattr(getattr(tokenizers, module), name)):
        raise TypeError(f"'{type(value).__name__}' object is not an instance of '{name}'")
    try:
        state = value.__getstate__()
    except Exception as e:
        raise ValueError(
            f"ferrotok cannot run this {slot}: HF cannot write it as JSON ({e})"
        ) from None
    parsed: dict[str, Any] = json.loads(state)
    return parsed


class Live:
    """HF's component object, seen through this wrapper: what is read and called is HF's; an
    attribute or item set on it (or on a member of it, for a `Sequence`) is set on HF's object,
    and the whole component (`root`) is then written back (`write(root)`). `isinstance` sees
    HF's class; pickling and copying give HF's plain object."""

    def __init__(self, write: Callable[[Any], None], root: Any, obj: Any) -> None:
        object.__setattr__(self, "_write", write)
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_obj", obj)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # what isinstance reads
        return type(self._obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._obj, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._obj, name, value)
        self._write(self._root)

    def __getitem__(self, index: Any) -> Live:
        return Live(self._write, self._root, self._obj[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        self._obj[index] = value._obj if type(value) is Live else value
        self._write(self._root)

    def __getstate__(self) -> Any:
        return self._obj.__getstate__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        return self._obj.__reduce_ex__(protocol)

    def __repr__(self) -> str:
        return repr(self._obj)

    def __str__(self) -> str:
        return str(self._obj)
